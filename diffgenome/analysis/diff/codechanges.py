"""What a commit range changed in the code, named as the recorder names it.

The differ needs "which symbols changed" in the recorder's vocabulary (``py:pkg.mod.f``,
``py:pkg.mod.f/if[3f2a9c01d4]``), not in lines. Both versions of every changed file are parsed; each
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
import copy
import hashlib
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import CodeType

from diffgenome.analysis.diff.mapping import EMPTY, CodeMapping, Version, map_code
from diffgenome.analysis.models import CodeChangeKind
from diffgenome.protocol.namecache import NameCache
from diffgenome.protocol.naming import (
    SourceNames,
    Span,
    iter_code_objects,
    node_span,
    parse_source,
)
from diffgenome.protocol.vocab import CODE_ADDED, CODE_MODIFIED, CODE_REMOVED, SYMBOL_PREFIX

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.GeneratorExp)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Scopes whose code object is compiled from a syntax node of their own (not the parameter and
# alias scopes of PEP 695, whose code belongs to a definition).
_NODE_ROLES = frozenset({"class", "function", "lambda", "genexpr"})


@dataclass(frozen=True, slots=True)
class SiteChange:
    """A decision site of a modified symbol whose condition or guarded code changed."""

    site: str
    change: CodeChangeKind
    predicate: str
    #: Where it is for people (head's line, base's when removed); never part of its id.
    line: int | None = None
    #: A modified decision's condition in base, where it reads otherwise (the mapping paired
    #: ``age > max_age`` with ``age >= max_age``).
    was: str | None = None


@dataclass(frozen=True, slots=True)
class SymbolChange:
    """One symbol the code change touched; ``path`` is the file (head's, or base's if removed)."""

    symbol: str
    change: CodeChangeKind
    sites: tuple[SiteChange, ...] = ()
    path: str | None = None
    # For a modified module or class body: the names its changed statements bind, the
    # functions of the file that read one of them, and whether a changed statement does
    # more than bind names (a call, an assert...), whose effect no name tells.
    bound: tuple[str, ...] = ()
    readers: tuple[str, ...] = ()
    opaque: bool = False
    # Names the body binds on one side only (a new module-level regex, a removed constant):
    # a state fact about such a name is new code being there, not behaviour.
    one_sided_names: tuple[str, ...] = ()
    # For a modified function: the state targets it reads on one side only (``self.fixed``
    # named by a new branch, ``global:LIMIT``), whose facts the recorder takes from the code,
    # at every call, whichever way the call goes.
    one_sided_reads: tuple[str, ...] = ()
    # For an added or removed function or class: a digest of its code without its own name,
    # so that a rename (the same code under another name) can be told from new code.
    body: str | None = None
    # For a modified one: its code is base's once the names of code renamed by the change
    # (the same code under another name) are read as their new names: a caller of a renamed
    # helper, changed by the rename only. Also set on code the mapping paired under another
    # name whose code is the same (a pure rename or move).
    renames_only: bool = False
    #: Base's name of code the mapping paired under another name (renamed, moved, or
    #: anonymous code bound anew): the entry is head's, base's recordings are read under
    #: head's names (mapping.py).
    renamed_from: str | None = None
    #: Moved onto the class of one of its parameters (``Pricing._line(self, line)`` became
    #: ``Line.amount(self)``): that argument is the object it is called on now, so its
    #: arguments and the fields it reads are not comparable with base's (mapping.py).
    onto_argument: bool = False
    #: Where its definition starts in ``path``, for people only (no identity holds a line).
    line: int | None = None


@dataclass(frozen=True, slots=True)
class CodeChangeInput:
    """What ``git diff BASE HEAD`` changed, as symbols. ``unparsed``: changed files that could
    not be analysed on one side (syntax errors), so their symbols are unknown."""

    symbols: tuple[SymbolChange, ...] = ()
    unparsed: tuple[str, ...] = ()
    #: Base ids of code and decisions that head names otherwise (mapping.py): base's
    #: recordings are translated by it before they are compared.
    mapping: CodeMapping = EMPTY
    #: Both sides are one program: no file changed, or only Python files whose syntax trees
    #: are equal (comments, blank lines, layout): whatever differs between their recordings
    #: is the tests' own nondeterminism or their environment (:func:`same_program`).
    same_program: bool = False
    #: Changed files no symbol speaks for: configuration, data, documents, Python the
    #: recordings do not name (pytest's configuration in ``pyproject.toml``). A change no
    #: changed code is in reach of may come from one of them; the report names them there.
    other_files: tuple[str, ...] = ()

    def by_symbol(self) -> dict[str, SymbolChange]:
        return {change.symbol: change for change in self.symbols}

    def same_code(self) -> frozenset[str]:
        """Symbols the change renamed or moved without changing their code (a removed one
        whose code an added one has), with both names, and those it modified only by
        naming such code anew: none of them behaves otherwise."""
        return (
            frozenset(symbol for old, new in renamed(self.symbols).items() for symbol in (old, new))
            | frozenset(change.symbol for change in self.symbols if change.renames_only)
            | frozenset(
                change.renamed_from
                for change in self.symbols
                if change.renames_only and change.renamed_from is not None
            )
        )

    def bodies_read_by(self) -> dict[str, frozenset[str]]:
        """Each reader (:meth:`readers`) → the modified module or class bodies whose names
        it reads."""
        out: dict[str, set[str]] = {}
        for change in self.symbols:
            if change.change == CODE_MODIFIED:
                for reader in change.readers:
                    out.setdefault(reader, set()).add(change.symbol)
        return {reader: frozenset(bodies) for reader, bodies in out.items()}

    def readers(self) -> frozenset[str]:
        """The functions that read a name a modified module or class body binds: a test that
        runs one reaches that body's change (exercised.py)."""
        return frozenset(
            reader
            for change in self.symbols
            if change.change == CODE_MODIFIED
            for reader in change.readers
        )

    def one_sided_state(self) -> frozenset[str]:
        """State targets (``global:<name>``) of module-level names bound on one side only,
        and ``<symbol> <target>`` (``self.<name>``, ``global:<name>``) for what a modified
        function reads on one side only (docs/diffing.md, "Touched")."""
        bound = {f"global:{name}" for change in self.symbols for name in change.one_sided_names}
        read = {
            f"{change.symbol} {target}"
            for change in self.symbols
            for target in change.one_sided_reads
        }
        return frozenset(bound | read)

    def one_sided_sites(self) -> frozenset[str]:
        """Decision sites that exist in one side's code only (added or removed)."""
        return frozenset(
            site.site
            for change in self.symbols
            for site in change.sites
            if site.change in (CODE_ADDED, CODE_REMOVED)
        )


@dataclass(slots=True)
class _ScopeFacts:
    fingerprint: str | None
    body: str | None = None
    sites: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> predicate, fp
    # module and class bodies: canonical form -> statement, for their own statements
    statements: dict[str, list[ast.stmt]] | None = None
    # functions: every name and attribute name their code reads
    loads: frozenset[str] = frozenset()
    # functions: the state targets their own code reads, as the recorder names them
    # (``self.<field>``, ``global:<name>``)
    reads: frozenset[str] = frozenset()
    # where the scope starts, and each site's condition, for people (never compared)
    line: int | None = None
    lines: dict[str, int] = field(default_factory=dict)
    # functions: how many parameters they take
    arity: int | None = None


def same_program(base: Mapping[str, str | None], head: Mapping[str, str | None]) -> bool:
    """Whether two versions of the changed files (path -> text, None where a side lacks it
    or it is not text) are one program: every one a Python file on both sides with the same
    syntax tree. Docstrings are in the tree; comments and layout are not (a test that reads
    its source's text, through ``inspect.getsource``, would see those: docs/diffing.md,
    "One program")."""
    if set(base) != set(head):
        return False
    for path, text in base.items():
        other = head[path]
        if not path.endswith(".py") or text is None or other is None:
            return False
        if text == other:
            continue
        try:
            if ast.dump(ast.parse(text)) != ast.dump(ast.parse(other)):
                return False
        except (SyntaxError, ValueError):
            return False
    return True


def code_changes_from_sources(
    base_files: Mapping[str, str],
    head_files: Mapping[str, str],
    module_of: Callable[[str], str | None],
    importers: Callable[[Sequence[str]], Mapping[str, str]] | None = None,
    names: NameCache | None = None,
) -> CodeChangeInput:
    """Compare two versions of the changed files (path -> source text; a path missing on one
    side is a file added or deleted). ``module_of`` maps a repository path to its module name
    (``src/pkg/mod.py`` -> ``pkg.mod``) or None for files that are not Python modules.

    ``importers(names)``, when given, returns base's other files whose text mentions one of
    ``names``: a changed module-level name imported elsewhere (``from ._tokenizer import
    DEFAULT_RULES``) is read there, and the functions that read it are readers too.

    ``names``: where the names of source files are kept between sessions (the store's, which
    the recordings read too): a version named before is not named again."""
    changes: list[SymbolChange] = []
    unparsed: list[str] = []
    texts: dict[str, tuple[str, str]] = {}  # modified functions: base's and head's code
    versions: list[tuple[Version | None, Version | None]] = []
    base_facts: dict[str, _ScopeFacts] = {}
    head_facts: dict[str, _ScopeFacts] = {}
    for module, path, b_src, h_src in _module_files(base_files, head_files, module_of):
        if b_src == h_src:
            continue
        try:
            b_version = _version(b_src, module, names) if b_src is not None else None
            h_version = _version(h_src, module, names) if h_src is not None else None
            b_facts = _file_facts(b_version, "", module) if b_version is not None else {}
            h_facts = _file_facts(h_version, "", module) if h_version is not None else {}
        except (SyntaxError, ValueError, RecursionError):
            unparsed.append(path)
            continue
        versions.append((b_version, h_version))
        base_facts.update(b_facts)
        head_facts.update(h_facts)
        changes.extend(_compare_files(b_facts, h_facts, path, texts))
    try:
        mapping = map_code(versions)
    except RecursionError:  # absurdly deep code: named as it is, as before the mapping
        mapping = EMPTY
    changes = _mapped(changes, mapping, base_facts, head_facts, texts)
    changes = _renames_only(changes, texts, mapping)
    if importers is not None:
        changes = _imported_readers(changes, importers, module_of)
    changes.sort(key=lambda change: change.symbol)
    return CodeChangeInput(tuple(changes), tuple(unparsed), mapping)


def _version(source: str, module: str, names: NameCache | None = None) -> Version:
    """One side of a file: its tree and its names, taken from ``names`` where they are kept
    (the tree is walked all the same: the differ reads each decision's syntax)."""
    tree = parse_source(source, module)
    if names is None:
        return Version(tree, SourceNames(source, module, tree, keep_parts=True))
    key = names.key(source, module)
    kept = names.get(key, source, module)
    version = Version(tree, SourceNames(source, module, tree, keep_parts=True, named=kept))
    if not version.names.adopted:
        names.put(key, source, module, version.names)
    return version


def _mapped(
    changes: list[SymbolChange],
    mapping: CodeMapping,
    base: Mapping[str, _ScopeFacts],
    head: Mapping[str, _ScopeFacts],
    texts: dict[str, tuple[str, str]],
) -> list[SymbolChange]:
    """The changes in head's names: code the mapping paired under another name is one entry,
    modified (or renamed: its code the same), instead of one removed and one added; the
    decisions of modified code are compared with the base decisions they are paired with."""
    if not mapping:
        return changes
    by_symbol = {change.symbol: change for change in changes}
    merged: dict[str, SymbolChange] = {}
    gone: set[str] = set()
    for old, new in mapping.symbols.items():
        removed, added = by_symbol.get(old), by_symbol.get(new)
        b, h = base.get(old), head.get(new)
        if (
            removed is None
            or added is None
            or removed.change != CODE_REMOVED
            or added.change != CODE_ADDED
            or b is None
            or h is None
        ):
            continue
        gone |= {old, new}
        same = removed.body is not None and removed.body == added.body
        if b.fingerprint is not None and h.fingerprint is not None:
            texts[new] = (b.fingerprint, h.fingerprint)
        merged[new] = replace(
            added,
            change=CODE_MODIFIED,
            sites=_site_changes(b.sites, h.sites, b.lines, h.lines, mapping),
            renamed_from=old,
            renames_only=same,
            one_sided_reads=tuple(sorted(b.reads ^ h.reads)),
            onto_argument=old.rpartition(".")[0] != new.rpartition(".")[0]
            and b.arity is not None
            and h.arity is not None
            and b.arity == h.arity + 1,
        )
    out: list[SymbolChange] = []
    for change in changes:
        if change.symbol in gone:
            continue
        b, h = base.get(change.symbol), head.get(change.symbol)
        if change.change == CODE_MODIFIED and b is not None and h is not None:
            change = replace(
                change, sites=_site_changes(b.sites, h.sites, b.lines, h.lines, mapping)
            )
        out.append(change)
    return out + list(merged.values())


def _module_files(
    base_files: Mapping[str, str],
    head_files: Mapping[str, str],
    module_of: Callable[[str], str | None],
) -> list[tuple[str, str, str | None, str | None]]:
    """(module, path, base's source, head's source) for each changed file of a module. A
    module whose file moved (inflection 0.5.1: ``inflection.py`` became
    ``inflection/__init__.py``) is one entry with both sources, under head's path: as a file
    deleted and a file added, every symbol read as removed and added again, and the module
    body's one real edit (``__version__``) was no change of anything."""
    entries: list[tuple[str, str, str | None, str | None]] = []
    deleted: dict[str, int] = {}  # module -> its entry, while only base has a file for it
    added: dict[str, int] = {}
    for path in sorted(set(base_files) | set(head_files)):
        b_src, h_src = base_files.get(path), head_files.get(path)
        module = module_of(path)
        if b_src == h_src or module is None:
            continue
        if b_src is None and module in deleted:
            index = deleted.pop(module)
            entries[index] = (module, path, entries[index][2], h_src)
            continue
        if h_src is None and module in added:
            index = added.pop(module)
            entries[index] = (module, entries[index][1], b_src, entries[index][3])
            continue
        if b_src is None:
            added[module] = len(entries)
        elif h_src is None:
            deleted[module] = len(entries)
        entries.append((module, path, b_src, h_src))
    return entries


def renamed(symbols: Iterable[SymbolChange]) -> dict[str, str]:
    """Removed symbol -> the added one with the same code (its body digest), where exactly one
    added symbol has it and no other removed one does."""
    removed: dict[str, list[str]] = {}
    added: dict[str, list[str]] = {}
    for change in symbols:
        if change.body is None:
            continue
        if change.change == CODE_REMOVED:
            removed.setdefault(change.body, []).append(change.symbol)
        elif change.change == CODE_ADDED:
            added.setdefault(change.body, []).append(change.symbol)
    return {
        olds[0]: added[body][0]
        for body, olds in removed.items()
        if len(olds) == 1 and len(added.get(body, ())) == 1
    }


def _renames_only(
    changes: list[SymbolChange],
    texts: Mapping[str, tuple[str, str]],
    mapping: CodeMapping = EMPTY,
) -> list[SymbolChange]:
    """Mark the modified functions whose code differs from base's only by the names of code
    the change renamed (the calls of ``self._exec`` become ``self._execute``)."""
    names: dict[str, str | None] = {}
    # Pure renames only: a caller of code renamed *and* edited may behave otherwise.
    pairs = {
        **renamed(changes),
        **{
            change.renamed_from: change.symbol
            for change in changes
            if change.renamed_from is not None
            and change.renames_only
            and mapping.symbols.get(change.renamed_from) == change.symbol
        },
    }
    for old, new in pairs.items():
        before, after = old.rpartition(".")[2], new.rpartition(".")[2]
        if before != after:
            # Two renames of one name to two others: which is meant cannot be told.
            names[before] = after if names.get(before, after) == after else None
    renames = [(before, after) for before, after in names.items() if after is not None]
    if not renames:
        return changes
    out: list[SymbolChange] = []
    for change in changes:
        both = texts.get(change.symbol)
        if change.change == CODE_MODIFIED and both is not None:
            text = both[0]
            for before, after in renames:
                for field_name in ("attr", "id"):
                    text = text.replace(f"{field_name}={before!r}", f"{field_name}={after!r}")
            if text == both[1] and change.renamed_from is None:
                change = replace(change, renames_only=True)
        out.append(change)
    return out


def _compare_files(
    base: Mapping[str, _ScopeFacts],
    head: Mapping[str, _ScopeFacts],
    path: str,
    texts: dict[str, tuple[str, str]],
) -> Iterator[SymbolChange]:
    for symbol in sorted(set(base) | set(head)):
        b, h = base.get(symbol), head.get(symbol)
        if b is None:
            sites = _site_changes({}, h.sites if h else {}, {}, h.lines if h else {})
            yield SymbolChange(
                symbol,
                CODE_ADDED,
                sites,
                path,
                body=h.body if h else None,
                line=h.line if h else None,
            )
        elif h is None:
            yield SymbolChange(symbol, CODE_REMOVED, (), path, body=b.body, line=b.line)
        elif b.fingerprint is None or h.fingerprint is None or b.fingerprint != h.fingerprint:
            sites = _site_changes(b.sites, h.sites, b.lines, h.lines)
            if b.statements is None or h.statements is None:
                if b.fingerprint is not None and h.fingerprint is not None:
                    texts[symbol] = (b.fingerprint, h.fingerprint)
                yield SymbolChange(
                    symbol,
                    CODE_MODIFIED,
                    sites,
                    path,
                    one_sided_reads=tuple(sorted(b.reads ^ h.reads)),
                    line=h.line,
                )
                continue
            changed = _changed_statements(b.statements, h.statements)
            bound: set[str] = set()
            opaque = False
            for stmt in changed:
                opaque |= not _binds(stmt, bound)
            sides: list[set[str]] = [set(), set()]
            for names, statements in zip(sides, (b.statements, h.statements), strict=True):
                for group in statements.values():
                    for stmt in group:
                        _binds(stmt, names)
            readers = sorted(
                name
                for name, facts in (*base.items(), *head.items())
                if facts.loads & bound and name != symbol
            )
            yield SymbolChange(
                symbol,
                CODE_MODIFIED,
                sites,
                path,
                bound=tuple(sorted(bound)),
                readers=tuple(dict.fromkeys(readers)),
                opaque=opaque,
                one_sided_names=tuple(sorted(sides[0] ^ sides[1])),
                line=h.line,
            )


def _imported_readers(
    changes: list[SymbolChange],
    importers: Callable[[Sequence[str]], Mapping[str, str]],
    module_of: Callable[[str], str | None],
) -> list[SymbolChange]:
    """Add to each changed module body's readers the functions of other modules that import
    one of the names it binds (or the module) and read it."""
    wanted = [
        c
        for c in changes
        if c.bound and c.symbol.startswith(SYMBOL_PREFIX) and c.change == CODE_MODIFIED
    ]
    if not wanted:
        return changes
    modules = {c.symbol[len(SYMBOL_PREFIX) :] for c in wanted}
    short = sorted({m.rpartition(".")[2] for m in modules})
    facts_of: dict[str, tuple[str, dict[str, _ScopeFacts], ast.Module]] = {}
    for path, source in importers(short).items():
        module = module_of(path)
        if module is None:
            continue
        try:
            tree = parse_source(source, module)
            facts_of[path] = (module, _file_facts(None, source, module), tree)
        except (SyntaxError, ValueError):
            continue
    out: list[SymbolChange] = []
    for change in changes:
        if change not in wanted:
            out.append(change)
            continue
        changed_module = change.symbol[len(SYMBOL_PREFIX) :]
        readers = list(change.readers)
        for module, facts, tree in facts_of.values():
            names = _names_from(tree, module, changed_module, set(change.bound))
            if not names:
                continue
            readers += [
                symbol
                for symbol, fact in facts.items()
                if fact.loads & names and symbol not in readers
            ]
        out.append(replace(change, readers=tuple(readers)))
    return out


def _names_from(tree: ast.Module, module: str, target: str, bound: set[str]) -> frozenset[str]:
    """The names under which ``tree`` (the module ``module``) can read ``bound`` names of
    ``target``: their aliases from ``from target import ...``, and the names themselves
    (read as attributes) when it imports ``target`` as a module."""
    package = module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                if base == target and alias.name in bound:
                    names.add(alias.asname or alias.name)
                elif f"{base}.{alias.name}" == target:
                    names |= bound  # ``from pkg import mod``: read as mod.NAME
        elif isinstance(node, ast.Import) and any(a.name == target for a in node.names):
            names |= bound
    return frozenset(names)


def _changed_statements(
    base: Mapping[str, list[ast.stmt]], head: Mapping[str, list[ast.stmt]]
) -> list[ast.stmt]:
    """Statements of a body present on one side only (as many times as they differ)."""
    out: list[ast.stmt] = []
    for key in set(base) | set(head):
        b, h = base.get(key, []), head.get(key, [])
        if len(b) > len(h):
            out.extend(b[len(h) :])
        elif len(h) > len(b):
            out.extend(h[len(b) :])
    return out


_NEUTRAL = (ast.Pass, ast.Global, ast.Nonlocal)


def _binds(stmt: ast.stmt, bound: set[str]) -> bool:
    """Add the names ``stmt`` binds to ``bound``; False when it also does something no name
    stands for (an expression statement, an assert, a raise, a mutation through an index)."""
    if isinstance(stmt, _NEUTRAL):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)  # a string used as a comment
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        for alias in stmt.names:
            bound.add((alias.asname or alias.name).partition(".")[0])
        return True
    if isinstance(stmt, _DEFS):
        bound.add(stmt.name)
        return True
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Delete):
        targets = stmt.targets if isinstance(stmt, ast.Assign | ast.Delete) else [stmt.target]
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    bound.add(node.id)  # ``X.y = 1`` and ``X[k] = 1`` change what X holds
        return True
    if isinstance(stmt, ast.If | ast.Try | ast.With | ast.For | ast.While):
        ok = True
        if isinstance(stmt, ast.For):
            ok &= _binds(ast.Assign(targets=[stmt.target], value=stmt.iter), bound)
        if isinstance(stmt, ast.With):
            for item in stmt.items:
                if item.optional_vars is not None:
                    _binds(ast.Assign(targets=[item.optional_vars], value=item.context_expr), bound)
        blocks: list[list[ast.stmt]] = [stmt.body, getattr(stmt, "orelse", [])]
        if isinstance(stmt, ast.Try):
            blocks += [h.body for h in stmt.handlers] + [stmt.finalbody]
        for block in blocks:
            for inner in block:
                ok &= _binds(inner, bound)
        return ok
    return False


def _site_changes(
    base: Mapping[str, tuple[str, str | None]],
    head: Mapping[str, tuple[str, str | None]],
    base_lines: Mapping[str, int],
    head_lines: Mapping[str, int],
    mapping: CodeMapping = EMPTY,
) -> tuple[SiteChange, ...]:
    """Each decision added, removed or modified, in head's ids: a base decision the mapping
    pairs with a head one is that one, modified where its condition or guarded code changed
    (its code read with locals numbered, so a renamed local is no change)."""
    paired = {mapping.site(site): site for site in base if mapping.site(site) in head}
    out: list[SiteChange] = []
    for site in sorted(set(head) | {s for s in base if mapping.site(s) not in head}):
        h = head.get(site)
        old = paired.get(site)
        b = base.get(old) if old is not None else (base.get(site) if h is None else None)
        if b is None and h is not None:
            out.append(SiteChange(site, CODE_ADDED, h[0], head_lines.get(site)))
        elif h is None and b is not None:
            out.append(SiteChange(site, CODE_REMOVED, b[0], base_lines.get(site)))
        elif b is not None and h is not None and (b[1] is None or b[1] != h[1]):
            # A site whose code could not be matched is taken as changed: better a gap too
            # many than a changed decision nobody looks at.
            was = b[0] if b[0] != h[0] else None
            out.append(SiteChange(site, CODE_MODIFIED, h[0], head_lines.get(site), was))
    return tuple(out)


# --- one file ------------------------------------------------------------------------------


def _file_facts(version: Version | None, source: str, module: str) -> dict[str, _ScopeFacts]:
    """Symbol -> fingerprint and decision sites, for every code object of ``source``."""
    if version is None:
        version = _version(source, module)
    tree, names = version.tree, version.names
    code = compile(tree, f"<diffgenome:{module}>", "exec", dont_inherit=True)
    nodes: dict[Span | None, ast.AST] = {
        node_span(node): node for node in ast.walk(tree) if isinstance(node, _SCOPES)
    }
    facts: dict[str, _ScopeFacts] = {}
    tops: dict[str, ast.AST] = {}
    renames: dict[str, _Renames] = {}
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
        local_names = _Renames(_renamable_locals(code_object, scope_node))
        facts[scope.symbol] = _ScopeFacts(
            _fingerprint(scope_node, local_names),
            _body_digest(scope_node, local_names),
            statements=_own_statements(scope_node),
            loads=_loads(scope_node),
            reads=_state_targets(code_object, scope_node),
            line=_first_line(scope_node),
            arity=_arity(scope_node),
        )
        tops[scope.symbol] = scope_node
        renames[scope.symbol] = local_names
    for site in names.sites:
        top = tops.get(site.symbol)
        # A site whose scope's code could not be found still counts, by its text: taken as
        # changed (fingerprint None) rather than guessed.
        fingerprint = (
            _fp(*site.parts, top=top, renames=renames[site.symbol]) if top is not None else None
        )
        scope_facts = facts.setdefault(site.symbol, _ScopeFacts(None))
        scope_facts.sites[site.id] = (site.predicate, fingerprint)
        line = _first_line(site.parts[0]) if site.parts else None
        if line is not None:
            scope_facts.lines[site.id] = line
    return facts


def _arity(node: ast.AST) -> int | None:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return None
    args = node.args
    return len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)


def _first_line(node: object) -> int | None:
    """Where a definition (its ``def``, after any decorators) or a condition starts."""
    line = getattr(node, "lineno", None)
    return line if isinstance(line, int) else None


def _own_statements(top: ast.AST) -> dict[str, list[ast.stmt]] | None:
    """A module's or class's own statements by canonical form (definitions are symbols of
    their own; a docstring is no statement)."""
    if not isinstance(top, ast.Module | ast.ClassDef):
        return None
    out: dict[str, list[ast.stmt]] = {}
    for stmt in _body(top, top, list(top.body)):
        if isinstance(stmt, ast.stmt):
            parts: list[str] = []
            try:
                _canon(stmt, top, parts, _Renames())
            except RecursionError:
                parts = [f"<unreadable {id(stmt)}>"]
            out.setdefault("".join(parts), []).append(stmt)
    return out


def _loads(top: ast.AST) -> frozenset[str]:
    """Names a function reads, and the attribute names it reads (``self.LIMIT``)."""
    if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(top):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return frozenset(names)


def _parameters(code: CodeType) -> int:
    """How many of ``code.co_varnames`` are its parameters (``*args`` and ``**kwargs`` too)."""
    count = code.co_argcount + code.co_kwonlyargcount
    return (
        count
        + bool(code.co_flags & inspect.CO_VARARGS)
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    )


def _state_targets(code: CodeType, top: ast.AST) -> frozenset[str]:
    """The state targets a function's own code reads, named as the recorder names them from
    its bytecode (recording/collect/contract.py): ``self.<field>`` for an attribute read on
    a method's receiver (its first parameter, ``self`` or ``cls``, in code defined in a
    class, a cell or not), ``global:<name>`` for a name that is no local, cell or free
    variable of it.

    Not :func:`_loads`: a local ``data`` is no read of ``self.data``, and a method that stopped
    reading ``self.data`` when its reading moved into an extracted helper
    (``data = self._joined_data()``) reads it on one side only."""
    if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef):
        return frozenset()
    names = code.co_varnames[: _parameters(code)]
    owner = code.co_qualname.rpartition(".")[0]
    receiver = (
        names[0]
        if names and owner and not owner.endswith("<locals>") and names[0] in ("self", "cls")
        else None
    )
    own = frozenset((*code.co_varnames, *code.co_cellvars, *code.co_freevars))
    # ``self.n += 1`` reads ``self.n`` before it stores it.
    augmented = {id(n.target) for n in ast.walk(top) if isinstance(n, ast.AugAssign)}
    targets: set[str] = set()
    # The body only: decorators, defaults and annotations are evaluated where it is defined.
    stack: list[ast.AST] = list(top.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.GeneratorExp):
            # Its own code object (comprehensions are inlined since 3.12, generator
            # expressions are not); only its first iterable is evaluated here.
            stack.append(node.generators[0].iter)
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            # Its own code object, with its own facts; only what it is defined with is ours.
            stack.extend(getattr(node, "decorator_list", ()))
            arguments = getattr(node, "args", None)
            if isinstance(arguments, ast.arguments):
                stack.extend(d for d in (*arguments.defaults, *arguments.kw_defaults) if d)
            continue
        if (
            isinstance(node, ast.Attribute)
            and receiver is not None
            and isinstance(node.value, ast.Name)
            and node.value.id == receiver
            and (isinstance(node.ctx, ast.Load) or id(node) in augmented)
        ):
            targets.add(f"self.{node.attr}")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in own:
            targets.add(f"global:{node.id}")
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(targets)


# --- fingerprints ----------------------------------------------------------------------------


class _Renames:
    """A function's local names written as ``_v0``, ``_v1``... in the order the canonical form
    meets them, so that renaming a local is no change of the code (the recorder's decision
    identities do the same, protocol.naming): ``for inflection in UNCOUNTABLES`` made ``for
    uncountable in ...`` read as an edit no test could tell apart. The first fingerprint
    fixes the numbering; a site's fingerprint then uses its function's."""

    __slots__ = ("_allowed", "_written")

    def __init__(self, allowed: frozenset[str] = frozenset()) -> None:
        self._allowed = allowed
        self._written: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        written = self._written.get(name)
        if written is None:
            if name not in self._allowed:
                return name
            written = self._written[name] = f"_v{len(self._written)}"
        return written


#: Calls that see a function's locals by name: where one is made, no local is renamed.
_SEES_LOCALS = frozenset({"locals", "vars", "eval", "exec", "dir"})
#: The syntax nodes that bind or read a local by a string field, and that field.
_NAME_FIELDS = {
    ast.Name: "id",
    ast.ExceptHandler: "name",
    ast.alias: "asname",
    ast.MatchAs: "name",
    ast.MatchStar: "name",
    ast.MatchMapping: "rest",
}


def _renamable_locals(code: CodeType, top: ast.AST) -> frozenset[str]:
    """The names only this function's own code can see, as its code object says (its fast
    locals that are neither parameters, which callers name, nor cells a nested scope shares):
    none where the function looks at its locals by name or through its frame."""
    if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef):
        return frozenset()
    for node in ast.walk(top):
        if isinstance(node, ast.Name) and node.id in _SEES_LOCALS:
            return frozenset()
        if isinstance(node, ast.Attribute) and node.attr in ("f_locals", "_getframe"):
            return frozenset()
    return frozenset(code.co_varnames[_parameters(code) :]) - frozenset(code.co_cellvars)


def _fingerprint(top: ast.AST, renames: _Renames | None = None) -> str | None:
    """The code of one scope without what does not change behaviour."""
    out: list[str] = []
    try:
        _canon(top, top, out, renames or _Renames())
    except RecursionError:  # absurdly deep expressions: cannot tell, so call it changed
        return None
    return "".join(out)


def _body_digest(top: ast.AST, renames: _Renames | None = None) -> str | None:
    """A function's or class's code without its own name (and without what
    :func:`_fingerprint` leaves out): equal for the same code under two names. A lambda's or
    generator expression's is its code: its name also says where it is bound (the callee
    it is passed to), which a rename of that callee changes while the code stays."""
    if isinstance(top, _DEFS):
        nameless = copy.copy(top)
        nameless.name = ""
        text = _fingerprint(nameless, renames)
    elif isinstance(top, _SCOPES):
        text = _fingerprint(top, renames)
    else:
        return None
    if text is None:
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


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


def _canon(node: ast.AST, top: ast.AST, out: list[str], renames: _Renames) -> None:
    if node is not top and isinstance(node, _SCOPES):
        out.append(f"<{type(node).__name__} {getattr(node, 'name', '')}>")
        return
    out.append(type(node).__name__)
    out.append("(")
    local_field = _NAME_FIELDS.get(type(node))
    for name, value in ast.iter_fields(node):
        if name == "type_comment":
            continue
        if name == local_field and isinstance(value, str):
            value = renames(value)
        out.append(name)
        out.append("=")
        if isinstance(value, list):
            items: list[object] = list(value)
            if name == "body":
                items = _body(node, top, items)
            out.append("[")
            for item in items:
                if isinstance(item, ast.AST):
                    _canon(item, top, out, renames)
                else:
                    out.append(repr(item))
                out.append(",")
            out.append("]")
        elif isinstance(value, ast.AST):
            _canon(value, top, out, renames)
        else:
            out.append(repr(value))
        out.append(",")
    out.append(")")


def _fp(
    *nodes: ast.AST | list[ast.stmt] | None, top: ast.AST, renames: _Renames | None = None
) -> str | None:
    renames = renames or _Renames()
    out: list[str] = []
    try:
        for node in nodes:
            if node is None:
                out.append("-")
            elif isinstance(node, list):
                for stmt in node:
                    _canon(stmt, top, out, renames)
                out.append(";")
            else:
                _canon(node, top, out, renames)
                out.append("|")
    except RecursionError:
        return None
    return "".join(out)
