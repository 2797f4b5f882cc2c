"""Names kept between sessions: what naming computed for one source file, read back instead of
naming the file again.

Every recording session names each in-scope file it sees (``SourceNames``): on a large test
module that is most of a one-test recording, and a diff's confirmation records the same
tests several times over. The names depend on nothing but the source text, the module name,
the naming code and the interpreter that parses (ASTs and positions differ between 3.12 and
3.13), so a file keyed by exactly those holds what a fresh build would compute:

* ``source``: sha256 of the text; ``module``: the module name it is named under;
* ``naming``: the naming revision (``formats.NAMING``); ``python``: implementation and full
  version; ``code``: sha256 of the files that compute names (``CODE_FILES``), so that any edit
  of them misses every earlier entry.

Entries live in the store folder (``<store>/cache/names/<sha256 of the key>.json``), private
to their owner as the store is: folders 0700, files 0600, made under a temporary name and
renamed into place, so a concurrent session reads a whole entry or none. An entry is JSON
text, never pickle or marshal: whoever can write the folder can at worst make names wrong,
never run code, and an entry that is not the owner's, is writable by others, or fails any
check on load (its header's key, the digest of its body, every field's type and every index's
range) is ignored and built again. Deleting the folder is always safe.

The recorder calls this inside the user's test process, at the first event of a file's code:
standard library only, every function it uses taken at import (tests patch ``os``, ``open``,
``json``), and no exception leaves ``NameCache``. ``DIFFGENOME_DEBUG=names`` has the recorder
say what it read, built and refused (``NameCache.lines``).
"""

from __future__ import annotations

import ast as _ast
import json
import os as _os
import sys
from collections.abc import Callable
from contextlib import suppress
from hashlib import sha256 as _sha256
from os import O_CREAT, O_EXCL, O_RDONLY, O_WRONLY
from os import close as _close
from os import fstat as _fstat
from os import getpid as _getpid
from os import lstat as _lstat
from os import mkdir as _mkdir
from os import open as _open
from os import read as _read
from os import replace as _replace
from os import scandir as _scandir
from os import sep as _sep
from os import unlink as _unlink
from os import urandom as _urandom
from os import write as _write
from stat import S_ISDIR, S_ISLNK, S_ISREG
from time import time as _time
from typing import Any, Final

from diffgenome.protocol import quiet
from diffgenome.protocol.formats import NAMING
from diffgenome.protocol.naming import (
    FALLBACKS,
    Named,
    Scope,
    SiteSpans,
    SourceNames,
    Span,
    predicate,
)

#: The layout of one entry; another one is ignored (and replaced when built again).
FORMAT: Final = "diffgenome-names/1"

#: Where entries live, under the store folder.
FOLDER: Final = ("cache", "names")

#: The files whose code computes names, relative to the ``diffgenome`` package: an edit of
#: any of them changes every key. ``codemap.py`` is read as text, never imported: this
#: module is shared by both sides.
CODE_FILES: Final = (
    "protocol/naming.py",
    "protocol/vocab.py",
    "protocol/quiet.py",
    "protocol/namecache.py",
    "recording/collect/codemap.py",
)

#: Entries kept at most; past this, writing one removes the least recently used quarter.
MAX_ENTRIES: Final = 2000

#: An entry larger than this is not read (the largest files of real projects take ~1 MB).
MAX_BYTES: Final = 64 << 20

#: ``DIFFGENOME_DEBUG=names``: say what the cache did.
DEBUG_WORD: Final = "names"

_O_NOFOLLOW: Final = getattr(_os, "O_NOFOLLOW", 0)  # none on Windows
_O_CLOEXEC: Final = getattr(_os, "O_CLOEXEC", 0)
_geteuid: Callable[[], int] | None = getattr(_os, "geteuid", None)
_utime = _os.utime
_UTIME_FD: Final = _os.utime in _os.supports_fd
_PACKAGE: Final = __file__.rsplit(_sep, 2)[0]  # .../diffgenome
_PYTHON: Final = [sys.implementation.name, *map(str, sys.version_info)]
# The codecs taken once: ``json.loads``/``json.dumps`` are names tests may patch.
_decode = json.JSONDecoder().decode
_encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), sort_keys=True).encode
_TEMP_AGE_S: Final = 3600.0
_Match = _ast.Match
_Expr = _ast.Expr

_code_digest: list[str | None] = []


def code_digest() -> str | None:
    """sha256 over ``CODE_FILES`` as installed (None when one cannot be read: no cache then)."""
    if not _code_digest:
        digest = _sha256()
        try:
            for name in CODE_FILES:
                digest.update(name.encode() + b"\0" + _read_all(_PACKAGE + _sep + name) + b"\0")
            _code_digest.append(digest.hexdigest())
        except OSError:
            _code_digest.append(None)
    return _code_digest[0]


def _read_all(path: str, limit: int = MAX_BYTES) -> bytes:
    fd = _open(path, O_RDONLY | _O_CLOEXEC)
    try:
        return _read_fd(fd, limit)
    finally:
        _close(fd)


def _read_fd(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := _read(fd, 1 << 20):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise OSError("larger than the cache reads")
    return b"".join(chunks)


def entry_key(source: str, module: str) -> dict[str, object] | None:
    """What an entry is for: everything the names it holds depend on (None: no cache)."""
    code = code_digest()
    if code is None:
        return None
    text = _sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    return {"source": text, "module": module, "naming": NAMING, "python": _PYTHON, "code": code}


# --- the entry's body ------------------------------------------------------------------


def _segment(lines: list[bytes], span: Span) -> str:
    """The source text of ``span`` (columns are UTF-8 byte offsets, as the parser gives)."""
    line, col, end_line, end_col = span
    if not 1 <= line <= end_line <= len(lines):
        raise _Bad("a span outside the source")
    if line == end_line:
        return lines[line - 1][col:end_col].decode()
    middle = b"".join(lines[line : end_line - 1])
    return (lines[line - 1][col:] + middle + lines[end_line - 1][:end_col]).decode()


def predicates(source: str, sites: list[tuple[str, tuple[Span, ...]]]) -> list[str]:
    """The predicate of each site (its kind, its condition's spans), read again from the
    source: the text of each span parsed on its own (an expression in parentheses, a case's
    pattern in a ``match`` of its own; all in one parse) and written by naming's own
    ``predicate``. So an entry keeps no text of the source, only positions (the store's
    files keep no value or literal of the project's code that no recording needed).
    ``_Bad`` when the text does not parse or a text fell back (a deep stack)."""
    fallbacks = FALLBACKS[0]
    lines = source.encode("utf-8", "surrogatepass").splitlines(keepends=True)
    chunks: list[str] = []
    for kind, cond in sites:
        for i, span in enumerate(cond):
            text = _segment(lines, span)
            if kind == "match" and i == 0:
                chunks.append(f"match _:\n case {text}:\n  pass\n")
            else:
                chunks.append(f"({text})\n")
    try:
        body = quiet.parse("".join(chunks)).body
    except (SyntaxError, ValueError) as exc:
        raise _Bad("a condition's text does not parse on its own") from exc
    nodes: list[Any] = []
    for statement in body:
        if isinstance(statement, _Match):
            nodes.append(statement.cases[0].pattern)
        elif isinstance(statement, _Expr):
            nodes.append(statement.value)
        else:
            raise _Bad("a condition's text is more than one expression")
    if len(nodes) != sum(len(cond) for _, cond in sites):
        raise _Bad("a condition's text is more than one expression")
    out: list[str] = []
    at = 0
    for _, cond in sites:
        out.append(predicate(*nodes[at : at + len(cond)]))
        at += len(cond)
    if FALLBACKS[0] != fallbacks:
        raise _Bad("a condition's text fell back")
    return out


def to_plain(names: SourceNames, source: str) -> dict[str, Any]:
    """``names`` as JSON values: every field ``Named`` holds, scopes by their index, except
    the predicates: ``from_plain`` reads them again from the source (``predicates``), and
    an entry whose predicates would not read back the same is not made (``_Bad``)."""
    derived = predicates(source, [(info.kind, info.cond) for info in names.site_spans])
    if derived != [info.predicate for info in names.site_spans]:
        raise _Bad("a predicate does not read back from its condition's span")
    index = {id(scope): i for i, scope in enumerate(names.scopes)}
    scopes = [
        [
            s.kind,
            s.role,
            s.name,
            -1 if s.parent is None else index[id(s.parent)],
            s.firstlineno,
            None if s.span is None else list(s.span),
            s.qualname,
            s.symbol,
            sorted(s.globals_),
            sorted(s.stores),
            sorted(s.params),
            sorted(s.nonlocals),
            s.overload,
        ]
        for s in names.scopes
    ]
    sites = [
        [
            index[id(info.scope)],
            info.kind,
            [list(span) for span in info.cond],
            [list(span) for span in info.body],
            None if info.context is None else list(info.context),
            site.id,
        ]
        for info, site in zip(names.site_spans, names.sites, strict=True)
    ]
    cond = [[*span, site] for span, site in names.cond_index.items()]
    return {"scopes": scopes, "sites": sites, "cond": cond}


class _Bad(Exception):
    """An entry that is not what this module writes: ignored, and built again."""


def _int(value: object) -> int:
    if type(value) is not int:
        raise _Bad("not an integer")
    return value


def _str(value: object) -> str:
    if type(value) is not str:
        raise _Bad("not a string")
    return value


def _list(value: object, length: int | None = None) -> list[Any]:
    if type(value) is not list or (length is not None and len(value) != length):
        raise _Bad("not a list of the expected length")
    return value


def _span(value: object) -> Span:
    a, b, c, d = _list(value, 4)
    return (_int(a), _int(b), _int(c), _int(d))


def _names(value: object) -> set[str]:
    return {_str(name) for name in _list(value)}


def from_plain(plain: object, source: str) -> Named:
    """The ``Named`` that ``to_plain`` wrote for ``source``, every field checked; ``_Bad``
    otherwise."""
    if type(plain) is not dict or set(plain) != {"scopes", "sites", "cond"}:
        raise _Bad("not the fields of a names entry")
    rows = _list(plain["scopes"])
    scopes: list[Scope] = []
    parents: list[int] = []
    for row in rows:
        kind, role, name, parent, first, span, qualname, symbol, glob, stores, params, nonl, ov = (
            _list(row, 13)
        )
        if type(ov) is not bool:
            raise _Bad("not a boolean")
        scope = Scope(
            kind=_str(kind),
            role=_str(role),
            name=_str(name),
            parent=None,
            firstlineno=_int(first),
            span=None if span is None else _span(span),
            globals_=_names(glob),
            qualname=_str(qualname),
            symbol=_str(symbol),
            stores=_names(stores),
            params=_names(params),
            nonlocals=_names(nonl),
            overload=ov,
        )
        scopes.append(scope)
        parents.append(_int(parent))
    for scope, parent in zip(scopes, parents, strict=True):
        if parent == -1:
            continue
        if not 0 <= parent < len(scopes) or scopes[parent] is scope:
            raise _Bad("a scope's parent out of range")
        scope.parent = scopes[parent]
    site_spans: list[SiteSpans] = []
    site_ids: list[str] = []
    for row in _list(plain["sites"]):
        owner, kind, cond, body, context, site_id = _list(row, 6)
        if not 0 <= _int(owner) < len(scopes):
            raise _Bad("a site's scope out of range")
        ctx: tuple[int, str] | None = None
        if context is not None:
            arm_site, arm = _list(context, 2)
            ctx = (_int(arm_site), _str(arm))
        site_spans.append(
            SiteSpans(
                scopes[owner],
                _str(kind),
                "",
                tuple(_span(s) for s in _list(cond)),
                tuple(_span(s) for s in _list(body)),
                context=ctx,
            )
        )
        site_ids.append(_str(site_id))
    texts = predicates(source, [(info.kind, info.cond) for info in site_spans])
    for info, text in zip(site_spans, texts, strict=True):
        info.predicate = text
    cond_index: dict[Span, int] = {}
    for row in _list(plain["cond"]):
        a, b, c, d, site = _list(row, 5)
        if not 0 <= _int(site) < len(site_spans):
            raise _Bad("a condition's site out of range")
        cond_index[(_int(a), _int(b), _int(c), _int(d))] = site
    return Named(scopes, site_spans, site_ids, cond_index)


# --- the folder ----------------------------------------------------------------------------


class NameCache:
    """The names entries of one store folder. ``get`` and ``put`` never raise: whatever goes
    wrong is a miss (or an entry not kept), told in ``lines`` when ``debug``."""

    def __init__(self, store: str, *, debug: bool = False) -> None:
        self.folder = store.rstrip(_sep) + _sep + _sep.join(FOLDER)
        self.debug = debug
        #: Entries read, names built and kept, names built and not kept, entries refused.
        self.read = self.kept = self.unkept = self.refused = 0
        #: Under ``debug``: one line per thing done, for the session's end.
        self.lines: list[str] = []
        self._ready: bool | None = None  # the folder checked (and made) once
        self._pending: list[tuple[dict[str, object], str, str, SourceNames]] = []

    def _tell(self, line: str) -> None:
        if self.debug and len(self.lines) < 200:
            self.lines.append(line)

    def summary(self) -> str:
        """One line: what this session took from the cache and gave it."""
        return (
            f"names cache {self.folder}: {self.read} read, {self.kept} built and kept, "
            f"{self.unkept} built and not kept, {self.refused} refused"
        )

    @staticmethod
    def key(source: str, module: str) -> dict[str, object] | None:
        """The key of ``source`` named as ``module`` (None: this install cannot cache)."""
        try:
            return entry_key(source, module)
        except Exception:
            return None

    def _path(self, key: dict[str, object]) -> str:
        return self.folder + _sep + _sha256(_encode(key).encode()).hexdigest() + ".json"

    def get(self, key: dict[str, object] | None, source: str, module: str) -> Named | None:
        """The names kept under ``key``, or None (never kept, or not trusted: told)."""
        if key is None:
            return None
        try:
            path = self._path(key)
            try:
                fd = _open(path, O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
            except FileNotFoundError:
                return None
            try:
                st = _fstat(fd)
                problem = _foreign(st.st_mode, st.st_uid, regular=True)
                if problem is not None:
                    raise _Bad(problem)
                data = _read_fd(fd, MAX_BYTES)
                if _UTIME_FD:
                    with suppress(OSError):
                        _utime(fd)  # recently used: pruning keeps it
            finally:
                _close(fd)
            named = _load(data, key, source)
        except Exception as exc:
            self.refused += 1
            self._tell(f"names cache: refused the entry of {module} ({_why(exc)}); built again")
            return None
        self.read += 1
        self._tell(f"names cache: read the names of {module}")
        return named

    def put(
        self, key: dict[str, object] | None, source: str, module: str, names: SourceNames
    ) -> None:
        """Keep ``names`` under ``key`` for later sessions (not when they may depend on this
        build's stack: ``SourceNames.settled``), once ``flush`` is called: the recorder names
        a file while a test runs, and a file written then, with the project's code on the
        stack, would be that test's effect (recording/effects.py sees every ``open``)."""
        if key is None:
            return
        if not names.settled:
            self.unkept += 1
            self._tell(f"names cache: did not keep the names of {module} (a text fell back)")
            return
        self._pending.append((key, source, module, names))

    def flush(self) -> None:
        """Write the entries ``put`` since the last call (the recorder: when its session
        ends), then prune the folder."""
        pending, self._pending = self._pending, []
        for key, source, module, names in pending:
            self._write(key, source, module, names)
        if pending and self._ready:
            try:
                self._prune()
            except Exception as exc:
                self._tell(f"names cache: could not prune ({_why(exc)})")

    def _write(self, key: dict[str, object], source: str, module: str, names: SourceNames) -> None:
        temp = ""
        try:
            if not self._folder_ready():
                raise _Bad("no cache folder of this user's own could be made in the store")
            body = _encode(to_plain(names, source)).encode()
            head = _encode({"format": FORMAT, "key": key, "body": _sha256(body).hexdigest()})
            path = self._path(key)
            temp = f"{path}.{_getpid()}.{_urandom(6).hex()}.tmp"
            fd = _open(temp, O_WRONLY | O_CREAT | O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
            try:
                data = head.encode() + b"\n" + body
                while data:
                    data = data[_write(fd, data) :]
            finally:
                _close(fd)
            _replace(temp, path)
            temp = ""
            self.kept += 1
            self._tell(f"names cache: built and kept the names of {module}")
        except Exception as exc:
            self.unkept += 1
            self._tell(f"names cache: did not keep the names of {module} ({_why(exc)})")
        finally:
            if temp:
                with suppress(OSError):
                    _unlink(temp)

    def _folder_ready(self) -> bool:
        """Make ``cache/names`` (0700) and check both folders are this user's own, not links
        and not writable by others: once per session."""
        if self._ready is None:
            self._ready = False
            parent = self.folder.rsplit(_sep, 1)[0]
            for folder in (parent, self.folder):
                try:
                    with suppress(FileExistsError):
                        _mkdir(folder, 0o700)  # not the store's own folder: made by the store
                    st = _lstat(folder)
                except OSError:
                    return False
                if S_ISLNK(st.st_mode) or _foreign(st.st_mode, st.st_uid) is not None:
                    return False
            self._ready = True
        return self._ready

    def _prune(self) -> None:
        """Past ``MAX_ENTRIES``, remove the least recently used quarter (and temporary files
        an interrupted session left behind)."""
        entries: list[tuple[float, str]] = []
        now = _time()
        with _scandir(self.folder) as listing:
            for entry in listing:
                mtime = entry.stat(follow_symlinks=False).st_mtime
                if entry.name.endswith(".tmp"):
                    if now - mtime > _TEMP_AGE_S:
                        _remove(entry.path)
                    continue
                entries.append((mtime, entry.path))
        if len(entries) > MAX_ENTRIES:
            entries.sort()
            for _, path in entries[: len(entries) - MAX_ENTRIES * 3 // 4]:
                _remove(path)


def _foreign(mode: int, uid: int, *, regular: bool = False) -> str | None:
    """Why a file or folder of the cache is not to be trusted, or None."""
    if regular and not S_ISREG(mode):
        return "not a regular file"
    if not regular and not S_ISDIR(mode):
        return "not a folder"
    if _geteuid is not None and uid != _geteuid():
        return "owned by another user"
    if mode & 0o022:
        return "writable by others"
    return None


def _remove(path: str) -> None:
    with suppress(OSError):
        _unlink(path)


def _load(data: bytes, key: dict[str, object], source: str) -> Named:
    """An entry's names, once its header names ``key`` and its body is the one it digested."""
    head, sep, body = data.partition(b"\n")
    if not sep:
        raise _Bad("no body")
    header = _decode(head.decode("ascii"))
    if type(header) is not dict or header.get("format") != FORMAT:
        raise _Bad("another format")
    if header.get("key") != key:
        raise _Bad("the entry of another key")
    if header.get("body") != _sha256(body).hexdigest():
        raise _Bad("its body is not the one it was written with")
    return from_plain(_decode(body.decode("ascii")), source)


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, _Bad) else f"{type(exc).__name__}: {text}"
