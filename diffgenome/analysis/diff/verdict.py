"""The verdict of each test: its status (``unchanged``, ``changed``, ``added``, ``removed``,
``unverified``, ``unstable``, ``touched``, ``restructured``), the reasons for it, and the
changes its entry lists.

The verdict is deliberately pessimistic: a test is ``unchanged`` only when both recordings
are verified, both runs are complete, their digests are comparable and nothing differs.
What differs between recordings of one commit (:mod:`~diffgenome.analysis.diff.instability`)
is set apart as unstable instead of being reported as a change; what the change only
restructured (calls to code one side has, contracted out) is ``restructured``; what only
concerns code one side has is ``touched``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from diffgenome.analysis.diff.agreement import Witnesses
from diffgenome.analysis.diff.align import Path, TestIndex
from diffgenome.analysis.diff.codechanges import CodeChangeInput
from diffgenome.analysis.diff.compare import (
    Found,
    StabilityKey,
    compare_tests,
    one_sided_stand_ins,
)
from diffgenome.analysis.diff.describe import ARROW
from diffgenome.analysis.diff.instability import (
    NOT_REPRODUCED,
    NOT_REPRODUCED_ONE_ENVIRONMENT,
    NOT_REPRODUCED_ONE_SELECTION,
    SAME_PROGRAM,
    Again,
    Instability,
    counts_that_vary,
    recordings_of,
    settled,
)
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
from diffgenome.analysis.diff.warned import warning_messages_comparable
from diffgenome.analysis.models import OutcomePair, TestDiff, TestStatus
from diffgenome.protocol.formats import ARCHIVE_CONTENT
from diffgenome.protocol.selection import SHARED_NODE_ID
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    BRANCH_CHANGED,
    CLASS_ATTRIBUTE_BUCKET,
    FILE_CHANGED,
    STATE_CHANGED,
    STATUS_ADDED,
    STATUS_CHANGED,
    STATUS_REMOVED,
    STATUS_RESTRUCTURED,
    STATUS_TOUCHED,
    STATUS_UNCHANGED,
    STATUS_UNSTABLE,
    STATUS_UNVERIFIED,
)

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


def run_reasons(run: Mapping[str, Any], side: str) -> list[str]:
    """Why a run (``side``: base or head) leaves every test of it unverified: it is incomplete."""
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
    found = settled(found, test_id, unstable, True)
    # Decisions in one side's code only: those the change added or removed, and every
    # decision of a function that exists on one side only.
    allowed = one_sided_sites | {
        item.site for item in found if item.site and item.site.rsplit("/", 1)[0] in region.one_sided
    }
    behaviour = bool(found) and not _only_one_sided(found, allowed, one_sided_state)
    return found, summaries(cb, ch, region, behaviour=behaviour), behaviour


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


@dataclass(slots=True)
class Evidence:
    """What the verdict of every test of one diff weighs, gathered once by
    :func:`~diffgenome.analysis.diff.document.diff_documents`."""

    #: Each side's tests by id (base's under the ids :func:`pair_renumbered` pairs them by),
    #: and their runs.
    b_tests: dict[str, TestIndex]
    h_tests: dict[str, TestIndex]
    b_run: Mapping[str, Any]
    h_run: Mapping[str, Any]
    #: Head id -> the base id a renumbered case had.
    base_ids: dict[str, str]
    #: Whether the two runs' value digests compare (one key); whether their written files do.
    digests: bool
    files_comparable: bool
    #: The reasons every test is unverified for (an incomplete run).
    run_reasons: list[str]
    #: What differed between recordings of one commit, per test (filled as tests are judged).
    unstable: dict[str, Instability]
    #: Each side's further recordings: its repeats, then its confirmations.
    b_further: tuple[Again, ...]
    h_further: tuple[Again, ...]
    #: Parametrized functions whose case ids moved between recordings of one commit.
    moving: dict[str, str]
    #: Base's tests head did not run (``diff --selective``).
    carried_tests: frozenset[str]
    code_changes: CodeChangeInput | None
    #: The tests that run changed code.
    reaching: set[str]
    #: Per confirmed test, what differs between the confirming pairs of base and head.
    reproduced: dict[str, set[StabilityKey]]
    #: The first recordings ran in different environments; head's ran another selection;
    #: both sides ran in one environment the diff knows.
    other_environments: bool
    other_selections: bool
    one_environment: bool
    #: Whether calls to one-sided code are contracted out (``False``: judged as recorded).
    contract: bool
    region: Region | None
    one_sided_sites: frozenset[str]
    one_sided_state: frozenset[str]
    #: Methods moved onto the class of one of their parameters.
    onto_argument: frozenset[str]


def verdict(test_id: str, evidence: Evidence) -> tuple[TestDiff, list[Found] | None]:
    """The entry of one test, with its status and reasons; and, for a test both sides
    recorded, its differences that held (what drift is judged on), else None."""
    b, h = evidence.b_tests.get(test_id), evidence.h_tests.get(test_id)
    outcome = OutcomePair(base=_outcome(b), head=_outcome(h))
    reasons = _test_reasons(b, "base") + _test_reasons(h, "head")
    if b is None or h is None:
        return _one_side(test_id, b, h, outcome, reasons, evidence), None
    return _both_sides(test_id, b, h, outcome, reasons, evidence)


def _one_side(
    test_id: str,
    b: TestIndex | None,
    h: TestIndex | None,
    outcome: OutcomePair,
    reasons: list[str],
    evidence: Evidence,
) -> TestDiff:
    """A test that one side did not record: carried, added, removed, unstable (its case id
    moved) or unverified (that side's run is incomplete)."""
    status: Status
    if h is None and b is not None and test_id in evidence.carried_tests:
        return TestDiff(
            id=test_id,
            status=STATUS_UNCHANGED,
            outcome=outcome,
            reasons=[CARRIED],
            may_hide_change=False,
        )
    moving = evidence.moving
    missing_side, missing_run = ("base", evidence.b_run) if b is None else ("head", evidence.h_run)
    if not missing_run.get("complete", True):
        reasons = [f"not recorded in {missing_side}, whose run is incomplete", *reasons]
        status = STATUS_UNVERIFIED
    elif test_id.partition("[")[0] in moving:
        reasons = [moving[test_id.partition("[")[0]], *reasons]
        status = STATUS_UNSTABLE
    else:
        status = STATUS_ADDED if b is None else STATUS_REMOVED
    one_side = b if h is None else h
    return TestDiff(
        id=test_id,
        base_id=evidence.base_ids.get(test_id),
        status=status,
        outcome=outcome,
        reasons=reasons,
        changes=[found.change() for found in one_sided_stand_ins(one_side, base_side=h is None)]
        if one_side is not None and status in (STATUS_ADDED, STATUS_REMOVED)
        else [],
        may_hide_change=status == STATUS_UNVERIFIED,
    )


def _both_sides(
    test_id: str,
    b: TestIndex,
    h: TestIndex,
    outcome: OutcomePair,
    reasons: list[str],
    evidence: Evidence,
) -> tuple[TestDiff, list[Found]]:
    """A test both sides recorded: its differences, less what is unstable, judged."""
    digests, unstable, code_changes = evidence.digests, evidence.unstable, evidence.code_changes
    region, one_sided_sites = evidence.region, evidence.one_sided_sites
    one_sided_state, onto_argument = evidence.one_sided_state, evidence.onto_argument
    other_environments, other_selections = evidence.other_environments, evidence.other_selections
    reaching, run_reasons = evidence.reaching, evidence.run_reasons
    status: Status
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
            base=recordings_of(test_id, b, evidence.b_run, digests, evidence.b_further),
            head=recordings_of(test_id, h, evidence.h_run, digests, evidence.h_further),
            digests=digests,
        )
        if test_id in unstable
        else None
    )
    found = settled(found, test_id, unstable, runs_changed_code, witnesses)
    if found and not runs_changed_code:
        found = counts_that_vary(found, unstable.get(test_id))
    carried = (
        carried_state(found, code_changes)
        if code_changes is not None and found and not runs_changed_code
        else None
    )
    instability = unstable.get(test_id)
    again = evidence.reproduced.get(test_id)
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
    if (
        found
        and code_changes is not None
        and code_changes.same_program
        and evidence.one_environment
    ):
        # Nothing the tests run differs between the sides: a difference that every
        # recording of each side agreed on (threads racing to print, settled one way per
        # process) is still the test's own, never a change (docs/diffing.md).
        instability = unstable.setdefault(test_id, Instability())
        for item in found:
            instability.add(SAME_PROGRAM, item)
        found = []
    stable = found
    if not digests and (_has_digests(b) or _has_digests(h)):
        reasons.append(DIGESTS_NOT_COMPARABLE)
    if not warning_messages_comparable(b.record.get("warnings"), h.record.get("warnings")):
        reasons.append(WARNING_MESSAGES_NOT_COMPARABLE)
    if files_differ and not evidence.files_comparable:
        reasons.append(FILE_DIGESTS_NOT_COMPARABLE)
    reasons.extend(run_reasons)
    moved = _shared_node_id_moved(b, h)
    if moved is not None:
        reasons.append(moved)
    may_hide = False
    structure: list[str] = []
    restructured = (
        _restructured(b, h, region, digests, test_id, unstable, one_sided_sites, one_sided_state)
        if evidence.contract and found and not reasons and region is not None and runs_changed_code
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
    entry = TestDiff(
        id=test_id,
        base_id=evidence.base_ids.get(test_id),
        status=status,
        outcome=outcome,
        reasons=reasons,
        changes=[item.change() for item in _listed(found, region, one_sided_sites)],
        structure=structure,
        may_hide_change=may_hide,
    )
    return entry, stable
