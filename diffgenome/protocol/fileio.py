"""Small files read and paths joined without ``open`` or ``os.path``: the recorder calls
these inside the user's test process, where tests patch both."""

from __future__ import annotations

from os import O_RDONLY
from os import close as _close
from os import open as _open
from os import read as _read
from os import sep as _sep


def store_file(folder: str, name: str) -> str:
    """A file of the store folder, joined as a plain string: the writer runs where tests patch
    ``os.path``."""
    return folder if not folder else folder.rstrip(_sep) + _sep + name


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
