"""The plain-text report of ``diffgenome affected``: by changed symbol, the tests that reach
it and how; or, with ``--ids``, one pytest node id per line.

Plain text rather than rich, because its main reader is a script or a CI log that selects
tests from it; the data it shows comes from :mod:`diffgenome.analysis.diff.affected`, whose
JSON (``--json``) keeps every path and decision of every test.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from diffgenome.analysis.diff.affected import Affected, Reason
from diffgenome.protocol.selection import pytest_node_id

#: How a test reaches a changed symbol, by ``via``, after "N tests" (the verb agrees).
_HOW = {
    "call": "run{s} it",
    "stand-in": "replace{s} it with a stand-in",
    "module": "run{s} code of the changed module",
    "class": "run{s} code of the changed class",
    "unparsed": "run{s} code of an unparsable changed file",
    "reads": "read{s} {names}, bound by a changed statement",
    "shared": "may use what a fixture or an import made with it for many tests",
    "state": "read{s} {names}, which it changes in place",
}


def render_affected(affected: list[Affected], total: int, base: str, head: str) -> str:
    """The list for people, grouped by changed symbol: how many tests reach it, each way
    they reach it with its tests (one a line), and its changed decisions with how the tests
    that ran them went; a test reaching three symbols is under each."""
    lines = [
        f"diffgenome affected {base} \u2192 {head}: {len(affected)} of {total} "
        f"test{'s' if total != 1 else ''} reach changed code"
    ]
    by_symbol: dict[tuple[str, str], list[tuple[Affected, Reason]]] = {}
    for item in affected:
        for reason in item.reasons:
            by_symbol.setdefault((reason.symbol, reason.change), []).append((item, reason))
    for (symbol, change), reached in sorted(by_symbol.items()):
        tests = {item.test for item, _ in reached}
        lines.append("")
        lines.append(f"{symbol} ({change}): {_count(len(tests))}")
        # By test id, in the order reached: packaging's 47,814 tests compared as
        # dataclasses, each with every one listed before it, took 14 minutes.
        by_how: dict[str, dict[str, Affected]] = {}
        for item, reason in reached:
            how = _HOW.get(reason.via, reason.via + "{s}").replace(
                "{names}", ", ".join(reason.names)
            )
            by_how.setdefault(how, {}).setdefault(item.test, item)
        for how, listed in by_how.items():
            items = list(listed.values())
            verb = how.replace("{s}", "s" if len(items) == 1 else "")
            lines.append(f"  {_count(len(items))} {verb}:")
            lines.extend(f"    {item.test}  ({item.outcome})" for item in items)
        lines.extend(_sites(reason for _, reason in reached))
    return "\n".join(lines) + "\n"


def _sites(reasons: Iterable[Reason]) -> list[str]:
    """One line per changed decision of a symbol: in how many of the tests that reach it it
    went each way, or was not reached."""
    seen: dict[tuple[str, str, str], list[int]] = {}
    for reason in reasons:
        for site in reason.sites:
            key = (str(site["site"]), str(site.get("predicate") or ""), str(site["change"]))
            tally = seen.setdefault(key, [0, 0, 0])
            observed = site.get("observed")
            if isinstance(observed, dict):
                tally[0] += observed.get("true", 0) > 0
                tally[1] += observed.get("false", 0) > 0
            else:
                tally[2] += 1
    out = []
    for (name, predicate, change), tally in sorted(seen.items()):
        shown = f" `{predicate}`" if predicate else ""
        went = ", ".join(
            f"{what} in {_count(n)}"
            for what, n in zip(("true", "false", "not reached"), tally, strict=True)
            if n
        )
        out.append(f"  decision {name}{shown} {change}: {went}")
    return out


def render_ids(affected: list[Affected], prefix: str) -> str:
    """``--ids``: one pytest node id per line, as pytest takes them where diffgenome runs
    (``prefix``, the folder below the git top: a test under it is named from there, one
    above or beside it through ``..``, as inflection's top-level ``test_inflection.py`` is
    from its package folder), ready for ``pytest @FILE``; a subtest is its test, a case
    whose id the secret rules masked is its function (pytest knows no masked id), and each
    is there once."""
    out: dict[str, None] = {}
    for item in affected:
        node = pytest_node_id(item.test)
        if prefix:
            file, sep, rest = node.partition("::")
            node = posixpath.relpath(file, prefix.rstrip("/")) + sep + rest
        out[node] = None
    return "".join(f"{node}\n" for node in out)


def _count(n: int) -> str:
    return f"{n} test{'' if n == 1 else 's'}"


__all__ = ["render_affected", "render_ids"]
