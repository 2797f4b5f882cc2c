"""Alignment rules on small synthesized genomes (shapes the example projects do not easily
produce: deep removed subtrees, loops scaling whole subtrees, overflowing value sets)."""

from __future__ import annotations

from typing import Any

import genomes
from genomes import call

from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.models import GenomeDocument


def document(nodes: list[dict[str, Any]], run: str = "r") -> dict[str, Any]:
    doc = genomes.document(
        [genomes.test_record("t.py::test", {"call": genomes.phase(nodes)})], genomes.run(run)
    )
    GenomeDocument.model_validate(doc)
    return doc


def changes(
    base: list[dict[str, Any]], head: list[dict[str, Any]]
) -> list[tuple[str, str, Any, Any]]:
    diff = diff_documents(document(base), document(head), base_rev="b", head_rev="h")
    (test,) = diff.tests
    return [(c.kind, "/".join(c.path), c.base, c.head) for c in test.changes]


def test_a_removed_subtree_is_reported_once_at_its_top() -> None:
    base = [call(0, None, "t"), call(1, 0, "a"), call(2, 1, "b"), call(3, 2, "c")]
    head = [call(0, None, "t")]
    assert changes(base, head) == [
        ("call_removed", "t/a", {"count": 1, "exits": {"returned": 1}}, None)
    ]


def test_node_ids_do_not_matter_only_paths() -> None:
    base = [call(0, None, "t"), call(1, 0, "a"), call(2, 0, "b")]
    head = [call(0, None, "t"), call(1, 0, "b"), call(2, 0, "a")]
    assert changes(base, head) == []


def test_a_loop_going_round_more_is_one_count_change_not_one_per_descendant() -> None:
    base = [call(0, None, "t"), call(1, 0, "loop", 2), call(2, 1, "body", 4), call(3, 2, "leaf", 8)]
    head = [
        call(0, None, "t"),
        call(1, 0, "loop", 3),
        call(2, 1, "body", 6),
        call(3, 2, "leaf", 12),
    ]
    assert changes(base, head) == [("call_count_changed", "t/loop", 2, 3)]


def test_a_child_count_that_does_not_scale_with_its_parent_is_reported() -> None:
    base = [call(0, None, "t"), call(1, 0, "loop", 2), call(2, 1, "body", 2)]
    head = [call(0, None, "t"), call(1, 0, "loop", 3), call(2, 1, "body", 5)]
    assert changes(base, head) == [
        ("call_count_changed", "t/loop", 2, 3),
        ("call_count_changed", "t/loop/body", 2, 5),
    ]


def test_overflow_compares_by_count_and_digest() -> None:
    value = [{"shape": "int", "digest": "00"}]
    base = [call(0, None, "t", args=value, args_overflow={"count": 3, "digest": "aa"})]
    same = [call(0, None, "t", args=value, args_overflow={"count": 3, "digest": "aa"})]
    more = [call(0, None, "t", args=value, args_overflow={"count": 4, "digest": "bb"})]
    assert changes(base, same) == []
    assert changes(base, more) == [
        (
            "args_changed",
            "t",
            [{"overflow": 3, "digest": "aa"}],
            [{"overflow": 4, "digest": "bb"}],
        )
    ]
