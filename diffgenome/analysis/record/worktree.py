"""Disposable places for one ``diffgenome diff``: a temp folder, git worktrees of the commits
being recorded, and a copy of the recording side for interpreters without diffgenome.

Everything is created under one temp folder and removed in ``close()``, which the runner
calls from ``finally`` -- also on errors and Ctrl-C. Worktrees are detached
(``git worktree add --detach``), so no branch, the index or the stash of the user's checkout
is touched, and ``git worktree remove --force`` plus ``git worktree prune`` leave the
repository's worktree list as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Self

import diffgenome
from diffgenome.analysis.record.git import Repository, RevisionError

# What the recording side needs in a foreign interpreter: never the analysis side.
RECORDING_PARTS = ("protocol", "recording")


class Workspace:
    """The temp folder of one diff; use as a context manager."""

    def __init__(self, repo: Repository | None) -> None:
        self.repo = repo
        self.root = tempfile.mkdtemp(prefix="diffgenome-")
        self._worktrees: list[str] = []
        self._recorder: str | None = None
        # Recordings made side by side (confirmation) ask for the recorder's copy at once.
        self._lock = threading.Lock()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def recorder_path(self) -> str:
        """A folder holding only ``diffgenome/{__init__.py,protocol,recording}``, for
        ``PYTHONPATH``: the target interpreter need not have diffgenome installed."""
        with self._lock:
            return self._copy_recorder()

    def _copy_recorder(self) -> str:
        if self._recorder is None:
            package = Path(diffgenome.__file__).resolve().parent
            folder = os.path.join(self.root, "recorder")
            target = os.path.join(folder, "diffgenome")
            os.makedirs(target)
            shutil.copy2(package / "__init__.py", os.path.join(target, "__init__.py"))
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            for part in RECORDING_PARTS:
                shutil.copytree(package / part, os.path.join(target, part), ignore=ignore)
            self._recorder = folder
        return self._recorder

    def temp_path(self) -> str:
        """A temp folder for the recording processes, removed with the workspace."""
        path = os.path.join(self.root, "tmp")
        os.makedirs(path, exist_ok=True)
        return path

    def worktree(self, sha: str, name: str) -> str:
        """A detached worktree of ``sha`` under the temp folder."""
        if self.repo is None:
            raise RevisionError("recording a revision needs a git repository; pass --repo DIR")
        path = os.path.join(self.root, name)
        self._worktrees.append(path)
        self.repo.git("worktree", "add", "--detach", "--quiet", path, sha)
        return path

    def remove_worktree(self, path: str) -> None:
        """Remove one worktree now (its path may then hold the next side's checkout)."""
        if path not in self._worktrees:
            return
        self._worktrees.remove(path)
        if self.repo is not None:
            with contextlib.suppress(RevisionError):
                self.repo.git("worktree", "remove", "--force", "--force", path, check=False)
        shutil.rmtree(path, ignore_errors=True)
        if self.repo is not None:
            with contextlib.suppress(RevisionError):
                self.repo.git("worktree", "prune", check=False)

    def close(self) -> None:
        try:
            for path in reversed(self._worktrees):
                if self.repo is not None:
                    with contextlib.suppress(RevisionError):
                        self.repo.git("worktree", "remove", "--force", "--force", path, check=False)
            self._worktrees = []
            shutil.rmtree(self.root, ignore_errors=True)
        finally:
            if self.repo is not None:
                with contextlib.suppress(RevisionError):
                    self.repo.git("worktree", "prune", check=False)
