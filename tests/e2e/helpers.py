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


# The plugins the example projects use (xdist's -n, pytest-mock's mocker, pytest-asyncio's and
# anyio's async tests) and the recorder: a session started by this suite loads these and no
# other. pytest's scan of every installed distribution for plugins, and the development
# environment's other plugins (hypothesis, coverage, timeout, ...), cost about a quarter of a
# second per session, and sessions are most of this suite's time. The recorder itself is
# loaded by name, as a diff loads it into an environment where pytest does not load it by
# itself (record/runner.py). A test about the plugins themselves (pytest loading the
# recorder by itself, doctor, the compatibility matrix) is marked ``all_plugins``
# (tests/e2e/conftest.py): its sessions find every plugin as a user's do.
LEAN_PLUGINS = (
    "diffgenome.recording.plugin",
    "xdist.plugin",
    "xdist.looponfail",
    "pytest_mock",
    "pytest_asyncio.plugin",
    "anyio.pytest_plugin",
)


#: The mark of a test (or, as ``pytestmark``, a module) whose sessions load every plugin.
ALL_PLUGINS = pytest.mark.all_plugins


class _Sessions:
    """Whether the sessions of the running test load every plugin (set per test from its
    ``all_plugins`` mark by tests/e2e/conftest.py)."""

    all_plugins = False


SESSIONS = _Sessions()


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY_PREFIXES)}
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if not SESSIONS.all_plugins:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        env["PYTEST_PLUGINS"] = ",".join(LEAN_PLUGINS)
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


#: Who commits in a test's repository, and when: fixed, so that the same tree committed with
#: the same message gets the same commit id on every run and every machine.
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "e2e",
    "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "e2e",
    "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}
#: Settings that a developer's own git configuration could otherwise change (signing asks
#: for a key or a passphrase; another default branch name; hooks from a template).
GIT_SETTINGS = (
    *("-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"),
    *("-c", "init.defaultBranch=main", "-c", "core.autocrlf=false"),
)


def git_env() -> dict[str, str]:
    """The environment of the tests' own git commands: none of the caller's ``GIT_*`` variables
    (a git hook running the suite sets ``GIT_DIR`` and ``GIT_INDEX_FILE``, which would point
    every command at the outer repository), no global or system configuration, and the fixed
    identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_IDENTITY)
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


@dataclass(frozen=True)
class GitRepo:
    """A git repository that a test builds: the one place where the tests set up git.

    Every command runs with :func:`git_env` and :data:`GIT_SETTINGS`, so commits are
    reproducible and unsigned whatever the machine's configuration says. The code under test
    runs its own git commands with the user's environment; only the tests' setup goes here.
    """

    path: Path

    @classmethod
    def init(cls, path: Path) -> GitRepo:
        """A new repository in ``path`` (created if missing; its files stay as they are)."""
        path.mkdir(parents=True, exist_ok=True)
        repo = cls(path)
        repo.git("init", "-q")
        return repo

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``git ARGS`` in the repository, whatever its exit status."""
        return subprocess.run(
            ["git", *GIT_SETTINGS, *args],
            cwd=self.path,
            env=git_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def git(self, *args: str, check: bool = True) -> str:
        """``git ARGS`` in the repository: its standard output; with ``check`` it must succeed."""
        done = self.run(*args)
        if check:
            assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout

    def rev(self, rev: str = "HEAD") -> str:
        """The full commit id of ``rev``."""
        return self.git("rev-parse", "--verify", "-q", f"{rev}^{{commit}}").strip()

    def commit_all(self, message: str) -> str:
        """Commit every change of the tree, new files included; the new commit's id."""
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.rev()

    def commit_tracked(self, message: str) -> str:
        """Commit the changes of tracked files only (``commit -a``); the new commit's id."""
        self.git("commit", "-q", "-a", "-m", message)
        return self.rev()

    def commit_empty(self, message: str) -> str:
        """A commit with the same tree as its parent; its id."""
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.rev()

    def tag(self, name: str, rev: str = "HEAD") -> None:
        self.git("tag", name, rev)

    def worktree(self, path: Path, rev: str = "HEAD") -> GitRepo:
        """A detached worktree of ``rev`` at ``path``."""
        self.git("worktree", "add", "-q", "--detach", str(path), rev)
        return GitRepo(path)

    def clone(self, path: Path, *options: str) -> GitRepo:
        """A clone of this repository at ``path``. With ``options`` (``--depth 1``) the source
        is a ``file://`` address: a local clone copies every object and ignores a depth."""
        source = f"file://{self.path}" if options else str(self.path)
        self.git("clone", "-q", *options, source, os.path.abspath(path))
        return GitRepo(path)


def git_commit(project: Path) -> None:
    """``project`` as a new repository with its files in one commit, "initial"."""
    GitRepo.init(project).commit_all("initial")


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
        errors="surrogateescape",  # a file name pytest prints may be undecodable bytes
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
        errors="surrogateescape",
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
    timeout: float = 120,
) -> Recording:
    """Run ``pytest --genome *args`` and export the run it recorded (``timeout``: a guard
    against a hung session, never a measure of speed)."""
    proc = run_pytest(project, "--genome", *args, env=env, timeout=timeout)
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

#: Two test files: the first imports ``pkg.config``, whose import fills ``pkg.registry``'s
#: ``NAMES``; the second reads that list and imports neither (what another file's import
#: left: tests/e2e/test_diff_selective.py, test_diff_confirm.py).
IMPORT_LEAVES_A_LIST = {
    "tests/test_a_config.py": """
        import pkg.config


        def test_imports_it():
            assert pkg.config
    """,
    "tests/test_z_reads.py": """
        from pkg.registry import NAMES


        def test_reads_the_list():
            assert NAMES[0] > 70
    """,
}


def git_in(repo: Path, *args: str) -> None:
    """A git command in ``repo`` that must succeed (a shorthand of :meth:`GitRepo.git`)."""
    GitRepo(repo).git(*args)


def cli_json(
    repo: Path,
    tmp_path: Path,
    *args: str,
    pytest_args: Sequence[str] = DIFF_PYTEST_ARGS,
    codes: tuple[int, ...] = (0, 1),
) -> tuple[int, Any]:
    """``diffgenome ARGS --json - -- PYTEST_ARGS`` in ``repo`` (temp files under
    ``tmp_path``): the exit status, which must be one of ``codes``, and the parsed JSON."""
    code, document, _ = cli_json_said(repo, tmp_path, *args, pytest_args=pytest_args, codes=codes)
    return code, document


def cli_json_said(
    repo: Path,
    tmp_path: Path,
    *args: str,
    pytest_args: Sequence[str] = DIFF_PYTEST_ARGS,
    codes: tuple[int, ...] = (0, 1),
) -> tuple[int, Any, str]:
    """:func:`cli_json`, with what the command wrote on standard error (its notes)."""
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
    return done.returncode, json.loads(done.stdout), done.stderr


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
