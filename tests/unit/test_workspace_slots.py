"""The workspace folder of a diff keeps its name per store (issue #24): a reused recording and
a fresh one then saw the same paths. Two diffs into one store at once get two slots; a folder
a killed diff left is emptied; nothing stays behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from diffgenome.analysis.record.worktree import Workspace, stable_root


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_the_same_store_gets_the_same_folder_in_every_invocation(tmp: Path) -> None:
    store = str(tmp / "proj" / ".diffgenome")
    with Workspace(None, store) as first:
        root = first.root
        assert root == stable_root(store) + "-0"
        assert first.temp_path() == os.path.join(root, "tmp")
    assert os.listdir(tmp) == []  # removed, no lock file left
    with Workspace(None, store) as again:
        assert again.root == root
    with Workspace(None, str(tmp / "other")) as other:
        assert other.root != root


def test_two_diffs_at_once_get_two_slots_and_the_first_is_free_again(tmp: Path) -> None:
    store = str(tmp / ".diffgenome")
    with Workspace(None, store) as first, Workspace(None, store) as second:
        assert (first.root, second.root) == (stable_root(store) + "-0", stable_root(store) + "-1")
    with Workspace(None, store) as third:
        assert third.root == stable_root(store) + "-0"


def test_what_a_killed_diff_left_is_emptied(tmp: Path) -> None:
    store = str(tmp / ".diffgenome")
    left = Path(stable_root(store) + "-0")
    (left / "tree" / "pkg").mkdir(parents=True)
    (left / "tree" / "pkg" / "stale.py").write_text("x = 1\n")
    with Workspace(None, store) as workspace:
        assert workspace.root == str(left)
        assert os.listdir(left) == []
