"""Writing the command's output files without harm to what their paths name.

An output is written whole or not at all: to a temporary file beside it, moved into place
once complete. That is right for a regular file and wrong for anything else a user may name:
``--json /dev/null`` would replace the system's null device with a regular file (as root,
every later ``> /dev/null`` of every program on the machine then writes into it; found when
it happened here), a FIFO or ``/dev/stdout`` would stop being one, and a symbolic link would
become a copy of its target. So only a regular file, or a path that does not exist yet, is
replaced; a symbolic link is followed to what it names; anything else is written in place.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO


@contextlib.contextmanager
def output_file(path: str) -> Iterator[BinaryIO]:
    """A binary handle whose content ``path`` holds once the block ends without error (for a
    regular file: all of it or, on an error, what it held before); an ``OSError`` is the
    caller's to word."""
    target = os.path.realpath(path)
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "wb") as handle:
            yield handle
        return
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as handle:
            yield handle
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
