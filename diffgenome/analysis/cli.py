"""The ``diffgenome`` command: parses arguments, loads from the store, hands off to report.

Each subcommand is a :class:`Command` in ``COMMANDS``: a name, a function that adds its
arguments, and a function that runs it and returns the exit code. A new subcommand (``diff``)
is one more entry; ``--store`` and the error handling come with it. Every user or input
error is a :class:`~diffgenome.protocol.errors.UserError`, wherever it is raised, and
:func:`main` alone turns it into one line, ``diffgenome: error: <what is wrong>; <what to
do>``, and exit status 2 -- never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import NoReturn

from rich.console import Console, RenderableType

from diffgenome.analysis import pipeline
from diffgenome.analysis.combine import combine
from diffgenome.analysis.delivery import EXIT_FOUND, FAIL_ON_SEEN, deliver
from diffgenome.analysis.diff.affected import affected_tests
from diffgenome.analysis.diff.modules import module_namer
from diffgenome.analysis.export import EXPORT_FORMATS, ExportOptions, export_run
from diffgenome.analysis.htmlreport import write_run_html
from diffgenome.analysis.models import (
    Run,
    TestRecord,
)
from diffgenome.analysis.outfiles import check_output, write_output
from diffgenome.analysis.record.git import git_output, place_of
from diffgenome.analysis.record.process import Interrupted
from diffgenome.analysis.report import (
    render_affected,
    render_ids,
)
from diffgenome.analysis.report.console import make_console, print_whole
from diffgenome.analysis.report.markdown import (
    DEFAULT_MARKDOWN_LIMIT,
    GITHUB_COMMENT_LIMIT,
)
from diffgenome.analysis.report.progress import progress_on_stderr
from diffgenome.analysis.report.runs import (
    genome_tree,
    run_tests_table,
    runs_table,
    short_commit,
    size_text,
)
from diffgenome.analysis.request import read_request
from diffgenome.analysis.schema import SCHEMAS, schema_text
from diffgenome.analysis.validate import validated
from diffgenome.protocol import identity
from diffgenome.protocol.errors import UserError
from diffgenome.protocol.formats import GENOME_FORMAT
from diffgenome.protocol.selection import DEFAULT_DIR, command_store
from diffgenome.protocol.vocab import (
    IMPORT_TEST_ID,
    STATUS_CHANGED,
    STATUS_RESTRUCTURED,
    STATUS_UNVERIFIED,
)
from diffgenome.store.key import KEY_BYTES, new_key_file
from diffgenome.store.prune import KeepRules, prune
from diffgenome.store.reader import (
    RunSummary,
    StoreReader,
    UnknownRunError,
)

PROG = "diffgenome"
EXIT_OK = 0
EXIT_USAGE = 2


class CliError(UserError):
    """A user or input error found by the CLI itself (arguments, output files, run lookup)."""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is raised (and reported as one line) instead of printed."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message}; see `{self.prog} --help`")


# -- helpers shared by commands -----------------------------------------------------------


def default_store(where: str | None = None) -> str:
    """The store ``pytest --genome`` run in ``where`` (default: here) writes to: the nearest
    ``.diffgenome/`` from there up to the git top, else at the git top (outside git: there)."""
    here = where or os.getcwd()
    return command_store(None, here, place_of(here).toplevel or None)


def store_path(args: argparse.Namespace) -> str:
    """Where this command's store is: ``--store``, else the store of ``--repo`` or of the
    current folder (:func:`~diffgenome.protocol.selection.command_store`, as ``diff``'s
    request decides it)."""
    return str(args.store or default_store(getattr(args, "repo", None)))


def open_store(args: argparse.Namespace) -> StoreReader:
    return StoreReader.open(store_path(args))


def _git_commit(spec: str) -> str | None:
    if not spec or spec.startswith("-"):
        return None
    sha = git_output(os.getcwd(), "rev-parse", "--verify", "--quiet", spec + "^{commit}") or ""
    return sha.strip() or None


def resolve_run(reader: StoreReader, spec: str) -> str:
    """A run id for ``spec``: what the store resolves, else a git revision (``HEAD~1``,
    a branch) of the repository around the current folder, looked up by its commit."""
    try:
        return reader.resolve(spec)
    except UnknownRunError:
        sha = _git_commit(spec)
        if sha is None or sha == spec:
            raise
    try:
        return reader.resolve(sha)
    except UnknownRunError:
        raise CliError(
            f"no run of {spec} (commit {sha[:12]}) in the store; record that commit first "
            "or list the runs with `diffgenome runs`"
        ) from None


def console() -> Console:
    """Standard output for people: whole lines in a pipe, colour on a terminal only."""
    return make_console()


def _print(renderable: RenderableType) -> None:
    print_whole(console(), renderable)


# -- commands -----------------------------------------------------------------------------


def schema_json(kind: str) -> str:
    """The JSON Schema of a published format, byte-stable for the copies in docs/schema/."""
    return schema_text(kind)


def _configure_schema(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=sorted(SCHEMAS), help="which document format")


def _run_schema(args: argparse.Namespace) -> int:
    write_output(schema_json(args.kind), None)
    return EXIT_OK


def _configure_runs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the run list as JSON (every field, the whole selection) to FILE or - (stdout)",
    )


def _run_runs(args: argparse.Namespace) -> int:
    with open_store(args) as reader:
        runs = reader.runs()
        store, db_path = reader.path, reader.db_path
    on_disk = 0
    for name in (db_path, db_path + "-wal"):
        with contextlib.suppress(OSError):
            on_disk += os.path.getsize(name)
    if args.json is not None:
        listed = [dataclasses.asdict(run) for run in runs]
        write_output(json.dumps(listed, indent=2) + "\n", args.json)
        return EXIT_OK
    # The total goes to a terminal only: piped, every line after the header is one run.
    if sys.stdout.isatty():
        _print(runs_table(runs, os.path.abspath(store), on_disk))
    else:
        _print(runs_table(runs))
    return EXIT_OK


def _configure_prune(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-last", metavar="N", type=int, help="keep the N newest runs (by start time)"
    )
    parser.add_argument(
        "--keep-commit",
        metavar="REV",
        action="append",
        default=[],
        help="keep the runs of this commit (a git revision or a recorded commit prefix; "
        "repeatable)",
    )
    parser.add_argument(
        "--keep-since",
        metavar="DATE",
        help="keep the runs started at or after DATE (ISO 8601: 2026-11-30 or "
        "2026-11-30T12:00, UTC)",
    )
    parser.add_argument(
        "--cap",
        metavar="N",
        type=int,
        help="set the store's cap: after each recording the runs beyond the N newest are "
        "removed (and said so); 0 keeps every run. Applied now too",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say which runs would go, remove nothing"
    )
    parser.epilog = (
        "Every run that no --keep-* rule keeps is removed (a run any rule keeps stays); "
        "runs still being recorded are never removed. The store file shrinks afterwards."
    )


def _since(text: str) -> str:
    """``DATE`` as the UTC text runs are started at, to compare with theirs."""
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise CliError(
            f"--keep-since {text!r} is not a date; write it as 2026-11-30 or 2026-11-30T12:00"
        ) from None
    if when.tzinfo is not None:
        when = when.astimezone(datetime.UTC).replace(tzinfo=None)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_prune(args: argparse.Namespace) -> int:
    rules = args.keep_last is not None or args.keep_commit or args.keep_since is not None
    if not rules and args.cap is None:
        raise CliError(
            "say what to keep: --keep-last N, --keep-commit REV, --keep-since DATE, or "
            "--cap N; see `diffgenome prune --help`"
        )
    for name, value in (("--keep-last", args.keep_last), ("--cap", args.cap)):
        if value is not None and value < 0:
            raise CliError(f"{name} must be 0 or more, not {value}")
    since = _since(args.keep_since) if args.keep_since is not None else None
    path = store_path(args)
    with StoreReader.open(path) as reader:
        runs = reader.runs()  # newest first
        store_dir = reader.path
        commits = [_commit_of(reader, runs, rev) for rev in args.keep_commit]
    keep = KeepRules(last=args.keep_last, commits=commits, since=since)
    gone = prune(store_dir, runs, keep, args.cap, args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    out = console()
    for run in reversed(gone):  # oldest first
        out.print(
            f"{verb} {run.id}  {short_commit(run.commit, run.dirty)}  {run.origin or '-'}  "
            f"{size_text(run.size)}"
        )
    freed = sum(run.size for run in gone)
    summary = (
        f"{verb} {len(gone)} of {len(runs)} runs ({size_text(freed)} of recordings); "
        f"{len(runs) - len(gone)} kept"
    )
    if args.cap is not None:
        cap = "no cap" if args.cap == 0 else f"the {args.cap} newest runs"
        summary += f"; the store {'would keep' if args.dry_run else 'keeps'} {cap} from now on"
    out.print(summary)
    return EXIT_OK


def _commit_of(reader: StoreReader, runs: list[RunSummary], rev: str) -> str:
    """The recorded commit ``rev`` names: a git revision here, else a prefix of a commit in
    the store."""
    sha = _git_commit(rev)
    if sha is not None:
        return sha
    matching = {run.commit for run in runs if run.commit and run.commit.startswith(rev.lower())}
    if len(matching) == 1:
        return matching.pop()
    if not matching:
        raise CliError(
            f"--keep-commit {rev!r} is neither a git revision here nor a recorded commit; "
            "list the runs with `diffgenome runs`"
        )
    raise CliError(f"--keep-commit {rev!r} matches several recorded commits; give more of it")


def _configure_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run id or prefix, 'latest', or a commit")
    parser.add_argument("test", nargs="?", help="test id, or a unique part of one")
    parser.add_argument("--html", metavar="DIR", help="write an HTML report (a static site) to DIR")


#: What a run that is not valid needs (``diffgenome show``).
_RECORD_AGAIN = "record the run again"


def _run_show(args: argparse.Namespace) -> int:
    with open_store(args) as reader:
        run_id = resolve_run(reader, args.run)
        run = validated(Run, reader.run(run_id), f"run {run_id}", CliError, again=_RECORD_AGAIN)
        if args.html is not None:
            test_id = args.test and _find_test(reader.test_ids(run_id), args.test, run_id)
            write_run_html(reader, run, args.html, test_id)
            return EXIT_OK
        if args.test is None:
            _print(run_tests_table(run, reader.test_summaries(run_id)))
            return EXIT_OK
        test_id = _find_test(reader.test_ids(run_id), args.test, run_id)
        (test,) = reader.tests(run_id, [test_id])
    what = f"run {run_id}: test {test_id}"
    record = validated(TestRecord, test, what, CliError, again=_RECORD_AGAIN)
    _print(genome_tree(run, record))
    return EXIT_OK


def _find_test(ids: list[str], wanted: str, run_id: str) -> str:
    if wanted in ids:
        return wanted
    matches = [test_id for test_id in ids if wanted in test_id]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise CliError(
            f"run {run_id} has no test matching {wanted!r}; "
            f"list its tests with `diffgenome show {run_id}`"
        )
    shown = ", ".join(matches[:3]) + (f" and {len(matches) - 3} more" if len(matches) > 3 else "")
    raise CliError(f"{wanted!r} matches several tests ({shown}); give the exact test id")


def _configure_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run id or prefix, 'latest', or a commit")
    parser.add_argument("-o", "--output", help="file to write; '-' or none: standard output")
    parser.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default="json",
        help=f"json: one {GENOME_FORMAT} document, a test record per line (default); jsonl: "
        "one test record per line and nothing else (JSON Lines, for DuckDB, pandas, jq), each "
        "with the run's id as run_id",
    )
    parser.add_argument(
        "--indent",
        type=int,
        metavar="N",
        help="json only: indent nested values by N spaces, for people (slower; the run is "
        "held in memory)",
    )
    parser.add_argument(
        "--with-previews",
        action="store_true",
        help="keep the previews a run recorded under --genome-preview (warning messages, "
        "small values); by default an export holds digests only",
    )
    _add_quiet(parser)


def _run_export(args: argparse.Namespace) -> int:
    to_stdout = args.output in (None, "-")
    check_output(args.output)
    if args.indent is not None and (args.format != "json" or args.indent < 0):
        raise CliError(
            "--indent N needs N >= 0 and --format json (JSON Lines hold a record per line); "
            "drop --indent or export as json"
        )
    options = ExportOptions(args.format, args.indent, args.with_previews)
    with progress_on_stderr(args.quiet) as progress, open_store(args) as reader:
        run_id = resolve_run(reader, args.run)
        document = export_run(reader, run_id, options, None if to_stdout else args.output, progress)
    if document is not None:
        sys.stdout.buffer.write(document.getbuffer())
        sys.stdout.buffer.flush()
    return EXIT_OK


# -- diff and affected --------------------------------------------------------------------

#: What ``--fail-on`` takes: three of the statuses (see found_for), then the other findings.
FAIL_ON = (
    STATUS_CHANGED,
    STATUS_UNVERIFIED,
    STATUS_RESTRUCTURED,
    FAIL_ON_SEEN,
    "drift",
    "gaps",
    "never",
)


def _configure_sides(parser: argparse.ArgumentParser) -> None:
    sides = (
        "a git revision (recorded in a disposable worktree), WORKTREE (the checkout as it is), "
        "a run id or prefix in the store, or a diffgenome-genome JSON file"
    )
    parser.add_argument("base", metavar="BASE", help=f"the old side: {sides}")
    parser.add_argument("head", metavar="HEAD", help="the new side, the same kinds as BASE")
    parser.add_argument("--repo", metavar="DIR", help="the git repository (default: here)")
    parser.add_argument(
        "--python",
        metavar="PY",
        default=sys.executable,
        help="interpreter with the project's dependencies that records the tests "
        "(default: this one); diffgenome need not be installed there",
    )
    parser.add_argument(
        "--rerecord",
        action="store_true",
        help="record revisions again even when the store has a recording to reuse",
    )
    parser.add_argument(
        "--json", metavar="FILE", help="write the result as JSON to FILE ('-': standard output)"
    )
    _add_quiet(parser)
    parser.set_defaults(pytest_args=[])
    parser.epilog = (
        "Arguments after -- go to pytest on both sides (the test selection), e.g. "
        "`-- -k pricing tests/unit`; paths are relative to the folder diffgenome runs in."
    )


def _configure_diff(parser: argparse.ArgumentParser) -> None:
    _configure_sides(parser)
    parser.add_argument(
        "--markdown", metavar="FILE", help="write a Markdown report to FILE ('-': standard output)"
    )
    parser.add_argument(
        "--markdown-limit",
        metavar="N",
        type=int,
        default=DEFAULT_MARKDOWN_LIMIT,
        help="cut the Markdown report to at most N characters "
        f"(default {DEFAULT_MARKDOWN_LIMIT:,}; GitHub takes {GITHUB_COMMENT_LIMIT:,} in a "
        "comment): whole tests, the least important first, and a closing line says what was "
        "left out",
    )
    parser.add_argument(
        "--markdown-link",
        metavar="URL",
        help="where the whole report is (e.g. the CI run with its artifacts): the closing "
        "line of a cut Markdown report links to it",
    )
    parser.add_argument("--html", metavar="DIR", help="write an HTML report (a static site) to DIR")
    parser.add_argument(
        "--source-url",
        metavar="TEMPLATE",
        help="how to link a line of the repository's code in the Markdown and HTML reports, "
        "with {commit}, {path} and {line} filled in, e.g. "
        "https://github.com/OWNER/REPO/blob/{commit}/{path}#L{line}",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=STATUS_CHANGED,
        help="exit 1 when this is found: changed (a test changed, was added or removed, or is "
        "unverified where missing evidence could hide a change; the default), unverified "
        "(also every other unverified test), restructured (also every test whose calls a "
        "refactor moved while its behaviour stayed the same), seen (like changed, but not a "
        "test changed only inside the project with every result at the test equal), drift (a "
        "mock drifted), gaps (changed code without test evidence), never",
    )
    parser.add_argument(
        "--preview",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="record with --genome-preview, so that the terminal shows short values as text "
        "('--spam=eggs' → \"'--spam=eggs'\") where it would name them by label (value A); "
        "the default on a terminal outside CI (nothing leaves the machine: the store is "
        "local, the secret rules mask what they find); elsewhere give --preview",
    )
    parser.add_argument(
        "--with-previews",
        action="store_true",
        help="keep those previews in the --json, --markdown and --html reports too (they "
        "leave the machine; by default only the terminal shows them, unless the recordings "
        "were asked for with -- --genome-preview)",
    )
    parser.add_argument(
        "--no-confirm",
        dest="confirm",
        action="store_false",
        help="do not record the tests that differ again to tell change from noise "
        "(by default each is recorded twice more on each side, and what differs between "
        "recordings of one commit is unstable, not changed)",
    )
    parser.add_argument(
        "--selective",
        action="store_true",
        help="record at HEAD only the tests the change can reach: base's tests that reach no "
        "changed code, in files that did not change, are carried over as unchanged (counted "
        "on the first line); every test runs when anything else changed (a data or "
        "configuration file, a conftest, code the recording does not name)",
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--test",
        metavar="PATTERN",
        help="report only the tests PATTERN names, each with all its changes: a node id "
        "(tests/a.py::test_x, from the git top or from here) that test, with its parametrized "
        "cases and subtests, as pytest selects them; a glob with * or ?; else any test whose "
        "id contains it",
    )
    shown.add_argument(
        "--all",
        dest="everything",
        action="store_true",
        help="report every test, unchanged ones too, with nothing collapsed",
    )
    parser.add_argument(
        "--repeat",
        metavar="N",
        type=int,
        default=1,
        help="record each side N times and mark what differs between them as unstable",
    )


def _add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="say nothing on standard error about how far the work is (errors and warnings "
        "still go there)",
    )


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM cleans up like Ctrl-C: worktrees and temp folders never stay behind."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_diff(args: argparse.Namespace) -> int:
    request = read_request(args)
    with progress_on_stderr(request.quiet) as progress:
        with _terminate_as_interrupt():
            diff, notes = pipeline.run_diff(replace(request.options, progress=progress))
        return deliver(diff, notes, request.reports, progress)


def _configure_affected(parser: argparse.ArgumentParser) -> None:
    _configure_sides(parser)
    parser.add_argument(
        "--ids",
        action="store_true",
        help="print only the tests, one pytest node id per line as pytest takes them here "
        "(for `pytest $(diffgenome affected main HEAD --ids)`); notes go to standard error",
    )


def _run_affected(args: argparse.Namespace) -> int:
    if args.ids and args.json == "-":
        raise CliError("--ids and --json - both want standard output; give --json a FILE")
    request = read_request(args)
    with progress_on_stderr(request.quiet) as progress, _terminate_as_interrupt():
        options = replace(request.options, progress=progress)
        prepared = pipeline.prepare(options, need_head_recording=False)
    if prepared.code_changes is None:
        why = "; ".join(prepared.notes) or "the code of a side is unknown"
        raise CliError(
            f"cannot tell what changed ({why}); give BASE and HEAD as git revisions or WORKTREE"
        )
    base = prepared.base.document
    module_of = module_namer([base])
    found = affected_tests(
        base, prepared.code_changes, module_of, prepared.base_source, prepared.base_imports
    )
    if args.ids:
        # Only the ids: for `pytest $(diffgenome affected main HEAD --ids)` where this runs.
        write_output(render_ids(found, request.place.prefix), None)
        for note in prepared.notes:
            sys.stderr.write(f"{PROG}: note: {note}\n")
        return EXIT_OK
    if args.json is not None:
        text = json.dumps([item.as_json() for item in found], indent=2, ensure_ascii=False)
        write_output(text + "\n", args.json)
    if args.json != "-":
        total = sum(1 for test in base.get("tests") or () if test.get("id") != IMPORT_TEST_ID)
        text = render_affected(found, total, args.base, args.head)
        text += "".join(f"note: {note}\n" for note in prepared.notes)
        write_output(text, None)
    return EXIT_OK


def _configure_key(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("new",), help="new: write a new key file")
    parser.add_argument("file", metavar="FILE", help="the key file to write (never overwritten)")
    parser.epilog = (
        "A digest key is what makes value digests comparable: every store makes its own, and "
        "runs recorded into different stores compare only when they share one. Give the same "
        "FILE to every shard (pytest --genome --genome-key-file=FILE; in CI, keep its bytes as "
        "a secret), see docs/ci.md."
    )


def _run_key(args: argparse.Namespace) -> int:
    if args.store is not None:
        raise CliError("key new writes FILE and reads no store; drop --store")
    new_key_file(args.file)
    write_output(
        f"wrote a new digest key to {args.file} ({KEY_BYTES} random bytes, readable by you "
        f"only); record with it: pytest --genome --genome-key-file={args.file}\n",
        None,
    )
    return EXIT_OK


def _configure_combine(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="STORE",
        help="a shard's store (its newest run is taken) or a file written by `diffgenome export`",
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="STORE", help="store to add the combined run to"
    )
    parser.add_argument(
        "--commit", metavar="REV", help="take each store's newest run of this commit (sha prefix)"
    )
    parser.add_argument(
        "--expect",
        metavar="N",
        type=int,
        help="the suite was split into N shards (needed when the shards carry no "
        "--genome-shard label; checked against the labels otherwise)",
    )
    parser.epilog = (
        "Exit status 0: the combined run is complete; 1: it was written but is incomplete "
        "(a shard is missing or incomplete); 2: nothing was written."
    )


def _run_combine(args: argparse.Namespace) -> int:
    if args.store is not None:
        raise CliError("combine writes to -o STORE and reads the stores it is given; drop --store")
    commit = _git_commit(args.commit) if args.commit else None
    result = combine(args.inputs, args.output, commit=commit or args.commit, expect=args.expect)
    state = "complete" if result.complete else "incomplete"
    commit_text = result.commit[:12] if result.commit else "no commit"
    write_output(
        f"combined {result.shards} of {result.expected} shards of {commit_text} into run "
        f"{result.run_id} in {result.store}: {state}, {result.tests} tests\n",
        None,
    )
    for reason in result.reasons:
        sys.stderr.write(f"{PROG}: incomplete: {reason}\n")
    for note in result.notes:
        sys.stderr.write(f"{PROG}: note: {note}\n")
    return EXIT_OK if result.complete else EXIT_FOUND


def _configure_doctor(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--python",
        metavar="PY",
        help="also say what `diffgenome diff --python PY` records with in that interpreter",
    )


def _run_doctor(args: argparse.Namespace) -> int:
    """Exit 0 when recording would run with the compiled core and the plugin is found; 1
    when something would make it slow or not happen (the lines say what)."""
    from diffgenome.analysis.doctor import checkup

    result = checkup(store_path(args), args.python)
    write_output("".join(f"{line}\n" for line in result.lines), None)
    return EXIT_OK if result.ok else EXIT_FOUND


COMMANDS: list[Command] = [
    Command("runs", "list the recorded runs, newest first", _configure_runs, _run_runs),
    Command("show", "show a run's tests, or one test's genome", _configure_show, _run_show),
    Command(
        "prune",
        "remove old runs from the store (keep the last N, some commits, or recent runs)",
        _configure_prune,
        _run_prune,
    ),
    Command("export", f"write a run as a {GENOME_FORMAT} document", _configure_export, _run_export),
    Command("schema", "print the JSON Schema of a document format", _configure_schema, _run_schema),
    Command(
        "diff", "record two revisions and diff their tests' behaviour", _configure_diff, _run_diff
    ),
    Command(
        "combine",
        "merge the runs of a sharded suite (one per shard) into one run",
        _configure_combine,
        _run_combine,
    ),
    Command(
        "key",
        "make the digest key that shards (or stores) share: key new FILE",
        _configure_key,
        _run_key,
    ),
    Command(
        "affected",
        "list the tests whose BASE recording reaches code changed in HEAD",
        _configure_affected,
        _run_affected,
    ),
    Command(
        "doctor",
        "say which core records, with which interpreter, store and key, and whether pytest "
        "loads the plugin",
        _configure_doctor,
        _run_doctor,
    ),
]


def build_parser(commands: list[Command] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG, description="Record what every test really does, and diff it between commits."
    )
    parser.add_argument(
        "--version", action="version", version=f"{identity.DISTRIBUTION} {identity.version()}"
    )
    common = _Parser(add_help=False)
    common.add_argument(
        "--store",
        metavar="PATH",
        help=f"store folder (default: the nearest {DEFAULT_DIR}/ from here up to the top of "
        "the git repository, else at its top)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS if commands is None else commands:
        sub = subparsers.add_parser(
            command.name, help=command.help, description=command.help, parents=[common]
        )
        command.configure(sub)
        sub.set_defaults(handler=command.run)
    return parser


#: The arguments that name a file or folder, by ``argparse`` destination: each is read from
#: where the user is, as git and pytest read theirs (``diff`` records in a disposable
#: worktree, and the target interpreter's probe runs there).
PATH_ARGUMENTS = ("store", "repo", "json", "markdown", "html", "output", "inputs", "file")


def _from_here(path: str) -> str:
    """``path`` made absolute from the current folder, symlinks left as they are (a
    virtual environment's ``python`` is a symlink whose target is another environment's).
    ``-`` (standard input or output) stays ``-``."""
    return path if path == "-" else os.path.abspath(path)


def absolute_paths(args: argparse.Namespace) -> None:
    """Every path the user typed, absolute from where they are (see :data:`PATH_ARGUMENTS`);
    ``--python`` only when it names a path (``--python python3.12`` is looked up on PATH)."""
    for name in PATH_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str):
            setattr(args, name, _from_here(value))
        elif isinstance(value, list):
            setattr(args, name, [_from_here(v) if isinstance(v, str) else v for v in value])
    python = getattr(args, "python", None)
    if isinstance(python, str) and (os.sep in python or (os.altsep or os.sep) in python):
        args.python = _from_here(python)


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG}: error: {' '.join(message.split())}\n")
    sys.stderr.flush()
    return EXIT_USAGE


# Loading two stored runs makes millions of small objects that live until the process
# ends; with the default thresholds the collector traverses all of them again and again
# (google-auth, two runs of 2,045 tests: 4.0 s for the diff, 1.9 s with these). Cycles are
# still collected, only less often.
GC_THRESHOLDS = (100_000, 50, 1000)


def main(argv: list[str] | None = None) -> int:
    gc.set_threshold(*GC_THRESHOLDS)
    # Recorded text may hold lone surrogates (an undecodable byte of a file name): shown as
    # their escapes, never a UnicodeEncodeError half-way through a report.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        finding = identity.check()  # another project's `diffgenome` package in the way?
        if finding is not None and finding.fatal:
            raise CliError(finding.text)
        if finding is not None:
            sys.stderr.write(f"{PROG}: {finding.text}\n")
        # Everything after the first ``--`` is pytest's (``diff``, ``affected``): argparse
        # would mix it up with the positionals.
        pytest_args: list[str] | None = None
        if "--" in argv:
            cut = argv.index("--")
            argv, pytest_args = argv[:cut], argv[cut + 1 :]
        args = build_parser().parse_args(argv)
        if pytest_args is not None:
            if not hasattr(args, "pytest_args"):
                raise CliError(
                    f"`{PROG} {args.command}` takes no arguments after --; "
                    f"see `{PROG} {args.command} --help`"
                )
            args.pytest_args = pytest_args
        absolute_paths(args)
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except UserError as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        # The reader of our output (``| head``) went away; that is not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt as exc:
        # One line, as pytest ends with its own: what was going on, and what is left of it.
        message = exc.message if isinstance(exc, Interrupted) else "interrupted"
        with contextlib.suppress(OSError):
            sys.stderr.write(f"{PROG}: {message}\n")
            sys.stderr.flush()
        return 130


if __name__ == "__main__":
    sys.exit(main())
