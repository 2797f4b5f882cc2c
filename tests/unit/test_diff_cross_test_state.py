"""The cross-test-state rule on its own (#24.6): which differences it explains, and which it
must leave plain. The end-to-end tests (tests/e2e/test_diff_cross_test_state.py) run it
over real git repositories; these pin each condition of docs/diffing.md "Cross-test state"."""

from __future__ import annotations

from diffgenome.analysis.diff.codechanges import CodeChangeInput, SymbolChange
from diffgenome.analysis.diff.compare import Found
from diffgenome.analysis.diff.verdict import carried_state

TEST = "py:tests.test_c.test_lookup"
LOOKUP = (TEST, "py:pkg.cache.lookup")
COMPUTE = (*LOOKUP, "py:pkg.cache.compute")
NO_CHANGE = CodeChangeInput()


def _entry_state(path: tuple[str, ...] = LOOKUP, target: str = "global:_CACHE") -> Found:
    return Found(
        "state_changed",
        "call",
        path,
        path[-1],
        base=[{"when": "entry", "target": target, "bucket": "empty"}],
        head=[{"when": "entry", "target": target, "bucket": "one"}],
    )


def _warm() -> list[Found]:
    """What a warmed cache makes of the test: another branch, a call gone."""
    return [
        _entry_state(),
        Found("branch_changed", "call", LOOKUP, LOOKUP[-1], site="py:pkg.cache.lookup/if[1]"),
        Found("call_removed", "call", COMPUTE, COMPUTE[-1]),
    ]


def test_differences_under_a_call_that_found_other_state_are_named() -> None:
    reason = carried_state(_warm(), NO_CHANGE)
    assert reason is not None
    assert reason.startswith("cross-test-state: global:_CACHE empty → one at entry of ")
    assert "py:pkg.cache.lookup" in reason


def test_a_difference_outside_those_calls_leaves_the_test_plain() -> None:
    other = Found("result_changed", "call", (TEST, "py:pkg.cache.other"), "py:pkg.cache.other")
    assert carried_state([*_warm(), other], NO_CHANGE) is None
    outcome = Found("outcome_changed", None, ())
    assert carried_state([*_warm(), outcome], NO_CHANGE) is None


def test_other_arguments_at_that_call_leave_the_test_plain() -> None:
    args = Found("args_changed", "call", LOOKUP, LOOKUP[-1])
    assert carried_state([*_warm(), args], NO_CHANGE) is None


def test_only_entry_facts_of_module_level_names_count() -> None:
    exit_only = Found(
        "state_changed",
        "call",
        LOOKUP,
        LOOKUP[-1],
        base=[{"when": "exit", "target": "global:_CACHE", "bucket": "one"}],
        head=[{"when": "exit", "target": "global:_CACHE", "bucket": "many"}],
    )
    assert carried_state([exit_only], NO_CHANGE) is None
    field = _entry_state(target="self.items")
    assert carried_state([field], NO_CHANGE) is None


def test_a_name_the_change_binds_or_an_opaque_body_leaves_the_test_plain() -> None:
    binds = CodeChangeInput(symbols=(SymbolChange("py:pkg.cache", "modified", bound=("_CACHE",)),))
    assert carried_state(_warm(), binds) is None
    other = CodeChangeInput(symbols=(SymbolChange("py:pkg.cache", "modified", bound=("LIMIT",)),))
    assert carried_state(_warm(), other) is not None
    opaque = CodeChangeInput(symbols=(SymbolChange("py:pkg.setup", "modified", opaque=True),))
    assert carried_state(_warm(), opaque) is None
