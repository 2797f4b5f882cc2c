"""Layout of the embedded store, shared by the writer (recording side) and the reader.

Standard library only. One SQLite file in WAL mode so that several writer processes (xdist
workers, parallel sessions) append at once while readers keep a consistent snapshot. The
layout is versioned by ``STORE_FORMAT`` in the ``meta`` table; a reader refuses any other
major version rather than guess. The digest key lives next to the database in its own file
and never inside it: the database and its exports are meant to be shared, the key is not.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from os import O_RDONLY
from os import close as _close
from os import open as _open
from os import read as _read
from typing import Final

from diffgenome.protocol.formats import STORE_FORMAT

DB_FILE: Final = "genome.sqlite"
KEY_FILE: Final = "secret.key"
DEFAULT_DIR: Final = ".diffgenome"

KEY_BYTES: Final = 32
KEY_MIN_BYTES: Final = 16

# Writers wait this long for each other; the store is busy only for the length of one batch.
BUSY_TIMEOUT_S: Final = 30.0

STATUS_RUNNING: Final = "running"
STATUS_COMPLETE: Final = "complete"
STATUS_INCOMPLETE: Final = "incomplete"
RUN_STATUSES: Final = (STATUS_RUNNING, STATUS_COMPLETE, STATUS_INCOMPLETE)

# Reason given for a run whose every writer process is gone without finish_run.
REASON_INTERRUPTED: Final = "interrupted: the recording process ended before the run was finished"

# Keys of the genome/1 ``run`` object that have their own column; anything else a newer
# recorder adds is kept verbatim in ``runs.extra`` so that a round trip loses nothing.
RUN_COLUMNS: Final = (
    "id",
    "commit",
    "dirty",
    "python",
    "platform",
    "started_at",
    "finished_at",
    "complete",
    "incomplete_reasons",
    "config",
    "selection",
    "key_fingerprint",
    "tool",
    "collectors",
)
TEST_COLUMNS: Final = ("id", "outcome", "verified", "unverified_reasons", "phases")

# ``meta`` carries the format; it is checked before anything else is read or written.
DDL: Final = f"""
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS runs (
    id              TEXT PRIMARY KEY,
    started_at      TEXT NOT NULL,
    finished_at     TEXT,
    commit_sha      TEXT,
    dirty           INTEGER,
    python          TEXT NOT NULL,
    platform        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN {RUN_STATUSES!r}),
    reasons         TEXT NOT NULL DEFAULT '[]',
    config          TEXT NOT NULL DEFAULT '{{}}',
    selection       TEXT NOT NULL DEFAULT '[]',
    collectors      TEXT NOT NULL DEFAULT '[]',
    key_fingerprint TEXT,
    tool            TEXT,
    recording_key   TEXT,
    extra           TEXT NOT NULL DEFAULT '{{}}',
    owner_pid       INTEGER,
    owner_host      TEXT,
    owner_token     TEXT
);
CREATE INDEX IF NOT EXISTS runs_recording_key ON runs (recording_key);
CREATE INDEX IF NOT EXISTS runs_commit ON runs (commit_sha);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at);

CREATE TABLE IF NOT EXISTS workers (
    run_id    TEXT NOT NULL,
    worker    TEXT NOT NULL,
    pid       INTEGER,
    host      TEXT,
    token     TEXT,
    joined_at TEXT,
    left_at   TEXT,
    ok        INTEGER,
    reasons   TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (run_id, worker)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS symbols (
    run_id TEXT NOT NULL,
    id     TEXT NOT NULL,
    doc    TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS tests (
    run_id             TEXT NOT NULL,
    id                 TEXT NOT NULL,
    worker             TEXT,
    outcome            TEXT NOT NULL,
    verified           INTEGER NOT NULL,
    unverified_reasons TEXT NOT NULL DEFAULT '[]',
    extra              TEXT NOT NULL DEFAULT '{{}}',
    phases             BLOB NOT NULL,
    PRIMARY KEY (run_id, id)
) WITHOUT ROWID;
"""

META_FORMAT_KEY: Final = "format"
FORMAT_ROW: Final = (META_FORMAT_KEY, STORE_FORMAT)

_SQLITE_MAGIC: Final = b"SQLite format 3\x00"


class StoreError(Exception):
    """The store cannot be used; the message is one line: what is wrong, then what to do."""


def fingerprint_key(key: bytes) -> str:
    """A name for the key that reveals nothing about it: digests compare only when these match."""
    mac = hmac.new(key, b"diffgenome key fingerprint", hashlib.sha256).hexdigest()
    return "hmac-sha256:" + mac[:16]


def header_problem(head: bytes, size: int, has_wal: bool) -> str | None:
    """Why a file whose first bytes are ``head`` and length ``size`` is not a usable database.

    SQLite itself notices damage only when it reaches a damaged page, which may be long after
    the run list was shown; checking the header first turns a truncated copy into one clear
    error up front.
    """
    if size == 0:
        return None
    if size < 100 or not head.startswith(_SQLITE_MAGIC):
        return "is not an SQLite database"
    (page_size,) = struct.unpack(">H", head[16:18])
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return "has a damaged SQLite header"
    if size % page_size:
        return "is truncated or damaged (its size is not a whole number of pages)"
    change_counter, pages, valid_for = (
        struct.unpack(">I", head[24:28])[0],
        struct.unpack(">I", head[28:32])[0],
        struct.unpack(">I", head[92:96])[0],
    )
    # With a live WAL the header may describe pages not yet copied back; trust it only alone.
    if not has_wal and change_counter == valid_for and pages * page_size > size:
        return f"is truncated ({size} of {pages * page_size} bytes)"
    return None


def _read_small(path: str) -> bytes:
    fd = _open(path, O_RDONLY)
    try:
        return _read(fd, 4096)
    finally:
        _close(fd)


def process_token(pid: int) -> str | None:
    """Identity of a process beyond its pid (boot id + start time), so that a reused pid is
    not taken for a writer still at work. None where /proc does not tell."""
    try:
        boot = _read_small("/proc/sys/kernel/random/boot_id").decode().strip()
        stat = _read_small(f"/proc/{pid}/stat").decode(errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    if len(fields) < 20:
        return None
    return f"{boot}:{fields[19]}"


def recording_key(
    commit: str | None,
    dirty: bool | None,
    python: str,
    selection: list[str],
    config: dict[str, object],
) -> str:
    """What makes two recordings interchangeable: the same commit of a clean tree, the same
    interpreter, the same pytest arguments and the same recording configuration.

    Stored in ``run.config.recording_key`` by the recorder and recomputed by ``diffgenome
    diff`` to reuse a recording; both sides call this one function.
    """
    text = json.dumps([commit, dirty, python, list(selection), config], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]
