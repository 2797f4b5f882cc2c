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
    left.parent.mkdir(mode=0o700)  # as a diff makes it
    left.mkdir(mode=0o700)
    (left / "tree" / "pkg").mkdir(parents=True)
    (left / "tree" / "pkg" / "stale.py").write_text("x = 1\n")
    with Workspace(None, store) as workspace:
        assert workspace.root == str(left)
        assert os.listdir(left) == []


def test_a_parent_another_user_could_enter_is_never_used(tmp: Path) -> None:
    """``diffgenome-<uid>`` made in advance with another mode (or by another user: the
    end-to-end test with a second uid, test_reliability_hostile.py) is refused, not
    repaired: the diff works in a fresh private folder of a name no one can foresee."""
    store = str(tmp / ".diffgenome")
    parent = Path(stable_root(store)).parent
    parent.mkdir(mode=0o700)
    parent.chmod(0o777)
    with Workspace(None, store) as workspace:
        assert not workspace.root.startswith(str(parent) + os.sep)
        assert os.stat(workspace.root).st_mode & 0o777 == 0o700
    assert os.listdir(parent) == []
    assert os.stat(parent).st_mode & 0o777 == 0o777  # left as it was found


def test_a_slot_folder_of_another_mode_is_passed_over(tmp: Path) -> None:
    store = str(tmp / ".diffgenome")
    root = Path(stable_root(store))
    root.parent.mkdir(mode=0o700)
    Path(str(root) + "-0").mkdir(mode=0o700)
    Path(str(root) + "-0").chmod(0o755)
    with Workspace(None, store) as workspace:
        assert workspace.root == str(root) + "-1"
        assert os.stat(workspace.root).st_mode & 0o777 == 0o700
