"""``diffgenome affected``: the tests whose base recording reaches changed code.

A test is affected when its base genome has a call node of a modified or removed symbol, a
stand-in claiming to replace one, or when it depends on a changed module or class body (module
level statements, class attributes): it runs that body itself (a call node of the module or
class), or it reads a name that a changed statement binds (``via: reads``: a function of the
same file whose code reads the name, or any recorded state fact ``global:NAME`` or
``self.NAME``). A changed body statement that does more than bind names (a call, an assert)
has effects no name tells: then every test that ran code of that module or class is selected,
as before (``via: module``/``class``). A test that may use what changed code made once for
many tests (a wider fixture's value, an import's) or left in a module-level name is affected
too (``via: shared``/``state``, diff/sharing.py). Each reason names the changed symbol and
the call path through which the test reached it, so the selection can be audited. Tests added
at head have no base genome and are never listed: run them as well.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from diffgenome.analysis.diff.align import PhaseIndex, TestIndex, element_symbol, index_tests
from diffgenome.analysis.diff.codechanges import CodeChangeInput, SymbolChange
from diffgenome.analysis.diff.importers import ImportGraph
from diffgenome.analysis.diff.mapping import translated
from diffgenome.analysis.diff.sharing import (
    EVERY_TEST,
    FIXTURE_PHASES,
    Domain,
    ScopeOf,
    SourceReader,
    body_keeps_to_itself,
    fixture_domain,
    import_domain,
    in_domain,
    module_kinds,
    test_file,
)
from diffgenome.protocol.vocab import (
    CODE_ADDED,
    CODE_MODIFIED,
    IMPORT_TEST_ID,
    SYMBOL_PREFIX,
    TYPE_CALL,
    TYPE_SUBSTITUTION,
)

_CONTAINER_KINDS = ("module", "class")


@dataclass(frozen=True)
class Reason:
    """Why one test is affected: ``via`` is ``call`` (it ran the changed symbol), ``stand-in``
    (it replaced it), ``module``/``class`` (it ran code defined in a changed module or class
    body), ``unparsed`` (it ran code of a changed file that could not be analysed) or
    ``shared`` (it may use a value made once for many tests by code that reached the change:
    a module fixture's, an import's; ``phase`` and ``path`` are where that code reached it)
    or ``state`` (it reads a module-level name, ``names``, that changed code changed in place
    in another test: a registry, a cache)."""

    symbol: str
    change: str
    via: str
    phase: str
    path: tuple[str, ...]
    sites: tuple[dict[str, Any], ...] = ()
    names: tuple[str, ...] = ()  # via "reads": the changed names the test's code read

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "symbol": self.symbol,
            "change": self.change,
            "via": self.via,
            "phase": self.phase,
            "path": list(self.path),
            "sites": [dict(site) for site in self.sites],
        }
        if self.names:
            out["names"] = list(self.names)
        return out


@dataclass
class Affected:
    test: str
    outcome: str
    reasons: list[Reason] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "outcome": self.outcome,
            "reasons": [reason.as_json() for reason in self.reasons],
        }


def affected_tests(
    base: Mapping[str, Any],
    code: CodeChangeInput,
    module_of: Callable[[str], str | None],
    source_of: Callable[[str], str | None] | None = None,
    graph_of: Callable[[], ImportGraph] | None = None,
) -> list[Affected]:
    """The base document's tests that reach ``code``'s changes, sorted by test id (the base
    document read in head's names where the mapping pairs code, as ``code`` names it), with
    those that may use a value computed once for many tests by code that reaches them
    (``via: shared``) and those that read a global changed code changes in place (``via:
    state``), diff/sharing.py. ``source_of(path)``: base's source of a file, where fixture
    scopes and the names a function changes are read (without it, a change reached in a
    fixture reaches every test, and every global a changed call records counts);
    ``graph_of()``: the imports of base's Python files, where the tests that can see what a
    module made while imported are read (without it, every test can, diff/importers.py)."""
    base = translated(base, code.mapping)
    changes = {c.symbol: c for c in code.symbols if c.change != CODE_ADDED}
    kinds = {
        str(s.get("id")): str(s.get("kind"))
        for s in base.get("symbols") or ()
        if isinstance(s, dict)
    }
    for change in changes.values():
        # A module whose body ran before recording began (a conftest imported it) has no
        # symbol in the recording, yet it is a module: packaging's _tokenizer.
        module = module_of(change.path) if change.path else None
        if module is not None and change.symbol == f"{SYMBOL_PREFIX}{module}":
            kinds.setdefault(change.symbol, "module")
    containers = {
        symbol[len(SYMBOL_PREFIX) :] + ".": (change, kinds[symbol])
        for symbol, change in changes.items()
        if kinds.get(symbol) in _CONTAINER_KINDS
        and symbol.startswith(SYMBOL_PREFIX)
        and change.opaque
    }
    readers: dict[str, list[SymbolChange]] = {}
    state_names: dict[str, list[SymbolChange]] = {}
    for symbol, change in changes.items():
        if kinds.get(symbol) not in _CONTAINER_KINDS or change.opaque:
            continue
        for reader in change.readers:
            readers.setdefault(reader, []).append(change)
        for name in change.bound:
            state_names.setdefault(name, []).append(change)
    reads = _Reads(readers, state_names)
    unparsed = {
        module + ".": path for path in code.unparsed if (module := module_of(path)) is not None
    }
    out: list[Affected] = []
    tests = index_tests(base)
    for test_id, test in sorted(tests.items()):
        if test_id == IMPORT_TEST_ID:
            continue
        reasons = _reasons(test, changes, containers, unparsed, reads)
        if reasons:
            out.append(Affected(test_id, str(test.record.get("outcome")), reasons))
    symbols = [s for s in base.get("symbols") or () if isinstance(s, Mapping)]
    source = SourceReader(symbols, module_of, source_of)
    seeing = (
        _ImportSeers(source, kinds, graph_of, {test_file(t) for t in tests if t != IMPORT_TEST_ID})
        if graph_of is not None
        else None
    )
    shared = _shared(
        out,
        tests.get(IMPORT_TEST_ID),
        lambda test: _reasons(test, changes, containers, unparsed, reads, every_path=True),
        frozenset(s for s, kind in kinds.items() if kind in _CONTAINER_KINDS),
        source.scope,
        module_kinds(symbols, tests),
        seeing,
    )
    touched = _touched_globals(out, tests, source)
    if not shared and not touched:
        return out
    listed = {item.test for item in out}
    for test_id, test in sorted(tests.items()):
        if test_id == IMPORT_TEST_ID or test_id in listed:
            continue
        found: dict[str, Reason] = {}
        for domain, reason in shared:
            if in_domain(test_id, domain) and reason.symbol not in found:
                found[reason.symbol] = Reason(
                    reason.symbol, reason.change, "shared", reason.phase, reason.path
                )
        for reason in _reads_touched(test, touched) if touched else ():
            found.setdefault(reason.symbol, reason)
        if found:
            out.append(Affected(test_id, str(test.record.get("outcome")), list(found.values())))
    return sorted(out, key=lambda item: item.test)


def _touched_globals(
    affected: list[Affected], tests: Mapping[str, TestIndex], source: SourceReader
) -> dict[str, Reason]:
    """Module-level names changed code may have changed for the tests after it: in each
    call of changed code, the names its code and the code it called change in place or
    assign (``NAMES.append(...)`` in ``register``, read from base's source), and the globals
    whose state a call of it found otherwise on exit than on entry. A name whose writer's
    source cannot be read counts when the call records state of it at all."""
    touched: dict[str, Reason] = {}
    for item in affected:
        test = tests.get(item.test)
        if test is None:
            continue
        for reason in item.reasons:
            if reason.via != "call" or reason.phase not in test.phases:
                continue
            depth = len(reason.path)
            for path, node in test.phases[reason.phase].nodes.items():
                if path[:depth] != reason.path or node.get("type") != TYPE_CALL:
                    continue
                written = source.written(element_symbol(path[-1]) or "")
                entry: dict[str, object] = {}
                for fact in node.get("state") or ():
                    target = str(fact.get("target") or "")
                    if not target.startswith("global:"):
                        continue
                    name = target[len("global:") :]
                    if fact.get("when") == "entry":
                        entry[name] = fact.get("bucket")
                    elif name in entry and entry[name] != fact.get("bucket"):
                        touched.setdefault(name, reason)
                    if written is None:
                        touched.setdefault(name, reason)
                for name in written or ():
                    touched.setdefault(name, reason)
    return touched


def _reads_touched(test: TestIndex, touched: Mapping[str, Reason]) -> list[Reason]:
    """``test``'s reads of a global that changed code may have changed (``via: state``)."""
    out: list[Reason] = []
    for phase_name, phase in test.phases.items():
        for path, node in phase.nodes.items():
            for name in _state_names(node, ("global:",)):
                writer = touched.get(name)
                if writer is not None:
                    out.append(
                        Reason(writer.symbol, writer.change, "state", phase_name, path, (), (name,))
                    )
    return out


def _shared(
    affected: list[Affected],
    imports: TestIndex | None,
    reasons_of: Callable[[TestIndex], list[Reason]],
    containers: frozenset[str],
    scope_of: ScopeOf,
    module_kind: Callable[[str], str | None],
    seeing: _ImportSeers | None = None,
) -> list[tuple[Domain, Reason]]:
    """Each reason a value made once for many tests reached the change, with the tests that
    may use that value (a test file, or every test): a change reached in a setup or teardown
    under a fixture wider than one test, and a changed function (or a name a changed body
    binds) that a module ran while it was imported. A changed module or class body run at
    import is no such value: who reads its names is the ``reads`` rule's. ``seeing``: the
    test files that can see what a module other than a test module made (every test
    without it)."""
    out: list[tuple[Domain, Reason]] = []
    for item in affected:
        for reason in item.reasons:
            if reason.phase not in FIXTURE_PHASES or not reason.path:
                continue
            domain = fixture_domain(item.test, element_symbol(reason.path[0]) or "", scope_of)
            if domain is not None:
                out.append((domain, reason))
    if imports is not None:
        for reason in reasons_of(imports):
            if reason.via in _CONTAINER_KINDS or (
                reason.via == "call" and reason.symbol in containers
            ):
                continue
            at, made_by = import_domain(reason.path, module_kind)
            shared_with: Domain = made_by
            if at >= 0 and seeing is not None:
                prefix = reason.path[: at + 1]
                shared_with = (
                    seeing.domain(prefix, imports)
                    if made_by == EVERY_TEST
                    else seeing.with_importers(prefix, made_by)
                )
            out.append((shared_with, reason))
    return out


class _ImportSeers:
    """The test files that can see what a module (not a test module) made while imported:
    those whose imports reach it (diff/importers.py), when nothing of that import can have
    handed what it made elsewhere. Every test otherwise: when the module's body, a class
    body or module body it ran, or a module importing it, stores into another object or
    calls for nothing but effects (``register(PRICE)``); when a function that import
    called changes a global (or its source cannot be read); when its file is unknown."""

    def __init__(
        self,
        source: SourceReader,
        kinds: Mapping[str, str],
        graph_of: Callable[[], ImportGraph],
        test_files: set[str],
    ) -> None:
        self._source = source
        self._kinds = kinds
        self._graph_of = graph_of
        self._graph: ImportGraph | None = None
        self._test_files = test_files
        self._found: dict[tuple[str, ...], Domain] = {}

    def domain(self, prefix: tuple[str, ...], imports: TestIndex) -> Domain:
        """``prefix``: ``<import>``'s path down to the module that made the value."""
        if prefix not in self._found:
            self._found[prefix] = self._domain(prefix, imports)
        return self._found[prefix]

    def _domain(self, prefix: tuple[str, ...], imports: TestIndex) -> Domain:
        module = element_symbol(prefix[-1]) or ""
        path = self._source.path(module)
        if path is None or not self._import_keeps_to_itself(prefix, imports):
            return EVERY_TEST
        if self._graph is None:
            self._graph = self._graph_of()
        graph = self._graph
        for importer in sorted(graph.importers(path) - {path}):
            text = graph.source(importer)
            if text is not None and body_keeps_to_itself(text, "", decorators=True):
                continue
            # A file no test can reach does not run in the session (packaging's
            # docs/conf.py, which may import anything).
            if graph.test_files_seeing(importer, self._test_files):
                return EVERY_TEST
        return graph.test_files_seeing(path, self._test_files)

    def with_importers(self, prefix: tuple[str, ...], test_file: str) -> Domain:
        """A test module's tests, and those of the test files that import it (a helper
        defined in a test file and imported by another)."""
        path = self._source.path(element_symbol(prefix[-1]) or "")
        if path is None:
            return test_file
        if self._graph is None:
            self._graph = self._graph_of()
        return self._graph.test_files_seeing(path, self._test_files) | {test_file}

    def _import_keeps_to_itself(self, prefix: tuple[str, ...], imports: TestIndex) -> bool:
        """Whether every body and call the recording saw under ``prefix`` keeps to itself."""
        depth = len(prefix)
        for phase in imports.phases.values():
            for path, _node in phase.calls():
                if path[:depth] != prefix:
                    continue
                symbol = element_symbol(path[-1]) or ""
                if self._kinds.get(symbol) in _CONTAINER_KINDS:
                    if not self._source.keeps_to_itself(symbol):
                        return False
                elif self._source.written(symbol) != frozenset():
                    return False
        return True


@dataclass(frozen=True)
class _Reads:
    """Who depends on a changed body through a name: reader symbols, and state fact names."""

    readers: Mapping[str, list[SymbolChange]]
    names: Mapping[str, list[SymbolChange]]


def _state_names(
    node: Mapping[str, Any], prefixes: tuple[str, ...] = ("global:", "self.")
) -> set[str]:
    out: set[str] = set()
    for fact in node.get("state") or ():
        target = str(fact.get("target") or "")
        for prefix in prefixes:
            if target.startswith(prefix):
                out.add(target[len(prefix) :])
    return out


def _reasons(
    test: TestIndex,
    changes: Mapping[str, SymbolChange],
    containers: Mapping[str, tuple[SymbolChange, str]],
    unparsed: Mapping[str, str],
    reads: _Reads,
    every_path: bool = False,
) -> list[Reason]:
    """Why ``test`` reaches the changes: one reason per changed symbol and way, through the
    shortest path; ``every_path``: one per path (``<import>``, whose paths say which
    module made what)."""
    found: dict[tuple[str, str, tuple[str, ...]], Reason] = {}

    def keep(reason: Reason) -> None:
        key = (reason.symbol, reason.via, reason.path if every_path else ())
        known = found.get(key)
        if known is None or len(reason.path) < len(known.path):
            found[key] = reason

    for phase_name, phase in test.phases.items():
        for path, node in phase.nodes.items():
            kind = node.get("type")
            if kind == TYPE_SUBSTITUTION:
                target = node.get("claimed_target")
                change = changes.get(str(target)) if target else None
                if change is not None:
                    keep(Reason(change.symbol, change.change, "stand-in", phase_name, path))
                continue
            if kind != TYPE_CALL:
                continue
            symbol = element_symbol(path[-1]) or ""
            change = changes.get(symbol)
            if change is not None:
                sites = _sites(phase, path, change)
                keep(Reason(symbol, change.change, "call", phase_name, path, sites))
            for container in reads.readers.get(symbol, ()):
                names = tuple(sorted(container.bound))
                keep(
                    Reason(container.symbol, container.change, "reads", phase_name, path, (), names)
                )
            for name in _state_names(node) if reads.names else ():
                for container in reads.names.get(name, ()):
                    keep(
                        Reason(
                            container.symbol,
                            container.change,
                            "reads",
                            phase_name,
                            path,
                            (),
                            (name,),
                        )
                    )
            dotted = symbol.removeprefix(SYMBOL_PREFIX)
            for prefix, (container, via) in containers.items():
                if dotted.startswith(prefix):
                    keep(Reason(container.symbol, container.change, via, phase_name, path))
            for prefix, file in unparsed.items():
                if (dotted + ".").startswith(prefix):
                    keep(Reason(f"file:{file}", CODE_MODIFIED, "unparsed", phase_name, path))
    return sorted(found.values(), key=lambda r: (r.symbol, r.via))


def _sites(
    phase: PhaseIndex, path: tuple[str, ...], change: SymbolChange
) -> tuple[dict[str, Any], ...]:
    out: list[dict[str, Any]] = []
    for site in change.sites:
        branch = phase.branches.get((path, site.site))
        outcomes = branch.get("outcomes") if branch is not None else None
        out.append(
            {
                "site": site.site,
                "change": site.change,
                "predicate": site.predicate,
                **({"was": site.was} if site.was is not None else {}),
                "observed": dict(outcomes) if isinstance(outcomes, dict) else None,
            }
        )
    return tuple(out)
