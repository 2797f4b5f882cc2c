"""The children of a diff: pytest sessions run in process groups of their own, stopped on
every way out, and the signals that the cleanup around them must survive.

Every recording of a side is a child process whose tests may start processes of their own.
Each runs in its own process group, so that stopping it (Ctrl-C, SIGTERM, a failed other
side) stops everything it started: nothing the tests started outlives the diff. What can go
wrong that the user can fix is a :class:`DiffError`, one line.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator

from diffgenome.protocol.errors import UserError

#: How long a stopped child may take to end (pytest marks its run interrupted) before SIGKILL.
STOP_GRACE_S = 15.0
#: How much of a child's output is read at once: pytest flushes a letter per test, and each
#: read hands on what is there, so progress follows the tests, not the lines.
_READ_CHUNK = 65536


class DiffError(UserError):
    """A user or input error of ``diff``/``affected`` found while resolving or recording a side."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) ended a diff, once everything it made is cleaned up: ``message``
    says in one line what happened to it (what was being recorded, and where it is)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def run_child(
    cmd: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    on_output: Callable[[str], None] | None = None,
) -> tuple[int, str]:
    """Run ``cmd`` in its own process group and return (exit status, output); ``on_output``
    sees the output as it comes, in pieces that may end anywhere in a line (pytest writes a
    test's letter without a newline).

    On any way out (Ctrl-C included) the group gets SIGINT (SIGTERM where it inherited an
    ignored SIGINT), so that pytest can mark its run interrupted, then SIGKILL; nothing the
    tests started outlives the diff.
    """
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise DiffError(f"cannot start {cmd[0]} ({exc}); pass --python PY") from None
    # A child inherits an ignored SIGINT (a diff started in the background of a CI script):
    # then only SIGTERM can ask its pytest to stop before the SIGKILL.
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    _RUNNING[proc.pid] = signal.SIGTERM if ignored else signal.SIGINT
    try:
        if on_output is None:
            out, _ = proc.communicate()
        else:
            assert proc.stdout is not None
            chunks: list[bytes] = []
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            fd = proc.stdout.fileno()
            for raw in iter(lambda: os.read(fd, _READ_CHUNK), b""):
                chunks.append(raw)
                with contextlib.suppress(Exception):  # progress never fails a recording
                    on_output(decoder.decode(raw))
            proc.wait()
            out = b"".join(chunks)
    except BaseException:
        with sigint_ignored():
            _stop(proc)
        raise
    finally:
        _RUNNING.pop(proc.pid, None)
        _kill_group(proc.pid)
    return proc.returncode, out.decode("utf-8", errors="replace")


#: Process groups of the children running now (recordings made side by side run in threads),
#: each with the signal that asks it to stop.
_RUNNING: dict[int, signal.Signals] = {}


def interrupt_children() -> None:
    """SIGINT to every running child's group: pytest marks its run interrupted and ends."""
    for pgid, stop in list(_RUNNING.items()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, stop)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, _RUNNING.get(proc.pid, signal.SIGINT))
    try:
        proc.communicate(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Cleanup must finish even when Ctrl-C is pressed again."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


__all__ = ["DiffError", "Interrupted", "interrupt_children", "run_child", "sigint_ignored"]
