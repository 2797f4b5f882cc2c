"""Issue #6, faults during recording: a session that dies or is interrupted keeps the genomes of
the tests that finished, and its run is never read as complete (``docs/reliability.md``).

Each test drives a real ``pytest --genome`` session in a subprocess over a generated project
and reads the store back through the real ``diffgenome`` CLI. ``os._exit`` in a test and a
test deleting the store are proven in test_recording_runs.py and test_faults.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    PY,
    clean_env,
    cli,
    export,
    interrupt_when,
    make_project,
    one_node,
    run_pytest,
    start_pytest,
    test_genome,
    unprivileged,
)

MOD = {"pkg/__init__.py": "", "pkg/mod.py": "def f(n):\n    return n + 1\n"}


def _project(tmp_path: Path, body: str) -> Path:
    return make_project(tmp_path, {**MOD, "tests/test_x.py": body})


def assert_incomplete_with_first_test(project: Path, *reason_parts: str) -> dict[str, Any]:
    """The run is incomplete with a reason, through export, show and runs; test_first kept."""
    doc = export(project)
    run = doc["run"]
    assert run["complete"] is False
    assert run["incomplete_reasons"], "an incomplete run must say why"
    joined = " ".join(run["incomplete_reasons"])
    for part in reason_parts:
        assert part in joined, run["incomplete_reasons"]
    first = test_genome(doc, "::test_first")
    assert first["outcome"] == "passed" and first["verified"] is True
    assert one_node(first["phases"]["call"], "py:pkg.mod.f")["count"] == 1
    shown = cli(project, "show", "latest")
    assert shown.returncode == 0, shown.stderr
    assert "incomplete" in shown.stdout
    runs = cli(project, "runs")
    assert runs.returncode == 0, runs.stderr
    [row] = [line.split() for line in runs.stdout.splitlines() if run["id"] in line]
    assert "incomplete" in row and "complete" not in row
    return doc


def _ids(doc: dict[str, Any]) -> set[str]:
    return {t["id"].rpartition("::")[2] for t in doc["tests"]}


# -- a test that kills its own process -------------------------------------------------------


@pytest.mark.parametrize("signame", ["SIGKILL", "SIGTERM"])
def test_a_test_killing_its_process_leaves_an_incomplete_run(tmp_path: Path, signame: str) -> None:
    project = _project(
        tmp_path,
        f"""
        import os
        import signal

        from pkg.mod import f


        def test_first():
            assert f(1) == 2


        def test_dies():
            f(2)
            os.kill(os.getpid(), signal.{signame})


        def test_never():
            f(3)
        """,
    )
    proc = run_pytest(project, "--genome", "-q")
    assert proc.returncode == -getattr(signal, signame), proc.stdout + proc.stderr
    doc = assert_incomplete_with_first_test(project, "interrupted")
    assert "test_dies" not in _ids(doc) and "test_never" not in _ids(doc)


# -- Ctrl-C in the middle of a session --------------------------------------------------------


def test_ctrl_c_mid_session_marks_the_run_interrupted(tmp_path: Path) -> None:
    ready = tmp_path / "blocked"
    project = _project(
        tmp_path,
        f"""
        import pathlib
        import time

        from pkg.mod import f


        def test_first():
            assert f(1) == 2


        def test_blocks():
            f(2)
            pathlib.Path({str(ready)!r}).write_text("waiting for SIGINT")
            while True:
                time.sleep(0.05)


        def test_never():
            f(3)
        """,
    )
    proc = start_pytest(project, "--genome", "-q", interruptible=True)
    output, _ = interrupt_when(
        proc, ready.exists, "the session never reached test_blocks", poll_s=0.02
    )
    assert proc.returncode == 2, output  # pytest's INTERRUPTED
    assert "KeyboardInterrupt" in output and "INTERNALERROR" not in output
    doc = assert_incomplete_with_first_test(project, "interrupted")
    # Said by the recorder itself at session end, not inferred from a dead writer.
    assert doc["run"]["incomplete_reasons"][0] == "interrupted"
    assert "test_blocks" not in _ids(doc) and "test_never" not in _ids(doc)


# -- a crash inside a fixture -----------------------------------------------------------------


def test_a_fixture_crashing_the_process_leaves_an_incomplete_run(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        """
        import faulthandler

        import pytest

        from pkg.mod import f


        @pytest.fixture
        def crashes():
            f(2)
            faulthandler._sigsegv()  # a crashing C extension, as far as the process can tell
            yield


        def test_first():
            assert f(1) == 2


        def test_uses_the_fixture(crashes):
            pass


        def test_never():
            f(3)
        """,
    )
    proc = run_pytest(project, "--genome", "-q", "-p", "no:faulthandler")
    assert proc.returncode == -signal.SIGSEGV, proc.stdout + proc.stderr
    doc = assert_incomplete_with_first_test(project, "interrupted")
    assert "test_uses_the_fixture" not in _ids(doc) and "test_never" not in _ids(doc)


def test_a_fixture_raising_is_an_error_in_a_complete_run(tmp_path: Path) -> None:
    """An exception in a fixture is an ordinary test error, not a fault of the session."""
    project = _project(
        tmp_path,
        """
        import pytest

        from pkg.mod import f


        @pytest.fixture
        def broken():
            f(2)
            raise RuntimeError("fixture failed")


        def test_first():
            assert f(1) == 2


        def test_uses_the_fixture(broken):
            pass


        def test_after():
            assert f(3) == 4
        """,
    )
    proc = run_pytest(project, "--genome", "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = export(project)
    assert doc["run"]["complete"] is True
    assert test_genome(doc, "::test_uses_the_fixture")["outcome"] == "error"
    assert test_genome(doc, "::test_after")["outcome"] == "passed"


# -- the store folder made read-only by a test ------------------------------------------------


def test_a_test_making_the_store_read_only_does_not_break_the_session(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        """
        import os
        import pathlib

        from pkg.mod import f

        STORE = pathlib.Path(__file__).parents[1] / ".diffgenome"


        def test_first():
            assert f(1) == 2


        def test_freezes_the_store():
            for path in STORE.iterdir():
                path.chmod(0o444)
            STORE.chmod(0o555)


        def test_after():
            assert f(3) == 4
        """,
    )
    prefix = unprivileged()
    try:
        proc = run_pytest(project, "--genome", "-q", prefix=prefix)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output
        assert "3 passed" in proc.stdout
        assert "INTERNALERROR" not in output and "Traceback" not in output
        # The reader works on the frozen store (as the unprivileged user too).
        read = subprocess.run(
            [*prefix, PY, "-m", "diffgenome.analysis.cli", "export", "latest"],
            cwd=project,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        for path in [project / ".diffgenome", *(project / ".diffgenome").iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert read.returncode == 0, read.stderr
    doc = export(project)
    assert doc == json.loads(read.stdout)
    run = doc["run"]
    ids = _ids(doc)
    assert "test_first" in ids and "test_freezes_the_store" in ids
    # Open handles may keep writing after the chmod (then the run is whole), or the store
    # refuses (then diffgenome said so once and the run is incomplete): never a half-truth.
    if run["complete"]:
        assert ids == {"<import>", "test_first", "test_freezes_the_store", "test_after"}
        assert "diffgenome: the store" not in output
    else:
        assert run["incomplete_reasons"]
        assert output.count("diffgenome: the store") == 1
