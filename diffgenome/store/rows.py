"""The rows a run is written as: its ``runs`` row, its writers, its symbols and its tests.

Two writers add runs to a store: the recorder (a run at a time, in the user's test process)
and ``diffgenome combine`` (the union of shards, in one transaction). Both build their rows
and write them here, so that a combined run is stored exactly as a recorded one would be and
a column added to the layout is filled in one place. Standard library only; every function
takes the caller's connection inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from time import gmtime as _gmtime
from time import strftime as _strftime

from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.jsontext import escape_surrogates
from diffgenome.store.addresses import (
    PHASE_ZLIB_LEVEL,
    PhaseRows,
    canonical_json,
    insert_bodies,
    phase_rows,
)
from diffgenome.store.layout import RUN_COLUMNS, TEST_COLUMNS

#: A writer process as the store names it: pid, host, and the token that tells a reused pid
#: apart (``protocol.runs.process_token``); all None for a writer that is not a process of
#: this store's (a shard ``combine`` adds).
Owner = tuple[int | None, str | None, str | None]
NO_OWNER: Owner = (None, None, None)


def now() -> str:
    """The store's timestamps: UTC to the second."""
    return _strftime("%Y-%m-%dT%H:%M:%SZ", _gmtime())


def text(value: object) -> str | None:
    """A text column's value: lone surrogates written as their escapes (protocol/jsontext.py),
    which SQLite's UTF-8 text could not hold."""
    return None if value is None else escape_surrogates(str(value))


def seq(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


def require_str(obj: Mapping[str, object], field: str, what: str) -> str:
    value = obj.get(field) if isinstance(obj, Mapping) else None
    if not isinstance(value, str) or not value:
        raise StoreError(f"a {what} object has no string {field!r}; pass genome {what} objects")
    return escape_surrogates(value)


def insert_run(
    conn: sqlite3.Connection,
    run_id: str,
    run: Mapping[str, object],
    *,
    status: str,
    collectors: object,
    key_fingerprint: str | None,
    owner: Owner = NO_OWNER,
    reasons: Sequence[str] = (),
    finished_at: str | None = None,
) -> None:
    """The ``runs`` row of the genome ``run`` object ``run``: the keys with a column of their
    own, and every other key kept verbatim in ``extra`` (a round trip loses nothing)."""
    config = run.get("config")
    config = config if isinstance(config, dict) else {}
    recording_key = config.get("recording_key")
    extra = {k: v for k, v in run.items() if k not in RUN_COLUMNS and k != "status"}
    dirty = run.get("dirty")
    conn.execute(
        "INSERT INTO runs (id, started_at, finished_at, commit_sha, dirty, python, platform,"
        " status, reasons, config, selection, collectors, key_fingerprint, tool, recording_key,"
        " extra, owner_pid, owner_host, owner_token)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run_id,
            text(run.get("started_at")) or now(),
            finished_at,
            text(run.get("commit")),
            None if dirty is None else int(bool(dirty)),
            text(run.get("python")) or "",
            text(run.get("platform")) or "",
            status,
            canonical_json(list(reasons)),
            canonical_json(config),
            canonical_json(seq(run.get("selection"))),
            canonical_json(seq(collectors)),
            text(run.get("key_fingerprint") or key_fingerprint),
            text(run.get("tool")),
            recording_key if isinstance(recording_key, str) else None,
            canonical_json(extra),
            *owner,
        ),
    )


def join_worker(
    conn: sqlite3.Connection, run_id: str, worker: str, *, joined_at: str | None, owner: Owner
) -> None:
    """``worker`` writes the run from now on (again, if it had left): the run is whole only
    once each of its workers has left ok."""
    conn.execute(
        "INSERT OR REPLACE INTO workers (run_id, worker, pid, host, token, joined_at,"
        " left_at, ok, reasons) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, '[]')",
        (run_id, worker, *owner, joined_at),
    )


def leave_worker(
    conn: sqlite3.Connection,
    run_id: str,
    worker: str,
    *,
    left_at: str | None,
    ok: bool,
    reasons: Sequence[str],
    owner: Owner,
) -> None:
    """``worker`` is done with the run, ok or not and why; a worker that never joined is
    written as one that left."""
    conn.execute(
        "INSERT INTO workers (run_id, worker, pid, host, token, joined_at, left_at, ok,"
        " reasons) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?)"
        " ON CONFLICT (run_id, worker) DO UPDATE SET left_at = excluded.left_at,"
        " ok = excluded.ok, reasons = excluded.reasons",
        (run_id, worker, *owner, left_at, int(ok), canonical_json(list(reasons))),
    )


def insert_symbols(
    conn: sqlite3.Connection, run_id: str, symbols: Iterable[Mapping[str, object]]
) -> None:
    """The run's symbol documents; a symbol written again replaces the earlier document."""
    rows = [(run_id, require_str(s, "id", "symbol"), canonical_json(s)) for s in symbols]
    conn.executemany(
        "INSERT INTO symbols (run_id, id, doc) VALUES (?, ?, ?)"
        " ON CONFLICT (run_id, id) DO UPDATE SET doc = excluded.doc",
        rows,
    )


def test_phases(
    test: Mapping[str, object],
    genome_format: str,
    fingerprint: str | None,
    stored: Mapping[str, int] | None = None,
    level: int = PHASE_ZLIB_LEVEL,
    predicates: Mapping[str, str] | None = None,
) -> PhaseRows:
    """A test record's phases as content-addressed rows (``store.addresses.phase_rows``)."""
    phases = test.get("phases")
    return phase_rows(
        phases if isinstance(phases, dict) else {},
        genome_format,
        fingerprint,
        stored,
        level,
        predicates,
    )


def test_row(
    run_id: str, worker: str, test: Mapping[str, object], phases: PhaseRows
) -> tuple[object, ...]:
    """The ``tests`` row of one test record with its phase rows (encodes its JSON cells: a
    value JSON has no form for raises here, before anything is written)."""
    return (
        run_id,
        require_str(test, "id", "test"),
        worker,
        text(test.get("outcome")) or "error",
        int(bool(test.get("verified"))),
        canonical_json(seq(test.get("unverified_reasons"))),
        canonical_json({k: v for k, v in test.items() if k not in TEST_COLUMNS}),
        phases.refs,
        phases.size,
    )


def insert_tests(
    conn: sqlite3.Connection,
    run_id: str,
    tests: Sequence[tuple[str, Mapping[str, object], PhaseRows]],
) -> None:
    """``(worker, test record, its phase rows)`` of one batch: the phase bodies the store does
    not hold yet, then the test rows (a test id written again in the run is replaced)."""
    insert_rows(
        conn,
        [phases for _, _, phases in tests],
        [test_row(run_id, worker, test, phases) for worker, test, phases in tests],
    )


def insert_rows(
    conn: sqlite3.Connection, phases: Sequence[PhaseRows], rows: Sequence[tuple[object, ...]]
) -> None:
    """The phase bodies the store does not hold yet, then the test rows (:func:`test_row`)."""
    insert_bodies(conn, phases)
    conn.executemany(
        "INSERT OR REPLACE INTO tests (run_id, id, worker, outcome, verified,"
        " unverified_reasons, extra, phases, phases_size)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
