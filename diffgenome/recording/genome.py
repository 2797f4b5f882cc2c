"""Turning a phase's calling-context tree into a ``diffgenome-genome/1`` phase object.

Runs once per phase, off the hot path. Output order is fully determined by the tree's
content (children sorted by identity, node ids assigned in that order), so recording the
same tree twice gives byte-identical genomes.
"""

from __future__ import annotations

from typing import Any

from diffgenome.recording.collect import values
from diffgenome.recording.collect.tracer import (
    NODE_CALL,
    NODE_OS_EVENT,
    NODE_SUBSTITUTION,
    CodeInfo,
    Node,
    PhaseCapture,
)

_TYPE_ORDER = {NODE_CALL: 0, NODE_SUBSTITUTION: 1, NODE_OS_EVENT: 2}


def _identity(node: Node) -> tuple[Any, ...]:
    """What a node is, independent of when it was first seen: its sort and merge key."""
    key = node.key
    if node.ntype == NODE_CALL:
        assert isinstance(key, CodeInfo)
        return (0, key.symbol, node.via or "")
    return (_TYPE_ORDER[node.ntype], *(str(part) for part in key), node.via or "")


def _children(node: Node) -> list[tuple[tuple[Any, ...], list[Node]]]:
    """Children grouped by identity (thread subtrees folded in), in a stable order."""
    groups: dict[tuple[Any, ...], list[Node]] = {}
    for child in node.children.values():
        groups.setdefault(_identity(child), []).append(child)
    for root in node.thread_roots:
        for child in root.children.values():
            child.via = root.via
            groups.setdefault(_identity(child), []).append(child)
    return sorted(groups.items(), key=lambda item: item[0])


def _exits(nodes: list[Node]) -> dict[str, int]:
    exits: dict[str, int] = {}
    for node in nodes:
        if node.returned:
            exits["returned"] = exits.get("returned", 0) + node.returned
        if node.yielded:
            exits["yielded"] = exits.get("yielded", 0) + node.yielded
        for key, count in node.exits.items():
            exits[key] = exits.get(key, 0) + count
    return dict(sorted(exits.items()))


def _values(
    nodes: list[Node], attr: str, digester: values.Digester
) -> tuple[list[dict[str, str | None]], dict[str, object] | None]:
    if len(nodes) == 1:
        bounded: values.BoundedValues = getattr(nodes[0], attr)
        return bounded.export(digester)
    merged = values.BoundedValues(getattr(nodes[0], attr).limit)
    for node in nodes:
        getattr(node, attr).merge_into(merged)
    return merged.export(digester)


def consistency_problems(phase: dict[str, Any]) -> list[str]:
    """Self-check of an exported phase: every entry of a call or stand-in ended somehow.

    A node entered ``count`` times must have exactly ``count`` exits (returned, yielded,
    raised). A mismatch means events were missed, so the genome must not pass as complete.
    """
    broken = 0
    for node in phase["nodes"]:
        exits = node.get("exits")
        if exits is not None and node["count"] != sum(exits.values()):
            broken += 1
    return [f"inconsistent-exits:{broken}"] if broken else []


def export_phase(capture: PhaseCapture, digester: values.Digester) -> dict[str, Any]:
    """The genome of one phase: ``{"nodes": [...], "branches": [...]}``."""
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
            record["exits"] = _exits(group)
            args, args_overflow = _values(group, "args", digester)
            results, results_overflow = _values(group, "results", digester)
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
            args, args_overflow = _values(group, "args", digester)
            record["args"] = args
            if args_overflow is not None:
                record["args_overflow"] = args_overflow
            record["exits"] = _exits(group)
            if first.key[1] == "interposition":
                del record["exits"]  # installed, not called: nothing to exit
            record["signature_mismatch"] = any(
                node.flags is not None and "signature_mismatch" in node.flags for node in group
            )
            nodes.append(record)
        else:
            _, kind, target, outcome = first.key
            record.update({"type": "os_event", "kind": kind, "target": target, "outcome": outcome})
            record["count"] = count
            nodes.append(record)
        children: list[tuple[tuple[Any, ...], list[Node]]] = []
        merged: dict[tuple[Any, ...], list[Node]] = {}
        for node in group:
            for identity, kids in _children(node):
                merged.setdefault(identity, []).extend(kids)
        children = sorted(merged.items(), key=lambda item: item[0])
        for _, kids in children:
            visit(kids, node_id)

    for _, group in _children(capture.root):
        visit(group, None)
    return {"nodes": nodes, "branches": branches}
