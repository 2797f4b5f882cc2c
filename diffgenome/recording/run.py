"""The run a session records into: its identity, its description, and its life in the store.

A run is begun by the process that is not an xdist worker, joined by each process that
records tests (every one but an xdist controller), left by each of those and finished by the
one that began it. The store reads a run as complete only when all of that happened with a
clean exit, so every step is taken once and an abandoned start undoes what it did.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from typing import Any

from diffgenome import __version__
from diffgenome.protocol.runs import COPIED_ENV, recording_key, untracked_lines_left_out
from diffgenome.protocol.selection import ORIGIN_ENV, RUN_ORIGINS, recorded_selection
from diffgenome.store.writer import StoreWriter

# What each collector sees and misses, stored with the run so that a reader of its genomes
# knows what an absent event means.
COLLECTORS: list[dict[str, Any]] = [
    {"name": "py-sys-monitoring", "plane": "symbol", "fidelity": "complete"},
    {
        "name": "py-egress-guard",
        "plane": "os",
        "fidelity": "partial",
        "notes": [
            "sees socket and subprocess audit events of this process and of the Python "
            "children that load the hook, which are recorded and run under the same policy",
            "other programs, ctypes/cffi and C extensions that call libc directly are not "
            "seen; only policy 'isolate' (a network namespace with only loopback) holds them",
        ],
    },
]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Run:
    """One run of the store, as this process takes part in it."""

    def __init__(self, store: StoreWriter, run_id: str, worker: str) -> None:
        self.store = store
        self.id = run_id
        self.worker = worker
        self.begun = False  # this process created the run in the store
        self.joined = False  # this process is a writer of the run

    def begin(
        self,
        rootdir: str,
        config: dict[str, Any],
        selection: list[str],
        invocation_dir: str,
        core: tuple[str, str | None],
    ) -> None:
        """Create the run, described by the commit and interpreter it records, by what chose
        its tests, by who asked for it and by which core records it (``c`` or ``python``, and
        why the latter: both record the same genomes, but the user comparing timings or
        reading a slow diff should know)."""
        commit = _git(rootdir, "rev-parse", "HEAD")
        status = _git(rootdir, "status", "--porcelain")
        if status is not None:
            status = untracked_lines_left_out(status, copied_by_diff())
        # The store folder ignores itself (it holds a ``*`` .gitignore): any line is a change.
        dirty = bool(status.strip()) if status is not None else None
        python = f"{platform.python_implementation()} {platform.python_version()}"
        chosen = recorded_selection(selection, invocation_dir, git_toplevel(rootdir) or rootdir)
        config = {
            **config,
            "recording_key": recording_key(
                commit.strip() if commit else None, dirty, python, chosen, config
            ),
        }
        self.store.begin_run(
            {
                "id": self.id,
                "commit": commit.strip() if commit else None,
                "dirty": dirty,
                "python": python,
                "platform": platform.platform(),
                "started_at": now(),
                "config": config,
                "selection": selection,
                "recorded_selection": chosen,
                "origin": origin(),
                "key_fingerprint": self.store.key_fingerprint,
                "tool": f"diffgenome {__version__}",
                "collectors": COLLECTORS,
                "core": core[0],
                "core_reason": core[1],
            }
        )
        self.begun = True

    def join(self) -> None:
        self.store.join_run(self.id, self.worker)
        self.joined = True

    def end(self, complete: bool, reasons: list[str]) -> list[str]:
        """Leave the run if this process joined it, and finish it if this process began it;
        why the run is incomplete as far as this process knows, empty when it is complete
        (the store's verdict when this process finished it: a crashed xdist worker makes it
        incomplete)."""
        if self.joined:
            self.store.leave_run(self.id, self.worker, complete, reasons)
        if self.begun:
            return self.store.finish_run(self.id, complete, reasons, now())
        return [] if complete else reasons or ["incomplete"]

    def abandon(self, reason: str) -> bool:
        """Recording could not start or go on: the run (if it exists) reads as incomplete,
        with ``reason`` where it can still be written, and nothing that fails on the way is
        the user's problem. True when everything this process owed the run was written."""
        written = True
        try:
            if self.joined:
                self.store.leave_run(self.id, self.worker, False, [reason])
                self.joined = False
        except Exception:
            written = False
        try:
            if self.begun:
                self.store.finish_run(self.id, False, [reason], now())
                self.begun = False
        except Exception:
            written = False
        return written


def origin() -> str:
    """Who asked for the recording: ``pytest`` (a person or CI running ``pytest --genome``),
    or ``diff`` / ``confirmation`` when ``diffgenome diff`` records a side or records tests
    again (it says so through :data:`ORIGIN_ENV`)."""
    said = os.environ.get(ORIGIN_ENV, "")
    return said if said in RUN_ORIGINS else "pytest"


def copied_by_diff() -> frozenset[str]:
    """The ignored files ``diffgenome diff`` copied into this tree (protocol.runs.COPIED_ENV);
    empty outside a diff's recording or when the variable cannot be read."""
    try:
        paths = json.loads(os.environ.get(COPIED_ENV) or "[]")
    except ValueError:
        return frozenset()
    if not isinstance(paths, list):
        return frozenset()
    return frozenset(path for path in paths if isinstance(path, str))


def _git(rootdir: str, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", rootdir, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_toplevel(rootdir: str) -> str | None:
    """The git work tree that holds ``rootdir`` (a worktree's own folder), if any."""
    toplevel = _git(rootdir, "rev-parse", "--show-toplevel")
    return toplevel.strip() if toplevel and toplevel.strip() else None


def rootdir_in_repository(rootdir: str, toplevel: str | None) -> str:
    """``sub/dir/`` when pytest's rootdir lies below the git repository root, else ``""``."""
    if not toplevel:
        return ""
    top = os.path.realpath(toplevel)
    here = os.path.realpath(rootdir)
    if here == top or not here.startswith(top + os.sep):
        return ""
    return here[len(top) + 1 :].replace(os.sep, "/") + "/"
