"""What identifies a run and the processes that write it: run ids, their statuses, whether a
writer still lives, the key that makes two recordings interchangeable, and the variables
and ``config`` entries ``diffgenome diff`` hands the recordings it makes.

Shared by the recorder (which writes runs) and the analysis side (which reuses, holds and
removes them); standard library only."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
from os import kill as _kill
from os import uname as _uname
from time import gmtime as _gmtime
from time import strftime as _strftime
from typing import Final
from uuid import uuid4 as _uuid4

from diffgenome.protocol.fileio import read_file
from diffgenome.protocol.formats import (
    genome_format_of,
)

STATUS_RUNNING: Final = "running"


STATUS_COMPLETE: Final = "complete"


STATUS_INCOMPLETE: Final = "incomplete"


RUN_STATUSES: Final = (STATUS_RUNNING, STATUS_COMPLETE, STATUS_INCOMPLETE)


# Reason given for a run whose every writer process is gone without finish_run.
REASON_INTERRUPTED: Final = "interrupted: the recording process ended before the run was finished"


#: Set by ``diffgenome diff`` for a recording it makes: the run id the recorder must use, so
#: that recordings made at once (confirmation records both sides in parallel) are told apart.
RUN_ID_ENV: Final = "DIFFGENOME_RUN_ID"


_RUN_ID_SHAPE: Final = re.compile(r"\d{8}T\d{6}-[0-9a-f]{8}")


def new_run_id() -> str:
    """Sortable by start time, unique without coordination between machines."""
    return _strftime("%Y%m%dT%H%M%S", _gmtime()) + "-" + _uuid4().hex[:8]


def is_run_id(text: str) -> bool:
    """Whether ``text`` has the shape :func:`new_run_id` gives."""
    return _RUN_ID_SHAPE.fullmatch(text) is not None


def process_token(pid: int) -> str | None:
    """Identity of a process beyond its pid (boot id + start time), so that a reused pid is
    not taken for a writer still at work. None where /proc does not tell."""
    try:
        boot = read_file("/proc/sys/kernel/random/boot_id", 4096).decode().strip()
        stat = read_file(f"/proc/{pid}/stat", 4096).decode(errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    if len(fields) < 20:
        return None
    return f"{boot}:{fields[19]}"


def process_alive(pid: object, host: object, token: object) -> bool:
    """Whether a process that wrote to the store (a recording's writer, a diff that holds
    runs) may still be running; unknown counts as alive."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    if host != _uname().nodename:
        return True
    try:
        _kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return True
    if isinstance(token, str):
        current = process_token(pid)
        if current is not None and current != token:
            return False
    try:
        stat = read_file(f"/proc/{pid}/stat", 4096)
    except OSError:
        return True
    return stat.rpartition(b")")[2].split()[:1] not in ([b"Z"], [b"X"])  # a zombie is done


def recording_key(
    commit: str | None,
    dirty: bool | None,
    python: str,
    selection: list[str],
    config: dict[str, object],
) -> str:
    """What makes two recordings interchangeable: the same commit of a clean tree, the same
    interpreter, the same test selection (``selection`` as
    :func:`diffgenome.protocol.selection.recorded_selection` gives it: output-only options
    left out) and the same recording configuration.

    Stored in ``run.config.recording_key`` by the recorder and recomputed by ``diffgenome
    diff`` to reuse a recording; both sides call this one function.
    """
    text = json.dumps([commit, dirty, python, list(selection), config], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


# The run ``config`` entry of a session that recorded one shard of a sharded suite
# (``pytest --genome-shard I/N``): ``{"index": I, "count": N}``, 1-based.
SHARD_CONFIG_KEY: Final = "shard"


def shard_of(config: object) -> tuple[int, int] | None:
    """``(index, count)`` of a run's ``config``, or None when it recorded no shard label (or
    an unusable one)."""
    shard = config.get(SHARD_CONFIG_KEY) if isinstance(config, dict) else None
    if not isinstance(shard, dict):
        return None
    index, count = shard.get("index"), shard.get("count")
    if type(index) is not int or type(count) is not int or not 1 <= index <= count:
        return None
    return index, count


def run_genome_format(config: object) -> str:
    """The genome format of a run from its stored ``config`` cell (runs that do not say: /1)."""
    try:
        parsed = json.loads(config) if isinstance(config, str) else None
    except ValueError:
        parsed = None
    return genome_format_of(parsed)


#: ``run.origin`` of the recordings ``diffgenome diff`` makes to confirm a difference.
ORIGIN_CONFIRMATION: Final = "confirmation"


#: Set (to ``1``) by ``diffgenome diff`` for the recordings it makes. Such a recording does
#: not apply the store's cap (the diff applies it once, at its end, and holds the runs it
#: uses itself). Never an id of the diff: tests copy the environment into values, and a
#: value that differs per invocation would differ between a reused side and a fresh one.
HOLDER_ENV: Final = "DIFFGENOME_DIFF"


#: Set by ``diffgenome diff`` for the recordings it makes: the fingerprint of the environment
#: it records in (every variable, the folder, the ignored files copied in), which the
#: recorder keeps in ``run.config`` under :data:`ENVIRONMENT_CONFIG_KEY`; a diff reuses such
#: a run only where its own fingerprint is the same.
ENVIRONMENT_ENV: Final = "DIFFGENOME_ENVIRONMENT"


ENVIRONMENT_CONFIG_KEY: Final = "environment"


#: Set by ``diffgenome diff`` for the recordings it makes: the JSON list of the files git
#: ignores in the user's checkout that it copies into every side (paths from the top of the
#: repository). In a side whose own ``.gitignore`` does not ignore one, the copy is an
#: untracked file the diff put there, not a change of the tree: the recorder leaves it out
#: of ``run.dirty``, or the side could never be reused (the copies are part of the
#: environment's fingerprint already).
COPIED_ENV: Final = "DIFFGENOME_COPIED"


def untracked_lines_left_out(status: str, copied: Collection[str]) -> str:
    """``git status --porcelain`` output without the untracked-file lines of ``copied``."""
    return "".join(
        line
        for line in status.splitlines(keepends=True)
        if not (line.startswith("?? ") and line[3:].rstrip("\n") in copied)
    )
