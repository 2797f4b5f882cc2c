"""``--genome-egress=isolate``: run the session in a network namespace that has only loopback.

Why a namespace
    The egress guard (collect/egress.py) judges what Python asks of ``_socket``; it cannot see
    a program the test starts (``curl``, ``bash``'s ``/dev/tcp``), nor C code that calls libc
    itself (ctypes, cffi, libpq). A Linux network namespace holds at the kernel: a process in
    it, and every process it starts, sees only the interfaces of that namespace. One that has
    only ``lo`` reaches no other host whatever the code does, while servers a test starts on
    loopback keep working (Bazel's sandbox, ``unshare -rn``).

Where it is made
    In the pytest process that was started (plugin.py calls :func:`isolate` from
    ``pytest_load_initial_conftests``, before any conftest is imported), while it is still
    single-threaded: ``unshare(CLONE_NEWNET)`` moves only the calling thread, and
    ``CLONE_NEWUSER`` refuses a threaded process. Every process started later inherits the
    namespace: pytest-xdist's workers (spawned at session start), Python children, any
    program. A process that finds itself already in a namespace with only ``lo`` (an xdist
    worker, a pytest started by a test, a container without network) is isolated already and
    makes none.

How
    As root (CAP_SYS_ADMIN): ``unshare(CLONE_NEWNET)`` alone, so ids and file access stay as
    they were, then the capabilities that would let a test leave the namespace or reach
    around it are given up, from the bounding set too (:data:`ESCAPE_CAPABILITIES`:
    ``setns``/``nsenter`` back into the parent's namespace once let a test reach the host).
    Otherwise ``unshare(CLONE_NEWUSER | CLONE_NEWNET)``, the process's own uid and
    gid mapped to themselves (``setgroups`` denied first, as the kernel requires), and the
    capabilities the new user namespace grants dropped again once ``lo`` is up (``capset``
    through ctypes), so that file permissions bind as before. A user namespace cannot be left,
    so that path is tried first in a forked child, and taken only if it worked there. ``lo``
    is brought up with an ``SIOCSIFFLAGS`` ioctl. Then the result is checked: only ``lo``,
    and a loopback connection that works.

What it changes, besides the network
    Abstract Unix sockets (``\\0name``) are per network namespace: one of the host (a D-Bus
    or X11 socket) is out of reach; path-based Unix sockets work. Under the user-namespace
    path, files of other users show uid/gid 65534, and ``os.getgroups()`` shows 65534 for
    supplementary groups (their access is unchanged). Sockets opened before the session
    (none, unless a plugin opens one at import) keep the network they were opened in.

Standard library only; it never raises: :func:`isolate` says what it did or why it could not.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from dataclasses import dataclass
from typing import Final

#: How the session was isolated (``Isolation.how``).
CREATED_NET: Final = "the session runs in a network namespace of its own"
CREATED_USER_NET: Final = "the session runs in a user and network namespace of its own"
INHERITED: Final = "the session was started in a network namespace of only loopback"

_SIOCGIFFLAGS: Final = 0x8913
_SIOCSIFFLAGS: Final = 0x8914
_IFF_UP: Final = 0x1
_IFREQ: Final = "16sh22x"  # struct ifreq: the name, then ifr_flags in the union (40 bytes)
_CAP_SYS_ADMIN: Final = 21
_LINUX_CAPABILITY_VERSION_3: Final = 0x20080522
_WORKED: Final = "worked"


@dataclass(frozen=True, slots=True)
class Isolation:
    """What :func:`isolate` did: ``ok`` with ``how``, or not, with ``reason``."""

    ok: bool
    how: str = ""
    reason: str = ""


def isolate() -> Isolation:
    """Put this process (and all it starts from now on) into a network namespace with only
    loopback, or say why not."""
    try:
        return _isolate()
    except Exception as exc:  # never into the user's session
        return Isolation(False, reason=f"{type(exc).__name__}: {exc}")


def only_loopback() -> bool:
    """True when the network namespace of this process has no interface but ``lo``."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return False
    return names == ["lo"]


def _isolate() -> Isolation:
    if not sys.platform.startswith("linux") or not hasattr(os, "unshare"):
        return Isolation(False, reason=f"network namespaces need Linux (this is {sys.platform})")
    if only_loopback():
        problem = _loopback_works()
        if problem:
            return Isolation(False, reason=f"only loopback here, but {problem}")
        return Isolation(True, how=INHERITED)
    threads = _threads()
    if threads != 1:
        return Isolation(
            False,
            reason=f"the process already runs {threads} threads (a namespace is made "
            "before any thread starts; a plugin or conftest started one)",
        )
    if _has_capability(_CAP_SYS_ADMIN):
        return _in_new_network()
    return _in_new_user_and_network()


def _in_new_network() -> Isolation:
    original = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            os.unshare(os.CLONE_NEWNET)
        except OSError as exc:
            return Isolation(False, reason=f"unshare(CLONE_NEWNET) failed: {exc.strerror}")
        problem = _bring_loopback_up() or _check()
        if problem:
            os.setns(original, os.CLONE_NEWNET)  # back to where we were: nothing changed
            return Isolation(False, reason=problem)
        problem = _drop_ways_out()
        if problem:
            # Still root with CAP_SYS_ADMIN: a test could go back (``setns``, ``nsenter``).
            os.setns(original, os.CLONE_NEWNET)
            return Isolation(False, reason=problem)
        return Isolation(True, how=CREATED_NET)
    finally:
        os.close(original)


def _in_new_user_and_network() -> Isolation:
    """The unprivileged way. A user namespace cannot be left again, so a forked child tries
    the whole sequence first and reports; this process follows only when it worked."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the trial: whatever happens, leave at once
        try:
            os.close(read_end)
            problem = _enter_user_and_network() or _WORKED
            os.write(write_end, problem.encode("utf-8", "replace")[:4000])
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        chunks: list[bytes] = []
        while chunk := os.read(read_end, 4096):
            chunks.append(chunk)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    problem = b"".join(chunks).decode("utf-8", "replace")
    if problem != _WORKED:
        return Isolation(False, reason=problem or "the trial in a forked child said nothing")
    problem = _enter_user_and_network()
    if problem:
        return Isolation(False, reason=f"{problem} (after a trial that worked)")
    return Isolation(True, how=CREATED_USER_NET)


def _enter_user_and_network() -> str:
    """'' when this process is now in a new user and network namespace with loopback up,
    its ids mapped to themselves and its capabilities dropped; else what failed."""
    uid, gid = os.geteuid(), os.getegid()
    try:
        os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNET)
    except OSError as exc:
        return f"unshare(CLONE_NEWUSER | CLONE_NEWNET) failed: {exc.strerror}"
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        try:
            _write_proc(f"/proc/self/{name}", text)
        except OSError as exc:
            hint = " (mapping uid 0 needs CAP_SETFCAP)" if name == "uid_map" and uid == 0 else ""
            return f"writing /proc/self/{name} failed: {exc.strerror}{hint}"
    problem = _bring_loopback_up() or _check()
    if problem:
        return problem
    return _drop_capabilities()


def _write_proc(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def _bring_loopback_up() -> str:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        import fcntl

        request = struct.pack(_IFREQ, b"lo", 0)
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock.fileno(), _SIOCGIFFLAGS, request))[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(sock.fileno(), _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))
    except OSError as exc:
        return f"bringing up the loopback interface failed: {exc.strerror}"
    finally:
        sock.close()
    return ""


def _check() -> str:
    if not only_loopback():
        return "the new namespace has other interfaces than loopback"
    return _loopback_works()


def _loopback_works() -> str:
    """'' when a TCP connection over 127.0.0.1 works here."""
    try:
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            with socket.create_connection(server.getsockname(), timeout=10):
                pass
    except OSError as exc:
        return f"loopback does not work ({exc.strerror or exc})"
    return ""


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def _has_capability(number: int) -> bool:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> number & 1)
    except (OSError, ValueError):
        pass
    return False


#: What would let root leave a network namespace or reach around it: ``setns`` and
#: ``nsenter`` (CAP_SYS_ADMIN), another process's memory (CAP_SYS_PTRACE), moving interfaces
#: between namespaces (CAP_NET_ADMIN), kernel code and raw memory (CAP_SYS_MODULE,
#: CAP_SYS_RAWIO, CAP_BPF).
ESCAPE_CAPABILITIES: Final = {
    "CAP_NET_ADMIN": 12,
    "CAP_SYS_MODULE": 16,
    "CAP_SYS_RAWIO": 17,
    "CAP_SYS_PTRACE": 19,
    "CAP_SYS_ADMIN": 21,
    "CAP_BPF": 39,
}
_PR_CAPBSET_DROP: Final = 24
_PR_CAP_AMBIENT: Final = 47
_PR_CAP_AMBIENT_CLEAR_ALL: Final = 4


def _drop_ways_out() -> str:
    """As root in a new network namespace: give up :data:`ESCAPE_CAPABILITIES`, from the
    bounding set too (root regains its bounding set at every ``exec``: ``nsenter`` would
    have them back), and keep every other one (reading others' files, binding low ports);
    '' when done, else what failed."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for number in ESCAPE_CAPABILITIES.values():
            if libc.prctl(_PR_CAPBSET_DROP, number, 0, 0, 0) != 0:
                errno = ctypes.get_errno()
                if errno != 22:  # EINVAL: a capability this kernel does not know
                    return f"dropping capability {number} failed: {os.strerror(errno)}"
        libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        header = ctypes.create_string_buffer(struct.pack("Ii", _LINUX_CAPABILITY_VERSION_3, 0), 8)
        data = ctypes.create_string_buffer(24)
        if libc.capget(header, data) != 0:
            return f"reading capabilities failed: {os.strerror(ctypes.get_errno())}"
        sets = list(struct.unpack("6I", data.raw))
        for number in ESCAPE_CAPABILITIES.values():
            word, bit = divmod(number, 32)
            for kind in range(3):  # effective, permitted, inheritable
                sets[word * 3 + kind] &= ~(1 << bit) & 0xFFFFFFFF
    except (OSError, AttributeError) as exc:
        return f"dropping capabilities failed: {exc}"
    return _set_capabilities(sets)


def _drop_capabilities() -> str:
    """Give back the capabilities a new user namespace grants (all of them, inside it):
    with them, this process could read its own mode-000 files, and tests that expect
    ``PermissionError`` would pass differently."""
    return _set_capabilities([0] * 6)  # two {effective, permitted, inheritable}: none


def _set_capabilities(sets: list[int]) -> str:
    """``capset`` with ``sets`` (two 32-bit words of each of effective, permitted and
    inheritable); '' when it took and CAP_SYS_ADMIN is gone, else what failed."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        header = ctypes.create_string_buffer(struct.pack("Ii", _LINUX_CAPABILITY_VERSION_3, 0), 8)
        data = ctypes.create_string_buffer(struct.pack("6I", *sets), 24)
        if libc.capset(header, data) != 0:
            return f"dropping capabilities failed: {os.strerror(ctypes.get_errno())}"
    except (OSError, AttributeError) as exc:
        return f"dropping capabilities failed: {exc}"
    if _has_capability(_CAP_SYS_ADMIN):
        return "dropping capabilities failed: CAP_SYS_ADMIN is still effective"
    return ""
