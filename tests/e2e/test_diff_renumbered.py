"""End-to-end: parametrized cases whose ids pytest numbers by position (#10, tomlkit and
humanize: 14 tests each read as removed and added).

pytest cannot print a dict, so it names such a case ``test[kwargs0]``, ``test[kwargs1]``, …;
inserting a case before them renumbers every later one. The recorder keeps the digests of a
case's values (``params``), and the differ pairs a removed and an added case of the same
function with the same values: they are compared, not listed as removed and added. A paired
case with a real change is confirmed under its own id on each side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import GitRepo, cli_json, write_files

CASES = '{"word": "ant", "n": 1}, {"word": "bee", "n": 2}, {"word": "cat", "n": 3}'
TEST = """
    import pytest

    from pkg.text import repeat

    CASES = [{cases}]


    @pytest.mark.parametrize("kwargs", CASES)
    def test_repeat(kwargs):
        assert repeat(**kwargs).startswith(kwargs["word"])
"""
CODE = """
    def repeat(word, n):
        if n > 2:
            return word * n
        return word * n
"""


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"].rpartition("::")[2]: t for t in document["tests"]}


def test_an_inserted_case_renumbers_nothing_that_is_reported(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/text.py": CODE,
            "tests/test_text.py": TEST.format(cases=CASES),
        },
    )
    GitRepo.init(repo).commit_all("initial")
    inserted = '{"word": "aardvark", "n": 1}, ' + CASES
    write_files(repo, {"tests/test_text.py": TEST.format(cases=inserted)})
    # ... and a real change for the case that was kwargs2 (n=3), now kwargs3
    write_files(
        repo,
        {
            "pkg/text.py": CODE.replace(
                "return word * n\n        return", "return word * (n + 1)\n        return", 1
            )
        },
    )
    GitRepo(repo).commit_tracked("a case inserted first; n > 2 repeats once more")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    assert tests["test_repeat[kwargs0]"]["status"] == "added"  # the aardvark
    for old, new in (("kwargs0", "kwargs1"), ("kwargs1", "kwargs2")):
        assert tests[f"test_repeat[{new}]"]["status"] == "unchanged", tests[f"test_repeat[{new}]"]
        assert tests[f"test_repeat[{new}]"]["base_id"].endswith(f"test_repeat[{old}]")
    moved = tests["test_repeat[kwargs3]"]
    assert moved["status"] == "changed"
    assert moved["base_id"].endswith("test_repeat[kwargs2]")
    assert {c["kind"] for c in moved["changes"]} >= {"result_changed"}
    # confirmed on both sides under each side's id (base has no kwargs3)
    assert document["summary"]["confirmed"] >= 1
    assert [t["status"] for t in document["tests"]].count("removed") == 0
    assert code == 1


def test_timedelta_cases_pair_by_their_values(tmp_path: Path) -> None:
    """humanize: ``test_naturaldelta[test_input33-...]`` holds a ``timedelta``, which had no
    canonical form (its stable ``repr`` paired it); since values revision 2 its digest does.
    A value that still has no form pairs by its ``repr``:
    tests/e2e/test_diff_values.py::test_cases_without_a_canonical_form_pair_by_their_repr."""
    test = """
        import datetime as dt

        import pytest

        CASES = [{cases}]


        @pytest.mark.parametrize("delta", CASES)
        def test_days(delta):
            assert delta.days >= 0
    """
    cases = "dt.timedelta(days=1), dt.timedelta(days=2)"
    repo = tmp_path / "repo"
    write_files(repo, {"pkg/__init__.py": "", "tests/test_days.py": test.format(cases=cases)})
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"tests/test_days.py": test.format(cases="dt.timedelta(0), " + cases)})
    GitRepo(repo).commit_tracked("a case inserted first")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    assert tests["test_days[delta0]"]["status"] == "added"
    assert tests["test_days[delta1]"]["base_id"].endswith("test_days[delta0]")
    assert tests["test_days[delta2]"]["base_id"].endswith("test_days[delta1]")
    assert {tests[name]["status"] for name in ("test_days[delta1]", "test_days[delta2]")} == {
        "unchanged"
    }
    assert code == 1  # a test was added
