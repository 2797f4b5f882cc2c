"""The symbol table: what the tracer knows of code, decided once and kept for the session.

Per code object, a ``CodeInfo`` (its scope, symbol, decision map and the reads its calls
record), made on its first event and never again; per source file, the decision map built
from its text (``codemap``) with the decision sites it names; per symbol, the entry the store
gets once (``take_new``). Nothing here runs per event: the callbacks read ``codes`` directly.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType, FunctionType

from diffgenome.protocol.namecache import NameCache
from diffgenome.protocol.naming import Site, fallback_name
from diffgenome.protocol.vocab import ORIGIN_EXTERNAL, ORIGIN_REPO, REASON_UNMAPPED_SOURCE
from diffgenome.recording.collect import codemap, reflect
from diffgenome.recording.collect.contract import CodeInfo
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.sources import read_source

_PACKAGE_DIR = __file__.rsplit("/", 3)[0] + "/"  # .../diffgenome/
_NO_CODE = (lambda: None).__code__
_type_dict = reflect.type_dict
_type_qualname = reflect.type_qualname


class SymbolTable:
    """Code objects, source files and symbols seen in a session, each decided once."""

    def __init__(
        self, scope: Scope, note: Callable[[str], None], names: NameCache | None = None
    ) -> None:
        """``note`` takes a disclosure of the phase being recorded (a source that could not be
        mapped); ``names``, the store's names kept between sessions (a file named by an
        earlier session is not named again)."""
        self.scope = scope
        self._note = note
        self.names = names
        #: By ``id(code)``: what is known of a code object; None for code out of scope.
        self.codes: dict[int, CodeInfo | None] = {}
        # Every code object with an entry, kept alive so that its id is never another's.
        self._keep_alive: list[CodeType] = []
        self._filemaps: dict[str, codemap.FileMap | None] = {}
        self.symbols: dict[str, dict[str, object]] = {}
        self.new_symbols: list[dict[str, object]] = []
        self.sites: dict[str, Site] = {}

    def learn(self, code: CodeType) -> CodeInfo | None:
        """Decide a code object once: its scope, its name, its file's decision map."""
        filename = code.co_filename
        info: CodeInfo | None = None
        if not filename.startswith(_PACKAGE_DIR):
            placement = self.scope.place(filename)
            if placement is not None:
                filemap = self.filemap(filename, placement.module)
                if filemap is not None:
                    name = filemap.code_name(code)
                else:
                    name = fallback_name(code, placement.module)
                info = CodeInfo(
                    code,
                    name.symbol,
                    placement.origin,
                    name.kind,
                    name.line,
                    placement.relpath,
                    filemap if placement.origin == ORIGIN_REPO else None,
                )
                self.add(
                    {
                        "id": name.symbol,
                        "origin": placement.origin,
                        "path": placement.relpath,
                        "line": name.line,
                        "kind": name.kind,
                    }
                )
        self.codes[id(code)] = info
        self._keep_alive.append(code)
        return info

    def filemap(self, filename: str, module: str) -> codemap.FileMap | None:
        """The decision map of a source file, built once (None, disclosed: it has none)."""
        try:
            return self._filemaps[filename]
        except KeyError:
            pass
        filemap: codemap.FileMap | None = None
        source = read_source(filename)
        if source is not None:
            try:
                filemap = codemap.build_file_map(source, module, self.names)
            except (SyntaxError, RecursionError):  # disclosed below, as a file with no map
                filemap = None
        if filemap is None:
            self._note(f"{REASON_UNMAPPED_SOURCE}:{module}")
        else:
            for site in filemap.sites:
                self.sites[site.id] = site
        self._filemaps[filename] = filemap
        return filemap

    def name_of(self, obj: object) -> str | None:
        """The symbol of a function this table has not learnt (out of scope), a class, or a
        builtin, named exactly as its calls would be."""
        if isinstance(obj, FunctionType):
            return self._external_symbol(obj)
        if isinstance(obj, type):
            for value in _type_dict(obj).values():
                if isinstance(value, FunctionType):
                    placement = self.scope.place(value.__code__.co_filename)
                    if placement is not None:
                        qualname = _type_qualname(obj)
                        symbol = f"py:{placement.module}.{qualname}"
                        self.add(
                            {
                                "id": symbol,
                                "origin": placement.origin,
                                "path": placement.relpath,
                                "line": None,
                                "kind": "class",
                            }
                        )
                        return symbol
                    break
            return self._external_symbol(obj)
        if callable(obj) and type(obj).__name__ in ("builtin_function_or_method",):
            return self._external_symbol(obj)
        return None

    def _external_symbol(self, obj: object) -> str | None:
        if isinstance(obj, type):
            symbol = "py:" + reflect.type_name(obj)
        else:
            try:
                module = getattr(obj, "__module__", None)
                qualname = getattr(obj, "__qualname__", None)
            except Exception:
                return None
            if not isinstance(module, str) or not isinstance(qualname, str):
                return None
            symbol = f"py:{module}.{qualname}"
        kind = "class" if isinstance(obj, type) else "function"
        self.add(
            {"id": symbol, "origin": ORIGIN_EXTERNAL, "path": None, "line": None, "kind": kind}
        )
        return symbol

    def surrogate_info(
        self, symbol: str, filename: str, origin: str, kind: str, line: int, path: str
    ) -> CodeInfo:
        """What a child process knew of one of its code objects, for exporting its calls in
        this process: the symbol names the node, and the decision map of the same file (built
        from the same source, so the child's site numbers mean the same sites) names its
        branches. Never registered for events: no code object of this process is behind it."""
        filemap = None
        if origin == ORIGIN_REPO:
            placement = self.scope.place(filename)
            if placement is not None:
                filemap = self.filemap(filename, placement.module)
        # A code object without arguments or state reads: nothing is read from it.
        info = CodeInfo(_NO_CODE, symbol, origin, kind, line, path, filemap)
        return info

    def add(self, entry: dict[str, object]) -> None:
        """Keep the first entry for a symbol and queue it for the store."""
        symbol = str(entry["id"])
        if symbol not in self.symbols:
            self.symbols[symbol] = entry
            self.new_symbols.append(entry)

    def take_new(self) -> list[dict[str, object]]:
        """Symbols first seen since the last call: the store gets each one once."""
        new, self.new_symbols = self.new_symbols, []
        return new

    def origin_of(self, symbol: str) -> str | None:
        entry = self.symbols.get(symbol)
        origin = entry.get("origin") if entry is not None else None
        return origin if isinstance(origin, str) else None
