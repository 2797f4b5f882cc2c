"""``diff_documents``: two genome documents in, one ``diffgenome-diff`` document out.

The verdict of a test is deliberately pessimistic: a test is ``unchanged`` only when both
recordings are verified, both runs are complete, their digests are comparable and nothing
differs. Anything that differs between repeated recordings of one commit is unstable and is
set apart instead of being reported as a change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from diffgenome.analysis.diff.agreement import Witnesses
from diffgenome.analysis.diff.align import Path, TestIndex, index_tests
from diffgenome.analysis.diff.causes import causes_by_code_change
from diffgenome.analysis.diff.codechanges import CodeChangeInput
from diffgenome.analysis.diff.compare import (
    PRESENCE_KINDS,
    TIMING_UNLESS_CHANGED,
    Found,
    StabilityKey,
    compare_tests,
    one_sided_stand_ins,
    warning_messages_comparable,
)
from diffgenome.analysis.diff.describe import ARROW, describe
from diffgenome.analysis.diff.drift import find_drift
from diffgenome.analysis.diff.exercised import code_change_entries, test_code_paths
from diffgenome.analysis.diff.mapping import translated
from diffgenome.analysis.diff.modules import test_code_rule
from diffgenome.analysis.diff.origins import TestOrigins
from diffgenome.analysis.diff.reach import INTERNAL, SEEN, change_reach, test_reach, test_symbols
from diffgenome.analysis.diff.selective import CARRIED
from diffgenome.analysis.diff.structure import (
    MOVED_SITE,
    Region,
    contract,
    imports_modules,
    mapped_lines,
    runs_one_sided_code,
    summaries,
)
from diffgenome.analysis.models import (
    CodeChange,
    DiffDocument,
    DiffSide,
    DiffSummary,
    OutcomePair,
    TestDiff,
    TestStatus,
)
from diffgenome.protocol.formats import ARCHIVE_CONTENT, archive_digests_comparable
from diffgenome.protocol.runs import ENVIRONMENT_CONFIG_KEY
from diffgenome.protocol.selection import SHARED_NODE_ID
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    BRANCH_CHANGED,
    CALL_COUNT_CHANGED,
    CLASS_ATTRIBUTE_BUCKET,
    CODE_ADDED,
    CODE_MODIFIED,
    CODE_REMOVED,
    EXIT_CHANGED,
    FILE_CHANGED,
    IMPORT_TEST_ID,
    RESULT_CHANGED,
    STATE_CHANGED,
    STATUS_ADDED,
    STATUS_CHANGED,
    STATUS_REMOVED,
    STATUS_RESTRUCTURED,
    STATUS_TOUCHED,
    STATUS_UNCHANGED,
    STATUS_UNSTABLE,
    STATUS_UNVERIFIED,
    SYMBOL_KIND_MODULE,
)

# What a call makes of its arguments: when the arguments themselves differ between recordings
# of one commit (an elapsed time, a timestamp), so may its result, its exits, the state it
# leaves and the decisions it takes on them (google-api-core: a stall control fed
# ``time.monotonic()`` deltas left a lag of zero in one run and a positive one in the next).
_PRODUCTS = frozenset({RESULT_CHANGED, EXIT_CHANGED, STATE_CHANGED, BRANCH_CHANGED})

DIGESTS_NOT_COMPARABLE = "digests not comparable: different keys"
WARNING_MESSAGES_NOT_COMPARABLE = (
    "warning messages not comparable: one side kept them as text (a recorder before "
    "2026-12-02), the other as keyed digests; record both again (diffgenome diff --rerecord)"
)
#: The reason of a test whose node id other items share, in another number on each side: its
#: id is a place among them in collection order (docs/recording.md), and a case inserted,
#: removed or moved among them gives that place to another case.
SHARED_NODE_ID_MOVED = "cases that share its node id"
FILE_DIGESTS_NOT_COMPARABLE = (
    "written files not comparable: one side digests archives by their bytes (a recorder "
    f"before effects revision {ARCHIVE_CONTENT}), the other by their content; record both "
    "again (diffgenome diff --rerecord)"
)
Status = TestStatus
MAX_UNSTABLE_REASONS = 20


def digests_comparable(base_run: Mapping[str, Any], head_run: Mapping[str, Any]) -> bool:
    """Digests of two runs compare only under one known key."""
    fingerprint = base_run.get("key_fingerprint")
    return fingerprint is not None and fingerprint == head_run.get("key_fingerprint")


@dataclass(slots=True)
class Instability:
    """What differed between recordings of one commit, for one test."""

    keys: set[StabilityKey] = field(default_factory=set)
    presence: set[tuple[str | None, Path]] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)
    hidden: int = 0
    #: The decision sites and calls whose counts differed between recordings of one
    #: commit, at whichever call path (:func:`counted_site`), with where that was seen.
    counts: dict[CountedSite, str] = field(default_factory=dict)

    def add(self, side: str, found: Found, *, one_commit: bool = False) -> None:
        """``found`` as unstable; ``one_commit``: it differed between two recordings of one
        commit (repeats, confirmation), so its site's counts are known to vary."""
        where = side if side.endswith(_OWN_LABELS) else f"{side} repeats"
        counted = counted_site(found) if one_commit else None
        if counted is not None:
            self.counts.setdefault(counted, where)
        key = found.key()
        if key in self.keys:
            return
        self.keys.add(key)
        if found.kind in PRESENCE_KINDS:
            self.presence.add((found.phase, found.path))
        if len(self.reasons) < MAX_UNSTABLE_REASONS:
            self.reasons.append(f"unstable ({where}): {describe(found.change())}")
        else:
            self.hidden += 1

    def counts_varied(self, found: Found) -> str | None:
        """Where the counts of ``found``'s decision site (or call) were seen to vary between
        recordings of one commit, at any call path, when ``found`` differs in its counts
        only (:func:`counts_only`); None otherwise."""
        counted = counted_site(found)
        if counted is None or not counts_only(found):
            return None
        return self.counts.get(counted)

    def covers(self, found: Found, *, products: bool = True) -> bool:
        """Whether ``found`` differed between recordings of one commit. ``products``: also
        what a call made of arguments that did (not in a test that runs changed code, where
        the code may be what changed the result)."""
        if found.key() in self.keys:
            return True
        if (
            products
            and found.kind in _PRODUCTS
            and (ARGS_CHANGED, found.phase, found.path, None) in self.keys
        ):
            return True
        path = found.path
        return any((found.phase, path[:i]) in self.presence for i in range(1, len(path) + 1))

    def all_reasons(self) -> list[str]:
        extra = [f"unstable: and {self.hidden} more items"] if self.hidden else []
        return self.reasons + extra


#: A decision site, or a call's symbol, whose counts are compared: (kind, phase, site).
CountedSite = tuple[str, str | None, str]


def counted_site(found: Found) -> CountedSite | None:
    """The site whose counts ``found`` compares where both sides reached it: a decision
    (its outcomes' counts), a call's count or a call's exits' counts; None for any other
    difference (values, state, presence, effects), or a decision one side did not reach."""
    if found.kind == BRANCH_CHANGED:
        if found.site is None or found.base is None or found.head is None:
            return None
        return (BRANCH_CHANGED, found.phase, found.site)
    if found.kind in (CALL_COUNT_CHANGED, EXIT_CHANGED) and found.symbol is not None:
        if found.kind == EXIT_CHANGED and not _exit_counts(found):
            return None  # an OS event's outcome, not counts
        return (found.kind, found.phase, found.symbol)
    return None


def _exit_counts(found: Found) -> bool:
    return (
        isinstance(found.base, Mapping)
        and isinstance(found.head, Mapping)
        and "outcome" not in found.base
        and "outcome" not in found.head
    )


def _reached(counts: object) -> frozenset[str]:
    if not isinstance(counts, Mapping):
        return frozenset()
    return frozenset(str(key) for key, value in counts.items() if value)


def counts_only(found: Found) -> bool:
    """Whether ``found`` differs only in how often: a call that ran on both sides a
    different number of times, or a decision (or a call's exits) whose outcomes reached on
    each side are the same ones, only counted differently (``false 1013 → false 1011``).
    A branch newly taken or no longer taken, another exit, a value: never."""
    if found.kind == CALL_COUNT_CHANGED:
        return True
    if found.kind in (BRANCH_CHANGED, EXIT_CHANGED):
        base, head = _reached(found.base), _reached(found.head)
        return bool(base) and base == head
    return False


def pair_renumbered(base: Mapping[str, TestIndex], head: Mapping[str, TestIndex]) -> dict[str, str]:
    """Base id → the id it is reported under, for parametrized cases whose ids moved.

    pytest names a case whose value it cannot print by its position (``test[kwargs18]``), so
    inserting two cases turns it into ``test[kwargs20]``: compared by id, every later case is
    compared with its neighbour's recording, and the last reads as added (tomlkit, humanize:
    14 tests each). Within one test function whose set of case ids differs between the
    sides, cases are paired by their parameter values instead (the ``params`` digests), when
    every case of that function on both sides has them, none missing (cases listed twice with
    equal values pair in id order). A base case whose values are gone is removed; if head
    reuses its id for another case it is reported as ``<id> (base)``.
    """
    groups: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
    unusable: set[str] = set()
    for side, tests in enumerate((base, head)):
        for test_id, test in tests.items():
            function, bracket, _ = test_id.partition("[")
            if not bracket:
                continue
            key = _case_values(test)
            if key is None:
                unusable.add(function)
            else:
                groups.setdefault(function, ({}, {}))[side][test_id] = key
    names: dict[str, str] = {}
    for function, (b_cases, h_cases) in groups.items():
        if function in unusable or set(b_cases) == set(h_cases):
            continue
        h_by_values: dict[str, list[str]] = {}
        for test_id, values in h_cases.items():
            h_by_values.setdefault(values, []).append(test_id)
        b_by_values: dict[str, list[str]] = {}
        for test_id, values in b_cases.items():
            b_by_values.setdefault(values, []).append(test_id)
        for values, base_ids in b_by_values.items():
            # Cases listed twice with equal values (tomlkit: kwargs4 and kwargs8) are the
            # same case: which one pairs with which does not matter; they pair in id order.
            head_ids = sorted(h_by_values.get(values, ()), key=_natural)
            for index, base_id in enumerate(sorted(base_ids, key=_natural)):
                if index < len(head_ids):
                    names[base_id] = head_ids[index]
                elif base_id in head:
                    names[base_id] = f"{base_id} (base)"
    return {base_id: name for base_id, name in names.items() if base_id != name}


def _natural(test_id: str) -> list[tuple[int, str]]:
    """``kwargs4`` before ``kwargs18``: numbers compare as numbers."""
    return [(int(part), "") if part.isdigit() else (0, part) for part in _DIGITS.split(test_id)]


_DIGITS = re.compile(r"(\d+)")


def _case_values(test: TestIndex) -> str | None:
    params = test.record.get("params")
    if not isinstance(params, Mapping) or not params:
        return None
    if not all(isinstance(digest, str) for digest in params.values()):
        return None  # a value too big to digest: its equality is unknown
    return "\0".join(f"{name}={params[name]}" for name in sorted(params))


def _renamed(tests: dict[str, TestIndex], names: Mapping[str, str]) -> dict[str, TestIndex]:
    return {names.get(test_id, test_id): test for test_id, test in tests.items()}


#: A further recording of one side: its tests by id (paired ids applied), and its run.
Again = tuple[dict[str, TestIndex], Mapping[str, Any]]


def _again(documents: Iterable[Mapping[str, Any]], names: Mapping[str, str]) -> list[Again]:
    return [(_renamed(index_tests(doc), names), doc.get("run") or {}) for doc in documents]


def _instability(
    primary: Mapping[str, TestIndex],
    run: Mapping[str, Any],
    repeats: Iterable[Again],
    side: str,
    into: dict[str, Instability],
) -> None:
    for again, repeat_run in repeats:
        digests = digests_comparable(run, repeat_run)
        for test_id, test in primary.items():
            other = again.get(test_id)
            if other is None:
                continue
            for found in compare_tests(test, other, digests=digests):
                into.setdefault(test_id, Instability()).add(side, found, one_commit=True)


def _confirmation(recordings: Sequence[Again], side: str, into: dict[str, Instability]) -> set[str]:
    """What differs between two recordings of one side's differing tests, made after the
    first comparison (``diffgenome diff`` confirms by default).

    The two confirming recordings select the same tests, so what running a few tests alone
    changes (a module fixture set up by another test, a cache warmed earlier) is the same in
    both and masks nothing; only the clock, randomness and scheduling differ between them.
    They are never compared with the first recordings, whose selection differs. Returns the
    ids of the tests confirmed (never ``<import>``, which is masked but not confirmed).
    """
    if len(recordings) < 2:
        return set()
    first, first_run = recordings[0]
    digests = digests_comparable(first_run, recordings[1][1])
    label = f"{side} confirmation"
    for again, _ in recordings[1:]:
        for test_id, test in first.items():
            twin = again.get(test_id)
            if twin is None:
                continue
            # <import> of a few modules says nothing about the whole import, so it is never
            # counted as confirmed; but what differs between two imports of the same modules
            # at one commit (a start time taken at import: boltons.ecoutils) is noise there
            # as anywhere, and masks that field (an identical tree was `<import> changed`).
            for found in compare_tests(test, twin, digests=digests):
                into.setdefault(test_id, Instability()).add(label, found, one_commit=True)
    return set(first) - {IMPORT_TEST_ID}


def _moving_case_ids(recordings: Sequence[Mapping[str, Any]], side: str) -> dict[str, str]:
    """Parametrized functions whose case ids differ between two recordings of one commit
    (ids built from the clock: marshmallow's ``[11:29:00 2026-12-05]``), with the reason
    their one-sided cases give: a case removed and one added in every diff is the ids
    moving, not tests coming and going."""
    if len(recordings) < 2:
        return {}
    cases: list[dict[str, set[str]]] = []
    for recording in recordings:
        by_function: dict[str, set[str]] = {}
        for test in recording.get("tests") or ():
            test_id = str(test.get("id"))
            function, bracket, _ = test_id.partition("[")
            if bracket:
                by_function.setdefault(function, set()).add(test_id)
        cases.append(by_function)
    moving: dict[str, str] = {}
    for other in cases[1:]:
        for function in cases[0].keys() & other.keys():
            first, again = cases[0][function], other[function]
            if first == again or function in moving:
                continue
            gone, new = sorted(first - again), sorted(again - first)
            example = (
                f"{gone[0]} {ARROW} {new[0]}"
                if gone and new
                else f"{len(first)} {ARROW} {len(again)} cases"
            )
            moving[function] = (
                f"unstable ({side} confirmation): the case ids of {function} differ between "
                f"two recordings of one commit ({example}), so a case on one side only is "
                "its id moving, not a test added or removed"
            )
    return moving


NOT_REPRODUCED = "not reproduced when both sides were recorded again"
#: The reason's words where the first recordings ran in different environments (a user's
#: ``pytest --genome`` run reused beside a side the diff recorded): confirmation's are in one.
NOT_REPRODUCED_ONE_ENVIRONMENT = (
    "not reproduced when both sides were recorded again in one environment "
    "(the first recordings ran in different environments)"
)
#: The reason's words where head's first recording ran only the tests the change reaches
#: (``--selective``) and base's every test: confirmation's ran one selection on both sides.
NOT_REPRODUCED_ONE_SELECTION = (
    "not reproduced when both sides were recorded again with one selection "
    "(head's first recording ran only the tests the change reaches)"
)
#: The reason's words for a difference between two sides that are one program
#: (``CodeChangeInput.same_program``): no code of theirs can be what made it.
SAME_PROGRAM = "one program on both sides (no code changed)"
#: The reason's words for a difference of counts only at a site whose counts varied, in the
#: recordings of one commit, at another call path (docs/diffing.md, "Counts that vary").
COUNTS_ELSEWHERE = "varied in {seen} at another path"
_OWN_LABELS = (
    SAME_PROGRAM,
    "confirmation",
    "timing",
    "thread",
    NOT_REPRODUCED,
    NOT_REPRODUCED_ONE_ENVIRONMENT,
    NOT_REPRODUCED_ONE_SELECTION,
    "at another path",
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


def _counts_that_vary(found: list[Found], instability: Instability | None) -> list[Found]:
    """``found`` without the differences of counts only at a decision site or call whose
    counts were seen to vary between recordings of one commit at another call path; those
    are added to ``instability`` as unstable, with a reason that says so.

    A loop whose rounds depend on the scheduler (how many reads a loopback socket needs:
    boltons' ``BufferedSocket.recv_until``, ``false 1013 → false 1011``) runs on several
    paths (a client and its server thread); confirmation may see the counts vary on one of
    them and the first recordings differ on another. The same outcomes were reached on
    both sides, only counted differently, at a site whose counts are known to vary: that is
    no evidence of a change, and no evidence of none. The caller applies it only in tests
    that run no changed code."""
    if instability is None or not instability.counts:
        return found
    kept: list[Found] = []
    for item in found:
        seen = instability.counts_varied(item)
        if seen is None:
            kept.append(item)
            continue
        what = "site" if item.kind == BRANCH_CHANGED else "call"
        label = f"counts of this {what} " + COUNTS_ELSEWHERE.format(seen=seen)
        instability.add(label, item)
    return kept


def _reproduced(
    base_confirmation: Sequence[Again],
    head_confirmation: Sequence[Again],
    *,
    with_import: bool = False,
) -> dict[str, set[StabilityKey]]:
    """Per confirmed test, what differs between base and head when both were recorded again
    the same way (the i-th confirming recording of each side, side by side).

    A difference of the first recordings that none of these pairs shows was made by how the
    full runs went, not by the code: a decision on the time since the first attempt
    (google-api-core: ``now_timestamp - first_attempt_timestamp < 0.001``) went one way in a
    loaded full run and the other way in every recording of a few tests.

    ``<import>`` only ``with_import``: confirmation in one place collects what the first
    recordings collected (``confirm(one_place=True)``), so its imports are whole; otherwise
    a confirming recording imports a few modules, and what it leaves out is no evidence.
    """
    pairs = [
        (b_tests, h_tests, digests_comparable(b_run, h_run))
        for (b_tests, b_run), (h_tests, h_run) in zip(
            base_confirmation, head_confirmation, strict=False
        )
    ]
    if not pairs:
        return {}
    # Only tests every pair recorded on both sides: a test missing from one says nothing.
    everywhere = set.intersection(*(set(b) & set(h) for b, h, _ in pairs))
    if not with_import:
        everywhere.discard(IMPORT_TEST_ID)
    out: dict[str, set[StabilityKey]] = {test_id: set() for test_id in everywhere}
    for b_tests, h_tests, digests in pairs:
        for test_id in everywhere:
            found = compare_tests(b_tests[test_id], h_tests[test_id], digests=digests)
            out[test_id].update(item.key() for item in found)
    return out


def _run_reasons(run: Mapping[str, Any], side: str) -> list[str]:
    if run.get("complete", True):
        return []
    why = ", ".join(str(r) for r in run.get("incomplete_reasons") or ()) or "no reason given"
    return [f"{side} run incomplete: {why}"]


def _test_reasons(test: TestIndex | None, side: str) -> list[str]:
    if test is None or test.record.get("verified", False):
        return []
    reasons = test.record.get("unverified_reasons") or [STATUS_UNVERIFIED]
    return [f"{side}: {reason}" for reason in reasons]


def _has_digests(test: TestIndex) -> bool:
    warned = test.record.get("warnings")
    if isinstance(warned, list) and any(
        isinstance(item, Mapping) and item.get("message_digest") for item in warned
    ):
        return True
    for node in test.raw_nodes():
        for field_name in ("args", "results"):
            if any(value.get("digest") for value in node.get(field_name) or ()):
                return True
        for field_name in ("args_overflow", "results_overflow", "state_overflow"):
            if (node.get(field_name) or {}).get("digest"):
                return True
    return False


def _outcome(test: TestIndex | None) -> str | None:
    return None if test is None else str(test.record.get("outcome"))


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
) -> DiffDocument:
    """Diff two validated ``diffgenome-genome`` documents (plain dicts, as exported).

    ``*_repeats`` are further recordings of the same commit as ``base``/``head``; whatever
    differs among the recordings of one side is unstable. ``code_changes`` (from
    :func:`code_changes_from_sources`) adds ``code_changes`` entries and code evidence of
    mock drift. ``contract=False`` judges every test on its differences as recorded, with
    no contraction of one-sided code (the control of experiments/truth/mutants.py).
    ``carried_tests``: base's tests head did not run, the change not reaching them
    (``diff --selective``, diff/selective.py): ``unchanged``, with the reason that says so.
    """
    if code_changes is not None and code_changes.mapping:
        # Base's recordings in head's names (mapping.py): what the mapping pairs is compared
        # count for count, only what it cannot pair is added or removed.
        mapping = code_changes.mapping
        base = translated(base, mapping)
        base_repeats = [translated(repeat, mapping) for repeat in base_repeats]
        base_confirmation = [translated(again, mapping) for again in base_confirmation]
    b_run, h_run = base.get("run") or {}, head.get("run") or {}
    recorded_b_tests, h_tests = index_tests(base), index_tests(head)
    digests = digests_comparable(b_run, h_run)
    files_comparable = archive_digests_comparable(b_run.get("config"), h_run.get("config"))
    run_reasons = _run_reasons(b_run, "base") + _run_reasons(h_run, "head")
    paired = pair_renumbered(recorded_b_tests, h_tests) if digests else {}
    b_tests = _renamed(recorded_b_tests, paired)
    base_ids = {head_id: base_id for base_id, head_id in paired.items()}

    unstable: dict[str, Instability] = {}
    b_repeats, h_repeats = _again(base_repeats, paired), _again(head_repeats, {})
    b_confirming, h_confirming = _again(base_confirmation, paired), _again(head_confirmation, {})
    _instability(b_tests, b_run, b_repeats, "base", unstable)
    _instability(h_tests, h_run, h_repeats, "head", unstable)
    confirmed = _confirmation(b_confirming, "base", unstable)
    confirmed |= _confirmation(h_confirming, "head", unstable)
    moving = {
        **_moving_case_ids(head_confirmation, "head"),
        **_moving_case_ids(base_confirmation, "base"),
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
        _reproduced(b_confirming, h_confirming, with_import=other_environments)
        if code_changes is not None
        else {}
    )
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
    diffs: list[TestDiff] = []
    stable_changes: dict[str, list[Found]] = {}
    for test_id in sorted(set(b_tests) | set(h_tests)):
        b, h = b_tests.get(test_id), h_tests.get(test_id)
        outcome = OutcomePair(base=_outcome(b), head=_outcome(h))
        reasons = _test_reasons(b, "base") + _test_reasons(h, "head")
        status: Status
        if h is None and b is not None and test_id in carried_tests:
            diffs.append(
                TestDiff(
                    id=test_id,
                    status=STATUS_UNCHANGED,
                    outcome=outcome,
                    reasons=[CARRIED],
                    may_hide_change=False,
                )
            )
            continue
        if b is None or h is None:
            missing_side, missing_run = ("base", b_run) if b is None else ("head", h_run)
            if not missing_run.get("complete", True):
                reasons = [f"not recorded in {missing_side}, whose run is incomplete", *reasons]
                status = STATUS_UNVERIFIED
            elif test_id.partition("[")[0] in moving:
                reasons = [moving[test_id.partition("[")[0]], *reasons]
                status = STATUS_UNSTABLE
            else:
                status = STATUS_ADDED if b is None else STATUS_REMOVED
            one_side = b if h is None else h
            diffs.append(
                TestDiff(
                    id=test_id,
                    base_id=base_ids.get(test_id),
                    status=status,
                    outcome=outcome,
                    reasons=reasons,
                    changes=[
                        found.change()
                        for found in one_sided_stand_ins(one_side, base_side=h is None)
                    ]
                    if one_side is not None and status in (STATUS_ADDED, STATUS_REMOVED)
                    else [],
                    may_hide_change=status == STATUS_UNVERIFIED,
                )
            )
            continue
        found = compare_tests(b, h, digests=digests)
        if onto_argument:
            found = [
                item
                for item in found
                if not (item.kind in (ARGS_CHANGED, STATE_CHANGED) and item.symbol in onto_argument)
            ]
        files_differ = any(item.kind == FILE_CHANGED for item in found)
        runs_changed_code = test_id in reaching
        witnesses = (
            Witnesses(
                base=_recordings(test_id, b, b_run, digests, (*b_repeats, *b_confirming)),
                head=_recordings(test_id, h, h_run, digests, (*h_repeats, *h_confirming)),
                digests=digests,
            )
            if test_id in unstable
            else None
        )
        found = _settled(found, test_id, unstable, runs_changed_code, witnesses)
        if found and not runs_changed_code:
            found = _counts_that_vary(found, unstable.get(test_id))
        carried = (
            carried_state(found, code_changes)
            if code_changes is not None and found and not runs_changed_code
            else None
        )
        instability = unstable.get(test_id)
        again = reproduced.get(test_id)
        # A test that runs changed code keeps its differences, unless the first recordings
        # ran in different environments, or head's ran only the tests the change reaches
        # (``--selective``: a test's state left by the tests before it differs): then only
        # the confirming pairs, recorded in one place and one selection, are evidence of the
        # code (docs/diffing.md, "Reuse", "Selective recording").
        if (
            found
            and again is not None
            and (test_id not in reaching or other_environments or other_selections)
        ):
            gone = [item for item in found if item.key() not in again]
            if gone:
                found = [item for item in found if item.key() in again]
                instability = unstable.setdefault(test_id, Instability())
                # Where the first recordings ran in different environments or selections,
                # that is the likelier cause, whether or not the test runs changed code.
                label = (
                    NOT_REPRODUCED_ONE_ENVIRONMENT
                    if other_environments
                    else NOT_REPRODUCED_ONE_SELECTION
                    if other_selections
                    else NOT_REPRODUCED
                )
                for item in gone:
                    instability.add(label, item)
        if found and code_changes is not None and code_changes.same_program and one_environment:
            # Nothing the tests run differs between the sides: a difference that every
            # recording of each side agreed on (threads racing to print, settled one way per
            # process) is still the test's own, never a change (docs/diffing.md).
            instability = unstable.setdefault(test_id, Instability())
            for item in found:
                instability.add(SAME_PROGRAM, item)
            found = []
        stable_changes[test_id] = found
        if not digests and (_has_digests(b) or _has_digests(h)):
            reasons.append(DIGESTS_NOT_COMPARABLE)
        if not warning_messages_comparable(b.record.get("warnings"), h.record.get("warnings")):
            reasons.append(WARNING_MESSAGES_NOT_COMPARABLE)
        if files_differ and not files_comparable:
            reasons.append(FILE_DIGESTS_NOT_COMPARABLE)
        reasons.extend(run_reasons)
        moved = _shared_node_id_moved(b, h)
        if moved is not None:
            reasons.append(moved)
        may_hide = False
        structure: list[str] = []
        restructured = (
            _restructured(
                b, h, region, digests, test_id, unstable, one_sided_sites, one_sided_state
            )
            if contract and found and not reasons and region is not None and runs_changed_code
            else None
        )
        if reasons:
            status = STATUS_UNVERIFIED
            may_hide = bool(found) or _may_hide(b, h, reasons, run_reasons)
        elif restructured is not None:
            found, structure, behaviour = restructured
            status = STATUS_CHANGED if behaviour else STATUS_RESTRUCTURED
        elif found and _only_one_sided(found, one_sided_sites, one_sided_state):
            status = STATUS_TOUCHED
        elif found:
            status = STATUS_CHANGED
        elif instability is not None:
            status = STATUS_UNSTABLE
        else:
            status = STATUS_UNCHANGED
        if code_changes is not None and code_changes.mapping:
            # Code the mapping paired under another name: one code to the recordings, so no
            # contraction says what moved; said here, and a test that did nothing else is a
            # refactor's (docs/diffing.md, "Identity by mapping").
            renames = [line for line in mapped_lines(h, code_changes) if line not in structure]
            structure = [*structure, *renames]
            if renames and status in (STATUS_UNCHANGED, STATUS_TOUCHED):
                status = STATUS_RESTRUCTURED
        if carried is not None and status in (STATUS_CHANGED, STATUS_UNSTABLE):
            reasons.append(carried)
        if instability is not None:
            reasons.extend(instability.all_reasons())
        diffs.append(
            TestDiff(
                id=test_id,
                base_id=base_ids.get(test_id),
                status=status,
                outcome=outcome,
                reasons=reasons,
                changes=[item.change() for item in _listed(found, region, one_sided_sites)],
                structure=structure,
                may_hide_change=may_hide,
            )
        )

    _untold_edits(entries, diffs)
    _quiet_edits(entries, diffs, code_changes)
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

    def origins_of(test: TestDiff) -> TestOrigins:
        b, h = b_tests.get(test.id), h_tests.get(test.id)
        return TestOrigins.of(b, h, changed_symbols, test.changes, one_sided)

    causes, cause_groups = causes_by_code_change(
        diffs, entries, one_sided_sites, origins_of if code_changes is not None else None
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


#: The gap of a changed symbol whose decision was edited while no test that reaches it
#: behaves otherwise (docs/diffing.md, "Code changes").
GAP_UNTOLD_EDIT = "decision edited, and no test that reaches it behaves otherwise: {edit}"


def _untold_edits(entries: Sequence[CodeChange], diffs: Sequence[TestDiff]) -> None:
    """Add a gap to each changed symbol whose decision was edited in place (one condition
    gone and one come in the same function: itsdangerous' ``age > max_age`` made ``age >=
    max_age``) when none of the tests that reach it changed: each took the same ways with
    either condition, so none tells them apart, and the edit (a fix, or a slip) is untested."""
    loud = {diff.id for diff in diffs if diff.status in (STATUS_CHANGED, STATUS_UNVERIFIED)}

    def predicates(entry: CodeChange, kind: str) -> list[str]:
        return [str(site.get("predicate")) for site in entry.sites if site.get("change") == kind]

    for entry in entries:
        if entry.change != CODE_MODIFIED:
            continue
        # A condition that went to another changed symbol (an extracted helper), or came
        # from one (an inlined helper), moved: it was not edited here.
        elsewhere_added = {
            p for other in entries if other is not entry for p in predicates(other, CODE_ADDED)
        }
        elsewhere_gone = {
            p for other in entries if other is not entry for p in predicates(other, CODE_REMOVED)
        }
        gone = sorted(p for p in predicates(entry, CODE_REMOVED) if p not in elsewhere_added)
        came = sorted(p for p in predicates(entry, CODE_ADDED) if p not in elsewhere_gone)
        # The mapping pairs a decision whose condition was edited with its old self: it is
        # one modified decision that says what it was.
        edits = [
            (str(site.get("was")), str(site.get("predicate")))
            for site in entry.sites
            if site.get("change") == CODE_MODIFIED and site.get("was") is not None
        ]
        if len(gone) == 1 and len(came) == 1:
            edits.append((gone[0], came[0]))
        reached = set(entry.tests_base) | set(entry.tests_head)
        # One condition for another: an edit. Several for several is the function rewritten
        # (marshmallow's bound checks turned into calls of new helpers), which the other gaps
        # and the tests' structure lines say better than a list of conditions would.
        rewritten = (gone or came) and not (len(gone) == 1 and len(came) == 1)
        if len(edits) != 1 or rewritten or not reached or reached & loud:
            continue
        entry.gaps.append(GAP_UNTOLD_EDIT.format(edit=f"`{edits[0][0]}` → `{edits[0][1]}`"))


#: The gap of a changed symbol whose code was edited while every test that runs it behaves
#: exactly as before (docs/diffing.md, "Code changes").
GAP_QUIET_EDIT = (
    "code edited, and the {count} tests that reach it behave as before: "
    "no test tells the edit apart"
)
GAP_QUIET_EDIT_ONE = (
    "code edited, and the 1 test that reaches it behaves as before: no test tells the edit apart"
)


def _quiet_edits(
    entries: Sequence[CodeChange], diffs: Sequence[TestDiff], code_changes: CodeChangeInput | None
) -> None:
    """Add a gap to each modified symbol that tests run when every one of them is
    ``unchanged`` or ``touched`` (humanize's ``"%d Bytes" % bytes_`` made ``% round(bytes_)``,
    reached by 62 tests that pass ints): the first screen would otherwise say nothing of the
    edit, a fix no test checks or a slip no test catches. Not for a symbol that was only
    renamed or only calls a renamed one, nor where a test that runs it changed, was
    restructured (its structure line says what moved), is unstable, added or removed (an
    added test may be the one that checks the edit), nor where the decision-edit gap said it."""
    if code_changes is None:
        return
    renames = code_changes.same_code()
    quiet = {diff.id for diff in diffs if diff.status in (STATUS_UNCHANGED, STATUS_TOUCHED)}
    for entry in entries:
        if entry.change != CODE_MODIFIED or entry.symbol in renames or entry.gaps:
            continue
        reached = set(entry.tests_base) | set(entry.tests_head)
        if not reached or not reached <= quiet:
            continue
        entry.gaps.append(
            GAP_QUIET_EDIT_ONE if len(reached) == 1 else GAP_QUIET_EDIT.format(count=len(reached))
        )


#: The reason a test gets when its differences come from state other tests left (#24.6).
CROSS_TEST_STATE = "cross-test-state"
_GLOBAL = "global:"


def carried_state(found: Sequence[Found], code_changes: CodeChangeInput) -> str | None:
    """``cross-test-state: ...`` when every difference of a test can come from module-level
    state that other tests left, else None (docs/diffing.md, "Cross-test state").

    The caller has checked that the test runs no changed code (its own code, its fixtures
    and everything it called are the same on both sides). Here: some calls present on both
    sides, with the same arguments, found a module-level name (``global:NAME``) in another
    state at their entry, and every difference of the test lies at or below one of those
    calls. Then the test's inputs and code are equal and what differs is what the calls
    found when they started: a cache warmed, a registry filled by earlier tests (their
    order changed, tests were added before it). Never when the code change binds that name
    (``_CACHE = {}`` became ``{"a": 1}``: a change of the code, not of the order) or a
    changed module or class body does more than bind names (its effect on state is not
    known). Values read through ``self`` or a class (``self._CACHE``) have no content bucket
    (``class attribute``), so such caches are not seen here: those tests stay plain."""
    if any(change.opaque for change in code_changes.symbols):
        return None
    bound = {f"{_GLOBAL}{n}" for c in code_changes.symbols for n in (*c.bound, *c.one_sided_names)}
    roots: dict[tuple[str | None, Path], tuple[Found, list[str]]] = {}
    for item in found:
        if item.kind != STATE_CHANGED:
            continue
        targets = sorted(
            {
                str(fact.get("target"))
                for side in (item.base or (), item.head or ())
                for fact in side
                if isinstance(fact, Mapping)
                and fact.get("when") == "entry"
                and str(fact.get("target", "")).startswith(_GLOBAL)
            }
            - bound
        )
        if targets:
            roots[(item.phase, item.path)] = (item, targets)
    for item in found:
        if item.kind == ARGS_CHANGED:  # the call's inputs differ: not only its state
            roots.pop((item.phase, item.path), None)
    if not roots:
        return None
    for item in found:
        if not any(item.phase == phase and item.path[: len(path)] == path for phase, path in roots):
            return None
    (item, targets), *others = sorted(roots.values(), key=lambda r: (len(r[0].path), r[0].path))
    target = targets[0]

    def buckets(side: Any) -> str:
        seen = sorted(
            str(f.get("bucket"))
            for f in side or ()
            if isinstance(f, Mapping) and f.get("when") == "entry" and f.get("target") == target
        )
        return "/".join(seen) or "the same"

    more = len(targets) - 1 + len(others)
    also = f" (and {more} more)" if more else ""
    return (
        f"{CROSS_TEST_STATE}: {target} {buckets(item.base)} {ARROW} {buckets(item.head)} at entry "
        f"of {item.symbol or item.path[-1]}{also}, called with the same arguments, and neither "
        "the test nor the code it runs changed: state other tests left (their order, tests "
        "added before it); -p no:randomly, a fixed order or a fixture that resets it "
        "compares the test alone"
    )


def _listed(
    found: Sequence[Found], region: Region | None, one_sided_sites: frozenset[str]
) -> list[Found]:
    """What a test's entry lists: not the state facts that only say its code looked up a
    method that exists on one side only, or names a class attribute on one side only (the
    code change says so already: cachetools' ``__setitem__`` naming ``self._make_room`` where
    it named ``self.popitem``), nor a decision that the change only renamed
    (:func:`_renamed_decisions`)."""
    if region is None:
        return list(found)
    renamed = _renamed_decisions(found, one_sided_sites)
    return [
        item
        for item in found
        if id(item) not in renamed
        and not (
            item.kind == STATE_CHANGED
            and (
                region.looks_up_new_code(facts := [*(item.base or ()), *(item.head or ())])
                or all(_one_sided_fact(fact, frozenset(), None) for fact in facts)
            )
        )
    ]


def _renamed_decisions(found: Sequence[Found], one_sided_sites: frozenset[str]) -> set[int]:
    """The decisions whose id the change moved and nothing else: one only in base, one only
    in head, both ids the change removed or added, in one function, testing the same
    condition with the same outcomes (a decision's id says how the names it tests were bound,
    so renaming a helper that binds one, ``with self._get_stream() as stream``, gives the
    decisions below it new ids). In a test that changed for another reason they are what
    the structure line already says, not a second change."""
    gone: dict[tuple[object, ...], list[Found]] = {}
    for item in found:
        if item.kind == BRANCH_CHANGED and item.head is None and item.site in one_sided_sites:
            gone.setdefault(_decision_key(item, item.base), []).append(item)
    pairs: set[int] = set()
    for item in found:
        if item.kind != BRANCH_CHANGED or item.base is not None:
            continue
        if item.site not in one_sided_sites:
            continue
        twins = gone.get(_decision_key(item, item.head))
        if twins:
            pairs.update((id(twins.pop()), id(item)))
    return pairs


def _decision_key(item: Found, outcomes: object) -> tuple[object, ...]:
    counted = tuple(sorted(outcomes.items())) if isinstance(outcomes, Mapping) else None
    return (item.phase, item.symbol, item.predicate, item.path, counted)


def _recordings(
    test_id: str,
    first: TestIndex,
    run: Mapping[str, Any],
    digests: bool,
    further: Iterable[Again],
) -> list[TestIndex]:
    """Every recording of one side of a test whose values compare with the first's: the
    first, its repeats, its confirmations (a recording that lacks the test says nothing)."""
    out = [first]
    for tests, again_run in further:
        test = tests.get(test_id)
        if test is not None and (not digests or digests_comparable(run, again_run)):
            out.append(test)
    return out


def _settled(
    found: list[Found],
    test_id: str,
    unstable: dict[str, Instability],
    runs_changed_code: bool,
    witnesses: Witnesses | None = None,
) -> list[Found]:
    """``found`` without what is timing by its nature (set apart as unstable) and without
    what differed between recordings of one commit: of a field that did, what every
    recording of base and every recording of head show alike (``witnesses``) is kept, the
    rest set apart (docs/diffing.md, "Instability is per field")."""
    timed = [
        item
        for item in found
        if item.timing and not (runs_changed_code and item.timing in TIMING_UNLESS_CHANGED)
    ]
    if timed:
        taken = {id(item) for item in timed}
        found = [item for item in found if id(item) not in taken]
        for item in timed:
            unstable.setdefault(test_id, Instability()).add(str(item.timing), item)
    instability = unstable.get(test_id)
    if instability is not None:
        kept: list[Found] = []
        for item in found:
            if not instability.covers(item, products=not runs_changed_code):
                kept.append(item)
            elif witnesses is not None and (held := witnesses.held(item)) is not None:
                kept.append(held)
        found = kept
    return found


def _restructured(
    b: TestIndex,
    h: TestIndex,
    region: Region,
    digests: bool,
    test_id: str,
    unstable: dict[str, Instability],
    one_sided_sites: frozenset[str],
    one_sided_state: frozenset[str],
) -> tuple[list[Found], list[str], bool] | None:
    """For a test that ran code the change added or removed: its differences once the calls
    to that code are contracted out (docs/diffing.md, "Structure"), what moved, and whether
    any behaviour changed; None when it ran no such code or a side cannot be contracted
    exactly (then it is judged on its differences as recorded)."""
    if not any(
        runs_one_sided_code(test, region) or imports_modules(test, region) for test in (b, h)
    ):
        return None
    cb, ch = contract(b, region), contract(h, region)
    if cb is None or ch is None:
        return None
    # A decision of changed code was compared by what it tests (``~/if[...]``); it is
    # reported by its real name, which its own function gives (several functions may hold
    # the same condition).
    found = [
        replace(item, site=f"{item.symbol}{item.site[1:]}")
        if item.site and item.site.startswith(MOVED_SITE) and item.symbol
        else item
        for item in compare_tests(cb.test, ch.test, digests=digests)
    ]
    found = _settled(found, test_id, unstable, True)
    # Decisions in one side's code only: those the change added or removed, and every
    # decision of a function that exists on one side only.
    allowed = one_sided_sites | {
        item.site for item in found if item.site and item.site.rsplit("/", 1)[0] in region.one_sided
    }
    behaviour = bool(found) and not _only_one_sided(found, allowed, one_sided_state)
    return found, summaries(cb, ch, region, behaviour=behaviour), behaviour


def _module_symbols(*documents: Mapping[str, Any]) -> set[str]:
    """The symbols of kind ``module`` in the documents' symbol tables."""
    return {
        str(entry.get("id"))
        for document in documents
        for entry in document.get("symbols") or ()
        if isinstance(entry, Mapping) and entry.get("kind") == SYMBOL_KIND_MODULE
    }


def _only_one_sided(
    found: Sequence[Found], one_sided_sites: frozenset[str], one_sided_state: frozenset[str]
) -> bool:
    """Whether every difference is about something that exists in one side's code only: a
    decision the change added or removed, or a state fact about a module-level name bound on
    one side only (tomlkit's new ``_BARE_CR`` regex, read by a function whose taken path
    never uses it).

    Such a test ran code the change added or removed and did exactly the same otherwise:
    every call, count, exit, value, stand-in, egress and other state fact is equal (any of
    those would be another entry). It is ``touched``, not ``changed``; how each new decision
    was taken is still listed under its code change.
    """
    for item in found:
        if item.kind == BRANCH_CHANGED:
            if item.site not in one_sided_sites:
                return False
            if item.base is not None and item.head is not None:
                return False
        elif item.kind == STATE_CHANGED:
            facts = [*(item.base or ()), *(item.head or ())]
            if not all(_one_sided_fact(fact, one_sided_state, item.symbol) for fact in facts):
                return False
        else:
            return False
    return True


def _one_sided_fact(fact: object, one_sided_state: frozenset[str], symbol: str | None) -> bool:
    """A state fact seen on one side only that says nothing about behaviour: about a name
    bound on one side only; about a field or global the function names on one side only
    (parse's ``Result.__contains__`` given a branch for ints that reads ``self.fixed``: the
    recorder reads what the code names at every call, so the fact came with the code, not
    with the call, and ``test_contains``, which passes names, read as ``changed``); or a
    class attribute the code names on one side only (a method the changed function calls, or
    no longer calls, through ``self``: itsdangerous' ``unsign`` naming ``self._check_age``
    where it named ``self.get_timestamp`` made 91 tests ``changed`` that never reached
    either). A field that turns from an instance value into a class attribute is a fact on
    each side with another bucket, never only this."""
    if not isinstance(fact, Mapping):
        return False
    target = fact.get("target")
    return (
        target in one_sided_state
        or f"{symbol} {target}" in one_sided_state
        or fact.get("bucket") == CLASS_ATTRIBUTE_BUCKET
    )


def _shared_count(test: TestIndex) -> int:
    """How many collected items carried the test's node id (its disclosed
    ``shared-node-id:N``); 1 when none other did."""
    for fact in test.record.get("disclosed") or ():
        word, _, count = str(fact).partition(":")
        if word == SHARED_NODE_ID and count.isdigit():
            return int(count)
    return 1


def _shared_node_id_moved(b: TestIndex, h: TestIndex) -> str | None:
    """The reason a test whose id is a place among items of one node id cannot be trusted
    to name the same case on both sides: there are more or fewer such items in head. (The
    same number reordered cannot be told from the ids: its cases read as changed.)"""
    base, head = _shared_count(b), _shared_count(h)
    if base == head:
        return None
    return (
        f"{SHARED_NODE_ID_MOVED}: {base} in base, {head} in head; each is named by its place "
        "in collection order, so this id may name another case on each side"
    )


def _may_hide(b: TestIndex, h: TestIndex, reasons: list[str], run_reasons: list[str]) -> bool:
    """Whether an unverified test with no observed difference could still hide a change.

    It could when a run is incomplete, when digests cannot be compared (a changed value of
    the same type would be invisible), when its id may name another case on each side (items
    that share a node id, in another number), or when the two sides are unverified for different
    reasons (whatever one side could not see, the other saw, or saw differently). A test
    unverified for exactly the same reasons on both sides lacked the same evidence twice, and
    everything the recorder did see is equal: it stays ``unverified`` (never ``unchanged``)
    but does not fail the default gate; ``--fail-on unverified`` makes it fail.
    """
    if (
        run_reasons
        or DIGESTS_NOT_COMPARABLE in reasons
        or WARNING_MESSAGES_NOT_COMPARABLE in reasons
        or any(reason.startswith(SHARED_NODE_ID_MOVED) for reason in reasons)
        or FILE_DIGESTS_NOT_COMPARABLE in reasons
    ):
        return True
    base = set(b.record.get("unverified_reasons") or ()) if not b.record.get("verified") else set()
    head = set(h.record.get("unverified_reasons") or ()) if not h.record.get("verified") else set()
    return base != head


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
