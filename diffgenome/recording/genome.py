"""Turning a phase's calling-context tree into a ``diffgenome-genome`` phase object.

Runs once per phase, off the hot path but once per test: a suite of tiny tests pays this
for every one of them, so the common shapes (a node with one child, a tree position with
one node, values seen in earlier phases) take short paths. Output order is fully
determined by the tree's content (children sorted by identity, node ids assigned in that
order), so recording the same tree twice gives byte-identical genomes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from diffgenome.protocol.vocab import (
    EXIT_RETURNED,
    EXIT_YIELDED,
    INTERPOSITION,
    REASON_INCONSISTENT_EXITS,
    TYPE_CALL,
    TYPE_OS_EVENT,
    TYPE_SUBSTITUTION,
)
from diffgenome.recording.collect import values
from diffgenome.recording.collect.contract import (
    NODE_CALL,
    NODE_OS_EVENT,
    NODE_SUBSTITUTION,
    CodeInfo,
    Node,
    PhaseCapture,
)
from diffgenome.recording.collect.preview import ValuePreviews

_TYPE_ORDER = {NODE_CALL: 0, NODE_SUBSTITUTION: 1, NODE_OS_EVENT: 2}

# A few thousand short canonical forms (None, booleans, small ints, common strings) make up
# nearly every value a suite digests; longer forms rarely repeat and would only hold memory.
_MEMO_ENTRIES = 4096
_MEMO_FORM_BYTES = 256


class _DigestMemo:
    """One digester's digests of short canonical forms, remembered across phases.

    A keyed digest is a pure function of the key and the bytes, so a remembered one is the
    one that would be computed. A suite of small tests digests the same few forms (``None``
    results above all) again and again, and the HMAC was a quarter of each export. Only
    these bytes stay in memory, never the values they came from, and nothing of it is stored.
    """

    __slots__ = ("_digest", "_memo", "owner")

    def __init__(self, owner: values.Digester) -> None:
        self.owner = owner
        self._digest = owner.digest
        self._memo: dict[bytes, str] = {}

    def digest(self, canonical: bytes) -> str:
        memo = self._memo
        known = memo.get(canonical)
        if known is None:
            known = self._digest(canonical)
            if len(canonical) <= _MEMO_FORM_BYTES:
                if len(memo) >= _MEMO_ENTRIES:
                    memo.clear()
                memo[canonical] = known
        return known


_last_memo: _DigestMemo | None = None


def _memo_for(digester: values.Digester) -> values.Digester:
    """The memo of ``digester`` (one recording session has one digester: keep the last)."""
    global _last_memo
    memo = _last_memo
    if memo is None or memo.owner is not digester:
        memo = _last_memo = _DigestMemo(digester)
    # Only ``digest`` is asked of it (``BoundedValues.export``).
    return cast(values.Digester, memo)


def _identity(node: Node) -> tuple[Any, ...]:
    """What a node is, independent of when it was first seen: its sort and merge key."""
    key = node.key
    if node.ntype == NODE_CALL:
        assert isinstance(key, CodeInfo)
        return (0, key.symbol, node.via or "")
    return (_TYPE_ORDER[node.ntype], *(str(part) for part in key), node.via or "")


def _left_nothing(node: Node) -> bool:
    """A call node whose only entry was taken back: a paused generator closed in this phase
    (by its consumer or by the garbage collector) is resumed to be closed, and that is no
    entry (see the tracer's on_unwind). Nothing happened there: it is not exported."""
    return (
        node.ntype == NODE_CALL
        and not node.count
        and not node.children
        and not node.thread_roots
        and not node.branches
        and not node.exits
        and not node.returned
        and not node.yielded
    )


def _child_groups(group: list[Node]) -> list[list[Node]]:
    """The children of one tree position (all nodes in ``group``), thread subtrees folded
    in, grouped by identity and in identity order; within a group, in tree order."""
    if len(group) == 1:
        only = group[0]
        if not only.thread_roots and len(only.children) < 2:
            return [[child] for child in only.children.values() if not _left_nothing(child)]
    groups: dict[tuple[Any, ...], list[Node]] = {}
    for node in group:
        for child in node.children.values():
            if not _left_nothing(child):
                groups.setdefault(_identity(child), []).append(child)
        for root in node.thread_roots:
            via = root.via
            for child in root.children.values():
                if _left_nothing(child):
                    continue
                child.via = via
                groups.setdefault(_identity(child), []).append(child)
    if len(groups) < 2:
        return list(groups.values())
    return [groups[identity] for identity in sorted(groups)]


def _exits(nodes: list[Node]) -> dict[str, int]:
    if len(nodes) == 1 and not nodes[0].exits:
        node = nodes[0]
        plain: dict[str, int] = {}
        if node.returned:
            plain[EXIT_RETURNED] = node.returned
        if node.yielded:
            plain[EXIT_YIELDED] = node.yielded
        return plain
    exits: dict[str, int] = {}
    for node in nodes:
        if node.returned:
            exits[EXIT_RETURNED] = exits.get(EXIT_RETURNED, 0) + node.returned
        if node.yielded:
            exits[EXIT_YIELDED] = exits.get(EXIT_YIELDED, 0) + node.yielded
        for key, count in node.exits.items():
            exits[key] = exits.get(key, 0) + count
    return dict(sorted(exits.items()))


def _values(
    nodes: list[Node],
    attr: str,
    digester: values.Digester,
    preview: Callable[[str, bytes], str | None] | None = None,
) -> tuple[list[dict[str, str | None]], dict[str, object] | None]:
    if len(nodes) == 1:
        bounded: values.BoundedValues = getattr(nodes[0], attr)
        return bounded.export(digester, preview)
    merged = values.BoundedValues(getattr(nodes[0], attr).limit)
    for node in nodes:
        getattr(node, attr).merge_into(merged)
    return merged.export(digester, preview)


#: The exported lists of state facts seen lately, by their facts: the nodes of one suite
#: read the same few globals, and sorting and building the records again for each node was
#: a fifth of a parser suite's export. Bounded; the records are never changed once made.
_STATE_MEMO: dict[frozenset[tuple[str, str, str]], list[dict[str, str]]] = {}
_STATE_MEMO_ENTRIES = 4096


def _state(group: list[Node]) -> tuple[list[dict[str, str]], int]:
    if len(group) == 1:
        state = group[0].state
        if state is None:
            return [], 0
        facts: set[tuple[str, str, str]] | frozenset[tuple[str, str, str]] = state.facts
        overflow = state.overflow
        if not facts:
            return [], overflow
    else:
        merged: set[tuple[str, str, str]] = set()
        overflow = 0
        for node in group:
            if node.state is not None:
                merged |= node.state.facts
                overflow += node.state.overflow
        facts = merged
    key = frozenset(facts)
    records = _STATE_MEMO.get(key)
    if records is None:
        if len(_STATE_MEMO) >= _STATE_MEMO_ENTRIES:
            _STATE_MEMO.clear()
        records = _STATE_MEMO[key] = [
            {"when": when, "target": target, "bucket": bucket}
            for when, target, bucket in sorted(facts)
        ]
    return list(records), overflow


_SEAM_PREFIX = "seam:"
_MAX_SEAM_PROBLEMS = 8


def _same(text: str) -> str:
    return text


def _seam(group: list[Node], clear: Callable[[str], str] = _same) -> dict[str, Any] | None:
    """The seam check's facts of a stand-in node (``collect/seams.py``), or None where no
    check ran. A node merges calls from several places, so readings and problems are sets.
    Signatures show short literal defaults and problems name arguments: both pass through
    the secret rules (``clear``)."""
    facts: set[str] = set()
    for node in group:
        flags = node.flags
        if flags is not None:
            facts.update(flag for flag in flags if flag.startswith(_SEAM_PREFIX))
    if not facts:
        return None
    found: dict[str, list[str]] = {"target": [], "stand_in": [], "reading": [], "problem": []}
    for fact in sorted(facts):
        kind, _, text = fact[len(_SEAM_PREFIX) :].partition("=")
        found.setdefault(kind, []).append(clear(text))
    return {
        "target": " | ".join(found["target"]),
        "stand_in": " | ".join(found["stand_in"]) or None,
        "readings": found["reading"],
        "problems": found["problem"][:_MAX_SEAM_PROBLEMS],
    }


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
    return [f"{REASON_INCONSISTENT_EXITS}:{broken}"] if broken else []


def export_phase(
    capture: PhaseCapture,
    digester: values.Digester,
    clear: Callable[[str], str] = _same,
    previews: ValuePreviews | None = None,
) -> dict[str, Any]:
    """The genome of one phase: ``{"nodes": [...], "branches": [...]}``.

    ``clear`` applies the secret rules (``collect/redact.py``) to the text an OS event or a
    stand-in keeps: targets (host names, programs), substitutes, attribute paths, seams.
    The tree keeps the text as recorded (its order and merging are decided on it).
    ``previews`` (``--genome-preview``): the previews of calls' small scalar values
    (``collect/preview.py``)."""
    nodes: list[dict[str, Any]] = []
    branches: list[dict[str, Any]] = []
    digests = _memo_for(digester)

    def visit(group: list[Node], parent_id: int | None) -> int:
        first = group[0]
        node_id = len(nodes)
        count = first.count if len(group) == 1 else sum(node.count for node in group)
        record: dict[str, Any]
        if first.ntype == NODE_CALL:
            info = first.key
            if previews is None and len(group) == 1:
                args, args_overflow = first.args.export(digests)
                results, results_overflow = first.results.export(digests)
            elif previews is None:
                args, args_overflow = _values(group, "args", digests)
                results, results_overflow = _values(group, "results", digests)
            else:
                args, args_overflow = _values(group, "args", digests, previews.args)
                results, results_overflow = _values(
                    group, "results", digests, previews.result_of(info.symbol)
                )
            record = {
                "id": node_id,
                "parent": parent_id,
                "type": TYPE_CALL,
                "symbol": info.symbol,
                "count": count,
                "exits": _exits(group),
                "args": args,
            }
            if args_overflow is not None:
                record["args_overflow"] = args_overflow
            record["results"] = results
            if results_overflow is not None:
                record["results_overflow"] = results_overflow
            record["state"], state_overflow = _state(group)
            if state_overflow:
                record["state_overflow"] = {"count": state_overflow, "digest": None}
            if first.via:
                record["via"] = first.via
            nodes.append(record)
            filemap = info.filemap
            if filemap is not None:
                site_counts: dict[int, list[int]] = {}
                for node in group:
                    for outcome, n in node.branches.items():
                        counts = site_counts.get(outcome >> 1)
                        if counts is None:
                            counts = site_counts[outcome >> 1] = [0, 0]
                        counts[outcome & 1] += n
                if site_counts:
                    sites = filemap.sites
                    order = (
                        sorted(site_counts, key=lambda i: sites[i].id)
                        if len(site_counts) > 1
                        else site_counts
                    )
                    for index in order:
                        site = sites[index]
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
            args, args_overflow = _values(group, "args", digests)
            record = {
                "id": node_id,
                "parent": parent_id,
                "type": TYPE_SUBSTITUTION,
                "mechanism": mechanism,
                "substitute": clear(substitute) if substitute else substitute,
                "claimed_target": claimed,
                "relation": relation,
                "path": clear(path) if path else path,
                "count": count,
                "args": args,
            }
            if args_overflow is not None:
                record["args_overflow"] = args_overflow
            if mechanism != INTERPOSITION:  # installed, not called: nothing to exit
                record["exits"] = _exits(group)
            record["signature_mismatch"] = any(
                node.flags is not None and "signature_mismatch" in node.flags for node in group
            )
            seam = _seam(group, clear)
            if seam is not None:
                record["seam"] = seam
            nodes.append(record)
        else:
            _, kind, target, outcome = first.key
            nodes.append(
                {
                    "id": node_id,
                    "parent": parent_id,
                    "type": TYPE_OS_EVENT,
                    "kind": kind,
                    "target": clear(target),
                    "outcome": outcome,
                    "count": count,
                }
            )
        return node_id

    # Depth first, parents before children, siblings in identity order -- without recursion:
    # a test may record a call chain as deep as the recursion limit it raised for itself,
    # and the limit is back down when the phase is exported.
    stack: list[tuple[list[Node], int | None]] = [
        (group, None) for group in reversed(_child_groups([capture.root]))
    ]
    while stack:
        group, parent_id = stack.pop()
        node_id = visit(group, parent_id)
        stack.extend((kids, node_id) for kids in reversed(_child_groups(group)))
    return {"nodes": nodes, "branches": branches}
