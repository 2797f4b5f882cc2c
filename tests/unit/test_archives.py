"""The digest of a written archive: what it holds, not when it was written (#51.1).

Archives are written here by the standard library's own writers (``tarfile``, ``zipfile``,
``gzip``), as the code under test writes them, at two different times, and digested as the
recorder digests a file a test wrote (``Effects._file_digest``, with a real keyed digester).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import tarfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from diffgenome.recording import archives
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.values import Digester
from diffgenome.recording.effects import _TAG_FILE, MAX_FILE_BYTES, Effects

EARLY, LATE = 1_600_000_000, 1_700_000_123


def _digest(path: Path) -> object:
    effects = Effects(Digester(b"k" * 32), lambda text: text, Scope("/nonexistent", [], []))
    entry = effects._file_digest(str(path))
    assert "cut" not in entry and "state" not in entry, entry
    return entry["digest"]


def _tree(folder: Path, when: int, readme: bytes) -> Path:
    tree = folder / "demo-1.0.0"
    tree.mkdir(parents=True)
    (tree / "sub").mkdir()
    for name, content in (("README", readme), ("sub/mod.py", b"x = 1\n"), ("blob", b"\xff\0")):
        (tree / name).write_bytes(content)
        os.utime(tree / name, (when, when))
    os.utime(tree / "sub", (when, when))
    (tree / "link").symlink_to("README")
    return tree


def _tar(mode: str, fmt: int) -> Callable[[Path, int, bytes], Path]:
    def write(folder: Path, when: int, readme: bytes) -> Path:
        tree = _tree(folder, when, readme)
        target = folder / "demo.tar.x"
        if mode == "w:gz":  # the gzip header takes the time too, and the file's name
            with (
                target.open("wb") as raw,
                gzip.GzipFile(f"demo-{when}.tar", "wb", fileobj=raw, mtime=when) as packed,
                tarfile.open(fileobj=packed, mode="w", format=fmt) as tar,
            ):
                tar.add(tree, arcname="demo-1.0.0")
        else:
            with tarfile.open(target, mode, format=fmt) as tar:
                tar.add(tree, arcname="demo-1.0.0")
                long_name = tarfile.TarInfo("demo-1.0.0/" + "n" * 120)  # GNU long name, pax path
                long_name.size, long_name.mtime = 2, when
                tar.addfile(long_name, io.BytesIO(b"ok"))
        return target

    return write


def _zip(folder: Path, when: int, readme: bytes) -> Path:
    tree = _tree(folder, when, readme)
    target = folder / "demo-1.0.0-py3-none-any.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as whl:
        for path in sorted(tree.rglob("*")):
            if not path.is_symlink():
                whl.write(path, f"demo/{path.relative_to(tree)}")
        stamped = zipfile.ZipInfo("demo/WHEEL", date_time=_dos(when))
        stamped.extra = b"UT\x05\x00\x01" + when.to_bytes(4, "little")  # an extended timestamp
        whl.writestr(stamped, b"Wheel-Version: 1.0\n")
        whl.writestr(zipfile.ZipInfo("demo/stored", date_time=_dos(when)), b"kept as is")
        whl.writestr(
            zipfile.ZipInfo("demo/packed.bz2", date_time=_dos(when)),
            readme,
            compress_type=zipfile.ZIP_BZIP2,
        )
    return target


def _dos(when: int) -> tuple[int, int, int, int, int, int]:
    year, month, day, hour, minute, second = time.gmtime(when)[:6]
    return (year, month, day, hour, minute, second)


def _gzip(folder: Path, when: int, readme: bytes) -> Path:
    folder.mkdir(parents=True)
    target = folder / "readme.txt.gz"
    # gzip keeps the file's name (without .gz) in its header, beside the time
    with gzip.GzipFile(str(folder / f"readme-{when}.txt.gz"), "wb", mtime=when) as out:
        out.write(readme)
    (folder / f"readme-{when}.txt.gz").rename(target)
    return target


WRITERS = {
    "tar.gz": _tar("w:gz", tarfile.PAX_FORMAT),
    "tar pax": _tar("w", tarfile.PAX_FORMAT),
    "tar gnu": _tar("w", tarfile.GNU_FORMAT),
    "tar.bz2": _tar("w:bz2", tarfile.PAX_FORMAT),
    "tar.xz": _tar("w:xz", tarfile.PAX_FORMAT),
    "zip": _zip,
    "gzip": _gzip,
}


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_written_at_two_times_the_same_digest_another_content_another(
    tmp_path: Path, kind: str
) -> None:
    write = WRITERS[kind]
    early = write(tmp_path / "early", EARLY, b"demo 1.0.0\n")
    late = write(tmp_path / "late", LATE, b"demo 1.0.0\n")
    other = write(tmp_path / "other", EARLY, b"demo 1.0.1\n")
    assert early.read_bytes() != late.read_bytes()  # the time is in the bytes
    assert _digest(early) == _digest(late)
    assert _digest(other) != _digest(early)


def test_a_member_renamed_or_made_executable_is_another_content(tmp_path: Path) -> None:
    def tar(folder: Path, name: str, mode: int) -> Path:
        folder.mkdir()
        target = folder / "a.tar"
        with tarfile.open(target, "w") as out:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = 2, mode, EARLY
            out.addfile(info, io.BytesIO(b"ok"))
        return target

    plain = _digest(tar(tmp_path / "plain", "a/run", 0o644))
    assert _digest(tar(tmp_path / "renamed", "a/go", 0o644)) != plain
    assert _digest(tar(tmp_path / "executable", "a/run", 0o755)) != plain


def test_text_members_are_made_location_independent_like_files(tmp_path: Path) -> None:
    """A text member naming where it was written digests as a plain text file does."""

    def packed(folder: Path, text: str) -> object:
        folder.mkdir()
        target = folder / "log.gz"
        target.write_bytes(gzip.compress(text.encode(), mtime=EARLY))
        return _digest(target)

    # pytest's numbered folders (another in every session) are replaced as in any text ...
    one = packed(tmp_path / "one", "wrote /tmp/pytest-of-me/pytest-3/test_x0/out\n")
    two = packed(tmp_path / "two", "wrote /tmp/pytest-of-me/pytest-4/test_x0/out\n")
    assert one == two
    # ... and the rest of the text is kept.
    assert packed(tmp_path / "three", "wrote /tmp/pytest-of-me/pytest-4/test_y0/out\n") != one


def _corrupt(data: bytes) -> list[bytes]:
    flip = len(data) - 12  # in a gzip, the last compressed bytes before its trailer
    return [
        data[:10],
        data[: len(data) - 7],
        data[:flip] + bytes([data[flip] ^ 0xFF]) + data[flip + 1 :],
        data + b"trailing junk",
    ]


@pytest.mark.parametrize("kind", ["tar.gz", "tar pax", "zip", "gzip"])
def test_corrupt_or_truncated_archives_are_digested_by_their_bytes(
    tmp_path: Path, kind: str
) -> None:
    good = WRITERS[kind](tmp_path / "good", EARLY, b"demo 1.0.0\n")
    data = good.read_bytes()
    fell_back: list[int] = []
    for n, broken in enumerate(_corrupt(data)):
        path = tmp_path / f"broken-{n}"
        path.write_bytes(broken)
        effects = Effects(Digester(b"k" * 32), lambda text: text, Scope("/nonexistent", [], []))
        entry = effects._file_digest(str(path))
        assert isinstance(entry["digest"], str) and effects.errors == 0
        if archives.content_form(broken, lambda member: member) is None:
            fell_back.append(n)  # read as any file: a digest of its bytes, and no error said
            assert entry["digest"] == Digester(b"k" * 32).digest(_TAG_FILE + broken)
    # Cut to its header, every archive falls back, and cut short of its end a compressed one
    # (zlib checks its CRC-32) or a zip (its central directory is at the end); a plain tar cut
    # short keeps the members it holds, which are still content.
    assert fell_back[:2] == ([0] if kind == "tar pax" else [0, 1]), fell_back
    if kind in ("gzip", "tar.gz"):  # a flipped byte of compressed data
        assert 2 in fell_back, fell_back


def test_bounds_fall_back_to_the_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = gzip.compress(b"\0" * (2 << 20), mtime=EARLY)
    assert archives.content_form(bomb, lambda member: member) is not None
    monkeypatch.setattr(archives, "MAX_CONTENT_BYTES", 1 << 20)
    assert archives.content_form(bomb, lambda member: member) is None
    monkeypatch.setattr(archives, "MAX_ARCHIVE_BYTES", 16)
    small = gzip.compress(b"abc", mtime=EARLY)
    assert archives.content_form(small, lambda member: member) is None


def test_not_an_archive_is_none(tmp_path: Path) -> None:
    for data in (b"", b"hello", b"PK", b"\x1f\x8b", b"BZh9", bz2.compress(b"x")[:5], b"\0" * 600):
        assert archives.content_form(data, lambda member: member) is None
    assert archives.content_form(lzma.compress(b"x"), lambda member: member) is not None


def test_a_patched_zlib_or_open_does_not_reach_the_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest is taken when a phase ends, while a test's patches are still in place."""
    target = _gzip(tmp_path / "g", EARLY, b"demo\n")
    before = _digest(target)
    import builtins
    import zlib

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("the program's patched function was called")

    monkeypatch.setattr(zlib, "decompressobj", refuse)
    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(os, "stat", refuse)
    assert _digest(target) == before


def test_a_large_plain_file_keeps_its_first_mib_rule(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    path.write_bytes(b"\x1f\x8b" + b"\0" * (MAX_FILE_BYTES + 10))  # gzip's magic, no gzip
    effects = Effects(Digester(b"k" * 32), lambda text: text, Scope("/nonexistent", [], []))
    entry = effects._file_digest(str(path))
    assert entry.get("cut") is True and isinstance(entry["digest"], str)
