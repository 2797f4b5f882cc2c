"""Two aligned recordings of one test compared into their differences (:class:`Found`), each
with what it is: a kind, a place, both sides' values, and whether it is timing by its nature
(a finalizer, another test's thread). None is judged here: what is unstable is
:mod:`~diffgenome.analysis.diff.instability`'s, each test's status
:mod:`~diffgenome.analysis.diff.verdict`'s.

A change is reported where behaviour differs at an aligned node or decision. Three rules keep
the list readable without hiding anything: a subtree that exists on one side only is reported
once, at its top call; a count that changed only because its parent ran proportionally more
often (a loop went round more) is not repeated on every descendant; and exit or decision
counts that merely scale with the node's count are not a change of *how* the code behaved.
Stand-ins and OS events are reported wherever they appear, even below an added or removed
call, because a new network connection or a vanished mock matters on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from diffgenome.analysis.diff.align import NodeDict, Path, PhaseIndex, TestIndex
from diffgenome.analysis.diff.effects import effects_diff
from diffgenome.analysis.diff.warned import warnings_diff
from diffgenome.analysis.models import Change, ChangeKind
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    BRANCH_CHANGED,
    CALL_ADDED,
    CALL_COUNT_CHANGED,
    CALL_REMOVED,
    EGRESS_ADDED,
    EGRESS_REMOVED,
    ESCAPED_WARNINGS_CHANGED,
    EXIT_CHANGED,
    EXIT_RAISED_PREFIX,
    EXIT_RUNNING,
    OUTCOME_CHANGED,
    PHASES,
    RESULT_CHANGED,
    STAND_IN_ADDED,
    STAND_IN_CHANGED,
    STAND_IN_REMOVED,
    STATE_CHANGED,
    SYMBOL_PREFIX,
    TYPE_CALL,
    TYPE_OS_EVENT,
    TYPE_SUBSTITUTION,
    VIA_EARLIER_THREAD,
    VIA_FOREIGN_THREAD,
    VIA_THREAD,
)

# Kinds that say a node exists on one side only: instability of such a node covers its subtree.
PRESENCE_KINDS = frozenset(
    {CALL_ADDED, CALL_REMOVED, STAND_IN_ADDED, STAND_IN_REMOVED, EGRESS_ADDED, EGRESS_REMOVED}
)

_ADDED: dict[str, ChangeKind] = {
    TYPE_CALL: CALL_ADDED,
    TYPE_SUBSTITUTION: STAND_IN_ADDED,
    TYPE_OS_EVENT: EGRESS_ADDED,
}
_REMOVED: dict[str, ChangeKind] = {
    TYPE_CALL: CALL_REMOVED,
    TYPE_SUBSTITUTION: STAND_IN_REMOVED,
    TYPE_OS_EVENT: EGRESS_REMOVED,
}

StabilityKey = tuple[str, str | None, Path, str | None]


@dataclass(frozen=True, slots=True)
class Found:
    """One difference, before it becomes a :class:`Change` (cheap to make by the thousand)."""

    kind: ChangeKind
    phase: str | None
    path: Path
    symbol: str | None = None
    site: str | None = None
    predicate: str | None = None
    base: Any = None
    head: Any = None
    # Set where the difference is, by its nature, one of timing rather than of behaviour
    # (FINALIZER): the differ reports it as unstable, never as a change.
    timing: str | None = None

    def key(self) -> StabilityKey:
        """What must match for a difference between repeats to cover this one."""
        family: str = "presence" if self.kind in PRESENCE_KINDS else self.kind
        if self.timing:  # finalization's warnings never cover the others
            family = f"{family}|{self.timing}"
        return (family, self.phase, self.path, self.site)

    def change(self) -> Change:
        return Change(
            kind=self.kind,
            phase=self.phase,
            path=list(self.path),
            symbol=self.symbol,
            site=self.site,
            predicate=self.predicate,
            base=self.base,
            head=self.head,
        )


def compare_tests(base: TestIndex, head: TestIndex, *, digests: bool) -> list[Found]:
    """Every difference between two recordings of one test.

    ``digests``: whether value digests of the two runs were made with the same key; if not,
    values compare by shape only.
    """
    found: list[Found] = []
    b_outcome, h_outcome = base.record.get("outcome"), head.record.get("outcome")
    if b_outcome != h_outcome:
        found.append(Found(OUTCOME_CHANGED, None, (), base=b_outcome, head=h_outcome))
    b_warned, h_warned = base.record.get("warnings"), head.record.get("warnings")
    if b_warned != h_warned:
        for timed in (False, True):
            warned = warnings_diff(
                _finalizing(b_warned, timed), _finalizing(h_warned, timed), digests=digests
            )
            if warned is not None:
                found.append(
                    Found(
                        ESCAPED_WARNINGS_CHANGED,
                        None,
                        (),
                        base=warned[0],
                        head=warned[1],
                        timing=FINALIZER if timed else None,
                    )
                )
    for kind, phase, b_effects, h_effects in effects_diff(
        base.record, head.record, digests=digests
    ):
        found.append(Found(kind, phase, (), base=b_effects, head=h_effects))
    if base.record.get("phases") == head.record.get("phases"):
        return found  # the common case, decided at C speed
    empty = PhaseIndex()
    for phase in _phases(base.phases, head.phases):
        b_phase, h_phase = base.phases.get(phase, empty), head.phases.get(phase, empty)
        start = len(found)
        _compare_phase(phase, b_phase, h_phase, digests, found)
        found[start:] = [_timed(item, b_phase, h_phase) for item in found[start:]]
    return found


def one_sided_stand_ins(test: TestIndex, *, base_side: bool) -> list[Found]:
    """The stand-ins of a test that one side has and the other has not (added, or removed,
    with the test): nothing else of it is a difference, but which real code a new test
    replaces is what a reviewer reads it for ("which tests mock what changed?")."""
    kinds = _REMOVED if base_side else _ADDED
    out: list[Found] = []
    seen: set[str] = set()
    phases = test.phases
    for phase in _phases(phases, {}):
        for path, node in phases[phase].nodes.items():
            # One entry per stand-in, where it first acts: a timer mock called from three
            # places is one thing the test replaces, not three.
            if node.get("type") == TYPE_SUBSTITUTION and path[-1] not in seen:
                seen.add(path[-1])
                out.append(_one_sided(kinds, phase, path, node, base_side=base_side))
    return out


def _timed(item: Found, base: PhaseIndex, head: PhaseIndex) -> Found:
    if _in_finalizer(item.path):
        return replace(item, timing=FINALIZER)
    if any(element.endswith(_FOREIGN_THREAD) for element in item.path):
        return replace(item, timing=THREAD_TIMING)
    if _in_unfinished_thread(item.path, base, head):
        return replace(item, timing=UNFINISHED_THREAD)
    return item


def _in_unfinished_thread(path: Path, base: PhaseIndex, head: PhaseIndex) -> bool:
    """True below (or at) a thread's top call that was still running, on either side, when
    the phase ended: how far such a thread got is decided by the scheduler, not the code."""
    for depth, element in enumerate(path, 1):
        if not element.endswith(_OWN_THREADS):
            continue
        prefix = path[:depth]
        for nodes in (base.nodes, head.nodes):
            node = nodes.get(prefix)
            if node is not None and (node.get("exits") or {}).get(EXIT_RUNNING):
                return True
    return False


# Finalizers (``__del__``) and what the interpreter says when it finalizes something (an
# unclosed resource, a coroutine never awaited, an exception in ``__del__``) run whenever the
# last reference goes or the garbage collector runs: in whichever test allocates enough to
# trigger a collection. Which test shows them is timing, not behaviour (google-auth: 12 tests
# on an identical tree, all ``Request.__del__`` and such warnings).
FINALIZER = "finalizer timing"
# Work of a thread another test started (a worker still refreshing, a module fixture's
# server) lands in whichever phase runs when it happens (google-auth: 11 tests on an
# identical tree).
THREAD_TIMING = "thread timing"
# Work of a thread this test started that had not finished, on one side, when the phase ended
# (see _in_unfinished_thread). Unlike the two above, never applied in a test that runs changed
# code: a change can be what keeps a thread from finishing (a deadlock, a lost wake-up).
UNFINISHED_THREAD = "unfinished thread"
#: Timing that is put down to the runs only in tests that run no changed code.
TIMING_UNLESS_CHANGED = frozenset({UNFINISHED_THREAD})
_FOREIGN_THREAD = f"(via {VIA_FOREIGN_THREAD})"
# A thread this test started (in this phase or an earlier one) that had not finished when the
# phase ended, on one side or both: what it did by then is a race with the phase's end
# (google-auth: a refresh thread done or not when the test returns; google-api-core: a
# background consumer stopped mid-loop).
_OWN_THREADS = (f"(via {VIA_THREAD})", f"(via {VIA_EARLIER_THREAD})")
_FINALIZER_SUFFIX = ".__del__"
_FINALIZING_WARNINGS = frozenset(
    {
        "ResourceWarning",
        "pytest.PytestUnraisableExceptionWarning",
        "pytest.PytestUnhandledThreadExceptionWarning",
    }
)


def _in_finalizer(path: Path) -> bool:
    return any(element.partition(" ")[0].endswith(_FINALIZER_SUFFIX) for element in path)


def _is_finalizing_warning(item: Mapping[str, Any]) -> bool:
    if item.get("finalizing") is True:  # the recorder saw the text (which it keeps digested)
        return True
    category = item.get("category")
    if category in _FINALIZING_WARNINGS:
        return True
    return category == "RuntimeWarning" and "was never awaited" in str(item.get("message"))


def _finalizing(warned: object, timed: bool) -> object:
    """The warnings of one kind (said at finalization or not); None stays None (unknown)."""
    if not isinstance(warned, list):
        return warned
    return [
        item
        for item in warned
        if isinstance(item, Mapping) and _is_finalizing_warning(item) == timed
    ]


def _phases(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    extra = sorted((set(a) | set(b)) - set(PHASES))
    return [phase for phase in PHASES if phase in a or phase in b] + extra


def _compare_phase(
    phase: str, base: PhaseIndex, head: PhaseIndex, digests: bool, out: list[Found]
) -> None:
    b_nodes, h_nodes = base.nodes, head.nodes
    for path, node in b_nodes.items():
        other = h_nodes.get(path)
        if other is not None:
            if other == node:
                continue
            _compare_nodes(phase, path, node, other, b_nodes, h_nodes, digests, out)
        elif node.get("type") != TYPE_CALL or len(path) == 1 or path[:-1] in h_nodes:
            out.append(_one_sided(_REMOVED, phase, path, node, base_side=True))
    for path, node in h_nodes.items():
        if path in b_nodes:
            continue
        if node.get("type") != TYPE_CALL or len(path) == 1 or path[:-1] in b_nodes:
            out.append(_one_sided(_ADDED, phase, path, node, base_side=False))
    _compare_branches(phase, base, head, out)


def _one_sided(
    kinds: Mapping[str, ChangeKind], phase: str, path: Path, node: NodeDict, *, base_side: bool
) -> Found:
    kind = kinds.get(str(node.get("type")), kinds[TYPE_CALL])
    value = node_summary(node)
    symbol = _node_symbol(node)
    if base_side:
        return Found(kind, phase, path, symbol, base=value)
    return Found(kind, phase, path, symbol, head=value)


def _node_symbol(node: NodeDict) -> str | None:
    kind = node.get("type")
    if kind == TYPE_CALL:
        return str(node.get("symbol"))
    if kind == TYPE_SUBSTITUTION:
        target = node.get("claimed_target")
        return str(target) if target else None
    return None


def node_summary(node: NodeDict) -> dict[str, Any]:
    """A small JSON-able picture of a node that exists on one side only."""
    kind = node.get("type")
    if kind == TYPE_SUBSTITUTION:
        return {
            "mechanism": node.get("mechanism"),
            "substitute": node.get("substitute"),
            "relation": node.get("relation"),
            "path": node.get("path"),
            "count": node.get("count"),
        }
    if kind == TYPE_OS_EVENT:
        return {
            "kind": node.get("kind"),
            "target": node.get("target"),
            "outcome": node.get("outcome"),
            "count": node.get("count"),
        }
    return {"count": node.get("count"), "exits": dict(node.get("exits") or {})}


def _count(node: NodeDict | None) -> int:
    if node is None:
        return 0
    value = node.get("count")
    return value if isinstance(value, int) else 0


def _scaled_with_parent(
    path: Path, b: int, h: int, b_nodes: Mapping[Path, NodeDict], h_nodes: Mapping[Path, NodeDict]
) -> bool:
    """True when the count moved exactly in proportion to the parent's (more loop rounds)."""
    if len(path) < 2:
        return False
    pb, ph = _count(b_nodes.get(path[:-1])), _count(h_nodes.get(path[:-1]))
    if pb == ph:
        return False
    return b * ph == h * pb


def _proportional(b: Mapping[str, int], h: Mapping[str, int], bn: int, hn: int) -> bool:
    """Same set of non-zero outcomes, each equal or scaled like the node's count.

    Equal outcomes are never a change, whatever the counts: a decision taken twice each way
    on both sides was taken alike even if its function ran more often on one (that is a
    count change, reported on the call). Reporting it would show ``true 2 → true 2``.
    """
    b_keys = {key for key, value in b.items() if value}
    h_keys = {key for key, value in h.items() if value}
    if b_keys != h_keys:
        return False
    if all(b[key] == h[key] for key in b_keys):
        return True
    if bn == hn or bn == 0 or hn == 0:
        return all(b[key] == h[key] for key in b_keys)
    return all(b[key] * hn == h[key] * bn for key in b_keys)


def _compare_nodes(
    phase: str,
    path: Path,
    b: NodeDict,
    h: NodeDict,
    b_nodes: Mapping[Path, NodeDict],
    h_nodes: Mapping[Path, NodeDict],
    digests: bool,
    out: list[Found],
) -> None:
    kind = b.get("type")
    bc, hc = _count(b), _count(h)
    if kind == TYPE_SUBSTITUTION:
        _compare_stand_ins(phase, path, b, h, digests, out)
        return
    symbol = _node_symbol(b)
    if bc != hc and not _scaled_with_parent(path, bc, hc, b_nodes, h_nodes):
        out.append(Found(CALL_COUNT_CHANGED, phase, path, symbol, base=bc, head=hc))
    if kind == TYPE_OS_EVENT:
        if b.get("outcome") != h.get("outcome"):
            out.append(
                Found(
                    EXIT_CHANGED,
                    phase,
                    path,
                    base={"outcome": b.get("outcome")},
                    head={"outcome": h.get("outcome")},
                )
            )
        return
    b_exits, h_exits = b.get("exits") or {}, h.get("exits") or {}
    if not _proportional(b_exits, h_exits, bc, hc):
        out.append(Found(EXIT_CHANGED, phase, path, symbol, base=dict(b_exits), head=dict(h_exits)))
    fields: tuple[tuple[str, ChangeKind], ...] = (
        ("args", ARGS_CHANGED),
        ("results", RESULT_CHANGED),
    )
    for field, kind_name in fields:
        diff = values_diff(b, h, field, digests)
        if diff is not None and field == "results":
            diff = _beside_raised(diff, b_exits, h_exits)
        if diff is not None and bc != hc and _only_the_overflow(diff):
            # Every value kept is on both sides, and only the count beyond the bound moved,
            # with the call's own count: that restates the count (said once, above), it
            # says nothing of which values (``args: +36 more → +40 more``, soupsieve).
            diff = None
        if diff is not None:
            out.append(Found(kind_name, phase, path, symbol, base=diff[0], head=diff[1]))
    state = _state_diff(b, h, digests)
    if state is not None:
        out.append(Found(STATE_CHANGED, phase, path, symbol, base=state[0], head=state[1]))


_RAISED_SYMBOL = EXIT_RAISED_PREFIX + SYMBOL_PREFIX


def _beside_raised(
    diff: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    b_exits: Mapping[str, int],
    h_exits: Mapping[str, int],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """A results difference without the exceptions of a type that one side only raised: the
    exit change says that already (``raised:ValueError → raised:InvalidQuantity``), and the
    same news twice reads as two changes. Exceptions of a type both sides raised stay: a
    changed message is a changed result."""
    b_raised = {k[len(_RAISED_SYMBOL) :] for k in b_exits if k.startswith(_RAISED_SYMBOL)}
    h_raised = {k[len(_RAISED_SYMBOL) :] for k in h_exits if k.startswith(_RAISED_SYMBOL)}
    only_b, only_h = b_raised - h_raised, h_raised - b_raised
    if not only_b and not only_h:
        return diff
    b_out = [value for value in diff[0] if value.get("shape") not in only_b]
    h_out = [value for value in diff[1] if value.get("shape") not in only_h]
    return (b_out, h_out) if b_out or h_out else None


def _compare_stand_ins(
    phase: str, path: Path, b: NodeDict, h: NodeDict, digests: bool, out: list[Found]
) -> None:
    b_diff: dict[str, Any] = {}
    h_diff: dict[str, Any] = {}
    for field in ("substitute", "relation", "signature_mismatch"):
        if b.get(field) != h.get(field):
            b_diff[field], h_diff[field] = b.get(field), h.get(field)
    # The seam (signatures, readings, problems): a recording from before the seam check has
    # none, which is not a change of the seam.
    b_seam, h_seam = b.get("seam"), h.get("seam")
    if b_seam is not None and h_seam is not None and b_seam != h_seam:
        b_diff["seam"], h_diff["seam"] = b_seam, h_seam
    bc, hc = _count(b), _count(h)
    if bc != hc:
        b_diff["count"], h_diff["count"] = bc, hc
    b_exits, h_exits = b.get("exits") or {}, h.get("exits") or {}
    if not _proportional(b_exits, h_exits, bc, hc):
        b_diff["exits"], h_diff["exits"] = dict(b_exits), dict(h_exits)
    args = values_diff(b, h, "args", digests)
    if args is not None:
        b_diff["args"], h_diff["args"] = args
    if b_diff or h_diff:
        out.append(Found(STAND_IN_CHANGED, phase, path, _node_symbol(b), base=b_diff, head=h_diff))


def _value_key(value: Mapping[str, Any], digests: bool) -> tuple[str, str | None]:
    return (str(value.get("shape")), value.get("digest") if digests else None)


def _overflow(node: NodeDict, field: str, digests: bool) -> tuple[int, str | None] | None:
    raw = node.get(f"{field}_overflow")
    if not raw:
        return None
    return (int(raw.get("count") or 0), raw.get("digest") if digests else None)


def _value_out(
    key: tuple[str, str | None], digests: bool, previews: Mapping[tuple[str, str | None], str]
) -> dict[str, Any]:
    if not digests:
        return {"shape": key[0]}
    out: dict[str, Any] = {"shape": key[0], "digest": key[1]}
    preview = previews.get(key)
    if preview is not None:
        out["preview"] = preview
    return out


def _previews(entries: object) -> dict[tuple[str, str | None], str]:
    """The previews (``--genome-preview``) of one side's entries, by what they compare by:
    shown with a change, never compared."""
    out: dict[tuple[str, str | None], str] = {}
    for value in entries if isinstance(entries, list) else ():
        preview = value.get("preview") if isinstance(value, Mapping) else None
        if isinstance(preview, str):
            out[_value_key(value, True)] = preview
    return out


def _overflow_out(overflow: tuple[int, str | None], digests: bool) -> dict[str, Any]:
    if digests:
        return {"overflow": overflow[0], "digest": overflow[1]}
    return {"overflow": overflow[0]}


def values_diff(
    b: NodeDict, h: NodeDict, field: str, digests: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """Values seen on one side only (and the overflow, when it differs), or None if equal."""
    b_set = {_value_key(v, digests) for v in b.get(field) or ()}
    h_set = {_value_key(v, digests) for v in h.get(field) or ()}
    b_over, h_over = _overflow(b, field, digests), _overflow(h, field, digests)
    if b_set == h_set and b_over == h_over:
        return None
    b_shown, h_shown = _previews(b.get(field)), _previews(h.get(field))
    b_out = [_value_out(key, digests, b_shown) for key in sorted(b_set - h_set, key=_sort_key)]
    h_out = [_value_out(key, digests, h_shown) for key in sorted(h_set - b_set, key=_sort_key)]
    # A bounded set keeps the first values it meets: one that is not kept on the side with
    # more values beyond the bound may be among them (pushed out by a new one, not gone).
    b_beyond, h_beyond = (b_over or (0, None))[0], (h_over or (0, None))[0]
    for values, other_beyond, own_beyond in (
        (b_out, h_beyond, b_beyond),
        (h_out, b_beyond, h_beyond),
    ):
        if other_beyond > own_beyond:
            for value in values:
                value["beyond"] = True
    if b_over != h_over:
        if b_over is not None:
            b_out.append(_overflow_out(b_over, digests))
        if h_over is not None:
            h_out.append(_overflow_out(h_over, digests))
    return b_out, h_out


def _only_the_overflow(diff: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> bool:
    """Whether a values difference is nothing but the overflow entries on both sides."""
    return bool(diff[0] and diff[1]) and all("overflow" in value for side in diff for value in side)


def _sort_key(key: tuple[str, str | None]) -> tuple[str, str]:
    return (key[0], key[1] or "")


def _state_diff(
    b: NodeDict, h: NodeDict, digests: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    def facts(node: NodeDict) -> set[tuple[str, str, str]]:
        return {
            (str(f.get("when")), str(f.get("target")), str(f.get("bucket")))
            for f in node.get("state") or ()
        }

    b_set, h_set = facts(b), facts(h)
    b_over, h_over = _overflow(b, "state", digests), _overflow(h, "state", digests)
    if b_set == h_set and b_over == h_over:
        return None

    def out(items: Iterable[tuple[str, str, str]]) -> list[dict[str, Any]]:
        return [{"when": w, "target": t, "bucket": k} for w, t, k in sorted(items)]

    b_out, h_out = out(b_set - h_set), out(h_set - b_set)
    if b_over != h_over:
        if b_over is not None:
            b_out.append(_overflow_out(b_over, digests))
        if h_over is not None:
            h_out.append(_overflow_out(h_over, digests))
    return b_out, h_out


def _outcomes(branch: NodeDict | None) -> dict[str, int]:
    raw = (branch or {}).get("outcomes") or {}
    return {"true": int(raw.get("true") or 0), "false": int(raw.get("false") or 0)}


def _compare_branches(phase: str, base: PhaseIndex, head: PhaseIndex, out: list[Found]) -> None:
    for key, b in base.branches.items():
        path, site = key
        h = head.branches.get(key)
        if h is None:
            if path and path not in head.nodes:
                continue  # below a removed node: reported there
            out.append(_branch_found(phase, path, site, b, _outcomes(b), None))
            continue
        b_out, h_out = _outcomes(b), _outcomes(h)
        if not _proportional(
            b_out, h_out, _count(base.nodes.get(path)), _count(head.nodes.get(path))
        ):
            out.append(_branch_found(phase, path, site, h, b_out, h_out))
    for key, h in head.branches.items():
        path, site = key
        if key in base.branches or (path and path not in base.nodes):
            continue
        out.append(_branch_found(phase, path, site, h, None, _outcomes(h)))


def _branch_found(
    phase: str,
    path: Path,
    site: str,
    branch: NodeDict,
    base: dict[str, int] | None,
    head: dict[str, int] | None,
) -> Found:
    symbol = branch.get("symbol")
    return Found(
        BRANCH_CHANGED,
        phase,
        path,
        str(symbol) if symbol else None,
        site,
        branch.get("predicate"),
        base,
        head,
    )
