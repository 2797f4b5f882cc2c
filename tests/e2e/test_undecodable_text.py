"""End-to-end: a suite that passes undecodable file names around records completely (#50).

click's suite hands invalid bytes through ``surrogateescape`` (``"f\\udcff.txt"``); one such
path in one test's effects once made the store refuse the batch, and with it every test of
the run: ``1850 tests: 1850 unverified``. Here a click-like project opens, writes and prints
such names, in a test folder whose own name is undecodable, under both writers; the run is
complete with nothing unverified, the text reads back, and a diff of an identical tree (fresh,
reused, and against a worktree with a comment edited) exits 0 with nothing changed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.helpers import GitRepo, cli, cli_json, record_full, test_genome, write_files

PROJECT = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "tool/__init__.py": "",
    "tool/files.py": """
        import os


        def open_file(folder, name, text):
            # As click.open_file: the name comes from argv, decoded with surrogateescape.
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            return path


        def format_filename(name):
            return os.fsencode(name).decode("utf-8", "replace")


        def echo_name(name):
            print("file:", format_filename(name))
            return name
    """,
    "tests/test_files.py": """
        import os

        import pytest

        from tool.files import echo_name, format_filename, open_file


        def test_path_surrogates(tmp_path):
            name = os.fsdecode(b"f\\xff.txt")
            path = open_file(str(tmp_path), name, "x")
            assert path.endswith("\\udcff.txt")
            assert format_filename(name) == "f\\ufffd.txt"


        @pytest.mark.parametrize("name", ["a\\udcffb", "nul\\x00x", "plain"])
        def test_echo(name):
            assert echo_name(name) == name
    """,
}


def _project(root: Path) -> GitRepo:
    write_files(root, PROJECT)
    odd = os.fsencode(root / "tests") + b"/odd\xff"
    os.mkdir(odd)
    with open(odd + b"/test_odd.py", "w", encoding="utf-8") as handle:
        handle.write("from tool.files import echo_name\n\n\ndef test_odd():\n")
        handle.write("    assert echo_name('odd') == 'odd'\n")
    repo = GitRepo.init(root)
    repo.commit_all("a click-like project")
    return repo


@pytest.mark.parametrize("writer", ["inline", "process"])
def test_undecodable_names_record_completely(tmp_path: Path, writer: str) -> None:
    repo = _project(tmp_path / "repo")
    recorded = record_full(repo.path, f"--genome-writer={writer}")
    run = recorded.doc["run"]
    assert run["complete"] is True, run["incomplete_reasons"]
    assert "none unverified" in recorded.output
    ids = [t["id"] for t in recorded.doc["tests"]]
    assert "tests/odd\\udcff/test_odd.py::test_odd" in ids
    assert len(ids) == 6  # five tests and <import>
    assert all(t["verified"] for t in recorded.doc["tests"]), ids
    written = test_genome(recorded.doc, "::test_path_surrogates")["effects"]
    paths = [e["path"] for e in written if e["type"] == "file"]
    assert [p.rpartition("/")[2] for p in paths] == ["f\udcff.txt"]


def test_an_identical_tree_diffs_quiet_fresh_reused_and_against_the_worktree(
    tmp_path: Path,
) -> None:
    repo = _project(tmp_path / "repo")
    repo.commit_empty("the same tree")
    for _ in ("fresh", "reused"):
        code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~1", "HEAD")
        summary = document["summary"]
        assert code == 0, summary
        assert summary["changed"] == 0 and summary["unverified"] == 0, summary
        assert summary["unchanged"] == 6, summary  # five tests and <import>
    files = repo.path / "tool" / "files.py"
    files.write_text("# a comment edited\n" + files.read_text())
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD", "WORKTREE")
    assert code == 0, document["summary"]
    assert document["summary"]["unverified"] == 0
    shown = cli(repo.path, "show", "latest")
    assert shown.returncode == 0, shown.stderr
    assert "tests/odd\\udcff/test_odd.py::test_odd" in shown.stdout
