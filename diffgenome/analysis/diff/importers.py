"""Which test files can see a module's names, read from the import statements of base's code.

What a module makes while it is imported (``VERSION_POOL = [Version("0"), ...]`` in a helper
of the tests) lives in its namespace, and Python runs its body once per session: the genome
of the one test that imported it first holds the calls, the others hold nothing. A test sees
that namespace only by importing the module, or a module that imports it, or through a
conftest or plugin that does (its fixtures). So the tests that may use such a value are those
of the test files whose imports reach the module, read here from base's source: every
``import``, wherever it stands (in a function too), followed from module to module.

Read so that it never finds fewer importers than there are:

- a name is looked for as the end of a path (``import helpers`` finds every
  ``helpers.py`` and ``helpers/__init__.py`` of the tree, not only the one Python would);
- ``import a.b`` binds ``a``, through which any module of package ``a`` that anybody imported
  is reachable (``a.c.X``): it counts as importing all of package ``a``; so does
  ``from a import *``;
- importing a module runs its packages' ``__init__.py`` files; a test file in a package
  runs those of its own packages;
- a conftest reaches the tests under its folder, and the ``pytest_plugins`` it names are
  imports;
- a file that imports by a computed name (``importlib``, ``__import__``, ``exec``, ``runpy``,
  a ``pytest_plugins`` that is not a list of literal names) may import anything;
- a file whose text cannot be read or parsed may import anything.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

#: Calls that import the module their first argument names (a literal is followed).
_BY_NAME: Final = frozenset({"__import__", "import_module", "importorskip"})
#: Calls that run code no import statement names: the file may import anything.
_ANYTHING: Final = frozenset(
    {
        "exec",
        "eval",
        "run_module",
        "run_path",
        "spec_from_file_location",
        "module_from_spec",
        "exec_module",
        "load_module",
        "load_source",
        "SourceFileLoader",
    }
)


@dataclass
class _Imports:
    """What one file imports: ``files`` it runs, ``folders`` of packages whose every module
    it can reach, and ``anything`` when it imports by a computed name."""

    files: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    anything: bool = False


class ImportGraph:
    """The import statements of every Python file of one tree (paths from its top)."""

    def __init__(self, files: Iterable[str], sources: Mapping[str, str | None]) -> None:
        self._files = sorted({path for path in files if path.endswith(".py")})
        by_name: dict[str, list[str]] = {}
        for path in self._files:
            folder, _, name = path.rpartition("/")
            stem = posixpath.basename(folder) if name == "__init__.py" else name[:-3]
            by_name.setdefault(stem, []).append(path)
        self._by_name = by_name
        self._known = frozenset(self._files)
        self._folders = {path.rpartition("/")[0] for path in self._files}
        self._sources = {path: sources.get(path) for path in self._files}
        self._imports = {path: self._read(path, self._sources[path]) for path in self._files}

    def source(self, path: str) -> str | None:
        """The text of a file of the tree (None: unread)."""
        return self._sources.get(path)

    # -- who imports ---------------------------------------------------------------------

    def importers(self, module: str) -> frozenset[str]:
        """Every file whose imports reach the file ``module``, directly or through others
        (``module`` itself included)."""
        reached = {module}
        changed = True
        while changed:
            changed = False
            for path, imports in self._imports.items():
                if path in reached:
                    continue
                if (
                    imports.anything
                    or not imports.files.isdisjoint(reached)
                    or any(_under(t, folder) for folder in imports.folders for t in reached)
                ):
                    reached.add(path)
                    changed = True
        return frozenset(reached)

    def test_files_seeing(self, module: str, test_files: Iterable[str]) -> frozenset[str]:
        """The test files (pytest's paths, from its rootdir) that can see ``module``'s names:
        those whose file imports it, those under a conftest that does, and those in a
        package whose ``__init__.py`` does. A test file is matched to the tree by the end
        of its path, so that a rootdir below the tree's top finds it."""
        reached = self.importers(module)
        conftest_folders = [
            path.rpartition("/")[0]
            for path in reached
            if path.rpartition("/")[2] in ("conftest.py", "__init__.py")
        ]
        out: set[str] = set()
        for test_file in test_files:
            paths = [p for p in self._files if p == test_file or p.endswith("/" + test_file)]
            if not paths:
                out.add(test_file)  # not in the tree: it may see anything
                continue
            for path in paths:
                if path in reached or any(_under(path, folder) for folder in conftest_folders):
                    out.add(test_file)
        return frozenset(out)

    # -- reading one file ----------------------------------------------------------------

    def _read(self, path: str, source: str | None) -> _Imports:
        out = _Imports()
        if source is None:
            out.anything = True
            return out
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            out.anything = True
            return out
        folder = path.rpartition("/")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self._absolute(alias.name, out, binds_top=alias.asname is None)
                    if alias.asname is not None:
                        self._bind(alias.name, out)
            elif isinstance(node, ast.ImportFrom):
                self._from(node, folder, out)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
                    self._plugins(node.value, out)
            elif isinstance(node, ast.Call):
                self._call(node, out)
        return out

    def _call(self, node: ast.Call, out: _Imports) -> None:
        func = node.func
        name = ""
        if isinstance(func, ast.Attribute):
            name = func.attr
        elif isinstance(func, ast.Name):
            name = func.id
        if name in _ANYTHING:
            out.anything = True
        elif name in _BY_NAME:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                self._absolute(first.value, out, binds_top=False)
                self._bind(first.value, out)
            else:
                out.anything = True

    def _plugins(self, value: ast.expr | None, out: _Imports) -> None:
        items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                self._absolute(item.value, out, binds_top=False)
            else:
                out.anything = True

    def _from(self, node: ast.ImportFrom, folder: str, out: _Imports) -> None:
        names = [alias.name for alias in node.names]
        if node.level:
            base = folder
            for _ in range(node.level - 1):
                base = base.rpartition("/")[0]
            parts = [base] if base else []
            if node.module:
                parts.append(node.module.replace(".", "/"))
            package = "/".join(parts)
            self._relative(package, names, out)
            return
        module = node.module or ""
        self._absolute(module, out, binds_top=False)
        for name in names:
            if name == "*":
                self._bind(module, out)
            else:
                self._absolute(f"{module}.{name}", out, binds_top=False)
                self._bind(f"{module}.{name}", out)

    def _relative(self, package: str, names: Sequence[str], out: _Imports) -> None:
        """``from .x import y`` in a file of ``folder``: ``package`` is ``folder/x``."""
        out.files.update(self._parents(package + "/__init__.py"))
        out.files.update(p for p in (package + ".py", package + "/__init__.py") if p in self._known)
        for name in names:
            if name == "*":
                out.folders.add(package)
                continue
            target = f"{package}/{name}" if package else name
            for path in (target + ".py", target + "/__init__.py"):
                if path in self._known:
                    out.files.add(path)
            if target in self._folders:
                out.folders.add(target)

    def _absolute(self, dotted: str, out: _Imports, *, binds_top: bool) -> None:
        """``import a.b.c``: every file that can be ``a/b/c`` and the packages above it;
        ``binds_top``: the name ``a`` is bound, so all of package ``a`` is reachable."""
        parts = [part for part in dotted.split(".") if part]
        if not parts:
            return
        for path in self._candidates(parts):
            out.files.add(path)
            out.files.update(self._parents(path))
        if binds_top:
            for path in self._candidates(parts[:1]):
                if path.endswith("/__init__.py") or path == "__init__.py":
                    out.folders.add(path.rpartition("/")[0])

    def _bind(self, dotted: str, out: _Imports) -> None:
        """A name bound to ``dotted``: when that is a package, all of it is reachable."""
        parts = [part for part in dotted.split(".") if part]
        for path in self._candidates(parts) if parts else ():
            if path.rpartition("/")[2] == "__init__.py":
                out.folders.add(path.rpartition("/")[0])

    def _candidates(self, parts: Sequence[str]) -> list[str]:
        """The files that can be the module ``parts`` (by the end of their path)."""
        tail = "/".join(parts)
        out: list[str] = []
        for path in self._by_name.get(parts[-1], ()):
            for ending in (tail + ".py", tail + "/__init__.py"):
                if path == ending or path.endswith("/" + ending):
                    out.append(path)
        return out

    def _parents(self, path: str) -> list[str]:
        """The ``__init__.py`` files of the folders above ``path`` that the tree has."""
        out: list[str] = []
        folder = path.rpartition("/")[0]
        if path.endswith("/__init__.py"):
            folder = folder.rpartition("/")[0]
        while folder:
            init = folder + "/__init__.py"
            if init in self._known:
                out.append(init)
            folder = folder.rpartition("/")[0]
        return out


def _under(path: str, folder: str) -> bool:
    return not folder or path.startswith(folder + "/")


def import_graph(
    files: Sequence[str], read_many: Callable[[Sequence[str]], Mapping[str, str]]
) -> ImportGraph:
    """The :class:`ImportGraph` of a tree whose files are ``files`` (only its Python files
    count); ``read_many(paths)`` reads them (a file missing from its answer may import
    anything)."""
    paths = [path for path in files if path.endswith(".py")]
    sources = read_many(paths)
    return ImportGraph(paths, {path: sources.get(path) for path in paths})


__all__ = ["ImportGraph", "import_graph"]
