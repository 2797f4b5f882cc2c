"""Behaviour told apart from structure: what a refactor moved, and whether anything else did.

Extracting a helper, inlining one, renaming or moving a method, or turning a loop into a
generator adds and removes calls, but only calls *to code that exists on one side only*: the
helper is new, the old name is gone. Everything that crosses out of that code still crosses
out the same way if the refactor is pure: the results and exits of the nearest calls present
on both sides, the arguments passed to code outside it, the state it leaves, the stand-ins it
talks to, the network, the warnings, the outcome.

So both recordings of a test are *contracted*: every call node of a symbol the code change
added or removed is taken out, its children hung under its nearest kept ancestor (nodes that
then share a path are merged: counts and exits added, value sets joined), and the decisions
of changed code are keyed by what they test rather than by the function they now live in.
The contracted trees are compared with the ordinary differ. What still differs is behaviour;
if nothing does (beyond decisions that exist in one side's code only), the test is
``restructured``. A merge the recordings cannot support exactly (a value set that overflowed
its bound, stand-ins that disagree) makes the contraction unavailable, and the test is judged
as before: never quieter than the evidence allows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from diffgenome.analysis.diff.align import NodeDict, TestIndex, element
from diffgenome.analysis.diff.codechanges import CodeChangeInput, SymbolChange
from diffgenome.protocol.vocab import (
    CLASS_ATTRIBUTE_BUCKET,
    CODE_ADDED,
    CODE_MODIFIED,
    CODE_REMOVED,
    EXIT_RETURNED,
    STATE_EXIT,
    SYMBOL_PREFIX,
    TYPE_CALL,
    TYPE_SUBSTITUTION,
)

# A decision of changed code, keyed without the function it lives in (``~/if[3f2a9c01d4]``):
# a condition moved into an extracted helper is the same condition.
MOVED_SITE = "~"
_VALUE_FIELDS = ("args", "results")


@dataclass(frozen=True, slots=True)
class Region:
    """The changed code of a diff, as the contraction needs it."""

    one_sided: frozenset[str]  # symbols the change added or removed
    changed: frozenset[str]  # every symbol the change touched (modified ones too)
    changes: Mapping[str, SymbolChange]
    #: Module symbols of both runs, where the change touched a module body (its imports may
    #: have changed); empty otherwise, and then import nesting is compared as recorded.
    modules: frozenset[str] = frozenset()

    def looks_up_new_code(self, facts: object) -> bool:
        """Whether state facts only say that code looked up a method existing on one side
        only (``self._helper``: not in the instance, on its class where it exists; ``absent``
        from runs of values revision 2): implied by the code change itself."""
        if not isinstance(facts, list) or not facts:
            return False
        names = self.one_sided_names()
        return all(
            isinstance(fact, Mapping)
            and str(fact.get("target", "")).startswith("self.")
            and fact.get("target") in names
            and fact.get("bucket") in ("absent", CLASS_ATTRIBUTE_BUCKET)
            for fact in facts
        )

    def one_sided_names(self) -> frozenset[str]:
        """State targets that name code existing on one side only: looking up a new
        method (``self._helper``, bucket ``absent``: not in the instance) or a new
        module-level function (``global:_helper``) is the new code being there."""
        names = {symbol.rpartition(".")[2] for symbol in self.one_sided if "<" not in symbol}
        return frozenset(target for name in names for target in (f"self.{name}", f"global:{name}"))

    @classmethod
    def of(cls, code_changes: CodeChangeInput, modules: Iterable[str] = ()) -> Region:
        """``modules``: the symbols of kind ``module`` in either run's symbol table."""
        added = {c.symbol for c in code_changes.symbols if c.change == CODE_ADDED}
        removed = {c.symbol for c in code_changes.symbols if c.change == CODE_REMOVED}
        # A lambda or generator expression is named by its content: one whose code changed
        # is "removed" under its old name and "added" under its new one, yet it is the same
        # code, modified. Its values are behaviour, so it is never contracted.
        edited = {_anonymous_slot(s) for s in added} & {_anonymous_slot(s) for s in removed}
        edited.discard(None)
        # ... unless it is the same code, renamed because where it is bound was (the callee
        # it is passed to renamed, voluptuous' ``self._exec(... for val in ...)``): then it
        # is contracted like a renamed function.
        bodies = {c.symbol: c.body for c in code_changes.symbols}
        for slot in list(edited):
            new = [s for s in added if _anonymous_slot(s) == slot]
            old = [s for s in removed if _anonymous_slot(s) == slot]
            same = len(new) == len(old) == 1 and bodies.get(new[0]) is not None
            if same and bodies.get(new[0]) == bodies.get(old[0]):
                edited.discard(slot)
        changed = frozenset(c.symbol for c in code_changes.symbols)
        known = frozenset(modules)
        return cls(
            one_sided=frozenset(s for s in added | removed if _anonymous_slot(s) not in edited),
            changed=changed,
            changes=code_changes.by_symbol(),
            modules=known if known & changed else frozenset(),
        )


@dataclass(slots=True)
class Contracted:
    """A test's recording with the calls to one-sided code taken out."""

    test: TestIndex
    #: One-sided symbol -> the symbols of its nearest kept callers (``None``: the phase root).
    moved: dict[str, set[str | None]] = field(default_factory=dict)
    #: Module -> the module that first imported it (``None``: no module did), where module
    #: bodies were hung under the nearest code that is no module body.
    importers: dict[str, str | None] = field(default_factory=dict)


_CONTENT_NAME = re.compile(r"(<(?:lambda|genexpr)>)\[[0-9a-f]+\]")


def _anonymous_slot(symbol: str) -> str | None:
    """Where an anonymous function sits, without the digest of its content
    (``m.f.<locals>.<genexpr>[3f2a9c01d4]`` → ``m.f.<locals>.<genexpr>``); None for a named
    function."""
    slot, n = _CONTENT_NAME.subn(r"\1", symbol)
    return slot if n else None


class _CannotMerge(Exception):
    """Two nodes fall on one path and the recordings cannot say what their union is."""


def runs_one_sided_code(test: TestIndex, region: Region) -> bool:
    raw = test.record.get("phases")
    return isinstance(raw, Mapping) and _mentions(raw, region.one_sided)


def imports_modules(test: TestIndex, region: Region) -> bool:
    """Whether ``test`` ran a module body while the change touched one: who imports a
    module first may then have moved, which the contraction tells apart from behaviour."""
    raw = test.record.get("phases")
    return bool(region.modules) and isinstance(raw, Mapping) and _mentions(raw, region.modules)


def contract(test: TestIndex, region: Region) -> Contracted | None:
    """``test`` contracted over ``region``, the decisions of changed code keyed by what they
    test (done to both sides of a test as soon as one side runs one-sided code, so that
    they key alike); None when a merge the recording cannot support exactly would be
    needed."""
    raw = test.record.get("phases")
    out = Contracted(TestIndex({}))
    if not isinstance(raw, Mapping):
        out.test = test
        return out
    phases: dict[str, Any] = {}
    try:
        for phase, genome in raw.items():
            phases[phase] = (
                _contract_phase(genome, region, out) if isinstance(genome, Mapping) else genome
            )
    except _CannotMerge:
        return None
    out.test = TestIndex({**test.record, "phases": phases})
    return out


def _mentions(phases: Mapping[str, Any], symbols: frozenset[str]) -> bool:
    for genome in phases.values():
        if not isinstance(genome, Mapping):
            continue
        for node in genome.get("nodes") or ():
            if node.get("type") == TYPE_CALL and node.get("symbol") in symbols:
                return True
    return False


def _in_parent_order(nodes: Sequence[NodeDict]) -> list[NodeDict]:
    """Nodes with every parent before its children (without recursion; a damaged link makes
    the node a root, as the aligner does)."""
    by_id = {node.get("id"): node for node in nodes}
    depth: dict[Any, int] = {}
    for node in nodes:
        chain = []
        current: NodeDict | None = node
        seen: set[Any] = set()
        while current is not None and current.get("id") not in depth:
            if current.get("id") in seen:
                break
            seen.add(current.get("id"))
            chain.append(current)
            parent = current.get("parent")
            current = by_id.get(parent) if parent is not None else None
        base = (
            depth[current.get("id")] + 1
            if current is not None and current.get("id") in depth
            else 0
        )
        for offset, item in enumerate(reversed(chain)):
            depth[item.get("id")] = base + offset
    return sorted(nodes, key=lambda node: depth.get(node.get("id"), 0))


def _contract_phase(genome: Mapping[str, Any], region: Region, out: Contracted) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    by_key: dict[tuple[int | None, str], list[int]] = {}
    # Old id -> the new id it now is (a kept node) or hangs under (a contracted one).
    mapping: dict[Any, int | None] = {}
    contracted: set[Any] = set()  # old ids of the calls contracted out
    joined: set[Any] = set()  # old ids of the nodes folded into a node already there
    # The state targets each kept node's own code read (at its own entry and exit), before
    # any contracted call's facts were lifted into it.
    own_targets: list[frozenset[str]] = []
    known = {node.get("id") for node in genome.get("nodes") or ()}
    symbol_of = {node.get("id"): node.get("symbol") for node in genome.get("nodes") or ()}
    for node in _in_parent_order(list(genome.get("nodes") or ())):
        parent = node.get("parent")
        new_parent = mapping.get(parent) if parent is not None and parent in known else None
        hoisted = False
        if node.get("type") == TYPE_CALL and node.get("symbol") in region.modules:
            # A module body runs once, wherever the first import of it happens to be: under
            # the module that imported it first. That is import order; what the body does
            # hangs under it. Kept under the nearest code that is no module body, so a
            # module first imported by another one is the same node on both sides.
            importer = symbol_of.get(parent) if parent in known else None
            out.importers[str(node.get("symbol"))] = (
                str(importer) if importer in region.modules else None
            )
            while new_parent is not None and nodes[new_parent].get("symbol") in region.modules:
                new_parent = nodes[new_parent].get("parent")
                hoisted = True
        if node.get("type") == TYPE_CALL and node.get("symbol") in region.one_sided:
            contracted.add(node.get("id"))
            mapping[node.get("id")] = new_parent
            if new_parent is not None:
                _lift_state(nodes[new_parent], node, own_targets[new_parent])
            caller = None if new_parent is None else nodes[new_parent].get("symbol")
            out.moved.setdefault(str(node.get("symbol")), set()).add(
                None if caller is None else str(caller)
            )
            continue
        key = (new_parent, element(node))
        same = by_key.setdefault(key, [])
        # Only a node lifted out of a contracted call joins a node it now falls on, its twin;
        # siblings the recording kept apart stay apart although they look alike (two
        # test-local callbacks called by one function are two stand-ins with one element),
        # and a lifted node with several twins cannot say which one it is.
        lifted = hoisted or parent in contracted or parent in joined
        twins = [i for i in same if _twin(nodes[i], node)] if lifted else []
        if len(twins) > 1:
            raise _CannotMerge
        if twins:
            index = twins[0]
            _merge(nodes[index], node)
            joined.add(node.get("id"))
        else:
            index = len(nodes)
            same.append(index)
            nodes.append({**node, "id": index, "parent": new_parent})
            own_targets.append(_targets(node))
        mapping[node.get("id")] = index
    branches: dict[tuple[int, str], dict[str, Any]] = {}
    for branch in genome.get("branches") or ():
        old = branch.get("node")
        at = mapping.get(old) if old in known else None
        site = str(branch.get("site"))
        symbol = str(branch.get("symbol") or "")
        if symbol in region.changed and site.startswith(symbol):
            key_site = MOVED_SITE + site[len(symbol) :]
        else:
            key_site = site
        where = -1 if at is None else at
        existing = branches.get((where, key_site))
        if existing is None:
            branches[(where, key_site)] = {
                **branch,
                "node": where,
                "site": key_site,
                "outcomes": dict(branch.get("outcomes") or {}),
            }
        else:
            for outcome, n in (branch.get("outcomes") or {}).items():
                existing["outcomes"][outcome] = existing["outcomes"].get(outcome, 0) + int(n or 0)
    return {**genome, "nodes": nodes, "branches": list(branches.values())}


def _twin(kept: Mapping[str, Any], node: NodeDict) -> bool:
    """Whether ``node``, lifted onto a sibling ``kept`` of the same element, is that sibling:
    a stand-in is the same one only when the same code stands in (its ``substitute``)."""
    if node.get("type") == TYPE_SUBSTITUTION:
        return bool(kept.get("substitute") == node.get("substitute"))
    return True


def _merge(into: dict[str, Any], node: NodeDict) -> None:
    """Fold ``node`` into ``into`` (same path): exactly, or not at all."""
    if node.get("type") == TYPE_SUBSTITUTION:
        for name in ("substitute", "relation", "signature_mismatch", "seam", "mechanism"):
            if into.get(name) != node.get(name):
                raise _CannotMerge
    elif node.get("type") != TYPE_CALL and (
        into.get("outcome") != node.get("outcome") or into.get("kind") != node.get("kind")
    ):
        raise _CannotMerge
    into["count"] = int(into.get("count") or 0) + int(node.get("count") or 0)
    exits = dict(into.get("exits") or {})
    for key, n in (node.get("exits") or {}).items():
        exits[key] = exits.get(key, 0) + int(n or 0)
    if exits:
        into["exits"] = exits
    for name in (*_VALUE_FIELDS, "state"):
        if into.get(f"{name}_overflow") or node.get(f"{name}_overflow"):
            raise _CannotMerge  # a bounded set that overflowed: its union is unknown
        joined = _union(into.get(name) or (), node.get(name) or ())
        if joined:
            into[name] = joined


def _lift_state(into: dict[str, Any], node: NodeDict, own: frozenset[str]) -> None:
    """A contracted call's state facts become its kept caller's: what an inlined helper read
    of ``self`` its caller now reads itself, and what an extracted one writes its caller
    used to. Module globals always; ``self.<field>`` facts only between methods of one
    class (a method moved onto another class reads another object's fields, which its old
    home read through an argument, recorded by neither).

    Two kinds of facts are not lifted, because the caller's own recording already says, at
    the caller's own moments, what they would say at the helper's: a target the caller's
    own code reads (``own``: its value at the caller's entry and exit is recorded, the
    helper's reading in between is a moment the other side never observes either), and the
    helper's exit facts where the caller never returned (a caller that raised left no exit
    state on either side; marshmallow's ``Range.__call__`` raising after an extracted
    ``_below_min`` had returned)."""
    if not node.get("state") and not node.get("state_overflow"):
        return
    if into.get("state_overflow") or node.get("state_overflow"):
        raise _CannotMerge
    same_owner = _owner(node.get("symbol")) == _owner(into.get("symbol"))
    returned = bool((into.get("exits") or {}).get(EXIT_RETURNED))
    facts = [
        fact
        for fact in node.get("state") or ()
        if (same_owner or not str(fact.get("target", "")).startswith("self."))
        and fact.get("target") not in own
        and (returned or fact.get("when") != STATE_EXIT)
    ]
    if facts:
        into["state"] = _union(into.get("state") or (), facts)


def _targets(node: NodeDict) -> frozenset[str]:
    return frozenset(str(fact.get("target")) for fact in node.get("state") or ())


def _owner(symbol: object) -> str:
    return str(symbol).rpartition(".")[0]


def _union(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]) -> list[Any]:
    seen: dict[tuple[tuple[str, Any], ...], Mapping[str, Any]] = {}
    for item in (*a, *b):
        seen.setdefault(tuple(sorted(item.items())), item)
    return list(seen.values())


# -- what moved, in words ----------------------------------------------------------------


def _short(symbol: str | None) -> str:
    if symbol is None:
        return "the test"
    return symbol[len(SYMBOL_PREFIX) :] if symbol.startswith(SYMBOL_PREFIX) else symbol


def _last(symbol: str) -> str:
    return symbol.rpartition(".")[2]


def summaries(
    base: Contracted | None, head: Contracted | None, region: Region, *, behaviour: bool = False
) -> list[str]:
    """One line per thing that moved in this test: ``a`` extracted from ``f``, ``g`` inlined
    into ``f``, ``_old`` renamed to ``_new``, ``A.m`` moved to ``B.m``. ``behaviour``: the
    test's behaviour changed too, so new and gone code is named as such, not as a refactor
    (a new function that does something new was not "extracted")."""
    removed = dict(base.moved) if base is not None else {}
    added = dict(head.moved) if head is not None else {}
    lines: list[str] = []
    for old, new in _carried(removed, added):
        # The same anonymous code under another function: it went where its enclosing code
        # went (a generator expression inside the lines an extraction moved out) and is said
        # by that move; said on its own only when its function stayed on both sides.
        removed.pop(old)
        added.pop(new)
        came, went = _enclosing_function(old), _enclosing_function(new)
        if came in region.one_sided or went in region.one_sided:
            continue
        kind = "a generator expression" if "<genexpr>" in new else "a lambda"
        lines.append(f"{kind} moved from `{_short(came)}` to `{_short(went)}` (the same code)")
    for old in sorted(removed):
        partner = _partner(old, added, region)
        if partner is None:
            continue
        called_by = _callers(removed.pop(old) | added.pop(partner))
        body = _body(old, region)
        same_body = body is not None and body == _body(partner, region)
        verb = "renamed to" if _last(old) != _last(partner) else "moved to"
        how = " (the same code)" if same_body else ""
        lines.append(f"`{_short(old)}` {verb} `{_short(partner)}`{how}{called_by}")
    for old, new in _edited_renames(removed, added):
        called_by = _callers(removed.pop(old) | added.pop(new))
        lines.append(f"`{_short(old)}` renamed to `{_short(new)}` (its code edited){called_by}")
    for new, callers in sorted(added.items()):
        lines.append(_one_sided_line(new, callers, region, extracted=True, neutral=behaviour))
    for old, callers in sorted(removed.items()):
        lines.append(_one_sided_line(old, callers, region, extracted=False, neutral=behaviour))
    if base is not None and head is not None:
        lines.extend(_import_order(base.importers, head.importers, region))
    return lines


def _import_order(
    base: Mapping[str, str | None], head: Mapping[str, str | None], region: Region
) -> list[str]:
    """A line per module first imported by another importer, led by the changed code: a
    module whose importer is changed code moved because of the change; the modules it
    imports first in turn moved with it and are counted on its line (all are named when no
    importer is changed code)."""
    moved = [
        (module, base[module], head[module])
        for module in sorted(base.keys() & head.keys())
        if base[module] != head[module]
    ]
    led = [item for item in moved if item[1] in region.changed or item[2] in region.changed]
    lines = [
        f"import order: `{_short(module)}` first imported by `{_short(now)}` (was `{_short(was)}`)"
        for module, was, now in (led or moved)
    ]
    others = len(moved) - len(led)
    if led and others:
        lines[-1] += f"; {others} other module{'s' if others > 1 else ''} moved with it"
    return lines


def _carried(
    removed: Mapping[str, set[str | None]], added: Mapping[str, set[str | None]]
) -> list[tuple[str, str]]:
    """Pairs of one-sided anonymous functions with the same content (the digest in their
    names) under different enclosing functions: one piece of code that moved."""
    by_content: dict[str, list[str]] = {}
    for new in sorted(added):
        found = _CONTENT_NAME.search(new)
        if found is not None:
            by_content.setdefault(found.group(0), []).append(new)
    pairs = []
    for old in sorted(removed):
        found = _CONTENT_NAME.search(old)
        candidates = by_content.get(found.group(0), []) if found is not None else []
        for new in candidates:
            if _enclosing_function(new) != _enclosing_function(old):
                candidates.remove(new)
                pairs.append((old, new))
                break
    return pairs


def _edited_renames(
    removed: Mapping[str, set[str | None]], added: Mapping[str, set[str | None]]
) -> list[tuple[str, str]]:
    """A removed and an added method of one owner, called by the same caller in this test,
    where no other pair of the owner could be meant: one method renamed and edited
    (voluptuous' ``Any._exec`` became ``Any._execute`` with ``>`` made ``>=``). Without this,
    the two read as code inlined into the caller and code extracted from it, which nobody did."""
    candidates = [
        (old, new)
        for old in sorted(removed)
        for new in sorted(added)
        if _owner(old) == _owner(new)
        and not _anonymous(old)
        and not _anonymous(new)
        and (removed[old] & added[new]) - {None}
    ]
    olds = [old for old, _ in candidates]
    news = [new for _, new in candidates]
    return [(old, new) for old, new in candidates if olds.count(old) == 1 and news.count(new) == 1]


def _enclosing_function(symbol: str) -> str:
    """``m.f.<locals>.<genexpr>[…]`` → ``m.f``."""
    head, _, _ = symbol.rpartition(".<locals>.")
    return head or symbol.rpartition(".")[0]


def _partner(old: str, added: Mapping[str, set[str | None]], region: Region) -> str | None:
    """The added symbol ``old`` became: the same code under another name first, then the
    same name under another owner (a method moved onto another class)."""
    body = _body(old, region)
    if body is not None:
        for new in sorted(added):
            if _body(new, region) == body:
                return new
    for new in sorted(added):
        if _last(new) == _last(old) and not _anonymous(new):
            return new
    return None


def _body(symbol: str, region: Region) -> str | None:
    change = region.changes.get(symbol)
    return change.body if change is not None else None


def _anonymous(symbol: str) -> bool:
    """A lambda or a generator expression (``f.<locals>._key`` is a named function)."""
    last = symbol.rpartition(".")[2]
    return last.startswith(("<lambda>", "<genexpr>"))


def _callers(callers: Iterable[str | None]) -> str:
    named = sorted(_short(c) for c in callers if c is not None)
    return f", called by `{'`, `'.join(named)}`" if named else ""


def _one_sided_line(
    symbol: str, callers: set[str | None], region: Region, *, extracted: bool, neutral: bool
) -> str:
    kept = sorted((c for c in callers if c is not None), key=str)
    modified = [c for c in kept if (region.changes.get(c) or _NONE).change == CODE_MODIFIED]
    where = ", ".join(f"`{_short(c)}`" for c in (modified or kept)) or "the test"
    if _anonymous(symbol):
        kind = "a generator expression" if "<genexpr>" in symbol else "a lambda"
        return f"{kind} {'added in' if extracted else 'removed from'} {where}"
    if modified and not neutral:
        verb = "extracted from" if extracted else "inlined into"
        edited = _edited_decisions(symbol, modified, region) if extracted else ""
        return f"`{_short(symbol)}` {verb} {where}{edited}"
    if extracted:
        return f"new `{_short(symbol)}`, called by {where}"
    return f"`{_short(symbol)}` gone, was called by {where}"


def _edited_decisions(symbol: str, callers: Sequence[str], region: Region) -> str:
    """What to add to an extraction's line when the decisions that moved are not the
    decisions they came from: a condition edited on the way (itsdangerous' ``age > max_age``
    extracted as ``age >= max_age``). The tests whose line this is took the same ways either
    way, so they stay ``restructured``; the line says that none of them tells the two
    conditions apart, which is what a reviewer of a "pure refactor" must know. (A removed
    symbol's decisions are not listed by the code change, so an inlining says nothing.)"""
    change = region.changes.get(symbol)
    if change is None:
        return ""
    moved = Counter(site.predicate for site in change.sites if site.change == CODE_ADDED)
    left = Counter(
        site.predicate
        for caller in callers
        if caller in region.changes
        for site in region.changes[caller].sites
        if site.change == CODE_REMOVED
    )
    new = sorted((moved - left).elements())
    if not new:
        return ""
    gone = sorted((left - moved).elements())
    text = ", ".join(f"`{p}`" for p in new)
    was = f" (gone from there: {', '.join(f'`{p}`' for p in gone)})" if gone else ""
    return (
        f", with a decision the code it came from did not have: {text}{was}; "
        "no test here tells them apart"
    )


_NONE = SymbolChange("", CODE_ADDED)


def mapped_lines(test: TestIndex, code_changes: CodeChangeInput) -> list[str]:
    """A line for each piece of named code the mapping paired under another name (renamed,
    moved, renamed and edited: mapping.py) that ``test`` runs in head, with its callers: the
    recordings read it under one name, so no contraction says what moved, and a reviewer
    still wants to know."""
    renamed = {
        change.symbol: change
        for change in code_changes.symbols
        if change.renamed_from is not None and not _anonymous(change.symbol)
    }
    if not renamed:
        return []
    callers: dict[str, set[str | None]] = {}
    for genome in test.record.get("phases", {}).values():
        nodes = genome.get("nodes") if isinstance(genome, Mapping) else None
        if not isinstance(nodes, list):
            continue
        by_id = {node.get("id"): node for node in nodes if isinstance(node, Mapping)}
        for node in by_id.values():
            symbol = node.get("symbol")
            if node.get("type") != TYPE_CALL or symbol not in renamed:
                continue
            parent = by_id.get(node.get("parent"))
            caller = parent.get("symbol") if parent is not None else None
            callers.setdefault(str(symbol), set()).add(caller if isinstance(caller, str) else None)
    lines = []
    for new in sorted(callers):
        change = renamed[new]
        old = str(change.renamed_from)
        verb = "renamed to" if _owner(old) == _owner(new) else "moved to"
        how = " (the same code)" if change.renames_only else " (its code edited)"
        lines.append(f"`{_short(old)}` {verb} `{_short(new)}`{how}{_callers(callers[new])}")
    return lines
