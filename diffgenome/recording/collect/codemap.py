"""Static, once-per-source-file analysis: maps BRANCH events to decisions.

The event callbacks see only ``(code, src_offset, dest_offset)``. Turning that into "decision site
S of symbol X was entered / skipped" needs two pieces of static knowledge, both built here once
per file (the caller caches the answers, so nothing here runs per event): the names of code
objects and decision sites, which come from :mod:`diffgenome.protocol.naming` so that the differ
names changed code exactly as the recorder names recorded code, and the outcomes below.

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
value-context ``and``/``or``) are ``NO_DECISION`` so that the caller can disable them.

Known limits:
- A body that compiles to no instruction of its own (e.g. a constant-folded ``ifexp`` arm inside
  a condition) cannot be recognised as entered; such a direction is counted as "false".
- Code not compiled from this exact source (stale file, ``python -O``, pytest's assertion
  rewriting of test modules, other AST transformers) is matched by position only: jumps the
  transformer synthesised outside the original condition spans are ``NO_DECISION`` (pytest
  rewritten ``assert`` statements are therefore not recorded as sites).
- Decisions inside PEP 695 bounds/annotations are attributed to the enclosing symbol (see
  :mod:`diffgenome.protocol.naming`); their outcomes are still classified.
- 3.14 (BRANCH_LEFT/BRANCH_RIGHT, NOT_TAKEN) is not tested here; nothing is version-specific.
"""

from __future__ import annotations

import dis
from dataclasses import dataclass
from types import CodeType
from typing import Final

from diffgenome.protocol.namecache import NameCache
from diffgenome.protocol.naming import Named, SourceNames, Span, span_size, within

# Captured at import time: the recording side must not see later monkeypatching.
_get_instructions = dis.get_instructions

#: What ``classify`` says of a jump that is no outcome. ``INTERNAL_JUMP``: a step inside a
#: condition still being evaluated (short-circuit), ignored while its event stays on; the same
#: instruction may decide on another run. ``NO_DECISION``: no decision can ever come from this
#: jump (loops, ``with``/``try`` machinery, value-context ``and``/``or``): its event is disabled.
INTERNAL_JUMP: Final = -1
NO_DECISION: Final = -2

_UNCONDITIONAL: Final = frozenset(
    {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"}
)
_TERMINATORS: Final = frozenset(
    {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "INTERPRETER_EXIT"}
)
_TRANSPARENT: Final = frozenset({"EXTENDED_ARG", "CACHE"})


# --- the file map -------------------------------------------------------------------------


@dataclass(slots=True)
class _CodeTable:
    """Per code object: src offset -> ((dest, result), ...), computed on first use."""

    code: CodeType
    jumps: dict[int, tuple[tuple[int, int], ...]]
    never: frozenset[int]


class FileMap(SourceNames):
    """The names of one source file, and the outcome of every conditional jump compiled from it."""

    def __init__(self, source: str, module: str, named: Named | None = None) -> None:
        super().__init__(source, module, named=named)
        self._tables: dict[int, _CodeTable] = {}

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
            return NO_DECISION
        for d, result in directions:
            if d == dest:
                return result
        return INTERNAL_JUMP

    def _site_of(self, pos: Span) -> int:
        idx = self.cond_index.get(pos)
        if idx is not None:
            return idx
        best, best_size = -1, (1 << 30, 1 << 30)
        for i, info in enumerate(self.site_spans):
            for span in info.cond:
                if within(pos, span) and span_size(span) < best_size:
                    best, best_size = i, span_size(span)
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
            size = min(span_size(s) for s in self.site_spans[site].cond if within(pos, s))
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
                if all(r == INTERNAL_JUMP for _, r in results):
                    never.add(off)
        return _CodeTable(code, jumps, frozenset(never))

    def _outcome(
        self,
        site: int,
        start: int,
        instrs: list[dis.Instruction],
        positions: list[Span | None],
    ) -> int:
        info = self.site_spans[site]
        # An expression never begins with an unconditional jump, while 3.13 positions the loop-back
        # jump of a comprehension like its element: for expression sites, jumps are stepped over.
        through_jumps = info.kind in ("ifexp", "comprehension")
        landing = _walk(info.cond, start, instrs, positions, through_jumps)
        if landing is None:
            return INTERNAL_JUMP
        pos = positions[landing]
        if info.kind == "assert":
            failed = instrs[landing].opname == "LOAD_ASSERTION_ERROR" or (
                pos is not None and any(within(pos, s) for s in info.body)
            )
            return site * 2 + (0 if failed else 1)
        entered = pos is not None and any(within(pos, s) for s in info.body)
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
        inside = pos is None or any(within(pos, s) for s in cond)
        if _is_conditional(ins.opname):
            # Like the site of a jump, judged by the jump or by the value it tests (3.13).
            j = i - 1
            while j >= 0 and instrs[j].opname in _TRANSPARENT:
                j -= 1
            before = positions[j] if j >= 0 else None
            if (pos is not None and inside) or (
                before is not None and any(within(before, s) for s in cond)
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


def build_file_map(source: str, module: str, cache: NameCache | None = None) -> FileMap:
    """Parse ``source`` (the text of the module ``module``) once; raises SyntaxError only.

    With a ``cache``, names an earlier session computed for this very source are read back
    instead (``protocol/namecache.py``: the outcomes of jumps are never kept, they are worked
    out per code object as before), and names built here are kept for the next session."""
    if cache is None:
        return FileMap(source, module)
    key = cache.key(source, module)
    named = cache.get(key, source, module)
    if named is not None:
        try:
            return FileMap(source, module, named)
        except Exception:
            pass  # checked on load; a map that still cannot be made is built instead
    filemap = FileMap(source, module)
    cache.put(key, source, module, filemap)
    return filemap
