"""End-to-end: the default gate fails on an unverified test only where something could be
hidden (#11.4).

A test whose recording is bounded (more call-tree nodes than ``genome_max_nodes``) is
unverified: evidence beyond the bound is missing. Unverified for the same reason on both
sides, with everything seen equal, it is reported as ``unverified`` and the default gate
passes; ``--fail-on unverified`` fails. Unverified on one side only, the gate fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import GitRepo, cli_json, write_files

PROJECT = {
    "pyproject.toml": '[tool.pytest.ini_options]\ngenome_max_nodes = "4"\n',
    "pkg/__init__.py": "",
    "pkg/chain.py": """
        def a(n):
            return b(n) + 1


        def b(n):
            return c(n) + 1


        def c(n):
            return d(n) + 1


        def d(n):
            return e(n) + 1


        def e(n):
            return n
    """,
    "tests/test_chain.py": """
        from pkg.chain import a, e


        def test_deep():
            assert a(0) == 4


        def test_shallow():
            assert e(1) == 1
    """,
}


def _diff(repo: Path, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", *extra)
    return code, document


def test_unverified_alike_on_both_sides_does_not_fail_the_default_gate(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    GitRepo(repo).commit_empty("same tree")
    code, document = _diff(repo, tmp_path)
    tests = {t["id"]: t for t in document["tests"]}
    deep = tests["tests/test_chain.py::test_deep"]
    assert deep["status"] == "unverified"
    assert any("truncated:nodes" in r for r in deep["reasons"])
    assert deep["may_hide_change"] is False
    assert tests["tests/test_chain.py::test_shallow"]["status"] == "unchanged"
    assert code == 0, document["summary"]
    strict, _ = _diff(repo, tmp_path, "--fail-on", "unverified")
    assert strict == 1


def test_unverified_on_one_side_only_fails_the_default_gate(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    write_files(
        repo, {"pkg/chain.py": PROJECT["pkg/chain.py"].replace("return c(n) + 1", "return 3")}
    )
    GitRepo(repo).commit_tracked("shorter chain")
    code, document = _diff(repo, tmp_path)
    deep = next(t for t in document["tests"] if t["id"] == "tests/test_chain.py::test_deep")
    assert deep["status"] == "unverified"
    assert deep["may_hide_change"] is True
    assert code == 1
