"""The layers of the suite: every test under ``tests/e2e/`` is marked ``e2e`` (it starts real
pytest sessions, git and the ``diffgenome`` command as subprocesses), and a few of them, the
smoke set, are also marked ``smoke``.

``make test-fast`` runs ``-m "not e2e or smoke"``: the unit layer and the smoke set, one real
session of each kind the product has (recording, a diff of two commits, the store through the
command, xdist, children, egress, the HTML report). ``make test`` runs everything. The
modules of :data:`INTERPRETER` are also marked ``interpreter``: what CI runs again on every
further Python (``make test-interpreter``).

The smoke set is named here rather than by decorators in the test files, so that it can be read
in one place; a name that matches no test is a usage error (a renamed test must not leave the
set silently).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from e2e.helpers import SESSIONS

HERE = Path(__file__).resolve().parent

#: ``module::test`` (every parameter of it) or ``module::test[id]`` (one of them). Chosen so
#: that each module fixture they need is built once and serves several of them.
SMOKE = (
    # Recording one example project (the module's fixture records it once).
    "test_recording.py::test_run_is_complete_and_describes_the_session",
    "test_recording.py::test_a_loop_is_one_node_with_its_count",
    "test_recording.py::test_decision_outcomes_are_counted_per_site",
    "test_recording.py::test_raw_values_never_reach_the_document_nor_the_store",
    # Egress under each policy and the one xdist session.
    "test_recording_runs.py::test_egress_policy_decides_a_loopback_connect",
    "test_recording_runs.py::test_xdist_records_the_same_genomes_as_a_serial_run",
    # A diff of two commits (both sides recorded through worktrees) and the store read back
    # by revision, run id and genome file.
    "test_diff_command.py::test_a_refactor_only_commit_is_unchanged_and_exits_zero",
    "test_diff_command.py::test_a_behaviour_change_exits_one_with_its_change_kinds",
    "test_diff_command.py::test_a_run_id_and_a_genome_file_are_sides_without_code_changes",
    # Children of a test (one session records them all).
    "test_children.py::test_a_script_run_by_sys_executable_is_recorded",
    "test_children.py::test_multiprocessing_children_are_recorded[spawn]",
    # The HTML report of a diff (without a browser).
    "test_html_report.py::test_diff_site_has_an_index_and_a_page_per_test_that_is_not_unchanged",
)


#: The modules whose subject is what the recorder sees in the interpreter that runs them: the
#: tracer and its cores, children, threads, stand-ins, effects, egress, faults, privacy,
#: resources and the identities of what it records. CI runs every test on the first Python
#: it finds and, on each further one, the unit layer, the smoke set and these
#: (``make test-interpreter``): the diff's own logic, the reports, the documentation's
#: commands and the packaging run in the interpreter of the ``diffgenome`` command, and
#: one interpreter checks them. A module named here that does not exist is a usage error.
INTERPRETER = (
    "test_recording.py",
    "test_recording_details.py",
    "test_recording_env.py",
    "test_recording_runs.py",
    "test_cores.py",
    "test_children.py",
    "test_threads.py",
    "test_tasks.py",
    "test_monitoring_conflicts.py",
    "test_standins.py",
    "test_seams.py",
    "test_effects_recording.py",
    "test_programs.py",
    "test_warnings.py",
    "test_reliability_egress.py",
    "test_reliability_faults.py",
    "test_writer.py",
    "test_reliability_privacy.py",
    "test_reliability_concurrency.py",
    "test_reliability_resources.py",
    "test_location_independence.py",
    "test_scope_roots.py",
    "test_strict_projects.py",
    "test_combine.py",
    "test_names_cache.py",
)


@pytest.fixture(autouse=True, scope="module")
def _module_sessions(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module marked ``all_plugins``: its module fixtures' sessions load every plugin too
    (e2e/helpers.py ``LEAN_PLUGINS`` says why the others do not)."""
    with _sessions(request.node.get_closest_marker("all_plugins") is not None):
        yield


@pytest.fixture(autouse=True)
def _test_sessions(request: pytest.FixtureRequest) -> Iterator[None]:
    with _sessions(request.node.get_closest_marker("all_plugins") is not None):
        yield


@contextmanager
def _sessions(all_plugins: bool) -> Iterator[None]:
    before = SESSIONS.all_plugins
    SESSIONS.all_plugins = all_plugins
    try:
        yield
    finally:
        SESSIONS.all_plugins = before


def _smoke_names() -> tuple[set[str], set[str]]:
    """The smoke entries as node ids relative to this folder: whole tests, and single cases."""
    whole = {entry for entry in SMOKE if "[" not in entry}
    cases = {entry for entry in SMOKE if "[" in entry}
    return whole, cases


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the layers before ``-m`` chooses (``tryfirst``: the mark plugin deselects in its
    own implementation of this hook), then put the modules with slow tests first."""
    whole, cases = _smoke_names()
    matched: set[str] = set()
    modules: dict[Path, object] = {}
    for item in items:
        path = item.path.resolve()
        if HERE not in path.parents:
            continue
        item.add_marker(pytest.mark.e2e)
        relative = path.relative_to(HERE).as_posix()
        if relative in INTERPRETER:
            item.add_marker(pytest.mark.interpreter)
        function = getattr(item, "originalname", item.name)
        if f"{relative}::{function}" in whole:
            matched.add(f"{relative}::{function}")
            item.add_marker(pytest.mark.smoke)
        elif f"{relative}::{item.name}" in cases:
            matched.add(f"{relative}::{item.name}")
            item.add_marker(pytest.mark.smoke)
        module = getattr(item, "module", None)
        if module is not None:
            modules[path] = module
    _check_smoke_names(whole | cases, matched, modules)
    missing = [name for name in INTERPRETER if not (HERE / name).is_file()]
    if missing:
        raise pytest.UsageError(
            f"tests/e2e/conftest.py: INTERPRETER names modules that do not exist: {missing}"
        )
    _slow_modules_first(items)


def _check_smoke_names(names: set[str], matched: set[str], modules: dict[Path, object]) -> None:
    """Every smoke entry whose module was collected names a test of that module. Only whole
    tests can be checked when a selection collected part of a module; a case id is checked
    against the test function's existence too."""
    for name in sorted(names - matched):
        relative, _, test = name.partition("::")
        module = modules.get(HERE / relative)
        if module is None:
            continue  # the module was not collected (another path, -k): nothing to say
        function = test.split("[", 1)[0]
        if not callable(getattr(module, function, None)):
            raise pytest.UsageError(
                f"tests/e2e/conftest.py: the smoke test {name} does not exist; "
                "update SMOKE to the test's new name"
            )


def _slow_modules_first(items: list[pytest.Item]) -> None:
    """Modules with a test marked ``slow`` run first, then the other end-to-end modules, then
    the unit tests, each module's tests in their own order. Two xdist workers then start on the
    longest work and finish on the shortest, instead of one of them ending alone on a
    minute-long test."""
    rank: dict[Path, int] = {}
    for item in items:
        path = item.path
        if item.get_closest_marker("slow") is not None:
            rank[path] = 0
        elif item.get_closest_marker("e2e") is not None:
            rank.setdefault(path, 1)
        else:
            rank.setdefault(path, 2)
    items.sort(key=lambda item: rank[item.path])
