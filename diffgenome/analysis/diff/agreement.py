"""What every recording of each side agrees on, inside a field that varies.

Instability is kept per field (a call's results, a decision at one path, the files a phase
wrote): a field that differed between two recordings of one commit masks the difference
base and head show there. But a field holds several things. The files a phase wrote are
one field, and a package's archive stamped with the time masked the report file written
beside it; one call's results are one field, and a timestamp it returned once masked the
value it returned the other time. So before a masked difference is set apart, each thing
it lists is looked at in every recording of the test (the first ones, ``--repeat``'s and
confirmation's): one that every recording of base shows alike and every recording of head
shows alike, the two differing, is a change that held, and stays a change (docs/diffing.md,
"Instability is per field").

For a field that is one value (a count, the exits, a decision's outcomes, whether a call
exists) that is the value itself: the same in every recording of base, another same one in
every recording of head. For a field that is a set or multiset (arguments, results, state
facts, effect entries), each member on its own: how often each recording holds it. A field
this does not look into (a stand-in's, the escaped warnings) stays masked whole, as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from diffgenome.analysis.diff.align import NodeDict, TestIndex
from diffgenome.analysis.diff.compare import PRESENCE_KINDS, Found
from diffgenome.analysis.diff.effects import KIND_OF, effect_forms, entry_form
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    BRANCH_CHANGED,
    CALL_COUNT_CHANGED,
    EXIT_CHANGED,
    OUTCOME_CHANGED,
    RESULT_CHANGED,
    STATE_CHANGED,
    TYPE_OS_EVENT,
)

_EFFECT_TYPES: Final = {kind: effect for effect, kind in KIND_OF.items()}
_VALUE_FIELDS: Final = {ARGS_CHANGED: "args", RESULT_CHANGED: "results", STATE_CHANGED: "state"}
_ABSENT: Final = ("\0absent",)
_OVERFLOW: Final = "\0overflow"

Members = Counter[Hashable]


@dataclass(frozen=True, slots=True)
class Witnesses:
    """Every recording of one test on each side (the first one included), and whether
    their value digests compare (one key). Each side needs two at least: a value drawn anew
    by every recording (a timestamp) is in its one recording and in none of the other
    side's, which would read as held."""

    base: Sequence[TestIndex]
    head: Sequence[TestIndex]
    digests: bool

    def held(self, found: Found) -> Found | None:
        """``found`` narrowed to what every recording of base and every recording of head
        show alike, the sides differing; None when nothing of it held (or it is of a field
        this does not look into)."""
        if len(self.base) < 2 or len(self.head) < 2:
            return None  # one recording agrees with itself: a value new each time would hold
        if found.kind in _VALUE_FIELDS or found.kind in _EFFECT_TYPES:
            return self._members(found)
        value = _VALUES.get(found.kind)
        if value is None and found.kind in PRESENCE_KINDS:
            value = _presence
        if value is None:
            return None
        seen_b = {value(test, found) for test in self.base}
        seen_h = {value(test, found) for test in self.head}
        return found if len(seen_b) == 1 and len(seen_h) == 1 and seen_b != seen_h else None

    def _members(self, found: Found) -> Found | None:
        if not isinstance(found.base, list) or not isinstance(found.head, list):
            return None  # a side that did not see the kind: nothing to hold
        counted_b = [_members(test, found, self.digests) for test in self.base]
        counted_h = [_members(test, found, self.digests) for test in self.head]
        if any(members is None for members in (*counted_b, *counted_h)):
            return None
        kept: dict[Hashable, bool] = {}

        def held(entry: object) -> bool:
            key = _member_key(found.kind, entry, self.digests)
            if key not in kept:
                times_b = {members[key] for members in counted_b if members is not None}
                times_h = {members[key] for members in counted_h if members is not None}
                kept[key] = len(times_b) == 1 and len(times_h) == 1 and times_b != times_h
            return kept[key]

        base = [entry for entry in found.base if held(entry)]
        head = [entry for entry in found.head if held(entry)]
        if not base and not head:
            return None
        return replace(found, base=base, head=head)


def _node(test: TestIndex, found: Found) -> NodeDict | None:
    phase = test.phases.get(str(found.phase))
    return None if phase is None else phase.nodes.get(found.path)


def _frozen(value: object) -> Hashable:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value if isinstance(value, Hashable) else repr(value)


def _count(test: TestIndex, found: Found) -> Hashable:
    node = _node(test, found)
    return _ABSENT if node is None else _frozen(node.get("count"))


def _exits(test: TestIndex, found: Found) -> Hashable:
    node = _node(test, found)
    if node is None:
        return _ABSENT
    if node.get("type") == TYPE_OS_EVENT:
        return ("outcome", _frozen(node.get("outcome")))
    return _frozen({k: v for k, v in (node.get("exits") or {}).items() if v})


def _outcomes(test: TestIndex, found: Found) -> Hashable:
    phase = test.phases.get(str(found.phase))
    branch = None if phase is None else phase.branches.get((found.path, str(found.site)))
    if branch is None:
        return _ABSENT
    raw = branch.get("outcomes") or {}
    return (int(raw.get("true") or 0), int(raw.get("false") or 0))


def _outcome(test: TestIndex, found: Found) -> Hashable:
    return _frozen(test.record.get("outcome"))


def _presence(test: TestIndex, found: Found) -> Hashable:
    return _node(test, found) is not None


_VALUES: Final = {
    CALL_COUNT_CHANGED: _count,
    EXIT_CHANGED: _exits,
    BRANCH_CHANGED: _outcomes,
    OUTCOME_CHANGED: _outcome,
}


def _members(test: TestIndex, found: Found, digests: bool) -> Members | None:
    """The members of ``found``'s field in one recording, counted; None: not seen there."""
    effect = _EFFECT_TYPES.get(found.kind)
    if effect is not None:
        forms = effect_forms(test.record, effect, found.phase, digests=digests)
        if forms is None:
            return None
        counted: Members = Counter()
        for form, times in forms.items():
            counted[form] = times
        return counted
    field = _VALUE_FIELDS[found.kind]
    node = _node(test, found)
    out: Members = Counter()
    if node is None:
        return out
    for item in node.get(field) or ():
        if isinstance(item, Mapping):
            out[_recorded_key(field, item, digests)] += 1
    overflow = node.get(f"{field}_overflow")
    if overflow:
        out[(_OVERFLOW, int(overflow.get("count") or 0), _digest(overflow, digests))] += 1
    return out


def _digest(item: Mapping[str, Any], digests: bool) -> object:
    return item.get("digest") if digests else None


def _recorded_key(field: str, item: Mapping[str, Any], digests: bool) -> Hashable:
    if field == "state":
        return (str(item.get("when")), str(item.get("target")), str(item.get("bucket")))
    return (str(item.get("shape")), _digest(item, digests))


def _member_key(kind: str, entry: object, digests: bool) -> Hashable:
    """The key a member a change lists is counted by in a recording (:func:`_members`)."""
    if not isinstance(entry, Mapping):
        return repr(entry)
    if kind in _EFFECT_TYPES:
        return entry_form(entry)
    if "overflow" in entry:
        return (_OVERFLOW, int(entry.get("overflow") or 0), _digest(entry, digests))
    return _recorded_key(_VALUE_FIELDS[kind], entry, digests)


__all__ = ["Witnesses"]
