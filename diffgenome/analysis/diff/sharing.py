"""Tests that may see a change through a value computed once for many of them.

A test's genome holds what ran while it ran. A fixture of scope ``module`` runs in the setup
of the first test that asks for it, and every later test of the module gets its cached value
with no call at all; a value a module computes when it is imported (``PRICE = net(10)``,
a decorator that registers what it decorates) runs in ``<import>``, under no test. When such
code reaches a change, the genomes name only the first test (or none) as reaching it, yet the
others use what it made: a selection by reach alone would carry them over as ``unchanged``
while at head they fail (a module fixture computing ``net(10)``: the second test asserting on
it was carried, and would have failed).

So a change reached in a setup or teardown phase under a fixture whose scope is wider than
one test, or under code of unknown scope, reaches every test that may share that fixture's
value: the tests of the same file for ``class`` and ``module`` scope, every test for
``package`` and ``session`` scope and for a scope this cannot read (a fixture of a plugin,
a scope decided at run time, a finalizer of unknown origin). A change reached while a module
was imported reaches the tests of that module when it is a test module, every test otherwise.
This is read from the source of base's code; without it every test is reached (never fewer).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from diffgenome.protocol.vocab import SYMBOL_PREFIX

#: pytest's fixture scopes, narrowest first.
SCOPES: Final = ("function", "class", "module", "package", "session")
#: The scopes whose value lives beyond one test but within one test file.
_FILE_SCOPES: Final = frozenset({"class", "module"})
#: Phases in which pytest runs fixtures (their setup and their finalizers).
FIXTURE_PHASES: Final = frozenset({"setup", "teardown"})
#: Every test: the domain of a value whose sharing cannot be bounded.
EVERY_TEST: Final = ""
#: The set-up and tear-down functions pytest and unittest call by name, and their scopes.
_BY_NAME: Final = {
    "setup_module": "module",
    "teardown_module": "module",
    "setUpModule": "module",
    "tearDownModule": "module",
    "setup_class": "class",
    "teardown_class": "class",
    "setUpClass": "class",
    "tearDownClass": "class",
    "setup_method": "function",
    "teardown_method": "function",
    "setup_function": "function",
    "teardown_function": "function",
    "setUp": "function",
    "tearDown": "function",
}


def fixture_scope(source: str, qualname: str) -> str | None:
    """The scope of the fixture ``qualname`` defines in ``source`` (a finalizer defined in a
    fixture counts as that fixture: ``price.<locals>.done`` is ``price``'s), or of the
    set-up function pytest or unittest calls by its name (``setup_module``, ``setUpClass``);
    None when it is neither or its scope is no literal (a callable decides)."""
    owner = qualname.split(".<locals>.", 1)[0]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    node = _definition(tree, owner.split("."))
    if node is None:
        return None
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        name = _last_name(call.func if call is not None else decorator)
        if name not in ("fixture", "yield_fixture"):
            continue
        if call is None:
            return "function"
        scope: object = "function"
        if call.args:
            first = call.args[0]
            scope = first.value if isinstance(first, ast.Constant) else None
        for keyword in call.keywords:
            if keyword.arg == "scope":
                value = keyword.value
                scope = value.value if isinstance(value, ast.Constant) else None
        return scope if isinstance(scope, str) and scope in SCOPES else None
    return _BY_NAME.get(node.name)


def _definition(
    tree: ast.Module, names: list[str], *, classes: bool = False
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    found: ast.stmt | None = None
    for name in names:
        found = next(
            (
                stmt
                for stmt in reversed(body)  # the last definition of a name is the one in force
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and stmt.name == name
            ),
            None,
        )
        if found is None:
            return None
        body = found.body
    if isinstance(found, ast.ClassDef):
        return found if classes else None
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


#: Methods that change the object they are called on (a list's, a dict's, a set's).
_MUTATORS: Final = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "clear",
        "sort",
        "reverse",
        "add",
        "discard",
        "update",
        "setdefault",
        "appendleft",
        "extendleft",
        "__setitem__",
        "__delitem__",
    }
)


def written_globals(source: str, qualname: str) -> frozenset[str] | None:
    """The names a function may change beyond its own call (None: its source cannot be read):
    those it declares ``global`` and assigns, and those whose object it changes in place
    (``NAMES.append(x)``, ``CACHE[key] = v``, ``registry.NAMES.clear()``, ``COUNT += 1``
    with ``global``; the last attribute of a chain names the object). Its own parameters and
    locals are no such names."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    node = _definition(tree, qualname.split(".<locals>.", 1)[0].split("."))
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    declared: set[str] = set()
    local: set[str] = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    changed: set[str] = set()
    for item in ast.walk(node):
        if isinstance(item, ast.Global | ast.Nonlocal):
            declared.update(item.names)
        elif isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store | ast.Del):
            local.add(item.id)
            changed.add(item.id)
        elif isinstance(item, ast.Subscript | ast.Attribute) and isinstance(
            item.ctx, ast.Store | ast.Del
        ):
            changed.add(_object_name(item.value))
        elif (
            isinstance(item, ast.Call)
            and isinstance(item.func, ast.Attribute)
            and item.func.attr in _MUTATORS
        ):
            changed.add(_object_name(item.func.value))
    changed.discard("")
    return frozenset(name for name in changed if name in declared or name not in local)


def _object_name(node: ast.expr) -> str:
    """The name an expression's object goes by: ``NAMES``, ``registry.NAMES`` → ``NAMES``,
    ``CACHE[k]`` → ``CACHE``; empty for anything else (a call's result)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


#: Class decorators that only read the class they are given (they register it nowhere).
_READING_DECORATORS: Final = frozenset(
    {"dataclass", "total_ordering", "final", "runtime_checkable", "unique"}
)


def body_keeps_to_itself(source: str, qualname: str, *, decorators: bool = False) -> bool:
    """Whether the body of a module (``qualname`` empty) or of a class, as Python runs it
    once, can hand what it makes to nothing but its own names: no statement that is a bare
    call (``register(PRICE)``), no store into another object (``REGISTRY[k] = v``,
    ``other.X = v``), no ``global``, no decorator called with arguments, no class decorator
    but those that only read the class (``dataclass``). A call whose result is bound to a
    name may still keep what it is given; the calls the recording saw are judged by what
    their code writes (:func:`written_globals`). ``decorators``: any decorator passes (a
    test module's ``@pytest.mark.parametrize(...)``, for a module that only imports the one
    that made the value). False when the source cannot be read."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    body: list[ast.stmt] = tree.body
    if qualname:
        found = _definition(tree, qualname.split("."), classes=True)
        if not isinstance(found, ast.ClassDef):
            return False
        body = found.body
    return all(_keeps_to_itself(stmt, decorators) for stmt in body)


def _keeps_to_itself(stmt: ast.stmt, decorators: bool) -> bool:
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)
    if isinstance(stmt, ast.Global | ast.Nonlocal):
        return False
    if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
        targets = stmt.targets if isinstance(stmt, ast.Assign | ast.Delete) else [stmt.target]
        return not any(
            isinstance(part, ast.Attribute | ast.Subscript)
            and isinstance(part.ctx, ast.Store | ast.Del)
            for target in targets
            for part in ast.walk(target)
        )
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        return decorators or not any(isinstance(d, ast.Call) for d in stmt.decorator_list)
    if isinstance(stmt, ast.ClassDef):
        return (decorators or all(_reading(d) for d in stmt.decorator_list)) and all(
            _keeps_to_itself(inner, decorators) for inner in stmt.body
        )
    inner_bodies: list[list[ast.stmt]] = [
        getattr(stmt, name) for name in ("body", "orelse", "finalbody") if hasattr(stmt, name)
    ]
    inner_bodies += [handler.body for handler in getattr(stmt, "handlers", ())]
    inner_bodies += [case.body for case in getattr(stmt, "cases", ())]
    return all(_keeps_to_itself(inner, decorators) for body in inner_bodies for inner in body)


def _reading(decorator: ast.expr) -> bool:
    return _last_name(decorator) in _READING_DECORATORS


def _last_name(node: ast.expr) -> str | None:
    """``fixture`` of ``pytest.fixture`` and of ``fixture``; None for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


ScopeOf = Callable[[str], str | None]


class SourceReader:
    """What base's source says of a function symbol, at the path base's symbol table gives
    it (``source_of(path)``: base's text of a file); each file read once."""

    def __init__(
        self,
        symbols: Iterable[Mapping[str, object]],
        module_of: Callable[[str], str | None],
        source_of: Callable[[str], str | None] | None,
    ) -> None:
        self._paths = {
            str(entry.get("id")): str(entry.get("path"))
            for entry in symbols
            if entry.get("path") is not None
        }
        self._module_of = module_of
        self._source_of = source_of
        self._sources: dict[str, str | None] = {}
        self._written: dict[str, frozenset[str] | None] = {}

    def _located(self, symbol: str) -> tuple[str, str] | None:
        """(source, qualname) of ``symbol``; None when any of it is unknown."""
        symbol = symbol.split("#", 1)[0]
        path = self._paths.get(symbol)
        if path is None or self._source_of is None:
            return None
        module = self._module_of(path)
        name = symbol.removeprefix(SYMBOL_PREFIX)
        if module is None or not (name == module or name.startswith(module + ".")):
            return None
        if path not in self._sources:
            self._sources[path] = self._source_of(path)
        source = self._sources[path]
        return (source, name[len(module) + 1 :]) if source is not None else None

    def path(self, symbol: str) -> str | None:
        """The file of ``symbol`` in base's symbol table (from the repository's top)."""
        return self._paths.get(symbol.split("#", 1)[0])

    def keeps_to_itself(self, symbol: str) -> bool:
        """:func:`body_keeps_to_itself` of a module or class symbol (False: unknown)."""
        located = self._located(symbol)
        return located is not None and body_keeps_to_itself(*located)

    def scope(self, symbol: str) -> str | None:
        """:func:`fixture_scope` of ``symbol``."""
        located = self._located(symbol)
        return fixture_scope(*located) if located is not None else None

    def written(self, symbol: str) -> frozenset[str] | None:
        """:func:`written_globals` of ``symbol`` (None: unknown)."""
        if symbol not in self._written:
            located = self._located(symbol)
            self._written[symbol] = written_globals(*located) if located is not None else None
        return self._written[symbol]


def fixture_domain(test_id: str, top: str, scope_of: ScopeOf) -> str | None:
    """Which tests may share what the fixture ``top`` (the first node of a setup or teardown
    phase's path) made in ``test_id``'s run: None (only that test: a function-scoped
    fixture), the test's file (class and module scope), or :data:`EVERY_TEST`."""
    scope = scope_of(top)
    if scope == "function":
        return None
    if scope in _FILE_SCOPES:
        return test_file(test_id)
    return EVERY_TEST


def import_domain(
    path: tuple[str, ...], module_kind: Callable[[str], str | None]
) -> tuple[int, str]:
    """Which tests may use what a module made while it was imported (``path``: ``<import>``'s
    path to the changed call), with the place on ``path`` of the module that made it (-1:
    none): the tests of the innermost module body on it when that is a test module, else
    every test (which the files that import that module may narrow, diff/importers.py).
    ``module_kind(symbol)``: None for what is no module, the test file for a test module,
    :data:`EVERY_TEST` for any other module."""
    for at in range(len(path) - 2, -1, -1):
        kind = module_kind(path[at].split(" ", 1)[0])
        if kind is not None:
            return at, kind
    return -1, EVERY_TEST


def module_kinds(
    symbols: Iterable[Mapping[str, object]], test_ids: Iterable[str]
) -> Callable[[str], str | None]:
    """:func:`import_domain`'s ``module_kind``, from base's symbol table and test ids (a test
    id's file is from pytest's rootdir, a symbol's path from the repository's top)."""
    files = {test_file(test_id) for test_id in test_ids}
    kinds: dict[str, str] = {}
    for entry in symbols:
        if entry.get("kind") != "module" or entry.get("path") is None:
            continue
        path = str(entry.get("path"))
        match = next((f for f in files if path == f or path.endswith("/" + f)), None)
        if match is None and _test_file_name(path):
            # A test module none of whose tests ran (packaging's property tests, deselected
            # by its ``-m "not property"``, are imported all the same): its tests alone use
            # what it made.
            match = path
        kinds[str(entry.get("id"))] = match if match is not None else EVERY_TEST
    return kinds.get


def _test_file_name(path: str) -> bool:
    """Whether pytest's default ``python_files`` (``test_*.py``, ``*_test.py``) names it."""
    name = path.rpartition("/")[2]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def test_file(test_id: str) -> str:
    """The file part of a pytest node id."""
    return test_id.split("::", 1)[0]


#: Which tests may share a value: :data:`EVERY_TEST`, one test file, or several.
Domain = str | frozenset[str]


def in_domain(test_id: str, domain: Domain) -> bool:
    if isinstance(domain, frozenset):
        return test_file(test_id) in domain
    return domain == EVERY_TEST or test_file(test_id) == domain


__all__ = [
    "EVERY_TEST",
    "FIXTURE_PHASES",
    "SCOPES",
    "Domain",
    "ScopeOf",
    "SourceReader",
    "body_keeps_to_itself",
    "fixture_domain",
    "fixture_scope",
    "import_domain",
    "in_domain",
    "module_kinds",
    "test_file",
    "written_globals",
]
