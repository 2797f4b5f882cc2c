"""``diffgenome affected``: the tests whose base recording reaches changed code.

A test is affected when its base genome has a call node of a modified or removed symbol, a
stand-in claiming to replace one, or when it depends on a changed module or class body (module
level statements, class attributes): it runs that body itself (a call node of the module or
class), or it reads a name that a changed statement binds (``via: reads``: a function of the
same file whose code reads the name, or any recorded state fact ``global:NAME`` or
``self.NAME``). A changed body statement that does more than bind names (a call, an assert)
has effects no name tells: then every test that ran code of that module or class is selected,
as before (``via: module``/``class``). Each reason names the changed symbol and the call path
through which the test reached it, so the selection can be audited. Tests added at head have
no base genome and are never listed: run them as well.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from diffgenome.analysis.diff.align import PhaseIndex, TestIndex, element_symbol, index_tests
from diffgenome.analysis.diff.codechanges import CodeChangeInput, SymbolChange
from diffgenome.analysis.diff.mapping import translated
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
    body) or ``unparsed`` (it ran code of a changed file that could not be analysed)."""

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
) -> list[Affected]:
    """The base document's tests that reach ``code``'s changes, sorted by test id (the base
    document read in head's names where the mapping pairs code, as ``code`` names it)."""
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
    for test_id, test in sorted(index_tests(base).items()):
        if test_id == IMPORT_TEST_ID:
            continue
        reasons = _reasons(test, changes, containers, unparsed, reads)
        if reasons:
            out.append(Affected(test_id, str(test.record.get("outcome")), reasons))
    return out


@dataclass(frozen=True)
class _Reads:
    """Who depends on a changed body through a name: reader symbols, and state fact names."""

    readers: Mapping[str, list[SymbolChange]]
    names: Mapping[str, list[SymbolChange]]


def _state_names(node: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    for fact in node.get("state") or ():
        target = str(fact.get("target") or "")
        for prefix in ("global:", "self."):
            if target.startswith(prefix):
                out.add(target[len(prefix) :])
    return out


def _reasons(
    test: TestIndex,
    changes: Mapping[str, SymbolChange],
    containers: Mapping[str, tuple[SymbolChange, str]],
    unparsed: Mapping[str, str],
    reads: _Reads,
) -> list[Reason]:
    found: dict[tuple[str, str], Reason] = {}

    def keep(reason: Reason) -> None:
        key = (reason.symbol, reason.via)
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
