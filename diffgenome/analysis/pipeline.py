"""``diffgenome diff`` and ``affected`` end to end: resolve both sides, record what is not in
the store yet, read the code changes from git, read the genomes the diff needs, diff, and
confirm what differs by recording it again.

This is the one module that knows the whole flow, and it goes down the floors once: the
store as this diff uses it (``record/holds.py``), the sides (``record/sides.py``: resolved,
reused or recorded through ``record/runner.py`` in trees of ``record/worktree.py``), the
code changes (``record/git.py``, named by ``diff/codechanges.py``), the diff
(:mod:`diffgenome.analysis.diff`, which knows no git, child process or store), the
confirmation (``record/confirm.py``) and the diff again; the store's cap at the end. What
is shown is the command's, through :mod:`diffgenome.analysis.report`. Every step says how
far it is to the :class:`~diffgenome.analysis.progress.Progress` in :class:`Options`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from diffgenome.analysis.diff.codechanges import (
    CodeChangeInput,
    code_changes_from_sources,
    same_program,
)
from diffgenome.analysis.diff.document import diff_documents, environments_differ
from diffgenome.analysis.diff.importers import ImportGraph, import_graph
from diffgenome.analysis.diff.instability import (
    NOT_REPRODUCED,
    NOT_REPRODUCED_ONE_ENVIRONMENT,
    NOT_REPRODUCED_ONE_SELECTION,
    first_round_settles,
    unstable_where,
)
from diffgenome.analysis.diff.modules import module_namer
from diffgenome.analysis.diff.selective import plan
from diffgenome.analysis.models import DiffDocument, DiffSide
from diffgenome.analysis.record.confirm import CONFIRMATIONS, Settled, confirm
from diffgenome.analysis.record.git import Repository
from diffgenome.analysis.record.process import Interrupted, sigint_ignored
from diffgenome.analysis.record.sides import Options, Side, Sides
from diffgenome.protocol.formats import check_comparable, naming_of, values_of
from diffgenome.protocol.namecache import NameCache
from diffgenome.protocol.selection import all_cases
from diffgenome.protocol.vocab import (
    IMPORT_TEST_ID,
    STATUS_ADDED,
    STATUS_CHANGED,
    STATUS_REMOVED,
    STATUS_UNVERIFIED,
)
from diffgenome.store.holds import StoreUse


@dataclass
class Prepared:
    """Both sides, ready for the differ: their documents, the code changes between them
    (None: not analysed, and a note says why), and the notes on what was not analysed."""

    base: Side
    head: Side
    code_changes: CodeChangeInput | None
    notes: list[str]
    #: Base's source of a file (path from the repository's top); None where base's code
    #: cannot be read.
    base_source: Callable[[str], str | None] | None = None
    #: The imports of base's Python files (None where base's code cannot be read).
    base_imports: Callable[[], ImportGraph] | None = None


def prepare(options: Options, *, need_head_recording: bool = True) -> Prepared:
    """Resolve and record both sides; any user or input error is a :class:`UserError`."""
    notes: list[str] = []
    with StoreUse(options.store) as store, _said_when_interrupted(store):
        sides = Sides(options, store, notes)
        prepared = _prepare(sides, notes, need_head_recording=need_head_recording)
        store.finish(notes)  # the store's cap, once the sides are read (its note joins)
        return prepared


def run_diff(options: Options) -> tuple[DiffDocument, list[str]]:
    """The diff of two sides, and notes on what was not analysed.

    With ``options.confirm`` (the default), the tests that differ are recorded again, twice
    on each side, and whatever differs between recordings of one commit is masked as
    unstable; the cost grows with the number of differing tests, not with the suite.
    """
    notes: list[str] = []
    with StoreUse(options.store) as store, _said_when_interrupted(store):
        sides = Sides(options, store, notes)
        prepared = _prepare(sides, notes, skip_same=True)
        diff = _diff(prepared, sides)
        store.finish(notes)  # the store's cap, once everything is read (its note joins)
        return diff, [*notes, *core_notes(diff)]


@contextlib.contextmanager
def _said_when_interrupted(store: StoreUse) -> Iterator[None]:
    """Ctrl-C (or SIGTERM) becomes :class:`Interrupted`, which says in one line what
    happened, once everything below it was cleaned up on the way out."""
    try:
        yield
    except Interrupted:
        raise
    except KeyboardInterrupt:
        with sigint_ignored():
            message = store.interruption()
        raise Interrupted(message) from None


def _diff(prepared: Prepared, sides: Sides) -> DiffDocument:
    """The diff of the prepared sides, confirmed (the tests that differ recorded again) as
    the options the sides were made with ask."""
    base, head = prepared.base, prepared.head
    base_config = (base.document.get("run") or {}).get("config")
    head_config = (head.document.get("run") or {}).get("config")
    check_comparable(
        base.document.get("format"),
        head.document.get("format"),
        naming_of(base_config),
        naming_of(head_config),
        values_of(base_config),
        values_of(head_config),
    )

    context: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])

    def compare(
        base_confirmation: Sequence[dict[str, Any]] = (),
        head_confirmation: Sequence[dict[str, Any]] = (),
    ) -> DiffDocument:
        return diff_documents(
            base.document,
            head.document,
            base_rev=base.spec,
            head_rev=head.spec,
            base_repeats=base.repeats,
            head_repeats=head.repeats,
            code_changes=prepared.code_changes,
            base_confirmation=base_confirmation,
            head_confirmation=head_confirmation,
            carried_tests=head.carried,
            base_context=context[0],
            head_context=context[1],
        )

    progress = sides.progress
    with progress.step("diffing", "diffed") as step:
        diff = compare()
        step.result = _tests_text(diff)
    differing_tests = [
        t for t in diff.tests if t.changes and t.status in (STATUS_CHANGED, STATUS_UNVERIFIED)
    ]
    differing = [t.id for t in differing_tests]
    moved = moved_cases(diff)
    if sides.options.confirm and (differing or moved):
        one = len(differing) == 1
        subject = f"{len(differing)} test{'' if one else 's'} that differ{'s' if one else ''}"
        if moved:
            functions = f"{len(moved)} function{'' if len(moved) == 1 else 's'}"
            subject = (f"{subject} and " if differing else "") + (
                f"the cases of {functions} whose case ids moved"
            )
        base_ids = [t.base_id or t.id for t in differing_tests]
        with progress.step("confirming", "confirmed", subject) as step:
            base_again, head_again = confirm(
                sides.recordings,
                prepared.notes,
                _recordable(base),
                _recordable(head),
                [*differing, *moved],
                [*base_ids, *moved],
                one_place=environments_differ(base.document, head.document),
                settled=_settled(base.document, head.document, base_ids, differing, moved),
            )
            rounds = max(len(base_again), len(head_again))
            step.result = (
                f"recorded {'it' if one and not moved else 'them'} "
                f"{'once' if rounds == 1 else 'twice'} more on each side"
            )
        if 0 < len(base_again) < CONFIRMATIONS and 0 < len(head_again) < CONFIRMATIONS:
            prepared.notes.append(
                f"confirmation recorded the {subject} once more on each side, not twice: "
                "in what differs between base and head, the first round showed each test as "
                "the first recordings did; a second round could only have set a change apart "
                'as unstable, never found one (docs/diffing.md, "Confirmation")'
            )
        if base_again or head_again:
            with progress.step("diffing", "diffed", "again, with the confirmations") as step:
                diff = compare(base_again, head_again)
                step.result = _tests_text(diff)
            alone = shown_only_in_context(diff, set(differing))
            if alone:
                # Narrowed to the tests that differ, a test that reads what another file's
                # test left (a registry filled at import) fails alike on both sides, and
                # its change read as unstable: every test is recorded once more on each
                # side, so that it runs after what it ran after the first time.
                one = len(alone) == 1
                subject = (
                    f"{len(alone)} test{'' if one else 's'} whose change the narrowed "
                    "recordings did not show"
                )
                paired = dict(zip(differing, base_ids, strict=True))
                with progress.step("confirming", "confirmed", subject) as step:
                    found = confirm(
                        sides.recordings,
                        prepared.notes,
                        _recordable(base),
                        _recordable(head),
                        alone,
                        [paired[test_id] for test_id in alone],
                        one_place=environments_differ(base.document, head.document),
                        in_context=head.carried,
                    )
                    context[0].extend(found[0])
                    context[1].extend(found[1])
                    step.result = "recorded every test once more on each side"
                if context[0] and context[1]:
                    with progress.step("diffing", "diffed", "again, with them") as step:
                        diff = compare(base_again, head_again)
                        step.result = _tests_text(diff)
            racy = threaded_changes(diff, head.document)
            if racy:
                # Threads racing (three workers printing after a barrier): a side's three
                # recordings can agree on one order by chance, and the other side's on
                # another. Such tests are recorded twice more on each side before their
                # change is believed (docs/diffing.md, "Confirmation").
                one = len(racy) == 1
                subject = f"{len(racy)} test{'' if one else 's'} that ran threads"
                with progress.step("confirming", "confirmed", subject) as step:
                    step.result = f"recorded {'it' if one else 'them'} twice more on each side"
                    more_base, more_head = confirm(
                        sides.recordings,
                        prepared.notes,
                        _recordable(base),
                        _recordable(head),
                        racy,
                        racy,
                        one_place=environments_differ(base.document, head.document),
                    )
                if more_base or more_head:
                    with progress.step("diffing", "diffed", "again, with them") as step:
                        diff = compare([*base_again, *more_base], [*head_again, *more_head])
                        step.result = _tests_text(diff)
    return diff


def shown_only_in_context(diff: DiffDocument, differing: Collection[str]) -> list[str]:
    """The tests of ``differing`` (they differed between the first recordings) whose
    outcome differed (a test that now fails) and was among what the narrowed confirming
    recordings did not show (set apart as not reproduced), where nothing says the test
    varies between recordings of one commit (no repeat, no confirming recording of a side
    differed): the narrowing itself may be why. Only an outcome: what a cache another test
    warmed moves inside a test (packaging's ``_get_glibc_version``, called or not) is read
    as unstable as before, for a whole recording of each side (3 min there) would not
    change that."""
    not_reproduced = (NOT_REPRODUCED, NOT_REPRODUCED_ONE_ENVIRONMENT, NOT_REPRODUCED_ONE_SELECTION)
    out = []
    for test in diff.tests:
        if test.id not in differing or test.outcome.base == test.outcome.head:
            continue
        wheres = [w for w in map(unstable_where, test.reasons) if w is not None]
        if any(where in not_reproduced for where in wheres) and not any(
            where.endswith((" confirmation", " repeats")) for where in wheres
        ):
            out.append(test.id)
    return sorted(out)


def threaded_changes(diff: DiffDocument, head: Mapping[str, Any]) -> list[str]:
    """The changed tests whose head recording shows work on threads the test started (a
    node ``via`` a thread): their values may be a race's outcome."""
    changed = {
        t.id for t in diff.tests if t.status == STATUS_CHANGED and t.id == (t.base_id or t.id)
    }
    return _threaded(head, changed)


def _threaded(document: Mapping[str, Any], test_ids: Collection[str]) -> list[str]:
    """Those of ``test_ids`` whose recording in ``document`` shows work on threads the test
    started (a node ``via`` a thread)."""
    out = []
    for record in document.get("tests") or ():
        test_id = record.get("id") if isinstance(record, Mapping) else None
        if test_id not in test_ids:
            continue
        phases = record.get("phases")
        for genome in phases.values() if isinstance(phases, Mapping) else ():
            nodes = genome.get("nodes") if isinstance(genome, Mapping) else None
            if any(isinstance(n, Mapping) and n.get("via") for n in nodes or ()):
                out.append(str(test_id))
                break
    return sorted(out)


def _settled(
    base: Mapping[str, Any],
    head: Mapping[str, Any],
    base_ids: Sequence[str],
    head_ids: Sequence[str],
    moved: Sequence[str],
) -> Settled | None:
    """When confirmation may stop after one round
    (:func:`~diffgenome.analysis.diff.instability.first_round_settles`). Never for case ids
    that moved (two recordings of one commit tell them apart) nor for tests that ran
    threads (a race can settle one way for several recordings: they are confirmed in
    full, and more, :func:`threaded_changes`)."""
    if moved or _threaded(head, set(head_ids)) or _threaded(base, set(base_ids)):
        return None
    pairs = list(zip(base_ids, head_ids, strict=True))

    def settled(base_again: dict[str, Any], head_again: dict[str, Any]) -> bool:
        return first_round_settles((base, head), (base_again, head_again), pairs)

    return settled


def moved_cases(diff: DiffDocument) -> list[str]:
    """``--genome-only`` entries for every case of each parametrized function that has cases
    in base only *and* in head only: ids built from something that moves (the clock) make
    every case removed and added in every diff. Confirmation records them again, and a
    function whose case ids differ between two recordings of one commit has them read as
    unstable (docs/diffing.md, "Case ids that move")."""
    statuses: dict[str, set[str]] = {}
    for test in diff.tests:
        function, bracket, _ = test.id.partition("[")
        if bracket:
            statuses.setdefault(function, set()).add(test.status)
    return sorted(
        all_cases(function)
        for function, seen in statuses.items()
        if STATUS_ADDED in seen and STATUS_REMOVED in seen
    )


def core_notes(diff: DiffDocument) -> list[str]:
    """A note on each side the pure-Python core recorded (slower, the same genomes), with the
    run's reason (once when both sides share it): a slow diff says why, and what fixes it."""
    slow = [
        (f"{name} ({side.rev}{_commit(side)})", side.core_reason or "no reason recorded")
        for name, side in (("base", diff.base), ("head", diff.head))
        if side.core == "python"
    ]
    if len(slow) == 2 and slow[0][1] == slow[1][1]:
        slow = [(f"{slow[0][0]} and {slow[1][0]}", slow[0][1])]
    return [
        f"{sides} recorded with the pure-Python core (slower, the same genomes): {reason}"
        for sides, reason in slow
    ]


def _commit(side: DiffSide) -> str:
    return f", {side.commit[:12]}" if side.commit and side.commit != side.rev else ""


def _recordable(side: Side) -> Side:
    """``side`` as confirmation records it again: a stored run or a genome file of a clean
    commit this repository has (``Side.code``) is that revision, so its tests that differ
    are recorded again at that commit, as a revision's are. Confirmation compares its
    recordings with each other, never with the run: what the run was recorded with (another
    selection, another interpreter) does not matter, only that both are of one commit."""
    if side.kind in ("run", "file") and side.code is not None:
        return replace(side, kind="revision", sha=side.code)
    return side


def _tests_text(diff: DiffDocument) -> str:
    """``9 tests``, as the report counts them (``<import>`` is not one)."""
    n = sum(1 for test in diff.tests if test.id != IMPORT_TEST_ID)
    return f"{n} test{'' if n == 1 else 's'}"


def _prepare(
    sides: Sides, notes: list[str], *, need_head_recording: bool = True, skip_same: bool = False
) -> Prepared:
    """Resolve and record both sides, read the code changes, and only then the genomes the
    diff needs. ``skip_same``: genomes that both sides hold byte for byte alike, and that the
    diff needs for nothing else, are not read (see :func:`_load_sides`); only a diff may ask,
    which compares such tests by address."""
    carry = _carrier(sides, notes) if sides.options.selective and need_head_recording else None
    base, head = sides.resolve(
        need_head_recording=need_head_recording, skip_same=skip_same, carry=carry
    )
    code_changes = _code_changes(sides, notes, base, head)
    _load_sides(sides, base, head, code_changes)
    repo, side = sides.repo, base.code
    if repo is None or side is None:
        return Prepared(base, head, code_changes, notes)
    return Prepared(
        base,
        head,
        code_changes,
        notes,
        lambda path: repo.read(side, path),
        base_imports(repo, side),
    )


def base_imports(repo: Repository, side: str) -> Callable[[], ImportGraph]:
    """The imports of ``side``'s Python files, read when first asked for (only a change a
    module's import reached asks, diff/importers.py)."""

    def read() -> ImportGraph:
        return import_graph(
            repo.files(side, lambda path: path.endswith(".py")),
            lambda paths: repo.read_many(side, paths),
        )

    return read


def _load_sides(sides: Sides, base: Side, head: Side, code_changes: CodeChangeInput | None) -> None:
    """Read the genomes of sides whose stored run was left unread (``Side.deferred``).

    A test whose every phase is the same stored genome on both sides (equal content
    address) and holds no stand-in compares unchanged by construction, so its genomes
    are read only when the diff needs them for something else: when one of them names a
    changed symbol, a reader of a name a changed body binds, or a changed decision site
    (which tests ran the changed code, how its decisions
    went: found in the bodies' bytes, :meth:`StoreReader.mentioning`), or when a changed
    file could not be parsed (its symbols are unknown). Its outcome, reasons and
    warnings are read as always. Decoding is most of a diff's time on a large suite
    (sqlparse: 0.7 of 1.3 s); most tests of a commit behave as in the last."""
    unread: frozenset[str] = frozenset()
    if base.deferred is not None and head.deferred is not None:
        with sides.store.handle.reader() as reader:
            runs = (base.deferred[0], head.deferred[0])
            unread = reader.same_genomes(*runs)
            if unread and code_changes is not None:
                if code_changes.unparsed:
                    unread = frozenset()
                else:
                    named = {change.symbol for change in code_changes.symbols}
                    named.update(
                        site.site for change in code_changes.symbols for site in change.sites
                    )
                    named.update(code_changes.readers())
                    unread -= reader.mentioning(runs[0], unread, named)
    for side in (base, head):
        sides.load(side, unread)


def _code_changes(sides: Sides, notes: list[str], base: Side, head: Side) -> CodeChangeInput | None:
    repo = sides.repo
    if repo is None or base.code is None or head.code is None:
        if repo is None:
            notes.append("no git repository: code changes are not analysed")
        return None
    with sides.progress.step("reading", "read", "the code changes") as step:
        changes = _read_code_changes(
            repo, base.code, head.code, base.document, head.document, sides.store.path
        )
        count = len(changes.symbols)
        step.result = f"{count} changed symbol{'' if count == 1 else 's'}"
    return changes


def _carrier(sides: Sides, notes: list[str]) -> Callable[[Side, str], Sequence[str]]:
    """``--selective``: the tests of base that head need not run (diff/selective.py)."""

    def carry(base: Side, head_code: str) -> Sequence[str]:
        repo = sides.repo
        if repo is None or base.code is None or base.repeats:
            notes.append("--selective recorded every test at head: base's code is unknown")
            return ()
        base_paths, head_paths = repo.changed_files(base.code, head_code)
        changed = sorted({*base_paths, *head_paths})
        code = _read_code_changes(repo, base.code, head_code, base.document, {}, sides.store.path)
        side = base.code
        chosen = plan(
            base.document,
            changed,
            code,
            module_namer([base.document]),
            lambda path: repo.read(side, path),
            base_imports(repo, side),
        )
        if chosen.full is not None:
            notes.append(f"--selective recorded every test at head: {chosen.full}")
        why = chosen.nothing_carried()
        if why is not None:
            notes.append(why)
        return chosen.carried

    return carry


def _read_code_changes(
    repo: Repository,
    base_code: str,
    head_code: str,
    base: Mapping[str, Any],
    head: Mapping[str, Any],
    store: str | None = None,
) -> CodeChangeInput:
    """The code changes between the sides; ``base``, ``head``: their genome documents (an
    empty one where a side is not recorded yet), which name the modules. ``store``: the
    store folder, whose names cache (protocol/namecache.py) the recordings share: a file
    named by a recording, or by an earlier diff, is not named again."""
    documents = [d for d in (head, base) if d]
    module_of = module_namer(documents)
    base_files, head_files = repo.sources(
        base_code, head_code, lambda path: module_of(path) is not None
    )
    side = base_code

    def importers(names: Sequence[str]) -> dict[str, str]:
        """Base's other modules whose text names one of ``names``: where a changed
        module-level name may be imported and read (packaging's DEFAULT_RULES)."""
        out: dict[str, str] = {}
        for path in repo.files(side, lambda p: p.endswith(".py") and p not in base_files):
            if module_of(path) is None:
                continue
            text = repo.read(side, path)
            if text is not None and any(name in text for name in names):
                out[path] = text
        return out

    names = NameCache(store) if store is not None else None
    changes = code_changes_from_sources(base_files, head_files, module_of, importers, names)
    if names is not None:
        names.flush()
    base_paths, head_paths = repo.changed_files(base_code, head_code)
    return replace(
        changes,
        same_program=_one_program(repo, base_code, head_code, base_paths, head_paths),
        other_files=other_files([*base_paths, *head_paths], module_of),
    )


#: pytest reads its configuration from these: a change to one can reach every test.
_PYTEST_CONFIGURATION = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_DOCUMENT_SUFFIXES = (".md", ".rst", ".adoc")


def other_files(paths: Sequence[str], module_of: Callable[[str], str | None]) -> tuple[str, ...]:
    """The changed ``paths`` no recorded module is read from, those a test is likeliest to
    feel first: pytest's configuration, then the rest, documents last."""

    def rank(path: str) -> tuple[int, str]:
        name = path.rpartition("/")[2]
        if name in _PYTEST_CONFIGURATION:
            return (0, path)
        return (2 if name.endswith(_DOCUMENT_SUFFIXES) else 1, path)

    others = {path for path in paths if module_of(path) is None}
    return tuple(sorted(others, key=rank))


def _one_program(
    repo: Repository,
    base_code: str,
    head_code: str,
    base_paths: Sequence[str],
    head_paths: Sequence[str],
) -> bool:
    """Whether every file that differs between the sides is Python with one syntax tree on
    both (an identical tree; a comment edited): :func:`same_program`."""
    if set(base_paths) != set(head_paths) or not all(p.endswith(".py") for p in base_paths):
        return False
    return same_program(
        {path: repo.read(base_code, path) for path in base_paths},
        {path: repo.read(head_code, path) for path in head_paths},
    )


__all__ = ["Options", "Prepared", "prepare", "run_diff"]
