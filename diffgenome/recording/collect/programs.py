"""What program a child process runs, and whether the recorder can be blind to it.

A test that starts ``git`` or a shell hook did not hide Python behaviour from the recorder:
what ran is another program, and the program's identity is the evidence (a changed hook
script is a change). A test that starts Python (``sys.executable``, ``python -m ...``, a
script or console script whose shebang names Python) may run in-scope code: the child is
recorded into the test (collect/children.py), or, when it cannot be, the test stays unverified
(``untraced-subprocess:``).

The identity is the program's basename, or, for a file inside the recorded tree, its path
from the tree's root and a digest of its content (``hooks/pre_gen.sh@1f2e3d4c5b6a``). Only
the standard library is used, bound at import: a test may patch ``os.path`` or ``open``
while it starts a child.
"""

from __future__ import annotations

import re
import sys
from hashlib import sha256 as _sha256
from os import O_RDONLY
from os import close as _close
from os import environ as _environ
from os import fstat as _fstat
from os import getcwd as _getcwd
from os import open as _open
from os import read as _read
from os import stat as _stat
from os.path import isabs as _isabs
from os.path import join as _join
from os.path import realpath as _realpath
from stat import S_ISREG
from typing import Final

_PYTHON_NAME: Final = re.compile(r"(?:python|pypy)[0-9.]*[tdmw]?(?:\.exe)?\Z", re.IGNORECASE)
# How much of a program file is digested: enough for any script; a binary is known by its
# size and first megabyte.
_MAX_DIGESTED: Final = 1 << 20
_EXECUTABLE: Final = _realpath(sys.executable) if sys.executable else ""


def _read_file(path: str) -> tuple[bytes, int] | None:
    """The first ``_MAX_DIGESTED`` bytes of a regular file and its size, or None."""
    try:
        fd = _open(path, O_RDONLY)
    except OSError:
        return None
    try:
        info = _fstat(fd)
        if not S_ISREG(info.st_mode):
            return None
        chunks: list[bytes] = []
        total = 0
        while total < _MAX_DIGESTED:
            chunk = _read(fd, min(1 << 16, _MAX_DIGESTED - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks), info.st_size
    except OSError:
        return None
    finally:
        _close(fd)


def _locate(program: str) -> str | None:
    """The file a program name runs: a path as given (from the current folder when
    relative), or the first match on ``PATH``."""
    if "/" in program:
        return program if _isabs(program) else _join(_getcwd(), program)
    for folder in (_environ.get("PATH") or "").split(":"):
        candidate = _join(folder or ".", program)
        try:
            if S_ISREG(_stat(candidate).st_mode):
                return candidate
        except OSError:
            continue
    return None


_SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh"})


def identify(program: str, argv: list[str], root: str | None) -> tuple[str, bool]:
    """``(identity, is_python)`` of the program a child process starts (``argv`` without
    the program itself). A shell given a script (``sh hooks/x.sh``) is known by both, so
    that a changed script in the tree is a change.

    When in doubt (the file cannot be found or read) the answer is "Python": an unverified
    test is honest, a verified one that hid Python code would not be.
    """
    identity, python = _identify(program, root)
    basename = program.rpartition("/")[2] or program
    if not python and basename in _SHELLS and len(argv) > 1 and argv[0] == "-c":
        # A command line: Python anywhere in it may run in-scope code out of sight.
        for word in argv[1].split():
            if _PYTHON_NAME.match(word.rpartition("/")[2]) or _shebang_python(word):
                return identity, True
        return identity, False
    if not python and basename in _SHELLS and argv and not argv[0].startswith("-"):
        script, script_python = _identify(argv[0], root)
        return f"{identity} {script}", script_python
    return identity, python


def _shebang_python(word: str) -> bool:
    """Whether ``word`` names a file (as a path) whose first line runs Python."""
    if "/" not in word:
        return False
    content = _read_file(word if _isabs(word) else _join(_getcwd(), word))
    if content is None:
        return False
    first_line = content[0][:256].split(b"\n", 1)[0]
    return first_line.startswith(b"#!") and b"python" in first_line.lower()


def _identify(program: str, root: str | None) -> tuple[str, bool]:
    basename = program.rpartition("/")[2] or program
    if _PYTHON_NAME.match(basename):
        return basename, True
    path = _locate(program)
    if path is None:
        return basename, True
    real = _realpath(path)
    if real == _EXECUTABLE:
        return basename, True
    content = _read_file(real)
    if content is None:
        return basename, True
    data, size = content
    first_line = data[:256].split(b"\n", 1)[0]
    if first_line.startswith(b"#!") and b"python" in first_line.lower():
        return basename, True
    if root and real.startswith(root.rstrip("/") + "/"):
        digest = _sha256(data + b"%d" % size).hexdigest()[:12]
        return f"{real[len(root.rstrip('/')) + 1 :]}@{digest}", False
    return basename, False
