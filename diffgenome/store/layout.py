"""Layout of the embedded store and its creation, shared by the writer (recording side), the
reader and ``diffgenome diff`` (which creates the store and its key before either side records).

Standard library only. One SQLite file in WAL mode so that several writer processes (xdist
workers, parallel sessions) append at once while readers keep a consistent snapshot. The
layout is versioned by ``STORE_FORMAT`` in the ``meta`` table; a reader refuses any other
major version rather than guess. The digest key lives next to the database in its own file
and never inside it: the database and its exports are meant to be shared, the key is not.
"""

from __future__ import annotations

import json
import os as _os
import sqlite3
import struct
import zlib
from contextlib import suppress
from dataclasses import dataclass
from os import O_CREAT, O_EXCL, O_RDONLY, O_WRONLY
from os import close as _close
from os import lstat as _lstat
from os import makedirs as _makedirs
from os import open as _open
from os import read as _read
from os import sep as _sep
from os import stat as _stat
from os import unlink as _unlink
from os import write as _write
from stat import S_ISDIR, S_ISLNK
from time import monotonic as _monotonic
from time import sleep as _sleep
from typing import Final

from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.formats import (
    STORE_FORMAT,
    STORE_FORMATS_READ,
    FormatError,
    check_store_format,
)
from diffgenome.protocol.runs import RUN_STATUSES, run_genome_format
from diffgenome.store.addresses import PhaseRows, insert_bodies, phase_rows
from diffgenome.store.compact import all_predicates, confirm_predicates
from diffgenome.store.key import load_key, store_key
from diffgenome.store.manifests import add_manifest_columns
from diffgenome.store.paths import store_file
from diffgenome.store.retention import AUTO_VACUUM, compact

DB_FILE: Final = "genome.sqlite"


# Writers wait this long for each other; the store is busy only for the length of one batch.
BUSY_TIMEOUT_S: Final = 30.0


# Keys of the genome ``run`` object that have their own column; anything else a newer
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
    owner_token     TEXT,
    tests_in         TEXT,
    tests_manifest   TEXT,
    symbols_in       TEXT,
    symbols_manifest TEXT
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
    phases_size        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, id)
) WITHOUT ROWID;

-- The runs a ``diffgenome diff`` under way uses (its sides, its confirmations): the store's
-- cap never removes them while the process that holds them lives.
CREATE TABLE IF NOT EXISTS holds (
    holder TEXT NOT NULL,
    run_id TEXT NOT NULL,
    pid    INTEGER,
    host   TEXT,
    token  TEXT,
    PRIMARY KEY (holder, run_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS genomes (
    hash          TEXT PRIMARY KEY,
    body          BLOB NOT NULL,
    substitutions INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sites (
    site      TEXT PRIMARY KEY,
    predicate TEXT NOT NULL
) WITHOUT ROWID;
"""


META_FORMAT_KEY: Final = "format"


FORMAT_ROW: Final = (META_FORMAT_KEY, STORE_FORMAT)


_STORE_V1: Final = STORE_FORMATS_READ[0]


_SQLITE_MAGIC: Final = b"SQLite format 3\x00"


_GITIGNORE: Final = "# created by diffgenome: the store and its key stay out of git\n*\n"


def one_line(exc: BaseException) -> str:
    """An exception as the middle of a one-line StoreError (SQLite's messages may wrap)."""
    return " ".join(str(exc).split()) or type(exc).__name__


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


def _upgrade_from_v1(conn: sqlite3.Connection) -> int:
    """Rewrite a ``diffgenome-store/1`` store's tests as store/2 rows, in the caller's
    transaction: each test's one compressed ``phases`` blob becomes content-addressed phase
    bodies. A blob that cannot be read is left as it is, so a reader still names the damaged
    test instead of the upgrade losing it."""
    runs = {
        str(run_id): (fingerprint, config)
        for run_id, fingerprint, config in conn.execute(
            "SELECT id, key_fingerprint, config FROM runs"
        )
    }
    columns = {row[1] for row in conn.execute("PRAGMA table_info(tests)")}
    if "phases_size" not in columns:
        conn.execute("ALTER TABLE tests ADD COLUMN phases_size INTEGER NOT NULL DEFAULT 0")
    updates: list[tuple[str, int, str, str]] = []
    bodies: list[PhaseRows] = []
    predicates: dict[str, str] = {}
    for run_id, test_id, blob in conn.execute("SELECT run_id, id, phases FROM tests").fetchall():
        if not isinstance(blob, bytes):
            continue
        try:
            phases = json.loads(zlib.decompress(blob))
        except (zlib.error, ValueError):
            continue
        if not isinstance(phases, dict):
            continue
        fingerprint, config = runs.get(str(run_id), (None, None))
        wanted = all_predicates(phases.values())
        predicates.update(confirm_predicates(conn, wanted, predicates))
        rows = phase_rows(
            phases, run_genome_format(config), _opt(fingerprint), predicates=predicates
        )
        bodies.append(rows)
        updates.append((rows.refs, rows.size, str(run_id), str(test_id)))
        if len(bodies) >= 500:
            insert_bodies(conn, bodies)
            bodies.clear()
    insert_bodies(conn, bodies)
    conn.executemany(
        "UPDATE tests SET phases = ?, phases_size = ? WHERE run_id = ? AND id = ?", updates
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (STORE_FORMAT, META_FORMAT_KEY))
    return len(updates)


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class OpenedStore:
    """A store folder made ready for writing: its database connection and its digest key."""

    folder: str
    db_path: str
    conn: sqlite3.Connection
    key: bytes
    #: Test rows rewritten from a ``diffgenome-store/1`` layout while opening (0: none).
    upgraded: int = 0


def open_store(path: str, key_file: str | None = None) -> OpenedStore:
    """Open (creating if needed) the store folder ``path`` and its database and key.

    Both the recorder and ``diffgenome diff`` call this, so that a store made by either is the
    same store: layout, format row, key file and ``.gitignore``.
    """
    folder = path.rstrip(_sep) or _sep
    try:
        # Private: the store holds test ids, paths and the digest key (docs/ci.md).
        _makedirs(folder, 0o700, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the store folder {folder}: {exc.strerror or exc}; "
            "choose a writable store location"
        ) from None
    try:
        if not S_ISDIR(_stat(folder).st_mode):
            raise StoreError(f"store path {folder} is not a folder; pass a folder path")
    except OSError as exc:
        raise StoreError(f"cannot use store folder {folder}: {exc.strerror or exc}") from None

    key = load_key(key_file, given=True) if key_file is not None else None
    db_path = store_file(folder, DB_FILE)
    for name in (DB_FILE, DB_FILE + "-wal", DB_FILE + "-shm"):
        refuse_link(store_file(folder, name))
    _create_private(db_path)
    conn, upgraded = _connect(db_path, folder)
    try:
        if key is None:
            key = store_key(folder)
        _write_gitignore(folder)
        _write_reserve(folder)
    except BaseException:
        conn.close()
        raise
    return OpenedStore(folder, db_path, conn, key, upgraded)


_O_NOFOLLOW: Final = getattr(_os, "O_NOFOLLOW", 0)  # none on Windows


def refuse_link(path: str) -> None:
    """A file the store makes or writes must be its own: a symbolic link in its place (to
    an empty file, a missing one, another store's key) would have the store write through it
    or read its key from wherever it points."""
    try:
        linked = S_ISLNK(_lstat(path).st_mode)
    except OSError:
        return
    if linked:
        raise StoreError(
            f"{path} is a symbolic link; the store writes only files of its own: remove the link"
        )


def _create_private(db_path: str) -> None:
    """Make the database file, when missing, readable by its owner only: SQLite would make
    it (and its WAL and shared-memory files, which take the database's mode) 0644 less the
    umask. An empty file is a new database to SQLite."""
    try:
        fd = _open(db_path, O_WRONLY | O_CREAT | O_EXCL | _O_NOFOLLOW, 0o600)
    except OSError:
        return  # there already, or not creatable: ``_connect`` says what is wrong
    _close(fd)


def create_store(path: str) -> None:
    """Make sure the store and its digest key exist, without keeping it open."""
    open_store(path).conn.close()


def sql_error(exc: sqlite3.Error, what: str, db_path: str) -> StoreError:
    """SQLite's complaint as a StoreError that says what to do about it."""
    text = one_line(exc)
    if "locked" in text or "busy" in text:
        hint = f"another process held the store longer than {BUSY_TIMEOUT_S:.0f} s; retry later"
    elif "readonly" in text or "read-only" in text or "unable to open" in text:
        hint = "make the store folder and its files writable"
    elif "full" in text:
        folder = db_path.rpartition(_sep)[0] or _sep
        return StoreError(
            f"cannot {what}: the disk holding {folder} is full ({text}); free space there "
            "and record again"
        )
    else:
        hint = "move the damaged store away and record again"
    return StoreError(f"cannot {what} in {db_path}: {text}; {hint}")


def _connect(db_path: str, folder: str) -> tuple[sqlite3.Connection, int]:
    """Connect, refuse foreign or damaged files before writing a byte, then create (or
    upgrade) the layout; the connection and how many test rows an upgrade rewrote."""
    try:
        fd = _open(db_path, O_RDONLY)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StoreError(
            f"cannot read {db_path}: {exc.strerror or exc}; fix the permissions of the store"
        ) from None
    else:
        try:
            head = _read(fd, 100)
            size = _stat(db_path).st_size
        finally:
            _close(fd)
        try:
            wal = _stat(db_path + "-wal").st_size > 0
        except OSError:
            wal = False
        problem = header_problem(head, size, wal)
        if problem:
            raise StoreError(
                f"{db_path} {problem}; move it away (a new store is created on the next run)"
            )
    try:
        conn = sqlite3.connect(
            db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise sql_error(exc, "open the store", db_path) from None
    try:
        upgraded = _initialise(conn, db_path)
    except BaseException:
        conn.close()
        raise
    if upgraded:
        # The old blobs' pages are free now: give them back once (busy: on a later cap).
        with suppress(sqlite3.Error):
            compact(conn, at_least=0.25)
    return conn, upgraded


def _initialise(conn: sqlite3.Connection, db_path: str) -> int:
    deadline = _monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            _check_existing(conn, db_path)
            if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
                # A new file: pages freed later (a run's rows given up for an earlier run's,
                # store/manifests.py) can go back to the file system without a VACUUM.
                # Only an empty file takes this; an older store takes it when compacted.
                conn.execute(f"PRAGMA auto_vacuum = {AUTO_VACUUM}")
            # Switching to WAL needs a moment alone with the file; a racing creator may hold
            # it, so this is retried rather than waited on by the busy handler.
            if conn.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
                raise sqlite3.OperationalError("database is locked (journal mode)")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", FORMAT_ROW)
            upgraded = _upgrade_from_v1(conn) if _format(conn) == _STORE_V1 else 0
            if add_manifest_columns(conn) or _format(conn) != STORE_FORMAT:
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = ?", (STORE_FORMAT, META_FORMAT_KEY)
                )
            conn.execute("COMMIT")
            _check_existing(conn, db_path)
            return upgraded
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise sql_error(exc, "open the store", db_path) from None
            if _monotonic() > deadline:
                raise sql_error(exc, "open the store", db_path) from None
            _sleep(0.05)
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise sql_error(exc, "open the store", db_path) from None
        except UnicodeDecodeError:  # a mangled name in the schema comes back as bad bytes
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(
                f"{db_path} is damaged (a text value is not UTF-8); move it away "
                "(a new store is created on the next run)"
            ) from None


def _check_existing(conn: sqlite3.Connection, db_path: str) -> None:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables:
        return
    if "meta" not in tables:
        raise StoreError(
            f"{db_path} is an SQLite database but not a diffgenome store; "
            "choose another store folder"
        )
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_FORMAT_KEY,)).fetchone()
    if row is None:
        return
    try:
        check_store_format(row[0])
    except FormatError as exc:
        raise StoreError(f"{db_path}: {exc}") from None


def _format(conn: sqlite3.Connection) -> object:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_FORMAT_KEY,)).fetchone()
    return None if row is None else row[0]


def _write_gitignore(folder: str) -> None:
    try:
        fd = _open(store_file(folder, ".gitignore"), O_WRONLY | O_CREAT | O_EXCL, 0o644)
    except OSError:
        return
    try:
        _write(fd, _GITIGNORE.encode())
    finally:
        _close(fd)


#: A file of zeros kept beside the database: when the disk fills up during a recording, the
#: writer deletes it (:func:`release_reserve`) and the space it gives back takes the few pages
#: that finish the run with the reason ("the disk holding ... is full") instead of leaving it
#: to read as interrupted. Made again by the next writer that finds room for it.
RESERVE_FILE: Final = "reserve"


RESERVE_BYTES: Final = 256 * 1024


def _write_reserve(folder: str) -> None:
    path = store_file(folder, RESERVE_FILE)
    try:
        fd = _open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    except OSError:
        return  # there already, or no room: nothing to make
    try:
        block = bytes(1 << 16)
        for _ in range(RESERVE_BYTES // len(block)):
            _write(fd, block)
    except OSError:
        with suppress(OSError):
            _unlink(path)  # half a reserve would promise room it does not hold
    finally:
        _close(fd)


def release_reserve(folder: str) -> bool:
    """Give the reserve's space back to the disk; True when there was one to give."""
    try:
        _unlink(store_file(folder, RESERVE_FILE))
    except OSError:
        return False
    return True
