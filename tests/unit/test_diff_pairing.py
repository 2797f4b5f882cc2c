"""Pairing of parametrized cases whose positional ids moved (``test[kwargs3]``), by the
digests of their values (``params``), on synthesized genomes."""

from __future__ import annotations

from typing import Any

import genomes
from genomes import call

from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.models import GenomeDocument


def _run(*cases: tuple[str, str | None, str]) -> dict[str, Any]:
    """Cases as (id suffix, value digest, the symbol its call ran)."""
    tests = []
    for suffix, digest, symbol in cases:
        test = genomes.test_record(
            f"t.py::test[{suffix}]", {"call": genomes.phase([call(0, None, symbol)])}
        )
        if digest != "-":
            test["params"] = {"kwargs": digest}
        tests.append(test)
    doc = genomes.document(tests, genomes.run("r"))
    GenomeDocument.model_validate(doc)
    return doc


def _statuses(base: dict[str, Any], head: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    diff = diff_documents(base, head, base_rev="b", head_rev="h")
    return {t.id.partition("::")[2]: (t.status, t.base_id) for t in diff.tests}


BASE = _run(("kwargs0", "ant", "a"), ("kwargs1", "bee", "b"), ("kwargs2", "cat", "c"))


def test_a_case_inserted_first_shifts_no_comparison() -> None:
    head = _run(
        ("kwargs0", "aardvark", "x"),
        ("kwargs1", "ant", "a"),
        ("kwargs2", "bee", "b"),
        ("kwargs3", "cat", "c"),
    )
    assert _statuses(BASE, head) == {
        "test[kwargs0]": ("added", None),
        "test[kwargs1]": ("unchanged", "t.py::test[kwargs0]"),
        "test[kwargs2]": ("unchanged", "t.py::test[kwargs1]"),
        "test[kwargs3]": ("unchanged", "t.py::test[kwargs2]"),
    }


def test_a_case_deleted_first_is_removed_under_its_base_id() -> None:
    head = _run(("kwargs0", "bee", "b"), ("kwargs1", "cat", "c"))
    assert _statuses(BASE, head) == {
        "test[kwargs0] (base)": ("removed", "t.py::test[kwargs0]"),
        "test[kwargs0]": ("unchanged", "t.py::test[kwargs1]"),
        "test[kwargs1]": ("unchanged", "t.py::test[kwargs2]"),
    }


def test_ids_that_did_not_move_are_compared_by_id() -> None:
    """A value edited in place keeps its position: the same case, changed."""
    head = _run(("kwargs0", "ant", "a"), ("kwargs1", "bee", "b"), ("kwargs2", "cow", "c2"))
    assert _statuses(BASE, head)["test[kwargs2]"] == ("changed", None)


def test_without_every_value_known_ids_stay_positions() -> None:
    for missing in (None, "-"):  # too big to digest; not recorded (an older recorder)
        head = _run(
            ("kwargs0", "aardvark", "x"),
            ("kwargs1", "ant", "a"),
            ("kwargs2", missing, "b"),
            ("kwargs3", "cat", "c"),
        )
        statuses = _statuses(BASE, head)
        assert statuses["test[kwargs3]"] == ("added", None), missing
        assert statuses["test[kwargs1]"] == ("changed", None), missing


def test_cases_listed_twice_with_equal_values_pair_in_order() -> None:
    """tomlkit lists some ``test_create_string`` cases twice (kwargs4 and kwargs8)."""
    base = _run(("kwargs0", "ant", "a"), ("kwargs1", "bee", "b"), ("kwargs2", "ant", "a"))
    head = _run(
        ("kwargs0", "new", "x"),
        ("kwargs1", "ant", "a"),
        ("kwargs2", "bee", "b"),
        ("kwargs3", "ant", "a"),
    )
    assert _statuses(base, head) == {
        "test[kwargs0]": ("added", None),
        "test[kwargs1]": ("unchanged", "t.py::test[kwargs0]"),
        "test[kwargs2]": ("unchanged", "t.py::test[kwargs1]"),
        "test[kwargs3]": ("unchanged", "t.py::test[kwargs2]"),
    }


def _shared(*symbols: str) -> dict[str, Any]:
    """Items of one node id, as a custom collector yields them (``t.cases::greet``), each
    calling its symbol: ids in collection order, each disclosing how many there are."""
    node = "t.cases::greet"
    tests = [
        genomes.test_record(
            node if index == 0 else f"{node}#{index}",
            {"call": genomes.phase([call(0, None, symbol)])},
            disclosed=[f"shared-node-id:{len(symbols)}"],
        )
        for index, symbol in enumerate(symbols)
    ]
    doc = genomes.document(tests, genomes.run("r"))
    GenomeDocument.model_validate(doc)
    return doc


def _diffs(base: dict[str, Any], head: dict[str, Any]) -> dict[str, Any]:
    diff = diff_documents(base, head, base_rev="b", head_rev="h")
    return {t.id.partition("::")[2]: t for t in diff.tests}


def test_items_of_one_node_id_in_another_number_cannot_pass_as_unchanged() -> None:
    """A case inserted first among items that share a node id gives every later id to
    another case: their ids are places, so no test of that id is read as unchanged, and the
    default gate fails (``may_hide_change``)."""
    base = _shared("a", "b")
    head = _shared("x", "a", "b")
    diffs = _diffs(base, head)
    assert diffs["greet#2"].status == "added"
    for name in ("greet", "greet#1"):
        assert diffs[name].status == "unverified", name
        assert diffs[name].may_hide_change, name
        assert any("2 in base, 3 in head" in reason for reason in diffs[name].reasons)


def test_items_of_one_node_id_in_the_same_number_are_compared_by_place() -> None:
    diffs = _diffs(_shared("a", "b", "c"), _shared("a", "b2", "c"))
    assert {name: test.status for name, test in diffs.items()} == {
        "greet": "unchanged",
        "greet#1": "changed",
        "greet#2": "unchanged",
    }
