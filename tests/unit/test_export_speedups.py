"""The cheaper per-test export and store paths give the bytes the plain computations gave.

``export_phase`` takes short paths for the common shapes (a node with one child, a tree
position held by one node) and remembers the digests of short canonical forms; the store
encodes with one shared encoder. Each shortcut is held here against the plain computation it
replaces: the grouping below is the exporter as it was before the short paths, kept verbatim
as the reference. The end-to-end check (whole recordings, byte for byte) is in the e2e tests.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from diffgenome.recording import genome
from diffgenome.recording.collect import codemap, values
from diffgenome.recording.collect.contract import (
    NODE_CALL,
    NODE_OS_EVENT,
    NODE_SUBSTITUTION,
    Bounds,
    CodeInfo,
    Node,
    PhaseCapture,
    StateSet,
)
from diffgenome.store import writer

# --- the reference: the exporter before the short paths ----------------------------------

_TYPE_ORDER = {NODE_CALL: 0, NODE_SUBSTITUTION: 1, NODE_OS_EVENT: 2}


def _ref_identity(node: Node) -> tuple[Any, ...]:
    key = node.key
    if node.ntype == NODE_CALL:
        return (0, key.symbol, node.via or "")
    return (_TYPE_ORDER[node.ntype], *(str(part) for part in key), node.via or "")


def _ref_children(node: Node) -> list[tuple[tuple[Any, ...], list[Node]]]:
    groups: dict[tuple[Any, ...], list[Node]] = {}
    for child in node.children.values():
        groups.setdefault(_ref_identity(child), []).append(child)
    for root in node.thread_roots:
        for child in root.children.values():
            child.via = root.via
            groups.setdefault(_ref_identity(child), []).append(child)
    return sorted(groups.items(), key=lambda item: item[0])


def _ref_exits(nodes: list[Node]) -> dict[str, int]:
    exits: dict[str, int] = {}
    for node in nodes:
        if node.returned:
            exits["returned"] = exits.get("returned", 0) + node.returned
        if node.yielded:
            exits["yielded"] = exits.get("yielded", 0) + node.yielded
        for key, count in node.exits.items():
            exits[key] = exits.get(key, 0) + count
    return dict(sorted(exits.items()))


def _ref_values(
    nodes: list[Node], attr: str, digester: values.Digester
) -> tuple[list[dict[str, str | None]], dict[str, object] | None]:
    if len(nodes) == 1:
        bounded: values.BoundedValues = getattr(nodes[0], attr)
        return bounded.export(digester)
    merged = values.BoundedValues(getattr(nodes[0], attr).limit)
    for node in nodes:
        getattr(node, attr).merge_into(merged)
    return merged.export(digester)


def _reference_export(capture: PhaseCapture, digester: values.Digester) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    branches: list[dict[str, Any]] = []

    def visit(group: list[Node], parent_id: int | None) -> None:
        first = group[0]
        node_id = len(nodes)
        count = sum(node.count for node in group)
        record: dict[str, Any] = {"id": node_id, "parent": parent_id}
        if first.ntype == NODE_CALL:
            info = first.key
            record["type"] = "call"
            record["symbol"] = info.symbol
            record["count"] = count
            record["exits"] = _ref_exits(group)
            args, args_overflow = _ref_values(group, "args", digester)
            results, results_overflow = _ref_values(group, "results", digester)
            record["args"] = args
            if args_overflow is not None:
                record["args_overflow"] = args_overflow
            record["results"] = results
            if results_overflow is not None:
                record["results_overflow"] = results_overflow
            facts: set[tuple[str, str, str]] = set()
            state_overflow = 0
            for node in group:
                if node.state is not None:
                    facts |= node.state.facts
                    state_overflow += node.state.overflow
            record["state"] = [
                {"when": when, "target": target, "bucket": bucket}
                for when, target, bucket in sorted(facts)
            ]
            if state_overflow:
                record["state_overflow"] = {"count": state_overflow, "digest": None}
            if first.via:
                record["via"] = first.via
            nodes.append(record)
            site_counts: dict[int, list[int]] = {}
            for node in group:
                for outcome, n in node.branches.items():
                    counts = site_counts.setdefault(outcome >> 1, [0, 0])
                    counts[outcome & 1] += n
            filemap = info.filemap
            if filemap is not None:
                for index in sorted(site_counts, key=lambda i: filemap.sites[i].id):
                    site = filemap.sites[index]
                    false_count, true_count = site_counts[index]
                    branches.append(
                        {
                            "node": node_id,
                            "site": site.id,
                            "symbol": site.symbol,
                            "kind": site.kind,
                            "predicate": site.predicate,
                            "outcomes": {"true": true_count, "false": false_count},
                        }
                    )
        elif first.ntype == NODE_SUBSTITUTION:
            _, mechanism, substitute, claimed, relation, path = first.key
            record["type"] = "substitution"
            record["mechanism"] = mechanism
            record["substitute"] = substitute
            record["claimed_target"] = claimed
            record["relation"] = relation
            record["path"] = path
            record["count"] = count
            args, args_overflow = _ref_values(group, "args", digester)
            record["args"] = args
            if args_overflow is not None:
                record["args_overflow"] = args_overflow
            record["exits"] = _ref_exits(group)
            if first.key[1] == "interposition":
                del record["exits"]
            record["signature_mismatch"] = any(
                node.flags is not None and "signature_mismatch" in node.flags for node in group
            )
            nodes.append(record)
        else:
            _, kind, target, outcome = first.key
            record.update({"type": "os_event", "kind": kind, "target": target, "outcome": outcome})
            record["count"] = count
            nodes.append(record)
        merged: dict[tuple[Any, ...], list[Node]] = {}
        for node in group:
            for identity, kids in _ref_children(node):
                merged.setdefault(identity, []).extend(kids)
        for _, kids in sorted(merged.items(), key=lambda item: item[0]):
            visit(kids, node_id)

    for _, group in _ref_children(capture.root):
        visit(group, None)
    return {"nodes": nodes, "branches": branches}


# --- random trees of every shape the exporter groups --------------------------------------

SOURCE = """
def a(x):
    if x:
        return 1
    while x > 3:
        x -= 1
    return 2 if x else 3


def b(y):
    return [v for v in y if v]
"""
FILEMAP = codemap.build_file_map(SOURCE, "m")
SYMBOLS = ["py:m.a", "py:m.b", "py:m.c"]
BOUNDS = Bounds(args=3, results=2, state=3)
FORMS: list[bytes | None] = [None, b"N", b"T", b"i1:1", b"s1:x", b"s2:xy"]


def _code(n: int) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(f"def f{n}(x):\n    return x + {n}\n", f"<tree {n}>", "exec"), namespace)
    return namespace[f"f{n}"].__code__


# Distinct code objects: two ``CodeInfo`` for one symbol make two children of one identity
# (a module reloaded, a function defined twice), which the exporter must fold into one node.
INFOS = [
    CodeInfo(_code(n), SYMBOLS[n % len(SYMBOLS)], "source", "function", 1, "m.py", FILEMAP)
    for n in range(6)
]


def _fill(node: Node, rng: random.Random) -> None:
    node.count = rng.randint(1, 4)
    node.returned = rng.choice([0, 0, node.count])
    node.yielded = rng.choice([0, 0, 2])
    if rng.random() < 0.3:
        node.exits = {rng.choice(["raised:ValueError", "raised:KeyError"]): rng.randint(1, 2)}
    for _ in range(rng.randint(0, 5)):
        node.args.add(rng.choice(["x=int", "x=str", "x=None"]), rng.choice(FORMS))
    for _ in range(rng.randint(0, 4)):
        node.results.add(rng.choice(["int", "None"]), rng.choice(FORMS))
    if rng.random() < 0.4:
        node.state = StateSet(BOUNDS.state)
        for _ in range(rng.randint(1, 5)):
            node.state.add((rng.choice(["entry", "exit"]), rng.choice(["self.a", "g"]), "one"))
    for _ in range(rng.randint(0, 3)):
        outcome = rng.randrange(len(FILEMAP.sites)) << 1 | rng.randint(0, 1)
        node.branches[outcome] = node.branches.get(outcome, 0) + rng.randint(1, 3)


def _node(rng: random.Random, depth: int) -> Node:
    kind = rng.random()
    if kind < 0.7 or depth == 0:
        node = Node(NODE_CALL, rng.choice(INFOS), BOUNDS)
        _fill(node, rng)
    elif kind < 0.85:
        mechanism = rng.choice(["fake", "mock_object", "interposition"])
        key = ("sub", mechanism, "py:m.fake", rng.choice([None, "py:m.a"]), "none", "")
        node = Node(NODE_SUBSTITUTION, key, BOUNDS)
        _fill(node, rng)
        node.flags = {"signature_mismatch"} if rng.random() < 0.3 else None
        return node
    else:
        event = ("os", "socket.connect", rng.choice(["127.0.0.1:80", "10.0.0.1:443"]), "allowed")
        node = Node(NODE_OS_EVENT, event, BOUNDS)
        node.count = rng.randint(1, 3)
        return node
    if depth < 3:
        for index in range(rng.choice([0, 1, 1, 2, 3])):
            child = _node(rng, depth + 1)
            node.children[(index, id(child))] = child
        if rng.random() < 0.2:
            root = Node(NODE_CALL, None, BOUNDS)
            root.via = rng.choice(["thread", "task"])
            for index in range(rng.randint(1, 2)):
                child = _node(rng, depth + 1)
                root.children[(index, id(child))] = child
            node.thread_roots.append(root)
    return node


def _capture(seed: int) -> PhaseCapture:
    rng = random.Random(seed)
    root = Node(NODE_CALL, None, BOUNDS)
    for index in range(rng.randint(0, 3)):
        child = _node(rng, 1)
        root.children[(index, id(child))] = child
    return PhaseCapture(root, [])


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_export_gives_the_reference_genome_on_random_trees(seed: int) -> None:
    digester = values.Digester(b"e" * 32)
    expected = _reference_export(_capture(seed), digester)
    exported = genome.export_phase(_capture(seed), digester)
    # Key order too: the stored JSON is sorted, but the phase object is the same object.
    assert json.dumps(exported) == json.dumps(expected)


def test_the_random_trees_reach_every_grouping_path() -> None:
    """A guard on the generator above: folded identities, thread subtrees, merged state."""
    folded = threads = merged_state = 0
    for seed in range(300):
        phase = _reference_export(_capture(seed), values.Digester(b"e" * 32))
        folded += sum(1 for n in phase["nodes"] if n.get("count", 0) > 4)
        threads += sum(1 for n in phase["nodes"] if n.get("via"))
        merged_state += sum(1 for n in phase["nodes"] if n.get("state_overflow"))
    assert folded and threads and merged_state


# --- the digest memo ------------------------------------------------------------------------


def test_remembered_digests_are_the_digesters_own_across_the_bound() -> None:
    digester = values.Digester(b"m" * 32)
    memo = genome._memo_for(digester)
    long_form = b"s" + b"x" * (genome._MEMO_FORM_BYTES + 10)
    forms = [b"i%d:%d" % (len(str(n)), n) for n in range(genome._MEMO_ENTRIES + 50)]
    for _ in range(2):  # the second round reads what the first remembered (and cleared)
        for form in [*forms, long_form, b"N"]:
            assert memo.digest(form) == digester.digest(form)


def test_each_digester_gets_its_own_digests() -> None:
    """Two sessions' keys in one process (the tests of this project do that): a digest
    remembered under one key must never be handed out under the other."""
    first, second = values.Digester(b"1" * 32), values.Digester(b"2" * 32)
    for _ in range(3):
        assert genome._memo_for(first).digest(b"N") == first.digest(b"N")
        assert genome._memo_for(second).digest(b"N") == second.digest(b"N")
    assert first.digest(b"N") != second.digest(b"N")


# --- the store's canonical text ----------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_canonical_text_is_the_sorted_compact_json(value: object) -> None:
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert writer._canonical(value) == expected
