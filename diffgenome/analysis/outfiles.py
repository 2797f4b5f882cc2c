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
import sys
from collections.abc import Iterator
from typing import BinaryIO

from diffgenome.protocol.errors import UserError


class OutputError(UserError):
    """An output of the command cannot be written where the user asked."""


def check_output(output: str | None, option: str = "-o") -> None:
    """Fail before any work when ``output`` cannot be written (its folder is missing): a
    run can take a while to load and check (a diff, to record), and the error should not
    wait for that. None and ``-`` are standard output."""
    if output in (None, "-"):
        return
    assert output is not None
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise OutputError(
            f"cannot write {output}: the folder {folder} does not exist; create it or choose "
            f"another {option} path"
        )


def check_folder(directory: str, option: str = "--html") -> None:
    """Fail before any work when ``directory`` cannot become a folder of output files."""
    if not directory:
        raise OutputError(f"{option} needs a folder; pass {option} DIR")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise OutputError(
            f"cannot write the HTML report: {directory} is not a folder; pass {option} DIR"
        )


def write_output(text: str, output: str | None, option: str = "-o") -> None:
    """Write to standard output for None or ``-``, else to ``output`` whole or not at all;
    ``option`` names the argument that gave it, for the error."""
    # A lone surrogate (an undecodable byte a test recorded): its escape, which inside JSON
    # text is the JSON escape itself (protocol/jsontext.py).
    data = text.encode("utf-8", "backslashreplace")
    if output in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    assert output is not None
    try:
        with output_file(output) as handle:
            handle.write(data)
    except OSError as exc:
        raise OutputError(
            f"cannot write {output}: {exc.strerror or exc}; choose another {option} path"
        ) from None


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
