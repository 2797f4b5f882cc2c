"""Small files read without ``open``: the recorder calls this inside the user's test
process, where tests patch it."""

from __future__ import annotations

from os import O_RDONLY
from os import close as _close
from os import open as _open
from os import read as _read


def read_file(path: str, limit: int = 1 << 16) -> bytes:
    """At most about ``limit`` bytes of ``path``, through a raw descriptor."""
    fd = _open(path, O_RDONLY)
    try:
        chunks: list[bytes] = []
        while chunk := _read(fd, limit):
            chunks.append(chunk)
            if sum(map(len, chunks)) >= limit:
                break
        return b"".join(chunks)
    finally:
        _close(fd)
