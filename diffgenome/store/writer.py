"""The store writer: what the pytest plugin (and each xdist worker) calls to persist a run.

Standard library only, because it runs inside the user's test process. The os functions it
needs are bound at import time, so a test that patches ``os`` or ``builtins.open`` while a
test is written cannot redirect or break the write; creating the folder, the key and the
layout is :func:`diffgenome.store.layout.open_store`'s, bound the same way. Every failure
surfaces as ``StoreError`` with a one-line message; the plugin decides how to report it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from os import getpid as _getpid
from os import uname as _uname
from types import TracebackType
from typing import Self

from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.runs import (
    STATUS_COMPLETE,
    STATUS_INCOMPLETE,
    STATUS_RUNNING,
    process_token,
    run_genome_format,
)
from diffgenome.protocol.selection import SHARED_NODE_ID
from diffgenome.protocol.vocab import IMPORT_TEST_ID, REASON_NOT_STORABLE
from diffgenome.store.addresses import PHASE_ZLIB_LEVEL, PhaseRows, canonical_json
from diffgenome.store.compact import confirm_predicates, tests_predicates
from diffgenome.store.descriptors import (
    Held,
    keep_open,
    numbers_naming,
    release,
    store_descriptors,
)
from diffgenome.store.key import key_fingerprint
from diffgenome.store.layout import (
    DB_FILE,
    one_line,
    open_store,
    release_reserve,
    sql_error,
)
from diffgenome.store.manifests import TESTS, holder, share_rows
from diffgenome.store.paths import store_file
from diffgenome.store.retention import (
    compact,
    delete_runs,
    keep_runs,
    release_free_pages,
    runs_over_cap,
    said_removals,
)
from diffgenome.store.rows import (
    Owner,
    insert_rows,
    insert_run,
    insert_symbols,
    join_worker,
    leave_worker,
    now,
    require_str,
    test_phases,
    test_row,
)

__all__ = ["ForkedCopy", "StoreError", "StoreWriter", "process_token"]


class ForkedCopy(StoreError):
    """This process is a copy of the recording process (``os.fork()`` in a test) that went
    on with the session. SQLite connections must not cross a fork, and the run is the
    recording process's: the copy writes nothing at all."""

    @classmethod
    def of(cls, pid: int, owner: int) -> ForkedCopy:
        """What the copy ``pid`` of the recording process ``owner`` says, once."""
        return cls(
            f"this process (pid {pid}) is a copy of the recording process {owner} made by "
            "os.fork() in a test, and it went on with the session: it records nothing; the "
            "recording process keeps the run"
        )


# Addresses a writer remembers having stored (about 100 bytes each): past this, it starts
# over, and a body it forgot is only compressed and offered to the store once more.
_STORED_LIMIT = 50_000
#: Site predicates this writer knows the store holds (store/compact.py), at most.
_SITES_LIMIT = 100_000


def _canonical(value: object) -> str:
    return canonical_json(value)


def _owner() -> Owner:
    """This process, as the store names a writer."""
    pid = _getpid()
    return pid, _uname().nodename, process_token(pid)


class StoreWriter:
    """One process's connection to the store.

    Every public method is one short ``BEGIN IMMEDIATE`` transaction: writers queue on the
    SQLite lock (up to ``BUSY_TIMEOUT_S``) instead of failing, and a crash mid-batch leaves
    either the whole batch or none of it. Before each one the writer checks that the
    descriptors its connection holds are still the store's files (``descriptors.py``): a test
    that closed or replaced them gets its own files left alone, and the writer a new
    connection.
    """

    key: bytes
    key_fingerprint: str
    path: str
    db_path: str

    def __init__(
        self,
        path: str,
        db_path: str,
        conn: sqlite3.Connection,
        key: bytes,
        upgraded: int = 0,
        key_file: str | None = None,
        held: Held | None = None,
    ) -> None:
        self.path = path
        self.db_path = db_path
        self.key = key
        self._key_file = key_file
        self._owner = _getpid()
        self._held = held if held is not None else store_descriptors(db_path)
        #: What a test did to the writer's descriptors, to be said once by the caller
        #: (the writer has no terminal of its own); the caller empties it.
        self.notices: list[str] = []
        #: How many times the connection was given up because its descriptors were taken.
        self.reopened = 0
        #: Test records stored without their phases: a value the store could not encode.
        self.unstorable = 0
        #: Test rows rewritten from the store/1 layout when this writer opened the store.
        self.upgraded = upgraded
        self.key_fingerprint = key_fingerprint(key)
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.Lock()
        # Phase bodies this writer has committed to its run, by address (their compressed
        # sizes): a later test with the same setup or teardown only names them. Bodies a
        # run's tests name are never removed while it runs (runs_over_cap).
        self._stored: dict[str, int] = {}
        self._sites: dict[str, str] = {}
        self._stored_run: str | None = None
        # The genome format and key fingerprint of the run this writer writes (``_open_run``).
        self._addressing: dict[str, tuple[str, str | None]] = {}
        #: zlib's level for new phase bodies: the test process's cheap one by default; the
        #: writer process, off the tests' path, packs harder (any level reads back alike).
        self.compress_level = PHASE_ZLIB_LEVEL

    @property
    def key_file(self) -> str | None:
        """The key file the store was opened with (None: the store folder's own)."""
        return self._key_file

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str, key_file: str | None = None) -> StoreWriter:
        """Open (creating if needed) the store folder ``path`` and its database and key."""
        before = numbers_naming(store_file(path.rstrip("/") or "/", DB_FILE))
        opened = open_store(path, key_file)
        held = store_descriptors(opened.db_path, before)
        return cls(
            opened.folder, opened.db_path, opened.conn, opened.key, opened.upgraded, key_file, held
        )

    # -- the run lifecycle -----------------------------------------------------------------

    def begin_run(self, run: dict[str, object]) -> None:
        """Record a new run, status "running"; the caller's process is its first owner."""
        run_id = require_str(run, "id", "run")
        with self._tx("begin run " + run_id) as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
                raise StoreError(
                    f"run {run_id} already exists in the store; start runs with a new id"
                )
            insert_run(
                conn,
                run_id,
                run,
                status=STATUS_RUNNING,
                collectors=run.get("collectors"),
                key_fingerprint=self.key_fingerprint,
                owner=_owner(),
            )

    def join_run(self, run_id: str, worker: str) -> None:
        """Declare this process a writer of the run; the run is whole only once it leaves ok."""
        with self._tx(f"join run {run_id}") as conn:
            self._open_run(conn, run_id)
            join_worker(conn, run_id, worker, joined_at=now(), owner=_owner())

    def add_symbols(self, run_id: str, symbols: list[dict[str, object]]) -> None:
        with self._tx(f"add symbols to run {run_id}") as conn:
            self._open_run(conn, run_id)
            insert_symbols(conn, run_id, symbols)

    def add_tests(self, run_id: str, worker: str, tests: list[dict[str, object]]) -> None:
        """Store one batch of test records; a test id seen before in the run is replaced.

        A record with a value the store cannot encode (what no escape makes storable,
        protocol/jsontext.py) is stored without its phases, unverified with the reason, and
        counted in :attr:`unstorable`: one value costs its test, never the batch or the run.
        """
        if self._stored_run != run_id or len(self._stored) > _STORED_LIMIT:
            self._stored, self._stored_run = {}, run_id
        known = self._stored
        sites = self._sites
        try:
            wanted = tests_predicates(tests)
        except (TypeError, ValueError, AttributeError):
            wanted = {}
        with self._tx(f"add tests to run {run_id}") as conn:
            genome_format, fingerprint = self._open_run(conn, run_id)
            level = self.compress_level
            confirmed = confirm_predicates(conn, wanted, sites)
            predicates = {**sites, **confirmed} if confirmed else sites
            stored: list[PhaseRows] = []
            rows: list[tuple[object, ...]] = []
            for test in tests:
                try:
                    phases = test_phases(test, genome_format, fingerprint, known, level, predicates)
                    row = test_row(run_id, worker, test, phases)
                except (TypeError, ValueError, RecursionError, OverflowError) as exc:
                    if isinstance(exc, StoreError):
                        raise
                    phases, row = self._unstorable(run_id, worker, test, exc, genome_format)
                stored.append(phases)
                rows.append(row)
            insert_rows(conn, stored, rows)
        # Only once committed: a body known but not stored would leave a test naming nothing,
        # and a predicate left out of a body but not stored would leave it unreadable.
        for phases in stored:
            for address, body, _ in phases.bodies:
                known[address] = len(body)
        if len(sites) > _SITES_LIMIT:
            sites.clear()
        sites.update(confirmed)

    def _unstorable(
        self,
        run_id: str,
        worker: str,
        test: dict[str, object],
        exc: BaseException,
        genome_format: str,
    ) -> tuple[PhaseRows, tuple[object, ...]]:
        """The row of a record the store could not encode: its id and outcome, unverified
        with the reason, no phases (a diff reports it unverified, never unchanged)."""
        said = test.get("unverified_reasons")
        reasons = [r for r in said if isinstance(r, str)] if isinstance(said, list) else []
        reasons.append(f"{REASON_NOT_STORABLE}:{type(exc).__name__}")
        plain: dict[str, object] = {
            "id": test.get("id"),
            "outcome": str(test.get("outcome") or "error"),
            "verified": False,
            "unverified_reasons": reasons,
        }
        self.unstorable += 1
        phases = PhaseRows(canonical_json({}), 0, [])
        return phases, test_row(run_id, worker, plain, phases)

    def leave_run(self, run_id: str, worker: str, ok: bool, reasons: list[str]) -> None:
        with self._tx(f"leave run {run_id}") as conn:
            self._open_run(conn, run_id)
            leave_worker(
                conn, run_id, worker, left_at=now(), ok=ok, reasons=reasons, owner=_owner()
            )

    def finish_run(
        self, run_id: str, complete: bool, reasons: list[str], finished_at: str
    ) -> list[str]:
        """Close the run: "complete" only when the caller says so and every worker left ok.
        Why it was closed incomplete, empty when complete (a worker that crashed makes it
        incomplete even when the session itself ended well)."""
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
                    said = _json_list(worker_reasons)
                    if said and all(reason in why for reason in said):
                        continue  # this process's own words, already the run's
                    detail = "; ".join(said)
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
            if any(share_rows(conn, run_id)):
                # The rows it gave up were pages the next recording would reuse; at rest,
                # the store holds them once (ten runs of one commit, docs/performance.md).
                release_free_pages(conn)
        return [] if whole else why

    def tally(self, run_id: str) -> tuple[int, int, str | None, int, int, int]:
        """The run's tests (``<import>`` aside), how many are unverified, the reason most
        of those give with the number that give it, how many records (``<import>``
        included) the store could not encode whole (whichever process wrote them), and how
        many tests share their node id with others (``<node id>#1``: their ids are places)."""
        tests = unverified = unstorable = shared = 0
        reasons: dict[str, int] = {}
        with self._tx(f"count the tests of run {run_id}") as conn:
            for test_id, verified, why, sharing in conn.execute(
                "SELECT id, verified, unverified_reasons, instr(extra, ?) > 0 FROM tests "
                "WHERE run_id = ?",
                (f'"{SHARED_NODE_ID}:', holder(conn, run_id, TESTS)),
            ):
                if not verified and f'"{REASON_NOT_STORABLE}:' in str(why):
                    unstorable += 1
                if test_id == IMPORT_TEST_ID:
                    continue
                tests += 1
                shared += bool(sharing)
                if not verified:
                    unverified += 1
                    for reason in set(_json_list(why)):
                        reasons[reason] = reasons.get(reason, 0) + 1
        if not reasons:
            return tests, unverified, None, 0, unstorable, shared
        top = min(reasons, key=lambda reason: (-reasons[reason], reason))
        return tests, unverified, top, reasons[top], unstorable, shared

    def apply_cap(self) -> tuple[int, list[str], list[str]]:
        """Remove what the store's cap removes (``store.retention.runs_over_cap``: confirmation
        runs of diffs that are over first, then runs beyond the cap, never one a live diff
        holds nor the newest complete run of a commit) and give their space back; the cap, the
        ids removed, and those of them a notice names (``said_removals``). A session recorded
        for ``diffgenome diff`` does not call this: the diff applies the cap once, at its
        end."""
        with self._tx("remove runs beyond the store's cap") as conn:
            cap = keep_runs(conn)
            removed = runs_over_cap(conn, cap)
            said = said_removals(conn, removed)
            delete_runs(conn, removed)
        if removed:
            with self._lock:
                if self._conn is not None:
                    with contextlib.suppress(sqlite3.Error):  # busy: the space comes back later
                        # The file shrinks once a quarter of it is free: not a whole rewrite
                        # at the end of every session.
                        compact(self._conn, at_least=0.25)
        return cap, removed, said

    def make_room(self) -> bool:
        """Before the last words of a failed store: give back the space the store kept in
        reserve, so that the few pages that say why the run stopped still fit on a full disk,
        and wait at most a second for a lock (these words are worth trying, not waiting
        for); True when there was a reserve."""
        if _getpid() != self._owner:
            return False
        with self._lock:
            conn = self._conn
            if conn is not None and self._held.intact():
                _rollback(conn)
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA busy_timeout = 1000")
        return release_reserve(self.path)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                if _getpid() != self._owner:
                    keep_open(conn)  # closing a connection a fork copied is a write
                elif self._held.intact():
                    conn.close()
                else:
                    release(conn, self._held)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _open_run(self, conn: sqlite3.Connection, run_id: str) -> tuple[str, str | None]:
        """Check that ``run_id`` is open for writing; the genome format and key fingerprint
        its phase bodies are addressed under (as a reader will find them in its run row)."""
        known = self._addressing.get(run_id)
        if known is not None:
            # A run row's config and key fingerprint never change once written: only its
            # status is read again (once per test, parsing the config was a tenth of the
            # write on a suite of tiny tests).
            row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        else:
            row = conn.execute(
                "SELECT status, config, key_fingerprint FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
        if row is None:
            raise StoreError(f"run {run_id} is not in the store; call begin_run first")
        if row[0] != STATUS_RUNNING:
            raise StoreError(f"run {run_id} is already finished ({row[0]}); start a new run")
        if known is None:
            known = run_genome_format(row[1]), None if row[2] is None else str(row[2])
            self._addressing = {run_id: known}
        return known

    def _tx(self, what: str) -> _Transaction:
        if self._conn is None:
            raise StoreError(f"cannot {what}: the store writer is closed; open a new one")
        return _Transaction(self, what)

    def _own_connection(self, what: str) -> sqlite3.Connection:
        """The connection, once its descriptors are known to be the store's (under the lock).

        A connection whose numbers were closed, reused or replaced by a test is given up
        without a byte written through it, and the store is opened again.
        """
        conn = self._conn
        if conn is None:
            raise StoreError(f"cannot {what}: the store writer is closed; open a new one")
        pid = _getpid()
        if pid != self._owner:
            raise ForkedCopy.of(pid, self._owner)
        if self._held.intact():
            return conn
        taken = ", ".join(str(fd) for fd in self._held.taken())
        self._conn = None
        released = release(conn, self._held)
        before = numbers_naming(self.db_path)
        try:
            opened = open_store(self.path, self._key_file)
        except StoreError as exc:
            raise StoreError(
                f"cannot {what}: a test closed or replaced the store's file descriptors "
                f"({taken}) and the store could not be opened again: {exc}"
            ) from None
        if opened.key != self.key:
            opened.conn.close()
            raise StoreError(
                f"cannot {what}: the store's digest key changed while the run was recorded; "
                "record again"
            )
        self._conn = opened.conn
        self._held = store_descriptors(opened.db_path, before)
        self.reopened += 1
        self.notices.append(
            f"a test closed or replaced the file descriptors of the store ({taken}); nothing "
            "was written through them, the store was opened again"
            + ("" if released else " (the old connection is kept open, unused)")
        )
        return opened.conn


class _Transaction:
    def __init__(self, writer: StoreWriter, what: str) -> None:
        self._writer, self._what, self._db = writer, what, writer.db_path
        self._lock = writer._lock
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        self._lock.acquire()
        try:
            conn = self._conn = self._writer._own_connection(self._what)
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self._lock.release()
            raise sql_error(exc, self._what, self._db) from None
        except BaseException:
            self._lock.release()
            raise
        return conn

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        conn = self._conn
        assert conn is not None
        try:
            if kind is None:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as err:
                    _rollback(conn)
                    raise sql_error(err, self._what, self._db) from None
            else:
                _rollback(conn)
                if isinstance(exc, sqlite3.Error):
                    raise sql_error(exc, self._what, self._db) from None
                if isinstance(exc, (TypeError, ValueError)) and not isinstance(exc, StoreError):
                    raise StoreError(
                        f"cannot {self._what}: {one_line(exc)}; pass JSON-compatible genome objects"
                    ) from None
        finally:
            self._lock.release()


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back what is still open. SQLite rolls a transaction back by itself on some
    errors (a full disk, an I/O error), and a ``ROLLBACK`` after that fails with "no
    transaction is active", which would replace the cause the user needs to hear."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _json_list(text: object) -> list[str]:
    try:
        value = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []
