"""pytest plugin: ``pytest --genome`` records a genome per test into the embedded store.

Loaded through the ``pytest11`` entry point in every session of an environment that has
diffgenome installed, so importing it must cost nothing: it imports only pytest here and
the collector only when recording is switched on.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

try:
    from _pytest.assertion.rewrite import AssertionRewritingHook
except ImportError:  # a pytest laid out otherwise: its rewriting is left as it is
    AssertionRewritingHook = None  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    from diffgenome.recording.netns import Isolation
    from diffgenome.recording.session import Recorder

_RECORDER_NAME = "diffgenome-recorder"
#: The policies of ``--genome-egress`` (diffgenome.protocol.vocab.EGRESS_POLICIES; not
#: imported here: this module must cost nothing in sessions that do not record).
_POLICIES = ("loopback", "block", "allow", "isolate")
#: The choices of ``--genome-writer`` (diffgenome.store.writer_process.WRITER_MODES, likewise).
_WRITERS = ("auto", "process", "inline")
#: This session gave ``socket.socket`` the ``connect_ex`` that keeps its contract.
_CONNECT_EX: pytest.StashKey[bool] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("diffgenome", "diffgenome: record per-test genomes")
    group.addoption(
        "--genome",
        action="store_true",
        default=None,
        help="record a genome of every test into the store (also: ini 'genome = true')",
    )
    group.addoption(
        "--genome-store",
        metavar="PATH",
        default=None,
        help="store folder (default: .diffgenome/ at the rootdir)",
    )
    group.addoption(
        "--genome-key-file",
        metavar="FILE",
        default=None,
        help="digest key shared between stores (default: a key kept in the store)",
    )
    group.addoption(
        "--genome-egress",
        choices=_POLICIES,
        default=None,
        help="network egress policy while recording (default: loopback); isolate runs the "
        "session in a network namespace with only loopback (Linux), which also holds other "
        "programs and C code",
    )
    group.addoption(
        "--genome-source-root",
        action="append",
        default=[],
        metavar="DIR",
        help="folder whose code is the project's (repeatable; default: src/ or the rootdir)",
    )
    group.addoption(
        "--genome-test-root",
        action="append",
        default=[],
        metavar="DIR",
        help="folder whose code is test code (repeatable; default: testpaths or tests/)",
    )
    group.addoption(
        "--genome-random-seed",
        type=int,
        default=None,
        metavar="N",
        help="seed Python's random module with N at the start of each test phase, as "
        "pytest-randomly does (diffgenome diff passes 0: both sides draw the same numbers)",
    )
    group.addoption(
        "--genome-shard",
        metavar="I/N",
        default=None,
        help="this session records shard I of N of a sharded suite (a label for "
        "`diffgenome combine`; it selects no tests; default: pytest-split's --group/--splits)",
    )
    group.addoption(
        "--genome-only",
        metavar="FILE",
        default=None,
        help="run only the tests whose ids (relative to the repository root) FILE lists, one "
        "per line, within the selection the other arguments make (diffgenome diff's "
        "confirmation: the tests that differed)",
    )
    group.addoption(
        "--genome-carry",
        metavar="FILE",
        default=None,
        help="do not run the tests whose recorded ids FILE lists, one per line, and write the "
        "ids it took out to FILE.carried (diffgenome diff --selective: the tests the change "
        "does not reach, their base recording carried over); the run is then not a whole "
        "recording of its commit",
    )
    group.addoption(
        "--genome-preview",
        action="store_true",
        default=None,
        help="keep previews for reviewers beside the digests: a short text of each warning's "
        "message, and small scalar values of calls (str up to 40 characters, numbers, bools, "
        "None), secret-looking parts masked; never for secret-named parameters or values "
        "equal to an environment variable's; left out of `diffgenome export` unless asked "
        "(default: digests alone; see docs/recording.md)",
    )
    group.addoption(
        "--genome-writer",
        choices=_WRITERS,
        default=None,
        help="who writes finished tests into the store: a writer process of their own, on "
        "another core, so the next test does not wait (process), the test process itself "
        "(inline), or a writer process once at least 200 tests are to run and a core is free "
        "(auto, the default); the store holds the same rows either way",
    )
    parser.addini("genome", "record genomes (like --genome)", type="bool", default=False)
    parser.addini("genome_writer", "who writes finished tests (like --genome-writer)", default="")
    parser.addini(
        "genome_preview",
        "keep previews of warning messages and small values (like --genome-preview)",
        type="bool",
        default=False,
    )
    parser.addini("genome_store", "store folder", default="")
    parser.addini("genome_egress", "egress policy: loopback, block, allow or isolate", default="")
    parser.addini("genome_source_roots", "source roots", type="paths", default=[])
    parser.addini("genome_test_roots", "test roots", type="paths", default=[])
    parser.addini(
        "genome_max_nodes",
        "most call-tree nodes kept per test phase; a larger tree is marked truncated",
        default="",
    )


@contextlib.contextmanager
def _not_rewritten() -> Iterator[None]:
    """Import the recorder's modules past pytest's assertion rewriting, then put it back.

    pytest rewrites the asserts of every module of a plugin's distribution: each is parsed
    and compiled anew in every session whose bytecode cannot be kept (``diffgenome diff``
    records with ``PYTHONDONTWRITEBYTECODE``; a read-only site-packages), 0.4 s a session
    for the recorder's 65 modules, whose asserts are its own. The hook is stepped aside from
    ``sys.meta_path`` for the imports only, and put back where it was."""
    hooks = (
        [
            (index, finder)
            for index, finder in enumerate(sys.meta_path)
            if isinstance(finder, AssertionRewritingHook)
        ]
        if AssertionRewritingHook is not None
        else []
    )
    for _, finder in hooks:
        sys.meta_path.remove(finder)
    try:
        yield
    finally:
        for index, finder in hooks:
            if finder not in sys.meta_path:
                sys.meta_path.insert(min(index, len(sys.meta_path)), finder)


def _enabled(config: pytest.Config) -> bool:
    option = config.getoption("genome")
    if option is not None:
        return bool(option)
    return bool(config.getini("genome"))


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Before any conftest is imported, while the process is still single-threaded: make
    the network namespace of ``--genome-egress=isolate`` (every process started later,
    xdist's workers included, inherits it), and give ``socket.socket`` the ``connect_ex``
    that returns a refusal as an errno, so that references a conftest takes are that one."""
    namespace = early_config.known_args_namespace
    option = getattr(namespace, "genome", None)
    if not (bool(option) if option is not None else bool(early_config.getini("genome"))):
        return
    policy = getattr(namespace, "genome_egress", None) or early_config.getini("genome_egress")
    policy = str(policy or "loopback")
    if policy not in _POLICIES or policy == "allow":
        return  # options.py says what is wrong with a policy; allow refuses nothing
    with _not_rewritten():
        from diffgenome.protocol import identity

    finding = identity.check()
    if finding is not None and finding.fatal:
        return  # pytest_configure says so; nothing of ours may run
    if policy == "isolate":
        with _not_rewritten():
            from diffgenome.recording import netns
            from diffgenome.recording.options import ISOLATION

        early_config.stash[ISOLATION] = netns.isolate()
    with _not_rewritten():
        from diffgenome.recording.collect import egress

    egress.install_connect_ex()
    early_config.stash[_CONNECT_EX] = True


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Start recording, or say in one line why not: only a mistake in the user's own options
    or store (pytest's usage error, before any test runs) may stop the session."""
    if not _enabled(config):
        return
    with _not_rewritten():
        from diffgenome.protocol import identity
        from diffgenome.recording.notices import say

    # Before the recorder is imported: with another project's diffgenome/__init__.py it would
    # record under that project's version, or not import at all.
    finding = identity.check()
    if finding is not None:
        say(config, ("recording is off for this session: " if finding.fatal else "") + finding.text)
        if finding.fatal:
            return
    with _not_rewritten():
        from diffgenome.recording.session import Recorder

    try:
        recorder = Recorder(config)
    except pytest.UsageError:
        raise
    except Exception as exc:
        from diffgenome.store.layout import one_line

        what = f"{type(exc).__name__}: {one_line(exc)}"
        say(config, f"recording is off for this session: cannot set up ({what})")
        return
    if recorder.start():
        config.pluginmanager.register(recorder, _RECORDER_NAME)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist controller: say what a worker's recorder had to say (its terminal is unseen).

    A module-level hook, so that workers are heard even when the controller records nothing.
    """
    config = getattr(node, "config", None)
    if config is None or not _enabled(config):
        return
    from diffgenome.recording.notices import say_from_worker

    say_from_worker(config, node)


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder: Any = config.pluginmanager.get_plugin(_RECORDER_NAME)
    if recorder is not None:
        recorder.close()
        config.pluginmanager.unregister(recorder, _RECORDER_NAME)
    if config.stash.get(_CONNECT_EX, False):
        from diffgenome.recording.collect import egress

        egress.uninstall_connect_ex()
        del config.stash[_CONNECT_EX]


def recorder_of(config: pytest.Config) -> Recorder | None:
    """The active recorder of a session, for tests and other plugins."""
    plugin: Recorder | None = config.pluginmanager.get_plugin(_RECORDER_NAME)
    return plugin


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """Say which callbacks record (a silently missing compiled core would only be slow, but
    the user comparing timings should know) and what the egress policy holds in fact."""
    recorder = recorder_of(config)
    if recorder is None:
        return None
    tracer = recorder.tracer
    if tracer.core == "c":
        line = "diffgenome: recording with the compiled core"
    else:
        line = f"diffgenome: recording with the pure-Python core ({tracer.core_reason})"
    if tracer.first_errors is not None:
        line += "; DIFFGENOME_DEBUG=callbacks: the first error of each kind is said at the end"
    from diffgenome.recording.options import ISOLATION

    return [line, egress_header(recorder.options.egress_asked, config.stash.get(ISOLATION, None))]


def egress_header(asked: str, isolation: Isolation | None) -> str:
    """One line: the policy in force and what it holds (docs/recording.md says it at length)."""
    guard = "this process and its Python children"
    rest = "other programs, ctypes/cffi and C extensions that call libc are not held"
    if asked == "isolate":
        if isolation is not None and isolation.ok:
            return (
                f"diffgenome: egress isolate: {isolation.how}, which has only loopback: no "
                "process of the session reaches another host (the guard records as under "
                "loopback)"
            )
        why = isolation.reason if isolation is not None else "it was not made before startup"
        return (
            f"diffgenome: egress isolate is not possible here ({why}); falling back to block: "
            f"{guard} are refused every connection, {rest}"
        )
    if asked == "allow":
        return f"diffgenome: egress allow: nothing is refused; what {guard} attempt is recorded"
    reach = "no connection at all" if asked == "block" else "loopback only"
    return (
        f"diffgenome: egress {asked}: {guard} get {reach} (audit hooks); {rest}: "
        "--genome-egress=isolate holds them"
    )
