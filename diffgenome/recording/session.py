"""One recording session: the collector's phases mapped onto pytest's test protocol.

The ``Recorder`` is registered as a pytest plugin when ``--genome`` is on. It brackets each
setup/call/teardown phase, turns the phase trees into genome objects, decides per test
whether its capture is complete, and writes tests to the store in batches. Under
pytest-xdist the controller owns the run (creates and finishes it) and each worker records
its own tests into it.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Generator
from typing import Any

import pytest

from diffgenome import __version__
from diffgenome.protocol.formats import GENOME_FORMAT
from diffgenome.protocol.store import recording_key
from diffgenome.protocol.vocab import IMPORT_TEST_ID
from diffgenome.recording.collect import stable, values
from diffgenome.recording.collect.egress import EgressGuard
from diffgenome.recording.collect.scope import Scope, discover_roots
from diffgenome.recording.collect.standins import StandIns
from diffgenome.recording.collect.tracer import Bounds, Tracer
from diffgenome.recording.genome import consistency_problems, export_phase
from diffgenome.recording.notices import say
from diffgenome.recording.store import StoreError, StoreWriter
from diffgenome.recording.subtests import SubtestCapture

_enumerate_threads = threading.enumerate
# Tests are written as soon as they finish: a session that dies without running its hooks
# (``os._exit`` in a test, a segfault, SIGKILL) must still leave every finished test in the
# store. A WAL commit without fsync costs far less than a test.
BATCH_SIZE = 1


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _git(rootdir: str, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", rootdir, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _outcome(reports: dict[str, pytest.TestReport]) -> str:
    """One outcome per test from its phase reports, in pytest's own vocabulary."""
    setup = reports.get("setup")
    call = reports.get("call")
    teardown = reports.get("teardown")
    if setup is not None and setup.failed:
        return "error"
    if setup is not None and setup.skipped:
        return "xfailed" if hasattr(setup, "wasxfail") else "skipped"
    outcome = "passed"
    if call is not None:
        if hasattr(call, "wasxfail"):
            outcome = "xfailed" if call.skipped else "xpassed"
        elif call.failed:
            outcome = "failed"
        elif call.skipped:
            outcome = "skipped"
    if teardown is not None and teardown.failed:
        return "error"
    return outcome


class Recorder:
    """The plugin object of a recording session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootdir = str(config.rootpath)
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.worker = str(workerinput["workerid"]) if workerinput else "main"
        self.is_worker = workerinput is not None
        self.is_controller = not self.is_worker and _xdist_distributing(config)
        store_opt = config.getoption("genome_store") or config.getini("genome_store")
        self.store_path = str(store_opt) if store_opt else self.rootdir + "/.diffgenome"
        if not self.store_path.startswith("/"):
            self.store_path = str(config.invocation_params.dir / self.store_path)
        self.key_file: str | None = config.getoption("genome_key_file")
        policy = config.getoption("genome_egress") or config.getini("genome_egress")
        self.egress_policy = str(policy or "loopback")
        source_roots = list(config.getoption("genome_source_root")) + [
            str(p) for p in config.getini("genome_source_roots")
        ]
        test_roots = list(config.getoption("genome_test_root")) + [
            str(p) for p in config.getini("genome_test_roots")
        ]
        testpaths = [str(p) for p in config.getini("testpaths")]
        sources, tests = discover_roots(self.rootdir, testpaths, source_roots, test_roots)
        self.scope = Scope(self.rootdir, sources, tests)
        self.repo_modules = _top_level_modules(self.scope)
        toplevel = _git_toplevel(self.rootdir)
        self.tree_root = toplevel or self.rootdir
        self._id_prefix = _rootdir_in_repository(self.rootdir, toplevel)
        # Before the tracer exists: the compiled core takes the markers when it is built.
        basetemp = config.getoption("basetemp", None)
        stable.configure(
            stable.locations_of_this_process(
                toplevel or self.rootdir,
                os.path.abspath(str(basetemp)) if basetemp else None,
                os.environ.get("HOME"),
            )
        )
        self.tempfile_names = stable.TempfileNames()
        self.bounds = Bounds(max_nodes=_max_nodes(config))
        try:
            self.store = StoreWriter.open(self.store_path, self.key_file)
        except StoreError as exc:
            raise pytest.UsageError(f"diffgenome: {exc}") from None
        self.digester = values.Digester(self.store.key)
        self.tracer = Tracer(self.scope, self.digester, self.bounds)
        self.run_id: str = (
            str(workerinput["diffgenome_run"])
            if workerinput and "diffgenome_run" in workerinput
            else time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
        )
        self._session_reasons: list[str] = []
        self._batch: list[dict[str, Any]] = []
        self._phases: dict[str, dict[str, Any]] = {}
        self._phase_reasons: list[str] = []
        self._reports: dict[str, pytest.TestReport] = {}
        self._errors_at_test_start = 0
        self._tracing = False
        self._closed = False
        self.guard: EgressGuard | None = None
        self.standins: StandIns | None = None
        self.subtests: SubtestCapture | None = None
        self._store_broken = False
        self._collection_failed = False
        self._begun = False  # this process created the run in the store
        self._joined = False  # this process is a writer of the run

    # -- session -------------------------------------------------------------------------

    def run_config(self) -> dict[str, Any]:
        rel = len(self.scope.rootdir)
        config: dict[str, Any] = {
            "source_roots": sorted(r[rel:] or "." for r in self.scope.source_roots),
            "test_roots": sorted(r[rel:] or "." for r in self.scope.test_roots),
            "egress": self.egress_policy,
            "bounds": self.bounds.as_config(),
            "recorder": f"diffgenome {__version__}",
            "genome_format": GENOME_FORMAT,
        }
        return config

    def _warn_split_path_options(self) -> None:
        """pytest picks its rootdir before plugin options are known: ``--genome-store PATH``
        as two arguments lets PATH pass for a test path and moves the rootdir (test ids and
        module names then change). Say so once; ``--genome-store=PATH`` is safe."""
        args = list(self.config.invocation_params.args)
        for option in ("--genome-store", "--genome-key-file"):
            if option in args[:-1]:
                say(
                    self.config,
                    f"write {option}=PATH as one argument; as two, pytest may take PATH for a "
                    f"test path when it chooses its rootdir (rootdir is {self.rootdir})",
                )

    def start(self) -> bool:
        """Begin (or join) the run and switch the collector on; False when recording could
        not start, which the user is told in one line while the tests run unrecorded."""
        try:
            self._start()
        except Exception as exc:
            self._abandon_start(exc)
            return False
        return True

    def _abandon_start(self, exc: BaseException) -> None:
        """Undo whatever ``_start`` did, and make the run (if it exists) read as incomplete."""
        detail = " ".join(str(exc).split()) or type(exc).__name__
        say(self.config, f"recording is off for this session: {detail}")
        self._closed = True
        with contextlib.suppress(Exception):
            if self.guard is not None:
                self.guard.deactivate()
        with contextlib.suppress(Exception):
            if self.standins is not None:
                self.standins.uninstall()
                self.tracer.standins = None
        with contextlib.suppress(Exception):
            if self.subtests is not None:
                self.subtests.uninstall()
        with contextlib.suppress(Exception):
            self.tempfile_names.uninstall()
        with contextlib.suppress(Exception):
            self.tracer.stop()
        reason = f"recorder-start-failed: {detail}"
        with contextlib.suppress(Exception):
            if self._joined:
                self.store.leave_run(self.run_id, self.worker, False, [reason])
        with contextlib.suppress(Exception):
            if self._begun:
                self.store.finish_run(self.run_id, False, [reason], _now())
        with contextlib.suppress(Exception):
            self.store.close()

    def _start(self) -> None:
        self._warn_split_path_options()
        if not self.is_worker:
            commit = _git(self.rootdir, "rev-parse", "HEAD")
            status = _git(self.rootdir, "status", "--porcelain")
            # The store folder ignores itself (it holds a ``*`` .gitignore): any line is a change.
            dirty = bool(status.strip()) if status is not None else None
            config = self.run_config()
            selection = [str(a) for a in self.config.invocation_params.args]
            python = f"{platform.python_implementation()} {platform.python_version()}"
            config["recording_key"] = recording_key(
                commit.strip() if commit else None, dirty, python, selection, config
            )
            self.store.begin_run(
                {
                    "id": self.run_id,
                    "commit": commit.strip() if commit else None,
                    "dirty": dirty,
                    "python": python,
                    "platform": platform.platform(),
                    "started_at": _now(),
                    "config": config,
                    "selection": selection,
                    "key_fingerprint": self.store.key_fingerprint,
                    "tool": f"diffgenome {__version__}",
                    "collectors": [
                        {"name": "py-sys-monitoring", "plane": "symbol", "fidelity": "complete"},
                        {
                            "name": "py-egress-guard",
                            "plane": "os",
                            "fidelity": "partial",
                            "notes": [
                                "sees socket and subprocess audit events of this process only",
                                "C extensions that call libc directly are not seen",
                                "child processes are recorded, not traced nor guarded",
                            ],
                        },
                    ],
                }
            )
            self._begun = True
        if self.is_controller:
            return  # the controller runs no tests: workers record into its run
        self.store.join_run(self.run_id, self.worker)
        self._joined = True
        if not self.tracer.start():
            reason = self.tracer.unavailable_reason or "tool-id-unavailable"
            self._session_reasons.append(reason)
            say(
                self.config,
                f"no sys.monitoring tool id free ({reason}); tests run, but their genomes "
                "are not recorded and the run is marked unverified",
            )
        self._tracing = self.tracer.tool_id is not None
        if self._tracing:
            self.tempfile_names.install()
            self.standins = StandIns(self.tracer)
            self.tracer.standins = self.standins
            self.standins.install()
            self.subtests = SubtestCapture(self.tracer)
            self.subtests.install()
        self.guard = EgressGuard(self.egress_policy, self._on_egress, self.tree_root)
        self.guard.activate()

    def _on_egress(self, kind: str, target: str, outcome: str) -> None:
        """Called by the guard on the thread that attempted egress."""
        self.tracer.record_os_event(kind, target, outcome, sys._getframe(1))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: hand the run id to each worker."""
        node.workerinput["diffgenome_run"] = self.run_id

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, object, object]:
        if self.is_controller:
            return (yield)
        self._begin()
        try:
            return (yield)
        finally:
            self._end("call")
            # A module that failed to import is an error of ``<import>``, never a pass.
            outcome = "error" if self._collection_failed else "passed"
            self._finish_test(IMPORT_TEST_ID, outcome)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._collection_failed = True

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.close(exitstatus=int(exitstatus))

    def close(self, exitstatus: int | None = None) -> None:
        if self._closed:
            return
        self._closed = True
        guard = self.guard
        if guard is not None:
            guard.deactivate()
        if self.standins is not None:
            self.standins.uninstall()
            self.tracer.standins = None
        if self.subtests is not None:
            self.subtests.uninstall()
        self.tempfile_names.uninstall()
        self.tracer.stop()
        try:
            self._flush()
            interrupted = exitstatus in (2, 3)  # INTERRUPTED, INTERNAL_ERROR
            reasons = ["interrupted"] if exitstatus == 2 else []
            if exitstatus == 3:
                reasons.append("internal-error")
            if exitstatus is None:
                reasons.append("session-ended-early")
            if self._store_broken:
                return
            if not self.is_controller:
                self.store.leave_run(
                    self.run_id, self.worker, not interrupted and exitstatus is not None, reasons
                )
            if not self.is_worker:
                self.store.finish_run(
                    self.run_id, not interrupted and exitstatus is not None, reasons, _now()
                )
        except (StoreError, sqlite3.Error, OSError) as exc:
            self._store_failed(exc)
        finally:
            with contextlib.suppress(Exception):
                self.store.close()

    # -- tests ---------------------------------------------------------------------------

    def _begin(self) -> None:
        # Thread objects, not a count: a thread that ends while another one starts leaves the
        # count unchanged, yet the new one outlives the phase.
        self._threads_at_start = set(_enumerate_threads())
        self._errors_at_phase_start = self.tracer.errors
        if self._tracing:
            self.tracer.begin_phase()

    def _end(self, phase: str) -> None:
        """Close a phase; a fault of the recorder's own is the test's unverified reason, never
        an exception in the user's session."""
        try:
            self._end_phase(phase)
        except Exception as exc:
            self._phase_reasons.append(f"recorder-error:{phase}:{type(exc).__name__}")

    def _end_phase(self, phase: str) -> None:
        if not self._tracing:
            self._phase_reasons.append(f"not-recorded:{phase}")
            return
        capture = self.tracer.end_phase()
        try:
            exported = export_phase(capture, self.digester)
        except Exception as exc:  # never let the recorder break the user's run
            self._phase_reasons.append(f"export-error:{phase}:{type(exc).__name__}")
            return
        self._phases[phase] = exported
        self._phase_reasons.extend(f"{phase}:{p}" for p in consistency_problems(exported))
        self._phase_reasons.extend(f"{phase}:{reason}" for reason in capture.reasons)
        errors = self.tracer.errors - self._errors_at_phase_start
        if self.standins is not None:
            errors += self.standins.errors
            self.standins.errors = 0
        if errors:
            self._phase_reasons.append(f"{phase}:tracer-error:{errors}")
        if not self._threads_at_start.issuperset(_enumerate_threads()):
            self._phase_reasons.append(f"{phase}:thread-outlived-phase")

    def _phase(self, phase: str) -> Generator[None, object, object]:
        self._begin()
        try:
            return (yield)
        finally:
            self._end(phase)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._phase("setup"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._phase("call"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        return (yield from self._phase("teardown"))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_controller:
            return
        context = getattr(report, "context", None)
        if context is not None and report.when == "call" and hasattr(context, "kwargs"):
            # Only subtests whose block we bracketed have a genome of their own; unittest's
            # ``subTest`` is reported the same way but folds into its test (documented).
            if self.subtests is not None and self.subtests.finished:
                self._finish_subtest(report)
            return
        self._reports[report.when] = report

    def _finish_subtest(self, report: pytest.TestReport) -> None:
        """A subtest's report: its block's capture becomes a test of its own."""
        describe = getattr(report, "_sub_test_description", None)
        label = describe() if callable(describe) else "[subtest]"
        test_id = f"{self._test_id(report.nodeid)} {label}"
        reasons = list(self._session_reasons)
        phases: dict[str, Any] = {}
        assert self.subtests is not None
        capture = self.subtests.finished.pop(0)
        phases["call"] = export_phase(capture, self.digester)
        reasons.extend(f"call:{p}" for p in consistency_problems(phases["call"]))
        outcome = "failed" if report.failed else "skipped" if report.skipped else "passed"
        self._batch.append(
            {
                "id": test_id,
                "outcome": outcome,
                "verified": not reasons,
                "unverified_reasons": sorted({stable.stable_text(r) for r in reasons}),
                "phases": phases,
            }
        )
        if len(self._batch) >= BATCH_SIZE:
            self._flush()

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int, str]) -> None:
        if self.is_controller:
            return
        self._finish_test(self._test_id(nodeid), _outcome(self._reports))

    def _test_id(self, nodeid: str) -> str:
        """The node id relative to the repository root (pytest's is relative to rootdir)."""
        return self._id_prefix + nodeid

    def _check_origins(self) -> None:
        """Every project module must come from the recorded tree, or nothing is verified.

        A typical target environment has the project installed in editable mode from the
        user's checkout: recording a worktree there can silently run the checkout's code.
        """
        for name, where in _foreign_modules(self.repo_modules, self.scope.rootdir):
            reason = f"foreign-module:{name}={where}"
            if reason not in self._session_reasons:
                self._session_reasons.append(reason)

    def _finish_test(self, test_id: str, outcome: str) -> None:
        try:
            self._check_origins()
        except Exception as exc:
            self._phase_reasons.append(f"recorder-error:origins:{type(exc).__name__}")
        reasons = list(self._session_reasons) + self._phase_reasons
        record = {
            "id": test_id,
            "outcome": outcome,
            "verified": not reasons,
            "unverified_reasons": sorted({stable.stable_text(r) for r in reasons}),
            "phases": self._phases,
        }
        self._batch.append(record)
        self._phases = {}
        self._phase_reasons = []
        self._reports = {}
        if len(self._batch) >= BATCH_SIZE:
            self._flush()

    def _store_failed(self, exc: BaseException) -> None:
        """The store broke mid-session (deleted, read-only, disk full): tests go on, the run
        stays unfinished in the store (so it reads as incomplete), and pytest says so once."""
        if not self._store_broken:
            self._store_broken = True
            say(
                self.config,
                f"the store at {self.store_path} failed ({exc}); recording stopped, the run "
                "is incomplete",
            )

    def _flush(self) -> None:
        if self._store_broken:
            self._batch = []
            return
        try:
            self._write_batch()
        except (StoreError, sqlite3.Error, OSError) as exc:
            self._batch = []
            self._store_failed(exc)

    def _write_batch(self) -> None:
        prefix = self._id_prefix
        symbols = [
            {**info, "path": prefix + str(info["path"])} if prefix and info.get("path") else info
            for info in self.tracer.take_new_symbols()
        ]
        if symbols:
            self.store.add_symbols(self.run_id, symbols)
        if self._batch:
            self.store.add_tests(self.run_id, self.worker, self._batch)
            self._batch = []


def _max_nodes(config: pytest.Config) -> int:
    """The node bound from ini ``genome_max_nodes``; a value that is not a positive integer
    is a usage error, reported before any test runs."""
    default: int = Bounds().max_nodes
    raw = str(config.getini("genome_max_nodes") or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise pytest.UsageError(f"genome_max_nodes must be a positive integer, not {raw!r}")
    return value


def _git_toplevel(rootdir: str) -> str | None:
    """The git work tree that holds ``rootdir`` (a worktree's own folder), if any."""
    toplevel = _git(rootdir, "rev-parse", "--show-toplevel")
    return toplevel.strip() if toplevel and toplevel.strip() else None


def _rootdir_in_repository(rootdir: str, toplevel: str | None) -> str:
    """``sub/dir/`` when pytest's rootdir lies below the git repository root, else ``""``."""
    if not toplevel:
        return ""
    top = os.path.realpath(toplevel)
    here = os.path.realpath(rootdir)
    if here == top or not here.startswith(top + os.sep):
        return ""
    return here[len(top) + 1 :].replace(os.sep, "/") + "/"


def _top_level_modules(scope: Scope) -> list[str]:
    """Names of the packages and modules directly under the source roots (read once)."""
    names: set[str] = set()
    test_roots = tuple(scope.test_roots)
    for root in scope.source_roots:
        try:
            entries = os.listdir(root)
        except OSError:
            continue
        for entry in entries:
            path = root + entry
            if entry.startswith((".", "_")) or (path + "/").startswith(test_roots):
                continue
            if entry.endswith(".py"):
                stem = entry[:-3]
                if stem.isidentifier() and stem not in ("setup", "conftest", "noxfile"):
                    names.add(stem)
            elif entry.isidentifier() and os.path.isfile(path + "/__init__.py"):
                names.add(entry)
    return sorted(names)


def _foreign_modules(names: list[str], rootdir: str) -> list[tuple[str, str]]:
    """Project modules that were imported from outside the rootdir."""
    foreign: list[tuple[str, str]] = []
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        namespace = getattr(module, "__dict__", {})
        where = namespace.get("__file__")
        if not isinstance(where, str):
            paths = list(namespace.get("__path__") or [])
            where = str(paths[0]) if paths else None
        if isinstance(where, str) and not where.startswith(rootdir):
            foreign.append((name, where))
    return foreign


def _xdist_distributing(config: pytest.Config) -> bool:
    """True in an xdist controller that will hand tests to workers."""
    if not config.pluginmanager.hasplugin("xdist"):
        return False
    dist = getattr(config.option, "dist", "no")
    numprocesses = getattr(config.option, "numprocesses", None)
    return dist != "no" or bool(numprocesses)
