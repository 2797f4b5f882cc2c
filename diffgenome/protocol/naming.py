"""How code is named: symbols and decision sites, from nothing but the source text.

Both sides need the same names. The recorder gives each code object it sees a symbol and
numbers its decisions; the differ names what a commit range changed, and a change can be
matched to a recording only when both were named by this one module. Standard library only.

The AST is walked once, mirroring how CPython creates code objects on 3.12/3.13: module,
class bodies, functions, lambdas, generator expressions, PEP 695 type-parameter and type-alias
scopes each get a code object; list/set/dict comprehensions are inlined (PEP 709, verified on
3.12 and 3.13, class bodies and async comprehensions included), so their decisions belong to
the enclosing symbol. Qualnames follow ``compiler_set_qualname`` (``<locals>`` after function
and lambda parents but not after generator expressions, ``global`` declarations reset the
qualname, type-parameter scopes are transparent). A runtime code object is matched to its scope
by ``(co_qualname, co_firstlineno)``; ties (several lambdas on one line) are broken by the
source columns of its instructions and, failing that, by comparing it with a private compile of
the same source. Ids never contain line numbers: only an ordinal among scopes of the same
qualname, in source order.

A decision's *condition* is a set of source spans (the test; for ``match`` the case pattern
plus guard) and its *body* what runs only when it holds; the recorder's classification of
branch events (``recording.collect.codemap``) works on these spans.

Known limits:
- Identical code objects on one line (``lambda: 0, lambda: 0`` on 3.12) are indistinguishable and
  share the first ordinal.
- Decisions inside PEP 695 bounds/annotations are attributed to the enclosing symbol although
  CPython evaluates them in a type-parameter scope.
"""

from __future__ import annotations

import ast
import copy
import itertools
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b as _blake2b
from types import CodeType
from typing import Final

from diffgenome.protocol import quiet
from diffgenome.protocol.vocab import SYMBOL_PREFIX

# Captured at import time: the recording side must not see later monkeypatching.
_ast_unparse = ast.unparse

# Predicates are for people; a generated condition must not bloat every genome that holds it.
MAX_PREDICATE: Final = 200
_CO_NEWLOCALS: Final = 0x2

# (line, col, end_line, end_col); columns are UTF-8 byte offsets in both the AST and co_positions.
Span = tuple[int, int, int, int]

#: How many times a text fell back (an unparse or a copy that met the recursion limit, the
#: placeholder or ``ast.dump`` written instead). Whether it does can depend on how deep the
#: stack was when the file was named (the recorder names a file at its first event), so a
#: map built while this moved is never kept for another session (``SourceNames.settled``).
#: A list, to be changed in place; a count read before and after a build, so that threads
#: naming at once only ever make that conservative.
FALLBACKS: Final[list[int]] = [0]


@dataclass(frozen=True, slots=True)
class Site:
    """One decision: ``id`` is ``<symbol>/<kind>[<digest>]`` (see ``site_ids``), never a line
    number nor a position. ``parts`` are the syntax the decision is made of (condition, then
    the code it guards), kept only when asked for (``SourceNames(keep_parts=True)``): the
    differ fingerprints them, the recorder does not need them."""

    id: str
    symbol: str
    kind: str
    predicate: str
    parts: tuple[ast.AST | list[ast.stmt] | None, ...] = ()


@dataclass(frozen=True, slots=True)
class CodeName:
    """Identity of a code object; ``line`` is for people only."""

    symbol: str
    kind: str
    line: int


# --- scopes -------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Scope:
    """One code object the source will compile to; ``symbol`` is set once all are known."""

    kind: str  # module | class | function | lambda | generator | other
    role: str  # module | class | function | lambda | genexpr | typeparams | typealias
    name: str
    parent: Scope | None
    firstlineno: int
    span: Span | None
    globals_: set[str] = field(default_factory=set)
    qualname: str = ""
    symbol: str = ""
    # Names bound in this scope (assigned, imported, loop targets) and its parameters: a
    # decision's identity writes them as placeholders, so renaming a local changes nothing.
    stores: set[str] = field(default_factory=set)
    params: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    # How each local is first bound (a parameter's position, the value first assigned to it):
    # what a placeholder says, so that ``if not text:`` and ``if not notes:`` differ by what
    # they test, not by what the names are spelt; dropped once the sites are named.
    bound: dict[str, tuple[str, ast.AST | None]] = field(default_factory=dict)
    # lambdas and generator expressions only, until they are named: what they are
    node: ast.AST | None = None
    # a ``@typing.overload`` stub: named apart from the function it describes
    overload: bool = False

    def renamable(self) -> frozenset[str]:
        """The names a decision's identity writes as placeholders: a function's locals and
        parameters (module and class names are seen from outside: they stay as written)."""
        if self.role not in ("function", "lambda", "genexpr"):
            return frozenset()  # module and class names are seen from outside
        return frozenset((self.stores | self.params) - self.globals_ - self.nonlocals)


def node_span(node: ast.AST) -> Span | None:
    """Where ``node`` lies; None for nodes the parser gives no end (some synthesised ones)."""
    end_line = getattr(node, "end_lineno", None)
    end_col = getattr(node, "end_col_offset", None)
    if end_line is None or end_col is None:
        return None
    return (node.lineno, node.col_offset, end_line, end_col)  # type: ignore[attr-defined]


def _join(first: ast.AST, last: ast.AST) -> Span | None:
    a, b = node_span(first), node_span(last)
    if a is None or b is None:
        return None
    return (a[0], a[1], b[2], b[3])


def within(pos: Span, span: Span) -> bool:
    return (pos[0], pos[1]) >= (span[0], span[1]) and (pos[2], pos[3]) <= (span[2], span[3])


def span_size(span: Span) -> tuple[int, int]:
    return (span[2] - span[0], span[3] - span[1])


def _qualname(scope: Scope) -> str:
    parent = scope.parent
    if parent is None:
        return "<module>"
    if scope.role not in ("typeparams",):
        # The scope created for type parameters is invisible to the names of what it holds.
        while parent.role == "typeparams" and parent.parent is not None:
            parent = parent.parent
    if scope.role in ("function", "class") and scope.name in parent.globals_:
        return scope.name
    if parent.role == "module":
        return scope.name
    if parent.role in ("function", "lambda"):
        return f"{parent.qualname}.<locals>.{scope.name}"
    return f"{parent.qualname}.{scope.name}"


# --- decision sites ------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class SiteSpans:
    """Where a decision sits in the source: what the recorder needs to classify its jumps,
    and what its identity is made of (``key``: the condition's syntax; ``context``: the
    innermost enclosing decision of the same scope and the arm this one sits in; ``parts``:
    condition and guarded code, for the differ)."""

    scope: Scope
    kind: str
    predicate: str
    cond: tuple[Span, ...]
    body: tuple[Span, ...]  # for assert: the message span, if any (a landing there = failed)
    key: tuple[ast.AST | None, ...] = ()
    context: tuple[int, str] | None = None
    # The compound statements of the same scope that enclose it, outermost first: a token
    # that is always part of its identity (``if:true``, ``except ClickException``, ``for``,
    # ``with``...) and the header syntax that tells look-alikes apart only where needed.
    chain: Chain = ()
    # The statement just before it in its block (statements only): the last tie-break
    # before an ordinal.
    prev: ast.stmt | None = None
    parts: tuple[ast.AST | list[ast.stmt] | None, ...] = ()


def predicate(*nodes: ast.AST | None, sep: str = " if ") -> str:
    """A decision's text as both sides show it: the differ matches sites by this text, so a
    truncation of its own would make every long condition look changed."""
    parts: list[str] = []
    for node in nodes:
        if node is None:
            continue
        try:
            parts.append(_ast_unparse(node))
        except Exception:  # unparse recursion on absurdly deep expressions
            FALLBACKS[0] += 1
            parts.append(f"<{type(node).__name__}>")
    text = sep.join(parts)
    return text if len(text) <= MAX_PREDICATE else text[: MAX_PREDICATE - 1] + "\u2026"


#: What an ``if`` whose ``else`` is an ``elif`` guards there: the ``elif`` is a decision of
#: its own, with its own condition and code.
_ELIF: Final = ast.Constant(value="<elif>")


def _own_else(orelse: list[ast.stmt]) -> list[ast.stmt] | ast.AST:
    """The code an ``if`` guards in its ``else``: its statements, or, for an ``elif``, a
    marker only. Code edited inside the fourth ``elif`` of a chain is that ``elif``'s change,
    not one of the three decisions before it (whose outcomes it cannot move)."""
    if len(orelse) == 1 and isinstance(orelse[0], ast.If):
        return _ELIF
    return orelse


def _spans(*nodes: ast.AST | None) -> tuple[Span, ...]:
    out = []
    for node in nodes:
        if node is not None and (s := node_span(node)) is not None:
            out.append(s)
    return tuple(out)


def _body_span(stmts: list[ast.stmt]) -> tuple[Span, ...]:
    if not stmts:
        return ()
    s = _join(stmts[0], stmts[-1])
    return (s,) if s is not None else ()


def _comprehension_sites(
    node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, scope: Scope
) -> list[tuple[SiteSpans, ast.expr]]:
    """Each ``if`` clause is a site; its body is everything evaluated only after it passed."""
    if isinstance(node, ast.DictComp):
        elements: tuple[Span, ...] = _spans(node.key, node.value)
    else:
        elements = _spans(node.elt)
    out = []
    gens = node.generators
    for gi, gen in enumerate(gens):
        later_gens: list[Span] = []
        for g in gens[gi + 1 :]:
            last: ast.AST = g.ifs[-1] if g.ifs else g.iter
            if (s := _join(g.target, last)) is not None:
                later_gens.append(s)
        for ii, test in enumerate(gen.ifs):
            body = _spans(*gen.ifs[ii + 1 :]) + tuple(later_gens) + elements
            info = SiteSpans(
                scope,
                "comprehension",
                predicate(test),
                _spans(test),
                body,
                key=(test,),
                parts=(
                    test,
                    *([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]),
                ),
            )
            out.append((info, test))
    return out


Chain = tuple[tuple[str, tuple[ast.AST | None, ...]], ...]
_Ctx = tuple[tuple[int, str] | None, Chain]
_Item = tuple[ast.AST, Scope, int, _Ctx]


def _param_names(args: ast.arguments) -> list[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return [a.arg for a in every if a is not None]


class _Placeholders(ast.NodeTransformer):
    """Writes locals as ``_0``, ``_1``... in order of first appearance in the condition,
    each followed by how it is bound where that is known (``_0[param 1]``)."""

    def __init__(self, names: frozenset[str], labels: Mapping[str, str] | None = None) -> None:
        self.names = names
        # Not ``labels or {}``: the truth of a ``BindingLabels`` is its length, which labels
        # every local of the scope, while only the names a condition tests need one.
        self.labels: Mapping[str, str] = labels if labels is not None else {}
        self.seen: dict[str, str] = {}

    def _placeholder(self, name: str) -> str:
        if name not in self.seen:
            label = self.labels.get(name)
            self.seen[name] = f"_{len(self.seen)}" + (f"[{label}]" if label else "")
        return self.seen[name]

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.names:
            return node
        placeholder = self._placeholder(node.id)
        return ast.copy_location(ast.Name(id=placeholder, ctx=node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        # a lambda's parameters, where a condition or an anonymous scope holds one
        if node.arg in self.names:
            node.arg = self._placeholder(node.arg)
        return node


class _Blank(ast.NodeTransformer):
    """Writes every local as ``_``: the shape of a value a local is bound to."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            return ast.copy_location(ast.Name(id="_", ctx=node.ctx), node)
        return node


class BindingLabels(Mapping[str, str]):
    """How each local of a scope is first bound, with every local in it blanked: renaming any
    local changes none of these, two locals bound differently read differently. Computed on
    first use of each name: only names that decisions test are ever written."""

    def __init__(self, scope: Scope) -> None:
        self._locals = scope.renamable()
        self._bound = {n: b for n, b in scope.bound.items() if n in self._locals}
        self._done: dict[str, str | None] = {}

    def _label(self, name: str) -> str | None:
        if name in self._done:
            return self._done[name]
        label: str | None = None
        binding = self._bound.get(name)
        if binding is not None:
            how, value = binding
            if value is None:
                label = how
            else:
                try:
                    text = _ast_unparse(_Blank(self._locals).visit(copy.deepcopy(value)))
                    label = f"{how} {_digest(text)}"
                except Exception:  # absurdly deep expressions: the order placeholder stays
                    FALLBACKS[0] += 1
                    label = None
        self._done[name] = label
        return label

    def __getitem__(self, name: str) -> str:
        label = self._label(name)
        if label is None:
            raise KeyError(name)
        return label

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._bound if self._label(name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def condition_text(
    nodes: tuple[ast.AST | None, ...],
    locals_: frozenset[str],
    labels: Mapping[str, str] | None = None,
) -> str:
    """What a decision tests, independent of layout, comments and local names."""
    renamer = _Placeholders(locals_, labels)
    parts: list[str] = []
    for node in nodes:
        if node is None:
            parts.append("-")
            continue
        try:
            tree = renamer.visit(copy.deepcopy(node)) if locals_ else node
            parts.append(_ast_unparse(tree))
        except Exception:  # absurdly deep expressions: their flat text still tells them apart
            FALLBACKS[0] += 1
            parts.append(flat_text(node))
    return "\x1f".join(parts)


def flat_text(node: ast.AST) -> str:
    """``node`` as its nodes' kinds and leaves, breadth first, without recursion: unparsing,
    copying and ``ast.dump`` all recurse and fail on an expression of 1,500 terms that
    CPython compiles. Local names stay as they are (a placeholder pass would recurse too)."""
    parts: list[str] = []
    for item in ast.walk(node):
        leaf = (
            getattr(item, "id", None) or getattr(item, "attr", None) or getattr(item, "arg", None)
        )
        if isinstance(item, ast.Constant):
            leaf = repr(item.value)
        parts.append(f"{type(item).__name__}:{leaf}" if leaf is not None else type(item).__name__)
    return "<deep expression " + _blake2b(" ".join(parts).encode(), digest_size=8).hexdigest() + ">"


def _anonymous_text(scope: Scope, parent: ast.AST | None, grandparent: ast.AST | None) -> str:
    """What a lambda or generator expression is and where it is bound: its source and the
    place it is handed to (``_operators["in"]``, ``key=`` of ``sorted``, ``x = ...``), with
    its own and its enclosing functions' locals as placeholders, so renaming a local or moving
    code changes nothing. Two lambdas that read alike but are bound to different keys stay
    apart, so that one of them changing never renames the other."""
    names: set[str] = set()
    outer: Scope | None = scope
    while outer is not None:
        names |= outer.renamable()
        outer = outer.parent
    locals_ = frozenset(names)
    node = scope.node
    where: tuple[ast.AST | None, ...] = ()
    label = type(parent).__name__ if parent is not None else "-"
    if isinstance(parent, ast.Dict):
        keys = [k for k, v in zip(parent.keys, parent.values, strict=True) if v is node]
        where = (keys[0] if keys else None,)
    elif isinstance(parent, ast.Assign):
        where = tuple(parent.targets)
    elif isinstance(parent, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
        where = (parent.target,)
    elif isinstance(parent, ast.keyword):
        label = f"keyword {parent.arg}"
        if isinstance(grandparent, ast.Call):
            where = (grandparent.func,)
    elif isinstance(parent, ast.Call):
        index = next((i for i, arg in enumerate(parent.args) if arg is node), -1)
        label = f"argument {index}"
        where = (parent.func,)
    return "\x1e".join(
        (condition_text((node,), locals_), label, condition_text(where, locals_) if where else "")
    )


def _anonymous_parents(tree: ast.AST) -> dict[int, tuple[ast.AST, ast.AST | None]]:
    """The parent and grandparent of every lambda and generator expression in ``tree``."""
    out: dict[int, tuple[ast.AST, ast.AST | None]] = {}
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Lambda | ast.GeneratorExp):
                out[id(child)] = (node, parent)
            stack.append((child, node))
    return out


def _digest(text: str) -> str:
    return _blake2b(text.encode("utf-8", "surrogatepass"), digest_size=5).hexdigest()


def _statement_text(stmt: ast.stmt, locals_: frozenset[str], labels: Mapping[str, str]) -> str:
    """A neighbour by content: a compound statement by its header only, so that what runs
    inside it does not reach a decision after it."""
    if isinstance(stmt, ast.If | ast.While):
        nodes: tuple[ast.AST | None, ...] = (stmt.test,)
    elif isinstance(stmt, ast.For | ast.AsyncFor):
        nodes = (stmt.target, stmt.iter)
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        nodes = tuple(i.context_expr for i in stmt.items)
    elif isinstance(stmt, ast.Match):
        nodes = (stmt.subject,)
    elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return f"{type(stmt).__name__} {stmt.name}"
    elif isinstance(stmt, ast.Try | ast.TryStar):
        return type(stmt).__name__
    else:
        nodes = (stmt,)
    return f"{type(stmt).__name__} {condition_text(nodes, locals_, labels)}"


def site_ids(sites: list[SiteSpans]) -> list[str]:
    """Content identities of a file's decisions, in the order given.

    A decision is ``<symbol>/<kind>[<digest>]``, the digest taken over its kind, its condition
    (locals as placeholders that say how each is bound: a parameter's position, the shape of
    the value first assigned) and where it sits: the compound statements of its scope that
    enclose it, outermost first, each with its header (``if:true``/``if:false`` and the
    condition of an enclosing decision, ``for`` and what it iterates, ``while``, ``with`` and
    its context managers, ``try``, ``except <type>``, ``finally``, ``case`` and its pattern).
    That part is always taken, so whether a decision has look-alikes never changes its
    identity: adding ``if not notes:`` in one place never renames the ``if not notes:`` under
    ``if text:`` (mistune), nor an ``if not standalone_mode:`` under ``except
    ClickException:`` another one (click). Only where two decisions of one symbol are still
    equal does the digest also take the local names as written, then the statement just
    before each by content, and only where that is still equal an occurrence index ``#n`` in
    source order. So inserting, removing or reordering other decisions, moving code within
    its block, adding comments or renaming a local leaves an identity as it was; moving a
    decision into another block, wrapping it in one or changing the header of one that
    encloses it gives it another identity. An identity is never handed from a removed
    decision to a remaining one.
    """
    labels: dict[int, tuple[frozenset[str], BindingLabels]] = {}
    for info in sites:
        if id(info.scope) not in labels:
            labels[id(info.scope)] = (info.scope.renamable(), BindingLabels(info.scope))

    def text(info: SiteSpans, nodes: tuple[ast.AST | None, ...]) -> str:
        return condition_text(nodes, *labels[id(info.scope)])

    headers: dict[tuple[int, ...], str] = {}  # an enclosing header is shared by its sites

    def header(info: SiteSpans, token: str, nodes: tuple[ast.AST | None, ...]) -> str:
        key = (id(info.scope), *(id(n) for n in nodes))
        if key not in headers:
            headers[key] = text(info, nodes)
        return f"{token}\x1f{headers[key]}"

    def where(info: SiteSpans) -> tuple[str, ...]:
        if not info.chain:
            return ()
        return ("in", *(header(info, token, nodes) for token, nodes in info.chain))

    full: list[tuple[str, ...]] = [
        (info.scope.symbol, info.kind, text(info, info.key), *where(info)) for info in sites
    ]

    def refine(extra: Callable[[SiteSpans], str]) -> None:
        """Add ``extra(site)`` to the identity of each site that is still equal to another
        (computed for those only: most sites are unique by then)."""
        count: dict[tuple[str, ...], int] = {}
        for key in full:
            count[key] = count.get(key, 0) + 1
        for i, (key, info) in enumerate(zip(full, sites, strict=True)):
            if count[key] > 1:
                full[i] = (*key, extra(info))

    def before(info: SiteSpans) -> str:
        if info.prev is None:
            return "first"
        return "after\x1f" + _statement_text(info.prev, *labels[id(info.scope)])

    # Still equal: the names as written (``not rc1``, ``not rccmp`` both read ``not _0`` where
    # their bindings read alike), then the statement just before.
    refine(lambda info: "names\x1f" + condition_text(info.key, frozenset()))
    refine(before)
    seen: dict[tuple[str, ...], int] = {}
    ids: list[str] = []
    for info, identity in zip(sites, full, strict=True):
        n = seen.get(identity, 0)
        seen[identity] = n + 1
        digest = _blake2b("\x1e".join(identity[1:]).encode("utf-8", "surrogatepass"), digest_size=5)
        suffix = f"#{n}" if n else ""
        ids.append(f"{info.scope.symbol}/{info.kind}[{digest.hexdigest()}]{suffix}")
    return ids


def _bind(scope: Scope, targets: Sequence[ast.expr], value: ast.AST, how: str = "=") -> None:
    """Remember the first binding of each name in ``targets`` (unpacked: with its place)."""
    for target in targets:
        if isinstance(target, ast.Name):
            scope.bound.setdefault(target.id, (how, value))
            continue
        names = [n for n in ast.walk(target) if isinstance(n, ast.Name)]
        for i, name in enumerate(names):
            scope.bound.setdefault(name.id, (f"{how} {i} of", value))


def _is_overload(decorator: ast.expr) -> bool:
    """``@overload``, ``@typing.overload``, ``@t.overload``, ``@typing_extensions.overload``."""
    return (isinstance(decorator, ast.Name) and decorator.id == "overload") or (
        isinstance(decorator, ast.Attribute) and decorator.attr == "overload"
    )


class _Builder:
    """One iterative pass over the AST (deep expressions must not hit the recursion limit)."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []
        self.sites: list[SiteSpans] = []
        # span of every expression/pattern node inside a condition -> innermost site index
        self.cond_index: dict[Span, int] = {}

    def new_scope(
        self, kind: str, role: str, name: str, parent: Scope, node: ast.AST, firstlineno: int
    ) -> Scope:
        scope = Scope(kind, role, name, parent, firstlineno, node_span(node))
        if role in ("lambda", "genexpr"):
            scope.node = node
        self.scopes.append(scope)
        return scope

    def _sequence(self, block: list[ast.stmt] | list[ast.AST] | list[ast.expr]) -> None:
        """Remember the statement before each statement of ``block``."""
        for before, after in itertools.pairwise(block):
            if isinstance(before, ast.stmt):
                self.prev[id(after)] = before

    def add_site(self, info: SiteSpans) -> int:
        self.sites.append(info)
        return len(self.sites) - 1

    def run(self, tree: ast.Module) -> None:
        module = Scope("module", "module", "<module>", None, 1, None)
        self.scopes.append(module)
        # (node, scope for this node, innermost site whose condition holds this node,
        #  innermost decision of the same scope whose arm holds this node, and that arm)
        self.prev: dict[int, ast.stmt] = {}
        self._sequence(tree.body)
        stack: list[_Item] = [(tree, module, -1, (None, ()))]
        while stack:
            node, scope, cur, (ctx, chain) = stack.pop()
            if cur >= 0 and (s := node_span(node)) is not None:
                self.cond_index[s] = cur
            pushes: list[_Item] = []
            self.visit(node, scope, cur, ctx, pushes, chain)
            stack.extend(reversed(pushes))

    def visit(
        self,
        node: ast.AST,
        scope: Scope,
        cur: int,
        ctx: tuple[int, str] | None,
        out: list[_Item],
        chain: Chain = (),
    ) -> None:
        def push(
            child: ast.AST | None,
            in_scope: Scope = scope,
            site: int = cur,
            arm: tuple[int, str] | None = ctx,
            within: Chain = chain,
        ) -> None:
            if child is not None:
                same = in_scope is scope
                out.append((child, in_scope, site, (arm if same else None, within if same else ())))

        def add(info: SiteSpans, node: ast.AST | None = None) -> int:
            info.chain = chain
            info.prev = self.prev.get(id(node)) if node is not None else None
            return self.add_site(info)

        def push_all(
            children: list[ast.AST] | list[ast.expr] | list[ast.stmt], **kw: object
        ) -> None:
            if children and isinstance(children[0], ast.stmt):
                self._sequence(children)
            for c in children:
                push(c, **kw)  # type: ignore[arg-type]

        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                scope.stores.add(node.id)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                scope.stores.add((alias.asname or alias.name).partition(".")[0])
            return
        if isinstance(node, ast.Global):
            scope.globals_.update(node.names)
        if isinstance(node, ast.Nonlocal):
            scope.nonlocals.update(node.names)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope.stores.add(node.name)
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            push_all(node.decorator_list)
            inner_parent = scope
            tparams = getattr(node, "type_params", None)
            if tparams:
                inner_parent = self.new_scope(
                    "other",
                    "typeparams",
                    f"<generic parameters of {node.name}>",
                    scope,
                    node,
                    first,
                )
            if isinstance(node, ast.ClassDef):
                push_all(node.bases)
                push_all([k.value for k in node.keywords])
                inner = self.new_scope("class", "class", node.name, inner_parent, node, first)
            else:
                args = node.args
                push_all(args.defaults)
                push_all([d for d in args.kw_defaults if d is not None])
                for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                    if a is not None:
                        push(a.annotation)
                push(node.returns)
                inner = self.new_scope("function", "function", node.name, inner_parent, node, first)
                inner.params.update(_param_names(args))
                for i, param in enumerate(_param_names(args)):
                    inner.bound.setdefault(param, (f"param {i}", None))
                inner.overload = any(_is_overload(d) for d in node.decorator_list)
            push_all(node.body, in_scope=inner, site=-1)
            return
        if isinstance(node, ast.Lambda):
            push_all(node.args.defaults)
            push_all([d for d in node.args.kw_defaults if d is not None])
            inner = self.new_scope("lambda", "lambda", "<lambda>", scope, node, node.lineno)
            inner.params.update(_param_names(node.args))
            for i, param in enumerate(_param_names(node.args)):
                inner.bound.setdefault(param, (f"param {i}", None))
            push(node.body, in_scope=inner, site=-1)
            return
        if type(node).__name__ == "TypeAlias":  # 3.12+: ``type X = ...`` is a lazy scope
            name = getattr(getattr(node, "name", None), "id", "<type>")
            value = getattr(node, "value", None)
            parent = scope
            if getattr(node, "type_params", None):
                parent = self.new_scope(
                    "other",
                    "typeparams",
                    f"<generic parameters of {name}>",
                    scope,
                    node,
                    node.lineno,  # type: ignore[attr-defined]
                )
            inner = self.new_scope("other", "typealias", name, parent, node, node.lineno)  # type: ignore[attr-defined]
            push(value, in_scope=inner, site=-1)
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            comp_scope = scope
            if isinstance(node, ast.GeneratorExp):
                comp_scope = self.new_scope(
                    "generator", "genexpr", "<genexpr>", scope, node, node.lineno
                )
            site_of: dict[int, int] = {}
            for info, test in _comprehension_sites(node, comp_scope):
                if comp_scope is scope:
                    info.context = ctx
                    info.chain = chain
                site_of[id(test)] = self.add_site(info)
            for gi, gen in enumerate(node.generators):
                # The first iterable is evaluated by the enclosing code, not the genexpr.
                push(gen.iter, in_scope=scope if gi == 0 else comp_scope, site=cur)
                push(gen.target, in_scope=comp_scope)
                for test in gen.ifs:
                    push(test, in_scope=comp_scope, site=site_of[id(test)])
            if isinstance(node, ast.DictComp):
                push(node.key, in_scope=comp_scope)
                push(node.value, in_scope=comp_scope)
            else:
                push(node.elt, in_scope=comp_scope)
            return
        if isinstance(node, ast.If | ast.While):
            kind = "if" if isinstance(node, ast.If) else "while"
            info = SiteSpans(
                scope,
                kind,
                predicate(node.test),
                _spans(node.test),
                _body_span(node.body),
                key=(node.test,),
                context=ctx,
                parts=(node.test, node.body, _own_else(node.orelse)),
            )
            idx = add(info, node)
            push(node.test, site=idx)
            header: tuple[ast.AST | None, ...] = (node.test,)
            push_all(node.body, arm=(idx, "true"), within=(*chain, (f"{kind}:true", header)))
            push_all(node.orelse, arm=(idx, "false"), within=(*chain, (f"{kind}:false", header)))
            return
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr):
            value = node.value
            if value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                _bind(scope, targets, value)
            # the children are visited below, as for any other statement
        if isinstance(node, ast.Try | ast.TryStar):
            push_all(node.body, within=(*chain, ("try", ())))
            for handler in node.handlers:
                push(handler.type)
                what = "except" if handler.type is None else f"except {predicate(handler.type)}"
                push_all(handler.body, within=(*chain, (what, ())))
            push_all(node.orelse, within=(*chain, ("try:else", ())))
            push_all(node.finalbody, within=(*chain, ("finally", ())))
            return
        if isinstance(node, ast.For | ast.AsyncFor):
            push(node.target)
            push(node.iter)
            _bind(scope, [node.target], node.iter, "for")
            push_all(node.body, within=(*chain, ("for", (node.target, node.iter))))
            push_all(node.orelse, within=(*chain, ("for:else", (node.target, node.iter))))
            return
        if isinstance(node, ast.With | ast.AsyncWith):
            items: tuple[ast.AST | None, ...] = ()
            for item in node.items:
                push(item.context_expr)
                push(item.optional_vars)
                if item.optional_vars is not None:
                    _bind(scope, [item.optional_vars], item.context_expr, "with")
                items = (*items, item.context_expr, item.optional_vars)
            push_all(node.body, within=(*chain, ("with", items)))
            return
        if isinstance(node, ast.IfExp):
            info = SiteSpans(
                scope,
                "ifexp",
                predicate(node.test),
                _spans(node.test),
                _spans(node.body),
                key=(node.test,),
                context=ctx,
                parts=(node,),
            )
            idx = add(info)
            push(node.test, site=idx)
            push(node.body, arm=(idx, "true"), within=(*chain, ("ifexp:true", (node.test,))))
            push(node.orelse, arm=(idx, "false"), within=(*chain, ("ifexp:false", (node.test,))))
            return
        if isinstance(node, ast.Assert):
            info = SiteSpans(
                scope,
                "assert",
                predicate(node.test),
                _spans(node.test),
                _spans(node.msg),
                key=(node.test,),
                context=ctx,
                parts=(node,),
            )
            push(node.test, site=add(info, node))
            push(node.msg)
            return
        if isinstance(node, ast.Match):
            push(node.subject)
            for case in node.cases:
                info = SiteSpans(
                    scope,
                    "match",
                    predicate(case.pattern, case.guard),
                    _spans(case.pattern, case.guard),
                    _body_span(case.body),
                    key=(node.subject, case.pattern, case.guard),
                    context=ctx,
                    parts=(case,),
                )
                idx = add(info, node)
                push(case.pattern, site=idx)
                push(case.guard, site=idx)
                case_header: tuple[ast.AST | None, ...] = (node.subject, case.pattern, case.guard)
                push_all(case.body, arm=(idx, "true"), within=(*chain, ("case", case_header)))
            return
        for child in ast.iter_child_nodes(node):
            push(child)


# --- the names of one file -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Named:
    """What naming computed for one source, without its syntax tree: the named scopes (in
    source order, ``bound`` and ``node`` dropped), the decisions' spans (without ``key``,
    ``parts``, ``chain`` and ``prev``), their ids and the condition index. What the recorder
    reads of a ``SourceNames``, and all that a later session needs to skip naming the same
    source again (``protocol/namecache.py`` keeps it between sessions)."""

    scopes: list[Scope]
    site_spans: list[SiteSpans]
    site_ids: list[str]
    cond_index: dict[Span, int]


class SourceNames:
    """Names and decision sites of one source file, for the code objects compiled from it.

    Parsing raises SyntaxError only, so that a caller has one failure to handle for a file it
    cannot name. ``named`` (what an earlier build of this very source and module computed,
    ``Named``) skips naming: without ``tree`` and ``keep_parts`` (the recorder) parsing too,
    the names are then the same, field for field, as a fresh build's. With either (the
    differ, which needs each decision's syntax), the tree is walked as always and only the
    names are taken, where every scope and decision the walk finds is the one ``named``
    holds (``adopted``); otherwise they are computed.
    """

    def __init__(
        self,
        source: str,
        module: str,
        tree: ast.Module | None = None,
        *,
        keep_parts: bool = False,
        named: Named | None = None,
    ) -> None:
        self.module = module
        self._source = source
        self._by_key: dict[tuple[str, int], list[Scope]] = {}
        self._by_qualname: dict[str, list[Scope]] = {}
        self._names: dict[int, tuple[CodeType, CodeName]] = {}
        self._compiled: dict[tuple[str, int], list[CodeType]] | None = None
        #: False when a text of this build fell back (``FALLBACKS``): the names may then
        #: depend on the stack depth the build ran at, and must not be kept for later.
        self.settled = True
        #: Whether the names came from ``named`` rather than being computed here.
        self.adopted = False
        if named is not None and tree is None and not keep_parts:
            self.adopted = True
            #: Every scope of the file, in source order, named (``symbol``, ``role``, ``span``).
            self.scopes: list[Scope] = named.scopes
            self.site_spans: list[SiteSpans] = named.site_spans
            self.cond_index: dict[Span, int] = named.cond_index
            self.sites: list[Site] = [
                Site(sid, info.scope.symbol, info.kind, info.predicate)
                for sid, info in zip(named.site_ids, named.site_spans, strict=True)
            ]
            self._index_scopes()
            return
        fallbacks = FALLBACKS[0]
        if tree is None:
            tree = parse_source(source, module)
        builder = _Builder()
        try:
            builder.run(tree)
        except RecursionError as exc:  # pragma: no cover - the walk is iterative
            raise SyntaxError(f"cannot analyse {module}: {exc}") from exc
        self.site_spans = builder.sites
        self.cond_index = builder.cond_index

        scopes = sorted(builder.scopes, key=lambda s: (s.span[0], s.span[1]) if s.span else (0, -1))
        ids = _adopt(scopes, builder, named) if named is not None else None
        self.adopted = ids is not None
        if ids is None:
            self._name_scopes(module, tree, scopes)
            ids = site_ids(builder.sites)
        self.scopes = scopes
        self._index_scopes()
        self.sites = [
            Site(
                sid,
                info.scope.symbol,
                info.kind,
                info.predicate,
                info.parts if keep_parts else (),
            )
            for sid, info in zip(ids, builder.sites, strict=True)
        ]
        for scope in builder.scopes:
            scope.bound = {}
        if not keep_parts:
            for info in builder.sites:
                info.key = info.parts = ()  # the recorder keeps spans only, not the syntax tree
                info.chain = ()
                info.prev = None
        self.settled = FALLBACKS[0] == fallbacks

    @staticmethod
    def _name_scopes(module: str, tree: ast.Module, scopes: list[Scope]) -> None:
        """Give every scope (in source order) its qualname and symbol."""
        parents = _anonymous_parents(tree) if any(s.node is not None for s in scopes) else {}
        counts: dict[str, int] = {}
        for scope in scopes:
            scope.qualname = _qualname(scope)
            if scope.node is not None:
                # By content and binding, as decisions are named by content: inserting a
                # lambda above another one must not rename it. The ordinal counts only
                # lambdas that read alike and are bound alike.
                parent, grandparent = parents.get(id(scope.node), (None, None))
                text = _anonymous_text(scope, parent, grandparent)
                name = f"{scope.qualname}[{_digest(text)}]"
                scope.node = None
            elif scope.overload:
                # Stubs never run; counted with the function they describe, adding one would
                # rename that function (itsdangerous 2.2.0: ``Serializer.__init__#5``).
                name = f"{scope.qualname}[overload]"
            else:
                name = scope.qualname
            n = counts.get(name, 0)
            counts[name] = n + 1
            suffix = f"#{n}" if n else ""
            if scope.role == "module":
                scope.symbol = f"{SYMBOL_PREFIX}{module}"
            else:
                scope.symbol = f"{SYMBOL_PREFIX}{module}.{name}{suffix}"

    def _index_scopes(self) -> None:
        """How ``scope_of`` finds a code object's scope: by qualname and first line."""
        for scope in self.scopes:
            self._by_key.setdefault((scope.qualname, scope.firstlineno), []).append(scope)
            self._by_qualname.setdefault(scope.qualname, []).append(scope)

    def code_name(self, code: CodeType) -> CodeName:
        cached = self._names.get(id(code))
        if cached is not None and cached[0] is code:
            return cached[1]
        scope = self.scope_of(code)
        if scope is None:
            name = fallback_name(code, self.module)
        else:
            name = CodeName(scope.symbol, scope.kind, code.co_firstlineno)
        self._names[id(code)] = (code, name)  # holding ``code`` keeps its id from being reused
        return name

    def scope_of(self, code: CodeType) -> Scope | None:
        """The scope ``code`` was compiled from, or None when this source does not hold it."""
        try:
            return self._find_scope(code)
        except Exception:
            return None

    def _find_scope(self, code: CodeType) -> Scope | None:
        qualname = code.co_qualname
        candidates = self._by_key.get((qualname, code.co_firstlineno))
        if not candidates:
            only = self._by_qualname.get(qualname)
            return only[0] if only is not None and len(only) == 1 else None
        if len(candidates) == 1:
            return candidates[0]
        for line, end_line, col, end_col in code.co_positions():
            if line is None or end_line is None or col is None or end_col is None:
                continue
            if (line, col) == (end_line, end_col):
                continue  # 3.12 gives some instructions a made-up empty position
            p: Span = (line, col, end_line, end_col)
            for scope in candidates:
                if scope.span is not None and within(p, scope.span):
                    return scope
        return self._scope_by_compiling(code, candidates)

    def _scope_by_compiling(self, code: CodeType, candidates: list[Scope]) -> Scope:
        """Same-line twins without telling positions: find the twin in a compile of the source."""
        if self._compiled is None:
            self._compiled = {}
            try:
                todo = [quiet.compile_module(self._source)]
            except Exception:
                todo = []
            while todo:
                c = todo.pop(0)
                self._compiled.setdefault((c.co_qualname, c.co_firstlineno), []).append(c)
                todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        twins = self._compiled.get((code.co_qualname, code.co_firstlineno), [])
        if len(twins) == len(candidates):
            for twin, scope in zip(twins, candidates, strict=True):
                # Future flags inherited by a caller of compile() do not change the code.
                if twin.replace(co_flags=code.co_flags) == code:
                    return scope
        return candidates[0]


def _adopt(scopes: list[Scope], builder: _Builder, named: Named) -> list[str] | None:
    """Take the names of ``named`` onto the scopes and decisions a walk of the same source
    found: the site ids, and each scope's qualname and symbol. Only where everything the
    walk computes is what ``named`` holds, scope by scope and site by site (None
    otherwise: the caller names them itself)."""
    if len(scopes) != len(named.scopes) or len(builder.sites) != len(named.site_spans):
        return None
    index = {id(scope): i for i, scope in enumerate(scopes)}
    kept = {id(scope): i for i, scope in enumerate(named.scopes)}
    for mine, theirs in zip(scopes, named.scopes, strict=True):
        if _scope_facts(mine, index) != _scope_facts(theirs, kept):
            return None
    for mine_site, their_site in zip(builder.sites, named.site_spans, strict=True):
        if _site_facts(mine_site, index) != _site_facts(their_site, kept):
            return None
    if builder.cond_index != named.cond_index:
        return None
    for mine, theirs in zip(scopes, named.scopes, strict=True):
        mine.qualname, mine.symbol, mine.node = theirs.qualname, theirs.symbol, None
    return list(named.site_ids)


def _place(scope: Scope | None, where: Mapping[int, int]) -> int:
    """A scope's index in its build (-1: none; -2: not of that build)."""
    return -1 if scope is None else where.get(id(scope), -2)


def _scope_facts(scope: Scope, where: Mapping[int, int]) -> tuple[object, ...]:
    """What a walk computes of a scope, its parent as an index into ``where``'s build."""
    return (
        scope.kind,
        scope.role,
        scope.name,
        scope.firstlineno,
        scope.span,
        scope.overload,
        scope.globals_,
        scope.stores,
        scope.params,
        scope.nonlocals,
        _place(scope.parent, where),
    )


def _site_facts(site: SiteSpans, where: Mapping[int, int]) -> tuple[object, ...]:
    """What a walk computes of a decision, its scope as an index into ``where``'s build."""
    return (
        site.kind,
        site.predicate,
        site.cond,
        site.body,
        site.context,
        _place(site.scope, where),
    )


def parse_source(source: str, module: str) -> ast.Module:
    """The syntax tree of ``source``; whatever the parser cannot take is a SyntaxError, so that
    a file nobody can name fails one way."""
    try:
        return quiet.parse(source)
    except SyntaxError:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SyntaxError(f"cannot parse {module}: {exc}") from exc


def fallback_name(code: CodeType, module: str) -> CodeName:
    """Name for code whose source is unavailable: the qualname, without an ordinal."""
    qualname = code.co_qualname
    last = qualname.rpartition(".")[2]
    if code.co_name == "<module>":
        return CodeName(f"{SYMBOL_PREFIX}{module}", "module", code.co_firstlineno)
    if last == "<lambda>":
        kind = "lambda"
    elif last == "<genexpr>":
        kind = "generator"
    elif last.startswith("<"):
        kind = "other"
    elif code.co_flags & _CO_NEWLOCALS:
        kind = "function"
    else:
        kind = "class"
    return CodeName(f"{SYMBOL_PREFIX}{module}.{qualname}", kind, code.co_firstlineno)


def iter_code_objects(code: CodeType) -> Iterator[CodeType]:
    """``code`` and every code object nested in it (helps callers and tests walk a module)."""
    todo = [code]
    while todo:
        c = todo.pop()
        yield c
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
