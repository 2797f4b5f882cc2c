"""Static, once-per-source-file analysis: names code objects and maps BRANCH events to decisions.

The event callbacks see only ``(code, src_offset, dest_offset)``. Turning that into "decision site
S of symbol X was entered / skipped" needs two pieces of static knowledge, both built here once
per file (the caller caches the answers, so nothing here runs per event):

Naming. The AST is walked once, mirroring how CPython creates code objects on 3.12/3.13: module,
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

Outcomes. A decision's *condition* is a set of source spans (the test; for ``match`` the case
pattern plus guard). A conditional jump belongs to the innermost decision whose condition
contains the jump's source position or that of the instruction computing the tested value (3.13
positions the jump of a comprehension ``if`` like the element). Positions of the *destination*
are not trustworthy (3.12 gives the implicit ``return None`` after ``if x: y = 1`` the position
of ``x``), so each direction of a jump is followed through the bytecode: instructions positioned
inside the same condition and positionless ones are stepped over (unconditional jumps are
followed; for expression sites always, since 3.13 positions a comprehension's loop-back jump like
its element, while a statement body may begin with a ``continue`` jump); reaching another
conditional jump inside the condition means the jump was internal (short-circuit evaluation
still running); reaching a return/raise, or any instruction positioned outside the condition,
ends the walk at a *landing* instruction. The outcome is "true" iff the landing lies in the
guarded body (the statement body, the ``ifexp`` true arm, the rest of a comprehension after the
clause, the case body) -- for ``assert``, "true" iff the landing is not the ``AssertionError``
block. Jumps outside every condition (``for`` loops, ``with``/``try``/``except`` machinery,
value-context ``and``/``or``) are ``NEVER_AN_OUTCOME`` so that the caller can disable them.

Known limits:
- A body that compiles to no instruction of its own (e.g. a constant-folded ``ifexp`` arm inside
  a condition) cannot be recognised as entered; such a direction is counted as "false".
- Code not compiled from this exact source (stale file, ``python -O``, pytest's assertion
  rewriting of test modules, other AST transformers) is matched by position only: jumps the
  transformer synthesised outside the original condition spans are ``NEVER_AN_OUTCOME`` (pytest
  rewritten ``assert`` statements are therefore not recorded as sites).
- Identical code objects on one line (``lambda: 0, lambda: 0`` on 3.12) are indistinguishable and
  share the first ordinal.
- Decisions inside PEP 695 bounds/annotations are attributed to the enclosing symbol although
  CPython evaluates them in a type-parameter scope (their outcomes are still classified).
- 3.14 (BRANCH_LEFT/BRANCH_RIGHT, NOT_TAKEN) is not tested here; nothing is version-specific.
"""

from __future__ import annotations

import ast
import dis
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import CodeType
from typing import Final

from diffgenome.protocol import quiet
from diffgenome.protocol.vocab import SYMBOL_PREFIX

# Captured at import time: the recording side must not see later monkeypatching.
_get_instructions = dis.get_instructions
_ast_unparse = ast.unparse

NOT_AN_OUTCOME: Final = -1
NEVER_AN_OUTCOME: Final = -2

_MAX_PREDICATE: Final = 200
_ANONYMOUS: Final = frozenset({"<lambda>", "<genexpr>", "<listcomp>", "<setcomp>", "<dictcomp>"})
_CO_NEWLOCALS: Final = 0x2

_UNCONDITIONAL: Final = frozenset(
    {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"}
)
_TERMINATORS: Final = frozenset(
    {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "INTERPRETER_EXIT"}
)
_TRANSPARENT: Final = frozenset({"EXTENDED_ARG", "CACHE"})
_JUMP_OPCODES: Final = frozenset(
    getattr(dis, "hasjump", None) or (list(dis.hasjrel) + list(dis.hasjabs))
)

# (line, col, end_line, end_col); columns are UTF-8 byte offsets in both the AST and co_positions.
Span = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Site:
    """One decision: ``id`` is ``<symbol>/<kind>[<ordinal>]``, never a line number."""

    id: str
    symbol: str
    kind: str
    predicate: str


@dataclass(frozen=True, slots=True)
class CodeName:
    """Identity of a code object; ``line`` is for people only."""

    symbol: str
    kind: str
    line: int


# --- scopes -------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _Scope:
    kind: str  # module | class | function | lambda | generator | other
    role: str  # module | class | function | lambda | genexpr | typeparams | typealias
    name: str
    parent: _Scope | None
    firstlineno: int
    span: Span | None
    globals_: set[str] = field(default_factory=set)
    qualname: str = ""
    symbol: str = ""


def _span(node: ast.AST) -> Span | None:
    end_line = getattr(node, "end_lineno", None)
    end_col = getattr(node, "end_col_offset", None)
    if end_line is None or end_col is None:
        return None
    return (node.lineno, node.col_offset, end_line, end_col)  # type: ignore[attr-defined]


def _join(first: ast.AST, last: ast.AST) -> Span | None:
    a, b = _span(first), _span(last)
    if a is None or b is None:
        return None
    return (a[0], a[1], b[2], b[3])


def _within(pos: Span, span: Span) -> bool:
    return (pos[0], pos[1]) >= (span[0], span[1]) and (pos[2], pos[3]) <= (span[2], span[3])


def _size(span: Span) -> tuple[int, int]:
    return (span[2] - span[0], span[3] - span[1])


def _qualname(scope: _Scope) -> str:
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
class _SiteInfo:
    scope: _Scope
    kind: str
    predicate: str
    cond: tuple[Span, ...]
    body: tuple[Span, ...]  # for assert: the message span, if any (a landing there = failed)


def _predicate(*nodes: ast.AST | None, sep: str = " if ") -> str:
    parts: list[str] = []
    for node in nodes:
        if node is None:
            continue
        try:
            parts.append(_ast_unparse(node))
        except Exception:  # unparse recursion on absurdly deep expressions
            parts.append(f"<{type(node).__name__}>")
    text = sep.join(parts)
    return text if len(text) <= _MAX_PREDICATE else text[: _MAX_PREDICATE - 1] + "\u2026"


def _spans(*nodes: ast.AST | None) -> tuple[Span, ...]:
    out = []
    for node in nodes:
        if node is not None and (s := _span(node)) is not None:
            out.append(s)
    return tuple(out)


def _body_span(stmts: list[ast.stmt]) -> tuple[Span, ...]:
    if not stmts:
        return ()
    s = _join(stmts[0], stmts[-1])
    return (s,) if s is not None else ()


def _comprehension_sites(
    node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, scope: _Scope
) -> list[tuple[_SiteInfo, ast.expr]]:
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
            info = _SiteInfo(scope, "comprehension", _predicate(test), _spans(test), body)
            out.append((info, test))
    return out


class _Builder:
    """One iterative pass over the AST (deep expressions must not hit the recursion limit)."""

    def __init__(self) -> None:
        self.scopes: list[_Scope] = []
        self.sites: list[_SiteInfo] = []
        # span of every expression/pattern node inside a condition -> innermost site index
        self.cond_index: dict[Span, int] = {}

    def new_scope(
        self, kind: str, role: str, name: str, parent: _Scope, node: ast.AST, firstlineno: int
    ) -> _Scope:
        scope = _Scope(kind, role, name, parent, firstlineno, _span(node))
        self.scopes.append(scope)
        return scope

    def add_site(self, info: _SiteInfo) -> int:
        self.sites.append(info)
        return len(self.sites) - 1

    def run(self, tree: ast.Module) -> None:
        module = _Scope("module", "module", "<module>", None, 1, None)
        self.scopes.append(module)
        # (node, scope for this node, innermost site whose condition holds this node)
        stack: list[tuple[ast.AST, _Scope, int]] = [(tree, module, -1)]
        while stack:
            node, scope, cur = stack.pop()
            if cur >= 0 and (s := _span(node)) is not None:
                self.cond_index[s] = cur
            pushes: list[tuple[ast.AST, _Scope, int]] = []
            self.visit(node, scope, cur, pushes)
            stack.extend(reversed(pushes))

    def visit(
        self, node: ast.AST, scope: _Scope, cur: int, out: list[tuple[ast.AST, _Scope, int]]
    ) -> None:
        def push(child: ast.AST | None, in_scope: _Scope = scope, site: int = cur) -> None:
            if child is not None:
                out.append((child, in_scope, site))

        def push_all(
            children: list[ast.AST] | list[ast.expr] | list[ast.stmt], **kw: object
        ) -> None:
            for c in children:
                push(c, **kw)  # type: ignore[arg-type]

        if isinstance(node, ast.Global):
            scope.globals_.update(node.names)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
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
            push_all(node.body, in_scope=inner, site=-1)
            return
        if isinstance(node, ast.Lambda):
            push_all(node.args.defaults)
            push_all([d for d in node.args.kw_defaults if d is not None])
            inner = self.new_scope("lambda", "lambda", "<lambda>", scope, node, node.lineno)
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
            info = _SiteInfo(
                scope, kind, _predicate(node.test), _spans(node.test), _body_span(node.body)
            )
            push(node.test, site=self.add_site(info))
            push_all(node.body)
            push_all(node.orelse)
            return
        if isinstance(node, ast.IfExp):
            info = _SiteInfo(
                scope, "ifexp", _predicate(node.test), _spans(node.test), _spans(node.body)
            )
            push(node.test, site=self.add_site(info))
            push(node.body)
            push(node.orelse)
            return
        if isinstance(node, ast.Assert):
            info = _SiteInfo(
                scope, "assert", _predicate(node.test), _spans(node.test), _spans(node.msg)
            )
            push(node.test, site=self.add_site(info))
            push(node.msg)
            return
        if isinstance(node, ast.Match):
            push(node.subject)
            for case in node.cases:
                info = _SiteInfo(
                    scope,
                    "match",
                    _predicate(case.pattern, case.guard),
                    _spans(case.pattern, case.guard),
                    _body_span(case.body),
                )
                idx = self.add_site(info)
                push(case.pattern, site=idx)
                push(case.guard, site=idx)
                push_all(case.body)
            return
        for child in ast.iter_child_nodes(node):
            push(child)


# --- the file map --------------------------------------------------------------------------


@dataclass(slots=True)
class _CodeTable:
    """Per code object: src offset -> ((dest, result), ...), computed on first use."""

    code: CodeType
    jumps: dict[int, tuple[tuple[int, int], ...]]
    never: frozenset[int]


class FileMap:
    """Names and decision sites of one source file, for the code objects compiled from it."""

    def __init__(self, source: str, module: str, builder: _Builder) -> None:
        self.module = module
        self._source = source
        self._scope_sites = builder.sites
        self._cond_index = builder.cond_index
        self._by_key: dict[tuple[str, int], list[_Scope]] = {}
        self._by_qualname: dict[str, list[_Scope]] = {}
        self._tables: dict[int, _CodeTable] = {}
        self._names: dict[int, tuple[CodeType, CodeName]] = {}
        self._compiled: dict[tuple[str, int], list[CodeType]] | None = None

        scopes = sorted(builder.scopes, key=lambda s: (s.span[0], s.span[1]) if s.span else (0, -1))
        counts: dict[str, int] = {}
        for scope in scopes:
            scope.qualname = _qualname(scope)
            n = counts.get(scope.qualname, 0)
            counts[scope.qualname] = n + 1
            last = scope.qualname.rpartition(".")[2]
            suffix = f"#{n}" if (n or last in _ANONYMOUS) else ""
            if scope.role == "module":
                scope.symbol = f"{SYMBOL_PREFIX}{module}"
            else:
                scope.symbol = f"{SYMBOL_PREFIX}{module}.{scope.qualname}{suffix}"
            self._by_key.setdefault((scope.qualname, scope.firstlineno), []).append(scope)
            self._by_qualname.setdefault(scope.qualname, []).append(scope)

        ordinals: dict[tuple[str, str], int] = {}
        self.sites: list[Site] = []
        for info in builder.sites:
            key = (info.scope.symbol, info.kind)
            n = ordinals.get(key, 0)
            ordinals[key] = n + 1
            sid = f"{info.scope.symbol}/{info.kind}[{n}]"
            self.sites.append(Site(sid, info.scope.symbol, info.kind, info.predicate))

    # -- naming ------------------------------------------------------------------------

    def code_name(self, code: CodeType) -> CodeName:
        cached = self._names.get(id(code))
        if cached is not None and cached[0] is code:
            return cached[1]
        try:
            scope = self._scope_of(code)
        except Exception:
            scope = None
        if scope is None:
            name = fallback_name(code, self.module)
        else:
            name = CodeName(scope.symbol, scope.kind, code.co_firstlineno)
        self._names[id(code)] = (code, name)  # holding ``code`` keeps its id from being reused
        return name

    def _scope_of(self, code: CodeType) -> _Scope | None:
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
                if scope.span is not None and _within(p, scope.span):
                    return scope
        return self._scope_by_compiling(code, candidates)

    def _scope_by_compiling(self, code: CodeType, candidates: list[_Scope]) -> _Scope:
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

    # -- outcomes ----------------------------------------------------------------------

    def classify(self, code: CodeType, src: int, dest: int) -> int:
        table = self._tables.get(id(code))
        if table is None or table.code is not code:
            try:
                table = self._analyse(code)
            except Exception:
                table = _CodeTable(code, {}, frozenset())
            self._tables[id(code)] = table
        directions = table.jumps.get(src)
        if directions is None or src in table.never:
            return NEVER_AN_OUTCOME
        for d, result in directions:
            if d == dest:
                return result
        return NOT_AN_OUTCOME

    def _site_of(self, pos: Span) -> int:
        idx = self._cond_index.get(pos)
        if idx is not None:
            return idx
        best, best_size = -1, (1 << 30, 1 << 30)
        for i, info in enumerate(self._scope_sites):
            for span in info.cond:
                if _within(pos, span) and _size(span) < best_size:
                    best, best_size = i, _size(span)
        return best

    def _jump_site(
        self, i: int, instrs: list[dis.Instruction], positions: list[Span | None]
    ) -> int:
        """Site of the conditional jump ``instrs[i]``, or -1.

        The jump's own position is not enough: 3.13 gives the jump of a comprehension ``if`` the
        position of the element. The instruction before it produced the tested value and lies
        inside the tested operand, so the innermost site holding either position wins.
        """
        best, best_size = -1, (1 << 30, 1 << 30)
        j = i - 1
        while j >= 0 and instrs[j].opname in _TRANSPARENT:
            j -= 1
        for k in (i, j):
            pos = positions[k] if k >= 0 else None
            if pos is None:
                continue
            site = self._site_of(pos)
            if site < 0:
                continue
            size = min(_size(s) for s in self._scope_sites[site].cond if _within(pos, s))
            if size < best_size:
                best, best_size = site, size
        return best

    def _analyse(self, code: CodeType) -> _CodeTable:
        instrs = list(_get_instructions(code))
        index = {ins.offset: i for i, ins in enumerate(instrs)}
        positions: list[Span | None] = []
        for ins in instrs:
            p = ins.positions
            if p is None or p.lineno is None or p.col_offset is None:
                positions.append(None)
            else:
                positions.append(
                    (
                        p.lineno,
                        p.col_offset,
                        p.end_lineno or p.lineno,
                        p.end_col_offset if p.end_col_offset is not None else p.col_offset,
                    )
                )
        jumps: dict[int, tuple[tuple[int, int], ...]] = {}
        never: set[int] = set()
        for i, ins in enumerate(instrs):
            if not _is_conditional(ins.opname):
                continue
            site = self._jump_site(i, instrs, positions)
            prefixes = [ins.offset]
            j = i - 1
            while j >= 0 and instrs[j].opname == "EXTENDED_ARG":
                prefixes.append(instrs[j].offset)
                j -= 1
            if site < 0 or not ins.opname.startswith(("POP_JUMP_IF_", "JUMP_IF_")):
                for off in prefixes:
                    jumps[off] = ()
                    never.add(off)
                continue
            dests: list[tuple[int, int]] = []
            target = ins.argval if isinstance(ins.argval, int) else None
            fall = instrs[i + 1].offset if i + 1 < len(instrs) else None
            for dest in (target, fall):
                if dest is not None and dest in index:
                    dests.append((dest, self._outcome(site, index[dest], instrs, positions)))
            results = tuple(dests)
            for off in prefixes:
                jumps[off] = results
                if all(r == NOT_AN_OUTCOME for _, r in results):
                    never.add(off)
        return _CodeTable(code, jumps, frozenset(never))

    def _outcome(
        self,
        site: int,
        start: int,
        instrs: list[dis.Instruction],
        positions: list[Span | None],
    ) -> int:
        info = self._scope_sites[site]
        # An expression never begins with an unconditional jump, while 3.13 positions the loop-back
        # jump of a comprehension like its element: for expression sites, jumps are stepped over.
        through_jumps = info.kind in ("ifexp", "comprehension")
        landing = _walk(info.cond, start, instrs, positions, through_jumps)
        if landing is None:
            return NOT_AN_OUTCOME
        pos = positions[landing]
        if info.kind == "assert":
            failed = instrs[landing].opname == "LOAD_ASSERTION_ERROR" or (
                pos is not None and any(_within(pos, s) for s in info.body)
            )
            return site * 2 + (0 if failed else 1)
        entered = pos is not None and any(_within(pos, s) for s in info.body)
        return site * 2 + (1 if entered else 0)


def _is_conditional(opname: str) -> bool:
    return opname.startswith(("POP_JUMP_IF_", "JUMP_IF_")) or opname in ("FOR_ITER", "SEND")


def _walk(
    cond: tuple[Span, ...],
    i: int,
    instrs: list[dis.Instruction],
    positions: list[Span | None],
    through_jumps: bool,
) -> int | None:
    """Follow straight-line flow from instruction ``i`` while the same condition is evaluated.

    Returns the index of the landing instruction, or None if evaluation of the condition goes
    on (another conditional jump inside it is reached): the jump was internal.
    """
    seen: set[int] = set()
    n = len(instrs)
    while 0 <= i < n and i not in seen:
        seen.add(i)
        ins = instrs[i]
        pos = positions[i]
        if ins.opname in _TRANSPARENT:
            i += 1
            continue
        if through_jumps and ins.opname in _UNCONDITIONAL:
            i = _index_of(instrs, ins.argval, n)
            continue
        inside = pos is None or any(_within(pos, s) for s in cond)
        if _is_conditional(ins.opname):
            # Like the site of a jump, judged by the jump or by the value it tests (3.13).
            j = i - 1
            while j >= 0 and instrs[j].opname in _TRANSPARENT:
                j -= 1
            before = positions[j] if j >= 0 else None
            if (pos is not None and inside) or (
                before is not None and any(_within(before, s) for s in cond)
            ):
                if ins.opname == "SEND":  # an ``await`` in the condition resumes at its target
                    i = _index_of(instrs, ins.argval, n)
                    continue
                return None
            return i
        if not inside or ins.opname in _TERMINATORS:
            return i
        if ins.opname in _UNCONDITIONAL:
            i = _index_of(instrs, ins.argval, n)
            continue
        i += 1
    return None


def _index_of(instrs: list[dis.Instruction], offset: object, n: int) -> int:
    if not isinstance(offset, int):
        return n
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if instrs[mid].offset < offset:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < n and instrs[lo].offset == offset else n


def build_file_map(source: str, module: str) -> FileMap:
    """Parse ``source`` (the text of the module ``module``) once; raises SyntaxError only."""
    try:
        tree = quiet.parse(source)
    except SyntaxError:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SyntaxError(f"cannot parse {module}: {exc}") from exc
    builder = _Builder()
    try:
        builder.run(tree)
    except RecursionError as exc:  # pragma: no cover - the walk is iterative
        raise SyntaxError(f"cannot analyse {module}: {exc}") from exc
    return FileMap(source, module, builder)


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
