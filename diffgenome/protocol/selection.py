"""Which of pytest's arguments say what was recorded, and where the store is: both sides read
these rules from here, so that ``pytest --genome`` and ``diffgenome diff`` agree on them.

A recording is the same recording whatever pytest printed while making it: ``-q``, ``-v``,
``--tb``, ``-r``, ``--color``, ``-p no:cacheprovider`` and the like change the terminal, not
the tests run or what they do. Nor do diffgenome's own ``--genome``, ``--genome-store`` and
``--genome-key-file`` (the key is compared through the run's key fingerprint) and
``--genome-writer`` (which process writes the same rows). Everything
else -- test paths, ``-k``, ``-m``, ``-W``, ``-x``, ``-o``, other plugins -- is the test
selection, and paths in it are written from the git top (else pytest's rootdir), so that the
same tests named from two folders are the same selection.

Only the standard library: the recording side imports this.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from itertools import pairwise
from typing import Final

#: The store folder's name, looked for from where a command or a session starts.
DEFAULT_DIR: Final = ".diffgenome"

#: Set by ``diffgenome diff`` for the recordings it makes; read by the recorder.
ORIGIN_ENV: Final = "DIFFGENOME_ORIGIN"
#: Who asked for a recording, as ``run.origin`` says.
RUN_ORIGINS: Final = ("pytest", "diff", "confirmation")

# Options that change only what pytest prints (or loads the recorder): dropped with their value.
_OUTPUT_WITH_VALUE: Final = frozenset(
    {
        "--tb",
        "-r",
        "--color",
        "--code-highlight",
        "--durations",
        "--durations-min",
        "--junitxml",
        "--junit-xml",
        "--junit-prefix",
        "--resultlog",
        "--result-log",
        "--log-file",
        "--log-cli-level",
        "--log-cli-format",
        "--log-cli-date-format",
        "--verbosity",
        "--genome-store",
        "--genome-key-file",
        "--genome-writer",
    }
)
_OUTPUT_FLAGS: Final = frozenset(
    {
        "--genome",
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "-l",
        "--showlocals",
        "--no-showlocals",
        "--no-header",
        "--no-summary",
        "--no-fold-skipped",
        "--full-trace",
        "--force-short-summary",
        "--disable-warnings",
        "--disable-pytest-warnings",
    }
)
# ``-p NAME`` values that only switch off output or the cache, or load the recorder itself.
_OUTPUT_PLUGINS: Final = frozenset(
    {"no:cacheprovider", "no:terminalprogress", "diffgenome.recording.plugin"}
)
# Options of the selection that take a value as the next argument (kept with it, never read
# as a path).
_SELECTION_WITH_VALUE: Final = frozenset(
    {
        "-k",
        "-m",
        "-p",
        "-W",
        "-o",
        "-c",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--maxfail",
        "--import-mode",
        "--pythonwarnings",
        "--override-ini",
        "--config-file",
        "--genome-egress",
        "--genome-source-root",
        "--genome-test-root",
        "-n",
        "--numprocesses",
        "--dist",
        "--capture",
        "--log-level",
        "--log-format",
        "--log-date-format",
        "--cov",
        "--cov-report",
        "--genome-random-seed",
        "--hypothesis-seed",
        "--hypothesis-profile",
    }
)
# Flags of the selection that take no value: what follows one of them is not its value.
_SELECTION_FLAGS: Final = frozenset(
    {
        "-x",
        "--exitfirst",
        "-s",
        "--lf",
        "--last-failed",
        "--ff",
        "--failed-first",
        "--nf",
        "--new-first",
        "--sw",
        "--stepwise",
        "--sw-skip",
        "--stepwise-skip",
        "--strict",
        "--strict-markers",
        "--strict-config",
        "--runxfail",
        "--doctest-modules",
        "--continue-on-collection-errors",
        "--setup-show",
        "--cache-clear",
        "--noconftest",
        "--keep-duplicates",
        "--pdb",
        "--trace",
    }
)


def _short_output_flag(arg: str) -> bool:
    """``-qq``, ``-vvv``, ``-rA``/``-rfE`` (report chars), ``-l``: output only."""
    if len(arg) < 2 or arg[0] != "-" or arg[1] == "-":
        return False
    body = arg[1:]
    return bool(body) and (set(body) <= {"q"} or set(body) <= {"v"} or body[0] == "r")


def recorded_selection(
    args: Sequence[str], invocation_dir: str | None = None, top: str | None = None
) -> list[str]:
    """``args`` without what changes only the output, paths written from ``top``.

    A test path (an argument that is no option, naming an existing file or folder from
    ``invocation_dir``, with or without ``::`` and a test name) becomes relative to ``top``;
    without both folders, or for anything else, the argument is kept as given.
    """
    units: list[list[str]] = []  # an option with its value, or one positional argument
    items = list(args)
    index = 0
    while index < len(items):
        arg = items[index]
        index += 1
        if arg in _OUTPUT_WITH_VALUE:
            index += 1  # its value is the next argument
            continue
        if arg.startswith("--") and arg.partition("=")[0] in _OUTPUT_WITH_VALUE:
            continue
        if arg in _OUTPUT_FLAGS or _short_output_flag(arg):
            continue
        if arg == "-p" and index < len(items) and items[index] in _OUTPUT_PLUGINS:
            index += 1
            continue
        if arg.startswith("-p") and arg[2:] in _OUTPUT_PLUGINS:
            continue
        if arg in _SELECTION_WITH_VALUE and index < len(items):
            units.append([arg, items[index]])
            index += 1
            continue
        units.append([_from_top(arg, invocation_dir, top) if not arg.startswith("-") else arg])
    return [arg for unit in _options_first(units) for arg in unit]


#: Short options whose value may be written in the same argument (``-kslow``, ``-Werror``).
_GLUED_VALUE: Final = frozenset({"-k", "-m", "-p", "-W", "-o", "-c", "-n", "-r"})


def path_words(args: Sequence[str]) -> list[int] | None:
    """The positions in ``args`` of the words pytest reads as test paths: those that are
    neither an option nor the value of an option this module knows. None where that is not
    known: after an option this module does not know, a word may be its value or a path.
    ``-o addopts=`` names no path (cookiecutter's and semver's suites need it): before this
    was asked, every confirming recording of such a suite collected all of it to record a
    few tests."""
    items = list(args)
    found: list[int] = []
    index = 0
    while index < len(items):
        arg = items[index]
        index += 1
        if arg == "--":
            return [*found, *range(index, len(items))]
        if not arg.startswith("-") or arg == "-":
            found.append(index - 1)
            continue
        if arg.startswith("--") and "=" in arg:
            continue
        if arg in _OUTPUT_WITH_VALUE or arg in _SELECTION_WITH_VALUE:
            index += 1
            continue
        if arg in _OUTPUT_FLAGS or arg in _SELECTION_FLAGS or _short_output_flag(arg):
            continue
        if arg[:2] in _GLUED_VALUE and len(arg) > 2:
            continue
        if index < len(items) and not items[index].startswith("-"):
            return None
    return found


def _options_first(units: list[list[str]]) -> list[list[str]]:
    """The options in their order, then the test paths in theirs: pytest reads both the same
    wherever they stand (``--genome-random-seed=0 tests`` is ``tests --genome-random-seed=0``).

    Only where no positional argument could be the value of an option this module does not
    know (``--foo a b`` and ``a --foo b`` must stay two selections): after such an option the
    order is kept as given, which at worst records a run again instead of reusing it."""
    for before, unit in pairwise(units):
        option = before[0]
        if (
            len(before) == 1
            and option.startswith("-")
            and "=" not in option
            and option not in _SELECTION_FLAGS
            and not unit[0].startswith("-")
        ):
            return units
    options = [unit for unit in units if unit[0].startswith("-")]
    return options + [unit for unit in units if not unit[0].startswith("-")]


def _from_top(arg: str, invocation_dir: str | None, top: str | None) -> str:
    if invocation_dir is None or top is None:
        return arg
    path, sep, rest = arg.partition("::")
    full = os.path.normpath(os.path.join(invocation_dir, path))
    if not os.path.exists(full):
        return arg
    rel = os.path.relpath(os.path.realpath(full), os.path.realpath(top))
    return rel.replace(os.sep, "/") + sep + rest


def command_store(given: str | None, start: str, toplevel: str | None) -> str:
    """The one answer to where a ``diffgenome`` command's store is: ``--store`` when
    ``given``, else :func:`find_store` from ``start`` (``--repo``, else the current folder).
    ``diff`` records into it, reads its sides from it and writes the HTML report from it:
    every part is handed this path, none looks for the store itself."""
    return given or find_store(start, toplevel)


def find_store(start: str, toplevel: str | None) -> str:
    """The store for a command run in ``start``: the nearest ``.diffgenome/`` folder from
    ``start`` up to the git top ``toplevel``, else ``.diffgenome/`` at the git top. Outside
    a git work tree (``toplevel`` None) nothing above ``start`` is looked at: the store is
    ``start/.diffgenome``, never a stray one in a shared parent such as ``/tmp``.

    ``pytest --genome`` (from its invocation folder) and the ``diffgenome`` command (from the
    current folder) both call this, so a project in a subfolder of a repository shares one
    store with the commands run anywhere in that repository.
    """
    here = os.path.abspath(start)
    if not toplevel:
        return os.path.join(here, DEFAULT_DIR)
    top = os.path.abspath(toplevel)
    real_top = os.path.realpath(top)
    if not (os.path.realpath(here) + os.sep).startswith(real_top + os.sep):
        return os.path.join(top, DEFAULT_DIR)
    while True:
        candidate = os.path.join(here, DEFAULT_DIR)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(here)
        if os.path.realpath(here) == real_top or parent == here:
            break
        here = parent
    return os.path.join(top, DEFAULT_DIR)


def node_id(test_id: str) -> str:
    """The pytest node id of a recorded test id: a subtest is ``<node id> [label]``, cut at
    the first space outside brackets (parametrize ids may hold spaces of their own)."""
    depth = 0
    for i, ch in enumerate(test_id):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0:
            return test_id[:i]
    return test_id


#: How the secret rules mark what they masked in a test id (``<secret:0123456789ab>``,
#: recording/collect/redact.py): such an id is no node id pytest knows.
SECRET_MARK = "<secret:"


#: The mark of a test that shares its pytest node id with earlier ones in collection order
#: (a custom collector yielding several items of one name): ``<node id>#1``, ``#2``...
SHARED_ID_MARK = "#"
_CASE_INDEX = re.compile(r"#[1-9][0-9]*\Z")
#: The disclosed fact of every test whose node id several collected items carry:
#: ``shared-node-id:<how many>``. Their recorded ids are places in collection order.
SHARED_NODE_ID = "shared-node-id"


def shared_id(node: str, index: int) -> str:
    """The recorded id of the ``index``-th (from 1) later item that carries ``node``."""
    return f"{node}{SHARED_ID_MARK}{index}"


def case_indexed(test_id: str) -> bool:
    """Whether the node id part of ``test_id`` ends in an index (``#1``): an item that
    shares its node id with earlier ones, or a node id that ends so by itself; pytest knows
    the former only without it."""
    return _CASE_INDEX.search(node_id(test_id)) is not None


def pytest_node_id(test_id: str) -> str:
    """What to hand pytest to select the recorded test ``test_id``: its node id, or, where
    the secret rules masked part of it (a secret-looking parameter value), the node id of its
    function, whose cases ``--genome-only`` then narrows by their recorded ids. An index
    (``#1``: items that share a node id) is left out: pytest selects every item of that node
    id, and ``--genome-only`` narrows them too."""
    node = node_id(test_id)
    if SECRET_MARK in node:
        return node.partition("[")[0]
    return _CASE_INDEX.sub("", node)


#: An entry of ``--genome-only`` that selects every case of a parametrized test function,
#: whatever their ids: confirmation records a function whose case ids moved between base and
#: head (ids built from the clock) to see whether they move between two recordings of one
#: commit too.
ALL_CASES = "[*]"


def all_cases(test_id: str) -> str:
    """The ``--genome-only`` entry selecting every case of the function ``test_id`` is a case
    of."""
    return test_id.partition("[")[0] + ALL_CASES


def selected(test_id: str, only: frozenset[str]) -> bool:
    """Whether ``--genome-only``'s entries ``only`` select the recorded id ``test_id``."""
    return test_id in only or ("[" in test_id and all_cases(test_id) in only)
