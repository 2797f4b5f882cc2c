"""Faults around the store while recording: the user's run goes on or stops with one line."""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import make_project, run_pytest

TESTS = {
    "tests/test_d.py": """
        import pathlib
        import shutil

        def test_a():
            pass

        def test_delete_store():
            shutil.rmtree(pathlib.Path(__file__).parents[1] / ".diffgenome")

        def test_c():
            pass
    """,
}


def test_store_deleted_by_a_test_does_not_break_the_session(tmp_path: Path) -> None:
    project = make_project(tmp_path, TESTS)
    done = run_pytest(project, "--genome", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    assert "INTERNALERROR" not in done.stdout + done.stderr


def test_unusable_store_is_one_clear_line(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"tests/test_a.py": "def test_a():\n    pass\n"})
    store = project / ".diffgenome"
    store.mkdir()
    garbage = bytes(range(256)) * 20
    (store / "genome.sqlite").write_bytes(garbage)
    done = run_pytest(project, "--genome", "-q")
    assert done.returncode == 4  # pytest's usage error
    errors = [line for line in (done.stdout + done.stderr).splitlines() if "diffgenome:" in line]
    assert len(errors) == 1 and "not an SQLite database" in errors[0]
    assert "Traceback" not in done.stdout + done.stderr
    assert (store / "genome.sqlite").read_bytes() == garbage  # nothing lost
