"""Issue #6, concurrent use: two sessions (one of them with ``-n 4``) writing one store at once,
and the CLI reading a store while a session writes it. Every read succeeds or reads a run as
still running, no read shows half a test, and every run ends complete and consistent
(``docs/reliability.md``).

Overlap is forced, not hoped for: the sessions meet at a barrier of files, and the writer
blocks in a gate test until the harness has read the live store.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from e2e.helpers import (
    SCHEMA,
    cli,
    export,
    make_project,
    one_node,
    split_progress,
    start_pytest,
    without_run,
)

CALLS = range(1, 31)

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/mod.py": "def f(n):\n    return n + 1\n",
    "tests/test_many.py": f"""
        import pytest

        from pkg.mod import f


        @pytest.mark.parametrize("n", {list(CALLS)!r})
        def test_calls(n):
            for i in range(n):
                f(i)
    """,
    "tests/test_barrier.py": """
        import os
        import pathlib
        import time

        from pkg.mod import f


        def test_barrier():
            # Both sessions are inside their recording before either goes on.
            here = pathlib.Path(os.environ["BARRIER"])
            (here / os.environ["SESSION"]).write_text("in")
            deadline = time.monotonic() + 120
            while len(list(here.iterdir())) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(list(here.iterdir())) == 2
            f(0)
    """,
    "tests/test_gate.py": """
        import os
        import pathlib
        import time

        from pkg.mod import f


        def test_gate():
            # Hold the session open until the harness has read the live store.
            gate = pathlib.Path(os.environ["GATE"])
            (gate / "waiting").write_text("in")
            deadline = time.monotonic() + 120
            while not (gate / "open").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert (gate / "open").exists()
            f(0)
    """,
}

EXPECTED_IDS = {f"tests/test_many.py::test_calls[{n}]" for n in CALLS}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("concurrency"), PROJECT)


def start(project: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return start_pytest(project, "--genome", "-q", *args, env=env)


def finish(proc: subprocess.Popen[str]) -> str:
    try:
        output, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, output
    return output


def assert_whole_tests(doc: dict[str, Any]) -> None:
    """Every test present is whole: its call genome counts exactly the calls it made."""
    for test in doc["tests"]:
        if "::test_calls[" not in test["id"]:
            continue
        n = int(test["id"].rpartition("[")[2].rstrip("]"))
        assert test["outcome"] == "passed" and test["verified"] is True, test
        node = one_node(test["phases"]["call"], "py:pkg.mod.f")
        assert (node["count"], node["exits"]) == (n, {"returned": n}), test["id"]


@pytest.mark.slow
def test_two_sessions_write_one_store_at_once(project: Path, tmp_path: Path) -> None:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    store = "--genome-store=.dg-two"
    selection = ("tests/test_many.py", "tests/test_barrier.py")
    serial = start(project, store, *selection, env={"BARRIER": str(barrier), "SESSION": "a"})
    parallel = start(
        project, store, "-n", "4", *selection, env={"BARRIER": str(barrier), "SESSION": "b"}
    )
    finish(serial)
    finish(parallel)

    runs = cli(project, "runs", "--store", ".dg-two")
    assert runs.returncode == 0, runs.stderr
    ids = [line.split()[0] for line in runs.stdout.splitlines()[1:] if line.strip()]
    assert len(ids) == 2, runs.stdout
    docs = [export(project, ".dg-two", run_id) for run_id in ids]
    for doc in docs:
        assert doc["run"]["complete"] is True, doc["run"]["incomplete_reasons"]
        assert {t["id"] for t in doc["tests"]} == {
            *EXPECTED_IDS,
            "tests/test_barrier.py::test_barrier",
            "<import>",
        }
        assert_whole_tests(doc)
    assert {"-n" in doc["run"]["selection"] for doc in docs} == {True, False}
    # Same tree, same key: the serial and the -n 4 session recorded the same genomes, but
    # for the file each session's barrier test writes (its own name: a file effect, #29).
    first, second = (without_run(doc) for doc in docs)
    barrier = "tests/test_barrier.py::test_barrier"
    written = [
        {effect["path"].rpartition("/")[2] for effect in _file_effects(doc, barrier)}
        for doc in (first, second)
    ]
    assert sorted(written, key=sorted) == [{"a"}, {"b"}], written
    assert _without(first, barrier) == _without(second, barrier)


def _file_effects(doc: dict[str, Any], test_id: str) -> list[dict[str, Any]]:
    [test] = [test for test in doc["tests"] if test["id"] == test_id]
    effects = test.get("effects") or {}
    phases = effects.values() if isinstance(effects, dict) else [effects]
    return [e for phase in phases for e in (phase or []) if e.get("type") == "file"]


def _without(doc: dict[str, Any], test_id: str) -> dict[str, Any]:
    return {**doc, "tests": [test for test in doc["tests"] if test["id"] != test_id]}


def _diff_live_run(project: Path, store: str, run_id: str) -> dict[str, Any]:
    """Diff a run that is still being recorded against itself: it must read as unverified."""
    done = cli(project, "diff", run_id, run_id, "--store", store, "--json", "-")
    assert done.returncode == 1, done.stderr  # unverified fails --fail-on changed
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@pytest.mark.slow
def test_reading_while_a_session_writes_never_fails_nor_shows_half_a_test(
    project: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    store = ".dg-live"
    writer = start(
        project,
        f"--genome-store={store}",
        "-n",
        "4",
        "tests/test_many.py",
        "tests/test_gate.py",
        env={"GATE": str(gate)},
    )
    reads: list[dict[str, Any]] = []
    live_diffs: list[dict[str, Any]] = []
    listings = 0
    try:
        deadline = time.monotonic() + 120
        while not (gate / "waiting").exists() or not (project / store / "genome.sqlite").exists():
            assert writer.poll() is None, writer.communicate()[0]
            assert time.monotonic() < deadline, "the session never reached the gate"
            time.sleep(0.02)
        while True:
            running = writer.poll() is None
            for command in (["export", "latest"], ["runs"]):
                done = cli(project, *command, "--store", store)
                assert done.returncode == 0, done.stderr
                assert split_progress(done.stderr)[1] == [], done.stderr  # progress only
                if command[0] == "runs":
                    listings += 1
                    continue
                doc = json.loads(done.stdout)
                jsonschema.validate(doc, SCHEMA)
                reads.append(doc)
            if not (gate / "open").exists() and len(reads) >= 3:
                live_diffs.append(_diff_live_run(project, store, reads[-1]["run"]["id"]))
                (gate / "open").write_text("go")  # reads of the live store are in hand
            if not running:
                break
    finally:
        (gate / "open").write_text("go")
        output = finish(writer)
    assert "passed" in output and listings == len(reads)
    # `diffgenome diff` on the run while it was still being written: nothing is unchanged.
    (diff,) = live_diffs
    assert diff["summary"]["unchanged"] == 0
    assert diff["summary"]["unverified"] == diff["summary"]["tests"] > 0
    live = [doc for doc in reads if not doc["run"]["complete"]]
    assert len(live) >= 3  # read before the gate opened, while the session was held
    for doc in reads:
        assert_whole_tests(doc)
        if not doc["run"]["complete"]:
            assert doc["run"]["incomplete_reasons"] == [
                "running: the recording is still in progress"
            ]
    # What a reader saw only grows, and the last read is the whole, complete run.
    seen = [{t["id"] for t in doc["tests"]} for doc in reads]
    assert all(a <= b for a, b in itertools.pairwise(seen))
    final = export(project, store)
    assert final["run"]["complete"] is True
    assert {t["id"] for t in final["tests"]} == {
        *EXPECTED_IDS,
        "tests/test_gate.py::test_gate",
        "<import>",
    }
    assert_whole_tests(final)
