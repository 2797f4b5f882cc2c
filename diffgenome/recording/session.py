"""One recording session: the collector's phases mapped onto pytest's test protocol.

The ``Recorder`` is registered as a pytest plugin when ``--genome`` is on. It brackets each
setup/call/teardown phase, turns the phase trees into genome objects, decides per test
whether its capture is complete, and writes each test to the store as soon as it
finishes. Under pytest-xdist the controller owns the run (creates and finishes it) and each
worker records its own tests into it. What the session was asked for is options.py's; the
run's life in the store is run.py's.
"""

from __future__ import annotations

import _io
import contextlib
import os
import random
import sqlite3
import sys
import threading
from collections.abc import Generator
from typing import Any

import pytest

from diffgenome.protocol.formats import (
    STORE_FORMAT,
)
from diffgenome.protocol.jsontext import escape_surrogates
from diffgenome.protocol.namecache import DEBUG_WORD, NameCache
from diffgenome.protocol.runs import (
    ENVIRONMENT_ENV,
    HOLDER_ENV,
    RUN_ID_ENV,
    is_run_id,
    new_run_id,
)
from diffgenome.protocol.selection import SHARED_NODE_ID, selected
from diffgenome.protocol.vocab import (
    IMPORT_TEST_ID,
    PHASES,
    REASON_EXPORT_ERROR,
    REASON_FOREIGN_MODULE,
    REASON_IMPORTED_BEFORE_RECORDING,
    REASON_MONITORING_DISTURBED,
    REASON_NOT_RECORDED,
    REASON_RECORDER_ERROR,
    REASON_TRACER_ERROR,
    RUN_ENDED_EARLY,
    RUN_INTERNAL_ERROR,
    RUN_INTERRUPTED,
    RUN_RECORDER_START_FAILED,
)
from diffgenome.recording.collect import stable, values
from diffgenome.recording.collect.contract import Bounds, PhaseCapture
from diffgenome.recording.collect.preview import ValuePreviews
from diffgenome.recording.collect.redact import Redactor
from diffgenome.recording.collect.scope import Scope, discover_roots
from diffgenome.recording.collect.standins import StandIns
from diffgenome.recording.collect.tool import TOOL_NAME
from diffgenome.recording.collect.tracer import DEBUG_ENV, Tracer
from diffgenome.recording.effects import IN_TEST, OWN_CAPTURE, Effects
from diffgenome.recording.foreign import foreign_modules, imported_before, top_level_modules
from diffgenome.recording.genome import consistency_problems, export_phase
from diffgenome.recording.notices import PREFIX, say
from diffgenome.recording.options import read_options, run_config
from diffgenome.recording.outbox import Outbox
from diffgenome.recording.outside import Outside
from diffgenome.recording.params import param_digests
from diffgenome.recording.run import Run, git_toplevel, rootdir_in_repository
from diffgenome.recording.subtests import SubtestCapture
from diffgenome.recording.summary import summary_line
from diffgenome.recording.testids import SHARED, name_items, subtest_id
from diffgenome.recording.warned import WarningsSeen
from diffgenome.store.layout import one_line
from diffgenome.store.retention import cap_notice
from diffgenome.store.writer import StoreError, StoreWriter

_enumerate_threads = threading.enumerate
_seed_random = random.seed
# A finished test waiting for its warnings: id, outcome, phases, unverified reasons, and the
# record's other fields (``disclosed``, ``before_recording``).
_Finished = tuple[str, str, dict[str, Any], list[str], dict[str, Any]]


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
        options = self.options = read_options(config)
        self.rootdir = options.rootdir
        self.worker = options.worker
        self.is_worker = options.is_worker
        self.is_controller = options.is_controller
        self.store_path = options.store_path
        # Read before any test can change the environment.
        self._for_a_diff = bool(os.environ.get(HOLDER_ENV))
        self._environment = os.environ.get(ENVIRONMENT_ENV) or None
        self.egress_policy = options.egress_policy
        sources, tests = discover_roots(
            self.rootdir, options.testpaths, options.source_roots, options.test_roots
        )
        self.scope = Scope(self.rootdir, sources, tests)
        self.repo_modules = top_level_modules(self.scope)
        toplevel = git_toplevel(self.rootdir)
        self.tree_root = toplevel or self.rootdir
        self._id_prefix = rootdir_in_repository(self.rootdir, toplevel)
        # Before the tracer exists: the compiled core takes the markers when it is built.
        basetemp = options.basetemp
        self._locations = (
            toplevel or self.rootdir,
            os.path.abspath(basetemp) if basetemp else None,
            os.environ.get("HOME"),
        )
        stable.configure(stable.locations_of_this_process(*self._locations))
        self.tempfile_names = stable.TempfileNames()
        self.bounds = Bounds(max_nodes=options.max_nodes)
        try:
            self.store = StoreWriter.open(self.store_path, options.key_file)
        except StoreError as exc:
            raise pytest.UsageError(f"diffgenome: {exc}") from None
        if self.store.upgraded:
            say(
                config,
                f"upgraded the store at {self.store.path} to {STORE_FORMAT} "
                f"({self.store.upgraded} recorded tests rewritten; once)",
            )
        self.digester = values.Digester(self.store.key)
        #: The secret rules for the text a genome keeps in clear (test ids, reasons, OS
        #: event targets, stand-in paths, warning previews): collect/redact.py.
        self.redactor = Redactor(self.digester)
        #: ``--genome-preview``: previews of small scalar values, under the same rules.
        self.previews = ValuePreviews(self.redactor.located) if self.options.preview else None
        #: The names of source files, kept in the store between sessions: a file an earlier
        #: session named is read back, not named again (protocol/namecache.py).
        self.names = NameCache(
            self.store.path,
            debug=DEBUG_WORD in os.environ.get(DEBUG_ENV, "").split(","),
        )
        self.tracer = Tracer(self.scope, self.digester, self.bounds, names=self.names)
        self.run = Run(
            self.store, options.controller_run_id or _run_id_asked() or new_run_id(), self.worker
        )
        self.run_id = self.run.id
        self._session_reasons: list[str] = []
        #: Finished tests on their way into the store, written as soon as each one finishes
        #: (by this process or a writer process of their own: recording/outbox.py).
        self.outbox = Outbox(
            config,
            self.store,
            self.run,
            self.worker,
            self.store_path,
            self._id_prefix,
            self.tracer.take_new_symbols,
        )
        self._phases: dict[str, dict[str, Any]] = {}
        self._phase_reasons: list[str] = []
        # Facts about the capture that leave it complete (a thread that outlived its phase)
        self._disclosed: list[str] = []
        # Digests of the parameter values of the running test (``params`` in its record):
        # what pairs ``test[kwargs18]`` with ``test[kwargs20]`` when cases were inserted.
        self._params: dict[str, str | None] | None = None
        self._param_memo: dict[tuple[type, object], str | None] = {}
        self._reports: dict[str, pytest.TestReport] = {}
        # Items in collection order with their node ids as recorded, until collection ends
        # and the items that share a node id are given theirs (``_name_items``).
        self._collected: list[tuple[pytest.Item, str]] | None = []
        # The running item: its node id, recorded id and how many items share its node id.
        self._running: tuple[str, str, int] | None = None
        # Subtest ids given in the running test, and the next index after each.
        self._subtest_ids: dict[str, int] = {}
        self._tracing = False
        self._closed = False
        #: The line :meth:`pytest_terminal_summary` ends the session with, once the run is finished.
        self.summary_line: str | None = None
        #: Python children, the egress guard and who ran without it (recording/outside.py).
        self.outside = Outside(config, self.tracer, self.egress_policy)
        self.standins: StandIns | None = None
        self.subtests: SubtestCapture | None = None
        self._disturbances_said: set[str] = set()
        self._collection_failed = False
        # Project modules whose bodies ran before recording started (a conftest.py imported
        # them while pytest started up), as module symbols: ``<import>`` discloses them.
        self._before_recording: list[str] = []
        # pytest hands a test's warnings over after its last report (``logfinish``): the
        # finished test waits for them here until its protocol ends. None: pytest's warnings
        # plugin is off (``-p no:warnings``), so nothing can be said about warnings.
        self.warned = self._warnings_seen() if config.pluginmanager.has_plugin("warnings") else None
        self._held: list[_Finished] = []
        # ``<import>`` waits likewise for collection's warnings, until the first test starts.
        self._import_warned = self._warnings_seen() if self.warned is not None else None
        self._held_import: _Finished | None = None
        #: What each phase's code printed, logged, warned, wrote and set (recording/effects.py).
        codes = self.tracer.codes
        self.effects = Effects(
            self.digester,
            self.redactor.text,
            self.scope,
            lambda code: getattr(codes.get(id(code)), "symbol", None),
            self.options.preview,
            self.redactor.located,
        )
        self._effects_on = False
        self._own_capture = False
        self._sections: dict[str, object] = {}
        self._capture = str(getattr(config.option, "capture", "fd"))

    def _warnings_seen(self) -> WarningsSeen:
        return WarningsSeen(
            self.digester, self.redactor.text, self.options.preview, self.redactor.located
        )

    # -- session -------------------------------------------------------------------------

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
        detail = one_line(exc)
        say(self.config, f"recording is off for this session: {detail}")
        self._closed = True
        self.outside.abandon()
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
            self.effects.uninstall()
        with contextlib.suppress(Exception):
            self.tracer.stop()
        self.run.abandon(f"{RUN_RECORDER_START_FAILED}: {detail}")
        with contextlib.suppress(Exception):
            self.store.close()

    def _start(self) -> None:
        self._warn_split_path_options()
        if not self.is_worker:
            selection = [str(a) for a in self.config.invocation_params.args]
            invoked = str(self.config.invocation_params.dir)
            core = (self.tracer.core, self.tracer.core_reason)
            config = run_config(
                self.options, self.scope, self.bounds, self.warned is not None, self._environment
            )
            self.run.begin(self.rootdir, config, selection, invoked, core)
        if self.is_controller:
            return  # the controller runs no tests: workers record into its run
        self.run.join()
        if not self.tracer.start():
            reason = self.tracer.unavailable_reason or "tool-id-unavailable"
            self._session_reasons.append(reason)
            say(
                self.config,
                f"no sys.monitoring tool id free ({reason}); tests run, but their genomes "
                "are not recorded and the run is marked unverified",
            )
        self._tracing = self.tracer.tool_id is not None
        self._before_recording = imported_before(self.scope)
        if self._tracing:
            self.tempfile_names.install()
            self.standins = StandIns(self.tracer)
            self.tracer.standins = self.standins
            self.standins.install()
            self.subtests = SubtestCapture(self.tracer)
            self.subtests.install()
            self.effects.install()
            self._effects_on = True
        self.outside.open(self._tracing, self.scope, self.bounds, self.tree_root, self._locations)

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
            if self._before_recording:
                # Their bodies (module-level decisions, calls) ran unseen: say so, and which.
                count = len(self._before_recording)
                self._phase_reasons.append(f"{REASON_IMPORTED_BEFORE_RECORDING}:{count}")
            # A module that failed to import is an error of ``<import>``, never a pass.
            outcome = "error" if self._collection_failed else "passed"
            self._finish_test(IMPORT_TEST_ID, outcome)

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        collected = self._collected
        if collected is not None:
            collected.append((item, self._test_id(item.nodeid)))

    def _name_items(self) -> None:
        """Every collected item's recorded id, once collection ends (``testids.name_items``)."""
        collected, self._collected = self._collected, None
        if collected:
            name_items(collected)

    def _recorded_id(self, item: pytest.Item) -> str:
        shared = item.stash.get(SHARED, None)
        return shared[0] if shared is not None else self._test_id(item.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Every item gets its recorded id (``_name_items``); then ``--genome-only``: the
        tests diff confirms, by recorded id, whatever paths the user's arguments name (a
        positional ``tests`` would otherwise run them all)."""
        try:
            self._name_items()
        except Exception as exc:  # they are recorded as before: the last of a node id wins
            self._session_reasons.append(f"{REASON_RECORDER_ERROR}:ids:{type(exc).__name__}")
        only, carry = self.options.only, self.options.carry
        if only is None and carry is None:
            return
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        carried: list[str] = []
        clear_id = self.redactor.test_id
        for item in items:
            # Recorded ids are masked (collect/redact.py): compare like with like.
            recorded = clear_id(self._recorded_id(item))
            if only is not None and not selected(recorded, only):
                drop.append(item)
            elif carry is not None and recorded in carry:
                drop.append(item)
                carried.append(recorded)
            else:
                keep.append(item)
        if carry is not None:
            self._write_carried(carried)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def _write_carried(self, carried: list[str]) -> None:
        """The ids ``--genome-carry`` took out, for the diff that asked: only a test this
        session collected and did not run is carried over (one that is gone is removed)."""
        path = self.options.carry_file
        if not path or self.is_controller:
            return
        try:
            # The real ``open``: a conftest may have patched the builtin by now.
            with _io.open(
                f"{path}.carried", "w", encoding="utf-8", errors="surrogateescape"
            ) as out:
                out.writelines(f"{test_id}\n" for test_id in carried)
        except OSError as exc:
            self._session_reasons.append(f"{REASON_RECORDER_ERROR}:carry:{type(exc).__name__}")

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        self._start_writer(len(session.items))
        return (yield)

    def _start_writer(self, tests: int) -> None:
        """Once the tests to run are known, between phases: a writer process of their own
        where asked, or where they are many enough to repay it (``--genome-writer``)."""
        if self.is_controller or not self._tracing or self.outbox.broken or self._closed:
            return
        self.outbox.start_writer(self.options.writer, tests, self.options.workers)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._collection_failed = True

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.close(exitstatus=int(exitstatus))

    def close(self, exitstatus: int | None = None) -> None:
        if self._closed:
            return
        self._closed = True
        self.outside.stop_guard()
        if self.standins is not None:
            self.standins.uninstall()
            self.tracer.standins = None
        if self.subtests is not None:
            self.subtests.uninstall()
        self.tempfile_names.uninstall()
        self.effects.uninstall()
        self._effects_on = False
        self.tracer.stop()
        self.outside.close_children()
        self._say_first_errors()
        self._say_names()
        with contextlib.suppress(Exception):
            self.outside.say_unguarded()
        try:
            self._release_import()
            self._release_held()
            self.outbox.flush()
            self.outbox.finish_writer()
            interrupted = exitstatus in (2, 3)  # INTERRUPTED, INTERNAL_ERROR
            reasons = [RUN_INTERRUPTED] if exitstatus == 2 else []
            if exitstatus == 3:
                reasons.append(RUN_INTERNAL_ERROR)
            if exitstatus is None:
                reasons.append(RUN_ENDED_EARLY)
            if self.outbox.broken:
                self.outbox.record_failure()
                return
            why = self.run.end(not interrupted and exitstatus is not None, reasons)
            self.outbox.say_notices()
            if self.run.begun:
                try:
                    self._summarise(why)
                except Exception as exc:  # the run is finished: only the summary is lost
                    say(
                        self.config,
                        f"run {self.run_id} is recorded, but the store could not be summarised "
                        f"or capped ({one_line(exc)})",
                    )
        except (StoreError, sqlite3.Error, OSError) as exc:
            self.outbox.failed(exc)
        finally:
            with contextlib.suppress(Exception):
                self.store.close()

    def _summarise(self, incomplete: list[str]) -> None:
        """The one line of the terminal summary (what was recorded, where, how much of it
        cannot be compared and why), then the store's cap: older runs beyond it go, and the
        user is told which."""
        tally = self.store.tally(self.run_id)
        self.summary_line = PREFIX + summary_line(self.run_id, self.store_path, tally, incomplete)
        if self._for_a_diff:
            return  # a recording of ``diffgenome diff``: the diff applies the cap at its end
        cap, _, said = self.store.apply_cap()
        if said:
            say(self.config, cap_notice(cap, said))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The session's last word from diffgenome: one line (see :meth:`_summarise`)."""
        if self.summary_line is not None:
            with contextlib.suppress(Exception):
                terminalreporter.write_line(self.summary_line)

    def _say_first_errors(self) -> None:
        """Under ``DIFFGENOME_DEBUG=callbacks``, one line per kind of exception a callback
        caught: otherwise only counted, as ``tracer-error:N`` on the phases it struck."""
        for kind, where in sorted((self.tracer.first_errors or {}).items()):
            say(self.config, f"first {kind} caught by a callback: {where}")

    def _say_names(self) -> None:
        """Keep the names built in this session for the next (written now, when no test
        runs: ``NameCache.put``); under ``DIFFGENOME_DEBUG=names``, say what the names cache
        did: one line per file read, built or refused, and a count."""
        names = self.names
        names.flush()
        if not names.debug:
            return
        for line in names.lines:
            say(self.config, line)
        say(self.config, names.summary())

    # -- tests ---------------------------------------------------------------------------

    def _begin(self) -> None:
        # Thread objects, not a count: a thread that ends while another one starts leaves the
        # count unchanged, yet the new one outlives the phase.
        self._threads_at_start = set(_enumerate_threads())
        self._errors_at_phase_start = self.tracer.errors
        if self._tracing:
            self.outside.begin_phase()
            self.tracer.begin_phase()

    def _end(self, phase: str) -> None:
        """Close a phase; a fault of the recorder's own is the test's unverified reason, never
        an exception in the user's session."""
        try:
            self._end_phase(phase)
        except Exception as exc:
            self._phase_reasons.append(f"{REASON_RECORDER_ERROR}:{phase}:{type(exc).__name__}")

    def _end_phase(self, phase: str) -> None:
        if not self._tracing:
            self._phase_reasons.append(f"{REASON_NOT_RECORDED}:{phase}")
            return
        capture = self.tracer.end_phase()
        # A secret a fixture put into the environment (``monkeypatch.setenv``) is still
        # there: its value is masked wherever kept text holds it.
        self.redactor.note_environment()
        if self.previews is not None:
            self.previews.note_environment()
        children_failed = self.outside.end_phase(capture)
        if children_failed is not None:
            self._phase_reasons.append(children_failed)
        try:
            exported = export_phase(capture, self.digester, self.redactor.text, self.previews)
        except Exception as exc:  # never let the recorder break the user's run
            self._phase_reasons.append(f"{REASON_EXPORT_ERROR}:{phase}:{type(exc).__name__}")
            return
        self._phases[phase] = exported
        self.outside.tally_unguarded(exported, capture.reasons)
        self._phase_reasons.extend(f"{phase}:{p}" for p in consistency_problems(exported))
        self._phase_reasons.extend(f"{phase}:{reason}" for reason in capture.reasons)
        disturbed = [r for r in capture.reasons if r.startswith(REASON_MONITORING_DISTURBED + ":")]
        if disturbed:
            self._say_disturbed(self.redactor.text(disturbed[0]))
        errors = self.tracer.errors - self._errors_at_phase_start
        if self.standins is not None:
            errors += self.standins.errors
            self.standins.errors = 0
        if errors:
            self._phase_reasons.append(f"{phase}:{REASON_TRACER_ERROR}:{errors}")
        if not self._threads_at_start.issuperset(_enumerate_threads()):
            # Not a gap: what the thread does in a later phase is recorded there (as work of
            # an earlier thread); between phases it is no test's work.
            self._disclosed.append(f"{phase}:thread-outlived-phase")

    def _say_disturbed(self, reason: str) -> None:
        """Once per kind: code under test changed the recorder's sys.monitoring tool."""
        what = reason.split(":", 1)[1]
        kind = "taken" if what.startswith("tool-id-taken") else "changed"
        if kind in self._disturbances_said:
            return
        self._disturbances_said.add(kind)
        if kind == "taken":
            detail = "another tool now holds its id, so recording stopped for the rest"
        else:
            detail = "recording was put back after it"
        say(
            self.config,
            f"code under test changed diffgenome's sys.monitoring tool ({what}): {detail}; "
            "the tests concerned are marked unverified (monitoring-disturbed). Leave tool id "
            f"{self._tool_id_text()} alone in tests, or record them without --genome",
        )

    def _tool_id_text(self) -> str:
        mon = sys.monitoring
        ids = [str(i) for i in range(6) if mon.get_tool(i) == TOOL_NAME]
        return ids[0] if ids else "(none now)"

    def _phase(self, phase: str) -> Generator[None, object, object]:
        if self.options.random_seed is not None:
            # As pytest-randomly does, at every phase: what one phase draws never shifts
            # what the next one draws (google-auth's retry jitter, cachetools' RRCache).
            _seed_random(self.options.random_seed)
        self._begin()
        if self._effects_on:
            self.effects.begin_phase(phase)
        try:
            return (yield)
        finally:
            self.effects.end_phase()
            self._end(phase)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        self.tracer.test_serial += 1
        self._params = param_digests(item, self.digester, self._param_memo)
        try:
            self._own_capture = not OWN_CAPTURE.isdisjoint(getattr(item, "fixturenames", ()))
        except Exception:
            self._own_capture = False
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
        if self._effects_on and report.when in PHASES:
            # Read when the test finishes, from the phase's last report (a plugin that runs
            # a phase again reports it again).
            self._sections[report.when] = report.sections

    def _finish_subtest(self, report: pytest.TestReport) -> None:
        """A subtest's report: its block's capture becomes a test of its own."""
        describe = getattr(report, "_sub_test_description", None)
        label = describe() if callable(describe) else "[subtest]"
        assert self.subtests is not None
        capture: PhaseCapture = self.subtests.finished.pop(0)
        call = export_phase(capture, self.digester, self.redactor.text, self.previews)
        outcome = "failed" if report.failed else "skipped" if report.skipped else "passed"
        reasons = [f"call:{p}" for p in consistency_problems(call)]
        extra: dict[str, Any] | None = None
        if self._effects_on:
            # What the block printed is in this report only (its test's call report lacks
            # it); the other kinds stay with the test's call phase, which ran the block.
            entries, unrecorded = self.effects.output_entries(
                "call", report.sections, self._own_capture, self._capture
            )
            extra = {"effects": entries, "effects_unrecorded": sorted({*unrecorded, *IN_TEST})}
        test_id, shared = self._running_id(report.nodeid)
        if shared > 1:
            extra = {**(extra or {}), "disclosed": [f"{SHARED_NODE_ID}:{shared}"]}
        test_id = self._subtest_id(f"{test_id} {label}")
        self._add_test(test_id, outcome, {"call": call}, reasons, extra=extra)

    def _subtest_id(self, subtest: str) -> str:
        return subtest_id(self._subtest_ids, subtest)

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int, str]) -> None:
        if self.is_controller:
            return
        test_id, shared = self._running_id(nodeid)
        if shared > 1:
            # Its id is a place among the items of one node id: disclosed, and a diff whose
            # sides have another number of them says so (docs/recording.md).
            self._disclosed.append(f"{SHARED_NODE_ID}:{shared}")
        self._finish_test(test_id, _outcome(self._reports))

    def _running_id(self, nodeid: str) -> tuple[str, int]:
        """The recorded id of the test pytest reports as ``nodeid``, and how many collected
        items carry that node id: the running item's, when it is that one."""
        running = self._running
        if running is not None and running[0] == nodeid:
            return running[1], running[2]
        return self._test_id(nodeid), 1

    def _test_id(self, nodeid: str) -> str:
        """The node id relative to the repository root (pytest's is relative to rootdir), an
        undecodable byte of a file name written as pytest writes one in a parametrize id
        (protocol/jsontext.py)."""
        return self._id_prefix + escape_surrogates(nodeid)

    def _check_origins(self) -> None:
        """Every project module must come from the recorded tree, or nothing is verified.

        A typical target environment has the project installed in editable mode from the
        user's checkout: recording a worktree there can silently run the checkout's code.
        """
        for name, where in foreign_modules(self.repo_modules, self.scope.rootdir):
            reason = f"{REASON_FOREIGN_MODULE}:{name}={where}"
            if reason not in self._session_reasons:
                self._session_reasons.append(reason)

    def _finish_test(self, test_id: str, outcome: str) -> None:
        try:
            self._check_origins()
        except Exception as exc:
            self._phase_reasons.append(f"{REASON_RECORDER_ERROR}:origins:{type(exc).__name__}")
        phases, reasons = self._phases, self._phase_reasons
        if not phases and not reasons and test_id != IMPORT_TEST_ID:
            # A test reported in this process whose phases no hook here bracketed (a plugin
            # that runs tests elsewhere and reports them here): nothing of it was seen, so
            # its empty record is not a complete one.
            reasons.append(f"{REASON_NOT_RECORDED}:{PHASES[0]}")
        extra: dict[str, Any] = (
            {"disclosed": sorted(set(self._disclosed))} if self._disclosed else {}
        )
        if self._params:
            extra["params"] = self._params
        sections, self._sections = self._sections, {}
        if self._effects_on and test_id != IMPORT_TEST_ID:
            for phase, found in sections.items():
                self.effects.add_output(phase, found, self._own_capture, self._capture)
            effects, unrecorded = self.effects.take()
            extra["effects"] = effects
            if unrecorded:
                extra["effects_unrecorded"] = unrecorded
            if self.effects.errors:
                self._phase_reasons.append(f"{REASON_RECORDER_ERROR}:effects:{self.effects.errors}")
                self.effects.errors = 0
        self._params = None
        self._subtest_ids = {}
        self._phases = {}
        self._phase_reasons = []
        self._disclosed = []
        self._reports = {}
        if test_id == IMPORT_TEST_ID:
            self._held_import = (test_id, outcome, phases, reasons, extra)
        else:
            self._held.append((test_id, outcome, phases, reasons, extra))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        """Outside pytest's warnings capture (registered after it, so called before it):
        when this ends, the test's warnings have been handed over."""
        self._release_import()
        shared = item.stash.get(SHARED, None)
        self._running = (item.nodeid, *shared) if shared is not None else None
        try:
            return (yield)
        finally:
            self._running = None
            self._release_held()

    def pytest_warning_recorded(
        self, warning_message: Any, when: str, nodeid: str, location: object
    ) -> None:
        if self.is_controller:
            return
        seen = {"runtest": self.warned, "collect": self._import_warned}.get(when)
        if seen is None:
            return
        try:
            seen.add(warning_message)
        except Exception as exc:
            self._phase_reasons.append(f"{REASON_RECORDER_ERROR}:warnings:{type(exc).__name__}")

    def _release_import(self) -> None:
        held, self._held_import = self._held_import, None
        if held is not None:
            test_id, outcome, phases, reasons, extra = held
            warned = self._import_warned.take() if self._import_warned is not None else None
            if self._before_recording:
                extra = {**extra, "before_recording": self._before_recording}
            self._add_test(test_id, outcome, phases, reasons, warned, extra)

    def _release_held(self) -> None:
        """Write the tests that waited for their warnings; the warnings go with each."""
        held, self._held = self._held, []
        warned = self.warned.take() if self.warned is not None else None
        for test_id, outcome, phases, reasons, extra in held:
            self._add_test(test_id, outcome, phases, reasons, warned, extra)

    def _add_test(
        self,
        test_id: str,
        outcome: str,
        phases: dict[str, Any],
        reasons: list[str],
        warned: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """The one place a test record is made (tests and subtests alike) and written: the
        session's reasons hold for every test, the test's own are added to them."""
        reasons = self._session_reasons + reasons
        clear = self.redactor.text
        record: dict[str, Any] = {
            "id": self.redactor.test_id(test_id),
            "outcome": outcome,
            "verified": not reasons,
            "unverified_reasons": sorted({clear(stable.stable_text(r)) for r in reasons}),
            "phases": phases,
        }
        if warned is not None:
            record["warnings"] = warned
        if extra:
            record.update(extra)
            if "disclosed" in extra:
                record["disclosed"] = sorted({clear(fact) for fact in extra["disclosed"]})
        self.outbox.add(record)


def _run_id_asked() -> str | None:
    """The run id ``diffgenome diff`` chose for this recording (None: choose one). Taken out
    of the environment at once: a pytest --genome that a test starts must choose its own."""
    asked = os.environ.pop(RUN_ID_ENV, None)
    return asked if asked is not None and is_run_id(asked) else None
