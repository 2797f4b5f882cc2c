"""The store/1 layout, as diffgenome wrote it before content-addressed genomes: one compressed
blob of all phases per test. Tests turn a store/2 store into that layout to prove that readers
read it and the next writer upgrades it."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

from diffgenome.store.compact import expand_phase
from diffgenome.store.layout import DB_FILE

STORE_V1_TESTS = """
CREATE TABLE tests (
    run_id             TEXT NOT NULL,
    id                 TEXT NOT NULL,
    worker             TEXT,
    outcome            TEXT NOT NULL,
    verified           INTEGER NOT NULL,
    unverified_reasons TEXT NOT NULL DEFAULT '[]',
    extra              TEXT NOT NULL DEFAULT '{}',
    phases             BLOB NOT NULL,
    PRIMARY KEY (run_id, id)
) WITHOUT ROWID
"""


def as_store_v1(store: Path, damaged: str | None = None) -> None:
    """Rewrite the store/4 file in ``store`` into the store/1 layout, test rows as store/1
    wrote them; the row of test id ``damaged`` gets a blob that is not zlib."""
    conn = sqlite3.connect(store / DB_FILE)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # Bodies as genomes: store/4 bodies leave out what the sites table gives back.
    predicates = dict(conn.execute("SELECT site, predicate FROM sites").fetchall())
    bodies = {}
    for address, body in conn.execute("SELECT hash, body FROM genomes"):
        bodies[address] = json.loads(zlib.decompress(body))
        assert expand_phase(bodies[address], predicates.get) is None
    conn.execute("DROP TABLE sites")
    rows = conn.execute(
        "SELECT run_id, id, worker, outcome, verified, unverified_reasons, extra, phases FROM tests"
    ).fetchall()
    conn.execute("DROP TABLE tests")
    conn.execute("DROP TABLE genomes")
    conn.execute(STORE_V1_TESTS)
    for *head, cell in rows:
        phases = {name: bodies[address] for name, address in json.loads(cell).items()}
        text = json.dumps(phases, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        blob = b"\x00garbage" if head[1] == damaged else zlib.compress(text.encode())
        conn.execute("INSERT INTO tests VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (*head, blob))
    conn.execute("UPDATE meta SET value = 'diffgenome-store/1' WHERE key = 'format'")
    conn.commit()
    conn.close()
