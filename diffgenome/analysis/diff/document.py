"""``diff_documents``: two genome documents in, one ``diffgenome-diff`` document out.

The assembly of the document: base's recordings read in head's names, tests paired across
renumbered ids (:mod:`~diffgenome.analysis.diff.pairing`), what varies between recordings
of one commit gathered (:mod:`~diffgenome.analysis.diff.instability`), the code changes and
the tests that reach them, then each test's verdict (:mod:`~diffgenome.analysis.diff.verdict`),
the gaps the verdicts leave, the summary, the causes and the drift.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from diffgenome.analysis.diff.align import index_tests
from diffgenome.analysis.diff.causes import causes_by_code_change
from diffgenome.analysis.diff.codechanges import CodeChangeInput
from diffgenome.analysis.diff.compare import Found
from diffgenome.analysis.diff.drift import find_drift
from diffgenome.analysis.diff.exercised import (
    code_change_entries,
    quiet_edits,
    test_code_paths,
    untold_edits,
)
from diffgenome.analysis.diff.instability import (
    Instability,
    from_confirmation,
    from_repeats,
    further_recordings,
    moving_case_ids,
    replicated_in_context,
    reproduced_differences,
)
from diffgenome.analysis.diff.mapping import translated
from diffgenome.analysis.diff.modules import test_code_rule
from diffgenome.analysis.diff.origins import TestOrigins
from diffgenome.analysis.diff.pairing import digests_comparable, pair_renumbered, renamed
from diffgenome.analysis.diff.reach import INTERNAL, SEEN, change_reach, test_reach, test_symbols
from diffgenome.analysis.diff.selective import CARRIED
from diffgenome.analysis.diff.structure import Region
from diffgenome.analysis.diff.verdict import Evidence, run_reasons, verdict
from diffgenome.analysis.models import DiffDocument, DiffSide, DiffSummary, TestDiff
from diffgenome.protocol.formats import archive_digests_comparable
from diffgenome.protocol.runs import ENVIRONMENT_CONFIG_KEY
from diffgenome.protocol.vocab import (
    CODE_MODIFIED,
    STATUS_CHANGED,
    STATUS_UNCHANGED,
    SYMBOL_KIND_MODULE,
)


def _environment(document: Mapping[str, Any]) -> object:
    """A genome document's environment fingerprint (None: a run of ``pytest --genome``)."""
    config = (document.get("run") or {}).get("config")
    return config.get(ENVIRONMENT_CONFIG_KEY) if isinstance(config, Mapping) else None


def environments_differ(base: Mapping[str, Any], head: Mapping[str, Any]) -> bool:
    """Whether the two runs were recorded in different environments: a run a diff recorded
    holds its environment's fingerprint (``run.config.environment``), one of ``pytest
    --genome`` holds none (it ran wherever the user or CI ran it: their temp folder, their
    ``PYTHONPATH``, their checkout's path, which tests copy into values). Two runs without
    one (two ``pytest --genome`` runs, two genome files) are compared as they were
    recorded: nothing tells their environments apart, and a difference in a test that runs
    changed code is kept.
    ``base``, ``head``: the genome documents."""

    return _environment(base) != _environment(head)


def diff_documents(
    base: dict[str, Any],
    head: dict[str, Any],
    *,
    base_rev: str,
    head_rev: str,
    base_repeats: Sequence[dict[str, Any]] = (),
    head_repeats: Sequence[dict[str, Any]] = (),
    code_changes: CodeChangeInput | None = None,
    base_confirmation: Sequence[Mapping[str, Any]] = (),
    head_confirmation: Sequence[Mapping[str, Any]] = (),
    contract: bool = True,
    carried_tests: frozenset[str] = frozenset(),
    base_context: Sequence[Mapping[str, Any]] = (),
    head_context: Sequence[Mapping[str, Any]] = (),
) -> DiffDocument:
    """Diff two validated ``diffgenome-genome`` documents (plain dicts, as exported).

    ``*_repeats`` are further recordings of the same commit as ``base``/``head``; whatever
    differs among the recordings of one side is unstable. ``code_changes`` (from
    :func:`code_changes_from_sources`) adds ``code_changes`` entries and code evidence of
    mock drift. ``contract=False`` judges every test on its differences as recorded, with
    no contraction of one-sided code (the control of experiments/truth/mutants.py).
    ``carried_tests``: base's tests head did not run, the change not reaching them
    (``diff --selective``, diff/selective.py): ``unchanged``, with the reason that says so.
    ``*_context``: a recording of every test of each side made again (not narrowed),
    where the narrowed confirmations showed a difference on neither side: a difference
    this pair makes again field for field, each side as first recorded, was reproduced
    (:func:`~diffgenome.analysis.diff.instability.replicated_in_context`).
    """
    if code_changes is not None and code_changes.mapping:
        # Base's recordings in head's names (mapping.py): what the mapping pairs is compared
        # count for count, only what it cannot pair is added or removed.
        mapping = code_changes.mapping
        base = translated(base, mapping)
        base_repeats = [translated(repeat, mapping) for repeat in base_repeats]
        base_confirmation = [translated(again, mapping) for again in base_confirmation]
        base_context = [translated(again, mapping) for again in base_context]
    b_run, h_run = base.get("run") or {}, head.get("run") or {}
    recorded_b_tests, h_tests = index_tests(base), index_tests(head)
    digests = digests_comparable(b_run, h_run)
    files_comparable = archive_digests_comparable(b_run.get("config"), h_run.get("config"))
    incomplete = run_reasons(b_run, "base") + run_reasons(h_run, "head")
    paired = pair_renumbered(recorded_b_tests, h_tests) if digests else {}
    b_tests = renamed(recorded_b_tests, paired)
    base_ids = {head_id: base_id for base_id, head_id in paired.items()}

    unstable: dict[str, Instability] = {}
    b_repeats, h_repeats = (
        further_recordings(base_repeats, paired),
        further_recordings(head_repeats, {}),
    )
    b_confirming = further_recordings(base_confirmation, paired)
    h_confirming = further_recordings(head_confirmation, {})
    from_repeats(b_tests, b_run, b_repeats, "base", unstable)
    from_repeats(h_tests, h_run, h_repeats, "head", unstable)
    confirmed = from_confirmation(b_confirming, "base", unstable)
    confirmed |= from_confirmation(h_confirming, "head", unstable)
    moving = {
        **moving_case_ids(head_confirmation, "head"),
        **moving_case_ids(base_confirmation, "base"),
    }

    # Tests that run changed code: a difference there is never put down to how the runs went.
    entries = (
        code_change_entries(
            code_changes,
            recorded_b_tests,
            h_tests,
            test_code_paths(base, head),
            test_code_rule([base, head]),
        )
        if code_changes is not None
        else []
    )
    reaching = {test for entry in entries for test in (*entry.tests_base, *entry.tests_head)}
    other_environments = environments_differ(base, head)
    # One program is one behaviour only where both sides ran in one environment that the
    # diff knows (its fingerprint: variables, folder, the distributions installed): two runs
    # of one commit made under other dependencies differ by those, which is no noise.
    one_environment = not other_environments and _environment(base) is not None
    other_selections = bool(carried_tests)
    reproduced = (
        reproduced_differences(b_confirming, h_confirming, with_import=other_environments)
        if code_changes is not None
        else {}
    )
    if code_changes is not None and base_context and head_context:
        in_context = replicated_in_context(
            (b_tests, h_tests),
            (further_recordings(base_context, paired), further_recordings(head_context, {})),
            reproduced,
        )
        for test_id, keys in in_context.items():
            reproduced[test_id] |= keys
    one_sided_sites = code_changes.one_sided_sites() if code_changes is not None else frozenset()
    region = (
        Region.of(code_changes, _module_symbols(base, head)) if code_changes is not None else None
    )
    one_sided_state = (
        code_changes.one_sided_state() | region.one_sided_names()
        if code_changes is not None and region is not None
        else frozenset()
    )
    # Methods moved onto the class of one of their parameters: that argument is ``self`` now
    # (docs/diffing.md, "Identity by mapping").
    onto_argument = frozenset(
        change.symbol
        for change in (code_changes.symbols if code_changes is not None else ())
        if change.onto_argument
    )
    evidence = Evidence(
        b_tests=b_tests,
        h_tests=h_tests,
        b_run=b_run,
        h_run=h_run,
        base_ids=base_ids,
        digests=digests,
        files_comparable=files_comparable,
        run_reasons=incomplete,
        unstable=unstable,
        b_further=(*b_repeats, *b_confirming),
        h_further=(*h_repeats, *h_confirming),
        moving=moving,
        carried_tests=carried_tests,
        code_changes=code_changes,
        reaching=reaching,
        reproduced=reproduced,
        other_environments=other_environments,
        other_selections=other_selections,
        one_environment=one_environment,
        contract=contract,
        region=region,
        one_sided_sites=one_sided_sites,
        one_sided_state=one_sided_state,
        onto_argument=onto_argument,
    )
    diffs: list[TestDiff] = []
    stable_changes: dict[str, list[Found]] = {}
    for test_id in sorted(set(b_tests) | set(h_tests)):
        entry, stable = verdict(test_id, evidence)
        diffs.append(entry)
        if stable is not None:
            stable_changes[test_id] = stable

    untold_edits(entries, diffs, code_changes)
    quiet_edits(entries, diffs, code_changes)
    test_code = test_symbols((base, head))
    summary = DiffSummary(tests=len(diffs), confirmed=len(confirmed))
    for diff in diffs:
        setattr(summary, diff.status, getattr(summary, diff.status) + 1)
        if diff.status == STATUS_UNCHANGED and diff.reasons == [CARRIED]:
            summary.carried += 1
        for change in diff.changes:
            change.reach = change_reach(change, test_code)
        if diff.status == STATUS_CHANGED:
            diff.reach = test_reach(diff.changes)
            if diff.reach == SEEN:
                summary.seen += 1
            elif diff.reach == INTERNAL:
                summary.internal += 1
    changed_symbols = frozenset(entry.symbol for entry in entries)
    one_sided = frozenset(entry.symbol for entry in entries if entry.change != CODE_MODIFIED)
    reads = code_changes.bodies_read_by() if code_changes is not None else {}

    def origins_of(test: TestDiff) -> TestOrigins:
        b, h = b_tests.get(test.id), h_tests.get(test.id)
        return TestOrigins.of(b, h, changed_symbols, test.changes, one_sided, reads)

    causes, cause_groups = causes_by_code_change(
        diffs,
        entries,
        one_sided_sites,
        origins_of if code_changes is not None else None,
        code_changes.other_files if code_changes is not None else (),
    )
    return DiffDocument(
        base=_side(b_run, base_rev),
        head=_side(h_run, head_rev),
        summary=summary,
        causes=causes,
        cause_groups=cause_groups,
        tests=diffs,
        code_changes=entries,
        drift=find_drift(
            b_tests,
            h_tests,
            stable_changes,
            code_changes,
            {entry.symbol: {*entry.tests_base, *entry.tests_head} for entry in entries},
            {diff.id: diff.status for diff in diffs},
        ),
    )


def _module_symbols(*documents: Mapping[str, Any]) -> set[str]:
    """The symbols of kind ``module`` in the documents' symbol tables."""
    return {
        str(entry.get("id"))
        for document in documents
        for entry in document.get("symbols") or ()
        if isinstance(entry, Mapping) and entry.get("kind") == SYMBOL_KIND_MODULE
    }


def _side(run: dict[str, Any], rev: str) -> DiffSide:
    """One side of the diff: its run, commit, and the core that recorded it (as the run
    says: a run recorded before runs said it has none)."""
    core = run.get("core")
    reason = run.get("core_reason")
    return DiffSide(
        run=run.get("id"),
        commit=run.get("commit"),
        rev=rev,
        core=core if core in ("c", "python") else None,
        core_reason=reason if isinstance(reason, str) and core == "python" else None,
    )
