"""The plain-text report of ``diffgenome affected``: one block per test, one line per reason.

Plain text rather than rich, because its main reader is a script or a CI log that selects
tests from it; the data it shows comes from :mod:`diffgenome.analysis.diff.affected`.
"""

from __future__ import annotations

from diffgenome.analysis.diff.affected import Affected


def render_affected(affected: list[Affected], total: int, base: str, head: str) -> str:
    """The plain-text list for people: one block per test, one line per reason."""
    lines = [
        f"diffgenome affected {base} \u2192 {head}: {len(affected)} of {total} "
        f"test{'s' if total != 1 else ''} reach changed code"
    ]
    for item in affected:
        lines.append("")
        lines.append(f"{item.test}  ({item.outcome})")
        for reason in item.reasons:
            how = {
                "call": "runs",
                "stand-in": "replaces with a stand-in",
                "module": "runs code of the changed module",
                "class": "runs code of the changed class",
                "unparsed": "runs code of an unparsable changed file",
                "reads": "reads " + ", ".join(reason.names) + ", bound by a changed statement",
            }.get(reason.via, reason.via)
            lines.append(f"  {reason.symbol} {reason.change}: {how}")
            lines.append(f"    via {' \u2192 '.join(reason.path)} ({reason.phase} phase)")
            for site in reason.sites:
                seen = site.get("observed")
                seen_text = (
                    f"seen true {seen.get('true', 0)}, false {seen.get('false', 0)}"
                    if isinstance(seen, dict)
                    else "not reached on this path"
                )
                lines.append(
                    f"    decision {site['site']} ({site['predicate']}) {site['change']}; "
                    f"{seen_text}"
                )
    return "\n".join(lines) + "\n"
