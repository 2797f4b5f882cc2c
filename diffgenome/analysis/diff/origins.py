"""Which code change a test's change descends from: the second level of the causes.

A release that touches most of a suite has a hundred causes (tomlkit 0.15.1 → 0.15.2: 120),
but far fewer code changes; a reviewer reads the pull request by its code changes. Each
change of a test is put down to the changed symbols (``code_changes``) in its reach, read off
the recordings, never guessed:

- a call of code the change added or removed is that code's (``call added: _dashes under
  _pipe_segment_with_colons`` is the new ``_dashes``'s; a lambda or generator expression,
  named by its content, is its enclosing function's), and so is a structure line about it;
- a change at a node whose own code changed is that code's (``Container.as_string results``
  is ``Container.as_string``'s), and so is a call that came, went or ran another number of
  times under it, and the arguments it passed (``call added: Key.as_string under
  Container.as_string`` is ``Container.as_string``'s);
- otherwise the change is what its node (for a call, its arguments or its count: the node's
  caller) saw of changed code it ran: the changed calls in that node's subtree on either side,
  the outermost ones only (a helper a changed function calls is part of that function's
  change), narrowed to those that show a change of their own in this test when any does;
- with none there, the innermost changed caller above the node (it passed what differs);
- with none there either, the innermost node on the path whose code reads a name a changed
  module or class body binds (termcolor 2.5.0 added ``strike`` to its module-level
  ``ATTRIBUTES``: ``colored ran more often`` under a test that loops over it is that body's);
- a warning pytest gives about its own configuration (``PytestConfigWarning``: a filter that
  names a module it cannot import) is no code's: it comes from a configuration file;
- an effect (what a phase printed, logged, wrote or set) has no node: it is the innermost
  changed code the phase ran, preferring code that shows a change of its own (docopt-ng: a
  print moved to standard error in ``parse_longer`` was put down to ``parse_argv`` above it,
  whose decisions changed too). Which code printed is not recorded, so this is a reading,
  the likeliest one, never a fact.

A cause whose changes all descend from one changed symbol is listed under it; one whose
changes reach several is "through several code changes", with them named; one with no
changed code above or below its node (a difference of the environment, of test code, or a
value that changed code made earlier in the test and this node only reads) is "no changed
code on its call path", with the changed files no symbol speaks for named beside it
(``CodeChangeInput.other_files``). Nothing is dropped: every cause is in exactly one of these
places.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from diffgenome.analysis.diff.align import PhaseIndex, TestIndex, element_symbol
from diffgenome.analysis.models import Change
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    CALL_ADDED,
    CALL_COUNT_CHANGED,
    CALL_REMOVED,
    EFFECT_KINDS,
    ESCAPED_WARNINGS_CHANGED,
    SYMBOL_PREFIX,
)

#: Kinds that say what a caller did (a call made or not, how often, with what): the
#: caller's code is where they come from.
_CALLER_KINDS = frozenset({CALL_ADDED, CALL_REMOVED, CALL_COUNT_CHANGED, ARGS_CHANGED})
_PRESENCE_KINDS = frozenset({CALL_ADDED, CALL_REMOVED, CALL_COUNT_CHANGED})

Path = tuple[str, ...]

#: What pytest warns about its own configuration (an unknown option, a ``filterwarnings``
#: entry naming a category it cannot import), in every test it applies the filters to.
CONFIGURATION_WARNING = "pytest.PytestConfigWarning"


def _symbol(part: str) -> str | None:
    return element_symbol(part)


_CONTENT_NAMED = re.compile(r"^(.*)\.<locals>\.<(?:lambda|genexpr)>\[[0-9a-f]+\](?:#\d+)?$")


def _enclosing(symbol: str) -> str | None:
    """The function a content-named lambda or generator expression is in, else None."""
    found = _CONTENT_NAMED.match(symbol)
    return found.group(1) if found else None


def _changed_calls(phase: PhaseIndex, changed: frozenset[str]) -> list[Path]:
    return [path for path in phase.nodes if path and _symbol(path[-1]) in changed]


@dataclass(slots=True)
class TestOrigins:
    """The code changes in reach of one test's changes (both sides' recordings)."""

    base: TestIndex | None
    head: TestIndex | None
    changed: frozenset[str]
    active: frozenset[str] = frozenset()
    #: The changed symbols that exist on one side only (added or removed).
    one_sided: frozenset[str] = frozenset()
    #: A function → the modified module or class bodies whose names it reads
    #: (``CodeChangeInput.bodies_read_by``).
    reads: Mapping[str, frozenset[str]] = field(default_factory=dict)
    _calls: dict[tuple[str, str | None], list[Path]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        base: TestIndex | None,
        head: TestIndex | None,
        changed: frozenset[str],
        changes: Sequence[Change],
        one_sided: frozenset[str] = frozenset(),
        reads: Mapping[str, frozenset[str]] | None = None,
    ) -> TestOrigins:
        """``changes``: the test's changes; the changed symbols on their paths are the ones
        whose behaviour this test saw change ("active"). ``one_sided``: the changed symbols
        that were added or removed; ``reads``: which changed bodies' names a function reads."""
        active = {
            _enclosing(symbol) or symbol
            for change in changes
            for part in change.path
            if (symbol := _symbol(part)) in changed
        }
        return cls(base, head, changed, frozenset(active), one_sided, reads or {})

    def _paths(self, side: str, phase: str | None) -> list[Path]:
        """Calls of changed code on ``side`` in ``phase`` (None: every phase, for a change
        of the whole test such as its outcome)."""
        key = (side, phase)
        found = self._calls.get(key)
        if found is None:
            test = self.base if side == "base" else self.head
            phases = test.phases if test is not None else {}
            if phase is None:
                chosen = list(phases.values())
            else:
                chosen = [phases[phase]] if phase in phases else []
            found = [path for index in chosen for path in _changed_calls(index, self.changed)]
            self._calls[key] = found
        return found

    def _below(self, anchor: Path, phase: str | None) -> set[str]:
        """The outermost changed calls in ``anchor``'s subtree (itself excluded), either
        side: a changed call under another changed call of the subtree is part of it; a
        content-named lambda or generator expression stands for its enclosing function."""
        out: set[str] = set()
        depth = len(anchor)
        for side in ("base", "head"):
            for path in self._paths(side, phase):
                if len(path) <= depth or path[:depth] != anchor:
                    continue
                between = path[depth:-1]
                if any(_symbol(part) in self.changed for part in between):
                    continue
                symbol = _symbol(path[-1])
                if symbol is not None:
                    out.add(_enclosing(symbol) or symbol)
        return out

    def _innermost(self, phase: str | None) -> set[str]:
        """The changed calls of ``phase`` (either side) with no changed call below them: an
        effect (what a phase printed, logged, wrote) has no node of its own, and the code
        that made it is the innermost changed code that ran (a print moved to standard
        error in ``parse_longer`` is ``parse_longer``'s, not that of ``parse_argv`` above
        it)."""
        paths = [path for side in ("base", "head") for path in self._paths(side, phase)]
        out: set[str] = set()
        for path in paths:
            depth = len(path)
            if any(
                len(other) > depth and other[:depth] == path for other in paths if other != path
            ):
                continue
            symbol = _symbol(path[-1])
            if symbol is not None:
                out.add(_enclosing(symbol) or symbol)
        return out

    def _bodies_read(self, phase: str | None) -> frozenset[str]:
        """The changed bodies whose names code of ``phase`` (either side) read: where an
        effect comes from when no changed code ran (a print of every entry of a changed
        module-level table)."""
        if not self.reads:
            return frozenset()
        out: set[str] = set()
        for test in (self.base, self.head):
            phases = test.phases if test is not None else {}
            chosen = list(phases.values()) if phase is None else [phases.get(phase)]
            for index in chosen:
                for path in index.nodes if index is not None else ():
                    out |= self.reads.get(_symbol(path[-1]) or "", frozenset()) if path else set()
        return frozenset(out) & self.changed

    def of_change(self, change: Change) -> frozenset[str]:
        """The changed symbols ``change`` descends from; empty when none is in reach."""
        path: Path = tuple(change.path)
        own = _symbol(path[-1]) if path else None
        caller_kind = change.kind in _CALLER_KINDS
        if own is not None and own in self.one_sided:
            enclosing = _enclosing(own)
            if enclosing is not None:
                # A lambda or generator expression is named by its content: a new name is
                # its enclosing function's code changing (whose own entry may list nothing
                # else: the expression's code is all that changed).
                return frozenset({enclosing})
            # A call of code the change added or removed is that code's coming or going.
            return frozenset({own})
        if own in self.changed and change.kind not in _PRESENCE_KINDS:
            return frozenset({own}) if own is not None else frozenset()
        site_symbol = (change.site or "").split("/", 1)[0]
        if site_symbol in self.changed:
            return frozenset({site_symbol})
        if _configuration_warnings(change):
            return frozenset()
        if change.kind in EFFECT_KINDS and not path:
            inner = self._innermost(change.phase)
            seen = inner & self.active
            return frozenset(seen or inner) or self._bodies_read(change.phase)
        anchor = path[:-1] if caller_kind and path else path
        holder = _symbol(anchor[-1]) if anchor else None
        if holder in self.changed and holder is not None:
            return frozenset({holder})
        below = self._below(anchor, change.phase)
        seen = below & self.active
        if seen:
            return frozenset(seen)
        if below:
            return frozenset(below)
        for part in reversed(anchor[:-1]):
            symbol = _symbol(part)
            if symbol in self.changed and symbol is not None:
                return frozenset({symbol})
        for part in reversed(path):
            bodies = self.reads.get(_symbol(part) or "")
            if bodies:
                return bodies & self.changed
        return frozenset()


def _configuration_warnings(change: Change) -> bool:
    """Whether every warning that differs between the sides of ``change`` is pytest's about
    its configuration (:data:`CONFIGURATION_WARNING`): how often a warning came is left to
    the other rules, which warnings came is not."""
    if change.kind != ESCAPED_WARNINGS_CHANGED:
        return False
    differ = _warned(change.base) ^ _warned(change.head)
    return bool(differ) and all(category == CONFIGURATION_WARNING for category, _ in differ)


def _warned(side: object) -> set[tuple[object, object]]:
    if not isinstance(side, Sequence) or isinstance(side, str):
        return set()
    return {
        (item.get("category"), item.get("origin")) for item in side if isinstance(item, Mapping)
    }


def structure_origins(line: str, kinds: Mapping[str, str]) -> frozenset[str]:
    """The code change a structure line (``TestDiff.structure``) is about: the first changed
    symbol it names in backticks, which is what moved (the helper extracted, the method
    renamed, the function a lambda left); ``kinds`` holds the changed symbols."""
    named = [
        f"{SYMBOL_PREFIX}{name}"
        for name in line.split("`")[1::2]
        if f"{SYMBOL_PREFIX}{name}" in kinds
    ]
    return frozenset(named[:1])
