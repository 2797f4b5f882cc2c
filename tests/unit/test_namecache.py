"""The names cache (protocol/namecache.py): a map read back from the cache is a fresh build's
map in everything the recorder reads of it, and an entry that is not exactly what this code
wrote for this source is never trusted.

Real parts throughout: real source files (every Python file of this repository, its example
projects included), a real cache folder, real builds and loads.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from diffgenome.analysis.diff import codechanges
from diffgenome.protocol import namecache
from diffgenome.protocol.namecache import NameCache
from diffgenome.protocol.naming import iter_code_objects
from diffgenome.recording.collect.codemap import FileMap, build_file_map

ROOT = Path(__file__).resolve().parents[2]

#: Folders of the repository that hold no file of ours (third-party environments, builds).
_SKIP = {".venv", ".git", "work", "build", "__pycache__", ".diffgenome"}


def _repository_sources() -> list[Path]:
    """Every Python file of the repository: the package, the tests, the example projects
    under tests/projects/ and the experiments."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith(".venv"))
        found.extend(Path(folder) / f for f in sorted(files) if f.endswith(".py"))
    return found


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _fields_by_index(fm: FileMap, items: Sequence[Any], link: str) -> list[tuple[Any, ...]]:
    """Every field of every item, the scope named by ``link`` as its index (scopes hold
    each other)."""
    index = {id(scope): i for i, scope in enumerate(fm.scopes)}
    rows = []
    for item in items:
        row: list[Any] = []
        for f in dataclasses.fields(item):
            value = getattr(item, f.name)
            row.append(index[id(value)] if f.name == link and value is not None else value)
        rows.append(tuple(row))
    return rows


def _scope_fields(fm: FileMap) -> list[tuple[Any, ...]]:
    return _fields_by_index(fm, fm.scopes, "parent")


def _site_fields(fm: FileMap) -> list[tuple[Any, ...]]:
    return _fields_by_index(fm, fm.site_spans, "scope")


def _tracer_view(fm: FileMap, source: str) -> Iterator[tuple[Any, ...]]:
    """What the tracer asks a map: the name of every code object compiled from the source
    and the outcome of every jump in it."""
    try:
        code = compile(source, "<test>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return
    for each in iter_code_objects(code):
        table = fm._analyse(each)
        yield (each.co_qualname, each.co_firstlineno, fm.code_name(each), table.jumps, table.never)


def assert_same_map(fresh: FileMap, loaded: FileMap, source: str) -> None:
    assert loaded.module == fresh.module
    assert _scope_fields(loaded) == _scope_fields(fresh)
    assert _site_fields(loaded) == _site_fields(fresh)
    assert loaded.sites == fresh.sites
    assert list(loaded.cond_index.items()) == list(fresh.cond_index.items())
    assert list(_tracer_view(loaded, source)) == list(_tracer_view(fresh, source))


def test_every_file_of_the_repository_reads_back_as_a_fresh_build(tmp_path: Path) -> None:
    """Built into a cache, flushed, and read back by another cache of the same folder (a
    later session): field for field the map a fresh build gives."""
    first = NameCache(str(tmp_path))
    fresh: dict[tuple[str, str], FileMap] = {}
    for path in _repository_sources():
        source = path.read_text(encoding="utf-8")
        try:
            # With nothing kept yet: a fresh build, kept on flush.
            fresh[(source, _module_of(path))] = build_file_map(source, _module_of(path), first)
        except SyntaxError:
            continue  # a fixture of a syntax error: nothing to name, nothing kept
    assert len(fresh) > 200, "the repository's sources were not found"
    first.flush()
    assert first.read == 0 and first.kept == len(fresh) and first.unkept == 0
    later = NameCache(str(tmp_path))
    for (source, module), built in fresh.items():
        assert_same_map(built, build_file_map(source, module, later), source)
    assert later.refused == 0 and later.kept == 0
    assert later.read == len(fresh), "a map was built again instead of read"


SOURCE = """\
import re

TOKEN = "sk-literal-in-the-source"


def check(text, limit=3):
    if text == TOKEN and len(text) > limit:
        return [c for c in text if c.isdigit()]
    while limit:
        limit -= 1
    match text:
        case "a" | "b" if limit > 0:
            return 1
        case [x, *_]:
            return x
    return sorted(text, key=lambda c: (c, re.escape(c))) if text else None
"""


def _entry(folder: Path) -> Path:
    (entry,) = (folder / "cache" / "names").iterdir()
    return entry


def _fill(store: Path) -> FileMap:
    cache = NameCache(str(store))
    fm = build_file_map(SOURCE, "pkg.check", cache)
    cache.flush()
    assert cache.kept == 1
    return fm


def _read_back(store: Path) -> NameCache:
    cache = NameCache(str(store), debug=True)
    assert_same_map(
        build_file_map(SOURCE, "pkg.check"), build_file_map(SOURCE, "pkg.check", cache), SOURCE
    )
    return cache


def test_an_entry_is_private_json_without_the_source_text(tmp_path: Path) -> None:
    """The store's files keep no literal of the project's code (e2e test_recording's check of
    raw values): predicates are read again from the source, only positions are kept."""
    _fill(tmp_path)
    entry = _entry(tmp_path)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.parent.parent.stat().st_mode) == 0o700
    head, body = entry.read_text(encoding="ascii").split("\n", 1)
    assert json.loads(head)["format"] == namecache.FORMAT
    json.loads(body)
    assert "sk-literal" not in body and "isdigit" not in body and "limit > 0" not in body
    assert [p.name for p in entry.parent.iterdir() if p.name.endswith(".tmp")] == []
    cache = _read_back(tmp_path)
    assert cache.read == 1 and cache.refused == 0


def _rewrite_body(entry: Path, change: Any) -> None:
    """Change the body and digest it again: only the checks of its fields can refuse it."""
    head, body = entry.read_bytes().split(b"\n", 1)
    plain = json.loads(body)
    change(plain)
    new_body = json.dumps(plain).encode()
    header = json.loads(head)
    header["body"] = namecache._sha256(new_body).hexdigest()
    entry.write_bytes(json.dumps(header).encode() + b"\n" + new_body)


def _flip(entry: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[-5] ^= 0x01
    entry.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (_flip, "its body is not the one it was written with"),
        (lambda e: e.write_bytes(e.read_bytes()[:-40]), "its body is not the one"),
        (lambda e: e.write_bytes(b""), "no body"),
        (lambda e: e.write_bytes(b"\x80\x04K\x01.\n"), "UnicodeDecodeError"),
        (
            lambda e: _rewrite_body(e, lambda p: p["sites"][0].__setitem__(0, 10_000)),
            "a site's scope out of range",
        ),
        (
            lambda e: _rewrite_body(e, lambda p: p["cond"][0].__setitem__(4, -1)),
            "a condition's site out of range",
        ),
        (
            lambda e: _rewrite_body(e, lambda p: p["scopes"][1].__setitem__(4, "1")),
            "not an integer",
        ),
        (
            lambda e: _rewrite_body(e, lambda p: p["sites"][0][2].__setitem__(0, [99, 0, 99, 4])),
            "a span outside the source",
        ),
        (lambda e: _rewrite_body(e, lambda p: p.__setitem__("extra", 1)), "not the fields"),
        (lambda e: e.chmod(0o666), "writable by others"),
    ],
    ids=[
        "flipped-byte",
        "truncated",
        "empty",
        "pickle",
        "scope-index",
        "site-index",
        "type",
        "span",
        "field",
        "mode",
    ],
)
def test_a_damaged_entry_is_built_again_not_trusted(tmp_path: Path, damage: Any, why: str) -> None:
    _fill(tmp_path)
    damage(_entry(tmp_path))
    cache = _read_back(tmp_path)  # the map is still a fresh build's
    assert cache.read == 0 and cache.refused == 1
    assert any(why in line for line in cache.lines), cache.lines
    cache.flush()  # the entry built again replaces the damaged one
    assert _read_back(tmp_path).read == 1


def test_a_link_in_place_of_an_entry_is_not_followed(tmp_path: Path) -> None:
    _fill(tmp_path)
    entry = _entry(tmp_path)
    real = tmp_path / "elsewhere.json"
    entry.rename(real)
    entry.symlink_to(real)
    cache = _read_back(tmp_path)
    assert cache.read == 0 and cache.refused == 1


def test_an_entry_of_another_key_is_not_read(tmp_path: Path) -> None:
    """The header's key is checked, not only the file's name: an entry copied under the
    name of another source (or made by other naming code) is refused."""
    _fill(tmp_path)
    entry = _entry(tmp_path)
    other = SOURCE.replace("limit=3", "limit=4")
    key = NameCache.key(other, "pkg.check")
    assert key is not None and key != NameCache.key(SOURCE, "pkg.check")
    entry.rename(NameCache(str(tmp_path))._path(key))
    cache = NameCache(str(tmp_path), debug=True)
    build_file_map(other, "pkg.check", cache)
    assert cache.refused == 1
    assert any("the entry of another key" in line for line in cache.lines)


def test_the_key_holds_what_names_depend_on() -> None:
    """Source, module, naming revision, interpreter and the code that names: the files of
    that code exist, so an edit of naming.py or codemap.py changes every key."""
    key = NameCache.key(SOURCE, "pkg.check")
    assert key is not None
    assert set(key) == {"source", "module", "naming", "python", "code"}
    assert key != NameCache.key(SOURCE, "pkg.other")
    assert key != NameCache.key(SOURCE + "\n", "pkg.check")
    package = Path(namecache.__file__).resolve().parents[1]
    for name in namecache.CODE_FILES:
        assert (package / name).is_file(), name
    assert {"protocol/naming.py", "recording/collect/codemap.py"} <= set(namecache.CODE_FILES)


def test_names_built_while_a_text_fell_back_are_not_kept(tmp_path: Path) -> None:
    """A condition too deep to write falls back to a placeholder; whether it does depends on
    the stack the build ran at, so such names are never kept for another session."""
    deep = "def f(a):\n    if " + " + ".join(["a"] * 300) + ":\n        return 1\n"
    cache = NameCache(str(tmp_path))
    fm = build_file_map(deep, "pkg.deep", cache)
    assert not fm.settled
    cache.flush()
    assert cache.kept == 0 and cache.unkept == 1
    assert not (tmp_path / "cache" / "names").exists()


# -- the differ's side ----------------------------------------------------------------------


def _dump(part: object) -> object:
    if isinstance(part, ast.AST):
        return ast.dump(part, include_attributes=True)
    if isinstance(part, list):
        return [_dump(each) for each in part]
    return part


def _parts(names: Any) -> list[tuple[Any, ...]]:
    """A decision as the differ reads it: its id, names and the syntax of its parts."""
    return [
        (
            site.id,
            site.symbol,
            site.kind,
            site.predicate,
            [_dump(part) for part in site.parts],
        )
        for site in names.sites
    ]


def test_the_differ_takes_the_names_a_recording_kept(tmp_path: Path) -> None:
    """A file the recorder named is not named again by the differ (and the other way round):
    the tree is walked for the decisions' syntax, the names are taken, and every site, scope
    and part is the fresh build's."""
    path = ROOT / "diffgenome" / "protocol" / "naming.py"
    source = path.read_text(encoding="utf-8")
    recorder = NameCache(str(tmp_path))
    build_file_map(source, "diffgenome.protocol.naming", recorder)
    recorder.flush()
    differ = NameCache(str(tmp_path))
    version = codechanges._version(source, "diffgenome.protocol.naming", differ)
    fresh = codechanges._version(source, "diffgenome.protocol.naming")
    assert version.names.adopted and differ.read == 1 and differ.kept == 0
    assert _parts(version.names) == _parts(fresh.names)
    assert [(s.qualname, s.symbol, s.role, s.span) for s in version.names.scopes] == [
        (s.qualname, s.symbol, s.role, s.span) for s in fresh.names.scopes
    ]


def test_code_changes_read_with_the_cache_are_the_same(tmp_path: Path) -> None:
    """A real change (a decision edited, a function added) read three ways: without the
    cache, filling it, and from it."""
    path = ROOT / "diffgenome" / "protocol" / "namecache.py"
    base = path.read_text(encoding="utf-8")
    head = base.replace("if mode & 0o022:", "if mode & 0o002:").replace(
        "def _remove(", "def _added(x):\n    return [y for y in x if y]\n\n\ndef _remove("
    )
    assert head != base
    files = ({"m.py": base}, {"m.py": head})
    plain = codechanges.code_changes_from_sources(*files, lambda p: "m")
    assert plain.symbols, "the change was not seen"
    first = NameCache(str(tmp_path))
    filled = codechanges.code_changes_from_sources(*files, lambda p: "m", names=first)
    first.flush()
    later = NameCache(str(tmp_path))
    read = codechanges.code_changes_from_sources(*files, lambda p: "m", names=later)
    assert first.kept == 2 and later.read == 2 and later.kept == 0
    assert filled == plain and read == plain


WRITER = """
import sys
from diffgenome.protocol.namecache import NameCache
from diffgenome.recording.collect.codemap import build_file_map
source = open(sys.argv[2], encoding="utf-8").read()
for _ in range(int(sys.argv[3])):
    cache = NameCache(sys.argv[1])
    built = build_file_map(source, "pkg.check")
    cache.put(cache.key(source, "pkg.check"), source, "pkg.check", built)
    cache.flush()
    assert cache.kept == 1, cache.lines
"""


def test_sessions_writing_at_once_never_leave_a_partial_entry(tmp_path: Path) -> None:
    """Two writers replace the same entry over and over while this process reads it: every
    read finds a whole entry or none, never one to refuse (each is written under a
    temporary name and renamed into place)."""
    source_file = tmp_path / "check.py"
    source_file.write_text(SOURCE, encoding="utf-8")
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store), str(source_file), "40"], cwd=ROOT
        )
        for _ in range(2)
    ]
    fresh = build_file_map(SOURCE, "pkg.check")
    reads = 0
    done = False
    while not done:
        done = all(w.poll() is not None for w in writers)  # one more read after they end
        cache = NameCache(str(store), debug=True)
        loaded = build_file_map(SOURCE, "pkg.check", cache)
        assert cache.refused == 0, cache.lines
        reads += cache.read
        if cache.read:
            assert_same_map(fresh, loaded, SOURCE)
    assert [w.wait() for w in writers] == [0, 0]
    assert reads > 0
    assert [p.name for p in (store / "cache" / "names").iterdir()] == [_entry(store).name]
