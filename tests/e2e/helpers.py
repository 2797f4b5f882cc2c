"""Shared machinery of the end-to-end tests: build a project, record it with a real pytest
subprocess, read the run back through the CLI, and look things up in the document.

Every recording goes through ``python -m pytest`` in its own process and every read through
``python -m diffgenome.analysis.cli export``, so these tests exercise exactly what a user runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECTS = REPO / "tests" / "projects"
SCHEMA: dict[str, Any] = json.loads(
    (REPO / "docs" / "schema" / "diffgenome-genome-2.schema.json").read_text()
)
DIFF_SCHEMA: dict[str, Any] = json.loads(
    (REPO / "docs" / "schema" / "diffgenome-diff-3.schema.json").read_text()
)
PY = sys.executable
STORE = ".diffgenome"

# Environment of the outer pytest (xdist worker ids, pytest-cov's subprocess hooks, a
# coverage core choice) must not leak into the session under test.
_LEAKY_PREFIXES = ("PYTEST_", "COV_CORE_", "COVERAGE_", "DIFFGENOME_")

# The project's pytest must not pick up plugins that reorder tests or change output.
BASE_ARGS = (
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
    "-p",
    "no:hypothesispytest",  # not used by the projects; its import costs most of a second
    "-W",
    "ignore::DeprecationWarning",
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY_PREFIXES)}
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if extra:
        env.update(extra)
    return env


def default_sigint() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT.

    A shell without job control starts background jobs with SIGINT ignored, and children
    inherit that; Python then never turns SIGINT into KeyboardInterrupt. CI runners (and
    ``cmd &``) do this, so the child gets the default action back before it starts.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def unprivileged() -> list[str]:
    """A prefix that runs a command as root without capabilities, so that file permissions
    bind (root ignores them otherwise); [] when not root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be tested")
    return [setpriv, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"]


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def git_commit(project: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            [
                *("git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"),
                *("-c", "commit.gpgsign=false", *args),
            ],
            cwd=project,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "initial")


def make_project(
    tmp_path: Path, files: Mapping[str, str], base: str | None = None, name: str = "proj"
) -> Path:
    """A git-committed project in ``tmp_path/name``: a copy of ``tests/projects/<base>``
    (when given) with ``files`` (dedented) written over it."""
    project = tmp_path / name
    if base is not None:
        shutil.copytree(
            PROJECTS / base, project, ignore=shutil.ignore_patterns("__pycache__", ".diffgenome")
        )
    project.mkdir(parents=True, exist_ok=True)
    write_files(project, files)
    git_commit(project)
    return project


def pytest_command(*args: str, prefix: Sequence[str] = ()) -> list[str]:
    """``python -m pytest`` with the fixed arguments, after ``prefix`` (e.g. setpriv)."""
    return [*prefix, PY, "-m", "pytest", *BASE_ARGS, *args]


def run_pytest(
    project: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        pytest_command(*args, prefix=prefix),
        cwd=project,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_pytest(
    project: Path, *args: str, env: Mapping[str, str] | None = None, interruptible: bool = False
) -> subprocess.Popen[str]:
    """A pytest session running in the background, its output (stderr included) on stdout;
    ``interruptible`` for one that a test stops with SIGINT (see :func:`interrupt_when`)."""
    return subprocess.Popen(
        pytest_command(*args),
        cwd=project,
        env=clean_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint if interruptible else None,
    )


def interrupt_when(
    proc: subprocess.Popen[str], ready: Callable[[], bool], never: str, poll_s: float = 0.05
) -> tuple[str, str]:
    """Send SIGINT to ``proc`` once ``ready()`` holds and return its (stdout, stderr).

    ``never`` is the failure message when it does not get there in two minutes. The child is
    killed on any way out, so a failing test leaves nothing running.
    """
    try:
        deadline = time.monotonic() + 120
        while not ready():  # synchronisation, not an assertion about time
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, never
            time.sleep(poll_s)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out, err or ""


def cli(
    project: Path, *args: str, columns: int = 200, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the ``diffgenome`` CLI in ``project`` (never raises on a non-zero exit)."""
    return subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", *args],
        cwd=project,
        env=clean_env({"COLUMNS": str(columns)}),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def export(project: Path, store: str | Path = STORE, run: str = "latest") -> dict[str, Any]:
    """The run as a ``diffgenome-genome/2`` document, validated against the published schema:
    everything it recorded, the previews of ``--genome-preview`` included (``--with-previews``;
    a plain export leaves them out)."""
    done = subprocess.run(
        [
            PY,
            "-m",
            "diffgenome.analysis.cli",
            "export",
            run,
            "--store",
            str(store),
            "--with-previews",
        ],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    return doc


@dataclass
class Recording:
    doc: dict[str, Any]
    proc: subprocess.CompletedProcess[str]

    @property
    def output(self) -> str:
        return self.proc.stdout + self.proc.stderr


def record_full(
    project: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    returncode: int | None = 0,
    store: str | Path = STORE,
) -> Recording:
    """Run ``pytest --genome *args`` and export the run it recorded."""
    proc = run_pytest(project, "--genome", *args, env=env)
    if returncode is not None:
        assert proc.returncode == returncode, proc.stdout + proc.stderr
    return Recording(export(project, store), proc)


def record(project: Path, *args: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run ``pytest --genome *args`` (which must pass) and return the exported document."""
    return record_full(project, *args, env=env).doc


def test_genome(doc: Mapping[str, Any], test_id_suffix: str) -> dict[str, Any]:
    """The one test whose id ends with ``test_id_suffix``."""
    found = [t for t in doc["tests"] if t["id"].endswith(test_id_suffix)]
    ids = [t["id"] for t in doc["tests"]]
    assert len(found) == 1, f"{test_id_suffix!r} matches {len(found)} of {ids}"
    return dict(found[0])


test_genome.__test__ = False  # type: ignore[attr-defined]  # not a test, despite its name


def nodes_by_symbol(phase: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Call nodes of a phase grouped by symbol (a symbol may sit on several paths)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for node in phase["nodes"]:
        if node["type"] == "call":
            out.setdefault(node["symbol"], []).append(node)
    return out


def one_node(phase: Mapping[str, Any], symbol: str) -> dict[str, Any]:
    found = nodes_by_symbol(phase).get(symbol, [])
    assert len(found) == 1, f"{symbol}: {len(found)} nodes in {symbols_of(phase)}"
    return found[0]


def symbols_of(phase: Mapping[str, Any]) -> set[str]:
    return {n["symbol"] for n in phase["nodes"] if n["type"] == "call"}


def node_path(phase: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    """Symbols (or ``kind target`` for OS events) from the top of the tree down to ``node``."""
    by_id = {n["id"]: n for n in phase["nodes"]}
    path: list[str] = []
    current: Mapping[str, Any] | None = node
    while current is not None:
        label = current.get("symbol") or f"{current.get('kind')} {current.get('target')}"
        path.append(str(label))
        parent = current["parent"]
        current = by_id[parent] if parent is not None else None
    return path[::-1]


def parent_symbol(phase: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    if node["parent"] is None:
        return None
    parent = next(n for n in phase["nodes"] if n["id"] == node["parent"])
    return str(parent.get("symbol"))


def os_events(phase: Mapping[str, Any], kind: str | None = None) -> list[dict[str, Any]]:
    return [
        n for n in phase["nodes"] if n["type"] == "os_event" and (kind is None or n["kind"] == kind)
    ]


def branches_by_site(phase: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """``site -> {"true": n, "false": m}`` summed over nodes."""
    out: dict[str, dict[str, int]] = {}
    for branch in phase["branches"]:
        counts = out.setdefault(branch["site"], {"true": 0, "false": 0})
        counts["true"] += branch["outcomes"]["true"]
        counts["false"] += branch["outcomes"]["false"]
    return out


def symbol_table(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in doc["symbols"]}


def all_phase_symbols(doc: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for test in doc["tests"]:
        for phase in test["phases"].values():
            found |= symbols_of(phase)
    return found


def without_run(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document minus what legitimately differs between two recordings of one tree."""
    return {k: v for k, v in doc.items() if k != "run"}


def test_summary(doc: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Per test: outcome, verified, reasons and phases -- what must not depend on scheduling."""
    return {
        t["id"]: (t["outcome"], t["verified"], tuple(t["unverified_reasons"]), t["phases"])
        for t in doc["tests"]
    }


test_summary.__test__ = False  # type: ignore[attr-defined]


def diffgenome_notices(output: str) -> list[str]:
    """What the recorder said to the user: its one-line notices, never Python warnings (the
    header lines that name the recording core and the egress policy, and the summary line
    that names the run, are not notices)."""
    headers = ("diffgenome: recording with", "diffgenome: egress ", "diffgenome: run ")
    return [
        line
        for line in output.splitlines()
        if line.startswith("diffgenome: ") and not line.startswith(headers)
    ]


def reasons_of(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    return {t["id"]: list(t["unverified_reasons"]) for t in doc["tests"]}


def ids(items: Iterable[Mapping[str, Any]]) -> list[str]:
    return [str(i["id"]) for i in items]


DIFF_PYTEST_ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly")


def git_in(repo: Path, *args: str) -> None:
    """A git command in ``repo`` as a fixed author (commits, worktrees)."""
    subprocess.run(
        ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def cli_json(
    repo: Path,
    tmp_path: Path,
    *args: str,
    pytest_args: Sequence[str] = DIFF_PYTEST_ARGS,
    codes: tuple[int, ...] = (0, 1),
) -> tuple[int, Any]:
    """``diffgenome ARGS --json - -- PYTEST_ARGS`` in ``repo`` (temp files under
    ``tmp_path``): the exit status, which must be one of ``codes``, and the parsed JSON."""
    done = subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", *args, "--json", "-", "--", *pytest_args],
        cwd=repo,
        env=clean_env({"TMPDIR": str(tmp_path)}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in codes, done.stderr
    return done.returncode, json.loads(done.stdout)


#: A duration as progress writes it: ``0.4 s``, ``2 min 05 s``, ``1 h 02 min``.
DURATION = r"(?:\d+\.\d s|\d+ min \d\d s|\d+ h \d\d min)"
#: What ``diffgenome`` says on standard error about its work when that is a log
#: (docs/diffing.md, "Progress"): a step's last line with its duration, a progress line, or
#: the note that a recording is reused.
PROGRESS_LINE = re.compile(
    rf"diffgenome: (?!error: |note: )(?:.+ in {DURATION}|.+: .*{DURATION} so far|reusing run .+)"
)


def split_progress(stderr: str) -> tuple[list[str], list[str]]:
    """Standard error's progress lines, and the other lines (errors, warnings, notes)."""
    progress: list[str] = []
    other: list[str] = []
    for line in stderr.splitlines():
        (progress if PROGRESS_LINE.fullmatch(line) else other).append(line)
    return progress, other


class CountingServer:
    """A loopback TCP listener in the harness that counts the connections that arrive and
    answers anything that looks like HTTP with ``ok``."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self._handle(conn)

    def _handle(self, conn: socket.socket) -> None:
        self.accepted += 1
        with conn:
            conn.settimeout(30)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            except OSError:
                return

    def stop(self) -> int:
        """Stop serving; every connection that completed its handshake is counted."""
        self._stop.set()
        self._thread.join()
        self.sock.setblocking(False)
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                break
            conn.close()
            self.accepted += 1
        self.sock.close()
        return self.accepted
