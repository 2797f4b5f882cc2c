"""End-to-end: a run that records what an earlier run recorded stores its rows once (#26.4).

Real ``pytest --genome`` sessions into one store, the store read back through the CLI and
its SQLite file opened as a second reader would:

- three recordings of one tree: the second and third keep no test rows or symbols of their
  own and name the first (their manifests are the same), and read back exactly as it does;
- a recording in which one test took another branch keeps its own test rows (never another
  run's evidence for it) and still shares the symbols, which did not change;
- removing the run that holds the rows (the store's cap) hands them to a run that stays,
  which still reads every test;
- (store/4) the stored bodies name a decision by its site only, its predicate is in the
  ``sites`` table once, and the export has every field back.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import STORE, cli, export, make_project, run_pytest, without_run

pytestmark = pytest.mark.slow

SEEDED = {"PYTHONHASHSEED": "0"}

FILES = {
    "shop/__init__.py": "",
    "shop/cart.py": """
        import os

        RATE = -1 if os.environ.get("FLIP") else 1


        def total(prices):
            amount = sum(prices) * RATE
            return max(amount, 0) if amount < 0 else amount
    """,
    "tests/test_cart.py": """
        from shop.cart import total


        def test_total():
            assert total([1, 2]) >= 0


        def test_empty():
            assert total([]) == 0
    """,
}


def record(project: Path, env: dict[str, str] | None = None) -> str:
    done = run_pytest(project, "--genome", "--genome-random-seed=0", env={**SEEDED, **(env or {})})
    assert done.returncode == 0, done.stdout + done.stderr
    listed = cli(project, "runs", "--json", "-")
    assert listed.returncode == 0, listed.stderr
    newest: str = json.loads(listed.stdout)[0]["id"]
    return newest


def rows(project: Path) -> tuple[dict[str, tuple[Any, Any]], dict[str, int], dict[str, int]]:
    """Per run the runs holding its tests and symbols; test rows and symbols per run id."""
    conn = sqlite3.connect(f"file:{project / STORE / 'genome.sqlite'}?mode=ro", uri=True)
    try:
        holders = {
            str(run): (tests_in, symbols_in)
            for run, tests_in, symbols_in in conn.execute(
                "SELECT id, tests_in, symbols_in FROM runs"
            )
        }
        tests = dict(conn.execute("SELECT run_id, COUNT(*) FROM tests GROUP BY run_id").fetchall())
        symbols = dict(
            conn.execute("SELECT run_id, COUNT(*) FROM symbols GROUP BY run_id").fetchall()
        )
    finally:
        conn.close()
    return holders, tests, symbols


def counts(project: Path) -> dict[str, int]:
    listed = cli(project, "runs", "--json", "-")
    assert listed.returncode == 0, listed.stderr
    return {str(run["id"]): int(run["tests"]) for run in json.loads(listed.stdout)}


def test_repeated_recordings_share_their_rows_and_read_back_whole(tmp_path: Path) -> None:
    project = make_project(tmp_path, FILES)
    first = record(project)
    second = record(project)
    third = record(project)
    holders, tests, symbols = rows(project)
    assert holders[first] == (None, None)
    assert holders[second] == (first, first)
    assert holders[third] == (first, first)
    assert set(tests) == {first}, tests  # the <import> record and the two tests, once
    assert tests[first] == 3
    assert set(symbols) == {first}
    assert counts(project) == {first: 2, second: 2, third: 2}
    documents = {run: export(project, run=run) for run in (first, second, third)}
    assert len(documents[first]["tests"]) == 3
    assert without_run(documents[second]) == without_run(documents[first])
    assert without_run(documents[third]) == without_run(documents[first])
    assert documents[third]["run"]["id"] == third

    # One test takes another branch: its run keeps its own test rows; the symbols are shared.
    flipped = record(project, {"FLIP": "1"})
    holders, tests, _ = rows(project)
    assert holders[flipped] == (None, first)
    assert tests[flipped] == 3
    theirs = export(project, run=flipped)
    assert theirs["tests"] != documents[first]["tests"]
    assert theirs["symbols"] == documents[first]["symbols"]
    # Not confirmed: recorded again without FLIP, the test would read as unstable.
    diffed = cli(
        project, "diff", first, flipped, "--json", "-", "--fail-on", "never", "--no-confirm"
    )
    assert diffed.returncode == 0, diffed.stderr
    statuses = {t["id"]: t["status"] for t in json.loads(diffed.stdout)["tests"]}
    assert statuses["tests/test_cart.py::test_total"] == "changed", statuses
    same = cli(project, "diff", first, third, "--json", "-", "--fail-on", "never")
    assert same.returncode == 0, same.stderr
    assert {t["status"] for t in json.loads(same.stdout)["tests"]} == {"unchanged"}

    # The cap removes the two oldest runs, the first among them: the newest run that named
    # it inherits each kind of its rows (the third its tests, the flipped run the symbols),
    # and both read back as before.
    capped = cli(project, "prune", "--cap", "2")
    assert capped.returncode == 0, capped.stderr
    holders, tests, symbols = rows(project)
    assert set(holders) == {third, flipped}
    assert holders[third] == (None, flipped)
    assert holders[flipped] == (None, None)
    assert tests == {third: 3, flipped: 3}
    assert set(symbols) == {flipped}
    assert without_run(export(project, run=third)) == without_run(documents[first])
    assert export(project, run=flipped)["symbols"] == documents[first]["symbols"]
    assert counts(project) == {third: 2, flipped: 2}


def test_stored_bodies_leave_out_what_the_sites_table_gives_back(tmp_path: Path) -> None:
    """Store/4: a real recording's bodies name a decision by its site only; the predicate
    is in the ``sites`` table once, and the export has every field as it was recorded."""
    project = make_project(tmp_path, FILES)
    run = record(project)
    conn = sqlite3.connect(f"file:{project / STORE / 'genome.sqlite'}?mode=ro", uri=True)
    try:
        sites = dict(conn.execute("SELECT site, predicate FROM sites").fetchall())
        texts = [body for (body,) in conn.execute("SELECT body FROM genomes")]
    finally:
        conn.close()
    assert sites == {
        next(s for s in sites if s.startswith("py:shop.cart.total/ifexp[")): "amount < 0",
        next(s for s in sites if s.startswith("py:shop.cart/ifexp[")): "os.environ.get('FLIP')",
    }
    stored = [zlib.decompress(text) for text in texts]
    assert any(b"py:shop.cart.total/ifexp[" in text for text in stored)
    assert not any(b"amount < 0" in text or b'"kind"' in text for text in stored)
    document = export(project, run=run)
    decisions = [
        decision
        for test in document["tests"]
        for phase in test["phases"].values()
        for decision in phase["branches"]
    ]
    assert {(d["kind"], d["predicate"], d["symbol"]) for d in decisions} == {
        ("ifexp", "amount < 0", "py:shop.cart.total"),
        ("ifexp", "os.environ.get('FLIP')", "py:shop.cart"),
    }
