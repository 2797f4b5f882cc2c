"""Which base code is which head code: a syntactic mapping between the two versions of the
code a change touches.

Identities inside one version are content digests (protocol/naming.py): a decision is named by
what it tests and where it sits, a lambda or generator expression by its source and where it
is bound. That keeps a genome still while code moves around it, but across versions a digest
of the surroundings breaks on the refactors people make: a callee renamed renames the
generator expression handed to it and every decision that tests a local bound from it, an
``elif`` inserted into a chain renames every later branch (each sits in the ``else`` of the
one before), a method renamed or moved renames every decision inside it. Those read as code
removed and code added, counts against nothing.

So the differ, which has both sides' sources, pairs them the way a tree differ does
(GumTree, Falleri et al. 2014) and a refactoring detector pairs renamed and moved methods
(RefactoringMiner, Tsantalis et al. 2018):

1. **Named code** (functions, methods, classes) pairs by its symbol where both sides have it;
   what is left on one side pairs with what is left on the other by the similarity of their
   code (own name and local names left out, locals read in order of first use), one to one,
   only where the best candidate is clearly the best both ways.
2. **Within each pair** whose code differs, the two syntax trees are mapped: identical
   subtrees first, largest first (a subtree that occurs more than once pairs where its
   parents are paired, else in source order); then each unpaired node whose descendants are
   mostly paired with the descendants of one node of its type (dice >= 0.5); then, under
   every paired node, the unpaired children of one field aligned by type in order.
3. **Decisions, lambdas and generator expressions** that keep their id need nothing; one that
   does not pairs with the head decision (of the same kind) or anonymous code its syntax
   maps to.

Ids inside one version stay what they are: the mapping only translates base ids into head ids
before two recordings are compared, so whatever it pairs is compared count for count, and
only what it cannot pair is added or removed. A pairing can only make a diff louder, never
quieter, where it is wrong: two decisions wrongly paired compare their counts (a difference
shown), where unpaired they were a removed and an added decision, which decide nothing.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from diffgenome.protocol.naming import SourceNames, Span, node_span

#: Roles of named code, paired by symbol or by the similarity of their code.
_NAMED_ROLES: Final = frozenset({"function", "class"})
#: Roles of anonymous code, paired through the syntax tree that holds it.
_ANONYMOUS_ROLES: Final = frozenset({"lambda", "genexpr"})
_SCOPE_NODES: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: Least similarity of two pieces of named code to be called the same code renamed or moved.
MIN_SIMILARITY: Final = 0.75
#: How much better the best candidate must be than the next one, both ways.
MIN_MARGIN: Final = 0.05
#: Least share of paired descendants for two nodes of one type to be the same node.
MIN_DICE: Final = 0.5
#: Trees larger than this are mapped by their identical subtrees and the alignment of
#: children only (the dice search is quadratic in the worst case).
MAX_DICE_NODES: Final = 20_000
#: Least similarity of two unpaired children of one field to be aligned as the same node
#: (a kind alone is not enough: the assignment that now stands where another stood is not
#: that one).
MIN_ALIKE: Final = 0.3
#: Blocks with more candidate pairs than this are aligned by kind alone.
MAX_ALIGNED: Final = 4_000
#: Subtrees longer than this together are compared by difflib's upper bound.
MAX_EXACT_RATIO: Final = 4_000


@dataclass(frozen=True, slots=True)
class CodeMapping:
    """Base ids that name other head ids (where they are equal, nothing is said)."""

    symbols: Mapping[str, str] = field(default_factory=dict)
    sites: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.symbols or self.sites)

    def symbol(self, symbol: str) -> str:
        return self.symbols.get(symbol, symbol)

    def site(self, site: str) -> str:
        return self.sites.get(site, site)


EMPTY: Final = CodeMapping()


@dataclass(slots=True)
class Version:
    """One side of one changed file, as the mapping reads it: its tree and its names."""

    tree: ast.Module
    names: SourceNames


# --- the syntax trees ------------------------------------------------------------------------


class _Tree:
    """A syntax tree flattened in pre-order, with what matching needs per node. Nested
    definitions (not the root) are leaves: they are code of their own, paired by symbol."""

    __slots__ = ("children", "end", "hash", "height", "index", "kind", "label", "nodes", "parent")

    def __init__(self, root: ast.AST) -> None:
        self.nodes: list[ast.AST] = []
        self.parent: list[int] = []
        self.children: list[list[tuple[str, int]]] = []  # (field, child index)
        self.kind: list[str] = []
        self.label: list[str] = []
        local = _bound_names(root)
        stack: list[tuple[ast.AST, int, str]] = [(root, -1, "")]
        while stack:
            node, parent, name = stack.pop()
            i = len(self.nodes)
            self.nodes.append(node)
            self.parent.append(parent)
            self.children.append([])
            self.kind.append(type(node).__name__)
            self.label.append(_label(node, local, node is root))
            if parent >= 0:
                self.children[parent].append((name, i))
            if node is not root and isinstance(node, _SCOPE_NODES):
                continue
            pushed: list[tuple[ast.AST, int, str]] = []
            for field_name, value in ast.iter_fields(node):
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if isinstance(item, ast.AST) and not isinstance(item, ast.expr_context):
                        pushed.append((item, i, field_name))
            stack.extend(reversed(pushed))
        count = len(self.nodes)
        self.end = list(range(1, count + 1))  # pre-order: a subtree is nodes[i:end[i]]
        self.height = [1] * count
        self.hash = [0] * count
        for i in range(count - 1, -1, -1):
            kids = [c for _, c in self.children[i]]
            if kids:
                self.end[i] = self.end[kids[-1]]
                self.height[i] = 1 + max(self.height[c] for c in kids)
            self.hash[i] = hash(
                (self.label[i], tuple((f, self.hash[c]) for f, c in self.children[i]))
            )
        self.index = {id(node): i for i, node in enumerate(self.nodes)}

    def size(self, i: int) -> int:
        return self.end[i] - i

    def within(self, node: int, root: int) -> bool:
        return root <= node < self.end[root]


def _bound_names(root: ast.AST) -> frozenset[str]:
    """Names the code under ``root`` binds itself (parameters, assignments, loop and ``with``
    targets, ``except ... as``): its locals, whose spelling is no part of what it does."""
    names: set[str] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.difference_update(node.names)
    return frozenset(names)


def _label(node: ast.AST, local: frozenset[str], root: bool) -> str:
    kind = type(node).__name__
    if isinstance(node, ast.Name):
        return f"{kind} ·" if node.id in local else f"{kind} {node.id}"
    if isinstance(node, ast.Attribute):
        return f"{kind} {node.attr}"
    if isinstance(node, ast.Constant):
        return f"{kind} {type(node.value).__name__} {repr(node.value)[:60]}"
    if isinstance(node, ast.keyword):
        return f"{kind} {node.arg}"
    if isinstance(node, ast.alias):
        return f"{kind} {node.name}"
    if isinstance(node, ast.ImportFrom):
        return f"{kind} {node.level} {node.module}"
    if isinstance(node, _SCOPE_NODES):
        return kind if root else f"{kind} {node.name}"
    return kind


# --- mapping two trees -----------------------------------------------------------------------


class _Matcher:
    """GumTree's three phases on two ``_Tree``s; ``pairs`` maps base index -> head index."""

    def __init__(self, base: _Tree, head: _Tree) -> None:
        self.b, self.h = base, head
        self.pairs: dict[int, int] = {}
        self.back: dict[int, int] = {}

    def run(self) -> dict[int, int]:
        self._pair(0, 0)
        self._identical_subtrees()
        if len(self.b.nodes) + len(self.h.nodes) <= MAX_DICE_NODES:
            self._containers()
        self._recover()
        return self.pairs

    def _pair(self, b: int, h: int) -> None:
        if b in self.pairs or h in self.back:
            return
        self.pairs[b] = h
        self.back[h] = b

    def _pair_subtree(self, b: int, h: int) -> None:
        stack = [(b, h)]
        while stack:
            x, y = stack.pop()
            if x in self.pairs or y in self.back or self.b.label[x] != self.h.label[y]:
                continue
            self._pair(x, y)
            stack.extend(
                (cx, cy)
                for (_, cx), (_, cy) in zip(self.b.children[x], self.h.children[y], strict=False)
            )

    def _identical_subtrees(self) -> None:
        """Top-down: identical subtrees of two or more nodes, largest first."""
        b, h = self.b, self.h
        groups: dict[int, tuple[list[int], list[int]]] = {}
        for i in range(1, len(b.nodes)):
            if b.height[i] >= 2:
                groups.setdefault(b.hash[i], ([], []))[0].append(i)
        for i in range(1, len(h.nodes)):
            if h.height[i] >= 2 and h.hash[i] in groups:
                groups[h.hash[i]][1].append(i)
        ordered = sorted((g for g in groups.values() if g[1]), key=lambda g: -b.size(g[0][0]))
        ambiguous: list[tuple[list[int], list[int]]] = []
        for olds, news in ordered:
            olds = [i for i in olds if i not in self.pairs]
            news = [i for i in news if i not in self.back]
            if len(olds) == 1 and len(news) == 1:
                self._pair_subtree(olds[0], news[0])
            elif olds and news:
                ambiguous.append((olds, news))
        for olds, news in ambiguous:
            olds = [i for i in olds if i not in self.pairs]
            news = [i for i in news if i not in self.back]
            # Where their parents are paired first, then in source order.
            for x in list(olds):
                parent = self.pairs.get(b.parent[x])
                same = [y for y in news if parent is not None and h.parent[y] == parent]
                if same:
                    self._pair_subtree(x, same[0])
                    olds.remove(x)
                    news.remove(same[0])
            for x, y in zip(olds, news, strict=False):
                self._pair_subtree(x, y)

    def _containers(self) -> None:
        """Bottom-up: an unpaired node pairs with the node of its type whose descendants most
        of its own descendants are paired with."""
        b, h = self.b, self.h
        for x in range(len(b.nodes) - 1, 0, -1):  # reversed pre-order: children first
            if x in self.pairs or b.size(x) == 1:
                continue
            candidates: set[int] = set()
            for d in range(x + 1, b.end[x]):
                partner = self.pairs.get(d)
                if partner is None:
                    continue
                up = h.parent[partner]
                while up >= 0:
                    if up not in self.back and h.kind[up] == b.kind[x]:
                        candidates.add(up)
                    up = h.parent[up]
            best, score = -1, 0.0
            for y in sorted(candidates):
                common = sum(
                    1
                    for d in range(x + 1, b.end[x])
                    if (p := self.pairs.get(d)) is not None and h.within(p, y) and p != y
                )
                dice = 2 * common / ((b.size(x) - 1) + (h.size(y) - 1))
                if dice > score:
                    best, score = y, dice
            if best >= 0 and score >= MIN_DICE:
                self._pair(x, best)

    def _recover(self) -> None:
        """Under every paired node, the unpaired children of each field aligned by type in
        order (the longest common subsequence), recursively."""
        b, h = self.b, self.h
        todo = sorted(self.pairs.items())
        while todo:
            x, y = todo.pop()
            fields = {name for name, _ in b.children[x]} | {name for name, _ in h.children[y]}
            for name in fields:
                olds = [c for f, c in b.children[x] if f == name and c not in self.pairs]
                news = [c for f, c in h.children[y] if f == name and c not in self.back]
                if not olds or not news:
                    continue
                for i, j in self._aligned(olds, news):
                    self._pair(olds[i], news[j])
                    todo.append((olds[i], news[j]))

    def _aligned(self, olds: list[int], news: list[int]) -> list[tuple[int, int]]:
        """Unpaired children of one field paired in order, the most alike first: the order
        that keeps the most similar pairs (their subtrees' labels, difflib's ratio), among
        nodes of one kind (a block whose statements were merged two into one keeps each with
        the one it became, not with the one that now stands at its place). Long blocks are
        aligned by kind alone."""
        b, h = self.b, self.h
        if len(olds) * len(news) > MAX_ALIGNED:
            return list(_aligned([b.kind[c] for c in olds], [h.kind[c] for c in news]))
        n, m = len(olds), len(news)
        sims = [[0.0] * m for _ in range(n)]
        for i, x in enumerate(olds):
            for j, y in enumerate(news):
                if b.kind[x] == h.kind[y]:
                    sims[i][j] = _similarity(b.label[x : b.end[x]], h.label[y : h.end[y]])
        score = [[0.0] * (m + 1) for _ in range(n + 1)]
        for i in range(n - 1, -1, -1):
            for j in range(m - 1, -1, -1):
                best = max(score[i + 1][j], score[i][j + 1])
                if sims[i][j] >= MIN_ALIKE:
                    best = max(best, sims[i][j] + score[i + 1][j + 1])
                score[i][j] = best
        out: list[tuple[int, int]] = []
        i = j = 0
        while i < n and j < m:
            if sims[i][j] >= MIN_ALIKE and score[i][j] == sims[i][j] + score[i + 1][j + 1]:
                out.append((i, j))
                i += 1
                j += 1
            elif score[i][j] == score[i + 1][j]:
                i += 1
            else:
                j += 1
        return out


def _similarity(a: Sequence[str], b: Sequence[str]) -> float:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if len(a) + len(b) > MAX_EXACT_RATIO:
        return matcher.quick_ratio()
    return matcher.ratio()


def _aligned(left: Sequence[str], right: Sequence[str]) -> Iterator[tuple[int, int]]:
    """Index pairs of a longest common subsequence of two sequences of kinds."""
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            yield block.a + k, block.b + k


def map_trees(base: ast.AST, head: ast.AST) -> dict[int, ast.AST]:
    """``id(base node) -> head node`` for every node of ``base`` the mapping pairs (nested
    definitions are leaves: paired as a whole or not at all)."""
    b, h = _Tree(base), _Tree(head)
    pairs = _Matcher(b, h).run()
    return {id(b.nodes[x]): h.nodes[y] for x, y in pairs.items()}


# --- the names of one version ----------------------------------------------------------------


@dataclass(slots=True)
class _Names:
    """One side of every changed file: scopes and decisions, with their syntax."""

    scopes: dict[str, tuple[str, ast.AST]] = field(default_factory=dict)  # symbol -> role, node
    by_node: dict[int, str] = field(default_factory=dict)  # id(scope node) -> symbol
    # id -> kind, anchor, which of the anchor's decisions (a clause's filters)
    sites: dict[str, tuple[str, ast.AST, int]] = field(default_factory=dict)
    anchors: dict[tuple[int, str, int], str] = field(default_factory=dict)
    sites_of: dict[str, list[str]] = field(default_factory=dict)  # symbol -> its site ids

    def add(self, version: Version) -> None:
        spans: dict[Span | None, ast.AST] = {}
        for each in ast.walk(version.tree):
            if isinstance(each, (*_SCOPE_NODES, ast.Lambda, ast.GeneratorExp)):
                spans[node_span(each)] = each
        for scope in version.names.scopes:
            node: ast.AST | None = None
            if scope.role == "module":
                node = version.tree
            elif scope.role in _NAMED_ROLES or scope.role in _ANONYMOUS_ROLES:
                node = spans.get(scope.span)
            if node is None or scope.symbol in self.scopes:
                continue
            self.scopes[scope.symbol] = (scope.role, node)
            self.by_node[id(node)] = scope.symbol
        parents: dict[int, ast.AST] = {}
        for parent in ast.walk(version.tree):
            for child in ast.iter_child_nodes(parent):
                parents[id(child)] = parent
        for site in version.names.sites:
            if not site.parts or not isinstance(site.parts[0], ast.AST):
                continue
            first = site.parts[0]
            place = 0
            if site.kind in ("if", "while"):
                anchor = parents.get(id(first))  # the statement: its test may be another now
            elif site.kind == "comprehension":
                # The clause that holds the filter, and which filter of it.
                anchor = parents.get(id(first))
                ifs = getattr(anchor, "ifs", [])
                place = next((i for i, test in enumerate(ifs) if test is first), 0)
            else:
                anchor = first  # the IfExp, the Assert, the match_case itself
            if anchor is None:
                continue
            self.sites[site.id] = (site.kind, anchor, place)
            self.anchors[(id(anchor), site.kind, place)] = site.id
            self.sites_of.setdefault(site.symbol, []).append(site.id)


# --- named code by similarity ----------------------------------------------------------------


def _tokens(node: ast.AST) -> list[str]:
    """What a piece of named code does, as a sequence: its syntax without its own name, its
    docstring or the bodies of code nested in it, locals by order of first use."""
    local = _bound_names(node)
    order: dict[str, str] = {}
    out: list[str] = []
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if current is not node and isinstance(current, _SCOPE_NODES):
            out.append(f"def {current.name}")
            continue
        if isinstance(current, ast.Name) and current.id in local:
            out.append(order.setdefault(current.id, f"_{len(order)}"))
            continue
        if isinstance(current, ast.arg):
            out.append("arg")
            continue
        out.append(_label(current, frozenset(), current is node))
        kids = [
            c
            for c in ast.iter_child_nodes(current)
            if not isinstance(c, ast.expr_context) and not (current is node and _is_docstring(c))
        ]
        stack.extend(reversed(kids))
    return out


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _pair_by_similarity(olds: Mapping[str, ast.AST], news: Mapping[str, ast.AST]) -> dict[str, str]:
    """Removed named code -> added named code that does the same, one to one: similarity at
    least ``MIN_SIMILARITY``, and each the other's best by ``MIN_MARGIN``."""
    if not olds or not news:
        return {}
    old_tokens = {symbol: _tokens(node) for symbol, node in olds.items()}
    new_tokens = {symbol: _tokens(node) for symbol, node in news.items()}
    scores: dict[tuple[str, str], float] = {}
    for old, a in old_tokens.items():
        for new, b in new_tokens.items():
            if type(olds[old]) is not type(news[new]):
                continue
            matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
            if (
                matcher.real_quick_ratio() < MIN_SIMILARITY
                or matcher.quick_ratio() < MIN_SIMILARITY
            ):
                continue
            score = matcher.ratio()
            if score >= MIN_SIMILARITY:
                scores[(old, new)] = score

    def clearly_best(symbol: str, side: int) -> tuple[str, float] | None:
        mine = sorted(
            ((pair[1 - side], score) for pair, score in scores.items() if pair[side] == symbol),
            key=lambda item: -item[1],
        )
        if not mine or (len(mine) > 1 and mine[0][1] - mine[1][1] < MIN_MARGIN):
            return None
        return mine[0]

    out: dict[str, str] = {}
    for old in olds:
        best = clearly_best(old, 0)
        if best is None:
            continue
        back = clearly_best(best[0], 1)
        if back is not None and back[0] == old:
            out[old] = best[0]
    return out


# --- the mapping -------------------------------------------------------------------------------


def map_code(pairs: Iterable[tuple[Version | None, Version | None]]) -> CodeMapping:
    """The mapping of every changed file's base version onto its head version (a file added or
    deleted has one side only; a module whose file moved is one pair)."""
    base, head = _Names(), _Names()
    for b, h in pairs:
        if b is not None:
            base.add(b)
        if h is not None:
            head.add(h)
    symbols: dict[str, str] = {s: s for s in base.scopes if s in head.scopes}
    olds = {
        s: node
        for s, (role, node) in base.scopes.items()
        if role in _NAMED_ROLES and s not in head.scopes
    }
    news = {
        s: node
        for s, (role, node) in head.scopes.items()
        if role in _NAMED_ROLES and s not in base.scopes
    }
    symbols.update(_pair_by_similarity(olds, news))
    taken = set(symbols.values())
    sites: dict[str, str] = {s: s for s in base.sites if s in head.sites}
    taken_sites = set(sites.values())
    # Named code and module bodies, outermost first: a pairing of anonymous code found in an
    # outer tree comes before the inner one is mapped.
    todo = [
        (old, new) for old, new in symbols.items() if base.scopes[old][0] not in _ANONYMOUS_ROLES
    ]
    for old, new in todo:
        b_node, h_node = base.scopes[old][1], head.scopes[new][1]
        if old == new and ast.dump(b_node) == ast.dump(h_node):
            continue  # the same code: every id inside it is the same id
        nodes = map_trees(b_node, h_node)
        for b_id, h_node_of in nodes.items():
            old_anon = base.by_node.get(b_id)
            new_anon = head.by_node.get(id(h_node_of))
            if (
                old_anon is not None
                and new_anon is not None
                and old_anon not in symbols
                and new_anon not in taken
                and base.scopes[old_anon][0] == head.scopes[new_anon][0]
                and base.scopes[old_anon][0] in _ANONYMOUS_ROLES
            ):
                symbols[old_anon] = new_anon
                taken.add(new_anon)
        for site, (kind, anchor, place) in base.sites.items():
            if site in sites:
                continue
            partner = nodes.get(id(anchor))
            if partner is None:
                continue
            other = head.anchors.get((id(partner), kind, place))
            if other is not None and other not in taken_sites:
                sites[site] = other
                taken_sites.add(other)
    return CodeMapping(
        symbols={old: new for old, new in symbols.items() if old != new},
        sites={old: new for old, new in sites.items() if old != new},
    )


# --- base's recordings in head's names -------------------------------------------------------

_RAISED: Final = "raised:"


def translated(document: Mapping[str, Any], mapping: CodeMapping) -> dict[str, Any]:
    """``document`` (a genome document, as exported) with every symbol and decision site the
    mapping pairs written in head's name: calls, the real code a stand-in claims to replace,
    exceptions raised, decisions, the symbols table and where a warning came from. What the
    mapping does not pair is left as recorded. The input is not changed."""
    if not mapping:
        return dict(document)
    out = dict(document)
    out["tests"] = [_translated_test(test, mapping) for test in document.get("tests") or ()]
    symbols = document.get("symbols")
    if isinstance(symbols, list):
        out["symbols"] = _renamed(symbols, "id", mapping)
    return out


def _renamed(items: list[Any], key: str, mapping: CodeMapping) -> list[Any]:
    """``items`` with the symbol each holds under ``key`` in head's name."""
    return [
        {**item, key: mapping.symbol(item[key])}
        if isinstance(item, dict) and isinstance(item.get(key), str)
        else item
        for item in items
    ]


def _translated_test(test: Any, mapping: CodeMapping) -> Any:
    if not isinstance(test, dict):
        return test
    out = dict(test)
    phases = test.get("phases")
    if isinstance(phases, dict):
        out["phases"] = {
            name: _translated_phase(genome, mapping) for name, genome in phases.items()
        }
    effects = test.get("effects")
    if isinstance(effects, list):
        out["effects"] = _renamed(effects, "origin", mapping)
    return out


def _translated_phase(genome: Any, mapping: CodeMapping) -> Any:
    if not isinstance(genome, dict):
        return genome
    out = dict(genome)
    nodes = genome.get("nodes")
    if isinstance(nodes, list):
        out["nodes"] = [_translated_node(node, mapping) for node in nodes]
    branches = genome.get("branches")
    if isinstance(branches, list):
        out["branches"] = [_translated_branch(branch, mapping) for branch in branches]
    return out


def _translated_node(node: Any, mapping: CodeMapping) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] | None = None
    for key in ("symbol", "claimed_target", "substitute"):
        value = node.get(key)
        if isinstance(value, str) and value in mapping.symbols:
            out = out if out is not None else dict(node)
            out[key] = mapping.symbols[value]
    exits = node.get("exits")
    if isinstance(exits, dict) and any(
        k.startswith(_RAISED) and k[len(_RAISED) :] in mapping.symbols for k in exits
    ):
        out = out if out is not None else dict(node)
        out["exits"] = {
            (_RAISED + mapping.symbol(k[len(_RAISED) :]) if k.startswith(_RAISED) else k): v
            for k, v in exits.items()
        }
    return out if out is not None else node


def _translated_branch(branch: Any, mapping: CodeMapping) -> Any:
    """A decision the mapping pairs, under head's id (and that id's symbol); one it does not
    pair keeps its base id, whatever became of its function's name."""
    if not isinstance(branch, dict):
        return branch
    site = branch.get("site")
    if not isinstance(site, str) or site not in mapping.sites:
        return branch
    out = dict(branch)
    out["site"] = mapping.sites[site]
    if isinstance(branch.get("symbol"), str):
        out["symbol"] = out["site"].rpartition("/")[0]
    return out


__all__ = ["EMPTY", "CodeMapping", "Version", "map_code", "map_trees", "translated"]
