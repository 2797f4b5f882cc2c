"""Changed code against recorded behaviour: which tests ran each changed symbol, what its
changed decisions did, and what no test exercised (the gaps a reviewer should look at)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from diffgenome.analysis.diff.align import TestIndex
from diffgenome.analysis.diff.codechanges import CodeChangeInput, SymbolChange
from diffgenome.analysis.diff.drift import stand_in_users
from diffgenome.analysis.models import CodeChange
from diffgenome.protocol.vocab import CODE_MODIFIED, CODE_REMOVED, IMPORT_TEST_ID, TYPE_CALL

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
