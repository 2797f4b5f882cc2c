"""How far a change reaches: what the test sees, or only what happens inside the project.

A release that makes a matcher run more often changes hundreds of call trees while every
result the tests get back is equal (soupsieve 2.5 → 2.6: 295 tests changed, 2 of them in a
way anyone could see). Read as one list, the two that matter drown. So every change is put in
one of two tiers (docs/diffing.md, "Reach"):

- **seen**: what the test itself sees: its outcome; what comes back into the test's own code
  (results, exceptions, arguments it passes, calls it makes); effects (output, logs,
  warnings, files, environment); stand-in interactions; egress;
- **internal**: calls, counts, values, decisions and state inside the project whose results
  at the test's boundary are equal (were they not, the boundary's own change would be seen).

A test is ``seen`` when one of its changes is, else ``internal``. The tiers order the
reports; the gate still fails on both by default (``--fail-on changed``): an internal change
is behaviour the suite does not assert on, and whether it matters is the reviewer's call.
``--fail-on seen`` gates on the first tier only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

from diffgenome.analysis.diff.align import OS_PREFIX, STAND_IN_PREFIX, element_symbol
from diffgenome.analysis.models import Change
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
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
)

Reach = Literal["seen", "internal"]
SEEN: Final = "seen"
INTERNAL: Final = "internal"

#: Changes a test sees wherever they are in its tree.
_ALWAYS_SEEN: Final = frozenset(
    {
        OUTCOME_CHANGED,
        ESCAPED_WARNINGS_CHANGED,
        STAND_IN_ADDED,
        STAND_IN_REMOVED,
        STAND_IN_CHANGED,
        EGRESS_ADDED,
        EGRESS_REMOVED,
        *EFFECT_KINDS,
    }
)
#: Changes the test sees when they are at its boundary: a call its own code makes.
_AT_THE_BOUNDARY: Final = frozenset(
    {RESULT_CHANGED, EXIT_CHANGED, ARGS_CHANGED, CALL_ADDED, CALL_REMOVED, CALL_COUNT_CHANGED}
)
_TEST_ORIGIN: Final = "test"


def test_symbols(documents: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The symbols the recordings call test code (the symbols table's ``origin: test``)."""
    out: set[str] = set()
    for document in documents:
        for symbol in document.get("symbols") or ():
            if isinstance(symbol, Mapping) and symbol.get("origin") == _TEST_ORIGIN:
                out.add(str(symbol.get("id")))
    return frozenset(out)


def change_reach(change: Change, tests: frozenset[str]) -> Reach:
    """The tier of one change (see the module docstring)."""
    if change.kind in _ALWAYS_SEEN:
        return SEEN
    path = change.path
    if path and path[-1].startswith((STAND_IN_PREFIX, OS_PREFIX)):
        return SEEN  # a stand-in the test set up, or the network
    if change.kind not in _AT_THE_BOUNDARY:
        return INTERNAL
    if len(path) <= 1:
        return SEEN  # the test function or a fixture itself
    own = element_symbol(path[-1])
    caller = element_symbol(path[-2])
    if (own is not None and own in tests) or (caller is not None and caller in tests):
        return SEEN
    return INTERNAL


def test_reach(changes: Iterable[Change]) -> Reach | None:
    """``seen`` when one of the changes is, ``internal`` when there are changes and none
    is, None without changes (each change's ``reach`` set by :func:`change_reach`)."""
    any_change = False
    for change in changes:
        any_change = True
        if change.reach == SEEN:
            return SEEN
    return INTERNAL if any_change else None


__all__ = ["INTERNAL", "SEEN", "Reach", "change_reach", "test_reach", "test_symbols"]
