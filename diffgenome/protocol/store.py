"""Layout of the embedded store and its creation, shared by the writer (recording side), the
reader and ``diffgenome diff`` (which creates the store and its key before either side records).

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
import re
import sqlite3
import struct
import zlib
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from os import O_CREAT, O_EXCL, O_RDONLY, O_WRONLY
from os import close as _close
from os import fsync as _fsync
from os import getpid as _getpid
from os import kill as _kill
from os import link as _link
from os import makedirs as _makedirs
from os import open as _open
from os import read as _read
from os import sep as _sep
from os import stat as _stat
from os import uname as _uname
from os import unlink as _unlink
from os import urandom as _urandom
from os import write as _write
from stat import S_ISDIR
from time import gmtime as _gmtime
from time import monotonic as _monotonic
from time import sleep as _sleep
from time import strftime as _strftime
from typing import Final
from uuid import uuid4 as _uuid4

from diffgenome.protocol.errors import UserError
from diffgenome.protocol.formats import (
    STORE_FORMAT,
    STORE_FORMATS_READ,
    FormatError,
    check_store_format,
    genome_format_of,
)
from diffgenome.protocol.vocab import TYPE_SUBSTITUTION

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
"""

META_FORMAT_KEY: Final = "format"
FORMAT_ROW: Final = (META_FORMAT_KEY, STORE_FORMAT)
_STORE_V1: Final = STORE_FORMATS_READ[0]

_SQLITE_MAGIC: Final = b"SQLite format 3\x00"
_GITIGNORE: Final = "# created by diffgenome: the store and its key stay out of git\n*\n"


class StoreError(UserError):
    """The store cannot be used; the message is one line: what is wrong, then what to do."""


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


def one_line(exc: BaseException) -> str:
    """An exception as the middle of a one-line StoreError (SQLite's messages may wrap)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def store_file(folder: str, name: str) -> str:
    """A file of the store folder, joined as a plain string: the writer runs where tests patch
    ``os.path``."""
    return folder if not folder else folder.rstrip(_sep) + _sep + name


def key_fingerprint(key: bytes) -> str:
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


def process_token(pid: int) -> str | None:
    """Identity of a process beyond its pid (boot id + start time), so that a reused pid is
    not taken for a writer still at work. None where /proc does not tell."""
    try:
        boot = _read_file("/proc/sys/kernel/random/boot_id", 4096).decode().strip()
        stat = _read_file(f"/proc/{pid}/stat", 4096).decode(errors="replace")
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
        stat = _read_file(f"/proc/{pid}/stat", 4096)
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


# --- genomes by content address ------------------------------------------------------------

# Level 3 deflates a phase two to three times faster than the default 6 for about a tenth
# more bytes; the recorder runs it once per phase, in the user's test process.
PHASE_ZLIB_LEVEL: Final = 3
_PHASE_ADDRESS_TAG: Final = b"diffgenome-phase/1\0"
_SUBSTITUTION_NODE: Final = f'"type":"{TYPE_SUBSTITUTION}"'.encode()

# ``json.dumps`` with options builds a new encoder per call; one bound at import time gives
# the same text (and is out of reach of tests that patch ``json``).
canonical_json = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def phase_address(text: bytes, genome_format: str, fingerprint: str | None) -> str:
    """The content address of one phase's genome: its canonical JSON bytes, with the genome
    format and the digest key's fingerprint they were written under (equal bytes under another
    key or format are another genome, never shared)."""
    head = f"{genome_format}\0{fingerprint or ''}\0".encode()
    return hashlib.blake2b(_PHASE_ADDRESS_TAG + head + text, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class PhaseRows:
    """A test's phases as the store keeps them: ``refs`` (the ``tests.phases`` cell: canonical
    JSON of phase name -> address), ``size`` (bytes of the compressed bodies) and the
    ``(address, body, substitutions)`` rows for the ``genomes`` table, stored once however
    often they recur."""

    refs: str
    size: int
    bodies: list[tuple[str, bytes, int]]


def phase_rows(
    phases: Mapping[str, object],
    genome_format: str,
    fingerprint: str | None,
    stored: Mapping[str, int] | None = None,
) -> PhaseRows:
    """Split a test's ``phases`` object into content-addressed rows. ``stored``: addresses
    the caller knows the store holds, with their compressed sizes; their bodies are neither
    compressed again nor among the rows (most tests share their setup and teardown)."""
    refs: dict[str, str] = {}
    bodies: list[tuple[str, bytes, int]] = []
    size = 0
    for name, genome in phases.items():
        text = canonical_json(genome).encode()
        address = phase_address(text, genome_format, fingerprint)
        refs[name] = address
        known = stored.get(address) if stored is not None else None
        if known is not None:
            size += known
            continue
        body = zlib.compress(text, PHASE_ZLIB_LEVEL)
        # Canonical JSON writes a node's type exactly so; inside a string value the quotes
        # would be escaped. A reader that needs only stand-ins reads only these bodies.
        bodies.append((address, body, text.count(_SUBSTITUTION_NODE)))
        size += len(body)
    return PhaseRows(canonical_json(refs), size, bodies)


def insert_bodies(conn: sqlite3.Connection, rows: Iterable[PhaseRows]) -> None:
    """Store the bodies of ``rows`` that the store does not hold yet (the caller holds a
    transaction)."""
    conn.executemany(
        "INSERT OR IGNORE INTO genomes (hash, body, substitutions) VALUES (?, ?, ?)",
        [body for row in rows for body in row.bodies],
    )


def drop_unreferenced_genomes(conn: sqlite3.Connection) -> int:
    """Remove the bodies no test refers to any more (after runs were removed; the caller
    holds a transaction); how many."""
    referenced: set[str] = set()
    for (refs,) in conn.execute("SELECT phases FROM tests"):
        if isinstance(refs, str):
            with suppress(ValueError, AttributeError, TypeError):
                referenced.update(str(v) for v in json.loads(refs).values())
    stale = [
        (address,)
        for (address,) in conn.execute("SELECT hash FROM genomes")
        if address not in referenced
    ]
    conn.executemany("DELETE FROM genomes WHERE hash = ?", stale)
    return len(stale)


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
        rows = phase_rows(phases, run_genome_format(config), _opt(fingerprint))
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


def run_genome_format(config: object) -> str:
    """The genome format of a run from its stored ``config`` cell (runs that do not say: /1)."""
    try:
        parsed = json.loads(config) if isinstance(config, str) else None
    except ValueError:
        parsed = None
    return genome_format_of(parsed)


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


# --- creating and opening a store for writing ---------------------------------------------


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
        _makedirs(folder, exist_ok=True)
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

    key = _load_key(key_file, given=True) if key_file is not None else None
    db_path = store_file(folder, DB_FILE)
    conn, upgraded = _connect(db_path, folder)
    try:
        if key is None:
            key = _store_key(folder)
        _write_gitignore(folder)
        _write_reserve(folder)
    except BaseException:
        conn.close()
        raise
    return OpenedStore(folder, db_path, conn, key, upgraded)


def create_store(path: str) -> None:
    """Make sure the store and its digest key exist, without keeping it open."""
    open_store(path).conn.close()


def _read_file(path: str, limit: int = 1 << 16) -> bytes:
    fd = _open(path, O_RDONLY)
    try:
        chunks: list[bytes] = []
        while chunk := _read(fd, limit):
            chunks.append(chunk)
            if sum(map(len, chunks)) >= limit:
                break
        return b"".join(chunks)
    finally:
        _close(fd)


def _load_key(path: str, given: bool) -> bytes:
    try:
        key = _read_file(path)
    except FileNotFoundError:
        if not given:
            raise
        raise StoreError(
            f"the key file {path} does not exist; make one with `diffgenome key new {path}` "
            f"(or pass an existing key file of at least {KEY_MIN_BYTES} random bytes)"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read the digest key {path}: {exc.strerror or exc}; "
            "fix its permissions or pass another key file"
        ) from None
    if len(key) < KEY_MIN_BYTES:
        hint = "pass a longer key file" if given else "delete it so that a new key is made"
        raise StoreError(
            f"digest key {path} is too short ({len(key)} bytes, need at least "
            f"{KEY_MIN_BYTES}); {hint}"
        )
    return key


def _create_key(path: str) -> None:
    """Create the key so that racing processes all end up reading the same one.

    The bytes are written under a private temporary name first and then hard-linked into
    place; ``link`` fails if the name exists, so the first complete key wins and nobody ever
    reads a half-written file. Where hard links are unsupported, an exclusive create of the
    final name still lets only one process write it.
    """
    key = _urandom(KEY_BYTES)
    tmp = f"{path}.{_getpid()}.{_urandom(4).hex()}.tmp"
    fd = _open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    try:
        try:
            _write(fd, key)
            _fsync(fd)
        finally:
            _close(fd)
        try:
            _link(tmp, path)
        except FileExistsError:
            return
        except OSError:
            _create_in_place(path, key)
    finally:
        with suppress(OSError):
            _unlink(tmp)


def new_key_file(path: str) -> None:
    """Write a new digest key to ``path`` (``diffgenome key new``): :data:`KEY_BYTES` random
    bytes, readable by the owner only; an existing file is never overwritten (its digests
    would no longer compare with anything recorded under it)."""
    key = _urandom(KEY_BYTES)
    try:
        fd = _open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    except FileExistsError:
        raise StoreError(
            f"{path} exists; a key file is never overwritten (what was recorded with it would "
            "no longer compare): choose another FILE, or remove this one first"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot write {path}: {exc.strerror or exc}; choose another FILE"
        ) from None
    try:
        _write(fd, key)
        _fsync(fd)
    finally:
        _close(fd)


def _create_in_place(path: str, key: bytes) -> None:
    try:
        fd = _open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        _write(fd, key)
        _fsync(fd)
    finally:
        _close(fd)


def _store_key(folder: str) -> bytes:
    path = store_file(folder, KEY_FILE)
    try:
        return _load_key(path, given=False)
    except FileNotFoundError:
        pass
    try:
        _create_key(path)
    except OSError as exc:
        raise StoreError(
            f"cannot create the digest key in {folder}: {exc.strerror or exc}; "
            "make the store folder writable or pass a key file"
        ) from None
    # Only the no-hard-link fallback can expose a key still being written: give it a moment.
    for attempt in range(20):
        try:
            return _load_key(path, given=False)
        except FileNotFoundError:
            raise StoreError(
                f"digest key {path} vanished right after it was created; "
                "check what else is cleaning the store folder"
            ) from None
        except StoreError:
            if attempt == 19:
                raise
            _sleep(0.05)
    raise AssertionError("unreachable")


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


# --- removing runs ------------------------------------------------------------------------

#: How many runs a store keeps unless told otherwise: the oldest beyond it are removed when a
#: recording finishes (and said so). ``diffgenome prune --cap N`` changes it; 0 keeps all.
DEFAULT_KEEP_RUNS: Final = 20
META_KEEP_RUNS: Final = "keep_runs"


def keep_runs(conn: sqlite3.Connection) -> int:
    """The store's cap on runs (``meta.keep_runs``, else :data:`DEFAULT_KEEP_RUNS`); 0: none."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEEP_RUNS,)).fetchone()
    try:
        value = int(row[0]) if row is not None else DEFAULT_KEEP_RUNS
    except (TypeError, ValueError):
        return DEFAULT_KEEP_RUNS
    return max(value, 0)


def set_keep_runs(conn: sqlite3.Connection, cap: int) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (META_KEEP_RUNS, str(cap))
    )


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


def runs_over_cap(conn: sqlite3.Connection, cap: int, protected: Iterable[str] = ()) -> list[str]:
    """Ids of the runs the store's cap removes, newest first (the oldest last).

    - A confirmation run (``origin`` confirmation) belongs to the diff it confirms: it does
      not count against the cap, stays while that diff lives, and goes, first, once the diff
      is over.
    - Of the other runs, those beyond the ``cap`` newest go, except a run still being
      recorded, a run a live diff holds (or ``protected``: the runs the diff that applies
      the cap used), and the newest complete run of each commit recorded from a clean tree
      (what ``diff`` reuses for that commit): the cap removes older, repeated, interrupted
      and uncommitted recordings; ``diffgenome prune`` removes the rest when asked.

    ``cap`` 0 keeps every run."""
    if cap <= 0:
        return []
    held = live_holds(conn) | set(protected)
    rows = conn.execute(
        "SELECT id, status, commit_sha, dirty, extra, owner_pid, owner_host, owner_token"
        " FROM runs ORDER BY started_at DESC, rowid DESC"
    ).fetchall()
    out: list[str] = []
    counted = 0
    stands_for: set[str] = set()  # commits whose newest complete clean run was seen
    for run_id, status, commit, dirty, extra, *owner in rows:
        if status == STATUS_RUNNING and not _still_running(conn, run_id, owner):
            status = STATUS_INCOMPLETE  # its writers are gone: an interrupted run
        confirmation = _origin(extra) == ORIGIN_CONFIRMATION
        newest_of_commit = (
            not confirmation
            and status == STATUS_COMPLETE
            and commit is not None
            and not dirty
            and commit not in stands_for
        )
        if newest_of_commit:
            stands_for.add(commit)
        if status == STATUS_RUNNING or run_id in held:
            counted += not confirmation
            continue
        if confirmation:
            out.append(str(run_id))
            continue
        counted += 1
        if counted > cap and not newest_of_commit:
            out.append(str(run_id))
    return out


def _still_running(conn: sqlite3.Connection, run_id: object, owner: list[object]) -> bool:
    """Whether a run marked running has a writer that may still write (the process that
    began it, or a worker that has not left it)."""
    if process_alive(*owner):
        return True
    return any(
        process_alive(pid, host, token)
        for pid, host, token in conn.execute(
            "SELECT pid, host, token FROM workers WHERE run_id = ? AND left_at IS NULL",
            (run_id,),
        )
    )


def _origin(extra: object) -> str | None:
    try:
        value = json.loads(extra) if isinstance(extra, str) else None
    except ValueError:
        return None
    origin = value.get("origin") if isinstance(value, dict) else None
    return origin if isinstance(origin, str) else None


def live_holds(conn: sqlite3.Connection) -> set[str]:
    """The runs held by a diff whose process still lives."""
    held: set[str] = set()
    for run_id, pid, host, token in conn.execute("SELECT run_id, pid, host, token FROM holds"):
        if process_alive(pid, host, token):
            held.add(str(run_id))
    return held


def hold_runs(conn: sqlite3.Connection, holder: str, run_ids: Iterable[str]) -> None:
    """``holder`` (a diff, this process) uses ``run_ids``: no cap removes them while it
    lives."""
    pid = _getpid()
    host, token = _uname().nodename, process_token(pid)
    conn.executemany(
        "INSERT OR REPLACE INTO holds (holder, run_id, pid, host, token) VALUES (?, ?, ?, ?, ?)",
        [(holder, run_id, pid, host, token) for run_id in run_ids],
    )


def release_holds(conn: sqlite3.Connection, holder: str) -> None:
    """``holder`` is over; holds of processes that are gone are dropped too."""
    conn.execute("DELETE FROM holds WHERE holder = ?", (holder,))
    gone = [
        (str(other), str(run_id))
        for other, run_id, pid, host, token in conn.execute(
            "SELECT holder, run_id, pid, host, token FROM holds"
        )
        if not process_alive(pid, host, token)
    ]
    conn.executemany("DELETE FROM holds WHERE holder = ? AND run_id = ?", gone)


def said_removals(conn: sqlite3.Connection, run_ids: list[str]) -> list[str]:
    """The runs among ``run_ids`` (before they are deleted) that a notice of the cap names:
    not the confirmation runs of diffs that are over, which were that diff's own evidence and
    went when it had reported (said after every diff, that line was mostly noise)."""
    out = []
    for run_id in run_ids:
        row = conn.execute("SELECT extra FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None or _origin(row[0]) != ORIGIN_CONFIRMATION:
            out.append(run_id)
    return out


def cap_notice(cap: int, removed: list[str]) -> str:
    """What is said when the cap removed runs (by the recorder, or as a diff's note)."""
    which = removed[0] if len(removed) == 1 else f"{removed[-1]} to {removed[0]}"
    return (
        f"removed {len(removed)} older run{'s' if len(removed) != 1 else ''} ({which}): the "
        f"store keeps its {cap} newest runs and the newest complete run of each commit; "
        "`diffgenome prune --cap N` changes that (0: keep all)"
    )


def delete_runs(conn: sqlite3.Connection, run_ids: list[str]) -> None:
    """Remove runs with their tests, symbols and workers (the caller holds a transaction)."""
    for run_id in run_ids:
        for table, column in (
            ("tests", "run_id"),
            ("symbols", "run_id"),
            ("workers", "run_id"),
            ("holds", "run_id"),
            ("runs", "id"),
        ):
            conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (run_id,))
    if run_ids:
        drop_unreferenced_genomes(conn)


def compact(conn: sqlite3.Connection, *, at_least: float = 0.0) -> bool:
    """Give the space of removed runs back to the file system (the store file shrinks);
    only when at least the fraction ``at_least`` of the file is free (a ``VACUUM`` rewrites
    the whole file). True when it ran."""
    if at_least > 0:
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        if not pages or free / pages < at_least:
            return False
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return True
