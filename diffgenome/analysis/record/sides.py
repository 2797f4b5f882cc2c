"""The sides of a diff: what the user named, each resolved to a genome document, recorded
where it must be, or a stored run reused for it.

A side is a git revision (recorded in a disposable worktree), ``WORKTREE`` (the checkout as
it is, recorded from a disposable copy at the same path), a run in the store, or a genome
JSON file. A revision already recorded with the same recording key (commit, pytest
arguments, configuration) by the same interpreter version, in the same environment, is
reused (``reuse.py``). The recording itself is ``runner.py``'s, the trees ``worktree.py``'s,
the documents ``documents.py``'s.

What the sides are compared by, and what is done with them, is the pipeline's
(:mod:`diffgenome.analysis.pipeline`): nothing here knows the differ or the reports.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from diffgenome.analysis.progress import Progress
from diffgenome.analysis.record import documents
from diffgenome.analysis.record.git import WORKTREE, Repository, RevisionError
from diffgenome.analysis.record.interpreter import source_root_of
from diffgenome.analysis.record.process import DiffError, sigint_ignored
from diffgenome.analysis.record.reuse import ANOTHER_ENVIRONMENT, ORIGIN_DIFF, reusable_run
from diffgenome.analysis.record.runner import Recordings
from diffgenome.analysis.record.worktree import SIDE_TREE, Checkouts, Workspace
from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.runs import ORIGIN_CONFIRMATION
from diffgenome.store.holds import StoreUse
from diffgenome.store.reader import RunSummary, StoreHandle, UnknownRunError

# Recordings a diff made for itself: passing one over needs no word to the user.
_DIFF_ORIGINS = (ORIGIN_DIFF, ORIGIN_CONFIRMATION)


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
    #: ``--selective``: head records only the tests the change can reach, when base is a
    #: whole stored recording (analysis/record/selective.py).
    selective: bool = False


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
    # diff knows which genomes it needs (Sides.load): the run and its progress subject.
    deferred: tuple[str, str] | None = None
    #: Base's tests this side did not run (``--selective``), their base recording carried
    #: over; empty: it ran every test.
    carried: frozenset[str] = frozenset()


def find_repo(options: Options, handle: StoreHandle) -> Repository | None:
    """The git repository the sides are read in: ``--repo``, else the one the current folder
    is in; None where there is none and no side needs one (genome files, stored runs)."""
    if options.repeat < 1:
        raise DiffError(f"--repeat must be at least 1, not {options.repeat}")
    where = options.repo or os.getcwd()
    specs = (options.base, options.head)
    needs_git = any(not _is_file(s) for s in specs)
    try:
        return Repository.find(where)
    except RevisionError:
        if options.repo is not None or (needs_git and not _store_has(handle, specs)):
            raise
        return None


def _store_has(handle: StoreHandle, specs: Sequence[str]) -> bool:
    try:
        with handle.reader() as reader:
            for spec in specs:
                if not _is_file(spec):
                    reader.resolve(spec)
    except StoreError:
        return False
    return True


def _is_file(spec: str) -> bool:
    return spec != WORKTREE and os.path.isfile(spec)


def side_subject(name: str, spec: str, sha: str | None) -> str:
    """What progress calls a side: ``base HEAD~1 (f921860f1ebf)``, ``head WORKTREE``, ``base
    latest`` -- its role first (two sides may be one revision), then what the user named."""
    if sha is None:
        return f"{name} {spec}"
    if sha.startswith(spec.lower()):
        return f"{name} ({sha[:12]})"
    return f"{name} {spec} ({sha[:12]})"


class Sides:
    """The two sides of one ``diff`` or ``affected``: :meth:`resolve` resolves and records
    them, :meth:`load` reads what was left unread."""

    def __init__(self, options: Options, store: StoreUse, notes: list[str]) -> None:
        """Find the repository the sides are read in (:func:`find_repo`); the notes on what
        is not analysed go to ``notes``."""
        self.options = options
        self.store = store
        self.notes = notes
        self.progress = options.progress
        self.repo = find_repo(options, store.handle)
        self.checkouts = Checkouts(self.repo, notes)
        self.recordings = Recordings(
            options.python, options.pytest_args, self.repo, store, self.checkouts, self.progress
        )
        self._recorded: dict[tuple[str, str], Side] = {}
        self._defer = False
        self._carry: Callable[[str], Sequence[str]] | None = None

    def resolve(
        self,
        *,
        need_head_recording: bool = True,
        skip_same: bool = False,
        carry: Callable[[Side, str], Sequence[str]] | None = None,
    ) -> tuple[Side, Side]:
        """Resolve and record both sides. ``skip_same``: a stored run's genomes are left unread
        (``Side.deferred``) until the diff knows which it needs (:meth:`load`); only a diff may
        ask, which compares the tests both sides hold alike by address. ``carry(base,
        head_code)``: base's tests head need not run (``--selective``), asked only where head
        is recorded now and no stored run of it can be reused."""
        options = self.options
        # Further recordings of a side (--repeat) are compared test by test with its first:
        # every genome of that first one is read then; a selective diff reads base's to know
        # what the change reaches.
        self._defer = skip_same and options.repeat == 1 and carry is None
        workspace = Workspace(self.repo, self.store.path)
        try:
            base = self._side(options.base, "base", workspace, record=True)
            self._carry = (lambda head_code: carry(base, head_code)) if carry else None
            head = self._side(options.head, "head", workspace, record=need_head_recording)
            self._hint_uncommitted(base, head)
        finally:
            with sigint_ignored():
                workspace.close()
            self._defer = False
            self._carry = None
        return base, head

    def load(self, side: Side, unread: frozenset[str] = frozenset()) -> None:
        """Read the document of a side whose stored run was left unread (``Side.deferred``),
        the genomes of the tests in ``unread`` left out."""
        if side.deferred is not None:
            run_id, subject = side.deferred
            side.document = documents.stored(
                self.store.handle, run_id, self.progress, subject, unread
            )
            side.deferred = None

    def _hint_uncommitted(self, base: Side, head: Side) -> None:
        """One note when a side is the checked-out commit and the working tree has edits
        that no commit holds: like git, the revision leaves them out; WORKTREE has them."""
        if self.repo is None or head.kind != "revision" or base.kind == "worktree":
            return
        if head.sha is None or head.sha != self.repo.head():
            return
        edited, untracked = self.repo.uncommitted()
        if not edited and not untracked:
            return
        extra = f"{len(untracked)} untracked file{'' if len(untracked) == 1 else 's'}"
        if edited:
            files = f"{len(edited)} file{'' if len(edited) == 1 else 's'}"
            what = f"{files} of the working tree {'has' if len(edited) == 1 else 'have'} "
            what += "uncommitted changes" + (
                f" and there {'is' if len(untracked) == 1 else 'are'} {extra}" if untracked else ""
            )
        else:
            what = f"the working tree has {extra}"
        self.notes.append(
            f"{what}, which {head.spec} leaves out, as git does; `diffgenome diff {base.spec} "
            "WORKTREE` compares them too"
        )

    def _side(self, spec: str, name: str, workspace: Workspace, *, record: bool) -> Side:
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
        if _is_file(spec):
            document = documents.from_file(spec, self.progress, f"{name} {spec}")
            return Side(spec, "file", document, self._code_of(document, spec))
        run_side = self._from_store(spec, name)
        if run_side is not None:
            return run_side
        if repo is not None:
            raise repo.unknown_revision(spec)
        raise DiffError(
            f"{spec!r} is neither a run in the store {self.store.path} nor a genome JSON "
            "file; list the runs with `diffgenome runs`"
        )

    def _from_store(self, spec: str, name: str) -> Side | None:
        if not os.path.exists(self.store.path):
            return None
        with self.store.handle.reader() as reader:
            try:
                run_id = reader.resolve(spec)
            except UnknownRunError:
                return None
        subject = f"{name} {spec}"
        self.store.hold(run_id)
        document = self._first_document(run_id, subject)
        code = self._code_of(document, f"run {run_id}")
        deferred = (run_id, subject) if self._defer else None
        return Side(spec, "run", document, code, deferred=deferred)

    def _first_document(self, run_id: str, subject: str) -> dict[str, Any]:
        """A side's own recording: its header only while the diff defers reading genomes
        (the side then names the run, ``Side.deferred``), else the whole document."""
        if self._defer:
            return documents.header(self.store.handle, run_id)
        return documents.stored(self.store.handle, run_id, self.progress, subject)

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
        selection = self.recordings.selection(workspace)
        reused: RunSummary | None = None
        if not self.options.rerecord:
            reused = self._reusable(sha, selection, workspace)
        tree: str | None = None
        docs: list[dict[str, Any]] = []
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
            self.store.hold(reused.id)
            docs.append(self._first_document(reused.id, subject))
        repeat = self.options.repeat
        carried_file = self._carry_file(sha, workspace) if not docs else None
        if carried_file is not None:
            selection = [*selection, f"--genome-carry={carried_file}"]
        try:
            for _ in range(repeat - len(docs)):
                which = subject if repeat == 1 else f"{subject}, {len(docs) + 1} of {repeat}"
                if tree is None:
                    with self.progress.step("checking out", "checked out", subject):
                        # One path for every side: what the code derives from where it lies
                        # (jinja2 keys its bytecode cache by the sha1 of the template's
                        # absolute path) is then the same in base and head.
                        tree = self.checkouts.checkout(workspace, sha, SIDE_TREE)
                first = self._record_into(docs, first, spec, tree, workspace, selection, which)
        finally:
            if tree is not None:
                with sigint_ignored():
                    workspace.remove_worktree(tree)
        deferred = first if self._defer else None
        side = Side(spec, "revision", docs[0], sha, docs[1:], reused is not None, sha, deferred)
        if carried_file is not None:
            side.carried = read_carried(f"{carried_file}.carried")
        else:
            self._recorded[("revision", sha)] = side  # a whole recording: another side's too
        return side

    def _carry_file(self, code: str, workspace: Workspace) -> str | None:
        """The file of ids head need not run (``--genome-carry``), when this diff is
        selective and there are any; None: every test runs."""
        if self._carry is None:
            return None
        carried = self._carry(code)
        if not carried:
            return None
        path = os.path.join(workspace.temp_path(), "carry.txt")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as out:
            out.writelines(f"{test_id}\n" for test_id in carried)
        return path

    def _reusable(
        self, sha: str, selection: Sequence[str], workspace: Workspace
    ) -> RunSummary | None:
        """The stored run this diff may reuse for ``sha`` (:func:`reusable_run`): what a
        recording at the side's path would be, its environment's fingerprint too."""
        tree = os.path.join(workspace.root, SIDE_TREE)
        # Not checked out yet: where its modules are imported from is the commit's answer.
        repo = self.repo
        assert repo is not None
        root = source_root_of(
            repo.prefix,
            lambda path: repo.has_file(sha, path),
            lambda path: repo.has_folder(sha, path),
        )
        _env, fingerprint = self.recordings.environment(workspace, tree, root)
        refused: list[tuple[RunSummary, str]] = []
        with self.store.handle.reader() as reader:
            found = reusable_run(
                reader,
                sha,
                selection,
                repo,
                self.recordings.target.version,
                self.store.key_fingerprint,
                fingerprint,
                refused=refused,
            )
        # A run the user made for this commit and the diff passed over: say why, once (the
        # newest), so that the next `pytest --genome` can be one the diff reuses.
        theirs = [(run, why) for run, why in refused if run.origin not in _DIFF_ORIGINS]
        # A diff's own run passed over for its environment alone: the user changed a variable
        # between two diffs, or started them in two ways, and the base is recorded again.
        elsewhere = [(run, why) for run, why in refused if why == ANOTHER_ENVIRONMENT]
        if found is None and (theirs or elsewhere):
            run, why = (theirs or elsewhere)[0]
            self.notes.append(
                f"run {run.id} of {sha[:12]} (recorded by {run.origin or 'an earlier recording'}) "
                f'was not reused: {why}; docs/diffing.md "Reuse" says what a reusable '
                "recording needs"
            )
        return found

    def _record_into(
        self,
        docs: list[dict[str, Any]],
        first: tuple[str, str] | None,
        spec: str,
        tree: str,
        workspace: Workspace,
        selection: list[str],
        which: str,
    ) -> tuple[str, str]:
        """Record one repeat of a side into ``docs``; the side's first recording (run id and
        subject), which is read as the one the diff may defer."""
        run_id = self.recordings.record(spec, tree, workspace, selection, subject=which)
        if first is None:
            docs.append(self._first_document(run_id, which))
            return run_id, which
        docs.append(documents.stored(self.store.handle, run_id, self.progress, which))
        return first

    def _record_worktree(self, name: str, workspace: Workspace) -> Side:
        assert self.repo is not None
        selection = self.recordings.selection(workspace)
        subject, repeat = side_subject(name, WORKTREE, None), self.options.repeat
        docs: list[dict[str, Any]] = []
        first: tuple[str, str] | None = None
        with self.progress.step("checking out", "checked out", subject):
            tree = self.checkouts.worktree_copy(workspace, SIDE_TREE)
        carried_file = self._carry_file(WORKTREE, workspace)
        if carried_file is not None:
            selection = [*selection, f"--genome-carry={carried_file}"]
        try:
            for n in range(1, repeat + 1):
                which = subject if repeat == 1 else f"{subject}, {n} of {repeat}"
                first = self._record_into(docs, first, WORKTREE, tree, workspace, selection, which)
        finally:
            with sigint_ignored():
                workspace.remove_worktree(tree)
        deferred = first if self._defer else None
        side = Side(WORKTREE, "worktree", docs[0], WORKTREE, docs[1:], deferred=deferred)
        if carried_file is not None:
            side.carried = read_carried(f"{carried_file}.carried")
        return side


def read_carried(path: str) -> frozenset[str]:
    """The ids a recording took out (``--genome-carry``'s ``FILE.carried``); none when it
    wrote nothing (a session that never collected)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as listed:
            return frozenset(line.rstrip("\n") for line in listed if line.strip())
    except OSError:
        return frozenset()


__all__ = ["Options", "Side", "Sides", "find_repo", "read_carried", "side_subject"]
