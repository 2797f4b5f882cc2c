"""End-to-end: identity by mapping (#46, docs/diffing.md "Identity by mapping").

The refactors a held-out reviewer wrote failed the gate where the textbook ones passed: a
callee renamed inside ``sum(self._line(line) for ...)`` renamed the generator expression and
the decision ``if total > BULK_THRESHOLD`` below it (its local is bound from that call), an
``elif`` inserted into a chain renamed every later branch, a nested helper renamed and
hoisted read as one function inlined and another extracted. The differ now pairs base code
with head code before it compares, so each of these is quiet at the default gate, while the
changes the tests miss still fail it. One real git repository holds
``tests/projects/orders`` and a branch per variant (``orders/bulk.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import cli, cli_json, git_in, make_project, run_pytest

Edit = tuple[str, str, str]

HELD_OUT: dict[str, list[Edit]] = {
    "inline-helper": [
        (
            "orders/bulk.py",
            "sum(self._line(line) for line in order.lines)",
            "sum(line.price * line.qty for line in order.lines)",
        ),
        (
            "orders/bulk.py",
            "    def _line(self, line: Line) -> int:\n        return line.price * line.qty\n\n",
            "",
        ),
    ],
    "rename-private": [
        ("orders/bulk.py", "    def _line(self,", "    def _line_total(self,"),
        ("orders/bulk.py", "self._line(line)", "self._line_total(line)"),
    ],
    "move-to-model": [
        (
            "orders/bulk.py",
            "    def _line(self, line: Line) -> int:\n        return line.price * line.qty\n\n",
            "",
        ),
        ("orders/bulk.py", "self._line(line)", "line.amount()"),
        (
            "orders/model.py",
            "    qty: int = 1\n",
            "    qty: int = 1\n\n"
            "    def amount(self) -> int:\n        return self.price * self.qty\n",
        ),
    ],
    "rename-local": [
        (
            "orders/bulk.py",
            "        total = sum(self._line(line) for line in order.lines)\n"
            "        if total > BULK_THRESHOLD:\n"
            "            return total * 90 // 100\n"
            "        return total\n",
            "        amount = sum(self._line(line) for line in order.lines)\n"
            "        if amount > BULK_THRESHOLD:\n"
            "            return amount * 90 // 100\n"
            "        return amount\n\n"
            "    def _unused(self) -> int:\n"
            "        return 0\n",
        )
    ],
    "insert-elif": [
        (
            "orders/bulk.py",
            '            return 20\n        elif kind == "silver":',
            '            return 20\n        elif kind == "platinum":\n            return 30\n'
            '        elif kind == "silver":',
        )
    ],
    "hoist-and-rename": [
        (
            "orders/bulk.py",
            "        def isanumber(value):\n            try:\n                int(value)\n"
            "                return True\n            except ValueError:\n"
            "                return False\n\n        if isanumber(text):",
            "        if _is_number(text):",
        ),
        (
            "orders/bulk.py",
            "BULK_THRESHOLD = 1000\n",
            "BULK_THRESHOLD = 1000\n\n\ndef _is_number(value):\n    try:\n        int(value)\n"
            "        return True\n    except ValueError:\n        return False\n",
        ),
    ],
}
# Changes no assertion sees: each must still fail the default gate.
MISSED: dict[str, tuple[list[Edit], set[str]]] = {
    # The bulk price becomes a float: 1080.0 == 1080.
    "bulk-float": (
        [("orders/bulk.py", "total * 90 // 100", "total * 0.9")],
        {"test_a_big_order_gets_the_bulk_price"},
    ),
    # A rename beside the same slip: the rename is quiet, the slip is not.
    "rename-and-float": (
        [
            ("orders/bulk.py", "    def _line(self,", "    def _line_total(self,"),
            ("orders/bulk.py", "self._line(line)", "self._line_total(line)"),
            ("orders/bulk.py", "total * 90 // 100", "total * 0.9"),
        ],
        {"test_a_big_order_gets_the_bulk_price"},
    ),
}


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_project(tmp_path_factory.mktemp("mapping"), {}, base="orders")
    git_in(repo, "branch", "-M", "main")
    variants = {**HELD_OUT, **{name: edits for name, (edits, _) in MISSED.items()}}
    for name, edits in variants.items():
        git_in(repo, "checkout", "-q", "-b", name, "main")
        for file, old, new in edits:
            path = repo / file
            text = path.read_text()
            assert text.count(old) == 1, (name, file, old)
            path.write_text(text.replace(old, new))
        git_in(repo, "commit", "-qam", name)
    git_in(repo, "checkout", "-q", "main")
    assert run_pytest(repo, "-q", "--genome").returncode == 0
    assert cli(repo, "prune", "--cap", "0").returncode == 0
    return repo


def _diff(repo: Path, tmp_path: Path, head: str) -> tuple[int, dict[str, Any]]:
    return cli_json(repo, tmp_path, "diff", "main", head)


def _statuses(document: dict[str, Any]) -> dict[str, str]:
    return {test["id"].rpartition("::")[2]: test["status"] for test in document["tests"]}


@pytest.mark.parametrize("variant", sorted(HELD_OUT))
def test_a_held_out_refactor_is_quiet_at_the_default_gate(
    orders: Path, tmp_path: Path, variant: str
) -> None:
    code, document = _diff(orders, tmp_path, variant)
    statuses = _statuses(document)
    loud = {name: s for name, s in statuses.items() if s in ("changed", "unverified")}
    assert loud == {}, [t for t in document["tests"] if t["status"] in loud.values()]
    assert code == 0, document["summary"]
    lines = [line for t in document["tests"] for line in t["structure"]]
    listed = [c for t in document["tests"] for c in t["changes"]]
    # Nothing reads as a decision or a generator expression gone and another come.
    assert not any(c["kind"] in ("call_added", "call_removed") for c in listed), listed
    if variant == "hoist-and-rename":
        assert any(
            "`orders.bulk.BulkPricing.parse_qty.<locals>.isanumber` moved to "
            "`orders.bulk._is_number` (the same code)" in line
            for line in lines
        ), lines
        assert not any("extracted" in line or "inlined" in line for line in lines), lines
    if variant == "rename-private":
        assert any(
            "`orders.bulk.BulkPricing._line` renamed to `orders.bulk.BulkPricing._line_total`"
            " (the same code)" in line
            for line in lines
        ), lines


def test_an_inserted_elif_leaves_the_later_branches_theirs(orders: Path, tmp_path: Path) -> None:
    """The chain's later branches are the same decisions: one new decision, no decision
    removed nor renamed; and the branch before it is not modified either (its ``else`` is
    still an ``elif``: a decision of its own, whose code and outcomes are its own)."""
    _, document = _diff(orders, tmp_path, "insert-elif")
    [entry] = [c for c in document["code_changes"] if c["symbol"].endswith("BulkPricing.rate")]
    assert sorted((s["change"], s["predicate"]) for s in entry["sites"]) == [
        ("added", "kind == 'platinum'"),
    ], entry["sites"]


@pytest.mark.parametrize("variant", sorted(MISSED))
def test_a_change_the_tests_miss_still_fails_the_gate(
    orders: Path, tmp_path: Path, variant: str
) -> None:
    code, document = _diff(orders, tmp_path, variant)
    statuses = _statuses(document)
    changed = {name for name, status in statuses.items() if status == "changed"}
    assert changed == MISSED[variant][1], document["tests"]
    assert all(t["outcome"]["head"] == "passed" for t in document["tests"])
    assert code == 1
