"""End-to-end: a gap names only code whose evidence the recorder would have collected (#10.4).

Decisions in test code (asserts, ifs in tests and fixtures) are not recorded, so a new test's
asserts must not be reported as "decision outcome never observed"; a new decision in project
code that no test takes both ways still is.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import cli_json, git_commit, write_files

BASE = {
    "pkg/__init__.py": "",
    "pkg/calc.py": """
        def clamp(x):
            return x
    """,
    "tests/test_calc.py": """
        from pkg.calc import clamp


        def test_clamp():
            assert clamp(1) == 1
    """,
}
HEAD = {
    "pkg/calc.py": """
        def clamp(x):
            if x > 10:
                return 10
            return x
    """,
    "tests/test_more.py": """
        from pkg.calc import clamp


        def test_small_values():
            for x in (1, 2, 3):
                if x:
                    assert clamp(x) == x
            assert clamp(0) == 0
    """,
}


def test_new_asserts_in_tests_are_no_gaps_but_project_decisions_are(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, BASE)
    git_commit(repo)
    write_files(repo, HEAD)
    _code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    by_symbol = {entry["symbol"]: entry for entry in document["code_changes"]}
    new_test = by_symbol["py:tests.test_more.test_small_values"]
    assert new_test["change"] == "added"
    assert new_test["tests_head"] == ["tests/test_more.py::test_small_values"]
    assert new_test["gaps"] == []
    clamp = by_symbol["py:pkg.calc.clamp"]
    assert clamp["change"] == "modified"
    assert len(clamp["gaps"]) == 1 and clamp["gaps"][0].endswith(" true"), clamp["gaps"]
