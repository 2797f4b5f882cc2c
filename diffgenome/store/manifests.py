"""Run manifests: the rows of a finished run stored once, by their content address.

Ten runs of one commit record the same genomes; since store/2 each phase body is stored
once, but every run still wrote its own test rows and symbol documents (sqlparse: 265 KB a
run, half the growth of a store that records the same commit again). When a run finishes,
its test rows and its symbols are each summed up as a manifest address (a digest of the
rows, sorted); a run whose manifest an earlier run of the store already holds gives its own
rows up and names that run in ``runs.tests_in`` / ``runs.symbols_in`` instead. A reader
reads a run's tests and symbols from the run :func:`holder` names.

Why rows stay rows: a run is written a test at a time (a recording killed half-way keeps
every test it finished), and every reader queries rows; only the finished, final rows are
shared, and only whole: a run in which one test recorded another genome keeps its own test
rows (its symbols are still shared when they are equal).

When the run that holds shared rows is removed, its rows pass to the newest run left that
names it (:func:`hand_down`), so that removing runs never takes another run's evidence.
Standard library only; every function runs inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from hashlib import blake2b
from typing import Final

#: The two kinds of rows a run shares: the table, the column naming the run that holds them
#: (NULL: the run's own) and the column holding their manifest address.
TESTS: Final = ("tests", "tests_in", "tests_manifest")
SYMBOLS: Final = ("symbols", "symbols_in", "symbols_manifest")
KINDS: Final = (TESTS, SYMBOLS)

#: The columns of ``runs`` that hold manifests (added to a store/2 file when it is upgraded).
MANIFEST_COLUMNS: Final = ("tests_in", "tests_manifest", "symbols_in", "symbols_manifest")

_TEST_ROW: Final = (
    "SELECT id, worker, outcome, verified, unverified_reasons, extra, phases, phases_size"
    " FROM tests WHERE run_id = ? ORDER BY id"
)
_SYMBOL_ROW: Final = "SELECT id, doc FROM symbols WHERE run_id = ? ORDER BY id"
_PREFIX: Final = b"diffgenome-run-manifest/1\0"


def manifest_address(conn: sqlite3.Connection, run_id: str, kind: tuple[str, str, str]) -> str:
    """The hex BLAKE2b-128 of the run's own rows of ``kind`` in id order, each cell typed
    and length-prefixed (so no two different row sets write the same bytes), under the
    run's key fingerprint: rows name phase bodies by addresses made under that key."""
    row = conn.execute("SELECT key_fingerprint FROM runs WHERE id = ?", (run_id,)).fetchone()
    digest = blake2b(_PREFIX, digest_size=16)
    digest.update(_cell(None if row is None else row[0]))
    for found in conn.execute(_TEST_ROW if kind is TESTS else _SYMBOL_ROW, (run_id,)):
        digest.update(b"\x1e")
        for value in found:
            digest.update(_cell(value))
    return digest.hexdigest()


def _cell(value: object) -> bytes:
    if value is None:
        return b"n"
    if isinstance(value, bytes):
        return b"b%d:" % len(value) + value
    if isinstance(value, int):
        return b"i%d;" % value
    data = str(value).encode("utf-8", "surrogatepass")
    return b"s%d:" % len(data) + data


def share_rows(conn: sqlite3.Connection, run_id: str) -> tuple[bool, bool]:
    """Sum up the finished run's rows as manifests; where a run of the store holds the same
    manifest, drop this run's rows and name that run. Whether its tests and its symbols are
    now shared. A store without the manifest columns (never, once opened by a writer) is
    left alone."""
    if not has_manifests(conn):
        return False, False
    shared = []
    for kind in KINDS:
        table, holder_column, manifest_column = kind
        address = manifest_address(conn, run_id, kind)
        other = conn.execute(
            f"SELECT id FROM runs WHERE {manifest_column} = ? AND {holder_column} IS NULL"
            " AND id != ? ORDER BY started_at, rowid LIMIT 1",
            (address, run_id),
        ).fetchone()
        conn.execute(f"UPDATE runs SET {manifest_column} = ? WHERE id = ?", (address, run_id))
        if other is None:
            shared.append(False)
            continue
        conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
        conn.execute(f"UPDATE runs SET {holder_column} = ? WHERE id = ?", (str(other[0]), run_id))
        shared.append(True)
    return shared[0], shared[1]


def hand_down(conn: sqlite3.Connection, removed: Collection[str]) -> None:
    """Before ``removed`` runs are deleted: the rows one of them holds for runs that stay
    pass to the newest of those, which the others then name."""
    if not removed or not has_manifests(conn):
        return
    gone = set(removed)
    for table, holder_column, _ in KINDS:
        for run_id in gone:
            heirs = [
                str(found[0])
                for found in conn.execute(
                    f"SELECT id FROM runs WHERE {holder_column} = ?"
                    " ORDER BY started_at DESC, rowid DESC",
                    (run_id,),
                )
                if str(found[0]) not in gone
            ]
            if not heirs:
                continue
            heir = heirs[0]
            conn.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (heir, run_id))
            conn.execute(f"UPDATE runs SET {holder_column} = NULL WHERE id = ?", (heir,))
            conn.execute(
                f"UPDATE runs SET {holder_column} = ? WHERE {holder_column} = ?", (heir, run_id)
            )


def holder(conn: sqlite3.Connection, run_id: str, kind: tuple[str, str, str]) -> str:
    """The run whose rows of ``kind`` are ``run_id``'s (itself unless they are shared)."""
    if not has_manifests(conn):
        return run_id
    row = conn.execute(f"SELECT {kind[1]} FROM runs WHERE id = ?", (run_id,)).fetchone()
    return run_id if row is None or row[0] is None else str(row[0])


def holders_of(conn: sqlite3.Connection) -> dict[str, tuple[str, str]]:
    """Every run of the store with the runs holding its tests and its symbols (none in a
    store without manifests: each run holds its own)."""
    if not has_manifests(conn):
        return {}
    return {
        str(run_id): (str(tests_in), str(symbols_in))
        for run_id, tests_in, symbols_in in conn.execute(
            "SELECT id, COALESCE(tests_in, id), COALESCE(symbols_in, id) FROM runs"
        )
    }


def has_manifests(conn: sqlite3.Connection) -> bool:
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(runs)")}
    return columns.issuperset(MANIFEST_COLUMNS)


def add_manifest_columns(conn: sqlite3.Connection) -> bool:
    """Give a store/2 ``runs`` table the manifest columns (its runs keep their own rows);
    whether any was missing."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(runs)")}
    missing = [column for column in MANIFEST_COLUMNS if column not in columns]
    for column in missing:
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
    return bool(missing)
