"""End-to-end: two lines that differ only in where the change sits are told apart (#24.8b).

A helper called by two callers in one test changes its results under both: the report wrote
the same line twice, ``py:pkg.mod.norm results: …``. Each line now says the shortest part of
its call path that tells it from the other.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import DIFF_PYTEST_ARGS, GitRepo, cli, write_files

MOD = """
def norm(x):
    return x.strip()


def left(x):
    return norm(x)


def right(x):
    return norm(x)
"""
TEST = """
from pkg.mod import left, right


def test_both():
    assert left(" a ") and right(" a ")
"""


def test_same_lines_at_two_places_name_their_callers(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, {"pkg/__init__.py": "", "pkg/mod.py": MOD, "tests/test_mod.py": TEST})
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"pkg/mod.py": MOD.replace("x.strip()", "x.strip().upper()")})
    GitRepo(repo).commit_tracked("norm upper-cases")
    done = cli(repo, "diff", "HEAD~1", "HEAD", "--", *DIFF_PYTEST_ARGS, timeout=300)
    assert done.returncode == 1, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines() if "py:pkg.mod.norm results" in line]
    assert len(lines) == 2, done.stdout
    assert len(set(lines)) == 2, lines
    assert any("(via py:pkg.mod.left)" in line for line in lines), lines
    assert any("(via py:pkg.mod.right)" in line for line in lines), lines
