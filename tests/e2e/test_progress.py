"""Progress of ``diffgenome diff`` and ``export`` as a person and a CI log see it.

Each test runs the real command in a subprocess over a real two-commit git project: once
with standard error piped (what a CI log gets), once with standard error a pseudo-terminal
(what a person at a terminal gets). Standard output is a pipe throughout, with ``--json -``
on it, which must stay the document and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    DIFF_PYTEST_ARGS,
    DURATION,
    PY,
    GitRepo,
    clean_env,
    make_project,
    split_progress,
    write_files,
)

#: How the progress says which core recorded a side: the development install's, compiled.
CORE = "with the compiled core"

PROJECT = {
    "calc/__init__.py": "",
    "calc/core.py": """
        def add(a, b):
            return a + b
    """,
    "tests/test_core.py": """
        import time

        import pytest

        from calc import core


        @pytest.mark.parametrize("a", range(5))
        def test_add(a):
            time.sleep(0.05)  # time for pytest's output to come in pieces
            assert core.add(a, 1) == a + 1


        def test_other():
            assert True
    """,
}
# For a > 1 the head goes through a helper that returns a float (equal, so the tests pass):
# three tests change, and are confirmed. (Through a helper alone they would be restructured.)
CHANGED = """
def _swap(a, b):
    return float(b + a)


def add(a, b):
    if a > 1:
        return _swap(a, b)
    return a + b
"""
SHA = r"\([0-9a-f]{12}\)"
# A side's stored genomes are read after both sides are recorded and the code changes read:
# those that both sides hold alike, and that ran no changed code, are not read.
ALIKE = r"(?: \(\d+ the same genome in both runs: not read\))?"
CONTROL = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
SGR = re.compile(rb"\x1b\[[0-9;]*m")


TERMINAL = {"TERM": "xterm-256color"}


@dataclass(frozen=True)
class Recorded:
    path: Path
    head_run: str
    #: The temp folder the recordings were made under: a diff reuses them only in the same
    #: environment (the same temp folder, the same variables; docs/diffing.md "Reuse").
    tmp: Path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The project at two commits, both recorded once (a diff reuses those recordings)."""
    project = make_project(tmp_path_factory.mktemp("progress"), PROJECT)
    write_files(project, {"calc/core.py": CHANGED})
    GitRepo(project).commit_tracked("add through a helper")
    tmp = tmp_path_factory.mktemp("tmp")
    done = run_cli(
        project,
        tmp,
        *("diff", "HEAD~1", "HEAD", "--no-confirm", "-q", "--json", "-"),
        *("--", *DIFF_PYTEST_ARGS),
        env=TERMINAL,  # what on_a_terminal gives, so that its diffs reuse these recordings
    )
    assert done.returncode == 1, done.stderr.decode()
    return Recorded(project, json.loads(done.stdout)["head"]["run"], tmp)


@pytest.fixture
def repo(recorded: Recorded) -> Path:
    return recorded.path


def run_cli(
    repo: Path,
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    stderr: int = subprocess.PIPE,
) -> subprocess.CompletedProcess[bytes]:
    """The CLI with standard output a pipe; bytes, so that a ``\\r`` is seen as written."""
    return subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", *args],
        cwd=repo,
        env=clean_env({"TMPDIR": str(tmp_path), "COLUMNS": "200", **(env or {})}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        timeout=300,
        check=False,
    )


def the_document(stdout: bytes) -> dict[str, Any]:
    """Standard output is the JSON document and nothing else."""
    text = stdout.decode()
    assert text.startswith("{") and text.endswith("}\n"), text[:200]
    document: dict[str, Any] = json.loads(text)
    assert document["format"] == "diffgenome-diff/3"
    return document


def one(pattern: str, lines: list[str]) -> int:
    """The index of the one line that ``pattern`` matches whole."""
    found = [i for i, line in enumerate(lines) if re.fullmatch(pattern, line)]
    assert len(found) == 1, (pattern, lines)
    return found[0]


def test_a_log_gets_plain_step_lines_with_durations(repo: Path, tmp_path: Path) -> None:
    done = run_cli(
        repo,
        tmp_path,
        *("diff", "HEAD~1", "HEAD", "--rerecord", "--json", "-", "--", *DIFF_PYTEST_ARGS),
        env={"DIFFGENOME_PROGRESS_INTERVAL": "0.01"},
    )
    assert done.returncode == 1, done.stderr.decode()
    document = the_document(done.stdout)
    assert document["summary"]["changed"] == 3
    # A log keeps whatever it is sent: no carriage return, no escape sequence, whole lines.
    assert b"\r" not in done.stderr and b"\x1b" not in done.stderr
    assert done.stderr.endswith(b"\n")
    lines, other = split_progress(done.stderr.decode())
    # Besides progress, only notes: the document on standard output cannot hold them.
    assert all(line.startswith("diffgenome: note: ") for line in other), other
    # One last line per step, with its duration, in the order the work is done.
    base = f"base HEAD~1 {SHA}"
    head = f"head HEAD {SHA}"
    order = [
        one(rf"diffgenome: recorded {base}: 6 tests {CORE} in {DURATION}", lines),
        one(rf"diffgenome: recorded {head}: 6 tests {CORE} in {DURATION}", lines),
        one(rf"diffgenome: loaded {base}: run \S+, 6 tests{ALIKE} in {DURATION}", lines),
        one(rf"diffgenome: loaded {head}: run \S+, 6 tests{ALIKE} in {DURATION}", lines),
        one(rf"diffgenome: diffed 6 tests in {DURATION}", lines),  # as pytest counts them
        # One round, base and head side by side: either may end first.
        *sorted(
            one(
                rf"diffgenome: recorded {side} again \(1 of 2\): 3 tests {CORE} in {DURATION}",
                lines,
            )
            for side in (base, head)
        ),
        # The three changes are deterministic: the first round showed them as first recorded.
        one(
            "diffgenome: confirmed 3 tests that differ: recorded them once more on each side "
            f"in {DURATION}",
            lines,
        ),
        one(rf"diffgenome: diffed again, with the confirmations: 6 tests in {DURATION}", lines),
    ]
    assert order == sorted(order), lines
    # With a short interval, lines on how far a recording is come between; the count is in
    # tests of pytest's collected total.
    counted = [
        line
        for line in lines[: order[0]]
        if re.fullmatch(rf"diffgenome: recording {base}: [0-6]/6 tests, {DURATION} so far", line)
    ]
    assert counted, lines


def test_quiet_says_nothing_and_standard_output_is_the_document(repo: Path, tmp_path: Path) -> None:
    diff = ("diff", "HEAD~1", "HEAD", "--no-confirm", "--json", "-")
    env = {"DIFFGENOME_PROGRESS_INTERVAL": "0"}
    said = run_cli(repo, tmp_path, *diff, "--", *DIFF_PYTEST_ARGS, env=env)
    assert said.returncode == 1 and said.stderr, said.stderr.decode()
    quiet = run_cli(repo, tmp_path, *diff, "-q", "--", *DIFF_PYTEST_ARGS, env=env)
    assert quiet.returncode == 1
    assert quiet.stderr == b""
    assert the_document(quiet.stdout) == the_document(said.stdout)


def test_export_says_what_it_loads_and_exports(recorded: Recorded, tmp_path: Path) -> None:
    repo, run = recorded.path, recorded.head_run
    done = run_cli(repo, tmp_path, "export", run)
    assert done.returncode == 0, done.stderr.decode()
    document = json.loads(done.stdout)  # nothing but the genome document
    assert document["run"]["id"] == run
    lines = done.stderr.decode().splitlines()
    assert b"\r" not in done.stderr and b"\x1b" not in done.stderr
    # Read, checked and written test by test: one step.
    assert re.fullmatch(
        rf"diffgenome: exported run {run}: 6 tests and the <import> record, "
        rf"a diffgenome-genome/2 document of \d+ kB "
        rf"in {DURATION}",
        lines[0],
    ), lines
    assert len(lines) == 1
    quiet = run_cli(repo, tmp_path, "export", run, "-q", "-o", str(tmp_path / "run.json"))
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, b"", b"")
    assert json.loads((tmp_path / "run.json").read_text()) == document


def on_a_terminal(
    repo: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """The CLI with standard error a pseudo-terminal, read while it runs (a terminal that
    nobody reads would block the writer), and standard output a pipe."""
    main, child = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: every writer has closed its end
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = run_cli(repo, tmp_path, *args, env={**TERMINAL, **(env or {})}, stderr=child)
    finally:
        os.close(child)
        reader.join(timeout=60)
        os.close(main)
    return done, b"".join(chunks)


def test_a_terminal_gets_a_live_line_and_the_last_line_of_each_step(
    recorded: Recorded,
) -> None:
    repo, tmp = recorded.path, recorded.tmp
    done, raw = on_a_terminal(
        repo, tmp, "diff", "HEAD~1", "HEAD", "--json", "-", "--", *DIFF_PYTEST_ARGS
    )
    assert done.returncode == 1
    assert the_document(done.stdout)["summary"]["changed"] == 3
    shown = CONTROL.sub(b"", raw).decode()
    # The live line: the steps under way, the outer step first (base and head are confirmed
    # side by side, either may begin first), redrawn in place (erased with ESC [2K), with
    # the cursor hidden meanwhile and shown again at the end.
    assert re.search(
        rf"diffgenome: confirming 3 tests that differ; recording (base HEAD~1|head HEAD) {SHA} "
        r"again \(1 of 2\)",
        shown,
    ), shown
    assert b"\x1b[2K" in raw
    assert raw.rindex(b"\x1b[?25h") > raw.rindex(b"\x1b[?25l")
    assert SGR.search(raw)  # colour (and bold) on a terminal
    # The steps' last lines stay.
    for pattern in (
        r"diffgenome: reusing run \S+ of HEAD~1 \([0-9a-f]{12}, recorded by diff\)",
        rf"diffgenome: loaded base HEAD~1 {SHA}: run \S+, 6 tests{ALIKE} in {DURATION}",
        rf"diffgenome: diffed 6 tests in {DURATION}",
        rf"diffgenome: recorded head HEAD {SHA} again \(1 of 2\): 3 tests {CORE} in {DURATION}",
        rf"diffgenome: confirmed 3 tests that differ: .* in {DURATION}",
    ):
        assert re.search(pattern, shown), (pattern, shown)


def test_no_color_keeps_the_live_line_without_colour(repo: Path, tmp_path: Path) -> None:
    args = ("diff", "HEAD~1", "HEAD", "--no-confirm", "--json", "-", "--", *DIFF_PYTEST_ARGS)
    done, raw = on_a_terminal(repo, tmp_path, *args, env={"NO_COLOR": "1"})
    assert done.returncode == 1
    the_document(done.stdout)
    assert b"\x1b[2K" in raw  # still live
    assert not SGR.search(raw), raw
    assert re.search(rf"diffgenome: diffed 6 tests in {DURATION}", CONTROL.sub(b"", raw).decode())
