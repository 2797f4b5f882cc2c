"""Instability: what differs between recordings of one commit, set apart as unstable
instead of being reported as a change.

Recordings of one side are compared with each other (``--repeat``'s, and the two
confirming recordings of the tests that differ); what differs among them, what is timing by
its nature (finalizers, other tests' threads), the counts of a site seen to vary at another
call path, and what the confirming pairs of base and head no longer show are each unstable,
with a reason that says which. Only what every recording of base and every recording of head
show alike, inside a field that varies (:mod:`~diffgenome.analysis.diff.agreement`), stays
a change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from diffgenome.analysis.diff.agreement import Witnesses
from diffgenome.analysis.diff.align import Path, TestIndex, index_test, index_tests
from diffgenome.analysis.diff.compare import (
    PRESENCE_KINDS,
    TIMING_UNLESS_CHANGED,
    Found,
    StabilityKey,
    compare_tests,
)
from diffgenome.analysis.diff.describe import ARROW, describe
from diffgenome.analysis.diff.pairing import digests_comparable, renamed
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    BRANCH_CHANGED,
    CALL_COUNT_CHANGED,
    EXIT_CHANGED,
    IMPORT_TEST_ID,
    RESULT_CHANGED,
    STATE_CHANGED,
    STATUS_UNSTABLE,
)

# What a call makes of its arguments: when the arguments themselves differ between recordings
# of one commit (an elapsed time, a timestamp), so may its result, its exits, the state it
# leaves and the decisions it takes on them (google-api-core: a stall control fed
# ``time.monotonic()`` deltas left a lag of zero in one run and a positive one in the next).
_PRODUCTS = frozenset({RESULT_CHANGED, EXIT_CHANGED, STATE_CHANGED, BRANCH_CHANGED})


MAX_UNSTABLE_REASONS = 20


def unstable_reason(where: str, what: str) -> str:
    """A test's reason for an item set apart as unstable: ``unstable (<where>): <what>``,
    the form the export documents (``models.py``), so that ``where`` (which recordings
    showed it vary) can be read back by :func:`unstable_where`."""
    return f"{STATUS_UNSTABLE} ({where}): {what}"


def unstable_where(reason: str) -> str | None:
    """The ``where`` of a reason :func:`unstable_reason` wrote; None for any other."""
    prefix = f"{STATUS_UNSTABLE} ("
    end = reason.find("): ", len(prefix)) if reason.startswith(prefix) else -1
    return reason[len(prefix) : end] if end >= 0 else None


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
            self.reasons.append(unstable_reason(where, describe(found.change())))
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


#: A further recording of one side: its tests by id (paired ids applied), and its run.
Again = tuple[dict[str, TestIndex], Mapping[str, Any]]


def further_recordings(
    documents: Iterable[Mapping[str, Any]], names: Mapping[str, str]
) -> list[Again]:
    """The further recordings of one side (``documents``), each indexed, its tests under the
    ids ``names`` pairs them by."""
    return [(renamed(index_tests(doc), names), doc.get("run") or {}) for doc in documents]


def from_repeats(
    primary: Mapping[str, TestIndex],
    run: Mapping[str, Any],
    repeats: Iterable[Again],
    side: str,
    into: dict[str, Instability],
) -> None:
    """What differs between the first recording of one side (``primary``, of ``run``) and
    each of its ``--repeat`` recordings, added to ``into`` per test as unstable."""
    for again, repeat_run in repeats:
        _mask(primary, again, digests_comparable(run, repeat_run), side, into)


def _mask(
    first: Mapping[str, TestIndex],
    again: Mapping[str, TestIndex],
    digests: bool,
    label: str,
    into: dict[str, Instability],
) -> None:
    """Whatever differs between two recordings of one side's tests, as unstable under
    ``label``."""
    for test_id, test in first.items():
        twin = again.get(test_id)
        if twin is None:
            continue
        for found in compare_tests(test, twin, digests=digests):
            into.setdefault(test_id, Instability()).add(label, found, one_commit=True)


def from_confirmation(
    recordings: Sequence[Again], side: str, into: dict[str, Instability]
) -> set[str]:
    """What differs between two recordings of one side's differing tests, made after the
    first comparison (``diffgenome diff`` confirms by default).

    The two confirming recordings select the same tests, so what running a few tests alone
    changes (a module fixture set up by another test, a cache warmed earlier) is the same in
    both and masks nothing; only the clock, randomness and scheduling differ between them.
    They are never compared with the first recordings, whose selection differs. Returns the
    ids of the tests confirmed (never ``<import>``, which is masked but not confirmed):
    one confirming recording alone confirms its tests too, where confirmation stopped after
    a round that settled them (:func:`first_round_settles`).
    """
    if not recordings:
        return set()
    first, first_run = recordings[0]
    if len(recordings) < 2:
        return set(first) - {IMPORT_TEST_ID}
    digests = digests_comparable(first_run, recordings[1][1])
    label = f"{side} confirmation"
    for again, _ in recordings[1:]:
        # <import> of a few modules says nothing about the whole import, so it is never
        # counted as confirmed; but what differs between two imports of the same modules
        # at one commit (a start time taken at import: boltons.ecoutils) is noise there
        # as anywhere, and masks that field (an identical tree was `<import> changed`).
        _mask(first, again, digests, label, into)
    return set(first) - {IMPORT_TEST_ID}


def first_round_settles(
    first: tuple[Mapping[str, Any], Mapping[str, Any]],
    again: tuple[Mapping[str, Any], Mapping[str, Any]],
    pairs: Collection[tuple[str, str]],
) -> bool:
    """Whether confirmation's first round (``again``: its recordings of base and head)
    leaves its second nothing to decide for the tests ``pairs`` (base id, head id): where
    each side's confirming recording, taken as a repeat of that side's first recording
    (``first``), masks none of what differs between the first recordings.

    A second round can only mask: it turns a change into ``unstable``, never the reverse.
    So stopping early may show as a change noise that none of the four recordings showed,
    and hides nothing. Only the fields that differ between base and head are asked about:
    a confirming recording selects a few tests, so what the selection moves (a module's
    fixture set up by the first test confirmed, termcolor's ``setup_module``) differs from
    the first recording elsewhere, and says nothing of them. A test missing from any
    recording, ``<import>`` (a confirming recording imports a few modules), values that do
    not compare by digest, a first recording that shows no difference, all answer no.
    """
    runs = [document.get("run") or {} for document in (*first, *again)]
    if not pairs or not all(digests_comparable(runs[0], run) for run in runs[1:]):
        return False
    base_ids = {b for b, _ in pairs} - {IMPORT_TEST_ID}
    head_ids = {h for _, h in pairs} - {IMPORT_TEST_ID}
    b_first, h_first = _records(first[0], base_ids), _records(first[1], head_ids)
    b_again, h_again = _records(again[0], base_ids), _records(again[1], head_ids)
    for base_id, head_id in pairs:
        if base_id == IMPORT_TEST_ID or head_id == IMPORT_TEST_ID:
            return False
        b1, h1 = b_first.get(base_id), h_first.get(head_id)
        b2, h2 = b_again.get(base_id), h_again.get(head_id)
        if b1 is None or h1 is None or b2 is None or h2 is None:
            return False
        found = compare_tests(b1, h1, digests=True)
        if not found:
            return False
        seen = Instability()
        for side, one, other in (("base", b1, b2), ("head", h1, h2)):
            for item in compare_tests(one, other, digests=True):
                seen.add(side, item, one_commit=True)
        if any(seen.covers(item) or seen.counts_varied(item) for item in found):
            return False
    return True


def _records(document: Mapping[str, Any], wanted: set[str]) -> dict[str, TestIndex]:
    """The tests ``wanted`` of a genome document, indexed (a whole suite's run is not)."""
    out: dict[str, TestIndex] = {}
    for record in document.get("tests") or ():
        test_id = str(record.get("id"))
        if test_id in wanted and test_id not in out:
            out[test_id] = index_test(record)
    return out


def moving_case_ids(recordings: Sequence[Mapping[str, Any]], side: str) -> dict[str, str]:
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
            moving[function] = unstable_reason(
                f"{side} confirmation",
                f"the case ids of {function} differ between two recordings of one commit "
                f"({example}), so a case on one side only is its id moving, not a test added "
                "or removed",
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


def counts_that_vary(found: list[Found], instability: Instability | None) -> list[Found]:
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


def reproduced_differences(
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


def replicated_in_context(
    first: tuple[Mapping[str, TestIndex], Mapping[str, TestIndex]],
    context: tuple[Sequence[Again], Sequence[Again]],
    test_ids: Iterable[str],
) -> dict[str, set[StabilityKey]]:
    """Per test of ``test_ids``, what differs between base and head in the recordings of
    every test made again (confirmation "in context", not narrowed) where each side shows
    what its first recording showed: the first pair's difference made again, field for
    field. A field whose value moved between a side's first recording and its recording
    in context is no such evidence (a decision on the time a loaded run takes, which went
    one way in the first pair, can go either way in any other): it is left out."""
    b_first, h_first = first
    b_context, h_context = context
    if not b_context or not h_context:
        return {}
    (b_again, b_run), (h_again, h_run) = b_context[0], h_context[0]
    digests = digests_comparable(b_run, h_run)
    out: dict[str, set[StabilityKey]] = {}
    for test_id in test_ids:
        b1, h1 = b_first.get(test_id), h_first.get(test_id)
        b2, h2 = b_again.get(test_id), h_again.get(test_id)
        if b1 is None or h1 is None or b2 is None or h2 is None:
            continue
        moved = {item.key() for item in compare_tests(b1, b2, digests=digests)}
        moved |= {item.key() for item in compare_tests(h1, h2, digests=digests)}
        out[test_id] = {item.key() for item in compare_tests(b2, h2, digests=digests)} - moved
    return out


def recordings_of(
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


def settled(
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
