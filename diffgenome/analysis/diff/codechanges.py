"""What a commit range changed in the code, named as the recorder names it.

The differ needs "which symbols changed" in the recorder's vocabulary (``py:pkg.mod.f``,
``py:pkg.mod.f/if[0]``), not in lines. Both versions of every changed file are parsed; each
code object is named by the recorder's own naming (:mod:`diffgenome.protocol.naming`), and each
symbol's code is
compared as a normalised syntax tree: no line numbers, no comments, no docstrings, and the
bodies of nested functions and classes left to their own symbols. So moving a function or
adding a comment is no change, editing a method changes that method and not its class, and a
rename is the old symbol removed plus the new one added.

Decision sites of a modified symbol are compared the same way: a site is modified when its
condition or the code it guards changed (for ``if``/``while`` that includes the ``else`` side,
since reaching it needs the ``false`` outcome).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from diffgenome.protocol.naming import (
    SourceNames,
    Span,
    iter_code_objects,
    node_span,
    parse_source,
    predicate,
)

ChangeKind = Literal["added", "removed", "modified"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.GeneratorExp)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Scopes whose code object is compiled from a syntax node of their own (not the parameter and
# alias scopes of PEP 695, whose code belongs to a definition).
_NODE_ROLES = frozenset({"class", "function", "lambda", "genexpr"})


@dataclass(frozen=True, slots=True)
class SiteChange:
    """A decision site of a modified symbol whose condition or guarded code changed."""

    site: str
    change: ChangeKind
    predicate: str


@dataclass(frozen=True, slots=True)
class SymbolChange:
    """One symbol the code change touched; ``path`` is the file (head's, or base's if removed)."""

    symbol: str
    change: ChangeKind
    sites: tuple[SiteChange, ...] = ()
    path: str | None = None


@dataclass(frozen=True, slots=True)
class CodeChangeInput:
    """What ``git diff BASE HEAD`` changed, as symbols. ``unparsed``: changed files that could
    not be analysed on one side (syntax errors), so their symbols are unknown."""

    symbols: tuple[SymbolChange, ...] = ()
    unparsed: tuple[str, ...] = ()

    def by_symbol(self) -> dict[str, SymbolChange]:
        return {change.symbol: change for change in self.symbols}

    def one_sided_sites(self) -> frozenset[str]:
        """Decision sites that exist in one side's code only (added or removed)."""
        return frozenset(
            site.site
            for change in self.symbols
            for site in change.sites
            if site.change in ("added", "removed")
        )


@dataclass(slots=True)
class _ScopeFacts:
    fingerprint: str | None
    sites: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> predicate, fp


def code_changes_from_sources(
    base_files: Mapping[str, str],
    head_files: Mapping[str, str],
    module_of: Callable[[str], str | None],
) -> CodeChangeInput:
    """Compare two versions of the changed files (path -> source text; a path missing on one
    side is a file added or deleted). ``module_of`` maps a repository path to its module name
    (``src/pkg/mod.py`` -> ``pkg.mod``) or None for files that are not Python modules."""
    changes: list[SymbolChange] = []
    unparsed: list[str] = []
    for path in sorted(set(base_files) | set(head_files)):
        b_src, h_src = base_files.get(path), head_files.get(path)
        if b_src == h_src:
            continue
        module = module_of(path)
        if module is None:
            continue
        try:
            b_facts = _file_facts(b_src, module) if b_src is not None else {}
            h_facts = _file_facts(h_src, module) if h_src is not None else {}
        except (SyntaxError, ValueError):
            unparsed.append(path)
            continue
        changes.extend(_compare_files(b_facts, h_facts, path))
    changes.sort(key=lambda change: change.symbol)
    return CodeChangeInput(tuple(changes), tuple(unparsed))


def _compare_files(
    base: Mapping[str, _ScopeFacts], head: Mapping[str, _ScopeFacts], path: str
) -> Iterator[SymbolChange]:
    for symbol in sorted(set(base) | set(head)):
        b, h = base.get(symbol), head.get(symbol)
        if b is None:
            yield SymbolChange(symbol, "added", _site_changes({}, h.sites if h else {}), path)
        elif h is None:
            yield SymbolChange(symbol, "removed", (), path)
        elif b.fingerprint is None or h.fingerprint is None or b.fingerprint != h.fingerprint:
            yield SymbolChange(symbol, "modified", _site_changes(b.sites, h.sites), path)


def _site_changes(
    base: Mapping[str, tuple[str, str | None]], head: Mapping[str, tuple[str, str | None]]
) -> tuple[SiteChange, ...]:
    out: list[SiteChange] = []
    for site in sorted(set(base) | set(head)):
        b, h = base.get(site), head.get(site)
        if b is None and h is not None:
            out.append(SiteChange(site, "added", h[0]))
        elif h is None and b is not None:
            out.append(SiteChange(site, "removed", b[0]))
        elif b is not None and h is not None and (b[0] != h[0] or b[1] is None or b[1] != h[1]):
            # A site whose code could not be matched is taken as changed: better a gap too
            # many than a changed decision nobody looks at.
            out.append(SiteChange(site, "modified", h[0]))
    return tuple(out)


# --- one file ------------------------------------------------------------------------------


def _file_facts(source: str, module: str) -> dict[str, _ScopeFacts]:
    """Symbol -> fingerprint and decision sites, for every code object of ``source``."""
    tree = parse_source(source, module)
    names = SourceNames(source, module, tree)
    code = compile(tree, f"<diffgenome:{module}>", "exec", dont_inherit=True)
    nodes: dict[Span | None, ast.AST] = {
        node_span(node): node for node in ast.walk(tree) if isinstance(node, _SCOPES)
    }
    sites_by_scope: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for site in names.sites:
        sites_by_scope.setdefault((site.symbol, site.kind), []).append((site.id, site.predicate))

    facts: dict[str, _ScopeFacts] = {}
    for code_object in iter_code_objects(code):
        scope = names.scope_of(code_object)
        if scope is None or scope.symbol in facts:
            continue
        if scope.role == "module":
            scope_node: ast.AST | None = tree
        else:
            scope_node = nodes.get(scope.span) if scope.role in _NODE_ROLES else None
        if scope_node is None:
            continue
        facts[scope.symbol] = _ScopeFacts(
            _fingerprint(scope_node), _sites_of(scope_node, scope.symbol, sites_by_scope)
        )
    # Sites the walk could not attribute still count, by their text.
    for (symbol, _kind), items in sites_by_scope.items():
        scope_facts = facts.setdefault(symbol, _ScopeFacts(None))
        for site_id, text in items:
            scope_facts.sites.setdefault(site_id, (text, None))
    return facts


# --- fingerprints ----------------------------------------------------------------------------


def _fingerprint(top: ast.AST) -> str | None:
    """The code of one scope without what does not change behaviour."""
    out: list[str] = []
    try:
        _canon(top, top, out)
    except RecursionError:  # absurdly deep expressions: cannot tell, so call it changed
        return None
    return "".join(out)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _body(node: ast.AST, top: ast.AST, items: list[object]) -> list[object]:
    if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        if items and isinstance(items[0], ast.stmt) and _is_docstring(items[0]):
            items = items[1:]
        if node is top and isinstance(node, ast.Module | ast.ClassDef):
            # Definitions in a module or class body are their own symbols; where they sit
            # (moving code) is not a change.
            items = [item for item in items if not isinstance(item, _DEFS)]
    return items


def _canon(node: ast.AST, top: ast.AST, out: list[str]) -> None:
    if node is not top and isinstance(node, _SCOPES):
        out.append(f"<{type(node).__name__} {getattr(node, 'name', '')}>")
        return
    out.append(type(node).__name__)
    out.append("(")
    for name, value in ast.iter_fields(node):
        if name == "type_comment":
            continue
        out.append(name)
        out.append("=")
        if isinstance(value, list):
            items: list[object] = list(value)
            if name == "body":
                items = _body(node, top, items)
            out.append("[")
            for item in items:
                if isinstance(item, ast.AST):
                    _canon(item, top, out)
                else:
                    out.append(repr(item))
                out.append(",")
            out.append("]")
        elif isinstance(value, ast.AST):
            _canon(value, top, out)
        else:
            out.append(repr(value))
        out.append(",")
    out.append(")")


def _fp(*nodes: ast.AST | list[ast.stmt] | None, top: ast.AST) -> str | None:
    out: list[str] = []
    try:
        for node in nodes:
            if node is None:
                out.append("-")
            elif isinstance(node, list):
                for stmt in node:
                    _canon(stmt, top, out)
                out.append(";")
            else:
                _canon(node, top, out)
                out.append("|")
    except RecursionError:
        return None
    return "".join(out)


# --- decision sites ---------------------------------------------------------------------------


def _sites_of(
    top: ast.AST, symbol: str, recorded: Mapping[tuple[str, str], list[tuple[str, str]]]
) -> dict[str, tuple[str, str | None]]:
    """Site id -> (predicate, fingerprint of condition and guarded code).

    Decisions are visited in the recorder's order so that the n-th decision of a kind here is
    the recorder's ``<kind>[n]``; a kind whose predicates then disagree with the recorder's is
    matched by text only (fingerprint None), never guessed.
    """
    found: dict[str, list[tuple[str, str | None]]] = {}
    try:
        for kind, text, fingerprint in _decisions(top):
            found.setdefault(kind, []).append((text, fingerprint))
    except RecursionError:
        found = {}
    out: dict[str, tuple[str, str | None]] = {}
    for (sym, kind), items in recorded.items():
        if sym != symbol:
            continue
        mine = found.get(kind, [])
        agree = len(mine) == len(items) and all(
            m[0] == text for m, (_site, text) in zip(mine, items, strict=True)
        )
        for i, (site_id, text) in enumerate(items):
            out[site_id] = (text, mine[i][1] if agree else None)
    return out


def _decisions(top: ast.AST) -> Iterator[tuple[str, str, str | None]]:
    """(kind, predicate, fingerprint) of the decisions evaluated by ``top``'s own code object,
    in the order the recorder numbers them."""
    stack: list[ast.AST] = list(reversed(_own_children(top)))
    while stack:
        node = stack.pop()
        children: list[ast.AST]
        if isinstance(node, _GenexprBody):
            yield from _comprehension_sites(node.node, top)
            children = _comprehension_children(node.node, skip_first=True)
        elif isinstance(node, _DEFS):
            children = _outer_parts(node)  # decorators, defaults...: evaluated here
        elif isinstance(node, ast.Lambda):
            children = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        elif isinstance(node, _COMPREHENSIONS):
            if isinstance(node, ast.GeneratorExp):
                children = [node.generators[0].iter]  # the rest runs in the genexpr's scope
            else:
                yield from _comprehension_sites(node, top)
                children = _comprehension_children(node)
        else:
            yield from _node_sites(node, top)
            children = list(ast.iter_child_nodes(node))
        stack.extend(reversed(children))


def _own_children(top: ast.AST) -> list[ast.AST]:
    if isinstance(top, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return list(top.body)
    if isinstance(top, ast.Lambda):
        return [top.body]
    if isinstance(top, ast.GeneratorExp):
        # The generator's own code: its clauses (except the first iterable) and element.
        return [_GenexprBody(top)]
    return []


class _GenexprBody(ast.AST):
    """Marker for the part of a generator expression that runs in its own code object."""

    def __init__(self, node: ast.GeneratorExp) -> None:
        super().__init__()
        self.node = node


def _outer_parts(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[ast.AST]:
    parts: list[ast.AST] = list(node.decorator_list)
    if isinstance(node, ast.ClassDef):
        parts.extend(node.bases)
        parts.extend(keyword.value for keyword in node.keywords)
        return parts
    args = node.args
    parts.extend(args.defaults)
    parts.extend(d for d in args.kw_defaults if d is not None)
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None and arg.annotation is not None:
            parts.append(arg.annotation)
    if node.returns is not None:
        parts.append(node.returns)
    return parts


def _comprehension_children(
    node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, *, skip_first: bool = False
) -> list[ast.AST]:
    children: list[ast.AST] = []
    for i, gen in enumerate(node.generators):
        if not (skip_first and i == 0):
            children.append(gen.iter)
        children.append(gen.target)
        children.extend(gen.ifs)
    if isinstance(node, ast.DictComp):
        children.extend([node.key, node.value])
    else:
        children.append(node.elt)
    return children


def _comprehension_sites(
    node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, top: ast.AST
) -> Iterator[tuple[str, str, str | None]]:
    element: list[ast.AST] = (
        [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    )
    for gen in node.generators:
        for test in gen.ifs:
            yield ("comprehension", predicate(test), _fp(test, *element, top=top))


def _node_sites(node: ast.AST, top: ast.AST) -> Iterator[tuple[str, str, str | None]]:
    if isinstance(node, ast.If):
        yield ("if", predicate(node.test), _fp(node.test, node.body, node.orelse, top=top))
    elif isinstance(node, ast.While):
        yield ("while", predicate(node.test), _fp(node.test, node.body, node.orelse, top=top))
    elif isinstance(node, ast.IfExp):
        yield ("ifexp", predicate(node.test), _fp(node, top=top))
    elif isinstance(node, ast.Assert):
        yield ("assert", predicate(node.test), _fp(node, top=top))
    elif isinstance(node, ast.Match):
        for case in node.cases:
            yield ("match", predicate(case.pattern, case.guard), _fp(case, top=top))
