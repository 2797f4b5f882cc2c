"""Git for the analysis side: which repository, which commits, what changed.

Every git command of the CLI goes through :func:`run_git` (one environment: no pager, no
prompts, no localised messages). Apart from the disposable worktrees of
:mod:`~diffgenome.analysis.record.worktree`, only read-only commands run (``rev-parse``,
``diff``, ``show``, ``ls-files``): the user's checkout, index and stash are never touched.
Every failure becomes a :class:`RevisionError` with one line that says what to do.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from diffgenome.protocol.errors import UserError

WORKTREE = "WORKTREE"
#: What git says of a repository another user owns (its messages are in English here).
_DUBIOUS = "detected dubious ownership"
GIT_TIMEOUT_S = 120


class RevisionError(UserError):
    """A repository or revision problem; the message is ``<what is wrong>; <what to do>``."""


def first_line(text: str) -> str:
    """The first line that says anything: what a tool's error output leads with."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def git_env() -> dict[str, str]:
    """The environment for git: no pager, no prompts, no localised messages."""
    env = dict(os.environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"})
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)
    return env


def _git(cwd: str, args: Sequence[str], *, text: bool) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(
        ["git", "-c", "core.quotepath=off", *args],
        cwd=cwd,
        capture_output=True,
        text=text,
        timeout=GIT_TIMEOUT_S,
        check=False,
        env=git_env(),
    )


def run_git(cwd: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git in ``cwd``; any failure to run it, and with ``check`` any non-zero exit, is a
    RevisionError that says what to do."""
    try:
        done: subprocess.CompletedProcess[str] = _git(cwd, args, text=True)
    except FileNotFoundError:
        raise RevisionError("git is not installed or not on PATH; install git") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise RevisionError(f"git {args[0]} failed ({exc}); check the repository") from None
    if check and done.returncode != 0:
        why = first_line(done.stderr) or f"exit status {done.returncode}"
        raise RevisionError(f"git {args[0]} failed in {cwd}: {why}; check the repository")
    return done


def git_output(cwd: str, *args: str) -> str | None:
    """What git printed, or None when it could not answer (no git, no repository, an unknown
    name): for questions whose answer is only a better default."""
    try:
        done = run_git(cwd, *args, check=False)
    except RevisionError:
        return None
    return done.stdout if done.returncode == 0 else None


def git_bytes(cwd: str, *args: str) -> bytes | None:
    """Like :func:`git_output`, but the bytes as stored (file contents keep their newlines)."""
    try:
        done: subprocess.CompletedProcess[bytes] = _git(cwd, args, text=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


@dataclass(frozen=True)
class Place:
    """Where a folder stands in git: the top of its work tree, and its ``prefix`` there as
    ``git rev-parse --show-prefix`` writes it (``proj/``); both empty outside git."""

    toplevel: str = ""
    prefix: str = ""


def place_of(where: str) -> Place:
    """The :class:`Place` of ``where``, in one git call; outside git (or without git) empty."""
    text = git_output(where, "rev-parse", "--show-toplevel", "--show-prefix")
    if text is None:
        return Place()
    lines = text.splitlines()
    toplevel = lines[0].strip() if lines else ""
    return Place(toplevel, lines[1].strip() if len(lines) > 1 else "")


@dataclass(frozen=True)
class Repository:
    """A git work tree: its top folder, and where the user stands in it (``sub/dir`` or "")."""

    toplevel: str
    prefix: str

    @classmethod
    def find(cls, where: str) -> Repository:
        if not os.path.isdir(where):
            raise RevisionError(f"{where} is not a folder; pass --repo DIR of a git repository")
        done = run_git(where, "rev-parse", "--show-toplevel", "--show-prefix", check=False)
        if done.returncode != 0 and _DUBIOUS in done.stderr:
            # Not "no repository": git refuses one that another user owns (a CI checkout
            # made under another uid, a container's bind mount).
            found = re.search(r"repository at '([^']*)'", done.stderr)
            top = found.group(1) if found else os.path.abspath(where)
            raise RevisionError(
                f"git refuses the repository at {top}: another user owns it (git's "
                f"safe.directory check); run `git config --global --add safe.directory {top}` "
                "or run diffgenome as its owner"
            )
        if done.returncode != 0:
            raise RevisionError(
                f"{os.path.abspath(where)} is not in a git repository; run diffgenome in the "
                "project's checkout or pass --repo DIR"
            )
        lines = done.stdout.splitlines()
        toplevel = lines[0].strip()
        prefix = lines[1].strip().rstrip("/") if len(lines) > 1 else ""
        return cls(toplevel, prefix)

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_git(self.toplevel, *args, check=check)

    def commit_of(self, spec: str) -> str | None:
        """The commit ``spec`` names, or None when it names none."""
        if not spec or spec.startswith("-") or spec == WORKTREE:
            return None
        done = self.git(
            "rev-parse", "--verify", "--quiet", "--end-of-options", spec + "^{commit}", check=False
        )
        sha = done.stdout.strip() if done.returncode == 0 else ""
        return sha or None

    def has_commit(self, sha: str) -> bool:
        done = self.git("cat-file", "-e", sha + "^{commit}", check=False)
        return done.returncode == 0

    def has_file(self, sha: str, path: str) -> bool:
        """Whether the commit ``sha`` has the file ``path`` (from the top)."""
        done = self.git("cat-file", "-t", f"{sha}:{path}", check=False)
        return done.returncode == 0 and done.stdout.strip() == "blob"

    def has_folder(self, sha: str, path: str) -> bool:
        """Whether the commit ``sha`` has the folder ``path`` (from the top)."""
        done = self.git("cat-file", "-t", f"{sha}:{path}", check=False)
        return done.returncode == 0 and done.stdout.strip() == "tree"

    def is_shallow(self) -> bool:
        done = self.git("rev-parse", "--is-shallow-repository", check=False)
        return done.stdout.strip() == "true"

    def head(self) -> str | None:
        return self.commit_of("HEAD")

    def unknown_revision(self, spec: str) -> RevisionError:
        if self.is_shallow():
            return RevisionError(
                f"unknown revision {spec!r} in the shallow clone {self.toplevel}; fetch more "
                "history (git fetch --unshallow, or a deeper fetch-depth in CI)"
            )
        meant = self._names_like(spec)
        hint = f"did you mean {' or '.join(meant)}? " if meant else ""
        return RevisionError(
            f"{spec!r} is not a git revision of {self.toplevel}, a run in the store, or a "
            f"genome JSON file; {hint}check the name (git log, diffgenome runs)"
        )

    def _names_like(self, spec: str) -> list[str]:
        """The branches and tags an unknown ``spec`` may have meant: ``master`` for ``main``
        and back (a repository has one of the two; humanize's is ``master``), else names
        spelt alike."""
        done = self.git(
            "for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/tags", check=False
        )
        if done.returncode != 0:
            return []
        names = [name for name in done.stdout.splitlines() if name]
        other = {"main": "master", "master": "main"}.get(spec)
        if other in names:
            return [other]
        return difflib.get_close_matches(spec, names, n=3, cutoff=0.75)

    def worktrees(self) -> list[str]:
        done = self.git("worktree", "list", "--porcelain", check=False)
        return [
            line[len("worktree ") :]
            for line in done.stdout.splitlines()
            if line.startswith("worktree ")
        ]

    # -- code between two sides -------------------------------------------------------------

    def changed_files(self, base: str, head: str) -> tuple[list[str], list[str]]:
        """Paths (from the top) changed between two sides, as (base paths, head paths).

        A side is a commit or :data:`WORKTREE`. Renames are detected (``-M``); a renamed file
        is its old path on the base side and its new path on the head side. With WORKTREE,
        untracked files that git does not ignore count as added.
        """
        if base == head:
            return [], []
        args = ["diff", "--no-relative", "--name-status", "-z", "-M", "--no-ext-diff"]
        if head == WORKTREE:
            out = self.git(*args, base, "--").stdout
            base_paths, head_paths = _parse_name_status(out)
            head_paths += self._untracked()
        elif base == WORKTREE:
            out = self.git(*args, "-R", head, "--").stdout
            base_paths, head_paths = _parse_name_status(out)
            base_paths += self._untracked()
        else:
            out = self.git(*args, base, head, "--").stdout
            base_paths, head_paths = _parse_name_status(out)
        return base_paths, head_paths

    def edited(self) -> list[str]:
        """The paths (from the top) where the working tree differs from HEAD, staged or not,
        and the untracked files git does not ignore: what a copy of HEAD needs laid over it
        to be the working tree (a deleted path is among them and absent from the tree). The
        files of an untracked virtual environment (a folder with ``pyvenv.cfg``) are left
        out: nothing imports them from the tree, and they are thousands."""
        folders = self.git(
            "ls-files", "-z", "--others", "--exclude-standard", "--directory", check=False
        ).stdout.split("\0")
        venvs = tuple(
            folder
            for folder in folders
            if folder.endswith("/")
            and os.path.isfile(os.path.join(self.toplevel, folder, "pyvenv.cfg"))
        )
        paths: dict[str, None] = {}
        for args in (
            ("diff", "--name-only", "--no-renames", "-z", "HEAD", "--"),
            ("ls-files", "-z", "--others", "--exclude-standard"),
        ):
            out = self.git(*args, check=False).stdout
            paths.update(
                (path, None) for path in out.split("\0") if path and not path.startswith(venvs)
            )
        return list(paths)

    def ignored_modules(self) -> list[str]:
        """The Python files (from the top) that git ignores one by one in the working tree,
        such as a ``version.py`` written at install: the project may import them, and a
        checkout of a commit lacks them. Whole ignored folders (a virtual environment,
        ``build/``, caches) are not looked into."""
        out = self.git(
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
            check=False,
        ).stdout
        return sorted(p for p in out.split("\0") if p.endswith(".py") and not p.endswith("/"))

    def uncommitted(self) -> tuple[list[str], list[str]]:
        """The paths (from the top) whose state in the working tree no commit holds, as
        (modified, staged or deleted; untracked, what git does not ignore): a reviewer's
        exported reports are untracked files, not edits, and are told apart."""
        out = self.git("status", "--porcelain", "-z", "--untracked-files=all", check=False).stdout
        changed: list[str] = []
        untracked: list[str] = []
        entries = iter(out.split("\0"))
        for entry in entries:
            if len(entry) < 4:
                continue
            (untracked if entry[:2] == "??" else changed).append(entry[3:])
            if entry[0] in "RC":  # a rename's old path follows
                next(entries, None)
        return changed, untracked

    def _untracked(self) -> list[str]:
        out = self.git("ls-files", "-z", "--others", "--exclude-standard").stdout
        return [path for path in out.split("\0") if path]

    def read(self, side: str, path: str) -> str | None:
        """A file's text at a commit or in the working tree; None when it is not there."""
        if side == WORKTREE:
            try:
                with open(os.path.join(self.toplevel, path), "rb") as handle:
                    data = handle.read()
            except OSError:
                return None
        else:
            shown = git_bytes(self.toplevel, "show", f"{side}:{path}")
            if shown is None:
                return None
            data = shown
        return data.decode("utf-8", errors="replace")

    def read_many(self, side: str, paths: Sequence[str]) -> dict[str, str]:
        """The texts of ``paths`` at a commit (or in the working tree), in one git call for
        a commit: a file missing from the answer could not be read."""
        if side == WORKTREE:
            return {p: text for p in paths if (text := self.read(side, p)) is not None}
        asked = [p for p in paths if "\n" not in p]
        try:
            done = subprocess.run(
                ["git", "-c", "core.quotepath=off", "cat-file", "--batch"],
                cwd=self.toplevel,
                input="".join(f"{side}:{p}\n" for p in asked).encode(),
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
                env=git_env(),
            )
        except (OSError, subprocess.SubprocessError):
            return {}
        out: dict[str, str] = {}
        data, at = done.stdout, 0
        for path in asked:
            end = data.find(b"\n", at)
            if end < 0:
                break
            line = data[at:end]
            at = end + 1
            if line.endswith((b" missing", b" ambiguous")):
                continue
            header = line.split()
            if len(header) != 3 or not header[2].isdigit():
                break  # not git's batch answer: what was read stands
            size = int(header[2])
            if header[1] == b"blob":
                out[path] = data[at : at + size].decode("utf-8", errors="replace")
            at += size + 1
        return out

    def files(self, side: str, wanted: Callable[[str], bool]) -> list[str]:
        """Every file of a side (a commit, or WORKTREE: the tracked and untracked files) that
        ``wanted`` accepts, from the top."""
        if side == WORKTREE:
            listed = self.git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        else:
            listed = self.git("ls-tree", "-r", "-z", "--name-only", "--full-tree", side)
        return [path for path in listed.stdout.split("\0") if path and wanted(path)]

    def sources(
        self, base: str, head: str, wanted: Callable[[str], bool]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Both versions of every changed file that ``wanted`` accepts."""
        base_paths, head_paths = self.changed_files(base, head)
        return self._read_all(base, base_paths, wanted), self._read_all(head, head_paths, wanted)

    def _read_all(
        self, side: str, paths: Sequence[str], wanted: Callable[[str], bool]
    ) -> dict[str, str]:
        out: dict[str, str] = {}
        for path in paths:
            if not wanted(path):
                continue
            text = self.read(side, path)
            if text is not None:
                out[path] = text
        return out


def _parse_name_status(out: str) -> tuple[list[str], list[str]]:
    parts = out.split("\0")
    base: list[str] = []
    head: list[str] = []
    i = 0
    while i < len(parts) and parts[i]:
        status = parts[i]
        letter = status[:1]
        if letter in ("R", "C"):
            old, new = parts[i + 1], parts[i + 2]
            if letter == "R":
                base.append(old)
            head.append(new)
            i += 3
            continue
        path = parts[i + 1]
        if letter != "A":
            base.append(path)
        if letter != "D":
            head.append(path)
        i += 2
    return base, head
