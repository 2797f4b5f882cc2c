"""One readable line per change, shared by the reports and by the ``reasons`` of a test.

Lines are plain text (no markup), so that ids with brackets survive any renderer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from diffgenome.analysis.diff.effects import describe_effect
from diffgenome.analysis.models import Change
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    BRANCH_CHANGED,
    CALL_ADDED,
    CALL_COUNT_CHANGED,
    CALL_REMOVED,
    EFFECT_KINDS,
    EGRESS_ADDED,
    EGRESS_REMOVED,
    ESCAPED_WARNINGS_CHANGED,
    EXIT_CHANGED,
    OUTCOME_CHANGED,
    RESULT_CHANGED,
    STAND_IN_ADDED,
    STAND_IN_CHANGED,
    STAND_IN_REMOVED,
    STATE_CHANGED,
)

ARROW = "\u2192"
TIMES = "\u00d7"
_DIGEST_CHARS = 8

#: How a value digest is written: `` #1f2e3a4b`` by default, `` (value A)`` in a report.
DigestText = Callable[[object], str]


def _digest(digest: object) -> str:
    return f" #{str(digest)[:_DIGEST_CHARS]}" if isinstance(digest, str) else ""


class ValueLabels:
    """Short names for value digests, one per digest within one report: the first digest met
    is ``value A``, the next ``value B``, ... ``value Z``, ``value AA``; so the same value reads
    the same wherever it appears, and two values that differ never share a name."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def __call__(self, digest: object) -> str:
        if not isinstance(digest, str):
            return ""
        # Keyed by the characters a reason keeps (``#1f2e3a4b``), so that the values named in
        # reasons get the same labels as those in changes.
        key = digest[:_DIGEST_CHARS]
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = _letters(len(self._names))
        return f" (value {name})"

    def rewrite(self, text: str) -> str:
        """``text`` (a reason written by :func:`describe` without labels) with each
        `` #1f2e3a4b`` digest replaced by its label."""
        return _DIGEST_IN_TEXT.sub(lambda m: self(m.group(1)), text)


_DIGEST_IN_TEXT = re.compile(r" #([0-9a-f]{" + str(_DIGEST_CHARS) + r"})\b")


def _letters(index: int) -> str:
    out = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        out = chr(ord("A") + rest) + out
    return out


def where(change: Change) -> str:
    """The node a change is about: its last path element, and the phase when not ``call``."""
    node = change.path[-1] if change.path else "(test)"
    return node if change.phase in (None, "call") else f"[{change.phase}] {node}"


def _exits(exits: object) -> str:
    if not isinstance(exits, Mapping) or not exits:
        return "none"
    return ", ".join(f"{key} {value}" for key, value in sorted(exits.items()))


def value_text(value: Mapping[str, object], digest: DigestText = _digest) -> str:
    """One value entry for people: its preview where the recording kept one
    (``--genome-preview``: ``'---'``, ``width=3, fill='-'``), which says the value itself;
    else its shape with its digest as ``digest`` writes it (``str (value P)``)."""
    if "overflow" in value:
        return f"+{value['overflow']} more{digest(value.get('digest'))}"
    preview = value.get("preview")
    text = (
        preview
        if isinstance(preview, str)
        else f"{value.get('shape')}{digest(value.get('digest'))}"
    )
    if value.get("beyond"):
        # Not kept on the other side, where more values went past the bound: it may be
        # among them, pushed out by another value, not gone.
        text += " (beyond the values kept on the other side, not necessarily gone)"
    return text


def _values(values: object, digest: DigestText = _digest) -> str:
    """Value shapes in full, each with its digest as ``digest`` writes it (or its preview)."""
    if not isinstance(values, Sequence) or not values:
        return "nothing else"
    parts = [value_text(value, digest) for value in values if isinstance(value, Mapping)]
    return "; ".join(parts) or "nothing else"


def _facts(facts: object) -> str:
    if not isinstance(facts, Sequence) or not facts:
        return "nothing else"
    parts = []
    for fact in facts:
        if isinstance(fact, Mapping):
            if "overflow" in fact:
                parts.append(f"+{fact['overflow']} more")
            else:
                parts.append(f"{fact.get('when')} {fact.get('target')}={fact.get('bucket')}")
    return ", ".join(parts)


def _either(show: Callable[[object], str], base: object, head: object) -> str:
    """Set differences: what was replaced by what, or what is new / gone."""
    if base and head:
        return f"{show(base)} {ARROW} {show(head)}"
    if head:
        return f"now also {show(head)}"
    return f"no longer {show(base)}"


def _outcomes(value: object) -> str:
    if not isinstance(value, Mapping):
        return "not reached"
    return f"true {value.get('true', 0)} / false {value.get('false', 0)}"


def _fields(value: object, digest: DigestText = _digest) -> str:
    if not isinstance(value, Mapping) or not value:
        return "-"
    parts = []
    for key, item in sorted(value.items()):
        if key == "exits":
            parts.append(f"exits {_exits(item)}")
        elif key == "args":
            parts.append(f"args {_values(item, digest)}")
        elif key == "seam":
            parts.append(f"seam {_seam(item)}")
        else:
            parts.append(f"{key} {item}")
    return ", ".join(parts)


def fields_text(value: object) -> str:
    """A stand-in's differing fields as :func:`describe` writes them, digests left out."""
    return _fields(value, lambda digest: "")


def _seam(value: object) -> str:
    if not isinstance(value, Mapping):
        return str(value)
    text = f"real {value.get('target')}"
    if value.get("stand_in"):
        text += f", stand-in {value.get('stand_in')}"
    problems = value.get("problems") or []
    if problems:
        text += " (" + "; ".join(str(problem) for problem in problems) + ")"
    return text


def _node(value: object) -> str:
    if not isinstance(value, Mapping):
        return ""
    if "target" in value and "kind" in value:
        return f" ({value.get('outcome')} {TIMES}{value.get('count')})"
    if "substitute" in value:
        return (
            f" (by {value.get('substitute')}, {value.get('relation')} {TIMES}{value.get('count')})"
        )
    return f" ({TIMES}{value.get('count')}, {_exits(value.get('exits'))})"


def describe(change: Change, labels: DigestText | None = None) -> str:
    """``change`` as one line of text, without the test id.

    ``labels`` writes value digests (a :class:`ValueLabels` of the report); by default they
    are their first characters, ``#1f2e3a4b``."""
    kind, base, head = change.kind, change.base, change.head
    digest: DigestText = labels if labels is not None else _digest
    at = where(change)
    if kind == OUTCOME_CHANGED:
        return f"outcome {base} {ARROW} {head}"
    if kind in EFFECT_KINDS:
        return describe_effect(kind, change.phase, base, head, labels)
    if kind in (CALL_ADDED, STAND_IN_ADDED, EGRESS_ADDED):
        parent = f" under {change.path[-2]}" if len(change.path) > 1 else ""
        return f"{_noun(kind)} added: {at}{_node(head)}{parent}"
    if kind in (CALL_REMOVED, STAND_IN_REMOVED, EGRESS_REMOVED):
        parent = f" under {change.path[-2]}" if len(change.path) > 1 else ""
        return f"{_noun(kind)} removed: {at}{_node(base)}{parent}"
    if kind == CALL_COUNT_CHANGED:
        return f"{at} ran {TIMES}{base} {ARROW} {TIMES}{head}"
    if kind == EXIT_CHANGED:
        if isinstance(base, Mapping) and "outcome" in base and isinstance(head, Mapping):
            return f"{at} outcome {base.get('outcome')} {ARROW} {head.get('outcome')}"
        return f"{at} exits {_exits(base)} {ARROW} {_exits(head)}"
    if kind in (RESULT_CHANGED, ARGS_CHANGED):
        what = "results" if kind == RESULT_CHANGED else "args"
        return f"{at} {what}: {_either(lambda v: _values(v, digest), base, head)}"
    if kind == BRANCH_CHANGED:
        site = change.site or "?"
        predicate = f" `{change.predicate}`" if change.predicate else ""
        return f"{site}{predicate}: {_outcomes(base)} {ARROW} {_outcomes(head)}"
    if kind == STAND_IN_CHANGED:
        return f"{at}: {_fields(base, digest)} {ARROW} {_fields(head, digest)}"
    if kind == STATE_CHANGED:
        return f"{at} state: {_either(_facts, base, head)}"
    if kind == ESCAPED_WARNINGS_CHANGED:
        if base is None or head is None:
            side = "base" if base is None else "head"
            other = _warned(base or head)
            return f"warnings not recorded on the {side} side; the other warned: {other}"
        return f"warnings: {_warnings_change(base, head)}"
    return f"{kind} at {at}: {base!r} {ARROW} {head!r}"


PATH_SEPARATOR = " \u203a "


def describe_each(changes: Sequence[Change], labels: DigestText | None = None) -> list[str]:
    """Each of ``changes`` as :func:`describe` writes it; where two lines would read the same
    while their changes sit at different places of the call tree (one function called from
    two callers), each says the shortest part of its path that tells it from the others,
    ``  (via py:a.caller)``, so that a reader never sees one line twice and wonders why."""
    lines = [describe(change, labels) for change in changes]
    groups: dict[str, list[int]] = {}
    for index, line in enumerate(lines):
        groups.setdefault(line, []).append(index)
    for members in groups.values():
        paths = {tuple(changes[i].path) for i in members}
        if len(paths) < 2:
            continue
        for i in members:
            path = tuple(changes[i].path)
            others = {p for p in paths if p != path}
            for length in range(2, len(path) + 1):
                tail = path[-length:]
                if all(p[-length:] != tail for p in others):
                    break
            else:
                tail = path
            above = tail[:-1]
            if above:
                lines[i] += f"  (via {PATH_SEPARATOR.join(above)})"
    return lines


def _warned(warned: object) -> str:
    if not isinstance(warned, Sequence) or not warned:
        return "nothing else"
    return "; ".join(warning_text(item) for item in warned if isinstance(item, Mapping))


def said(item: Mapping[str, object]) -> str | None:
    """What a warning said, as a report shows it: ``message #1a2b3c4d`` (its digest), with
    the preview before it where one was recorded; the text itself in older recordings; None
    where messages were not compared."""
    digest, message = item.get("message_digest"), item.get("message")
    if isinstance(digest, str):
        mark = f"message #{digest[:_DIGEST_CHARS]}"
        return f"{message!r} {mark}" if isinstance(message, str) else mark
    return repr(message) if isinstance(message, str) else None


def warning_text(item: Mapping[str, object]) -> str:
    """One warning entry, as ``DeprecationWarning(message #1a2b3c4d) from <root>/m.py x1``."""
    what = said(item)
    category = f"{item.get('category')}({what})" if what is not None else item.get("category")
    return f"{category} from {item.get('origin')} {TIMES}{item.get('count')}"


def _warnings_change(base: object, head: object) -> str:
    """Both sides' warnings, by category and origin: a warning whose text changed reads
    ``message changed (message #1a2b… x1 -> message #9f8e… x1)``."""
    groups: dict[tuple[str, str], tuple[list[Mapping[str, object]], list[Mapping[str, object]]]]
    groups = {}
    for side, items in ((0, base), (1, head)):
        for item in items if isinstance(items, Sequence) else ():
            if isinstance(item, Mapping):
                key = (str(item.get("category")), str(item.get("origin")))
                groups.setdefault(key, ([], []))[side].append(item)
    parts: list[str] = []
    for (category, origin), (was, now) in sorted(groups.items()):
        if was and now:
            what = "message changed " if {said(i) for i in was} != {said(i) for i in now} else ""
            parts.append(
                f"{category} from {origin}: {what}({_counted(was)} {ARROW} {_counted(now)})"
            )
        elif now:
            parts.append(f"now also {_warned(now)}")
        else:
            parts.append(f"no longer {_warned(was)}")
    return "; ".join(parts) or "nothing else"


def _counted(items: Sequence[Mapping[str, object]]) -> str:
    return ", ".join(
        f"{what + ' ' if (what := said(item)) is not None else ''}{TIMES}{item.get('count')}"
        for item in items
    )


def _noun(kind: str) -> str:
    return {"call": "call", "stand": "stand-in", "egress": "egress"}[kind.split("_", 1)[0]]
