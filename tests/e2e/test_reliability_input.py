"""Issue #6, bad input: a store the CLI cannot read is one line and exit code 2, never a
traceback, and the store stays byte for byte as it was; a project whose tests cannot be
imported, or that has none, is recorded without a claim it cannot back (``docs/reliability.md``).

Truncated, random and future-version stores under runs/show/export are proven in
tests/unit/test_cli.py::test_damaged_store_is_one_line_and_untouched; this file adds a store
locked by another process, a read-only store folder, and the target projects.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    PY,
    STORE,
    clean_env,
    export,
    make_project,
    record,
    run_pytest,
    test_genome,
    unprivileged,
)

COMMANDS = [["runs"], ["show", "latest"], ["export", "latest"]]

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/mod.py": "def f(n):\n    return n + 1\n",
    "tests/test_mod.py": """
        from pkg.mod import f


        def test_f():
            assert f(1) == 2


        def test_g():
            assert f(2) == 3
    """,
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One recorded project; tests that damage or lock its store work on a copy."""
    project = make_project(tmp_path_factory.mktemp("input"), PROJECT)
    return project, record(project)


@pytest.fixture
def store(recorded: tuple[Path, dict[str, Any]], tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "store"
    shutil.copytree(recorded[0] / STORE, copy)
    try:
        yield copy
    finally:
        for path in [copy, *copy.rglob("*")]:
            if path.exists():
                path.chmod(0o755 if path.is_dir() else 0o644)


def snapshot(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(store.iterdir()) if p.is_file()}


# Runs the real CLI with a shorter wait for a busy store than the default 30 s: the default of
# ``StoreReader.open``'s timeout is the only thing changed, the lock handling is the real one.
SHORT_WAIT = """
import sys
from diffgenome.store.reader import StoreReader
StoreReader.open.__func__.__defaults__ = (0.5,)
from diffgenome.analysis.cli import main
sys.exit(main(sys.argv[1:]))
"""


def cli(
    *args: str, prefix: list[str] | None = None, short_wait: bool = False
) -> subprocess.CompletedProcess[str]:
    entry = ["-c", SHORT_WAIT] if short_wait else ["-m", "diffgenome.analysis.cli"]
    return subprocess.run(
        [*(prefix or []), PY, *entry, *args],
        env=clean_env({"COLUMNS": "200"}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("diffgenome: error: ") and "; " in lines[0], lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""
    return lines[0]


# -- a store locked by another process ---------------------------------------------------------

HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive-mode":
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
if sys.argv[2] == "exclusive-mode":
    conn.execute("SELECT COUNT(*) FROM runs").fetchone()
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
conn.close()
"""


class Holder:
    """Another process holding the store's database locked until ``release``."""

    def __init__(self, db: Path, mode: str) -> None:
        self.proc = subprocess.Popen(
            [PY, "-c", HOLD_LOCK, str(db), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "locked"  # waits for the lock

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def test_a_store_locked_exclusively_by_another_process_is_one_line(store: Path) -> None:
    before = snapshot(store)
    holder = Holder(store / "genome.sqlite", "exclusive-mode")
    try:
        for command in COMMANDS:
            message = assert_one_line_error(cli(*command, "--store", str(store), short_wait=True))
            assert "locked" in message, message
        assert snapshot(store) == before
    finally:
        holder.release()
    # The holder's own close may drop the empty WAL file; the database itself is untouched.
    assert snapshot(store)["genome.sqlite"] == before["genome.sqlite"]
    assert cli("export", "latest", "--store", str(store)).returncode == 0


def test_a_writer_holding_an_exclusive_transaction_does_not_block_readers(
    store: Path, recorded: tuple[Path, dict[str, Any]]
) -> None:
    """In WAL mode ``BEGIN EXCLUSIVE`` shuts out writers only: reads see the last commit."""
    holder = Holder(store / "genome.sqlite", "transaction")
    try:
        done = cli("export", "latest", "--store", str(store))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == recorded[1]
        for command in COMMANDS[:2]:
            assert cli(*command, "--store", str(store)).returncode == 0
    finally:
        holder.release()


# -- read-only store folders (root ignores permissions: capabilities are dropped) --------------


def test_the_cli_reads_a_read_only_store_and_leaves_it_alone(
    store: Path, recorded: tuple[Path, dict[str, Any]]
) -> None:
    prefix = unprivileged()
    for path in store.iterdir():
        path.chmod(0o444)
    store.chmod(0o555)
    before = snapshot(store)
    for command in COMMANDS:
        done = cli(*command, "--store", str(store), prefix=prefix)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
    done = cli("export", "latest", "--store", str(store), prefix=prefix)
    assert json.loads(done.stdout) == recorded[1]
    assert snapshot(store) == before


def test_an_unreadable_store_folder_is_one_line(store: Path) -> None:
    prefix = unprivileged()
    store.chmod(0o000)
    for command in COMMANDS:
        message = assert_one_line_error(cli(*command, "--store", str(store), prefix=prefix))
        assert "permission" in message.lower(), message
    store.chmod(0o755)
    assert cli("export", "latest", "--store", str(store)).returncode == 0


def test_recording_into_a_read_only_store_is_one_usage_line(tmp_path: Path) -> None:
    prefix = unprivileged()
    project = make_project(tmp_path, PROJECT)
    store = project / STORE
    run_pytest(project, "--genome", "-q").check_returncode()
    for path in store.iterdir():
        path.chmod(0o444)
    store.chmod(0o555)
    before = snapshot(store)
    try:
        done = run_pytest(project, "--genome", prefix=prefix)
        assert snapshot(store) == before
    finally:
        store.chmod(0o755)
        for path in store.iterdir():
            path.chmod(0o644)
    output = done.stdout + done.stderr
    assert done.returncode == 4, output  # pytest's usage error, before any test ran
    errors = [line for line in output.splitlines() if "diffgenome:" in line]
    assert len(errors) == 1 and "; " in errors[0], output
    assert "Traceback" not in output and "passed" not in done.stdout


# -- target projects that cannot be collected, or have nothing to collect ----------------------

BROKEN = {
    "syntax": "def test_a(:\n    pass\n",
    "missing-dependency": "import no_such_dependency_xyz\n\n\ndef test_a():\n    pass\n",
}


def _record_any(project: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    done = run_pytest(project, "--genome", *args)
    assert "INTERNALERROR" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert "Warning: diffgenome" not in done.stdout + done.stderr
    return done, export(project)


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_test_module_that_fails_to_import_claims_nothing(tmp_path: Path, kind: str) -> None:
    project = make_project(
        tmp_path,
        {**PROJECT, "tests/test_broken.py": BROKEN[kind]},
    )
    done, doc = _record_any(project)
    assert done.returncode == 2  # pytest: interrupted by collection errors
    assert doc["run"]["complete"] is False
    assert "interrupted" in doc["run"]["incomplete_reasons"]
    [only] = doc["tests"]
    assert only["id"] == "<import>"
    assert only["outcome"] == "error"  # the import failed: not a pass


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_collection_errors_let_the_other_tests_run_and_import_says_error(
    tmp_path: Path, kind: str
) -> None:
    project = make_project(tmp_path, {**PROJECT, "tests/test_broken.py": BROKEN[kind]})
    done, doc = _record_any(project, "--continue-on-collection-errors")
    assert done.returncode == 1
    assert doc["run"]["complete"] is True
    assert {t["id"] for t in doc["tests"]} == {
        "<import>",
        "tests/test_mod.py::test_f",
        "tests/test_mod.py::test_g",
    }
    assert test_genome(doc, "<import>")["outcome"] == "error"
    assert test_genome(doc, "::test_f")["outcome"] == "passed"
    if kind == "missing-dependency":
        nodes = test_genome(doc, "<import>")["phases"]["call"]["nodes"]
        broken = [n for n in nodes if n.get("symbol") == "py:tests.test_broken"]
        assert [n["exits"] for n in broken] == [{"raised:py:builtins.ModuleNotFoundError": 1}]


@pytest.mark.parametrize("layout", ["no-files", "no-test-functions"])
def test_a_project_without_tests_records_an_empty_complete_run(tmp_path: Path, layout: str) -> None:
    files = {"pkg/__init__.py": "", "pkg/mod.py": "def f(n):\n    return n\n"}
    if layout == "no-test-functions":
        files["tests/test_nothing.py"] = "from pkg.mod import f\n\nVALUE = f(1)\n"
    project = make_project(tmp_path, files)
    done, doc = _record_any(project)
    assert done.returncode == 5  # pytest: no tests collected
    assert doc["run"]["complete"] is True
    [only] = doc["tests"]
    assert (only["id"], only["outcome"]) == ("<import>", "passed")
    nodes = only["phases"].get("call", {}).get("nodes", [])
    symbols = {n.get("symbol") for n in nodes}
    if layout == "no-files":
        assert nodes == []
    else:
        assert {"py:tests.test_nothing", "py:pkg.mod.f"} <= symbols
