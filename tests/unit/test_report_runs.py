"""The selection column of ``diffgenome runs``."""

from __future__ import annotations

from diffgenome.analysis.report.runs import selection_text


def test_a_few_node_ids_are_listed_quoted() -> None:
    assert selection_text(["-k", "a or b", "t.py::test[x y]"]) == "-k 'a or b' 't.py::test[x y]'"
    assert selection_text([]) == "(default)"


def test_many_node_ids_are_counted_and_the_options_kept() -> None:
    """A confirmation selects every test that differed (google-auth: 166 ids on one line)."""
    ids = [f"tests/t.py::test_{i}" for i in range(166)]
    assert selection_text(["--genome-random-seed=0", *ids]) == (
        "--genome-random-seed=0 (+166 test ids)"
    )
