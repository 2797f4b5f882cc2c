"""End-to-end: a test-local callback is named by where it was made (#24.8c).

Test code that project code calls is a stand-in (``stub``) with no claimed target when no fact
says what it replaces. Two such callbacks in one test were both ``stand-in[stub ?]``, the
second ``#dup1``: a reader could not tell which was which. They are named by the test symbol
that defined them.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import GitRepo, cli_json, write_files

TEST = """
    from pkg.mod import apply


    def test_callbacks():
        def double(x):
            return x * 2

        def triple(x):
            return x * 3

        assert apply(double, 1) > 0
        assert apply(triple, 1) > 0
"""


def test_two_local_callbacks_are_named_by_the_test_that_made_them(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "def apply(f, x):\n    return f(x)\n",
            "tests/test_cb.py": TEST,
        },
    )
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"pkg/mod.py": "def apply(f, x):\n    return f(x + 1)\n"})
    GitRepo(repo).commit_tracked("apply passes x + 1")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    [test] = [t for t in document["tests"] if t["id"].endswith("test_callbacks")]
    paths = {part for change in test["changes"] for part in change.get("path", [])}
    stand_ins = sorted(p for p in paths if p.startswith("stand-in["))
    assert stand_ins == [
        "stand-in[stub py:tests.test_cb.test_callbacks.<locals>.double]",
        "stand-in[stub py:tests.test_cb.test_callbacks.<locals>.triple]",
    ], paths
    assert code == 1
