"""Alignment of two recordings of one test: which node and which decision is "the same".

Node ids are indexes inside one phase, so they say nothing across runs. A node is known by its
path of identities from the root: a call by its symbol (and ``via`` when it ran on a thread,
as the recorder keeps such nodes apart), a stand-in by (mechanism, claimed target, attribute
path), an OS event by (kind, target). A decision is known by (node path, site id). Everything
is indexed by dicts once, so aligning is linear in the size of the two genomes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from diffgenome.protocol.vocab import (
    PHASES,
    SYMBOL_PREFIX,
    TYPE_CALL,
    TYPE_OS_EVENT,
    TYPE_SUBSTITUTION,
)

Path = tuple[str, ...]
NodeDict = Mapping[str, Any]

STAND_IN_PREFIX = "stand-in["
OS_PREFIX = "os["


def element(node: NodeDict) -> str:
    """The identity of ``node`` among its siblings, as one readable path element."""
    kind = node.get("type")
    if kind == TYPE_SUBSTITUTION:
        target = node.get("claimed_target")
        if not target:
            # No fact says what it replaces: test code (a callback a test made) is named by
            # where it was made, ``py:tests.t.test_f.<locals>.cb``, so two of them in one test
            # stay apart and readable; anything else stays ``?``.
            made = node.get("substitute")
            target = made if isinstance(made, str) and made.startswith(SYMBOL_PREFIX) else "?"
        path = node.get("path")  # empty: the stand-in itself was called
        return f"{STAND_IN_PREFIX}{node.get('mechanism')} {target}{f' {path}' if path else ''}]"
    if kind == TYPE_OS_EVENT:
        return f"{OS_PREFIX}{node.get('kind')} {node.get('target')}]"
    symbol = str(node.get("symbol"))
    via = node.get("via")
    return f"{symbol} (via {via})" if via else symbol


def element_symbol(part: str) -> str | None:
    """The symbol of a call path element, None for stand-ins and OS events."""
    if part.startswith((STAND_IN_PREFIX, OS_PREFIX)):
        return None
    return part.split(" ", 1)[0]


@dataclass(slots=True)
class PhaseIndex:
    """One phase of one test, keyed by identity rather than by id."""

    nodes: dict[Path, NodeDict] = field(default_factory=dict)
    branches: dict[tuple[Path, str], NodeDict] = field(default_factory=dict)

    def calls(self) -> Iterator[tuple[Path, NodeDict]]:
        for path, node in self.nodes.items():
            if node.get("type") == TYPE_CALL:
                yield path, node


def index_phase(genome: Mapping[str, Any] | None) -> PhaseIndex:
    """Index a phase genome (a ``{nodes, branches}`` dict) by node path and decision key.

    Parents are resolved without recursion (recorded call chains can be deeper than the
    recursion limit), and a damaged parent link (unknown id, cycle) makes the node a root
    instead of failing the whole diff.
    """
    index = PhaseIndex()
    if not genome:
        return index
    nodes: list[NodeDict] = list(genome.get("nodes") or ())
    by_id: dict[int, NodeDict] = {node["id"]: node for node in nodes}
    paths: dict[int, Path] = {}
    for node in nodes:
        chain: list[NodeDict] = []
        seen: set[int] = set()
        current: NodeDict | None = node
        while current is not None and current["id"] not in paths:
            if current["id"] in seen:  # a cycle: cut it here
                break
            seen.add(current["id"])
            chain.append(current)
            parent = current.get("parent")
            current = by_id.get(parent) if parent is not None else None
        prefix: Path = (
            paths[current["id"]] if current is not None and current["id"] in paths else ()
        )
        for item in reversed(chain):
            prefix = _unique(index.nodes, (*prefix, element(item)))
            paths[item["id"]] = prefix
            index.nodes[prefix] = item
    for branch in genome.get("branches") or ():
        path = paths.get(branch.get("node", -1), ())
        index.branches[(path, str(branch.get("site")))] = branch
    return index


def _unique(taken: Mapping[Path, object], path: Path) -> Path:
    """``path`` itself, or with an ordinal when a damaged document repeats an identity."""
    if path not in taken:
        return path
    n = 1
    while (*path[:-1], f"{path[-1]}#dup{n}") in taken:
        n += 1
    return (*path[:-1], f"{path[-1]}#dup{n}")


class TestIndex:
    """A test record and its phases, indexed by path when first asked for.

    Most tests of a diff are recorded alike on both sides, which the differ sees by comparing
    the raw phases; only the others need paths (sqlparse: 465 tests of 250 nodes, indexing
    all of them took 3.8 of a 19 s diff). What needs no paths reads the raw nodes.
    """

    __test__ = False
    __slots__ = ("_phases", "record")

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = record
        self._phases: dict[str, PhaseIndex] | None = None

    @property
    def phases(self) -> dict[str, PhaseIndex]:
        if self._phases is None:
            raw = self._raw()
            phases = {phase: index_phase(raw.get(phase)) for phase in PHASES}
            for phase in raw:
                if phase not in phases:
                    phases[phase] = index_phase(raw[phase])
            self._phases = phases
        return self._phases

    def _raw(self) -> Mapping[str, Any]:
        raw = self.record.get("phases")
        return raw if isinstance(raw, Mapping) else {}

    def raw_nodes(self) -> Iterator[NodeDict]:
        """Every node of every phase, as recorded (no paths)."""
        for genome in self._raw().values():
            if isinstance(genome, Mapping):
                yield from genome.get("nodes") or ()

    def raw_branches(self) -> Iterator[NodeDict]:
        """Every decision of every phase, as recorded (no paths)."""
        for genome in self._raw().values():
            if isinstance(genome, Mapping):
                yield from genome.get("branches") or ()


def index_test(record: Mapping[str, Any]) -> TestIndex:
    return TestIndex(record)


def index_tests(document: Mapping[str, Any]) -> dict[str, TestIndex]:
    """Every test of a genome document by id (a repeated id keeps its first record)."""
    out: dict[str, TestIndex] = {}
    for record in document.get("tests") or ():
        test_id = str(record.get("id"))
        if test_id not in out:
            out[test_id] = index_test(record)
    return out
