"""Confirmation in context (diff/instability.py, ``replicated_in_context``): a difference
counts as made again only where each side shows what its first recording showed."""

from __future__ import annotations

from typing import Any

from diffgenome.analysis.diff.align import TestIndex, index_test
from diffgenome.analysis.diff.instability import (
    NOT_REPRODUCED,
    Again,
    replicated_in_context,
    unstable_reason,
    unstable_where,
)


def _tests(outcome: str) -> dict[str, TestIndex]:
    record: dict[str, Any] = {
        "id": "t::x",
        "outcome": outcome,
        "phases": {"call": {"nodes": [], "branches": []}},
    }
    return {"t::x": index_test(record)}


def _made_again(base: str, head: str) -> set[Any]:
    first = (_tests("passed"), _tests("failed"))
    context: tuple[list[Again], list[Again]] = ([(_tests(base), {})], [(_tests(head), {})])
    return replicated_in_context(first, context, ["t::x"])["t::x"]


def test_a_pair_that_shows_each_side_as_first_recorded_makes_the_difference_again() -> None:
    assert _made_again("passed", "failed")


def test_a_pair_that_shows_no_difference_makes_nothing_again() -> None:
    assert _made_again("failed", "failed") == set()


def test_a_difference_whose_sides_both_moved_is_not_made_again() -> None:
    """A test that passes or fails by chance: the context pair differs too, the other way
    round; it is no evidence that the code made the first pair's difference."""
    assert _made_again("failed", "passed") == set()


def test_nothing_is_said_without_both_sides_recorded_again() -> None:
    first = (_tests("passed"), _tests("failed"))
    assert replicated_in_context(first, ([], [(_tests("failed"), {})]), ["t::x"]) == {}


def test_where_a_change_varied_is_read_back_from_the_reason_that_says_it() -> None:
    """Whether to record every test once more turns on where a test's change was set apart
    (``pipeline.shown_only_in_context``): read from the reason's own form, whatever the
    described change says, and from no other reason."""
    described = "outcome: passed → failed (a message with '): ' in it)"
    assert unstable_where(unstable_reason(NOT_REPRODUCED, described)) == NOT_REPRODUCED
    assert unstable_where(unstable_reason("base confirmation", described)) == "base confirmation"
    assert unstable_where(f"base: {described}") is None
    assert unstable_where("unstable: and 3 more items") is None
