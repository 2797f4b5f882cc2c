"""The content of an archive a test wrote, without the times its format stamps into it.

A file's digest is a digest of its bytes (``effects.py``), and the bytes of a gzip, zip or
tar archive carry the time it was written: gzip's 4-byte ``MTIME`` (and the original file
name), each zip entry's DOS time and date in its local header and in the central directory
(and its extra fields: ``UT`` 0x5455, NTFS times), each tar member's ``mtime`` (and pax
``mtime``/``atime``/``ctime`` records, GNU's atime and ctime). Two recordings of one commit
then differ in every test that builds a package (pypa/build: 22 tests ``unstable`` on an
identical tree, each for its ``.tar.gz``), and that difference masked every other file the
test wrote. So an archive is digested by what it holds (docs/recording.md, "Effects"):

- **tar** (``ustar`` at offset 257, POSIX or GNU): each member's name (GNU long names and
  pax ``path`` applied), mode, type, size, link target and bytes, in the archive's order;
- **zip** (``PK\\x03\\x04``, or an empty one's ``PK\\x05\\x06``): each member's name, Unix
  mode and bytes (stored, deflated, bzip2), in the central directory's order, the bytes
  checked against the entry's CRC-32;
- **gzip** (``\\x1f\\x8b``), **bzip2** and **xz**: the decompressed bytes, read by the tar
  rule when they are a tar (``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``).

Everything else of the format (uid, gid, owner names, comments, compression level, the
operating system byte, extra fields) is left out with the times: none of it is what the
code put in. A member's bytes are taken as the caller's ``member`` makes them (text made
location-independent, as a plain file's is).

Bounded: an archive larger than :data:`MAX_ARCHIVE_BYTES`, or holding more than
:data:`MAX_CONTENT_BYTES` once decompressed or more than :data:`MAX_MEMBERS` members, and
one this reader cannot follow (truncated, corrupt, encrypted, zip64, sparse tar members, a
compression it does not read) gives None: the caller digests its bytes as any file's. Never
raises. Every function of the standard library it calls is bound when it is imported: a
test that patches ``zlib`` or ``open`` while it runs does not reach in here.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable
from typing import Any, Final

try:
    import bz2 as _bz2_module
except ImportError:  # pragma: no cover - an interpreter built without _bz2
    _bz2_module = None  # type: ignore[assignment]
try:
    import lzma as _lzma_module
except ImportError:  # pragma: no cover - an interpreter built without _lzma
    _lzma_module = None  # type: ignore[assignment]

#: An archive file larger than this is digested by its bytes.
MAX_ARCHIVE_BYTES: Final = 32 << 20
#: Bytes an archive may hold once decompressed (a gzip bomb stops here).
MAX_CONTENT_BYTES: Final = 128 << 20
#: Members an archive may hold.
MAX_MEMBERS: Final = 16384

_sha256 = hashlib.sha256
_inflater = zlib.decompressobj
_crc32 = zlib.crc32
_zlib_error = zlib.error
_unpack_from = struct.unpack_from
_bz2: Callable[[], Any] | None = _bz2_module.BZ2Decompressor if _bz2_module is not None else None
_xz: Callable[[], Any] | None = _lzma_module.LZMADecompressor if _lzma_module is not None else None

_GZIP: Final = b"\x1f\x8b"
_BZ2: Final = b"BZh"
_XZ: Final = b"\xfd7zXZ\x00"
_ZIP_LOCAL: Final = b"PK\x03\x04"
_ZIP_END: Final = b"PK\x05\x06"
_ZIP_CENTRAL: Final = b"PK\x01\x02"
_TAR_MAGIC_AT: Final = 257
_BLOCK: Final = 512

Member = Callable[[bytes], bytes]


class _Unreadable(Exception):
    """The archive cannot be followed within the bounds: digest its bytes instead."""


def looks_like_archive(head: bytes) -> bool:
    """Whether the first bytes of a file are those of a format read here: the caller reads
    the whole file only then."""
    return (
        head.startswith((_GZIP, _ZIP_LOCAL, _ZIP_END, _XZ))
        or (head.startswith(_BZ2) and len(head) > 3 and head[3:4] in b"123456789")
        or _is_tar(head)
    )


def content_form(data: bytes, member: Member) -> bytes | None:
    """The canonical form of what the archive ``data`` holds, times left out; None when it
    is not an archive read here, or cannot be read within the bounds.

    ``member`` turns a member's bytes into what stands for them in the form (a fixed-length
    digest, so that the form stays small)."""
    try:
        if len(data) > MAX_ARCHIVE_BYTES:
            return None
        return _form(data, member)
    except Exception:  # _Unreadable, and anything a hostile archive provokes
        return None


def _form(data: bytes, member: Member) -> bytes | None:
    if data.startswith(_GZIP):
        return _decompressed(b"gzip", _gunzip(data), member)
    if data.startswith(_BZ2) and _bz2 is not None:
        return _decompressed(b"bzip2", _one_stream(_bz2(), data), member)
    if data.startswith(_XZ) and _xz is not None:
        return _decompressed(b"xz", _one_stream(_xz(), data), member)
    if data.startswith((_ZIP_LOCAL, _ZIP_END)):
        return _zip(data, member)
    if _is_tar(data):
        return _tar(data, member)
    return None


def _decompressed(kind: bytes, content: bytes, member: Member) -> bytes:
    """A compressed stream's form: the tar rule when it holds a tar, else its bytes."""
    inner = _tar(content, member) if _is_tar(content) else b"raw" + _field(member(content))
    return kind + b"\0" + inner


def _field(value: bytes) -> bytes:
    """A self-delimiting field of the form."""
    return b"%d:" % len(value) + value


# -- compressed streams -------------------------------------------------------------------


def _gunzip(data: bytes) -> bytes:
    """Every gzip member of ``data`` decompressed (``gzip`` writes one; concatenated files
    are one stream), its CRC-32 and length checked by zlib; zero padding after the last
    member is allowed, anything else is not."""
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        if not rest.startswith(_GZIP):
            if rest.count(0) == len(rest):
                break
            raise _Unreadable("trailing data")
        inflater = _inflater(31)
        try:
            chunk = inflater.decompress(rest, MAX_CONTENT_BYTES - size + 1)
        except _zlib_error as exc:
            raise _Unreadable("corrupt") from exc
        size += len(chunk)
        if size > MAX_CONTENT_BYTES or not inflater.eof:
            raise _Unreadable("too large or truncated")
        out.append(chunk)
        rest = inflater.unused_data
    return b"".join(out)


def _one_stream(decompressor: Any, data: bytes) -> bytes:
    """One bzip2 or xz stream decompressed, bounded; truncated or followed by anything,
    unreadable."""
    chunk: bytes = decompressor.decompress(data, MAX_CONTENT_BYTES + 1)
    if len(chunk) > MAX_CONTENT_BYTES or not decompressor.eof or decompressor.unused_data:
        raise _Unreadable("too large, truncated or followed by data")
    return chunk


# -- tar ----------------------------------------------------------------------------------


def _is_tar(data: bytes) -> bool:
    """A POSIX (``ustar\\0``) or GNU (``ustar  \\0``) header with a valid checksum."""
    return (
        len(data) >= _BLOCK
        and data[_TAR_MAGIC_AT : _TAR_MAGIC_AT + 5] == b"ustar"
        and _checksum_ok(data[:_BLOCK])
    )


def _checksum_ok(block: bytes) -> bool:
    try:
        stored = _number(block[148:156])
    except _Unreadable:
        return False
    unsigned = sum(block[:148]) + 8 * 0x20 + sum(block[156:])
    signed = sum(b - 256 if b > 127 else b for b in block[:148] + block[156:]) + 8 * 0x20
    return stored in (unsigned, signed)


def _text(field: bytes) -> bytes:
    """A NUL-terminated header field."""
    end = field.find(b"\0")
    return field if end < 0 else field[:end]


def _number(field: bytes) -> int:
    """An octal header number, or GNU's base-256 form (first byte 0x80 or 0xff)."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return value - (1 << (8 * (len(field) - 1))) if field[0] == 0xFF else value
    digits = _text(field).strip(b" \0")
    if not digits:
        return 0
    try:
        return int(digits, 8)
    except ValueError as exc:
        raise _Unreadable("not a number") from exc


def _pax(records: bytes) -> dict[bytes, bytes]:
    """The records of a pax extended header (``%d key=value\\n``)."""
    out: dict[bytes, bytes] = {}
    at = 0
    while at < len(records):
        space = records.find(b" ", at)
        if space < 0:
            break
        try:
            length = int(records[at:space])
        except ValueError as exc:
            raise _Unreadable("pax record") from exc
        if length <= 0 or at + length > len(records):
            raise _Unreadable("pax record")
        key, _, value = records[space + 1 : at + length - 1].partition(b"=")
        out[key] = value
        at += length
    return out


#: Member types whose header says nothing of the member: their data describes the next one.
_LONG_NAME, _LONG_LINK, _PAX, _GLOBAL_PAX = b"L", b"K", b"x", b"g"
_LINKS: Final = (b"1", b"2")


def _tar(data: bytes, member: Member) -> bytes:
    """Each member's name, mode, type, size, link target and bytes, in order."""
    out = [b"tar"]
    at = 0
    members = 0
    name: bytes | None = None
    link: bytes | None = None
    size_override: int | None = None
    while at + _BLOCK <= len(data):
        block = data[at : at + _BLOCK]
        if block.count(0) == _BLOCK:
            break  # the end-of-archive blocks
        if not _checksum_ok(block):
            raise _Unreadable("header checksum")
        kind = block[156:157]
        if kind in (b"\0", b"7"):  # an old regular file; a contiguous one
            kind = b"0"
        size = _number(block[124:136])
        if size < 0:
            raise _Unreadable("negative size")
        start = at + _BLOCK
        if kind in (_LONG_NAME, _LONG_LINK, _PAX, _GLOBAL_PAX):
            body = data[start : start + size]
            if len(body) < size:
                raise _Unreadable("truncated")
            if kind == _LONG_NAME:
                name = _text(body)
            elif kind == _LONG_LINK:
                link = _text(body)
            elif kind == _PAX:
                records = _pax(body)
                name = records.get(b"path", name)
                link = records.get(b"linkpath", link)
                if b"size" in records:
                    size_override = int(records[b"size"])
            # A global header's records (often a time) apply to no one member's content.
            at = start + _round_up(size)
            continue
        if kind == b"S":
            raise _Unreadable("sparse member")
        if size_override is not None:
            size = size_override
        if name is None:
            name = _text(block[:100])
            if block[257:263] == b"ustar\x00":  # POSIX: a prefix; GNU keeps times there
                prefix = _text(block[345:500])
                if prefix:
                    name = prefix + b"/" + name
        if link is None:
            link = _text(block[157:257]) if kind in _LINKS else b""
        # Links, folders and devices have no data, whatever their size field says.
        stored = 0 if kind in (b"1", b"2", b"3", b"4", b"5", b"6") else size
        body = data[start : start + stored]
        if len(body) < stored:
            raise _Unreadable("truncated")
        members += 1
        if members > MAX_MEMBERS:
            raise _Unreadable("too many members")
        mode = _number(block[100:108]) & 0o7777
        out.append(
            _field(name) + b"%o;%s;%d;" % (mode, kind, stored) + _field(link) + _field(member(body))
        )
        at = start + _round_up(stored)
        name = link = size_override = None
    return b"".join(out)


def _round_up(size: int) -> int:
    return -(-size // _BLOCK) * _BLOCK


# -- zip ----------------------------------------------------------------------------------

_END_SIZE: Final = 22
_CENTRAL_SIZE: Final = 46
_LOCAL_SIZE: Final = 30
_MAX_COMMENT: Final = 0xFFFF
_STORED, _DEFLATED, _BZIP2 = 0, 8, 12
#: ``version made by``'s host byte: Unix, whose external attributes hold a mode.
_UNIX_HOST: Final = 3


def _zip(data: bytes, member: Member) -> bytes:
    """Each member's name, Unix mode and bytes, in the central directory's order."""
    end = data.rfind(_ZIP_END, max(0, len(data) - _END_SIZE - _MAX_COMMENT))
    if end < 0 or end + _END_SIZE > len(data):
        raise _Unreadable("no end of central directory")
    _, disk, _, _, entries, size, offset, _ = _unpack_from("<4s4H2LH", data, end)
    if disk != 0 or entries == 0xFFFF or offset == 0xFFFFFFFF or size == 0xFFFFFFFF:
        raise _Unreadable("zip64 or multi-disk")
    # Data before the archive (a self-extracting stub) shifts every offset alike.
    shift = end - size - offset
    if shift < 0:
        raise _Unreadable("central directory out of place")
    if entries > MAX_MEMBERS:
        raise _Unreadable("too many members")
    out = [b"zip"]
    at = end - size
    total = 0
    for _ in range(entries):
        if data[at : at + 4] != _ZIP_CENTRAL:
            raise _Unreadable("central directory entry")
        (made_by, flags, method, crc, csize, usize, nlen, xlen, clen, attributes, local) = (
            _unpack_from("<4x H 2x H H 4x L L L H H H 4x L L", data, at)
        )
        name = data[at + _CENTRAL_SIZE : at + _CENTRAL_SIZE + nlen]
        at += _CENTRAL_SIZE + nlen + xlen + clen
        if flags & 0x1 or 0xFFFFFFFF in (csize, usize, local):
            raise _Unreadable("encrypted or zip64 member")
        header = shift + local
        if data[header : header + 4] != _ZIP_LOCAL:
            raise _Unreadable("local header")
        lnlen, lxlen = _unpack_from("<HH", data, header + 26)
        begin = header + _LOCAL_SIZE + lnlen + lxlen
        raw = data[begin : begin + csize]
        if len(raw) < csize:
            raise _Unreadable("truncated")
        total += usize
        if total > MAX_CONTENT_BYTES:
            raise _Unreadable("too large")
        body = _unzipped(method, raw, usize)
        if len(body) != usize or _crc32(body) != crc:
            raise _Unreadable("size or CRC-32")
        mode = (attributes >> 16) if made_by >> 8 == _UNIX_HOST else 0
        out.append(_field(name) + b"%o;" % mode + _field(member(body)))
    return b"".join(out)


def _unzipped(method: int, raw: bytes, size: int) -> bytes:
    if method == _STORED:
        return raw
    if method == _DEFLATED:
        inflater = _inflater(-15)
        try:
            body: bytes = inflater.decompress(raw, size + 1)
        except _zlib_error as exc:
            raise _Unreadable("corrupt") from exc
        return body
    if method == _BZIP2 and _bz2 is not None:
        return _one_stream(_bz2(), raw)
    raise _Unreadable("compression not read here")


__all__ = [
    "MAX_ARCHIVE_BYTES",
    "MAX_CONTENT_BYTES",
    "MAX_MEMBERS",
    "content_form",
    "looks_like_archive",
]
