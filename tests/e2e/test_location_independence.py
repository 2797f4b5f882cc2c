"""End-to-end: a genome does not depend on where the tree is checked out (#10.1).

``diffgenome diff`` records base and head in two disposable worktrees, so every value that
holds a path under the tree, a temporary folder or the interpreter's location would differ
between them although the code does the same. The same commit is recorded in folders with
different names and depths, and through two git worktrees; the genomes must be byte-identical,
under both cores, and a commit whose tree equals its parent's must diff as unchanged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import GitRepo, cli_json, export, run_pytest, write_files

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/files.py": """
        import os


        def describe(path):
            if os.path.isdir(path):
                return ("dir", path, sorted(os.listdir(path)))
            with open(path) as handle:
                return ("file", path, handle.read())


        def where(*paths):
            return [p for p in paths if p]
    """,
    "tests/conftest.py": """
        from pathlib import Path

        import pytest


        @pytest.fixture
        def data_dir():
            return str(Path(__file__).parent / "data")
    """,
    "tests/data/a.txt": "hello\n",
    "tests/test_paths.py": """
        import os
        import shutil
        import sys
        import tempfile

        from pkg.files import describe, where


        def test_a_path_under_the_tree(data_dir):
            kind, path, content = describe(os.path.join(data_dir, "a.txt"))
            assert (kind, content) == ("file", "hello\\n")
            assert describe(data_dir)[2] == ["a.txt"]


        def test_temporary_folders_with_any_name(tmp_path):
            made = tempfile.mkdtemp(prefix="build-", suffix="-out", dir=tmp_path)
            fd, name = tempfile.mkstemp(prefix="x", suffix=".txt", dir=made)
            os.close(fd)
            assert describe(made)[2] == [os.path.basename(name)]
            with tempfile.TemporaryDirectory(prefix="scratch_") as scratch:
                assert describe(scratch)[0] == "dir"
            default = tempfile.mkdtemp()
            try:
                assert describe(default)[0] == "dir"
            finally:
                shutil.rmtree(default)


        def test_where_the_tools_live():
            found = where(
                sys.executable,
                sys.prefix,
                sys.base_prefix,
                sys.exec_prefix,
                os.path.expanduser("~"),
                tempfile.gettempdir(),
                os.getcwd(),
            )
            assert len(found) == 7
    """,
}


def _record(project: Path, key: Path, store: Path, core: str) -> dict[str, Any]:
    done = run_pytest(
        project,
        "--genome",
        f"--genome-key-file={key}",
        f"--genome-store={store}",
        "-q",
        env={"DIFFGENOME_CORE": core},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = export(project, store)
    assert all(t["verified"] for t in doc["tests"]), [t["unverified_reasons"] for t in doc["tests"]]
    return doc


def _genomes(doc: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in doc.items() if k != "run"}, sort_keys=True)


@pytest.mark.parametrize("core", ["c", "python"])
def test_the_same_commit_recorded_anywhere_gives_the_same_genomes(
    tmp_path: Path, core: str
) -> None:
    origin = tmp_path / "proj"
    origin.mkdir()
    write_files(origin, PROJECT)
    GitRepo.init(origin).commit_all("initial")
    key = tmp_path / "key"
    key.write_bytes(os.urandom(32))
    copy = tmp_path / "a" / "much" / "deeper" / "other-name"
    copy.parent.mkdir(parents=True)
    GitRepo(origin).clone(copy)
    first_wt = tmp_path / "wt1"
    second_wt = tmp_path / "x" / "wt-two"
    GitRepo(origin).worktree(first_wt)
    GitRepo(origin).worktree(second_wt)
    recorded = {
        place: _genomes(_record(place, key, tmp_path / f"store-{n}", core))
        for n, place in enumerate((origin, copy, first_wt, second_wt))
    }
    texts = set(recorded.values())
    assert len(texts) == 1, "genomes differ between checkouts"
    text = texts.pop()
    for place in recorded:
        assert str(place) not in text
    assert str(tmp_path) not in text


def test_an_unchanged_tree_diffs_as_unchanged_through_two_worktrees(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    GitRepo(repo).commit_empty("same tree")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", codes=(0,))
    statuses = {t["id"]: t["status"] for t in document["tests"]}
    assert statuses["tests/test_paths.py::test_a_path_under_the_tree"] == "unchanged"
    assert set(statuses.values()) == {"unchanged"}, statuses


def test_a_value_the_code_derives_from_its_own_path_is_the_same_on_both_sides(
    tmp_path: Path,
) -> None:
    """jinja2 keys its bytecode cache by the sha1 of the template's absolute path: no text
    rewriting can make that stable, so both sides are checked out at one path, in turn."""
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/cache.py": """
                import hashlib
                import os


                def key(name):
                    where = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
                    return hashlib.sha1(where.encode()).hexdigest()
            """,
            "tests/test_cache.py": """
                from pkg.cache import key


                def test_key():
                    assert len(key("t.html")) == 40
            """,
        },
    )
    GitRepo.init(repo).commit_all("initial")
    GitRepo(repo).commit_empty("same tree")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", codes=(0,))
    [test] = [t for t in document["tests"] if t["id"].endswith("::test_key")]
    assert (test["status"], test["changes"], test["reasons"]) == ("unchanged", [], [])
