"""The store writer: what the pytest plugin (and each xdist worker) calls to persist a run.

Standard library only, because it runs inside the user's test process. The os functions it
needs are bound at import time, so a test that patches ``os`` or ``builtins.open`` while a
batch is flushed cannot redirect or break the write. Paths are joined as plain strings for
the same reason. Every failure surfaces as ``StoreError`` with a one-line message; the plugin
decides how to report it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib
from contextlib import suppress
from os import O_CREAT, O_EXCL, O_RDONLY, O_WRONLY
from os import close as _close
from os import fsync as _fsync
from os import getpid as _getpid
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
from types import TracebackType
from typing import Self

from diffgenome.protocol.formats import STORE_FORMAT, FormatError, check_format
from diffgenome.protocol.store import (
    BUSY_TIMEOUT_S,
    DB_FILE,
    DDL,
    FORMAT_ROW,
    KEY_BYTES,
    KEY_FILE,
    KEY_MIN_BYTES,
    META_FORMAT_KEY,
    RUN_COLUMNS,
    STATUS_COMPLETE,
    STATUS_INCOMPLETE,
    STATUS_RUNNING,
    TEST_COLUMNS,
    StoreError,
    fingerprint_key,
    header_problem,
    process_token,
)

__all__ = ["StoreError", "StoreWriter", "process_token"]

_GITIGNORE = "# created by diffgenome: the store and its key stay out of git\n*\n"


def _join(folder: str, name: str) -> str:
    return folder if not folder else folder.rstrip(_sep) + _sep + name


# ``json.dumps`` with options builds a new encoder per call; one bound at import time gives
# the same text (and is out of reach of tests that patch ``json``).
_canonical_text = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode

# Level 3 deflates a test's phases two to three times faster than the default 6 for about
# a tenth more bytes; it runs once per test, in the user's test process.
_PHASES_ZLIB_LEVEL = 3


def _canonical(value: object) -> str:
    return _canonical_text(value)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _now() -> str:
    return _strftime("%Y-%m-%dT%H:%M:%SZ", _gmtime())


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


def _host() -> str:
    return _uname().nodename


def _load_key(path: str, given: bool) -> bytes:
    try:
        key = _read_file(path)
    except FileNotFoundError:
        if not given:
            raise
        raise StoreError(
            f"the key file {path} does not exist; pass an existing key file "
            f"(at least {KEY_MIN_BYTES} random bytes)"
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
    path = _join(folder, KEY_FILE)
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


class StoreWriter:
    """One process's connection to the store.

    Every public method is one short ``BEGIN IMMEDIATE`` transaction: writers queue on the
    SQLite lock (up to ``BUSY_TIMEOUT_S``) instead of failing, and a crash mid-batch leaves
    either the whole batch or none of it.
    """

    key: bytes
    key_fingerprint: str
    path: str
    db_path: str

    def __init__(self, path: str, db_path: str, conn: sqlite3.Connection, key: bytes) -> None:
        self.path = path
        self.db_path = db_path
        self.key = key
        self.key_fingerprint = fingerprint_key(key)
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.Lock()

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str, key_file: str | None = None) -> StoreWriter:
        """Open (creating if needed) the store folder ``path`` and its database and key."""
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
        db_path = _join(folder, DB_FILE)
        conn = _connect(db_path, folder)
        try:
            if key is None:
                key = _store_key(folder)
            _write_gitignore(folder)
        except BaseException:
            conn.close()
            raise
        return cls(folder, db_path, conn, key)

    # -- the run lifecycle -----------------------------------------------------------------

    def begin_run(self, run: dict[str, object]) -> None:
        """Record a new run, status "running"; the caller's process is its first owner."""
        run_id = _require_str(run, "id", "run")
        with self._tx("begin run " + run_id) as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
                raise StoreError(
                    f"run {run_id} already exists in the store; start runs with a new id"
                )
            conn.execute(
                "INSERT INTO runs (id, started_at, commit_sha, dirty, python, platform, status,"
                " config, selection, collectors, key_fingerprint, tool, recording_key, extra,"
                " owner_pid, owner_host, owner_token)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self._run_row(run_id, run),
            )

    def _run_row(self, run_id: str, run: dict[str, object]) -> tuple[object, ...]:
        config = run.get("config")
        config = config if isinstance(config, dict) else {}
        recording_key = config.get("recording_key")
        extra = {k: v for k, v in run.items() if k not in RUN_COLUMNS and k != "status"}
        dirty = run.get("dirty")
        pid = _getpid()
        return (
            run_id,
            _text(run.get("started_at")) or _now(),
            _text(run.get("commit")),
            None if dirty is None else int(bool(dirty)),
            _text(run.get("python")) or "",
            _text(run.get("platform")) or "",
            STATUS_RUNNING,
            _canonical(config),
            _canonical(_seq(run.get("selection"))),
            _canonical(_seq(run.get("collectors"))),
            _text(run.get("key_fingerprint") or self.key_fingerprint),
            _text(run.get("tool")),
            recording_key if isinstance(recording_key, str) else None,
            _canonical(extra),
            pid,
            _host(),
            process_token(pid),
        )

    def join_run(self, run_id: str, worker: str) -> None:
        """Declare this process a writer of the run; the run is whole only once it leaves ok."""
        pid = _getpid()
        with self._tx(f"join run {run_id}") as conn:
            self._open_run(conn, run_id)
            conn.execute(
                "INSERT OR REPLACE INTO workers (run_id, worker, pid, host, token, joined_at,"
                " left_at, ok, reasons) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, '[]')",
                (run_id, worker, pid, _host(), process_token(pid), _now()),
            )

    def add_symbols(self, run_id: str, symbols: list[dict[str, object]]) -> None:
        with self._tx(f"add symbols to run {run_id}") as conn:
            rows = [(run_id, _require_str(s, "id", "symbol"), _canonical(s)) for s in symbols]
            self._open_run(conn, run_id)
            conn.executemany(
                "INSERT INTO symbols (run_id, id, doc) VALUES (?, ?, ?)"
                " ON CONFLICT (run_id, id) DO UPDATE SET doc = excluded.doc",
                rows,
            )

    def add_tests(self, run_id: str, worker: str, tests: list[dict[str, object]]) -> None:
        """Store one batch of test records; a test id seen before in the run is replaced."""
        with self._tx(f"add tests to run {run_id}") as conn:
            rows = [_test_row(run_id, worker, test) for test in tests]
            self._open_run(conn, run_id)
            conn.executemany(
                "INSERT OR REPLACE INTO tests (run_id, id, worker, outcome, verified,"
                " unverified_reasons, extra, phases) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def leave_run(self, run_id: str, worker: str, ok: bool, reasons: list[str]) -> None:
        pid = _getpid()
        now = _now()
        with self._tx(f"leave run {run_id}") as conn:
            self._open_run(conn, run_id)
            conn.execute(
                "INSERT INTO workers (run_id, worker, pid, host, token, joined_at, left_at, ok,"
                " reasons) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?)"
                " ON CONFLICT (run_id, worker) DO UPDATE SET left_at = excluded.left_at,"
                " ok = excluded.ok, reasons = excluded.reasons",
                (
                    run_id,
                    worker,
                    pid,
                    _host(),
                    process_token(pid),
                    now,
                    int(ok),
                    _canonical(reasons),
                ),
            )

    def finish_run(self, run_id: str, complete: bool, reasons: list[str], finished_at: str) -> None:
        """Close the run: "complete" only when the caller says so and every worker left ok."""
        with self._tx(f"finish run {run_id}") as conn:
            self._open_run(conn, run_id)
            why = [str(r) for r in reasons]
            if not complete and not why:
                why.append("the recorder reported the run as incomplete")
            for worker, left_at, ok, worker_reasons in conn.execute(
                "SELECT worker, left_at, ok, reasons FROM workers WHERE run_id = ? ORDER BY worker",
                (run_id,),
            ):
                if left_at is None:
                    why.append(f"worker {worker} did not finish")
                elif not ok:
                    detail = "; ".join(_json_list(worker_reasons))
                    why.append(f"worker {worker} failed" + (f": {detail}" if detail else ""))
            whole = complete and len(why) == len(reasons)
            conn.execute(
                "UPDATE runs SET status = ?, reasons = ?, finished_at = ? WHERE id = ?",
                (
                    STATUS_COMPLETE if whole else STATUS_INCOMPLETE,
                    _canonical([] if whole else why),
                    finished_at,
                    run_id,
                ),
            )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                finally:
                    self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _open_run(self, conn: sqlite3.Connection, run_id: str) -> None:
        row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"run {run_id} is not in the store; call begin_run first")
        if row[0] != STATUS_RUNNING:
            raise StoreError(f"run {run_id} is already finished ({row[0]}); start a new run")

    def _tx(self, what: str) -> _Transaction:
        if self._conn is None:
            raise StoreError(f"cannot {what}: the store writer is closed; open a new one")
        return _Transaction(self._conn, self._lock, what, self.db_path)


class _Transaction:
    def __init__(
        self, conn: sqlite3.Connection, lock: threading.Lock, what: str, db_path: str
    ) -> None:
        self._conn, self._lock, self._what, self._db = conn, lock, what, db_path

    def __enter__(self) -> sqlite3.Connection:
        self._lock.acquire()
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self._lock.release()
            raise _sql_error(exc, self._what, self._db) from None
        return self._conn

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                try:
                    self._conn.execute("COMMIT")
                except sqlite3.Error as err:
                    self._conn.execute("ROLLBACK")
                    raise _sql_error(err, self._what, self._db) from None
            else:
                self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _sql_error(exc, self._what, self._db) from None
                if isinstance(exc, (TypeError, ValueError)) and not isinstance(exc, StoreError):
                    raise StoreError(
                        f"cannot {self._what}: {_one_line(exc)}; "
                        "pass JSON-compatible genome/1 objects"
                    ) from None
        finally:
            self._lock.release()


def _sql_error(exc: sqlite3.Error, what: str, db_path: str) -> StoreError:
    text = _one_line(exc)
    if "locked" in text or "busy" in text:
        hint = f"another process held the store longer than {BUSY_TIMEOUT_S:.0f} s; retry later"
    elif "readonly" in text or "read-only" in text or "unable to open" in text:
        hint = "make the store folder and its files writable"
    elif "full" in text:
        hint = "free disk space"
    else:
        hint = "move the damaged store away and record again"
    return StoreError(f"cannot {what} in {db_path}: {text}; {hint}")


def _connect(db_path: str, folder: str) -> sqlite3.Connection:
    """Connect, refuse foreign or damaged files before writing a byte, then create the layout."""
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
        raise _sql_error(exc, "open the store", db_path) from None
    try:
        _initialise(conn, db_path)
    except BaseException:
        conn.close()
        raise
    return conn


def _initialise(conn: sqlite3.Connection, db_path: str) -> None:
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
            conn.execute("COMMIT")
            _check_existing(conn, db_path)
            return
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise _sql_error(exc, "open the store", db_path) from None
            if _monotonic() > deadline:
                raise _sql_error(exc, "open the store", db_path) from None
            _sleep(0.05)
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _sql_error(exc, "open the store", db_path) from None
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
        check_format(row[0], STORE_FORMAT)
    except FormatError as exc:
        raise StoreError(f"{db_path}: {exc}") from None


def _write_gitignore(folder: str) -> None:
    try:
        fd = _open(_join(folder, ".gitignore"), O_WRONLY | O_CREAT | O_EXCL, 0o644)
    except OSError:
        return
    try:
        _write(fd, _GITIGNORE.encode())
    finally:
        _close(fd)


def _test_row(run_id: str, worker: str, test: dict[str, object]) -> tuple[object, ...]:
    test_id = _require_str(test, "id", "test")
    extra = {k: v for k, v in test.items() if k not in TEST_COLUMNS}
    return (
        run_id,
        test_id,
        worker,
        _text(test.get("outcome")) or "error",
        int(bool(test.get("verified"))),
        _canonical(_seq(test.get("unverified_reasons"))),
        _canonical(extra),
        zlib.compress(_canonical(test.get("phases") or {}).encode(), _PHASES_ZLIB_LEVEL),
    )


def _require_str(obj: dict[str, object], field: str, what: str) -> str:
    value = obj.get(field) if isinstance(obj, dict) else None
    if not isinstance(value, str) or not value:
        raise StoreError(f"a {what} object has no string {field!r}; pass genome/1 {what} objects")
    return value


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _seq(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _json_list(text: object) -> list[str]:
    try:
        value = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []
