"""End-to-end: two sides that are one program never differ by a change (#46, #50).

A test can see the side it runs on without any code of it changing: the commit it is
checked out at (a version read from git, as setuptools-scm does), the order threads that race
to print settled in within one process (click's ``test_invoke_with_threads_writing_to_streams``).
Every recording of a side can agree, and the sides disagree: confirmation cannot tell that
from a change. When no file differs, or only Python files with one syntax tree (a comment
edited), that difference is the test's own: ``unstable``, and the gate passes. A change of
code beside it still fails the gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import GitRepo, cli_json, write_files

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/where.py": """
        import os


        def _gitdir(top):
            dotgit = os.path.join(top, ".git")
            if os.path.isfile(dotgit):  # a worktree: ``gitdir: <path>``
                with open(dotgit) as handle:
                    return handle.read().split(":", 1)[1].strip()
            return dotgit


        def commit():
            top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            gitdir = _gitdir(top)
            with open(os.path.join(gitdir, "HEAD")) as handle:
                head = handle.read().strip()
            if not head.startswith("ref: "):
                return head
            ref = head[5:]
            common = gitdir
            if os.path.isfile(os.path.join(gitdir, "commondir")):
                with open(os.path.join(gitdir, "commondir")) as handle:
                    common = os.path.join(gitdir, handle.read().strip())
            for folder in (gitdir, common):
                path = os.path.join(folder, ref)
                if os.path.isfile(path):
                    with open(path) as handle:
                        return handle.read().strip()
            with open(os.path.join(common, "packed-refs")) as handle:
                for line in handle:
                    if line.rstrip().endswith(" " + ref):
                        return line.split()[0]
            return "unknown"


        def double(n):
            # twice n
            return n * 2
    """,
    "tests/test_where.py": """
        from pkg.where import commit, double


        def test_commit():
            assert len(commit()) in (40, 7)


        def test_double():
            assert double(2) == 4
    """,
}


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"].rpartition("::")[2]: t for t in document["tests"]}


def test_a_commit_with_the_same_tree_is_one_program(tmp_path: Path) -> None:
    repo_path = tmp_path / "repo"
    write_files(repo_path, PROJECT)
    repo = GitRepo.init(repo_path)
    repo.commit_all("initial")
    repo.commit_empty("same tree")
    code, document = cli_json(repo_path, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    seen = tests["test_commit"]
    # Every recording of each side read its own commit: before, ``changed`` and exit 1.
    assert seen["status"] == "unstable", seen
    assert any("one program on both sides" in reason for reason in seen["reasons"]), seen
    assert seen["changes"] == []
    assert tests["test_double"]["status"] == "unchanged"
    assert code == 0, document["summary"]


def test_a_comment_edited_is_one_program_and_a_code_edit_is_not(tmp_path: Path) -> None:
    repo_path = tmp_path / "repo"
    write_files(repo_path, PROJECT)
    repo = GitRepo.init(repo_path)
    repo.commit_all("initial")
    where = repo_path / "pkg" / "where.py"
    where.write_text(where.read_text().replace("# twice n", "# n, twice: a comment edited"))
    repo.commit_all("a comment")
    code, document = cli_json(repo_path, tmp_path, "diff", "HEAD~1", "HEAD")
    assert _tests(document)["test_commit"]["status"] == "unstable"
    assert code == 0, document["summary"]
    # The same pair with code changed beside: the commit read is a change again, and the
    # changed code fails the gate as it should.
    where.write_text(where.read_text().replace("return n * 2", "return n + n + 0 * n"))
    repo.commit_all("code")
    code, document = cli_json(repo_path, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    assert tests["test_commit"]["status"] == "changed", tests["test_commit"]
    assert code == 1
