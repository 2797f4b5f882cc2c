"""The file descriptors the store writer holds, and whether they are still its own.

SQLite keeps the store's database, ``-wal`` and ``-shm`` files open for as long as the
connection lives, and writes through those descriptor numbers. A test may close every
descriptor above 2 (``os.closerange(3, ...)``, a daemonising helper), ``dup2`` its own file
over one, or simply get the freed numbers back from its next ``open``: SQLite then writes
database pages and WAL frames into the user's files, and maps the user's file as its
shared-memory index. So before every transaction the writer checks, by device and inode,
that each number still names the file it held (three ``fstat`` calls), and when one does not
it gives the connection up without a byte written through it (:func:`release`) and opens the
store again.

Closing such a connection is itself a write (SQLite checkpoints, unlocks and closes its
descriptors), so :func:`release` first puts the store's own files back under the numbers
SQLite holds (``dup2``), closes the connection, and then gives each number back whatever the
test had put there. Where that is impossible (the store's files are gone), the connection is
kept alive for good instead, never closed, so that nothing is written through it ever again.

Where the process's descriptors cannot be listed (no ``/proc/self/fd`` or ``/dev/fd``:
Windows, where SQLite holds handles that ``os.close`` cannot reach), there is nothing to
check and :meth:`Held.intact` is always true.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from os import close as _close
from os import dup2 as _dup2
from os import fstat as _fstat
from os import get_inheritable as _get_inheritable
from os import listdir as _listdir
from os import open as _open
from os import stat as _stat

try:
    import fcntl as _fcntl_module
except ImportError:  # Windows: no descriptor is listed, so none is ever released
    _fcntl_module = None  # type: ignore[assignment]


def _access(fd: int) -> int:
    """How ``fd`` was opened (read, write or both); 0 where that cannot be asked."""
    if _fcntl_module is None:
        return 0
    return int(_fcntl_module.fcntl(fd, _fcntl_module.F_GETFL)) & O_ACCMODE


def _fcntl(fd: int, floor: int) -> int:
    """A close-on-exec copy of ``fd`` at the lowest free number from ``floor`` up."""
    if _fcntl_module is None:
        raise OSError("descriptors cannot be copied above a number here")
    return int(_fcntl_module.fcntl(fd, _fcntl_module.F_DUPFD_CLOEXEC, floor))


# Windows has neither; there no descriptor is ever listed, so neither is used.
O_ACCMODE: int = getattr(os, "O_ACCMODE", 3)
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_RDWR: int = os.O_RDWR

# Where a process's open descriptors are listed: Linux, then macOS and the BSDs.
_FD_FOLDERS = ("/proc/self/fd", "/dev/fd")
# Suffixes of the files SQLite opens beside a WAL-mode database.
_COMPANIONS = ("", "-wal", "-shm")

# Connections that could not be closed safely: referenced here for the life of the process,
# so that neither the collector nor interpreter shutdown ever closes (and writes) them.
_KEPT_OPEN: list[sqlite3.Connection] = []


@dataclass(frozen=True, slots=True)
class Descriptor:
    """One number SQLite holds: which file (device, inode) and path it must be."""

    fd: int
    device: int
    inode: int
    path: str
    #: ``O_RDONLY``/``O_WRONLY``/``O_RDWR``: the same file opened again read-only and put
    #: under the number is not the descriptor SQLite writes through either.
    access: int


@dataclass(frozen=True, slots=True)
class Held:
    """The descriptors one connection holds on the store's files."""

    descriptors: tuple[Descriptor, ...]

    def intact(self) -> bool:
        """Every number still names the file it named when the connection was opened."""
        return all(_names_its_file(held) for held in self.descriptors)

    def taken(self) -> list[int]:
        """The numbers that no longer name their file."""
        return [held.fd for held in self.descriptors if not _names_its_file(held)]


def _names_its_file(held: Descriptor) -> bool:
    try:
        st = _fstat(held.fd)
        access = _access(held.fd)
    except OSError:
        return False
    return st.st_ino == held.inode and st.st_dev == held.device and access == held.access


def store_descriptors(db_path: str, before: frozenset[int] = frozenset()) -> Held:
    """The descriptors of this process that name ``db_path`` or its companions, leaving out
    the numbers in ``before`` (held by another connection before this one was opened)."""
    files: dict[tuple[int, int], str] = {}
    for suffix in _COMPANIONS:
        path = db_path + suffix
        try:
            st = _stat(path)
        except OSError:
            continue
        files[(st.st_dev, st.st_ino)] = path
    found: list[Descriptor] = []
    for fd in _open_numbers():
        if fd in before:
            continue
        try:
            st = _fstat(fd)
        except OSError:
            continue
        named = files.get((st.st_dev, st.st_ino))
        if named is not None:
            try:
                access = _access(fd)
            except OSError:
                continue
            found.append(Descriptor(fd, st.st_dev, st.st_ino, named, access))
    return Held(tuple(found))


def numbers_naming(db_path: str) -> frozenset[int]:
    """The numbers already naming the store's files (before a connection is opened)."""
    return frozenset(held.fd for held in store_descriptors(db_path).descriptors)


def release(conn: sqlite3.Connection, held: Held) -> bool:
    """Close ``conn`` without writing through a number that is not its own any more.

    True when it was closed; False when the store's own files could not be put back, in which
    case the connection is kept open (and unused) for the life of the process. Copies are
    made above every number SQLite holds, so that no copy lands on a number still to be
    put back.
    """
    numbers = {desc.fd for desc in held.descriptors}
    floor = max(numbers, default=2) + 1
    saved: list[tuple[int, int | None, bool]] = []
    closed = False
    try:
        for desc in held.descriptors:
            try:
                inheritable = _get_inheritable(desc.fd)
                occupant: int | None = _fcntl(desc.fd, floor)
            except OSError:
                inheritable, occupant = False, None
            saved.append((desc.fd, occupant, inheritable))
            if not _put_back(desc, numbers, floor):
                return False
        conn.close()
        closed = True
        return True
    except (OSError, sqlite3.Error):
        return False
    finally:
        if not closed:
            keep_open(conn)
        for fd, occupant, inheritable in saved:
            if occupant is None:
                continue
            try:
                _dup2(occupant, fd, inheritable=inheritable)
            except OSError:
                pass
            finally:
                _close(occupant)


def _put_back(desc: Descriptor, numbers: set[int], floor: int) -> bool:
    """Make ``desc.fd`` name the store file it named; False when that file is not there."""
    own = _open(desc.path, O_RDWR | O_CLOEXEC)
    if own != desc.fd and own in numbers:  # a free number another descriptor needs
        moved = _fcntl(own, floor)
        _close(own)
        own = moved
    try:
        st = _fstat(own)
        if st.st_ino != desc.inode or st.st_dev != desc.device or _access(own) != desc.access:
            return False  # the store's file was replaced: nothing to put back
        if own != desc.fd:
            _dup2(own, desc.fd, inheritable=False)
    except BaseException:
        _close(own)
        raise
    if own != desc.fd:
        _close(own)
    return True


def keep_open(conn: sqlite3.Connection) -> None:
    """Never close ``conn``: not when the collector drops it, nor at interpreter shutdown,
    which clears module globals (a reference the interpreter does not know it holds)."""
    _KEPT_OPEN.append(conn)
    try:
        import ctypes  # only on this rare path: the store's files were taken *and* replaced

        ctypes.pythonapi.Py_IncRef(ctypes.py_object(conn))
    except Exception:
        pass  # the list still holds it until shutdown


def _open_numbers() -> list[int]:
    for folder in _FD_FOLDERS:
        try:
            names = _listdir(folder)
        except OSError:
            continue
        return [int(name) for name in names if name.isdigit()]
    return []
