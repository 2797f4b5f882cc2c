"""Confirmation in context (diff/instability.py, ``replicated_in_context``): a difference
counts as made again only where each side shows what its first recording showed."""

from __future__ import annotations

from typing import Any

from diffgenome.analysis.diff.align import TestIndex, index_test
from diffgenome.analysis.diff.instability import Again, replicated_in_context


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
