"""What the recorder has to tell the user, said so that no warning filter can touch it.

A recorder that speaks through ``warnings.warn`` hands its words to the project's warning
filters, and ``filterwarnings = error`` (a common setting in well-kept projects) turns them
into exceptions raised from the recorder's hooks: an INTERNALERROR at configure time, or a
recording stopped mid-run. coverage.py's promise is ours: switching the tool on never changes
what the suite does. So every notice is one line written through pytest's terminal reporter
(or standard error without one), and an xdist worker, whose terminal nobody sees, hands its
notices to the controller through ``workeroutput``, which says them once.
"""

from __future__ import annotations

import contextlib
import sys
from os import write as _os_write
from typing import Any

import pytest

PREFIX = "diffgenome: "
# The key under which an xdist worker hands its notices to the controller.
WORKEROUTPUT_KEY = "diffgenome_notices"
# Notices already said in this process, so that a thing said by the controller and by each
# worker reaches the user once.
_said_key = pytest.StashKey[set[str]]()
# Bound at import: a test may replace ``sys.__stderr__`` as well as ``sys.stderr``.
_stderr = sys.__stderr__


def say(config: pytest.Config, text: str) -> None:
    """Write one notice now, or hand it to the controller when this process is a worker."""
    line = text if text.startswith(PREFIX) else PREFIX + text
    line = " ".join(line.split())  # one line, whatever the message it quotes held
    workeroutput: dict[str, Any] | None = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        pending = workeroutput.setdefault(WORKEROUTPUT_KEY, [])
        if isinstance(pending, list) and line not in pending:
            pending.append(line)
        return
    said = config.stash.setdefault(_said_key, set())
    if line in said:
        return
    said.add(line)
    _write(config, line)


def say_alone(config: pytest.Config, text: str) -> None:
    """Say one notice from a process that shares its terminal with another that is still
    writing (a copy of the session made by ``os.fork()`` in a test): the whole line in one
    ``write`` on standard error's descriptor, so that the other process's lines never land
    inside it (through the reporter, the copy's line reached the pipe in two pieces and the
    recording process's closing line came in between)."""
    line = " ".join((text if text.startswith(PREFIX) else PREFIX + text).split())
    said = config.stash.setdefault(_said_key, set())
    if line in said:
        return
    said.add(line)
    with contextlib.suppress(OSError):
        _os_write(2, (line + "\n").encode("utf-8", "replace"))


def say_from_worker(config: pytest.Config, node: Any) -> None:
    """The controller's side: say what a finished worker handed over."""
    output = getattr(node, "workeroutput", None)
    lines = output.get(WORKEROUTPUT_KEY) if isinstance(output, dict) else None
    if isinstance(lines, list):
        for line in lines:
            if isinstance(line, str):
                say(config, line)


def _write(config: pytest.Config, line: str) -> None:
    reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
    try:
        if reporter is not None:
            # Progress dots (``-q``) leave the cursor mid-line without the reporter knowing.
            writer: Any = getattr(reporter, "_tw", None)
            if writer is not None and getattr(writer, "width_of_current_line", False):
                writer.line()
            reporter.write_line(line, yellow=True)
            return
    except Exception:
        pass  # a broken reporter must not cost the user the notice: fall back to stderr
    stream = _stderr
    if stream is None:
        return
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass
