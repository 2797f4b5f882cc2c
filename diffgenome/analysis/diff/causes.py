"""One cause, one entry: the changes of many tests grouped by what changed.

A release that touches a function most of a suite runs changes a thousand tests the same way
(``_finalize_emphasis_tokens args: ... → ..., max_depth=int`` in 973 of them); only the values,
which come from each test, differ. A cause is a change's *signature*: the node it is about
(its symbol, and its caller for a call that came or went), its kind, and the before → after
with what differs by test collapsed: value digests (the shapes stay), counts, how often a
decision went each way (which ways it went stays). Every change of every test that is not
quiet belongs to exactly one cause; what a refactor moved (``TestDiff.structure``) is a cause
of its own kind. Causes are ordered as a reviewer reads them: outcomes first, then the changed
code's own behaviour before its callers' (the deepest node first), then by how many tests
show them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from diffgenome.analysis.diff.describe import ARROW, describe, fields_text, said
from diffgenome.analysis.diff.effects import describe_effect
from diffgenome.analysis.diff.origins import TestOrigins, structure_origins
from diffgenome.analysis.models import Cause, CauseGroup, Change, CodeChange, TestDiff
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    BRANCH_CHANGED,
    CALL_ADDED,
    CALL_COUNT_CHANGED,
    CALL_REMOVED,
    CODE_ADDED,
    CODE_MODIFIED,
    EFFECT_KINDS,
    ESCAPED_WARNINGS_CHANGED,
    EXIT_CHANGED,
    OUTCOME_CHANGED,
    RESULT_CHANGED,
    STATUS_CHANGED,
    STATUS_RESTRUCTURED,
    STATUS_UNVERIFIED,
    SYMBOL_PREFIX,
)

#: Statuses whose changes are causes (the quiet ones are counted under their structure only).
_LOUD = (STATUS_CHANGED, STATUS_UNVERIFIED)
#: How many test ids a cause names as examples.
EXAMPLES = 3
STRUCTURE_KIND = "structure"
#: A lambda or generator expression whose code changed: it is named by its content, so the
#: test shows its old name's call removed and its new name's added, one cause.
EDITED_KIND = "anonymous_changed"
#: What a group says of a function whose only change is a lambda or generator expression in it.
ANONYMOUS_CODE = "a lambda or generator expression in it changed"
_CONTENT_NAME = re.compile(r"(<(?:lambda|genexpr)>)\[[0-9a-f]+\]")


def _edited_anonymous(changes: Sequence[Change]) -> dict[int, str]:
    """``id(change)`` → the cause line, for the removed and added calls of one anonymous
    function's two names under one caller."""
    sides: dict[tuple[str, tuple[str, ...]], dict[str, list[Change]]] = {}
    for change in changes:
        if change.kind not in (CALL_ADDED, CALL_REMOVED) or not change.path:
            continue
        slot, n = _CONTENT_NAME.subn(r"\1", change.path[-1])
        if n:
            key = (slot, tuple(change.path[:-1]))
            sides.setdefault(key, {}).setdefault(change.kind, []).append(change)
    out: dict[int, str] = {}
    for (slot, parent), kinds in sides.items():
        if CALL_ADDED in kinds and CALL_REMOVED in kinds:
            under = f" under {parent[-1]}" if parent else ""
            line = f"{slot}: its code changed{under}"
            for change in (*kinds[CALL_ADDED], *kinds[CALL_REMOVED]):
                out[id(change)] = line
    return out


@dataclass(slots=True)
class _Group:
    summary: str
    kind: str
    symbol: str | None
    site: str | None
    depth: int
    tests: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    origins: set[str] = field(default_factory=set)
    #: Some change of it had no changed code in reach.
    unreached: bool = False
    #: Some test sees it (diff/reach.py): read before what happens only inside the project.
    sees: bool = False


Reach = Literal["code", "several", "none"]
#: For each test, what puts its changes down to code changes (None: nothing to read).
OriginsOf = Callable[[TestDiff], TestOrigins | None]


def find_causes(
    tests: Sequence[TestDiff],
    changed_symbols: Iterable[str] = (),
    one_sided_sites: Iterable[str] = (),
) -> list[Cause]:
    """The causes of ``tests``' changes (and of their structure lines), most telling first.
    A decision that exists in one side's code only (``one_sided_sites``: the change added or
    removed it) being taken on that side is the code change itself, listed with it and with
    each test: it is no cause of its own."""
    kinds = {symbol: CODE_MODIFIED for symbol in changed_symbols}
    return causes_by_code_change(tests, kinds, one_sided_sites)[0]


def causes_by_code_change(
    tests: Sequence[TestDiff],
    code_changes: Mapping[str, str] | Sequence[CodeChange],
    one_sided_sites: Iterable[str] = (),
    origins_of: OriginsOf | None = None,
    other_files: Sequence[str] = (),
) -> tuple[list[Cause], list[CauseGroup]]:
    """:func:`find_causes`, each cause with the code change it descends from
    (``diff/origins.py``), and the causes grouped by it: one group per changed symbol, then
    the causes through several code changes and those with none in reach. ``code_changes``:
    the diff's entries (or symbol → added/removed/modified). Without ``origins_of`` nothing
    is read off the recordings and there are no groups. ``other_files``: the changed files no
    symbol speaks for, named in the heading of the causes with no changed code in reach
    (where such a file is the likeliest cause)."""
    if isinstance(code_changes, Mapping):
        kinds = dict(code_changes)
        entries: dict[str, CodeChange] = {}
    else:
        kinds = {entry.symbol: entry.change for entry in code_changes}
        entries = {entry.symbol: entry for entry in code_changes}
    changed = frozenset(kinds)
    implied = frozenset(one_sided_sites)
    groups: dict[tuple[str, str], _Group] = {}
    status_of: dict[str, str] = {}
    for test in tests:
        seen: set[tuple[str, str]] = set()
        origins = origins_of(test) if origins_of is not None else None
        status_of[test.id] = test.status
        if test.status in _LOUD:
            edited = _edited_anonymous(test.changes)
            for change in test.changes:
                one_sided = change.base is None or change.head is None
                if change.kind == BRANCH_CHANGED and change.site in implied and one_sided:
                    continue
                slot = edited.get(id(change))
                key = (EDITED_KIND, slot) if slot else (change.kind, signature(change))
                group = groups.get(key)
                if group is None:
                    group = groups[key] = _Group(
                        key[1], key[0], change.symbol, change.site, len(change.path)
                    )
                group.sees |= change.reach == "seen"
                if origins is not None:
                    found = origins.of_change(change)
                    group.origins |= found
                    group.unreached |= not found
                if key not in seen:
                    seen.add(key)
                    group.depth = max(group.depth, len(change.path))
                    _count(group, test)
        for moved in test.structure:
            # One entry per thing moved, whichever words a test's own verdict gave it (a
            # helper is "extracted" where behaviour stayed, "new" where it did not).
            key = (STRUCTURE_KIND, moved.split("`")[1] if moved.count("`") >= 2 else moved)
            group = groups.setdefault(key, _Group(moved, STRUCTURE_KIND, None, None, 0))
            if origins is not None:
                found = structure_origins(moved, kinds)
                group.origins |= found
                group.unreached |= not found
            if key not in seen:
                seen.add(key)
                if test.status == STATUS_RESTRUCTURED and STATUS_RESTRUCTURED not in group.statuses:
                    group.summary = moved
                _count(group, test)
    ordered = sorted(groups.values(), key=lambda group: _rank(group, changed))
    causes = [_cause(group, origins_of is not None) for group in ordered]
    if origins_of is None:
        return causes, []
    return causes, _by_code_change(
        ordered, causes, kinds, entries, status_of, unreached_text(other_files)
    )


#: The heading of the causes no changed code is in reach of.
UNREACHED = "no changed code on its call path"
#: How many of the other changed files that heading names.
_OTHER_FILES_NAMED = 3


def unreached_text(other_files: Sequence[str]) -> str:
    """``no changed code on its call path; changed besides code: pyproject.toml, data.csv
    and 4 more``: a cause with no changed code in reach comes from the tests' environment,
    from a value made earlier, or from one of these files."""
    if not other_files:
        return UNREACHED
    named = ", ".join(other_files[:_OTHER_FILES_NAMED])
    more = len(other_files) - _OTHER_FILES_NAMED
    return f"{UNREACHED}; changed besides code: {named}" + (f" and {more} more" if more > 0 else "")


def _cause(group: _Group, read: bool) -> Cause:
    reach: Reach | None = None
    origin = None
    if read:
        reach = _reach(group)
        origin = next(iter(group.origins)) if reach == "code" else None
    return Cause(
        summary=group.summary,
        kind=group.kind,
        symbol=group.symbol,
        site=group.site,
        tests=len(group.tests),
        statuses=dict(sorted(group.statuses.items())),
        examples=group.tests[:EXAMPLES],
        reach=reach,
        origin=origin,
        origins=sorted(group.origins),
        sees=group.sees,
    )


def _reach(group: _Group) -> Reach:
    """One changed symbol in reach of every change: that code change's. A change with none
    in reach beside others that have one is not put down to them (they may be unrelated)."""
    if len(group.origins) == 1 and not group.unreached:
        return "code"
    if len(group.origins) >= 1:
        return "several"
    return "none"


def _by_code_change(
    ordered: Sequence[_Group],
    causes: Sequence[Cause],
    kinds: Mapping[str, str],
    entries: Mapping[str, CodeChange],
    status_of: Mapping[str, str],
    unreached: str = UNREACHED,
) -> list[CauseGroup]:
    """One group per code change with its causes, in the causes' order; then the causes of
    several code changes, then those of none. Groups are read as a reviewer acts: those with
    an outcome change first, then those with behaviour changes, then those of structure
    only; within each, the code changes (by how many changed tests they reach) before the
    causes through several code changes and those with none in reach; within a group,
    outcomes, then behaviour by test count, then structure."""
    changed = frozenset(kinds)
    members: dict[tuple[Reach, str | None], list[int]] = {}
    for index, cause in enumerate(causes):
        reach: Reach = cause.reach or "none"
        members.setdefault((reach, cause.origin if reach == "code" else None), []).append(index)
    out: list[tuple[tuple[int, bool, int, int, int, int, str], CauseGroup]] = []
    order = {"code": 0, "several": 1, "none": 2}
    for (reach, symbol), indexes in members.items():
        # Within a group: outcomes, then behaviour by how many tests show it, then structure.
        indexes = sorted(
            indexes,
            key=lambda i: (
                _bucket(ordered[i], changed),
                not ordered[i].sees,
                -len(ordered[i].tests),
                i,
            ),
        )
        tests: dict[str, None] = {}
        symbols: set[str] = set()
        for index in indexes:
            tests.update(dict.fromkeys(ordered[index].tests))
            symbols |= ordered[index].origins
        statuses: dict[str, int] = {}
        for test in tests:
            statuses[status_of[test]] = statuses.get(status_of[test], 0) + 1
        entry = entries.get(symbol) if symbol is not None else None
        if reach == "code" and symbol is not None:
            # No entry of its own: the function around a lambda or generator expression
            # whose code changed (diff/origins.py).
            code = code_text(entry) if entry is not None else ANONYMOUS_CODE
        elif reach == "several":
            code = "through several code changes: " + ", ".join(sorted(symbols))
        else:
            code = unreached
        group = CauseGroup(
            reach=reach,
            symbol=symbol,
            change=entry.change if entry is not None else None,
            code=code,
            symbols=sorted(symbols) if reach == "several" else [],
            tests=len(tests),
            statuses=dict(sorted(statuses.items())),
            causes=indexes,
            examples=list(tests)[:EXAMPLES],
        )
        bucket = min(_bucket(ordered[index], changed) for index in indexes)
        loud = sum(n for status, n in statuses.items() if status in _LOUD)
        sees = any(ordered[index].sees for index in indexes)
        rank = (bucket, not sees, order[reach], -loud, -len(tests), len(indexes), symbol or "")
        out.append((rank, group))
    return [group for _, group in sorted(out, key=lambda item: item[0])]


def code_text(entry: CodeChange) -> str:
    """What changed in a symbol's code, one short line: ``new``, ``removed``, ``modified``,
    ``modified; decision `k is None` added``, ``modified; 28 decisions changed``."""
    # A code change kind says itself, but a symbol that was added is new, and one the
    # mapping paired under another name says what it was.
    word: str = "new" if entry.change == CODE_ADDED else entry.change
    if entry.renamed_from is not None:
        was = entry.renamed_from.removeprefix(SYMBOL_PREFIX)
        word = f"{word}, was `{was}`"
    sites = [site for site in entry.sites if isinstance(site.get("predicate"), str)]
    if len(sites) == 1:
        predicate = str(sites[0].get("predicate"))
        if len(predicate) <= _PREDICATE_CHARS:
            return f"{word}; decision `{predicate}` {sites[0].get('change')}"
    if sites:
        return f"{word}; {len(sites)} decisions changed"
    return word


#: The longest predicate a group's heading names (longer ones are counted).
_PREDICATE_CHARS = 40


def _count(group: _Group, test: TestDiff) -> None:
    group.tests.append(test.id)
    group.statuses[test.status] = group.statuses.get(test.status, 0) + 1


def _bucket(group: _Group, changed: frozenset[str]) -> int:
    """Outcomes (0), behaviour (1), structure (2): how groups and their causes are read."""
    return {0: 0, 3: 2}.get(_tier(group, changed), 1)


def _tier(group: _Group, changed: frozenset[str]) -> int:
    if group.kind == OUTCOME_CHANGED:
        return 0
    if group.kind == STRUCTURE_KIND:
        return 3
    if group.symbol in changed or (group.site or "").split("/", 1)[0] in changed:
        return 1  # the changed code's own behaviour
    return 2  # what its callers, stand-ins and the world saw of it


def _rank(group: _Group, changed: frozenset[str]) -> tuple[int, bool, int, int, str]:
    """Outcomes, behaviour, structure (:func:`_tier`); within each, what a test sees before
    what happens only inside the project, then by how many tests show it."""
    return (
        _tier(group, changed),
        not group.sees,
        -len(group.tests),
        -group.depth,
        group.summary,
    )


def signature(change: Change) -> str:
    """``change`` as one line with what differs by test left out."""
    kind, base, head = change.kind, change.base, change.head
    if kind == CALL_COUNT_CHANGED:
        at = change.path[-1] if change.path else "(test)"
        return f"{at} ran {_more_or_less(base, head)}"
    if kind == BRANCH_CHANGED:
        site = change.site or "?"
        predicate = f" `{change.predicate}`" if change.predicate else ""
        return f"{site}{predicate}: {_ways(base)} {ARROW} {_ways(head)}"
    if kind in EFFECT_KINDS:
        return describe_effect(kind, change.phase, base, head)
    at = change.path[-1] if change.path else "(test)"
    if change.phase not in (None, "call"):
        at = f"[{change.phase}] {at}"
    if kind.endswith(("_added", "_removed")) and kind != ESCAPED_WARNINGS_CHANGED:
        noun, _, verb = kind.rpartition("_")
        parent = f" under {change.path[-2]}" if len(change.path) > 1 else ""
        return f"{noun.replace('_', '-')} {verb}: {at}{parent}"
    if kind == EXIT_CHANGED and not (isinstance(base, Mapping) and "outcome" in base):
        return f"{at} exits {_keys(base)} {ARROW} {_keys(head)}"
    if kind == ESCAPED_WARNINGS_CHANGED:
        return f"warnings: {_warnings(base)} {ARROW} {_warnings(head)}"
    b, h = _collapse(base), _collapse(head)
    if kind == ARGS_CHANGED:
        moved = _parameters_changed(b, h)
        if moved:
            return f"{at} args: {moved}"
    if kind in (RESULT_CHANGED, ARGS_CHANGED) and b == h and b:
        what = "results" if kind == RESULT_CHANGED else "args"
        shapes = "; ".join(str(v.get("shape")) for v in b if isinstance(v, Mapping))
        return f"{at} {what}: other values of {shapes}"
    collapsed = change.model_copy(update={"base": b, "head": h})
    if b == h and b:  # only values that differ by test differ
        return f"{at}: other values of {fields_text(b)}"
    return describe(collapsed, lambda digest: "")


def _parameters_changed(base: object, head: object) -> str:
    """What an argument list gained or lost (``now also fold=int``), seen across the shapes
    of both sides: another parameter's shape that varies from test to test (``tzinfo=None``
    here, ``tzinfo=timezone`` there) is no part of the change. Empty when the parameters
    are the same on both sides (only their values changed)."""
    b_parts, h_parts = _parts(base), _parts(head)
    if b_parts is None or h_parts is None:
        return ""
    gained = [part for part in sorted(h_parts - b_parts)]
    lost = [part for part in sorted(b_parts - h_parts)]
    words = []
    if gained:
        words.append("now also " + ", ".join(gained))
    if lost:
        words.append("no longer " + ", ".join(lost))
    return "; ".join(words)


def _parts(values: object) -> set[str] | None:
    """Every ``name=shape`` of a side's argument shapes; None when a shape is no list of
    named arguments (an overflow entry, a shape without ``=``)."""
    if not isinstance(values, list) or not values:
        return None
    parts: set[str] = set()
    for value in values:
        shape = value.get("shape") if isinstance(value, Mapping) else None
        if not isinstance(shape, str):
            return None
        for part in _split_top(shape):
            if "=" not in part:
                return None
            parts.add(part)
    return parts


def _split_top(shape: str) -> list[str]:
    """``a=int, b=dict[str, int]`` → ``["a=int", "b=dict[str, int]"]``: commas inside brackets
    belong to a type."""
    out, depth, start = [], 0, 0
    for index, char in enumerate(shape):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == "," and depth == 0:
            out.append(shape[start:index].strip())
            start = index + 1
    tail = shape[start:].strip()
    if tail:
        out.append(tail)
    return out


def _keys(exits: object) -> str:
    if not isinstance(exits, Mapping) or not exits:
        return "none"
    return ", ".join(sorted(str(key) for key in exits))


def _warnings(warned: object) -> str:
    if warned is None:
        return "not recorded"
    if not isinstance(warned, Sequence) or not warned:
        return "none"
    # A message's digest is the same value in every test: it stays; the count does not.
    return "; ".join(
        sorted(
            f"{item.get('category')}({said(item) or ''}) from {item.get('origin')}"
            for item in warned
            if isinstance(item, Mapping)
        )
    )


def _more_or_less(base: object, head: object) -> str:
    if isinstance(base, int) and isinstance(head, int):
        return "more often" if head > base else "less often"
    return "a different number of times"


def _ways(outcomes: object) -> str:
    """Which ways a decision went, not how often."""
    if not isinstance(outcomes, Mapping):
        return "not reached"
    ways = [way for way in ("true", "false") if outcomes.get(way)]
    return " and ".join(ways) if ways else "never decided"


def _collapse(value: object) -> Any:
    """A change's side without what comes from each test: digests, counts and previews (a
    value's text is each test's own, as its digest is)."""
    if isinstance(value, list):
        out = [_collapse(item) for item in value]
        return sorted(out, key=repr)
    if isinstance(value, Mapping):
        fields: dict[str, Any] = {}
        for key, item in value.items():
            if key in ("digest", "count", "preview", "beyond"):
                continue
            if key == "overflow":
                fields[key] = "N"
            elif key == "exits" and isinstance(item, Mapping):
                fields[key] = {name: "N" for name in item}
            else:
                fields[key] = _collapse(item)
        return fields
    return value
