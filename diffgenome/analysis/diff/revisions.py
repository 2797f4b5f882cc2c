"""The git side of ``diffgenome diff``: which repository, which commits, what changed.

Only read-only git commands run here (``rev-parse``, ``diff``, ``show``, ``ls-files``): the
user's checkout, index and stash are never touched. Every failure becomes a
:class:`RevisionError` with one line that says what to do.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from diffgenome.protocol.modules import is_excluded_dir, is_test_file, module_name

WORKTREE = "WORKTREE"
GIT_TIMEOUT_S = 120


class RevisionError(Exception):
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


def run_git(
    cwd: str, *args: str, check: bool = True, text: bool = True
) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=cwd,
            capture_output=True,
            text=text,
            timeout=GIT_TIMEOUT_S,
            check=False,
            env=git_env(),
        )
    except FileNotFoundError:
        raise RevisionError("git is not installed or not on PATH; install git") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise RevisionError(f"git {args[0]} failed ({exc}); check the repository") from None
    if check and done.returncode != 0:
        why = first_line(done.stderr) or f"exit status {done.returncode}"
        raise RevisionError(f"git {args[0]} failed in {cwd}: {why}; check the repository")
    return done


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
        return RevisionError(
            f"{spec!r} is not a git revision of {self.toplevel}, a run in the store, or a "
            "genome JSON file; check the name (git log, diffgenome runs)"
        )

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
            try:
                done = subprocess.run(
                    ["git", "show", f"{side}:{path}"],
                    cwd=self.toplevel,
                    capture_output=True,
                    timeout=GIT_TIMEOUT_S,
                    check=False,
                    env=git_env(),
                )
            except (OSError, subprocess.SubprocessError):
                return None
            if done.returncode != 0:
                return None
            data = done.stdout
        return data.decode("utf-8", errors="replace")

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


def module_namer(
    documents: Sequence[Mapping[str, object]],
) -> Callable[[str], str | None]:
    """``module_of(path)`` for paths from the repository root, as the recorder named them.

    The recordings say their roots relative to pytest's rootdir (``run.config``) and their
    symbols' files relative to the repository root; the rootdir's place in the repository
    is where a test symbol's file and its module name agree.
    """
    rules: list[tuple[str, list[str], list[str]]] = []
    for document in documents:
        run = document.get("run")
        config = run.get("config") if isinstance(run, dict) else None
        if not isinstance(config, dict):
            continue
        sources = [_root(r) for r in config.get("source_roots") or () if isinstance(r, str)]
        tests = [_root(r) for r in config.get("test_roots") or () if isinstance(r, str)]
        prefix = _rootdir_prefix(document)
        rules.append((prefix, sources, tests))

    def module_of(path: str) -> str | None:
        if not path.endswith(".py"):
            return None
        for prefix, sources, tests in rules:
            if prefix and not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            parts = rel.split("/")
            if any(is_excluded_dir(p) for p in parts[:-1]):
                return None
            name = parts[-1]
            if any(rel.startswith(root) for root in tests if root) or is_test_file(name):
                return module_name(rel)
            for root in sorted(sources, key=len, reverse=True):
                if rel.startswith(root):
                    return module_name(rel[len(root) :])
        return None

    return module_of


def _root(relative: str) -> str:
    """A recorded root (``"."``, ``"src/"``) as a path prefix (``""``, ``"src/"``)."""
    if relative in (".", "./", ""):
        return ""
    return relative.rstrip("/") + "/"


def _rootdir_prefix(document: Mapping[str, object]) -> str:
    """``sub/`` when the recording's pytest rootdir was ``sub/`` of the repository."""
    symbols = document.get("symbols")
    if not isinstance(symbols, list):
        return ""
    for symbol in symbols:
        if not isinstance(symbol, dict) or symbol.get("origin") != "test":
            continue
        path, ident = symbol.get("path"), symbol.get("id")
        if not isinstance(path, str) or not isinstance(ident, str) or not path.endswith(".py"):
            continue
        parts = path.split("/")
        for k in range(len(parts)):
            module = module_name("/".join(parts[k:]))
            body = ident[3:] if ident.startswith("py:") else ident
            if body == module or body.startswith(module + "."):
                return "".join(p + "/" for p in parts[:k])
    return ""
