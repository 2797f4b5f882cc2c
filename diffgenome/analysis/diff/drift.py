"""Mock drift: a stand-in that still answers like the real code used to, while the real code
changed.

A stand-in's ``claimed_target`` names the real code it replaces. The stand-in drifted when
that code changed between base and head, seen either in the code (the target itself, or a
symbol the real target was seen calling at base), in behaviour (the real target's call
nodes in *other* tests, which run it for real, changed exits or results), or in its seam (the
real target's signature, as the recorder's seam check read it, changed while the stand-in's
own signature did not: a mock still accepts any call, a fake still has the old parameters).

Only stand-ins that existed before the change can have drifted: a test whose stand-in for a
target is on head only (a test added, or a stand-in added to an existing test) was written
against the new code, and one on base only is gone. A drift entry names the tests that hold a
stand-in for the target on both sides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from diffgenome.analysis.diff.align import TestIndex, element_symbol
from diffgenome.analysis.diff.codechanges import CodeChangeInput
from diffgenome.analysis.diff.compare import Found
from diffgenome.analysis.diff.describe import ARROW, describe
from diffgenome.analysis.models import Drift
from diffgenome.protocol.vocab import (
    EXIT_CHANGED,
    RESULT_CHANGED,
    STATUS_RESTRUCTURED,
    STATUS_TOUCHED,
    STATUS_UNCHANGED,
    TYPE_SUBSTITUTION,
)

MAX_BEHAVIOUR_EVIDENCE = 10


def stand_in_users(*sides: Mapping[str, TestIndex]) -> dict[str, set[str]]:
    """Claimed target -> ids of the tests that use a stand-in for it (on any side)."""
    users: dict[str, set[str]] = {}
    for tests in sides:
        for test_id, test in tests.items():
            for node in test.raw_nodes():
                if node.get("type") == TYPE_SUBSTITUTION and node.get("claimed_target"):
                    users.setdefault(str(node["claimed_target"]), set()).add(test_id)
    return users


def symbols_under(tests: Mapping[str, TestIndex], targets: Iterable[str]) -> dict[str, set[str]]:
    """Target -> symbols seen called (at any depth) below a real call node of the target."""
    wanted = set(targets)
    under: dict[str, set[str]] = {target: set() for target in wanted}
    if not wanted:
        return under
    for test in tests.values():
        for phase in test.phases.values():
            for path, node in phase.calls():
                above = {element_symbol(part) for part in path[:-1]}
                for target in wanted.intersection(above):
                    under[target].add(str(node.get("symbol")))
    return under


def seam_signatures(
    tests: Mapping[str, TestIndex],
) -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]:
    """Claimed target -> its signatures, and (target, substitute) -> the stand-in's own
    signatures ("" for a mock), from the seam of each substitution node that has one."""
    targets: dict[str, set[str]] = {}
    stand_ins: dict[tuple[str, str], set[str]] = {}
    for test in tests.values():
        for node in test.raw_nodes():
            seam = node.get("seam")
            target = node.get("claimed_target")
            if node.get("type") != "substitution" or not target or not isinstance(seam, dict):
                continue
            targets.setdefault(str(target), set()).add(str(seam.get("target")))
            key = (str(target), str(node.get("substitute")))
            stand_ins.setdefault(key, set()).add(str(seam.get("stand_in") or ""))
    return targets, stand_ins


def _signature_evidence(
    target: str,
    base: tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]],
    head: tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]],
) -> list[str]:
    """One line per stand-in that kept its signature while the real target's changed."""
    before, after = base[0].get(target), head[0].get(target)
    if not before or not after or before == after:
        return []
    change = f"{' | '.join(sorted(before))} {ARROW} {' | '.join(sorted(after))}"
    evidence: list[str] = []
    for (claimed, substitute), signatures in sorted(head[1].items()):
        if claimed != target or base[1].get((claimed, substitute)) != signatures:
            continue
        own = " | ".join(sorted(s for s in signatures if s))
        kept = f"still {own}" if own else "a mock: accepts any call"
        evidence.append(f"signature: {target} {change}; stand-in {substitute} unchanged ({kept})")
    return evidence


def find_drift(
    base: Mapping[str, TestIndex],
    head: Mapping[str, TestIndex],
    changes_by_test: Mapping[str, list[Found]],
    code: CodeChangeInput | None,
    runners: Mapping[str, Iterable[str]] | None = None,
    status_of: Mapping[str, str] | None = None,
) -> list[Drift]:
    """Drift entries, one per claimed target with evidence, sorted by target.

    ``runners`` (changed symbol -> the tests that ran it) and ``status_of`` (test -> its
    status): a code line says when every test that runs the changed code for real behaves
    the same (``restructured``, ``touched``, ``unchanged``): the code changed, and no test
    saw its behaviour change, which a reviewer weighs differently from a change seen."""
    users = stand_in_users(base, head)  # any side: such a test does not run the real code
    before, after = stand_in_users(base), stand_in_users(head)
    kept = {target: before.get(target, set()) & after.get(target, set()) for target in users}
    if not any(kept.values()):
        return []
    # Code renamed or moved as it was, and callers changed only to name it anew, behave as
    # before: no evidence that the real target did (voluptuous' ``_exec`` renamed
    # ``_execute`` read as drift of every mock of a validator that reaches it).
    same = code.same_code() if code is not None else frozenset()
    changed = (
        {s: c for s, c in code.by_symbol().items() if s not in same} if code is not None else {}
    )
    under = symbols_under(base, users) if changed else {}
    behaviour: dict[str, list[str]] = {}
    for test_id, found in sorted(changes_by_test.items()):
        for item in found:
            if item.kind not in (EXIT_CHANGED, RESULT_CHANGED) or item.symbol not in users:
                continue
            if not item.path or element_symbol(item.path[-1]) != item.symbol:
                continue  # a stand-in's own change, not the real code's
            if test_id in users[item.symbol]:
                continue
            behaviour.setdefault(item.symbol, []).append(
                f"behaviour: {test_id} runs the real code: {describe(item.change())}"
            )
    base_seams, head_seams = seam_signatures(base), seam_signatures(head)
    drift: list[Drift] = []
    for target in sorted(users):
        if not kept[target]:
            continue  # no stand-in for it existed before the change and still does
        evidence: list[str] = _signature_evidence(target, base_seams, head_seams)
        if target in changed:
            evidence.append(
                f"code: {target} {changed[target].change}"
                + _seen_alike(target, users.get(target, set()), runners, status_of)
            )
        for symbol in sorted(under.get(target, set()) - {target}):
            if symbol in changed:
                evidence.append(
                    f"code: {symbol} {changed[symbol].change} (called by the real {target} at base)"
                    + _seen_alike(symbol, users.get(target, set()), runners, status_of)
                )
        seen = behaviour.get(target, [])
        evidence.extend(seen[:MAX_BEHAVIOUR_EVIDENCE])
        if len(seen) > MAX_BEHAVIOUR_EVIDENCE:
            evidence.append(f"behaviour: and {len(seen) - MAX_BEHAVIOUR_EVIDENCE} more changes")
        if evidence:
            drift.append(
                Drift(claimed_target=target, tests=sorted(kept[target]), evidence=evidence)
            )
    return drift


#: Statuses of a test whose behaviour did not change (the code it ran may have).
_ALIKE = frozenset({STATUS_UNCHANGED, STATUS_RESTRUCTURED, STATUS_TOUCHED})


def _seen_alike(
    symbol: str,
    stand_in_users: set[str],
    runners: Mapping[str, Iterable[str]] | None,
    status_of: Mapping[str, str] | None,
) -> str:
    """``; the 6 tests that run it behave the same (restructured, touched)`` when every test
    that ran ``symbol`` for real (not one that stands in for the target) kept its
    behaviour, else nothing."""
    if runners is None or status_of is None:
        return ""
    ran = sorted(set(runners.get(symbol, ())) - stand_in_users)
    statuses = [status_of.get(test) for test in ran]
    if not ran or not all(status in _ALIKE for status in statuses):
        return ""
    kinds = ", ".join(sorted({str(status) for status in statuses}))
    if len(ran) == 1:
        return f"; the 1 test that runs it behaves the same ({kinds})"
    return f"; the {len(ran)} tests that run it behave the same ({kinds})"
