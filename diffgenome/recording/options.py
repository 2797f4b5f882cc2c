"""What a recording session was asked for: pytest's options and ini values, read once, and
the run's ``config`` that says so to every reader.

Kept apart from the session so that everything the user can set is in one place, checked
before anything is recorded: a value that is not usable is pytest's usage error, reported
before any test runs, never a recorder that fails halfway.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from diffgenome import __version__
from diffgenome.protocol.formats import EFFECTS, GENOME_FORMAT, NAMING, SECRET_RULES, VALUES
from diffgenome.protocol.runs import ENVIRONMENT_CONFIG_KEY, SHARD_CONFIG_KEY
from diffgenome.protocol.selection import find_store
from diffgenome.protocol.vocab import EGRESS_POLICIES
from diffgenome.recording.collect.contract import Bounds
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.run import git_toplevel
from diffgenome.store.writer_process import WRITER_AUTO, WRITER_MODES

if TYPE_CHECKING:
    from diffgenome.recording.netns import Isolation

_DEFAULT_EGRESS = "loopback"


@dataclass(frozen=True, slots=True)
class Options:
    """One session's settings, with the defaults applied and paths made absolute."""

    rootdir: str
    #: ``main``, or the xdist worker id (``gw0``) of this process.
    worker: str
    is_worker: bool
    #: An xdist controller runs no tests: it creates and finishes the run its workers fill.
    is_controller: bool
    #: The run a worker records into, handed over by its controller.
    controller_run_id: str | None
    store_path: str
    key_file: str | None
    #: The policy in force: what was asked, except ``block`` where ``isolate`` was asked and
    #: the namespace could not be made (the session header says why).
    egress_policy: str
    source_roots: list[str]
    test_roots: list[str]
    testpaths: list[str]
    max_nodes: int
    basetemp: str | None
    #: Seed of ``random`` at the start of every test phase (None: left alone).
    random_seed: int | None = None
    #: ``(index, count)``, 1-based, when the session records one shard of a sharded suite.
    shard: tuple[int, int] | None = None
    #: The only test ids to run (``--genome-only FILE``); None: every selected test.
    only: frozenset[str] | None = None
    #: Test ids not to run, their base recording carried over by a diff that records only
    #: what the change reaches (``--genome-carry FILE``); None: none.
    carry: frozenset[str] | None = None
    #: Where the ids ``carry`` took out of the session are written (``FILE.carried``).
    carry_file: str | None = None
    #: The policy the user asked for (``--genome-egress`` or ini ``genome_egress``).
    egress_asked: str = _DEFAULT_EGRESS
    #: ``--genome-preview``: keep a cut text of each warning's message and previews of
    #: small scalar values of calls, secret rules applied, next to their digests (off: the
    #: digests alone).
    preview: bool = False
    #: ``--genome-writer``: ``auto``, ``process`` or ``inline`` (store/writer_process.py).
    writer: str = "auto"
    #: How many pytest-xdist workers the session runs (None: not under xdist).
    workers: int | None = None


#: What ``--genome-egress=isolate`` achieved in this process, before any conftest ran (set by
#: plugin.py's earliest hook, read here and in the header).
ISOLATION: pytest.StashKey[Isolation] = pytest.StashKey()


def read_options(config: pytest.Config) -> Options:
    """The session's options; raises pytest's usage error for a value that cannot be used."""
    rootdir = str(config.rootpath)
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    is_worker = workerinput is not None
    store_opt = config.getoption("genome_store") or config.getini("genome_store")
    if store_opt:
        store_path = str(store_opt)
        if not store_path.startswith("/"):
            store_path = str(config.invocation_params.dir / store_path)
    else:
        store_path = default_store(str(config.invocation_params.dir), rootdir)
    asked = _egress(config)
    basetemp = config.getoption("basetemp", None)
    return Options(
        rootdir=rootdir,
        worker=str(workerinput["workerid"]) if workerinput else "main",
        is_worker=is_worker,
        is_controller=not is_worker and _xdist_distributing(config),
        controller_run_id=(
            str(workerinput["diffgenome_run"])
            if workerinput and "diffgenome_run" in workerinput
            else None
        ),
        store_path=store_path,
        key_file=_from_invocation(config, config.getoption("genome_key_file")),
        egress_policy=_effective_egress(config, asked),
        source_roots=list(config.getoption("genome_source_root"))
        + [str(p) for p in config.getini("genome_source_roots")],
        test_roots=list(config.getoption("genome_test_root"))
        + [str(p) for p in config.getini("genome_test_roots")],
        testpaths=[str(p) for p in config.getini("testpaths")],
        max_nodes=_max_nodes(config),
        basetemp=str(basetemp) if basetemp else None,
        random_seed=config.getoption("genome_random_seed", None),
        shard=_shard(config),
        only=_only(config),
        carry=_listed(config, "genome_carry"),
        carry_file=config.getoption("genome_carry", None) or None,
        egress_asked=asked,
        preview=bool(config.getoption("genome_preview", None) or config.getini("genome_preview")),
        writer=_writer(config),
        workers=int(workerinput["workercount"])
        if workerinput and isinstance(workerinput.get("workercount"), int)
        else None,
    )


def _writer(config: pytest.Config) -> str:
    mode = str(config.getoption("genome_writer", None) or config.getini("genome_writer") or "")
    mode = mode.strip() or WRITER_AUTO
    if mode not in WRITER_MODES:
        raise pytest.UsageError(
            f"genome_writer must be one of {', '.join(WRITER_MODES)}, not {mode!r}"
        )
    return mode


def _egress(config: pytest.Config) -> str:
    policy = str(config.getoption("genome_egress") or config.getini("genome_egress") or "")
    policy = policy.strip() or _DEFAULT_EGRESS
    if policy not in EGRESS_POLICIES:
        raise pytest.UsageError(
            f"genome_egress must be one of {', '.join(EGRESS_POLICIES)}, not {policy!r}"
        )
    return policy


def _effective_egress(config: pytest.Config, asked: str) -> str:
    """``isolate`` holds only when the namespace was made before startup (plugin.py); where
    it could not be, the session falls back to ``block``, the strictest guard it has."""
    if asked != "isolate":
        return asked
    isolation = config.stash.get(ISOLATION, None)
    return "isolate" if isolation is not None and isolation.ok else "block"


def _only(config: pytest.Config) -> frozenset[str] | None:
    return _listed(config, "genome_only")


def _listed(config: pytest.Config, option: str) -> frozenset[str] | None:
    """The test ids a file of one per line names (``--genome-only``, ``--genome-carry``)."""
    path = config.getoption(option, None)
    if not path:
        return None
    try:
        with open(str(path), encoding="utf-8") as listed:
            return frozenset(line.rstrip("\n") for line in listed if line.strip())
    except (OSError, UnicodeDecodeError) as exc:
        flag = "--" + option.replace("_", "-")
        raise pytest.UsageError(f"diffgenome: {flag} {path}: {exc}") from None


def _from_invocation(config: pytest.Config, path: str | None) -> str | None:
    """A path the user gave, read from the folder pytest was started in (as pytest reads its
    own arguments), whatever folder a conftest later moves to."""
    if not path or path.startswith("/"):
        return path
    return str(config.invocation_params.dir / path)


def default_store(invocation_dir: str, rootdir: str) -> str:
    """The store the ``diffgenome`` command finds too: the nearest ``.diffgenome/`` from the
    folder pytest was started in up to the git top, else at the git top; outside git, at the
    rootdir (see :func:`diffgenome.protocol.selection.find_store`)."""
    top = git_toplevel(invocation_dir)
    return find_store(invocation_dir if top else rootdir, top)


def _shard(config: pytest.Config) -> tuple[int, int] | None:
    """``--genome-shard I/N``, else pytest-split's ``--group I --splits N`` (1-based like
    ours): which shard of the suite this session records, for ``diffgenome combine``."""
    raw = config.getoption("genome_shard")
    given = _parse_shard(str(raw)) if raw is not None else None
    split = _pytest_split_shard(config)
    if given is not None and split is not None and given != split:
        raise pytest.UsageError(
            f"--genome-shard={raw} disagrees with pytest-split's --group {split[0]} "
            f"--splits {split[1]}; leave --genome-shard out or make them agree"
        )
    return given or split


def _parse_shard(raw: str) -> tuple[int, int]:
    index, sep, count = raw.strip().partition("/")
    try:
        shard = (int(index), int(count)) if sep else (0, 0)
    except ValueError:
        shard = (0, 0)
    if not 1 <= shard[0] <= shard[1]:
        raise pytest.UsageError(
            f"--genome-shard must be I/N with 1 <= I <= N (shard I of N, e.g. 2/3), not {raw!r}"
        )
    return shard


def _pytest_split_shard(config: pytest.Config) -> tuple[int, int] | None:
    """pytest-split's ``--splits N --group I`` when both are given (plain integers)."""
    splits = config.getoption("splits", None)
    group = config.getoption("group", None)
    if isinstance(splits, int) and isinstance(group, int) and 1 <= group <= splits:
        return group, splits
    return None


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


def _xdist_distributing(config: pytest.Config) -> bool:
    """True in an xdist controller that will hand tests to workers. pytest registers xdist
    as ``xdist`` when it loads it by itself and as ``xdist.plugin`` when it is named (``-p
    xdist.plugin``, ``PYTEST_PLUGINS``, as with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``): a
    controller that took itself for a serial session wrote each test the workers had
    recorded again, empty and verified."""
    plugins = config.pluginmanager
    if not (plugins.hasplugin("xdist") or plugins.hasplugin("xdist.plugin")):
        return False
    dist = getattr(config.option, "dist", "no")
    numprocesses = getattr(config.option, "numprocesses", None)
    return dist != "no" or bool(numprocesses)


def run_config(
    options: Options,
    scope: Scope,
    bounds: Bounds,
    warnings_captured: bool,
    environment: str | None,
) -> dict[str, Any]:
    """The run's ``config``: how it was recorded, as a reader must know to compare it (the
    revisions of naming, values and effects), and as the recording key hashes it.
    ``environment``: what a diff recorded in (``protocol.runs.ENVIRONMENT_ENV``)."""
    rel = len(scope.rootdir)
    config: dict[str, Any] = {
        "source_roots": sorted(r[rel:] or "." for r in scope.source_roots),
        "test_roots": sorted(r[rel:] or "." for r in scope.test_roots),
        # The policy in force, so that a diff can tell an isolated side from a guarded one.
        "egress": options.egress_policy,
        "bounds": bounds.as_config(),
        "recorder": f"diffgenome {__version__}",
        "genome_format": GENOME_FORMAT,
        "naming": NAMING,
        # The revision of collect/values.py's canonical forms: digests compare only within one.
        "values": VALUES,
        "random_seed": options.random_seed,
        "warnings": "pytest" if warnings_captured else "not-captured",
        # The revision of recording/effects.py: runs that do not say recorded no effects.
        "effects": EFFECTS,
        # Warning messages are keyed digests; a text preview only when asked for.
        "preview": options.preview,
        # The revision of collect/redact.py's rules: text kept in clear (test ids among it)
        # is masked alike only under one revision.
        "secret_rules": SECRET_RULES,
        # The string hash seed orders sets and dicts of strings: recordings made under
        # different seeds may differ where the code does not, so they are not the same
        # recording ("random": a seed of its own per process).
        "hash_seed": os.environ.get("PYTHONHASHSEED") or "random",
    }
    if environment is not None:
        # The diff reuses such a run only where its own is the same.
        config[ENVIRONMENT_CONFIG_KEY] = environment
    if options.egress_asked != options.egress_policy:
        config["egress_asked"] = options.egress_asked  # isolate, fallen back to block
    if options.shard is not None:
        # Part of the recording key: a shard is never reused as the whole suite.
        index, count = options.shard
        config[SHARD_CONFIG_KEY] = {"index": index, "count": count}
    if options.carry is not None:
        # Tests a diff asked not to run (their base carried over): not a whole recording.
        config["carry"] = len(options.carry)
    return config
