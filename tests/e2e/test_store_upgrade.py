"""End-to-end: a store written before content-addressed genomes (store/1) is read as it is by
the CLI and upgraded once, in place, by the next recording, with nothing lost."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from store_v1 import as_store_v1

from diffgenome.protocol.formats import STORE_FORMAT
from diffgenome.store.layout import DB_FILE
from e2e.helpers import STORE, cli, diffgenome_notices, export, make_project, record_full

FILES = {
    "pkg/__init__.py": "",
    "pkg/mod.py": """
        def f(n):
            if n > 0:
                return n - 1
            return 0
    """,
    "tests/test_a.py": """
        import pytest

        from pkg.mod import f


        @pytest.fixture
        def two():
            return 2


        def test_one(two):
            assert f(two) == 1


        def test_two():
            assert f(0) == 0
    """,
}


def _layout(project: Path) -> str:
    conn = sqlite3.connect(project / STORE / DB_FILE)
    try:
        (value,) = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    finally:
        conn.close()
    return str(value)


def test_an_old_store_is_read_as_it_is_and_upgraded_once_by_the_next_recording(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path, FILES)
    first = record_full(project).doc
    as_store_v1(project / STORE)
    assert _layout(project) == "diffgenome-store/1"

    # Readers read it as it is, and change nothing.
    before = (project / STORE / DB_FILE).read_bytes()
    assert export(project, run=first["run"]["id"]) == first
    assert cli(project, "runs").returncode == 0
    assert (project / STORE / DB_FILE).read_bytes() == before

    # The next recording upgrades it, says so once, and records as usual.
    second = record_full(project)
    notices = diffgenome_notices(second.output)
    assert len(notices) == 1, second.output
    assert f"to {STORE_FORMAT}" in notices[0] and "3 recorded tests rewritten" in notices[0]
    assert _layout(project) == STORE_FORMAT
    assert export(project, run=first["run"]["id"]) == first

    # The old run and the new one compare as any two runs do: nothing changed.
    done = cli(project, "diff", first["run"]["id"], second.doc["run"]["id"], "--json", "diff.json")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((project / "diff.json").read_text())["summary"]
    assert summary["unchanged"] == summary["tests"] == 3, summary

    # Once: the recording after that has nothing to say.
    third = record_full(project)
    assert diffgenome_notices(third.output) == [], third.output
