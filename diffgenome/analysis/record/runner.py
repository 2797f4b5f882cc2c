"""The sides of a diff: each resolved to a genome document, recorded where it must be.

A side is a git revision (recorded in a disposable worktree), ``WORKTREE`` (the checkout as
it is, recorded from a disposable copy at the same path), a run in the store, or a genome
JSON file. Every recording runs in one environment, byte for byte
(:meth:`Runner._recording_env`, docs/diffing.md "One environment"). A revision already
recorded with the same recording key (commit, pytest arguments, configuration) by the same
interpreter version, in the same environment, is reused. Confirming a diff records its
differing tests again here too.

The recording runs ``python -m pytest --genome`` in the target interpreter with the recorded
tree's source root first on ``PYTHONPATH`` and a copy of the recording side after it, so
that neither an editable install of the checkout nor a missing diffgenome can change what
runs. Whatever the user can fix comes out as a one-line :class:`DiffError`; worktrees, temp
folders and child processes are removed on every way out, Ctrl-C included.

What the sides are compared by, and what is done with them, is the pipeline's
(:mod:`diffgenome.analysis.pipeline`): nothing here knows the differ or the reports.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import hashlib
import json
import os
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from diffgenome.analysis.models import genome_problem
from diffgenome.analysis.progress import Progress
from diffgenome.analysis.record.core import CoreSupply
from diffgenome.analysis.record.core import apply as apply_core
from diffgenome.analysis.record.core import provide as provide_core
from diffgenome.analysis.record.git import WORKTREE, Repository, RevisionError
from diffgenome.analysis.record.interpreter import (
    PLUGIN_MODULE,
    Target,
    environment,
    probe,
    source_root_of,
)
from diffgenome.analysis.record.process import (
    DiffError,
    interrupt_children,
    run_child,
    sigint_ignored,
)
from diffgenome.analysis.record.pytest_output import PytestProgress, pytest_error
from diffgenome.analysis.record.reuse import reusable_run
from diffgenome.analysis.record.worktree import Workspace
from diffgenome.analysis.store import RunSummary, StoreHandle, UnknownRunError, stored_phases
from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.formats import (
    GENOME_FORMAT,
    FormatError,
    check_genome_format,
)
from diffgenome.protocol.retention import (
    cap_notice,
    compact,
    delete_runs,
    hold_runs,
    keep_runs,
    release_holds,
    runs_over_cap,
    said_removals,
)
from diffgenome.protocol.runs import (
    ENVIRONMENT_ENV,
    HOLDER_ENV,
    ORIGIN_CONFIRMATION,
    RUN_ID_ENV,
    new_run_id,
)
from diffgenome.protocol.selection import ORIGIN_ENV
from diffgenome.protocol.store import OpenedStore, one_line, open_store
from diffgenome.protocol.storekey import KEY_FILE, key_fingerprint
from diffgenome.protocol.vocab import IMPORT_TEST_ID

# The project's pytest must not leave a cache in the user's checkout when WORKTREE is
# recorded in place (a repository without a commit; bytecode is kept out with
# PYTHONDONTWRITEBYTECODE).
FIXED_PYTEST_ARGS = ("-p", "no:cacheprovider")
#: The folder, under the diff's temp folder, that each side is checked out in (in turn).
SIDE_TREE = "tree"
#: Recordings of each side's differing tests that confirmation compares with each other.
CONFIRMATIONS = 2
# pytest's exit codes that mean "the tests could not be run as asked".
_PYTEST_FAILED_TO_RUN = {2: "was interrupted", 3: "hit an internal error", 4: "usage error"}
_NO_TESTS = 5


@dataclass(frozen=True)
class Options:
    """What a ``diff`` or ``affected`` asks for: the sides, where to record them and how."""

    base: str
    head: str
    #: Where the store is, decided once by the command (``--store``, else found from
    #: ``--repo`` or the current folder): recorded into, read from, reused from.
    store: str
    repo: str | None = None
    python: str = sys.executable
    pytest_args: tuple[str, ...] = ()
    repeat: int = 1
    rerecord: bool = False
    #: Where the steps (recording, loading, diffing) and how far they are go; silent unless
    #: the CLI gives one that renders.
    progress: Progress = field(default_factory=Progress)
    confirm: bool = True


@dataclass
class Side:
    """One resolved side: its document, and where its code can be read (a commit, WORKTREE,
    or None when the recording names no commit that this repository has)."""

    spec: str
    kind: str  # "revision", "worktree", "run" or "file"
    document: dict[str, Any]
    code: str | None
    repeats: list[dict[str, Any]] = field(default_factory=list)
    reused: bool = False
    sha: str | None = None  # the commit a revision side was recorded from
    # While a diff prepares its sides, a stored run's document is only its header until the
    # diff knows which genomes it needs (Runner.load): the run and its progress subject.
    deferred: tuple[str, str] | None = None


class Runner:
    """The sides of one ``diff`` or ``affected`` invocation: :meth:`sides` resolves and
    records them, :meth:`load` reads what was left unread, :meth:`confirm` records the tests
    that differ again."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.notes: list[str] = []
        self.repo: Repository | None = None
        self.store = os.path.abspath(options.store)
        #: The one reader of the store for the whole diff (:meth:`close` closes it).
        self.handle = StoreHandle(self.store)
        self._target: Target | None = None
        self._core: CoreSupply | None = None  # what the probe's workspace got (record/core.py)
        self._recorded: dict[tuple[str, str], Side] = {}
        self._defer = False
        self._key_fingerprint: str | None = None
        self.progress = options.progress
        #: This diff, as the holder of the runs it uses (``protocol.retention.hold_runs``): no
        #: recording removes them while it runs, and its recordings leave the store's cap to
        #: it (:meth:`finish`).
        self.holder = new_run_id()
        self._writer: OpenedStore | None = None
        self._writer_lock = threading.Lock()
        #: The runs the sides are (recorded, reused or named), which the cap keeps.
        self.used: set[str] = set()
        #: Every recording this diff started, by run id: what it records (for Ctrl-C's word).
        self.started: dict[str, str] = {}
        self._confirmations: set[str] = set()
        #: The files git ignores that every disposable tree gets from the checkout (None:
        #: not looked for yet), and the fingerprint of their contents.
        self._ignored: list[str] | None = None
        self._ignored_print = ""

    def close(self) -> None:
        """Close the store's reader and let go of the runs this diff held; the sides'
        documents stay as read."""
        self.handle.close()
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(sqlite3.Error):
                release_holds(writer.conn, self.holder)
            writer.conn.close()

    def finish(self) -> None:
        """Apply the store's cap once, at the end of a diff that recorded into the store (its
        recordings leave that to it): the confirmation runs of diffs that are over go first,
        then runs beyond the cap, never a run this diff used, one another diff under way
        holds, nor the newest complete run of a commit. What goes is a note."""
        with self._writer_lock:
            writer = self._writer
            if writer is None:
                return
            conn = writer.conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    cap = keep_runs(conn)
                    removed = runs_over_cap(conn, cap, self.used | self._confirmations)
                    said = said_removals(conn, removed)
                    delete_runs(conn, removed)
                    release_holds(conn, self.holder)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                if removed:
                    with contextlib.suppress(sqlite3.Error):  # busy: the space comes back later
                        compact(conn, at_least=0.25)
            except sqlite3.Error as exc:
                self.notes.append(f"the store's cap could not be applied ({one_line(exc)})")
                return
        if said:
            self.notes.append(cap_notice(cap, said))
        self.handle.forget()

    def interruption(self) -> str:
        """The one line Ctrl-C ends this diff with, once its worktrees, temp folders and
        children are gone: which of its recordings the store keeps as incomplete."""
        said = "interrupted; the worktrees, temp folders and test processes are removed"
        incomplete: list[str] = []
        with contextlib.suppress(StoreError, sqlite3.Error):
            with self.handle.reader() as reader:
                present = {run.id: run for run in reader.runs()}
            for run_id, subject in self.started.items():
                run = present.get(run_id)
                if run is not None and not run.complete:
                    incomplete.append(f"{run_id} ({subject})")
        if incomplete:
            runs = ", ".join(incomplete)
            one = len(incomplete) == 1
            said += (
                f"; run{'' if one else 's'} {runs} {'is' if one else 'are'} stored as incomplete"
            )
        elif self.started:
            said += "; every recording it made is complete"
        return said

    def _hold(self, run_id: str, *, used: bool = True) -> None:
        """This diff uses ``run_id`` (a side when ``used``, else a confirmation): the cap of
        any recording made meanwhile keeps it."""
        if used:
            self.used.add(run_id)
        else:
            self._confirmations.add(run_id)
        with self._writer_lock:
            if self._writer is None:
                return
            try:
                hold_runs(self._writer.conn, self.holder, [run_id])
            except sqlite3.Error as exc:
                raise StoreError(
                    f"cannot write to the store {self.store}: {one_line(exc)}; check that it "
                    "is writable"
                ) from None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- both sides ---------------------------------------------------------------------

    def sides(
        self, *, need_head_recording: bool = True, skip_same: bool = False
    ) -> tuple[Side, Side]:
        """Resolve and record both sides. ``skip_same``: a stored run's genomes are left unread
        (``Side.deferred``) until the diff knows which it needs (:meth:`load`); only a diff may
        ask, which compares the tests both sides hold alike by address."""
        options = self.options
        if options.repeat < 1:
            raise DiffError(f"--repeat must be at least 1, not {options.repeat}")
        self.repo = self._find_repo()
        # Further recordings of a side (--repeat) are compared test by test with its first:
        # every genome of that first one is read then.
        self._defer = skip_same and options.repeat == 1
        workspace = Workspace(self.repo, self.store)
        try:
            base = self._side(options.base, "base", workspace, record=True)
            head = self._side(options.head, "head", workspace, record=need_head_recording)
            self._hint_uncommitted(base, head)
        finally:
            with sigint_ignored():
                workspace.close()
            self._defer = False
        return base, head

    def _hint_uncommitted(self, base: Side, head: Side) -> None:
        """One note when a side is the checked-out commit and the working tree has edits
        that no commit holds: like git, the revision leaves them out; WORKTREE has them."""
        if self.repo is None or head.kind != "revision" or base.kind == "worktree":
            return
        if head.sha is None or head.sha != self.repo.head():
            return
        edited = self.repo.uncommitted()
        if edited:
            files = f"{len(edited)} file{'' if len(edited) == 1 else 's'}"
            self.notes.append(
                f"{files} of the working tree {'has' if len(edited) == 1 else 'have'} "
                f"uncommitted changes, which {head.spec} leaves out, as git does; `diffgenome "
                f"diff {base.spec} WORKTREE` compares them too"
            )

    def load(self, side: Side, unread: frozenset[str] = frozenset()) -> None:
        """Read the document of a side whose stored run was left unread (``Side.deferred``),
        the genomes of the tests in ``unread`` left out."""
        if side.deferred is not None:
            run_id, subject = side.deferred
            side.document = self._document(run_id, subject, unread)
            side.deferred = None

    def _find_repo(self) -> Repository | None:
        where = self.options.repo or os.getcwd()
        specs = (self.options.base, self.options.head)
        needs_git = any(not self._is_file(s) for s in specs)
        try:
            return Repository.find(where)
        except RevisionError:
            if self.options.repo is not None or (needs_git and not self._store_has(specs)):
                raise
            return None

    def _store_has(self, specs: Sequence[str]) -> bool:
        try:
            with self.handle.reader() as reader:
                for spec in specs:
                    if not self._is_file(spec):
                        reader.resolve(spec)
        except StoreError:
            return False
        return True

    @staticmethod
    def _is_file(spec: str) -> bool:
        return spec != WORKTREE and os.path.isfile(spec)

    # -- sides ------------------------------------------------------------------------------

    def _side(
        self,
        spec: str,
        name: str,
        workspace: Workspace,
        *,
        record: bool,
    ) -> Side:
        repo = self.repo
        if spec == WORKTREE:
            if repo is None:
                raise DiffError("WORKTREE needs a git repository; pass --repo DIR")
            if not record:
                return Side(spec, "worktree", {}, WORKTREE)
            return self._record_worktree(name, workspace)
        sha = repo.commit_of(spec) if repo is not None else None
        if sha is not None:
            if not record:
                return Side(spec, "revision", {}, sha)
            return self._record_revision(spec, sha, name, workspace)
        if self._is_file(spec):
            return self._from_file(spec, name)
        run_side = self._from_store(spec, name)
        if run_side is not None:
            return run_side
        if repo is not None:
            raise repo.unknown_revision(spec)
        raise DiffError(
            f"{spec!r} is neither a run in the store {self.store} nor a genome JSON file; "
            "list the runs with `diffgenome runs`"
        )

    def _from_file(self, path: str, name: str) -> Side:
        with self.progress.step("loading", "loaded", f"{name} {path}") as step:
            side = self._read_file(path)
            step.result = _tests_text(side.document)
        return side

    def _read_file(self, path: str) -> Side:
        try:
            with open(path, encoding="utf-8") as handle, _decoded_for_good():
                data = json.load(handle)
        except (OSError, UnicodeDecodeError) as exc:
            raise DiffError(f"cannot read {path}: {exc}; pass a readable genome file") from None
        except ValueError as exc:
            raise DiffError(
                f"{path} is not JSON ({' '.join(str(exc).split())}); pass a {GENOME_FORMAT} file"
            ) from None
        except RecursionError:
            raise DiffError(
                f"{path} is nested too deeply to be a {GENOME_FORMAT} document; "
                "pass a file written by `diffgenome export`"
            ) from None
        if not isinstance(data, dict):
            raise DiffError(f"{path} is not a {GENOME_FORMAT} document; pass a genome file")
        try:
            check_genome_format(data.get("format"))
        except FormatError as exc:
            raise DiffError(f"{path}: {exc}") from None
        document = _validated(data, path)
        return Side(path, "file", document, self._code_of(document, path))

    def _from_store(self, spec: str, name: str) -> Side | None:
        if not os.path.exists(self.store):
            return None
        with self.handle.reader() as reader:
            try:
                run_id = reader.resolve(spec)
            except UnknownRunError:
                return None
        subject = f"{name} {spec}"
        self._hold(run_id)
        document = self._first_document(run_id, subject)
        code = self._code_of(document, f"run {run_id}")
        deferred = (run_id, subject) if self._defer else None
        return Side(spec, "run", document, code, deferred=deferred)

    def _code_of(self, document: dict[str, Any], what: str) -> str | None:
        run = document.get("run") or {}
        commit = run.get("commit")
        if not isinstance(commit, str) or not commit:
            self.notes.append(f"{what} names no commit: code changes are not analysed")
            return None
        if self.repo is None or not self.repo.has_commit(commit):
            self.notes.append(
                f"{what} was recorded at commit {commit[:12]}, which this repository does not "
                "have: code changes are not analysed"
            )
            return None
        if run.get("dirty"):
            self.notes.append(
                f"{what} was recorded with uncommitted changes on top of {commit[:12]}: "
                "code changes are not analysed"
            )
            return None
        return commit

    # -- recording --------------------------------------------------------------------------

    def _record_revision(self, spec: str, sha: str, name: str, workspace: Workspace) -> Side:
        cached = self._recorded.get(("revision", sha))
        if cached is not None:
            deferred = cached.deferred
            if deferred is not None:
                deferred = (deferred[0], side_subject(name, spec, sha))
            return Side(
                spec,
                "revision",
                cached.document,
                sha,
                cached.repeats,
                cached.reused,
                sha,
                deferred,
            )
        assert self.repo is not None
        selection = self._selection(workspace)
        reused: RunSummary | None = None
        if not self.options.rerecord:
            reused = self._reusable(sha, selection, workspace)
        tree: str | None = None
        documents: list[dict[str, Any]] = []
        first: tuple[str, str] | None = None
        subject = side_subject(name, spec, sha)
        if reused is not None:
            self.progress.note(
                f"reusing run {reused.id} of {spec} ({sha[:12]}, recorded by "
                f"{reused.origin or 'an earlier recording'})"
            )
            if reused.origin != "diff":
                # Disclosed, not guessed: its environment is not known to be this one.
                maker = reused.origin or "an earlier recording"
                self.notes.append(
                    f"{spec} is run {reused.id}, recorded by {maker} where it ran, not in the "
                    "environment this diff records in: a test that digests its environment or "
                    "its folder may differ for that alone (--rerecord records both sides here)"
                )
            first = (reused.id, subject)
            self._hold(reused.id)
            documents.append(self._first_document(reused.id, subject))
        repeat = self.options.repeat
        try:
            for _ in range(repeat - len(documents)):
                which = subject if repeat == 1 else f"{subject}, {len(documents) + 1} of {repeat}"
                if tree is None:
                    with self.progress.step("checking out", "checked out", subject):
                        # One path for every side: what the code derives from where it lies
                        # (jinja2 keys its bytecode cache by the sha1 of the template's
                        # absolute path) is then the same in base and head.
                        tree = self._checkout(workspace, sha, SIDE_TREE)
                first = self._record_into(documents, first, spec, tree, workspace, selection, which)
        finally:
            if tree is not None:
                with sigint_ignored():
                    workspace.remove_worktree(tree)
        deferred = first if self._defer else None
        side = Side(
            spec, "revision", documents[0], sha, documents[1:], reused is not None, sha, deferred
        )
        self._recorded[("revision", sha)] = side
        return side

    def _record_into(
        self,
        documents: list[dict[str, Any]],
        first: tuple[str, str] | None,
        spec: str,
        tree: str,
        workspace: Workspace,
        selection: list[str],
        which: str,
    ) -> tuple[str, str]:
        """Record one repeat of a side into ``documents``; the side's first recording (run id
        and subject), which is read as the one the diff may defer."""
        run_id = self._record(spec, tree, workspace, selection, subject=which)
        if first is None:
            documents.append(self._first_document(run_id, which))
            return run_id, which
        documents.append(self._document(run_id, which))
        return first

    def _record_worktree(self, name: str, workspace: Workspace) -> Side:
        assert self.repo is not None
        selection = self._selection(workspace)
        subject, repeat = side_subject(name, WORKTREE, None), self.options.repeat
        documents: list[dict[str, Any]] = []
        first: tuple[str, str] | None = None
        with self.progress.step("checking out", "checked out", subject):
            tree = self._worktree_copy(workspace, SIDE_TREE)
        try:
            for n in range(1, repeat + 1):
                which = subject if repeat == 1 else f"{subject}, {n} of {repeat}"
                first = self._record_into(
                    documents, first, WORKTREE, tree, workspace, selection, which
                )
        finally:
            with sigint_ignored():
                workspace.remove_worktree(tree)
        deferred = first if self._defer else None
        return Side(WORKTREE, "worktree", documents[0], WORKTREE, documents[1:], deferred=deferred)

    def _worktree_copy(self, workspace: Workspace, name: str) -> str:
        """The user's working tree, as a disposable copy at the path every side is recorded
        at: a worktree of HEAD with the edits, deletions and untracked files laid over it
        (and the ignored files every side gets). Recorded there, WORKTREE runs with the same
        ``PYTHONPATH``, folder and temp folder as a revision; the user's checkout is only
        read. A repository without a commit is recorded in place."""
        assert self.repo is not None
        head = self.repo.head()
        if head is None:
            return self.repo.toplevel
        tree = self._checkout(workspace, head, name)
        workspace.lay_over(tree, self.repo.edited())
        return tree

    def _checkout(self, workspace: Workspace, sha: str, name: str) -> str:
        """A worktree of ``sha`` with the files git ignores that the project may import
        copied from the checkout (:meth:`Repository.ignored_modules`): both sides then record
        over the same ones, and the copy is a note."""
        tree = workspace.worktree(sha, name)
        copied = workspace.add_ignored(tree, self._ignored_files())
        if copied and not any(_IGNORED_NOTE in note for note in self.notes):
            more = f" and {len(copied) - 5} more" if len(copied) > 5 else ""
            shown = ", ".join(copied[:5]) + more
            one = len(copied) == 1
            self.notes.append(
                f"{len(copied)} file{'' if one else 's'} git ignores {'was' if one else 'were'} "
                f"copied from the checkout into every side recorded here, as the project may "
                f"import {'it' if one else 'them'}: {shown}"
            )
        return tree

    def _ignored_files(self) -> list[str]:
        if self._ignored is None:
            self._ignored = self.repo.ignored_modules() if self.repo is not None else []
            digest = hashlib.sha256()
            for path in self._ignored:
                digest.update(path.encode() + b"\0")
                where = os.path.join(self.repo.toplevel if self.repo else "", path)
                with contextlib.suppress(OSError), open(where, "rb") as f:
                    digest.update(hashlib.sha256(f.read()).digest())
            self._ignored_print = digest.hexdigest()
        return self._ignored

    def _selection(self, workspace: Workspace) -> list[str]:
        """The pytest arguments: the recording key hashes them, so they must not depend on
        anything but the user's arguments (never on the temp folder)."""
        store = self._ensure_store()
        target = self._probe(workspace)
        plugin = [] if target.has_entry_point else ["-p", PLUGIN_MODULE]
        return [
            "--genome",
            f"--genome-store={store}",
            f"--genome-key-file={os.path.join(store, KEY_FILE)}",
            *plugin,
            *FIXED_PYTEST_ARGS,
            *self.options.pytest_args,
            # After the user's arguments: a pytest --genome that ends with the same seeds is
            # the same selection, so diff can reuse it.
            *_same_examples(target, self.options.pytest_args),
            *_same_draws(self.options.pytest_args),
        ]

    def _ensure_store(self) -> str:
        """Create the store (and its digest key) before anything records into it: both
        sides pass that key, so their digests compare."""
        if self._key_fingerprint is None:
            # The writer may create the store or upgrade its layout: a reader opened before
            # (a side that is a stored run) reads it anew, and is closed before the writer
            # reads the file's header (closing that descriptor would drop the reader's locks).
            self.handle.forget()
            opened = open_store(self.store)
            with self._writer_lock:
                self._writer = opened
            self._key_fingerprint = key_fingerprint(opened.key)
            self.handle.forget(writing=True)
        return self.store

    def _reusable(
        self, sha: str, selection: Sequence[str], workspace: Workspace
    ) -> RunSummary | None:
        """The stored run this diff may reuse for ``sha`` (:func:`reusable_run`): what a
        recording at the side's path would be, its environment's fingerprint too."""
        assert self._target is not None
        tree = os.path.join(workspace.root, SIDE_TREE)
        # Not checked out yet: where its modules are imported from is the commit's answer.
        repo = self.repo
        assert repo is not None
        root = source_root_of(
            repo.prefix,
            lambda path: repo.has_file(sha, path),
            lambda path: repo.has_folder(sha, path),
        )
        _env, fingerprint = self._recording_env(workspace, tree, root)
        with self.handle.reader() as reader:
            return reusable_run(
                reader,
                sha,
                selection,
                self.repo,
                self._target.version,
                self._key_fingerprint,
                fingerprint,
            )

    def _recording_env(
        self, workspace: Workspace, tree: str, root: str | None = None
    ) -> tuple[dict[str, str], str]:
        """The environment a recording in ``tree`` runs with, less its run id, and that
        environment's fingerprint: every variable, the folder it runs in and the ignored
        files copied in. A stored run is reused only where its
        fingerprint is this one (docs/diffing.md, "Reuse")."""
        cwd = self._cwd(tree)
        env = self._env(workspace, tree, root)
        # As a shell would say it: the folder the tests run in, never the user's own.
        env["PWD"] = cwd
        env.pop("OLDPWD", None)
        # Whether the recording is a diff's; its id would differ in every invocation, and
        # tests copy the environment into values.
        env[HOLDER_ENV] = "1"
        self._ignored_files()
        text = json.dumps([sorted(env.items()), cwd, self._ignored_print])
        return env, hashlib.sha256(text.encode()).hexdigest()[:24]

    def _cwd(self, tree: str) -> str:
        return os.path.join(tree, self.repo.prefix) if self.repo and self.repo.prefix else tree

    def _probe(self, workspace: Workspace) -> Target:
        """The target interpreter, probed once per diff (:func:`probe`)."""
        if self._target is None:
            env = self._env(workspace, None)
            self._target = probe(self.options.python, env, workspace.root)
            # The copy of the recording side gets a compiled core for that interpreter.
            target = self._target
            self._core = provide_core(
                workspace.recorder_path(), target.python, target.version, env, self.progress
            )
        return self._target

    def _env(
        self, workspace: Workspace, tree: str | None, root: str | None = None
    ) -> dict[str, str]:
        """The environment of a recording in ``tree`` (:func:`environment`)."""
        return environment(workspace, tree, self.repo.prefix if self.repo else "", root)

    def _record(
        self,
        spec: str,
        tree: str,
        workspace: Workspace,
        selection: list[str],
        origin: str = "diff",
        *,
        subject: str,
    ) -> str:
        """Record ``selection`` in ``tree`` as a new run; its id. ``subject`` names the
        recording in progress (recordings made side by side are steps at the same time)."""
        assert self._target is not None
        cwd = self._cwd(tree)
        if not os.path.isdir(cwd):
            raise DiffError(
                f"{spec} has no folder {self.repo.prefix if self.repo else cwd}; run diffgenome "
                "from a folder that exists in both revisions"
            )
        run_id = new_run_id()
        self.started[run_id] = subject
        self._hold(run_id, used=origin != ORIGIN_CONFIRMATION)
        if self._core is not None:  # a confirmation's workspace has a copy of its own
            apply_core(workspace.recorder_path(), self._core)
        env, fingerprint = self._recording_env(workspace, tree)
        with self.progress.step("recording", "recorded", subject) as step:
            seen = PytestProgress()

            def on_output(text: str) -> None:
                seen.feed(text)
                step.advance(done=seen.done, total=seen.total, percent=seen.percent)

            code, output = run_child(
                [self._target.python, "-m", "pytest", *selection],
                cwd=cwd,
                env={
                    **env,
                    ENVIRONMENT_ENV: fingerprint,
                    ORIGIN_ENV: origin,
                    RUN_ID_ENV: run_id,
                },
                on_output=on_output,
            )
            self._check_recorded(spec, code, output, run_id)
            count = self._test_count(run_id)
            step.result = f"{count} test{'' if count == 1 else 's'} {self._core_text(run_id)}"
        return run_id

    def _core_text(self, run_id: str) -> str:
        """Which core recorded the run, and why the pure-Python one (progress says it)."""
        with self.handle.reader() as reader:
            run = reader.run(run_id)
        if run.get("core") == "c":
            return "with the compiled core"
        if run.get("core") == "python":
            # The reason in full is the report's note (pipeline.core_notes): here its word.
            reason = str(run.get("core_reason") or "no reason recorded").split(":", 1)[0]
            return f"with the pure-Python core ({reason})"
        return "(the core is not said)"

    def _check_recorded(self, spec: str, code: int, output: str, run_id: str) -> None:
        """Nothing when pytest recorded ``run_id``; else the one-line error that says why."""
        if code in _PYTEST_FAILED_TO_RUN:
            raise DiffError(
                f"the tests of {spec} could not run (pytest {_PYTEST_FAILED_TO_RUN[code]}, exit "
                f"status {code}): {pytest_error(output)}; fix the project or the pytest arguments"
            )
        if code == _NO_TESTS:
            raise DiffError(
                f"pytest collected no tests in {spec}; check the pytest arguments after --"
            )
        if code not in (0, 1):
            raise DiffError(
                f"pytest stopped with exit status {code} in {spec}: {pytest_error(output)}; "
                "fix the project or the pytest arguments"
            )
        if run_id not in self._run_ids():
            raise DiffError(
                f"pytest ran the tests of {spec} but recorded nothing ({pytest_error(output)}); "
                "check that no -p no:diffgenome is among the pytest arguments"
            )

    def _run_ids(self) -> list[str]:
        with self.handle.reader() as reader:
            return [run.id for run in reader.runs()]

    def _test_count(self, run_id: str) -> int:
        """The tests a run holds, as the user counts them (``<import>`` is no test)."""
        with self.handle.reader() as reader:
            return sum(1 for test_id in reader.test_ids(run_id) if test_id != IMPORT_TEST_ID)

    def _document(
        self, run_id: str, subject: str | None, unread: frozenset[str] = frozenset()
    ) -> dict[str, Any]:
        """A run's document from the store, checked; a step of its own for a side (a big
        run takes seconds to load), silent for a confirmation, whose step covers it.
        ``unread``: tests whose genomes are not read (:meth:`_load_sides`)."""
        if subject is None:
            return self._load(run_id, unread)
        with self.progress.step("loading", "loaded", subject) as step:
            document = self._load(run_id, unread)
            step.result = f"run {run_id}, {_tests_text(document)}"
            alike = sum(1 for test in document.get("tests") or () if test.get("id") in unread)
            if alike:
                step.result += f" ({alike} the same genome in both runs: not read)"
        return document

    def _first_document(self, run_id: str, subject: str) -> dict[str, Any]:
        """A side's own recording: its header only while prepare() defers reading genomes
        (the side then names the run, ``Side.deferred``), else the whole document."""
        return self._header(run_id) if self._defer else self._document(run_id, subject)

    def _header(self, run_id: str) -> dict[str, Any]:
        with self.handle.reader() as reader:
            return reader.header(run_id)

    def _load(self, run_id: str, unread: frozenset[str] = frozenset()) -> dict[str, Any]:
        with self.handle.reader() as reader, _decoded_for_good():
            document = reader.document(run_id, unread)
        return _validated(document, f"run {run_id}", trusted=stored_phases)

    # -- confirmation -----------------------------------------------------------------------

    def confirm(
        self, base: Side, head: Side, test_ids: Sequence[str], base_ids: Sequence[str] = ()
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Record ``test_ids`` again, twice on each side, in new worktrees: what differs
        between those two recordings of one commit is noise, not change. Sides that cannot
        be recorded again (a run, a file) give nothing, and the note says so. ``base_ids``:
        the same tests by their ids in base, where a test was paired under a new id."""
        node_ids = self._node_ids(test_ids)
        base_node_ids = self._node_ids(base_ids) if base_ids else node_ids
        if not node_ids:
            return [], []
        workspace = Workspace(self.repo, self.store)
        try:
            common = self._selection(workspace)
            sides = (
                (base, base_ids or test_ids, base_node_ids),
                (head, test_ids, node_ids),
            )
            plan: list[tuple[str, str, list[str], str] | None] = []
            for which, (side, ids, named) in zip(("base", "head"), sides, strict=True):
                selection = [*common, *self._only(workspace, which, ids, named)]
                subject = f"{side_subject(which, side.spec, side.sha)} again"
                if side.kind == "revision" and side.sha is not None:
                    with self.progress.step("checking out", "checked out", subject):
                        name = f"confirm-{which}-{side.sha[:12]}"
                        tree = self._checkout(workspace, side.sha, name)
                elif side.kind == "worktree" and self.repo is not None:
                    with self.progress.step("checking out", "checked out", subject):
                        tree = self._worktree_copy(workspace, f"confirm-{which}-worktree")
                else:
                    self.notes.append(
                        f"{side.spec} cannot be recorded again: its differences are not confirmed"
                    )
                    plan.append(None)
                    continue
                plan.append((f"{side.spec} (confirming)", tree, selection, subject))
            out: list[list[dict[str, Any]]] = [[], []]
            for n in range(1, CONFIRMATIONS + 1):
                for index, run_id in self._record_at_once(workspace, plan, n):
                    # Loaded within the confirmation's step: no step of its own.
                    out[index].append(self._document(run_id, None))
        finally:
            with sigint_ignored():
                workspace.close()
        return out[0], out[1]

    def _record_at_once(
        self, workspace: Workspace, plan: Sequence[tuple[str, str, list[str], str] | None], n: int
    ) -> list[tuple[int, str]]:
        """One confirming recording of each planned side (the ``n``-th), the sides at the same
        time, each a step of its own while the other runs.

        Confirmation records tests that differed, and those are often slow by nature (a
        retry's back-off, a consumer thread's sleep): recording base and head side by side
        halves its wall time (google-api-core: 42 such tests, 7 s a recording) while each
        side's two recordings stay one after the other, so a clash between the sides
        (a fixed port, a shared file) happens alike in both rounds and masks nothing.
        """
        jobs = [(index, job) for index, job in enumerate(plan) if job is not None]
        if not jobs:
            return []

        def record(spec: str, tree: str, selection: list[str], subject: str) -> str:
            which = f"{subject} ({n} of {CONFIRMATIONS})"
            return self._record(spec, tree, workspace, selection, "confirmation", subject=which)

        if len(jobs) == 1:
            index, job = jobs[0]
            return [(index, record(*job))]
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = [(index, pool.submit(record, *job)) for index, job in jobs]
            try:
                return [(index, future.result()) for index, future in futures]
            except BaseException:
                # Ctrl-C, or one side failed: the other side's pytest must not run on (its
                # thread would keep the pool, and the diff, waiting until it ends).
                interrupt_children()
                raise

    def _only(
        self, workspace: Workspace, which: str, test_ids: Sequence[str], node_ids: Sequence[str]
    ) -> list[str]:
        """The arguments that narrow a confirming recording to ``test_ids``.

        ``--genome-only`` names them by recorded id, so that a path among the user's
        arguments (``-- tests``: sqlparse's 465 tests were all recorded again for 3 that
        differed) cannot widen the selection. The node ids are also given as arguments,
        which spares collecting the other files, only when the user's arguments hold no
        word that pytest could read as a path.
        """
        listed = os.path.join(workspace.temp_path(), f"confirm-{which}.txt")
        wanted = {_node_of(test_id) for test_id in test_ids if test_id != IMPORT_TEST_ID}
        with open(listed, "w", encoding="utf-8") as out:
            out.writelines(f"{test_id}\n" for test_id in sorted(wanted))
        positional = any(not arg.startswith("-") for arg in self.options.pytest_args)
        return [f"--genome-only={listed}", *([] if positional else node_ids)]

    def _node_ids(self, test_ids: Sequence[str]) -> list[str]:
        """pytest node ids (relative to where pytest runs) of recorded test ids (relative to
        the repository root); subtests confirm through their test."""
        prefix = f"{self.repo.prefix}/" if self.repo and self.repo.prefix else ""
        out: dict[str, None] = {}
        for test_id in test_ids:
            if test_id == IMPORT_TEST_ID or not test_id.startswith(prefix):
                continue
            out[_node_of(test_id[len(prefix) :])] = None
        return list(out)


_IGNORED_NOTE = "copied from the checkout into every side recorded here"


def _node_of(test_id: str) -> str:
    """The pytest node id of a recorded test id: a subtest is ``<node id> [label]``, cut at
    the first space outside brackets, because parametrize ids may hold spaces of their own
    (``test_upload[{"name": "x"}-b'']``, google-api-core)."""
    depth = 0
    for i, ch in enumerate(test_id):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0:
            return test_id[:i]
    return test_id


def _same_draws(pytest_args: Sequence[str]) -> list[str]:
    """``--genome-random-seed=0`` unless the user chose a seed: ``random`` then draws the same
    numbers in every recording of a diff (google-auth: 47 tests differed on an identical tree
    by retry jitter alone; cachetools' RRCache evicts a random key)."""
    if any(arg.startswith("--genome-random-seed") for arg in pytest_args):
        return []
    return ["--genome-random-seed=0"]


def _same_examples(target: Target, pytest_args: Sequence[str]) -> list[str]:
    """``--hypothesis-seed=0`` where hypothesis' plugin is there and the user chose nothing:
    every recording of a diff then draws the same examples, so that base and head differ only
    where the code does (attrs: 22 tests differed on an identical tree by the draw alone).
    The user's own ``--hypothesis-seed`` (or switching the plugin off) wins."""
    if not target.has_hypothesis:
        return []
    for arg in pytest_args:
        if arg.startswith("--hypothesis-seed") or arg.endswith("no:hypothesispytest"):
            return []
    return ["--hypothesis-seed=0"]


def side_subject(name: str, spec: str, sha: str | None) -> str:
    """What progress calls a side: ``base HEAD~1 (f921860f1ebf)``, ``head WORKTREE``, ``base
    latest`` -- its role first (two sides may be one revision), then what the user named."""
    if sha is None:
        return f"{name} {spec}"
    if sha.startswith(spec.lower()):
        return f"{name} ({sha[:12]})"
    return f"{name} {spec} ({sha[:12]})"


@contextlib.contextmanager
def _decoded_for_good() -> Iterator[None]:
    """While a side's genomes are decoded, no cyclic garbage collection; afterwards, all that
    was decoded is frozen out of later ones (``gc.freeze``).

    A run decodes into millions of dicts and lists without a single cycle, kept until the
    command ends: every full collection of the rest of the diff would traverse all of them
    again (sqlparse, 465 tests with the changed code run by most: 4.2 s -> 2.9 s on a busy
    machine). Reference counting still frees them. Only the analysis side, in its own short
    process, does this; the recorder never touches the user's collector."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _tests_text(document: dict[str, Any]) -> str:
    count = sum(1 for test in document.get("tests") or () if test.get("id") != IMPORT_TEST_ID)
    return f"{count} test{'s' if count != 1 else ''}"


def _validated(
    document: dict[str, Any], what: str, trusted: Callable[[object], bool] | None = None
) -> dict[str, Any]:
    problem = genome_problem(document, trusted)
    if problem is not None:
        where, msg = problem
        raise DiffError(
            f"{what} is not a valid {GENOME_FORMAT} document ({where}: {msg}); record it "
            "again with this diffgenome"
        )
    return document


__all__ = ["Options", "Runner", "Side", "side_subject"]
