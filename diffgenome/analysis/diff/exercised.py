"""Changed code against recorded behaviour: which tests ran each changed symbol, what its
changed decisions did, and what no test exercised or tells apart (the gaps a reviewer should
look at): those the recordings show, and, once the tests have their verdicts, an edit no test
that reaches it behaves otherwise under (:func:`untold_edits`, :func:`quiet_edits`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from diffgenome.analysis.diff.align import TestIndex
from diffgenome.analysis.diff.codechanges import CodeChangeInput, SymbolChange
from diffgenome.analysis.diff.drift import stand_in_users
from diffgenome.analysis.models import CodeChange, TestDiff
from diffgenome.protocol.vocab import (
    CODE_ADDED,
    CODE_MODIFIED,
    CODE_REMOVED,
    IMPORT_TEST_ID,
    STATUS_CHANGED,
    STATUS_TOUCHED,
    STATUS_UNCHANGED,
    STATUS_UNVERIFIED,
    TYPE_CALL,
)

GAP_NOT_EXECUTED = "not executed by any test"
#: How protocol/naming.py names ``@typing.overload`` stubs (``f[overload]``, ``f[overload]#1``).
OVERLOAD_MARK = "[overload]"
GAP_BEFORE_RECORDING = (
    "ran before recording started (imported while pytest started up, e.g. by conftest.py): "
    "its module-level code is not recorded"
)
GAP_ONLY_STAND_IN = "reached only through a stand-in"
GAP_OUTCOME = "decision outcome never observed: {site} {outcome}"
#: Conditions that are constants (``while True``): the outcome they can never take is no
#: gap, nor the one they always take, which CPython compiles to no jump at all, so that no
#: recording can observe it.
_CONSTANT = frozenset({"True", "False", "1", "0", "None"})
#: How protocol/naming.py names an ``assert`` site (``<symbol>/assert[<digest>]``).
ASSERT_MARK = "/assert["


@dataclass(slots=True)
class Observed:
    """What one side's recording saw, by symbol and by decision site."""

    tests_of: dict[str, set[str]] = field(default_factory=dict)
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    stand_ins: dict[str, set[str]] = field(default_factory=dict)


def observe(
    tests: Mapping[str, TestIndex], symbols: Collection[str], sites: Collection[str]
) -> Observed:
    """Which tests called each of ``symbols`` and the summed outcomes of each of ``sites``
    (the changed code: a diff asks nothing else of the other calls and decisions, which
    are most of a large suite's nodes)."""
    seen = Observed(stand_ins=stand_in_users(tests))
    wanted_symbols, wanted_sites = frozenset(symbols), frozenset(sites)
    tests_of, outcomes = seen.tests_of, seen.outcomes
    for test_id, test in tests.items():
        for node in test.raw_nodes():
            symbol = node.get("symbol")
            if symbol in wanted_symbols and node.get("type") == TYPE_CALL:
                tests_of.setdefault(str(symbol), set()).add(test_id)
        for branch in test.raw_branches():
            site = branch.get("site")
            if site not in wanted_sites:
                continue
            counts = branch.get("outcomes") or {}
            total = outcomes.setdefault(str(site), {"true": 0, "false": 0})
            total["true"] += int(counts.get("true") or 0)
            total["false"] += int(counts.get("false") or 0)
    return seen


def test_code_paths(*documents: Mapping[str, object]) -> frozenset[str]:
    """Files that the recordings call test code (their symbols' origin is ``test``)."""
    paths: set[str] = set()
    for document in documents:
        symbols = document.get("symbols")
        for symbol in symbols if isinstance(symbols, list) else ():
            if isinstance(symbol, Mapping) and symbol.get("origin") == "test":
                path = symbol.get("path")
                if isinstance(path, str):
                    paths.add(path)
    return frozenset(paths)


def code_change_entries(
    code: CodeChangeInput,
    base: Mapping[str, TestIndex],
    head: Mapping[str, TestIndex],
    test_paths: frozenset[str] = frozenset(),
    is_test: Callable[[str], bool] | None = None,
) -> list[CodeChange]:
    """One entry per changed symbol. A gap names only project code whose evidence the
    recorder would have collected: test code (tests, fixtures, helpers under a test root,
    ``test_paths`` that the recordings call test code or ``is_test`` says is) has no gaps,
    its decisions are not recorded and what runs it is pytest; an ``assert`` in project code
    that never failed is no untaken path (its false outcome would be a bug), so only its true
    outcome can be a gap."""
    symbols = [change.symbol for change in code.symbols]
    changed_sites = [site.site for change in code.symbols for site in change.sites]
    b_seen = observe(base, [*symbols, *code.readers()], changed_sites)
    h_seen = observe(head, [*symbols, *code.readers()], changed_sites)
    imports = head.get(IMPORT_TEST_ID)
    unseen_modules = set(imports.record.get("before_recording") or ()) if imports else set()
    entries: list[CodeChange] = []
    for change in code.symbols:
        tests_head = h_seen.tests_of.get(change.symbol, set())
        in_tests = change.path in test_paths or bool(
            is_test is not None and change.path and is_test(change.path)
        )
        sites: list[dict[str, object]] = []
        gaps: list[str] = []
        for site in change.sites:
            b_out, h_out = b_seen.outcomes.get(site.site), h_seen.outcomes.get(site.site)
            sites.append(
                {
                    "site": site.site,
                    "change": site.change,
                    "predicate": site.predicate,
                    **({"was": site.was} if site.was is not None else {}),
                    "line": site.line,
                    "base": dict(b_out) if b_out is not None else None,
                    "head": dict(h_out) if h_out is not None else None,
                }
            )
            if (
                not in_tests
                and change.change != CODE_REMOVED
                and site.change != CODE_REMOVED
                and tests_head
            ):
                for outcome in ("true", "false"):
                    if outcome == "false" and ASSERT_MARK in site.site:
                        continue
                    if site.predicate in _CONSTANT:
                        continue  # ``while True``: no path to test, no jump to observe
                    if not (h_out or {}).get(outcome):
                        gaps.append(GAP_OUTCOME.format(site=site.site, outcome=outcome))
        # An @overload stub is a type declaration: it never runs, so "not executed" is no gap.
        stub = OVERLOAD_MARK in change.symbol
        if change.change != CODE_REMOVED and not tests_head and not stub and not in_tests:
            if change.symbol in unseen_modules:
                gap = GAP_BEFORE_RECORDING
            elif change.symbol in h_seen.stand_ins:
                gap = GAP_ONLY_STAND_IN
            else:
                gap = GAP_NOT_EXECUTED
            gaps.insert(0, gap)
        entries.append(
            CodeChange(
                symbol=change.symbol,
                change=change.change,
                tests_base=sorted(_reaching(b_seen, change)),
                tests_head=sorted(_reaching(h_seen, change)),
                sites=sites,
                gaps=gaps,
                path=change.path,
                line=change.line,
                renamed_from=change.renamed_from,
            )
        )
    return entries


def _reaching(seen: Observed, change: SymbolChange) -> set[str]:
    """The tests that reach ``change``: those that ran it, and for a modified module or class
    body those that ran a function reading a name it binds. parse 1.20.2 rewrote its
    module-level ``PARSE_RE``, which only ``<import>`` runs: without its readers, the 60 tests
    that parse with the new expression read as not reaching the change, ``unchanged``, and the
    two new tests that check it did not count as reaching it. The gaps above still go by
    what ran the symbol itself (a module-level decision is observed by the import only)."""
    tests = set(seen.tests_of.get(change.symbol, ()))
    for reader in change.readers if change.change == CODE_MODIFIED else ():
        tests |= seen.tests_of.get(reader, set())
    return tests


#: The gap of a changed symbol whose decision was edited while no test that reaches it
#: behaves otherwise (docs/diffing.md, "Code changes").
GAP_UNTOLD_EDIT = "decision edited, and no test that reaches it behaves otherwise: {edit}"


def untold_edits(
    entries: Sequence[CodeChange],
    diffs: Sequence[TestDiff],
    code_changes: CodeChangeInput | None = None,
) -> None:
    """Add a gap to each changed symbol whose decision was edited in place (one condition
    gone and one come in the same function: itsdangerous' ``age > max_age`` made ``age >=
    max_age``) when none of the tests that reach it changed: each took the same ways with
    either condition, so none tells them apart, and the edit (a fix, or a slip) is untested.
    Not a symbol modified only by naming renamed code anew (``if self._should_force_list(...)``
    made ``if self._forced_list(...)`` where the method was renamed, its code the same):
    its condition is the same call."""
    loud = {diff.id for diff in diffs if diff.status in (STATUS_CHANGED, STATUS_UNVERIFIED)}
    renames = code_changes.same_code() if code_changes is not None else frozenset()

    def predicates(entry: CodeChange, kind: str) -> list[str]:
        return [str(site.get("predicate")) for site in entry.sites if site.get("change") == kind]

    for entry in entries:
        if entry.change != CODE_MODIFIED or entry.symbol in renames:
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
        if len(gone) == 1 and len(came) == 1 and gone[0] != came[0]:
            # (The same condition under another kind of decision, an ``if`` made a
            # conditional expression, is no edit of it.)
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


def quiet_edits(
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
