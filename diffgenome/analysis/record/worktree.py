"""Disposable places for one ``diffgenome diff``: a temp folder, git worktrees of the commits
being recorded, and a copy of the recording side for interpreters without diffgenome.

Everything is created under one temp folder and removed in ``close()``, which the sides and
confirmation call from ``finally`` -- also on errors and Ctrl-C. That folder's name does not change
between invocations: ``diffgenome-<uid>/<store>-<slot>`` under the system's temp folder,
where ``diffgenome-<uid>`` is this user's private folder (0700, refused when anyone else
holds the name), ``<store>`` is a hash of the store's path and ``<slot>`` the first one no
other diff holds (an exclusive ``flock`` on the folder, held while the workspace lives). What a test
derives from where the tree or its temp folder lies (a copy of ``os.environ``, a path under
``tempfile.gettempdir()``) is then the same in every recording made at that slot, so that a
run recorded by an earlier invocation is what this one would record (issue #24). Worktrees
are detached (``git worktree add --detach``), so no branch, the index or the stash of the
user's checkout is touched, and ``git worktree remove --force`` plus ``git worktree prune``
leave the repository's worktree list as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Self

import diffgenome
from diffgenome.analysis.record.git import Repository, RevisionError

#: The folder, under the diff's temp folder, that each side is checked out in (in turn).
SIDE_TREE = "tree"
# What the recording side needs in a foreign interpreter: never the analysis side.
RECORDING_PARTS = ("protocol", "store", "recording")
#: Slots tried for the stable workspace folder before falling back to a fresh name.
SLOTS = 16


def _claim(prefix: str) -> tuple[str, int | None]:
    """The first slot folder ``<prefix>-<n>`` this process gets an exclusive ``flock`` on
    (the folder itself is locked: nothing is left behind), emptied of what a killed diff may
    have left there; a fresh ``mkdtemp`` folder (no lock) when every slot is held, where
    there is no ``flock`` (Windows: a fresh name per diff, so reuse there records again), or
    where the private parent cannot be had (:func:`_private_parent`).

    Only a folder this user owns, of mode 0700, inside the private parent is ever claimed:
    the diff runs the recorder and the project's code from it, and a folder another user
    made in advance at a name anyone can compute would let that user swap the code."""
    try:
        import fcntl
    except ImportError:
        return _fresh(prefix), None
    for slot in range(SLOTS):
        folder = f"{prefix}-{slot}"
        for _attempt in range(3):  # the folder may go between making and opening it
            if _private_parent(os.path.dirname(folder)) is None:
                return _fresh(prefix), None
            try:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(folder, 0o700)
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                break  # another diff holds this slot
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(folder))
            except OSError:
                same = False
            if not same or not _private(os.fstat(fd)):
                os.close(fd)
                if same:  # ours in name only (another mode, another owner): never used
                    break
                continue  # removed (and perhaps made again) by the diff that held it
            _empty(folder)
            return folder, fd
    return _fresh(prefix), None


def _fresh(prefix: str) -> str:
    """A new folder of a name no one can foresee, 0700 (``mkdtemp``), in the system's temp
    folder."""
    return tempfile.mkdtemp(prefix=os.path.basename(prefix) + "-")


def _private(status: os.stat_result) -> bool:
    """A folder of this user's that no one else may enter or change."""
    return (
        stat.S_ISDIR(status.st_mode)
        and status.st_uid == os.geteuid()
        and status.st_mode & 0o077 == 0
    )


def _private_parent(parent: str) -> str | None:
    """``parent`` (``<temp>/diffgenome-<uid>``), made 0700 if missing; None when the name is
    held by anything but this user's private folder (another user's, a link, a wider mode:
    refused, never repaired), or when the temp folder itself lets others replace what is in
    it (writable by all without the sticky bit)."""
    try:
        base = os.stat(os.path.dirname(parent))
        if base.st_mode & 0o002 and not base.st_mode & stat.S_ISVTX:
            return None
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o700)
        status = os.lstat(parent)
    except OSError:
        return None
    return parent if _private(status) else None


def _empty(folder: str) -> None:
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.remove(entry.path)


def stable_root(store: str | None) -> str:
    """The name the workspace of a diff into ``store`` starts with (before its slot): in
    this user's private folder of the system's temp folder, ``diffgenome-<uid>``."""
    key = hashlib.sha256(os.path.abspath(store or os.getcwd()).encode()).hexdigest()[:12]
    owner = os.geteuid() if hasattr(os, "geteuid") else 0
    return os.path.join(tempfile.gettempdir(), f"diffgenome-{owner}", key)


class Workspace:
    """The temp folder of one diff; use as a context manager."""

    def __init__(self, repo: Repository | None, store: str | None = None) -> None:
        self.repo = repo
        self.root, self._slot = _claim(stable_root(store))
        if self.repo is not None:
            # A worktree a killed diff left at this path is registered still.
            with contextlib.suppress(RevisionError):
                self.repo.git("worktree", "prune", check=False)
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
        """A folder holding only ``diffgenome/{__init__.py,protocol,store,recording}``, for
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

    def lay_over(self, tree: str, paths: list[str]) -> None:
        """Make ``tree`` (a worktree of HEAD) the user's working tree: each of ``paths`` (from
        the top, :meth:`Repository.edited`) copied from the checkout, or removed where the
        checkout has none. The user's checkout is only read."""
        assert self.repo is not None
        for path in paths:
            source = os.path.join(self.repo.toplevel, path)
            target = os.path.join(tree, path)
            if os.path.lexists(source) and not os.path.isdir(source):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if os.path.lexists(target) and not os.path.isdir(target):
                    os.remove(target)
                shutil.copy2(source, target, follow_symlinks=False)
            elif not os.path.lexists(source) and os.path.lexists(target):
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    os.remove(target)

    def add_ignored(self, tree: str, paths: list[str]) -> list[str]:
        """Copy the ignored files ``paths`` (:meth:`Repository.ignored_modules`) from the
        checkout into ``tree`` where its folder exists and the file does not; those copied."""
        assert self.repo is not None
        copied = []
        for path in paths:
            source = os.path.join(self.repo.toplevel, path)
            target = os.path.join(tree, path)
            if os.path.isdir(os.path.dirname(target)) and not os.path.lexists(target):
                shutil.copy2(source, target)
                copied.append(path)
        return copied

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
            # Removed while still locked: the next diff makes the folder anew.
            shutil.rmtree(self.root, ignore_errors=True)
            if self._slot is not None:  # the private parent, when no other diff uses it
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.dirname(self.root))
        finally:
            if self.repo is not None:
                with contextlib.suppress(RevisionError):
                    self.repo.git("worktree", "prune", check=False)
            if self._slot is not None:
                os.close(self._slot)  # the slot is free again
                self._slot = None


_IGNORED_NOTE = "copied from the checkout into every side recorded here"


class Checkouts:
    """The trees one diff records in: worktrees of commits and the copy of the working tree,
    each with the files git ignores that the project may import laid in from the checkout
    (the same ones in every tree, said once in ``notes``)."""

    def __init__(self, repo: Repository | None, notes: list[str]) -> None:
        self.repo = repo
        self.notes = notes
        #: The files git ignores that every disposable tree gets from the checkout (None:
        #: not looked for yet), and the fingerprint of their contents.
        self._ignored: list[str] | None = None
        self._ignored_print = ""

    def worktree_copy(self, workspace: Workspace, name: str) -> str:
        """The user's working tree, as a disposable copy at the path every side is recorded
        at: a worktree of HEAD with the edits, deletions and untracked files laid over it
        (and the ignored files every side gets). Recorded there, WORKTREE runs with the same
        ``PYTHONPATH``, folder and temp folder as a revision; the user's checkout is only
        read. A repository without a commit is recorded in place."""
        assert self.repo is not None
        head = self.repo.head()
        if head is None:
            return self.repo.toplevel
        tree = self.checkout(workspace, head, name)
        workspace.lay_over(tree, self.repo.edited())
        return tree

    def checkout(self, workspace: Workspace, sha: str, name: str) -> str:
        """A worktree of ``sha`` with the files git ignores that the project may import
        copied from the checkout (:meth:`Repository.ignored_modules`): both sides then record
        over the same ones, and the copy is a note."""
        tree = workspace.worktree(sha, name)
        copied = workspace.add_ignored(tree, self._ignored_files())
        if copied and not any(_IGNORED_NOTE in note for note in self.notes):
            more = f" and {len(copied) - 5} more" if len(copied) > 5 else ""
            shown = ", ".join(copied[:5]) + more
            one = len(copied) == 1
            self.notes.append(
                f"{len(copied)} file{'' if one else 's'} git ignores {'was' if one else 'were'} "
                f"copied from the checkout into every side recorded here, as the project may "
                f"import {'it' if one else 'them'}: {shown}"
            )
        return tree

    def ignored_paths(self) -> list[str]:
        """The ignored files every tree gets where it lacks them (from the repository's top)."""
        return list(self._ignored_files())

    def ignored_print(self) -> str:
        """The fingerprint of the ignored files every tree gets (their paths and contents):
        part of the environment a recording runs in."""
        self._ignored_files()
        return self._ignored_print

    def _ignored_files(self) -> list[str]:
        if self._ignored is None:
            self._ignored = self.repo.ignored_modules() if self.repo is not None else []
            digest = hashlib.sha256()
            for path in self._ignored:
                digest.update(path.encode() + b"\0")
                where = os.path.join(self.repo.toplevel if self.repo else "", path)
                with contextlib.suppress(OSError), open(where, "rb") as f:
                    digest.update(hashlib.sha256(f.read()).digest())
            self._ignored_print = digest.hexdigest()
        return self._ignored
