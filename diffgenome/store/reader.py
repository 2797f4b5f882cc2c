"""The store reader: turns what the writers left in SQLite back into genome documents.

It opens the database read-only and never changes it, so it is safe to point at a store that
is being recorded into, at a copy, or at something that is not a store at all. Whatever is
wrong with the file becomes a one-line ``StoreError``. A run is read as complete only when
its recorder said so in ``finish_run``; a run still marked running whose writer processes
are all gone is reported as interrupted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import stat
import threading
import zlib
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Self
from urllib.parse import quote

from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.formats import (
    FormatError,
    check_store_format,
    genome_format_of,
)
from diffgenome.protocol.runs import (
    ORIGIN_CONFIRMATION,
    REASON_INTERRUPTED,
    STATUS_COMPLETE,
    STATUS_INCOMPLETE,
    STATUS_RUNNING,
    process_alive,
)
from diffgenome.protocol.selection import recorded_selection
from diffgenome.protocol.vocab import IMPORT_TEST_ID, PHASES, SYMBOL_PREFIX
from diffgenome.store.addresses import canonical_json, phase_address
from diffgenome.store.compact import expand_phase
from diffgenome.store.layout import (
    BUSY_TIMEOUT_S,
    DB_FILE,
    META_FORMAT_KEY,
    header_problem,
    one_line,
)
from diffgenome.store.manifests import SYMBOLS, TESTS, holder, holders_of

__all__ = [
    "RunSummary",
    "StoreError",
    "StoreHandle",
    "StoreReader",
    "TestSummary",
    "UnknownRunError",
    "stored_phases",
]

_HEX = frozenset("0123456789abcdef")
# What reading a damaged file can raise: SQLite's errors, and the decoding of a mangled text cell.
_READ_ERRORS = (sqlite3.Error, UnicodeDecodeError)
_MIN_COMMIT_PREFIX = 4

_RUN_SELECT = (
    "SELECT id, started_at, finished_at, commit_sha, dirty, python, platform, status, reasons,"
    " config, selection, collectors, key_fingerprint, tool, recording_key, extra,"
    " owner_pid, owner_host, owner_token FROM runs"
)


class UnknownRunError(StoreError):
    """Nothing in the store answers to the run spec (as opposed to a spec that is ambiguous)."""


@dataclass(frozen=True)
class RunSummary:
    """One line of the run list: enough to choose a run without loading its tests."""

    id: str
    started_at: str
    finished_at: str | None
    commit: str | None
    dirty: bool | None
    status: str
    reasons: tuple[str, ...]
    #: Its tests as pytest counts them: the ``<import>`` record is not one.
    tests: int
    python: str
    platform: str
    tool: str | None
    recording_key: str | None
    key_fingerprint: str | None = None
    #: The pytest arguments that chose its tests, output-only options left out.
    selection: tuple[str, ...] = ()
    #: ``pytest``, ``diff`` or ``confirmation``; None for a run recorded before runs said so.
    origin: str | None = None
    #: Bytes its tests and symbols take in the store.
    size: int = 0

    @property
    def complete(self) -> bool:
        return self.status == STATUS_COMPLETE


@dataclass(frozen=True)
class TestSummary:
    """A test's verdict without its genome, for listings that need not inflate phases."""

    __test__ = False  # not a pytest test class, despite the name

    id: str
    outcome: str
    verified: bool
    unverified_reasons: tuple[str, ...]


def is_recording(run: RunSummary) -> bool:
    """A recording of a selection in its own right: not a confirmation run, which holds
    only the few tests a diff recorded again (docs/diffing.md, "Confirmation")."""
    return run.origin != ORIGIN_CONFIRMATION


def latest(runs: Sequence[RunSummary]) -> RunSummary:
    """What ``latest`` (and a commit) names among ``runs`` (newest first): the newest
    complete recording, not a confirmation run; else the newest recording, whatever its
    state; else the newest run."""
    recordings = [run for run in runs if is_recording(run)]
    complete = [run for run in recordings if run.complete]
    return (complete or recordings or list(runs))[0]


class StoreReader:
    """Read-only access to one store; open with :meth:`open`."""

    path: str
    db_path: str

    def __init__(self, path: str, db_path: str, conn: sqlite3.Connection) -> None:
        self.path = path
        self.db_path = db_path
        self._conn = conn
        self._layout: tuple[str, bool, bool] | None = None
        self._predicates: dict[str, str] | None = None

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls, path: str, timeout: float = BUSY_TIMEOUT_S, *, header_checked: bool = False
    ) -> StoreReader:
        """Open the store folder ``path`` (or a ``genome.sqlite`` file directly) for reading.

        ``header_checked``: this process holds the store open for writing (which checked the
        file): its header is not read again through a descriptor of its own, whose closing
        would drop every POSIX lock this process holds on the file, the writer's included
        (SQLite's locks are per process; a recording in another process could then reset
        the write-ahead log under the writer, and the file is damaged)."""
        db_path = _locate(path)
        if not header_checked:
            _check_header(db_path)
        conn = _connect(db_path, timeout, immutable=False)
        try:
            _check_format(conn, db_path)
        except StoreError:
            conn.close()
            raise
        except _READ_ERRORS as exc:
            conn.close()
            if not _needs_immutable(exc, db_path):
                raise _sql_error(exc, db_path) from None
            # A read-only folder where no writer left the WAL index: nobody can be writing,
            # so the file can be read as it is.
            conn = _connect(db_path, timeout, immutable=True)
            try:
                _check_format(conn, db_path)
            except StoreError:
                conn.close()
                raise
            except _READ_ERRORS as err:
                conn.close()
                raise _sql_error(err, db_path) from None
        return cls(os.path.dirname(db_path) or ".", db_path, conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- runs ------------------------------------------------------------------------------

    def runs(self) -> list[RunSummary]:
        """All runs, newest first."""
        with self._snapshot():
            counts: dict[object, tuple[int, int]] = {
                run_id: (int(n), int(size or 0))
                for run_id, n, size in self._conn.execute(
                    "SELECT run_id, SUM(id != ?), SUM(LENGTH(phases) + LENGTH(extra) + LENGTH(id)"
                    f" + LENGTH(unverified_reasons){self._sizes()}) FROM tests GROUP BY run_id",
                    (IMPORT_TEST_ID,),
                )
            }
            symbols: dict[object, int] = {
                run_id: int(size or 0)
                for run_id, size in self._conn.execute(
                    "SELECT run_id, SUM(LENGTH(doc) + LENGTH(id)) FROM symbols GROUP BY run_id"
                )
            }
            holders = holders_of(self._conn)
            rows = self._conn.execute(
                _RUN_SELECT + " ORDER BY started_at DESC, rowid DESC"
            ).fetchall()
            out = []
            for row in rows:
                tests_in, symbols_in = holders.get(str(row[0]), (row[0], row[0]))
                tests, size = counts.get(tests_in, (0, 0))
                out.append(self._summary(row, tests, size + symbols.get(symbols_in, 0)))
            return out

    def resolve(self, spec: str) -> str:
        """A run id from an id, a unique id prefix, "latest", or a recorded commit (prefix)."""
        spec = spec.strip()
        runs = self.runs()
        if not runs:
            raise UnknownRunError(f"the store {self.path} has no runs; record one first")
        by_id = {run.id: run for run in runs}
        if spec in by_id:
            return spec
        if spec == "latest":
            return latest(runs).id
        candidates: dict[str, str] = {}
        for run in runs:
            if spec and run.id.startswith(spec):
                candidates.setdefault(run.id, f"run {run.id}")
        lowered = spec.lower()
        if len(lowered) >= _MIN_COMMIT_PREFIX and set(lowered) <= _HEX:
            commits = {r.commit for r in runs if r.commit and r.commit.lower().startswith(lowered)}
            if len(commits) > 1:
                raise StoreError(
                    f"{spec!r} matches several recorded commits ({_few(sorted(commits))}); "
                    "give more characters of the commit"
                )
            for commit in commits:
                newest = latest([r for r in runs if r.commit == commit])
                candidates.setdefault(newest.id, f"commit {commit[:12]} (run {newest.id})")
        if len(candidates) == 1:
            return next(iter(candidates))
        if not candidates:
            raise UnknownRunError(
                f"no run matches {spec!r} (not a run id, id prefix, 'latest' or recorded "
                "commit); list the runs with `diffgenome runs`"
            )
        raise StoreError(
            f"{spec!r} is ambiguous: it matches {_few(sorted(candidates.values()))}; "
            "give more characters"
        )

    def summary(self, run_id: str) -> RunSummary:
        with self._snapshot():
            row = self._run_row(run_id)
            (count,) = self._conn.execute(
                "SELECT COUNT(*) FROM tests WHERE run_id = ? AND id != ?",
                (holder(self._conn, run_id, TESTS), IMPORT_TEST_ID),
            ).fetchone()
            return self._summary(row, int(count))

    def find_recording(self, recording_key: str) -> str | None:
        """The newest complete run recorded under ``recording_key``, to reuse instead of
        recording the same commit, selection and configuration again."""
        for (run_id,) in self._query(
            "SELECT id FROM runs WHERE recording_key = ? AND status = ?"
            " ORDER BY started_at DESC, rowid DESC",
            (recording_key, STATUS_COMPLETE),
        ):
            return str(run_id)
        return None

    def key_fingerprint(self, run_id: str) -> str | None:
        with self._snapshot():
            value = self._run_row(run_id)[12]
        return None if value is None else str(value)

    # -- documents -------------------------------------------------------------------------

    def run(self, run_id: str) -> dict[str, object]:
        """The genome ``run`` object, with ``complete`` and reasons as the store sees them."""
        with self._snapshot():
            return self._run_object(self._run_row(run_id))

    def collectors(self, run_id: str) -> list[dict[str, object]]:
        with self._snapshot():
            row = self._run_row(run_id)
        return [c for c in _json(row[11], list, run_id, "collectors") if isinstance(c, dict)]

    def symbols(self, run_id: str) -> list[dict[str, object]]:
        with self._snapshot():
            self._run_row(run_id)
            return self._symbols(run_id)

    def test_ids(self, run_id: str) -> list[str]:
        with self._snapshot():
            self._run_row(run_id)
            rows = self._conn.execute(
                "SELECT id FROM tests WHERE run_id = ? ORDER BY id",
                (holder(self._conn, run_id, TESTS),),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def test_summaries(self, run_id: str) -> list[TestSummary]:
        with self._snapshot():
            self._run_row(run_id)
            rows = self._conn.execute(
                "SELECT id, outcome, verified, unverified_reasons FROM tests WHERE run_id = ?"
                " ORDER BY id",
                (holder(self._conn, run_id, TESTS),),
            ).fetchall()
        return [
            TestSummary(
                id=str(test_id),
                outcome=str(outcome),
                verified=bool(verified),
                unverified_reasons=tuple(
                    str(r) for r in _json(reasons, list, run_id, f"test {test_id!r}")
                ),
            )
            for test_id, outcome, verified, reasons in rows
        ]

    def tests(self, run_id: str, ids: Iterable[str] | None = None) -> list[dict[str, object]]:
        """genome test objects sorted by id; only ``ids`` when given (unknown ids skipped)."""
        with self._snapshot():
            self._run_row(run_id)
            return list(self._tests(run_id, None if ids is None else set(ids)))

    def same_genomes(self, run_a: str, run_b: str) -> frozenset[str]:
        """Ids of the tests whose every phase is the same stored genome in both runs (equal
        content addresses: byte for byte the same genome) and holds no stand-in.

        Such a test differs between the runs only in its test row (outcome, reasons,
        warnings), so a comparison that needs neither its stand-ins nor the code it ran need
        not read those genomes at all. Left out: the cases of a parametrized test whose case
        ids differ between the runs (a diff may pair them across ids)."""
        with self._snapshot():
            self._run_row(run_a)
            self._run_row(run_b)
            if not self.has_bodies() or not self._store_layout()[2]:
                return frozenset()
            cells = [
                dict(
                    self._conn.execute(
                        "SELECT id, phases FROM tests WHERE run_id = ?",
                        (holder(self._conn, run, TESTS),),
                    ).fetchall()
                )
                for run in (run_a, run_b)
            ]
            stand_ins = {
                str(row[0])
                for row in self._conn.execute("SELECT hash FROM genomes WHERE substitutions > 0")
            }
        # A diff pairs the cases of a parametrized test by their values when their ids moved
        # (document.pair_renumbered): a case may then be compared with another id's genome.
        cases: list[dict[str, set[str]]] = [{}, {}]
        for side, tests in zip(cases, cells, strict=True):
            for test_id in tests:
                function, bracket, _ = str(test_id).partition("[")
                if bracket:
                    side.setdefault(function, set()).add(str(test_id))
        moved = {f for f in cases[0].keys() | cases[1].keys() if cases[0].get(f) != cases[1].get(f)}
        same: set[str] = set()
        for test_id, cell in cells[0].items():
            if not isinstance(cell, str) or cells[1].get(test_id) != cell:
                continue
            if str(test_id).partition("[")[0] in moved:
                continue
            refs = _json(cell, dict, run_a, f"test {test_id!r}")
            if not stand_ins.intersection(str(a) for a in refs.values()):
                same.add(str(test_id))
        return frozenset(same)

    def mentioning(
        self, run_id: str, test_ids: Collection[str], strings: Collection[str]
    ) -> frozenset[str]:
        """Of ``test_ids``, the tests whose stored phases hold one of ``strings`` as a JSON
        string (a changed symbol), found in each body's bytes without decoding its JSON.

        Canonical JSON writes a string one way only, so a body without that encoding has no
        node, decision or fact that names it; a body holding it elsewhere (an argument name,
        a value's shape) is merely read for nothing. Every body looked at is still checked
        against its address. A test stored without phase bodies (store/1) is always named."""
        wanted = set(test_ids)
        if not wanted or not strings:
            return frozenset()
        match = _mentions(strings)
        found: set[str] = set()
        users: dict[str, set[str]] = {}
        with self._snapshot():
            row = self._run_row(run_id)
            fingerprint = None if row[12] is None else str(row[12])
            config = _json(row[9], dict, run_id, "config") if row[9] is not None else {}
            genome_format = genome_format_of(config)
            for test_id, cell in self._conn.execute(
                "SELECT id, phases FROM tests WHERE run_id = ?",
                (holder(self._conn, run_id, TESTS),),
            ):
                if test_id not in wanted:
                    continue
                if not isinstance(cell, str):
                    found.add(str(test_id))
                    continue
                refs = _json(cell, dict, run_id, f"test {test_id!r}")
                for address in refs.values():
                    users.setdefault(str(address), set()).add(str(test_id))
            addresses = sorted(users)
            for start in range(0, len(addresses), _BODY_QUERY_CHUNK):
                chunk = addresses[start : start + _BODY_QUERY_CHUNK]
                marks = ",".join("?" * len(chunk))
                seen: set[str] = set()
                for address, body in self._conn.execute(
                    f"SELECT hash, body FROM genomes WHERE hash IN ({marks})", chunk
                ):
                    seen.add(str(address))
                    text = _body_text(run_id, str(address), body, genome_format, fingerprint)
                    if match(text):
                        found.update(users[str(address)])
                for address in chunk:
                    if address not in seen:
                        tests = ", ".join(repr(t) for t in sorted(users[address])[:3])
                        raise _corrupt(
                            run_id, f"test {tests}", f"a phase ({address}) is not in the store"
                        )
        return frozenset(found)

    def header(self, run_id: str) -> dict[str, object]:
        """The run's document without ``tests``: what a caller needs before it knows which
        tests' genomes to read (the run, its collectors and symbols)."""
        with self._snapshot():
            return self._header(run_id)

    def document(self, run_id: str, unread: Collection[str] = ()) -> dict[str, object]:
        """The whole run as a ``diffgenome-genome`` document, read from one snapshot.

        ``unread``: test ids whose phases are not read (given as ``{}``): a caller that
        knows them equal to another run's (:meth:`same_genomes`) and needs nothing of them."""
        with self._snapshot():
            return {
                **self._header(run_id),
                "tests": list(self._tests(run_id, None, unread=frozenset(unread))),
            }

    # -- internals -------------------------------------------------------------------------

    def _query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return list(self._conn.execute(sql, params).fetchall())
        except _READ_ERRORS as exc:
            raise _sql_error(exc, self.db_path) from None

    def _sizes(self) -> str:
        """What to add to a test row's length for its phase bodies ("" in a store/1 file,
        which readers read as it is: only writers upgrade a store)."""
        return self._store_layout()[0]

    def site_predicate(self, site: str) -> str | None:
        """The predicate the store keeps for ``site`` (store/4: a stored body's decision
        records leave it out, store/compact.py), or None; the table is read once, and
        again when a site is not in it (a writer may have added it since)."""
        predicates = self._predicates
        if predicates is None or site not in predicates:
            try:
                rows = self._conn.execute("SELECT site, predicate FROM sites").fetchall()
            except sqlite3.OperationalError:  # before store/4: no table, no site left out
                rows = []
            except sqlite3.Error as exc:
                raise _sql_error(exc, self.db_path) from None
            predicates = self._predicates = {str(k): str(v) for k, v in rows}
        return predicates.get(site)

    def has_bodies(self) -> bool:
        """Whether the store has a ``genomes`` table (store/2)."""
        return self._store_layout()[1]

    def _store_layout(self) -> tuple[str, bool, bool]:
        """(what to add to a test row's length, whether there is a ``genomes`` table,
        whether it counts each body's stand-ins)."""
        if self._layout is None:
            try:
                columns = {row[1] for row in self._conn.execute("PRAGMA table_info(tests)")}
                counted = {row[1] for row in self._conn.execute("PRAGMA table_info(genomes)")} >= {
                    "substitutions"
                }
                tables = {
                    row[0]
                    for row in self._conn.execute(
                        "SELECT name FROM sqlite_master WHERE type='table'"
                    )
                }
            except _READ_ERRORS as exc:
                raise _sql_error(exc, self.db_path) from None
            self._layout = (
                " + phases_size" if "phases_size" in columns else "",
                "genomes" in tables,
                counted,
            )
        return self._layout

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(self._conn, self.db_path)

    def _run_row(self, run_id: str) -> tuple[object, ...]:
        row = self._conn.execute(_RUN_SELECT + " WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise UnknownRunError(
                f"no run {run_id!r} in {self.path}; list the runs with `diffgenome runs`"
            )
        return tuple(row)

    def _status(self, row: tuple[object, ...]) -> tuple[str, list[str]]:
        run_id, status = str(row[0]), row[7]
        reasons = [str(r) for r in _json(row[8], list, run_id, "reasons")]
        if status == STATUS_COMPLETE:
            return STATUS_COMPLETE, []
        if status != STATUS_RUNNING:
            return STATUS_INCOMPLETE, reasons or ["the recorder reported the run as incomplete"]
        writers = [(row[16], row[17], row[18])]
        missing: list[str] = []
        for worker, pid, host, token, left_at in self._conn.execute(
            "SELECT worker, pid, host, token, left_at FROM workers WHERE run_id = ?"
            " ORDER BY worker",
            (run_id,),
        ):
            if left_at is None:
                writers.append((pid, host, token))
                missing.append(f"worker {worker} did not finish")
        if any(_alive(pid, host, token) for pid, host, token in writers):
            return STATUS_RUNNING, ["running: the recording is still in progress"]
        return STATUS_INCOMPLETE, [REASON_INTERRUPTED, *missing]

    def _summary(self, row: tuple[object, ...], tests: int, size: int = 0) -> RunSummary:
        status, reasons = self._status(row)
        run_id = str(row[0])
        extra = _json(row[15], dict, run_id, "run fields")
        chosen = extra.get("recorded_selection")
        if not isinstance(chosen, list):  # a run recorded before runs said it
            chosen = recorded_selection([str(s) for s in _json(row[10], list, run_id, "selection")])
        origin = extra.get("origin")
        return RunSummary(
            id=str(row[0]),
            started_at=str(row[1]),
            finished_at=_opt_str(row[2]),
            commit=_opt_str(row[3]),
            dirty=None if row[4] is None else bool(row[4]),
            status=status,
            reasons=tuple(reasons),
            tests=tests,
            python=str(row[5]),
            platform=str(row[6]),
            tool=_opt_str(row[13]),
            recording_key=_opt_str(row[14]),
            key_fingerprint=_opt_str(row[12]),
            selection=tuple(str(arg) for arg in chosen),
            origin=origin if isinstance(origin, str) else None,
            size=size,
        )

    def _run_object(self, row: tuple[object, ...]) -> dict[str, object]:
        run_id = str(row[0])
        status, reasons = self._status(row)
        extra = _json(row[15], dict, run_id, "run fields")
        run: dict[str, object] = dict(extra)
        run.update(
            {
                "id": run_id,
                "commit": _opt_str(row[3]),
                "dirty": None if row[4] is None else bool(row[4]),
                "python": str(row[5]),
                "platform": str(row[6]),
                "started_at": str(row[1]),
                "finished_at": _opt_str(row[2]),
                "complete": status == STATUS_COMPLETE,
                "incomplete_reasons": reasons,
                "config": _json(row[9], dict, run_id, "config"),
                "selection": [str(s) for s in _json(row[10], list, run_id, "selection")],
                "key_fingerprint": _opt_str(row[12]),
                "tool": _opt_str(row[13]),
            }
        )
        return run

    def _symbols(self, run_id: str) -> list[dict[str, object]]:
        symbols = []
        for symbol_id, doc in self._conn.execute(
            "SELECT id, doc FROM symbols WHERE run_id = ? ORDER BY id",
            (holder(self._conn, run_id, SYMBOLS),),
        ):
            symbols.append(_json(doc, dict, run_id, f"symbol {symbol_id!r}"))
        return symbols

    def stream(self, run_id: str) -> Generator[dict[str, object]]:
        """The run's document in pieces, from one snapshot: first its header (the document
        without ``tests``), then each test sorted by id. Phases are decoded a few hundred
        tests at a time and not kept, so that exporting a large run needs the memory of a
        few tests, not of the run."""
        with self._snapshot():
            yield self._header(run_id)
            yield from self._tests(run_id, None, share=False)

    def _header(self, run_id: str) -> dict[str, object]:
        """The run's document without ``tests`` (the caller holds a snapshot)."""
        row = self._run_row(run_id)
        run = self._run_object(row)
        return {
            "format": genome_format_of(run.get("config")),
            "run": run,
            "collectors": [
                c for c in _json(row[11], list, run_id, "collectors") if isinstance(c, dict)
            ],
            "symbols": self._symbols(run_id),
        }

    def _tests(
        self,
        run_id: str,
        ids: set[str] | None,
        share: bool = True,
        unread: frozenset[str] = frozenset(),
    ) -> Iterator[dict[str, object]]:
        """Test objects sorted by id. ``share``: decoded phases are kept for the process (a
        diff reads them again from the other run), else dropped after each chunk."""
        row = self._run_row(run_id)
        fingerprint = None if row[12] is None else str(row[12])
        config = _json(row[9], dict, run_id, "config") if row[9] is not None else {}
        genome_format = genome_format_of(config)
        rows = [
            found
            for found in self._conn.execute(
                "SELECT id, outcome, verified, unverified_reasons, extra, phases FROM tests"
                " WHERE run_id = ? ORDER BY id",
                (holder(self._conn, run_id, TESTS),),
            )
            if ids is None or found[0] in ids
        ]
        if unread:
            rows = [(*row[:5], _UNREAD) if row[0] in unread else row for row in rows]
        if share:
            chunks = [rows]
        else:
            chunks = [
                rows[start : start + _TESTS_PER_CHUNK]
                for start in range(0, len(rows), _TESTS_PER_CHUNK)
            ]
        for chunk in chunks:
            yield from self._chunk(
                run_id, chunk, _Bodies(self, run_id, genome_format, fingerprint, share)
            )

    def _chunk(
        self, run_id: str, rows: list[tuple[object, ...]], bodies: _Bodies
    ) -> Iterator[dict[str, object]]:
        bodies.fetch(refs for *_, refs in rows if isinstance(refs, str))
        try:
            yield from self._records(run_id, rows, bodies)
        finally:
            bodies.release()

    def _records(
        self, run_id: str, rows: list[tuple[object, ...]], bodies: _Bodies
    ) -> Iterator[dict[str, object]]:
        for test_id, outcome, verified, unverified, extra, cell in rows:
            what = f"test {test_id!r}"
            phases: dict[str, object]
            if cell is _UNREAD:
                phases = _UNREAD_PHASES
            elif isinstance(cell, str):
                phases = bodies.phases(cell, what)
            else:
                phases = _phases(cell, run_id, what, bodies.share)
            test: dict[str, object] = dict(_json(extra, dict, run_id, what))
            test.update(
                {
                    "id": str(test_id),
                    "outcome": str(outcome),
                    "verified": bool(verified),
                    "unverified_reasons": [str(r) for r in _json(unverified, list, run_id, what)],
                    "phases": phases,
                }
            )
            yield test


class StoreHandle:
    """The one reader of a command that reads a store while it records into it (``diff``):
    opened when first read (the store may only come into being with the first recording),
    then kept until :meth:`close`.

    Each use is a ``with handle.reader() as reader:`` block, one at a time (recordings made
    side by side, in threads, take turns). The reader reads in autocommit, a document in one
    snapshot that ends with the call, so every use sees what the recordings wrote before it.
    A writer that opens the store may create it or upgrade its layout: :meth:`forget` then
    drops the reader, which the next use opens anew."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._reader: StoreReader | None = None
        self._lock = threading.RLock()
        self._header_checked = False

    @contextlib.contextmanager
    def reader(self) -> Iterator[StoreReader]:
        """The reader, opened now if it is not yet; a store that cannot be read is the
        :class:`StoreError` that :meth:`StoreReader.open` raises, and the next use tries
        again."""
        with self._lock:
            if self._reader is None:
                self._reader = StoreReader.open(self.path, header_checked=self._header_checked)
            yield self._reader

    def forget(self, *, writing: bool = False) -> None:
        """Drop the reader (the store is being opened for writing): the next use opens it
        anew. ``writing``: this process holds the store open for writing from now on, so
        the next reader does not check the file's header itself
        (:meth:`StoreReader.open`)."""
        with self._lock:
            self._header_checked = self._header_checked or writing
            reader, self._reader = self._reader, None
            if reader is not None:
                reader.close()

    def close(self) -> None:
        self.forget()


class _Snapshot:
    """One read transaction, so that a document never mixes two states of a live run."""

    def __init__(self, conn: sqlite3.Connection, db_path: str) -> None:
        self._conn, self._db = conn, db_path
        self._outer = False

    def __enter__(self) -> None:
        self._outer = not self._conn.in_transaction
        if self._outer:
            try:
                self._conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise _sql_error(exc, self._db) from None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._outer and self._conn.in_transaction:
            try:
                self._conn.execute("COMMIT" if exc is None else "ROLLBACK")
            except sqlite3.Error as err:
                # A damaged page can fail the end of the read too; the first error wins.
                if exc is None:
                    raise _sql_error(err, self._db) from None
        if isinstance(exc, _READ_ERRORS):
            raise _sql_error(exc, self._db) from None


def _locate(path: str) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StoreError(
            f"no diffgenome store at {path}; record a run first or pass --store PATH"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read the store folder {path}: {exc.strerror or exc}; fix its permissions"
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        return path
    db_path = os.path.join(path, DB_FILE)
    try:
        os.stat(db_path)
    except FileNotFoundError:
        try:
            os.listdir(path)
        except OSError as exc:
            raise StoreError(
                f"cannot read the store folder {path}: {exc.strerror or exc}; fix its permissions"
            ) from None
        raise StoreError(
            f"no diffgenome store in {path} ({DB_FILE} is missing); "
            "record a run first or pass --store PATH"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read the store folder {path}: {exc.strerror or exc}; fix its permissions"
        ) from None
    return db_path


def _check_header(db_path: str) -> None:
    try:
        with open(db_path, "rb") as handle:
            head = handle.read(100)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise StoreError(
            f"cannot read {db_path}: {exc.strerror or exc}; fix the store's permissions"
        ) from None
    try:
        wal = os.stat(db_path + "-wal").st_size > 0
    except OSError:
        wal = False
    if size == 0:
        raise StoreError(f"{db_path} is empty, not a diffgenome store; record a run first")
    problem = header_problem(head, size, wal)
    if problem:
        raise StoreError(f"{db_path} {problem}; restore it from a copy or record again")


def _connect(db_path: str, timeout: float, immutable: bool) -> sqlite3.Connection:
    uri = "file:" + quote(os.path.abspath(db_path)) + "?mode=ro"
    if immutable:
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(
            uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    except sqlite3.Error as exc:
        raise _sql_error(exc, db_path) from None
    return conn


def _check_format(conn: sqlite3.Connection, db_path: str) -> None:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not {"meta", "runs", "workers", "symbols", "tests"} <= tables:
        raise StoreError(
            f"{db_path} is an SQLite database but not a diffgenome store; "
            "pass the folder of a diffgenome store"
        )
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_FORMAT_KEY,)).fetchone()
    try:
        check_store_format(None if row is None else row[0])
    except FormatError as exc:
        raise StoreError(f"{db_path}: {exc}") from None


def _needs_immutable(exc: Exception, db_path: str) -> bool:
    text = str(exc)
    folder = os.path.dirname(os.path.abspath(db_path))
    return ("readonly" in text or "unable to open" in text) and not os.access(folder, os.W_OK)


def _sql_error(exc: Exception, db_path: str) -> StoreError:
    if isinstance(exc, UnicodeDecodeError):  # SQLite hands back the bytes of a damaged cell
        return StoreError(
            f"{db_path} is damaged (a text value is not UTF-8); restore it from a copy or "
            "record again"
        )
    text = one_line(exc)
    if "locked" in text or "busy" in text:
        return StoreError(
            f"{db_path} is locked by another process ({text}); "
            "try again when the recording has finished"
        )
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StoreError(f"{db_path} is damaged ({text}); restore it from a copy or record again")
    if "unable to open" in text or "readonly" in text:
        return StoreError(f"cannot open {db_path} ({text}); check the store's permissions")
    return StoreError(f"cannot read {db_path} ({text}); check the store or record again")


# Parsed phases by the digest of their stored blob: equal blobs are equal phases, and most
# tests of a diff are recorded alike in both runs (sqlparse: 462 of 465), so both documents
# hold one object for them. That halves decoding and validation (models.genome_problem checks
# an object once) and lets the differ's equality test stop at identity. Readers never mutate
# a document.
_SHARED_PHASES: dict[bytes, dict[str, object]] = {}
_MAX_SHARED = 200_000


# store/2: one decoded phase per content address, and one ``phases`` object per distinct
# set of addresses, shared by every test (of any run of one store read in this process) that
# holds them. Per store file: a store/4 body is put back from its own store's sites table, so
# the same stored bytes in two stores that share a key could read differently.
_SHARED_BY_STORE: dict[str, tuple[dict[str, dict[str, object]], dict[str, dict[str, object]]]] = {}
_BODY_QUERY_CHUNK = 500
# Stands for the phases of a test the caller asked not to read (StoreReader.document), and
# the one empty object such a test is given (never mutated: readers hand out shared objects).
_UNREAD = object()
_UNREAD_PHASES: dict[str, object] = {}
_TESTS_PER_CHUNK = 32
_PHASE_NAMES = frozenset(PHASES)
# ``phases`` objects built only from bodies that matched their addresses, under phase names
# the protocol knows, by id (kept alive here, so an id is never reused).
_VERIFIED: dict[int, object] = {}


def stored_phases(phases: object) -> bool:
    """Whether ``phases`` was read from a store/2 body whose bytes matched its address: the
    exact bytes a recorder wrote, which a reader need not check against the models again
    (or is the empty stand-in of phases a caller asked not to read)."""
    return phases is _UNREAD_PHASES or _VERIFIED.get(id(phases)) is phases


class _Bodies:
    """The phase bodies of one run's tests, read once per address and checked against it."""

    def __init__(
        self,
        reader: StoreReader,
        run_id: str,
        genome_format: str,
        fingerprint: str | None,
        share: bool = True,
    ) -> None:
        self._reader, self._run = reader, run_id
        self._format, self._fingerprint = genome_format, fingerprint
        self.share = share
        self._refs: dict[str, dict[str, str]] = {}
        # Bodies not shared: beyond the shared table's bound, or all of them when not sharing.
        self._local: dict[str, dict[str, object]] = {}
        shared_bodies, shared_refs = _SHARED_BY_STORE.setdefault(reader.db_path, ({}, {}))
        self._shared = shared_bodies
        self._bodies = shared_bodies if share else self._local
        self._cells = shared_refs if share else {}
        self._registered: list[int] = []

    def fetch(self, cells: Iterable[str]) -> None:
        """Read every body these ``tests.phases`` cells name that is not decoded yet."""
        wanted: set[str] = set()
        for cell in cells:
            if cell in self._cells or cell in self._refs:
                continue
            refs = self._refs[cell] = self._parse(cell)
            wanted.update(a for a in refs.values() if a not in self._bodies)
        if wanted and not self._reader.has_bodies():
            raise _corrupt(self._run, "its tests", "they name phase bodies the store lacks")
        missing = sorted(wanted)
        for start in range(0, len(missing), _BODY_QUERY_CHUNK):
            chunk = missing[start : start + _BODY_QUERY_CHUNK]
            marks = ",".join("?" * len(chunk))
            for address, body in self._reader._conn.execute(
                f"SELECT hash, body FROM genomes WHERE hash IN ({marks})", chunk
            ):
                self._decode(str(address), body)

    def phases(self, cell: str, what: str) -> dict[str, object]:
        known = self._cells.get(cell)
        if known is not None:
            return known
        refs = self._refs.get(cell) or self._parse(cell)
        phases: dict[str, object] = {}
        for name, address in refs.items():
            body = self._bodies.get(address) or self._local.get(address)
            if body is None:
                raise _corrupt(self._run, what, f"its {name} phase ({address}) is not in the store")
            phases[name] = body
        if len(self._cells) < _MAX_SHARED:
            self._cells[cell] = phases
        if phases.keys() <= _PHASE_NAMES and len(_VERIFIED) < _MAX_SHARED:
            _VERIFIED[id(phases)] = phases
            if not self.share:
                self._registered.append(id(phases))
        return phases

    def release(self) -> None:
        """Forget the phases objects of a chunk that is not shared (their ids may be reused)."""
        for key in self._registered:
            _VERIFIED.pop(key, None)
        self._registered.clear()

    def _parse(self, cell: str) -> dict[str, str]:
        refs = _json(cell, dict, self._run, "a test's phase addresses")
        if not all(isinstance(v, str) for v in refs.values()):
            raise _corrupt(self._run, "a test's phase addresses", "an address is not a string")
        return refs

    def _decode(self, address: str, body: object) -> None:
        text = _body_text(self._run, address, body, self._format, self._fingerprint)
        decoded = _json(text, dict, self._run, f"phase body {address}")
        missing = expand_phase(decoded, self._reader.site_predicate)
        if missing is not None:
            raise _corrupt(self._run, f"phase body {address}", missing)
        if self.share and len(self._shared) < _MAX_SHARED:
            self._shared[address] = decoded
        else:
            self._local[address] = decoded


def _body_text(
    run_id: str, address: str, body: object, genome_format: str, fingerprint: str | None
) -> bytes:
    """A phase body's canonical JSON bytes, checked against its address."""
    what = f"phase body {address}"
    if not isinstance(body, bytes):
        raise _corrupt(run_id, what, "it is not a compressed blob")
    try:
        text = zlib.decompress(body)
    except zlib.error as exc:
        raise _corrupt(run_id, what, one_line(exc)) from None
    # The address is a digest of the bytes: a body that does not match it is damaged.
    if phase_address(text, genome_format, fingerprint) != address:
        raise _corrupt(run_id, what, "its bytes do not match its address")
    return text


# A few strings are looked for one by one; more at once by collecting every symbol-like JSON
# string of a body in one pass (looking for one string costs about a fifth of that pass).
_FEW_STRINGS: Final = 4
_SYMBOL_STRINGS: Final = re.compile(rb'"' + re.escape(SYMBOL_PREFIX.encode()) + rb'[^"\\]*"')


def _mentions(strings: Collection[str]) -> Callable[[bytes], bool]:
    """A test of whether canonical JSON bytes hold one of ``strings`` as a string value."""
    needles = sorted({canonical_json(s).encode() for s in strings})
    prefix = b'"' + SYMBOL_PREFIX.encode()
    if len(needles) <= _FEW_STRINGS or not all(
        n.startswith(prefix) and b"\\" not in n for n in needles
    ):
        return lambda text: any(needle in text for needle in needles)
    wanted = frozenset(needles)
    return lambda text: not wanted.isdisjoint(_SYMBOL_STRINGS.findall(text))


def _phases(blob: object, run_id: str, what: str, share: bool = True) -> dict[str, object]:
    """A store/1 test's phases, from its one compressed blob."""
    if not share:
        return _json(_inflate(blob, run_id, what), dict, run_id, what)
    key = hashlib.blake2b(blob, digest_size=16).digest() if isinstance(blob, bytes) else None
    if key is not None:
        known = _SHARED_PHASES.get(key)
        if known is not None:
            return known
    parsed = _json(_inflate(blob, run_id, what), dict, run_id, what)
    if key is not None and len(_SHARED_PHASES) < _MAX_SHARED:
        _SHARED_PHASES[key] = parsed
    return parsed


def _inflate(blob: object, run_id: str, what: str) -> str:
    if not isinstance(blob, bytes):
        raise _corrupt(run_id, what, "phases are not a compressed blob")
    try:
        return zlib.decompress(blob).decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise _corrupt(run_id, what, one_line(exc)) from None


def _json[T](text: object, kind: type[T], run_id: str, what: str) -> T:
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) else text
    except ValueError as exc:
        raise _corrupt(run_id, what, one_line(exc)) from None
    except RecursionError:
        raise _corrupt(run_id, what, "nested too deeply") from None
    if not isinstance(value, kind):
        raise _corrupt(run_id, what, f"expected a JSON {kind.__name__}")
    return value


def _corrupt(run_id: str, what: str, detail: str) -> StoreError:
    return StoreError(f"run {run_id}: {what} has a corrupt record ({detail}); record the run again")


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _few(items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _alive(pid: object, host: object, token: object) -> bool:
    """Whether a recorded writer process may still be running; unknown counts as alive."""
    return process_alive(pid, host, token)
