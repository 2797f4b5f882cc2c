"""The ``diffgenome`` command, run as a real subprocess against real stores."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import stat
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest
from e2e.helpers import GitRepo
from rich.console import Console

from diffgenome.analysis import models
from diffgenome.analysis.cli import main, schema_json
from diffgenome.analysis.models import GenomeDocument, Run
from diffgenome.analysis.report.runs import genome_tree
from diffgenome.store.layout import DB_FILE
from diffgenome.store.writer import StoreWriter

COMMIT = "c0ffee1234567890c0ffee1234567890c0ffee12"

PHASES = {
    "setup": {"nodes": [], "branches": []},
    "call": {
        "nodes": [
            {
                "id": 0,
                "parent": None,
                "type": "call",
                "symbol": "py:pkg.mod.f",
                "count": 4,
                "exits": {"returned": 3, "raised:py:builtins.ValueError": 1},
                "args": [{"shape": "int", "digest": "d1"}, {"shape": "str", "digest": "d2"}],
                "results": [{"shape": "int", "digest": "d3"}],
            },
            {
                "id": 1,
                "parent": 0,
                "type": "substitution",
                "mechanism": "mock_object",
                "substitute": "unittest.mock.MagicMock",
                "claimed_target": "py:pkg.mod.g",
                "relation": "patch-target",
                "path": "()",
                "count": 3,
            },
            {
                "id": 2,
                "parent": 0,
                "type": "os_event",
                "kind": "connect",
                "target": "example.com:443",
                "outcome": "refused:egress-guard",
                "count": 1,
            },
        ],
        "branches": [
            {
                "node": 0,
                "site": "py:pkg.mod.f/if[0]",
                "symbol": "py:pkg.mod.f",
                "kind": "if",
                "predicate": "x > 0",
                "outcomes": {"true": 3, "false": 1},
            }
        ],
    },
}


def make_store(store: Path, *, finish: bool = True, run_id: str = "run-1") -> None:
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(
            {
                "id": run_id,
                "commit": COMMIT,
                "dirty": True,
                "python": "CPython 3.12.1",
                "platform": "linux",
                "started_at": "2026-03-01T10:00:00Z",
                "config": {"egress": "loopback"},
                "selection": ["tests/"],
                "tool": "diffgenome 0.1.0",
                "collectors": [{"name": "symbols", "plane": "symbol", "fidelity": "complete"}],
            }
        )
        writer.join_run(run_id, "main")
        writer.add_symbols(
            run_id,
            [{"id": "py:pkg.mod.f", "origin": "repo", "path": "pkg/mod.py", "kind": "function"}],
        )
        writer.add_tests(
            run_id,
            "main",
            [
                {
                    "id": "tests/test_mod.py::test_f",
                    "outcome": "passed",
                    "verified": True,
                    "phases": PHASES,
                },
                {
                    "id": "tests/test_mod.py::test_g[a]",
                    "outcome": "failed",
                    "verified": False,
                    "unverified_reasons": ["a thread outlived the test"],
                    "phases": PHASES,
                },
                {
                    "id": "tests/test_other.py::test_h",
                    "outcome": "skipped",
                    "verified": True,
                    "phases": {},
                },
            ],
        )
        if finish:
            writer.leave_run(run_id, "main", True, [])
            writer.finish_run(run_id, True, [], "2026-03-01T10:01:00Z")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "diffgenome.analysis.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", "PYTHONIOENCODING": "utf-8"},
        timeout=120,
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("diffgenome: error: ") and "; " in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / ".diffgenome"
    make_store(path)
    return path


# -- schema -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "fmt"), [("genome", "diffgenome-genome/2"), ("diff", "diffgenome-diff/3")]
)
def test_schema_is_printed_byte_stable(kind: str, fmt: str) -> None:
    first, second = cli("schema", kind), cli("schema", kind)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout == schema_json(kind)
    schema = json.loads(first.stdout)
    assert schema["title"] == fmt and fmt in schema["$id"]
    assert first.stdout == json.dumps(schema, indent=2, sort_keys=True) + "\n"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_an_export_validates_against_the_published_schema(store: Path) -> None:
    done = cli("export", "latest", "--store", str(store))
    assert done.returncode == 0, done.stderr
    jsonschema.validate(json.loads(done.stdout), json.loads(schema_json("genome")))


# -- happy paths ------------------------------------------------------------------------------


def test_runs_lists_runs(store: Path) -> None:
    done = cli("runs", "--store", str(store))
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("run-1"))
    for cell in ("2026-03-01T10:00:00Z", "c0ffee123456*", "complete", "3", "CPython 3.12.1"):
        assert cell in row


def test_show_lists_the_tests_of_a_run(store: Path) -> None:
    done = cli("show", "run", "--store", str(store))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(
        "tests/test_mod.py::test_f" in line and "passed" in line and "yes" in line for line in lines
    )
    assert any(
        "test_g[a]" in line and "failed" in line and "a thread outlived the test" in line
        for line in lines
    )


def test_show_one_test_draws_its_genome(store: Path) -> None:
    done = cli("show", COMMIT[:8], "test_g", "--store", str(store))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "py:pkg.mod.f \u00d74" in out
    assert "raised:py:builtins.ValueError 1" in out and "args 2" in out and "results 1" in out
    assert "⇄ stand-in mock_object for py:pkg.mod.g (patch-target) \u00d73" in out
    assert "⛔ connect example.com:443 refused:egress-guard \u00d71" in out
    assert "if[0] `x > 0`: true 3 / false 1" in out
    reason = out.index("unverified: a thread outlived the test")
    assert reason < out.index("py:pkg.mod.f \u00d74")
    assert out.index("setup") < out.index("call")


def test_show_test_errors_are_one_line(store: Path) -> None:
    assert "several tests" in assert_one_line_error(
        cli("show", "run-1", "test_", "--store", str(store))
    )
    assert "no test matching" in assert_one_line_error(
        cli("show", "run-1", "nope", "--store", str(store))
    )


def test_export_to_stdout_and_file_agree_and_validate(store: Path, tmp_path: Path) -> None:
    to_stdout = cli("export", "run-1", "--store", str(store))
    dash = cli("export", "run-1", "-o", "-", "--store", str(store))
    out_file = tmp_path / "genome.json"
    to_file = cli("export", "run-1", "-o", str(out_file), "--store", str(store))
    assert to_stdout.returncode == dash.returncode == to_file.returncode == 0
    assert to_stdout.stdout == dash.stdout == out_file.read_text(encoding="utf-8")
    assert to_file.stdout == ""
    document = json.loads(to_stdout.stdout)
    model = GenomeDocument.model_validate(document)
    assert model.run.complete is True
    assert [t.id for t in model.tests] == sorted(t.id for t in model.tests)
    # keys sorted, one test record per line (docs/protocol.md)
    lines = to_stdout.stdout.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    for test in document["tests"]:
        compact = json.dumps(test, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        assert compact in lines or f"{compact}," in lines


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("command", [["export", "run-1", "-o"], ["runs", "--json"]])
def test_an_output_that_is_no_regular_file_is_written_in_place(
    store: Path, tmp_path: Path, command: list[str]
) -> None:
    """``--json /dev/null`` once replaced the machine's null device with a regular file (the
    atomic write moved a temporary file over it). A FIFO stands in for the device here: it
    must still be a FIFO afterwards, and its reader must get the whole document."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = cli(*command, str(fifo), "--store", str(store))
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and json.loads(got[0])
    assert not list(tmp_path.glob("pipe.*.tmp"))


def test_an_output_through_a_symbolic_link_writes_its_target(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "kept" / "genome.json"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "genome.json"
    link.symlink_to(target)
    done = cli("export", "run-1", "-o", str(link), "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert json.loads(target.read_text(encoding="utf-8"))["tests"]


def test_export_as_json_lines_holds_one_test_record_per_line(store: Path, tmp_path: Path) -> None:
    document = json.loads(cli("export", "run-1", "--store", str(store)).stdout)
    out = tmp_path / "tests.jsonl"
    done = cli("export", "run-1", "--format", "jsonl", "-o", str(out), "--store", str(store))
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r.pop("run_id") for r in records] == ["run-1"] * len(document["tests"])
    assert records == document["tests"]
    for record in records:
        models.TestRecord.model_validate(record)


def test_export_indented_for_people_is_the_same_document(store: Path) -> None:
    compact = cli("export", "run-1", "--store", str(store))
    indented = cli("export", "run-1", "--indent", "2", "--store", str(store))
    assert indented.returncode == 0, indented.stderr
    assert json.loads(indented.stdout) == json.loads(compact.stdout)
    assert '\n  "collectors": [' in indented.stdout
    assert_one_line_error(
        cli("export", "run-1", "--indent", "2", "--format", "jsonl", "--store", str(store))
    )


def test_an_invalid_stored_test_writes_no_half_export(store: Path, tmp_path: Path) -> None:
    """A test whose stored phases break the model (here a store/1 row, which is checked in
    full) fails the export in one line, and neither a file nor half a document is left."""
    bad = {"call": {"nodes": [{"id": "not a number"}], "branches": []}}
    conn = sqlite3.connect(store / DB_FILE)
    with conn:
        conn.execute(
            "UPDATE tests SET phases = ? WHERE id = ?",
            (zlib.compress(json.dumps(bad).encode()), "tests/test_other.py::test_h"),
        )
    conn.close()
    out = tmp_path / "genome.json"
    for args in (["-o", str(out)], ["--format", "jsonl", "-o", str(out)], []):
        done = cli("export", "run-1", *args, "--store", str(store))
        message = assert_one_line_error(done)
        assert "tests.2.phases.call" in message, message
        assert done.stdout == ""
        assert not out.exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("genome.json")] == []


def test_an_unfinished_run_exports_as_incomplete(tmp_path: Path) -> None:
    store = tmp_path / "s"
    script = (
        "import os, sys\n"
        f"sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]\n"
        "from test_cli import make_store\n"
        "from pathlib import Path\n"
        "make_store(Path(sys.argv[1]), finish=False)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(store)], check=True)
    runs = cli("runs", "--store", str(store))
    assert "incomplete" in runs.stdout
    done = cli("export", "latest", "--store", str(store))
    run = json.loads(done.stdout)["run"]
    assert run["complete"] is False
    assert run["incomplete_reasons"][0].startswith("interrupted")
    shown = cli("show", "latest", "--store", str(store))
    assert "incomplete: interrupted" in shown.stdout


def test_default_store_is_at_the_top_of_the_git_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub" / "deeper").mkdir(parents=True)
    GitRepo.init(repo)
    make_store(repo / ".diffgenome")
    done = cli("runs", cwd=repo / "sub" / "deeper")
    assert done.returncode == 0, done.stderr
    assert "run-1" in done.stdout

    outside = tmp_path / "plain"
    outside.mkdir()
    make_store(outside / ".diffgenome", run_id="plain-run")
    done = cli("runs", cwd=outside)
    assert done.returncode == 0, done.stderr
    assert "plain-run" in done.stdout


def test_main_runs_in_process(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--store", str(store)]) == 0
    assert "run-1" in capsys.readouterr().out
    assert main(["show", "nothing-like-this", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("diffgenome: error: ") and err.count("\n") == 1


# -- error paths ------------------------------------------------------------------------------


def damage(db: Path, how: str) -> None:
    if how == "truncated":
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 2 + 10])
    elif how == "random":
        db.write_bytes(os.urandom(16384))
    elif how == "future":
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE meta SET value = 'diffgenome-store/9'")
        conn.close()


@pytest.mark.parametrize("how", ["truncated", "random", "future"])
@pytest.mark.parametrize("command", [["runs"], ["show", "latest"], ["export", "run-1"]])
def test_damaged_store_is_one_line_and_untouched(store: Path, how: str, command: list[str]) -> None:
    db = store / DB_FILE
    damage(db, how)
    before = db.read_bytes()
    message = assert_one_line_error(cli(*command, "--store", str(store)))
    assert db.read_bytes() == before
    if how == "future":
        assert "diffgenome-store/9" in message


def test_a_corrupt_test_row_is_one_line_naming_run_and_test(store: Path) -> None:
    conn = sqlite3.connect(store / DB_FILE)
    with conn:
        conn.execute(
            "UPDATE tests SET phases = ? WHERE id = ?", (b"not zlib", "tests/test_mod.py::test_f")
        )
    conn.close()
    message = assert_one_line_error(cli("export", "run-1", "--store", str(store)))
    assert "run-1" in message and "tests/test_mod.py::test_f" in message
    assert cli("show", "run-1", "--store", str(store)).returncode == 0  # the list needs no phases


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "--store", "{tmp}/missing"],
        ["runs", "--store", "{tmp}"],
        ["show", "no-such-run", "--store", "{store}"],
        ["export", "run-1", "-o", "{tmp}/no/such/dir/out.json", "--store", "{store}"],
        ["frobnicate"],
        [],
        ["runs", "--no-such-flag"],
        ["schema", "yaml"],
    ],
)
def test_user_errors_are_one_line(store: Path, tmp_path: Path, args: list[str]) -> None:
    filled = [a.format(tmp=tmp_path / "empty", store=store) for a in args]
    (tmp_path / "empty").mkdir()
    assert_one_line_error(cli(*filled))


def test_help_and_version_exit_zero() -> None:
    assert cli("--help").returncode == 0
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("pytest-diffgenome ")


# -- rendering (in process) -------------------------------------------------------------------


def test_genome_tree_nests_nodes_and_keeps_brackets_literal() -> None:
    phases = json.loads(json.dumps(PHASES))
    phases["call"]["branches"][0]["predicate"] = "[bold]x[/bold] > 0"
    phases["call"]["nodes"].append(
        {"id": 3, "parent": 99, "type": "call", "symbol": "py:pkg.orphan", "count": 1}
    )
    test = models.TestRecord.model_validate(
        {"id": "t::test[1-2]", "outcome": "passed", "verified": True, "phases": phases}
    )
    run = Run.model_validate(
        {
            "id": "r",
            "commit": None,
            "dirty": None,
            "python": "CPython",
            "platform": "linux",
            "started_at": "now",
            "config": {},
            "complete": False,
            "incomplete_reasons": ["interrupted: gone"],
        }
    )
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None).print(genome_tree(run, test))
    out = buffer.getvalue()
    assert "t::test[1-2]" in out
    assert "`[bold]x[/bold] > 0`" in out
    assert "py:pkg.orphan \u00d71" in out
    assert "incomplete: interrupted: gone" in out
    lines = out.splitlines()
    depth = {
        name: next(line.index(name) for line in lines if name in line)
        for name in ("py:pkg.mod.f \u00d74", "⇄ stand-in", "py:pkg.orphan")
    }
    assert depth["⇄ stand-in"] > depth["py:pkg.mod.f \u00d74"] == depth["py:pkg.orphan"]


def test_genome_tree_lists_the_effects_and_what_was_not_seen() -> None:
    """#29: ``diffgenome show RUN TEST`` lists a test's effects after its phases."""
    test = models.TestRecord.model_validate(
        {
            "id": "t::test",
            "outcome": "passed",
            "verified": True,
            "phases": {},
            "effects": [
                {"type": "environ", "phase": "call", "name": "APP_MODE", "change": "unset"},
                {
                    "type": "file",
                    "phase": "setup",
                    "path": "<root>/out",
                    "mode": "append",
                    "digest": None,
                    "state": "removed",
                },
            ],
            "effects_unrecorded": ["output:capture-off"],
        }
    )
    run = Run.model_validate(
        {
            "id": "r",
            "commit": None,
            "dirty": None,
            "python": "CPython",
            "platform": "linux",
            "started_at": "now",
            "config": {},
        }
    )
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None).print(genome_tree(run, test))
    out = buffer.getvalue()
    assert "[call] unset APP_MODE" in out
    assert "[setup] append <root>/out (removed)" in out
    assert "not seen: output:capture-off" in out


def test_a_git_revision_resolves_to_the_run_of_its_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git = GitRepo.init(repo)
    head = git.commit_empty("one")
    with StoreWriter.open(str(repo / ".diffgenome")) as writer:
        writer.begin_run({"id": "of-head", "commit": head, "python": "p", "platform": "p"})
        writer.finish_run("of-head", True, [], "2026-03-01T10:01:00Z")
    done = cli("export", "HEAD", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["run"]["id"] == "of-head"
    git.commit_empty("two")
    assert "no run of HEAD" in assert_one_line_error(cli("export", "HEAD", cwd=repo))


def test_pytests_error_line_carries_no_colour_codes() -> None:
    """humanize's config colours pytest's output even into a pipe; the one-line error
    quoted it with its escape codes."""
    from diffgenome.analysis.record.pytest_output import pytest_error

    output = (
        "\x1b[1m\x1b[31mE   ModuleNotFoundError: No module named 'humanize._version'\x1b[0m\n"
        "\x1b[31m!!!!!!! Interrupted: 1 error during collection !!!!!!!\x1b[0m\n"
    )
    assert pytest_error(output) == "ModuleNotFoundError: No module named 'humanize._version'"
