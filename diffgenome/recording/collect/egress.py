"""Egress guard: see every network attempt of the test process, and refuse or record it.

What each policy guarantees, and what it does not, is docs/recording.md's "Egress policies".

Why audit hooks
    Patching ``socket.socket.connect`` (the pytest-socket approach) misses every reference taken
    before the patch (``from socket import create_connection``, a bound method stored by a
    client library at import), every name lookup, and every C caller of ``_socket``. PEP 578
    audit events are raised by CPython itself inside ``_socket`` *before* the system call, on the
    thread that makes it, whatever reference the caller holds. Raising from the hook aborts the
    operation, so a refused connect or lookup never leaves the process.

Why a singleton dispatcher
    Audit hooks can never be removed. The module therefore adds exactly one hook per process
    (``_dispatch``) and gates it: it checks the event name against a frozenset (the hook sees every
    ``open``, ``import``, ``compile`` ... of the process) and then one attribute, the active guard.
    Guards are cheap objects that the plugin activates and deactivates around each test; the
    last activated guard wins and deactivating it restores the one it displaced.

What it does
    kinds       audit events
    connect     socket.connect (also connect_ex)
    sendto      socket.sendto, socket.sendmsg with an address
    bind        socket.bind
    dns         socket.getaddrinfo, socket.gethostbyname (also _ex), socket.gethostbyaddr,
                socket.getnameinfo
    subprocess  subprocess.Popen, os.system, os.exec, os.posix_spawn (also posix_spawnp),
                os.spawn (Windows), os.startfile; on POSIX ``os.spawn*`` is fork+exec written in
                Python, so it is seen as the ``os.fork`` of ``os._spawnvef``.

    policy      loopback target            anything else
    loopback    allowed, recorded          refused before the system call, recorded
    block       refused, recorded          refused, recorded
    allow       allowed, recorded          allowed, recorded
    isolate     allowed, recorded          refused, recorded: as loopback, while the session
                                           runs in a network namespace with only loopback
                                           (recording/netns.py), which holds what this guard
                                           cannot see

    A refusal is raised as ``EgressRefused`` (a PermissionError, errno EACCES), except from
    ``connect_ex``, which returns EACCES as its contract says: while a session guards,
    ``socket.socket`` has a ``connect_ex`` of its own that turns the hook's refusal into the
    errno (``install_connect_ex``; done before the conftests are imported, so references
    taken there are that one). A reference to ``_socket.socket.connect_ex`` itself still
    raises.

    Loopback means 127.0.0.0/8, ::1 (also IPv4-mapped), "localhost" and names ending in
    ".localhost". Numeric hosts need no resolver, so a lookup of one is judged like a connect to
    it; any other name is refused under loopback/block before a resolver is asked, because the
    hook runs before the C call. A connect to a *name* is judged by the name as written
    ("x:80" is refused, "localhost:80" allowed under loopback; but see below for its lookup).
    Binding follows the same table on purpose: a loopback bind (a test's own server) is allowed
    under every policy but block, while a wildcard bind ("", "0.0.0.0", "::") listens on every
    interface and is refused under loopback and block.
    Non-IP families other than AF_UNIX (AF_PACKET, AF_NETLINK, AF_VSOCK, ...) are refused under
    loopback/block: the guard fails closed on what it cannot judge, and so does an internal
    error while judging a network event (counted in ``errors``, target "?").

    AF_UNIX sockets and ``socket.socketpair()`` never leave the machine (asyncio's self-pipe,
    Starlette's TestClient need them): they are neither refused nor recorded. Subprocesses are
    never refused. With a ``spawn`` handler (collect/children.py, which records Python
    children into the test) every child goes to it; without one, another program is recorded
    with outcome "program" and a Python child with outcome "untraced-child". A Python child
    that loads the session's hook runs a guard of its own under the same policy
    (recording/child.py), switched on before its recorder.

What it does NOT reach
    * Other programs (``curl``, ``git``, a shell's ``/dev/tcp``) and Python children that do
      not load the hook (``python -S``, ``env={}``, another interpreter): recorded as spawns,
      never guarded; under block the session names them at its end. Forked children
      (``os.fork``, multiprocessing "fork") inherit the hook and the active guard.
    * C extensions that call libc themselves (libpq, libcurl, gRPC core, ...), raw system calls
      through ctypes or cffi: no socket audit event is raised.
    * Only ``isolate`` holds those two, at the kernel.
    * A host *name* passed straight to ``connect``/``sendto``/``bind`` (not through
      ``create_connection`` or ``getaddrinfo``) is resolved by ``_socket`` before it raises the
      audit event: the connection is refused, but that lookup has already reached the resolver.
      http.client, urllib, urllib3 and asyncio all call ``getaddrinfo`` first, which is guarded.
    * Traffic on a socket connected before activation (``send`` has no audit event), sockets
      built from inherited descriptors (``socket.fromfd``), ``accept`` on a listening socket.
    * Other interpreters in the process: ``sys.addaudithook`` is per interpreter.
    * Resolver leaks at the edges: glibc may ask DNS about "x.localhost", and a reverse lookup
      of a loopback address (``gethostbyaddr``) may consult a resolver. Non-canonical numeric
      forms ("127.1") are treated as names and refused under loopback.
    * On Windows ``socketpair`` is emulated with a loopback connect, which is then seen.
"""

from __future__ import annotations

import _socket
import contextlib
import errno as _errno
import ipaddress
import os
import socket as _socket_module
import sys
import threading
from collections.abc import Callable, Iterator
from os.path import realpath as _realpath
from types import FrameType
from typing import Any, Final

from diffgenome.protocol.vocab import (
    EGRESS_POLICIES,
    OS_BIND,
    OS_CONNECT,
    OS_DNS,
    OS_SENDTO,
    OS_SUBPROCESS,
    OUTCOME_PROGRAM,
    OUTCOME_UNTRACED_CHILD,
)
from diffgenome.recording.collect import programs

__all__ = [
    "OUTCOME_ALLOWED",
    "OUTCOME_PROGRAM",
    "OUTCOME_REFUSED",
    "OUTCOME_UNTRACED",
    "REFUSED_ERRNO",
    "EgressGuard",
    "EgressRefused",
    "Recorder",
    "Spawner",
    "install_connect_ex",
    "uninstall_connect_ex",
]

#: (kind, target, outcome); called on the thread that made the attempt.
Recorder = Callable[[str, str, str], None]
#: (identity, whether it runs Python, environment or None, arguments after the program,
#: whether it replaces this process) of a child about to start, on the spawning thread.
Spawner = Callable[[str, bool, object, list[str], bool], None]

OUTCOME_ALLOWED: Final = "allowed"
OUTCOME_REFUSED: Final = "refused:egress-guard"
OUTCOME_UNTRACED: Final = OUTCOME_UNTRACED_CHILD

_EVENT_KINDS: Final[dict[str, str]] = {
    "socket.connect": OS_CONNECT,
    "socket.sendto": OS_SENDTO,
    "socket.sendmsg": OS_SENDTO,
    "socket.bind": OS_BIND,
    "socket.getaddrinfo": OS_DNS,
    "socket.gethostbyname": OS_DNS,
    "socket.gethostbyaddr": OS_DNS,
    "socket.getnameinfo": OS_DNS,
    "subprocess.Popen": OS_SUBPROCESS,
    "os.system": OS_SUBPROCESS,
    "os.exec": OS_SUBPROCESS,
    "os.posix_spawn": OS_SUBPROCESS,
    "os.spawn": OS_SUBPROCESS,
    "os.startfile": OS_SUBPROCESS,
    "os.fork": OS_SUBPROCESS,
}
# Raised once by install() to prove that the hook was really added: sys.addaudithook silently
# drops the new hook when an existing hook raises RuntimeError.
_PROBE: Final = "diffgenome.egress.probe"
_WATCHED: Final = frozenset((*_EVENT_KINDS, _PROBE))

# Where an address points; decides the verdict and explains a refusal.
_LOOPBACK: Final = "loopback"
_WILDCARD: Final = "wildcard"
_ADDRESS: Final = "address"
_NAME: Final = "name"
_OTHER_FAMILY: Final = "other-family"
_UNKNOWN: Final = "unknown"

_BLOCKED_LOOPBACK: Final = "policy 'block' refuses loopback too"
_REASONS: Final[dict[str, str]] = {
    _LOOPBACK: _BLOCKED_LOOPBACK,
    _WILDCARD: "a wildcard address reaches every interface, not only loopback",
    _ADDRESS: "not a loopback address",
    _NAME: "only 'localhost' names are allowed; others are refused before any resolver is asked",
    _OTHER_FAMILY: "not an IP or AF_UNIX socket, so the guard cannot judge it",
    _UNKNOWN: "the address could not be understood",
}

# Captured at import: tests patch ``socket`` and ``os.path``; the hook must not follow them.
_ip_address = ipaddress.ip_address
_fspath = os.fspath
_PathLike = os.PathLike
_getframe = sys._getframe
_addaudithook = sys.addaudithook
_audit = sys.audit
_AF_INET: Final[int] = int(_socket.AF_INET)
_AF_INET6: Final[int] = int(getattr(_socket, "AF_INET6", -3))
_AF_UNIX: Final[int] = int(getattr(_socket, "AF_UNIX", -2))
_NO_FAMILY: Final = -1
_family_descriptor = _socket.socket.__dict__["family"]
_OWN_GLOBALS: Final = globals()


#: The errno of a refusal: what ``connect_ex`` returns, and ``EgressRefused.errno``. EACCES
#: is what the kernel says when a security policy (an LSM, a firewall rule) refuses a
#: connect; ECONNREFUSED would tell code that waits for a server to come up to wait forever.
REFUSED_ERRNO: Final = _errno.EACCES


class EgressRefused(PermissionError):
    """Raised into the code that attempted egress, from inside the audit hook.

    A PermissionError (hence an OSError) so that code which already copes with unreachable
    networks -- ``socket.getfqdn``, ``create_connection`` trying the next address, retry loops --
    treats a refusal like a failed connection instead of crashing on an unknown exception. It
    carries errno EACCES and the explanation as ``strerror`` because some callers rebuild the
    error from those two alone (``socket.create_server`` does, on a failed bind).
    ``connect_ex`` returns that errno instead (see :func:`install_connect_ex`).
    """

    def __init__(self, kind: str, target: str, policy: str, reason: str = "") -> None:
        self.kind = kind
        self.target = target
        self.policy = policy
        self.reason = reason
        if policy == "block" and reason == _BLOCKED_LOOPBACK:
            hint = (
                "--genome-egress=loopback (allow loopback) or --genome-egress=allow (record only)"
            )
        else:
            hint = "--genome-egress=allow (record only, refuse nothing)"
        because = f": {reason}" if reason else ""
        super().__init__(
            REFUSED_ERRNO,
            f"diffgenome egress guard refused {kind} {target} under policy '{policy}'{because}."
            f" To allow it, run pytest with {hint}.",
        )

    def __reduce__(self) -> tuple[type[EgressRefused], tuple[str, str, str, str]]:
        # Pickling (pytest-xdist, multiprocessing) would otherwise call cls(message).
        return (type(self), (self.kind, self.target, self.policy, self.reason))


class _State:
    """The process-wide singleton behind the one audit hook."""

    __slots__ = ("floor", "guard", "hook_seen", "installed", "local", "lock")

    def __init__(self) -> None:
        self.guard: EgressGuard | None = None
        #: A guard that judges every network event for the rest of the process, whichever
        #: guard is active (``EgressGuard.hold``): a recorded child's, so that a recording
        #: session the child starts itself cannot loosen its parent's policy.
        self.floor: EgressGuard | None = None
        self.installed = False
        self.hook_seen = False
        self.lock = threading.Lock()
        # Per-thread re-entrancy flag: a recorder that itself touches the network must not
        # recurse into the guard.
        self.local = threading.local()


_STATE: Final = _State()


# --- connect_ex keeps its contract --------------------------------------------------------
#
# ``connect`` and ``connect_ex`` raise the same audit event, and a hook can only refuse by
# raising, which ``connect_ex`` would pass on where its callers expect an errno (a port probe
# would crash instead of reading "closed"). So while a session guards, ``socket.socket`` gets
# a ``connect_ex`` of its own that turns this guard's refusal into the errno the call
# promises. It is installed before the rootdir conftest is imported (plugin.py), so that a
# reference taken there (``socket.socket.connect_ex``) is this one too. Not reached: a
# reference to ``_socket.socket.connect_ex`` itself, or a method bound before installation
# (``probe = sock.connect_ex``); those still raise ``EgressRefused``.

# The class socket.py defines, even if ``socket.socket`` was replaced by a subclass already.
_SOCKET_CLASS: Final[Any] = next(
    cls
    for cls in _socket_module.socket.__mro__
    if cls.__module__ == "socket" and cls.__name__ == "socket"
)
_c_connect_ex = _socket.socket.connect_ex


class _ConnectEx:
    __slots__ = ("inner", "installed", "previous")

    def __init__(self) -> None:
        self.installed = False
        #: What the class defined itself before (another tool's patch), restored after.
        self.previous: object = None
        self.inner: Callable[..., int] = _c_connect_ex


_CONNECT_EX: Final = _ConnectEx()


def _connect_ex(self: object, address: object, _state: _ConnectEx = _CONNECT_EX) -> int:
    try:
        return _state.inner(self, address)
    except EgressRefused as refused:
        # Raised by the audit hook on this thread, inside this very call.
        return int(refused.errno or REFUSED_ERRNO)


_connect_ex.__name__ = "connect_ex"
_connect_ex.__qualname__ = "socket.connect_ex"
_connect_ex.__doc__ = _c_connect_ex.__doc__


def install_connect_ex() -> bool:
    """Give ``socket.socket`` the ``connect_ex`` that returns a refusal as an errno; False
    when it has it already."""
    state = _CONNECT_EX
    if state.installed:
        return False
    previous = _SOCKET_CLASS.__dict__.get("connect_ex")
    if previous is _connect_ex:
        return False
    state.previous = previous
    state.inner = previous if callable(previous) else _c_connect_ex
    _connect_ex.__wrapped__ = state.inner  # type: ignore[attr-defined]
    _SOCKET_CLASS.connect_ex = _connect_ex
    state.installed = True
    return True


def uninstall_connect_ex() -> None:
    """Put back what ``socket.socket`` had (unless someone replaced ours since)."""
    state = _CONNECT_EX
    if not state.installed:
        return
    state.installed = False
    if _SOCKET_CLASS.__dict__.get("connect_ex") is _connect_ex:
        if state.previous is None:
            delattr(_SOCKET_CLASS, "connect_ex")
        else:
            _SOCKET_CLASS.connect_ex = state.previous
    state.previous = None
    state.inner = _c_connect_ex


# Which events a guard judges in ``_on_event``.
_ALL: Final = 0
_NETWORK: Final = 1
_SPAWNS: Final = 2


def _route(
    event: str,
    args: tuple[object, ...],
    state: _State,
    _network: int = _NETWORK,
    _spawns: int = _SPAWNS,
    _all: int = _ALL,
) -> None:
    """A watched event to the held guard (network events) and the active one."""
    guard = state.guard
    floor = state.floor
    refusal = None
    if floor is not None:
        refusal = floor._on_event(event, args, _network)
    if guard is not None:
        own = guard._on_event(event, args, _spawns if guard is floor else _all, refusal)
        refusal = own or refusal
    elif event == _PROBE:
        state.hook_seen = True
    if refusal is not None:
        raise refusal


def _dispatch(
    event: str,
    args: tuple[object, ...],
    _watched: frozenset[str] = _WATCHED,
    _state: _State = _STATE,
    _route: Callable[[str, tuple[object, ...], _State], None] = _route,
) -> None:
    # Defaults instead of globals: faster, and still valid while the interpreter tears down
    # module namespaces at exit. Every audit event of the process comes through here: all
    # but the watched ones leave after one set lookup.
    if event in _watched:
        _route(event, args, _state)


@contextlib.contextmanager
def unobserved() -> Iterator[None]:
    """The recorder's own work on this thread (its writer process's start): no guard judges
    or records what it raises."""
    local = _STATE.local
    was = getattr(local, "busy", False)
    local.busy = True
    try:
        yield
    finally:
        local.busy = was


class EgressGuard:
    """One egress policy plus the recorder that receives what it sees while active."""

    def __init__(
        self,
        policy: str,
        record: Recorder,
        root: str | None = None,
        spawn: Spawner | None = None,
    ) -> None:
        """``spawn``, when given, is told of each child instead of ``record``: the program's
        identity, whether it runs Python, and the environment it is given (None: it inherits
        this process's), so that the child can be recorded (collect/children.py)."""
        if policy not in EGRESS_POLICIES:
            raise ValueError(
                f"unknown egress policy {policy!r}; expected one of {', '.join(EGRESS_POLICIES)}"
            )
        self.policy = policy
        self._allow_all = policy == "allow"
        # Under isolate the kernel holds what this guard cannot see; the guard still judges
        # (and records) as under loopback, so that genomes show the same egress.
        self._allow_loopback = policy in ("loopback", "isolate")
        self.errors = 0
        # The recorded tree: a program file inside it is known by its path and content.
        self.root = _realpath(root) if root else None
        self._record = record
        self._spawn = spawn
        self._active = False
        self._previous: EgressGuard | None = None

    @property
    def active(self) -> bool:
        return self._active

    def install(self) -> None:
        """Add the process-wide audit hook, once; RuntimeError if another hook vetoed it."""
        with _STATE.lock:
            if _STATE.installed:
                return
            _addaudithook(_dispatch)
            _audit(_PROBE)
            if not _STATE.hook_seen:
                raise RuntimeError(
                    "diffgenome: sys.addaudithook did not add the egress hook "
                    "(an existing audit hook refused it); egress is NOT guarded"
                )
            _STATE.installed = True

    def activate(self) -> None:
        """Make this guard the one the hook consults (installing the hook if needed)."""
        self.install()
        with _STATE.lock:
            if _STATE.guard is self:
                return
            self._previous = _STATE.guard
            self._active = True
            _STATE.guard = self

    def hold(self) -> None:
        """Keep judging this process's network events under this guard's policy for good,
        whatever guard is activated later (a recorded child: recording/child.py)."""
        self.activate()
        with _STATE.lock:
            _STATE.floor = self

    def deactivate(self) -> None:
        """Stop judging; the guard this one displaced, if still active, takes over again."""
        with _STATE.lock:
            self._active = False
            if _STATE.guard is not self:
                return
            previous = self._previous
            while previous is not None and not previous._active:
                previous = previous._previous
            self._previous = None
            _STATE.guard = previous

    # --- event time: called from the audit hook on the attempting thread -------------------

    def _on_event(
        self,
        event: str,
        args: tuple[object, ...],
        which: int = _ALL,
        refused: EgressRefused | None = None,
    ) -> EgressRefused | None:
        """The refusal to raise, if any; ``refused``: the floor's, which this guard records
        as refused even where its own policy allows."""
        local = _STATE.local
        if getattr(local, "busy", False):
            return None
        kind = _EVENT_KINDS.get(event)
        if kind is None:
            return None
        network = kind != OS_SUBPROCESS
        if (which == _SPAWNS and network) or (which == _NETWORK and not network):
            return None
        local.busy = True
        try:
            return self._judge(kind, event, args, refused)
        finally:
            local.busy = False

    def _judge(
        self,
        kind: str,
        event: str,
        args: tuple[object, ...],
        refused: EgressRefused | None,
    ) -> EgressRefused | None:
        if kind == OS_SUBPROCESS:
            spawned: tuple[str, list[str]] | None = None
            try:
                spawned = _spawned_program(event, args)
                if spawned is None:
                    return None
                identity, python = programs.identify(spawned[0], spawned[1], self.root)
            except Exception:
                self.errors += 1
                identity, python = "?", True
            spawn = self._spawn
            if spawn is not None:
                try:
                    arguments = spawned[1] if spawned is not None else []
                    replaces = event == "os.exec"
                    spawn(identity, python, _spawn_env(event, args), arguments, replaces)
                except Exception:
                    self.errors += 1
                return None
            self._emit(kind, identity, OUTCOME_UNTRACED if python else OUTCOME_PROGRAM)
            return None
        try:
            seen = _dns_target(event, args) if kind == OS_DNS else _socket_target(args)
        except Exception:
            self.errors += 1
            seen = ("?", _UNKNOWN)
        if seen is None:
            return None
        target, where = seen
        # Recorded without a port the kernel chose; the refusal names the real one.
        recorded = _loopback_port(target) if where == _LOOPBACK else target
        allowed = self._allow_all or (self._allow_loopback and where == _LOOPBACK)
        if allowed and refused is None:
            self._emit(kind, recorded, OUTCOME_ALLOWED)
            return None
        self._emit(kind, recorded, OUTCOME_REFUSED)
        if allowed:
            return refused
        return EgressRefused(kind, target, self.policy, _REASONS[where])

    def _emit(self, kind: str, target: str, outcome: str) -> None:
        try:
            self._record(kind, target, outcome)
        except Exception:
            self.errors += 1


# --- event-time helpers: string operations and captured references only --------------------


def _socket_target(args: tuple[object, ...]) -> tuple[str, str] | None:
    """(target, where) of connect/sendto/bind, or None when it is not egress."""
    sock, address = args[0], args[1]
    if address is None:
        return None  # sendmsg on a connected socket: its connect was judged
    try:
        family = int(_family_descriptor.__get__(sock))
    except TypeError:
        family = _NO_FAMILY  # not a _socket.socket: only a hand-made sys.audit call
    if family == _AF_UNIX:
        return None
    if family == _NO_FAMILY and isinstance(address, str | bytes | bytearray):
        return None
    if (
        family in (_AF_INET, _AF_INET6, _NO_FAMILY)
        and isinstance(address, tuple)
        and len(address) >= 2
    ):
        host = _text(address[0])
        return _join(host, _port(address[1])), _where(host)
    return f"af{family}:{_short_repr(address)}", _OTHER_FAMILY


def _dns_target(event: str, args: tuple[object, ...]) -> tuple[str, str] | None:
    """(target, where) of a lookup, or None when no name is looked up (host None or "")."""
    if event == "socket.getaddrinfo":
        host, port = args[0], args[1]
    elif event == "socket.getnameinfo":
        sockaddr = args[0]
        if not isinstance(sockaddr, tuple) or len(sockaddr) < 2:
            return "?", _UNKNOWN
        host, port = sockaddr[0], sockaddr[1]
    else:
        host, port = args[0], None
    if host is None:
        return None
    name = _text(host)
    if not name:
        return None
    return _join(name, _port(port)), _where(name)


def _where(host: str) -> str:
    name = host.lower()
    if name.endswith("."):
        name = name[:-1]
    if name == "localhost" or name.endswith(".localhost"):
        return _LOOPBACK
    if name == "":
        return _WILDCARD  # "" is INADDR_ANY / in6addr_any for connect and bind
    try:
        address = _ip_address(name)
    except ValueError:
        return _NAME  # includes "<broadcast>" and non-canonical numerics such as "127.1"
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:  # 3.12 does not call ::ffff:127.0.0.1 loopback; 3.13 does
        address = mapped
    if address.is_loopback:
        return _LOOPBACK
    if address.is_unspecified:
        return _WILDCARD
    return _ADDRESS


# A test's own server on loopback mostly listens on a port the kernel chose (``bind(("",
# 0))``): Linux takes those from 32768 up, macOS from 49152, Windows from 49152. Such a port is
# the run's, not the code's (google-auth's pytest-localserver: 15 tests on an identical tree).
# Ports below stay as they are: a fixed port is part of what the code does.
EPHEMERAL_PORTS_FROM = 32768
EPHEMERAL_PORT = "<ephemeral>"


def _loopback_port(target: str) -> str:
    host, sep, port = target.rpartition(":")
    if sep and port.isdigit() and int(port) >= EPHEMERAL_PORTS_FROM:
        return f"{host}:{EPHEMERAL_PORT}"
    return target


def _join(host: str, port: str | None) -> str:
    if port is None:
        return host
    if ":" in host:
        return f"[{host}]:{port}"
    return f"{host}:{port}"


def _port(port: object) -> str | None:
    if port is None:
        return None
    if isinstance(port, int):
        return str(int(port))
    return _text(port)


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return "?"


def _short_repr(value: object) -> str:
    try:
        return repr(value)[:80]
    except Exception:
        return "?"


def _spawned_program(event: str, args: tuple[object, ...]) -> tuple[str, list[str]] | None:
    """The program a spawn event starts (as given) and its further arguments, or None when
    the event starts none."""
    program: object
    rest: list[str] = []
    if event == "subprocess.Popen":
        executable, argv = args[0], args[1]
        words = _words(argv)
        program = executable if executable is not None else (words[0] if words else None)
        rest = words[1:]
    elif event == "os.system":
        words = _words(args[0])
        program, rest = (words[0], words[1:]) if words else (None, [])
    elif event == "os.spawn":
        program = args[1]
        rest = _words(args[2])[1:] if len(args) > 2 else []
    elif event == "os.fork":
        frame = _caller_frame()
        if frame is None or not _is_frame_of(frame, "os", "_spawnvef"):
            return None  # a plain fork: the child runs this process's code, guard included
        program = frame.f_locals.get("file")
    elif event == "os.posix_spawn":
        frame = _caller_frame()
        if frame is not None and _is_frame_of(frame, "subprocess", "_posix_spawn"):
            return None  # 3.13 Popen spawns this way: already recorded at subprocess.Popen
        program = args[0]
        rest = _words(args[1])[1:] if len(args) > 1 else []
    else:  # os.exec, os.startfile
        program = args[0]
        rest = _words(args[1])[1:] if event == "os.exec" and len(args) > 1 else []
    text = _path_text(program) if program is not None else ""
    return (text or "?"), rest


def _spawn_env(event: str, args: tuple[object, ...]) -> object:
    """The environment a spawn event gives its child: None when it inherits this process's
    (``os.system``, ``Popen(env=None)``, ``execv``, ``os.spawnv``)."""
    if event == "subprocess.Popen":
        return args[3] if len(args) > 3 else None
    if event in ("os.posix_spawn", "os.exec"):
        return args[2] if len(args) > 2 else None
    return None


def _words(argv: object) -> list[str]:
    """An argument vector as strings; a shell command line split on blanks, leading
    ``VAR=value`` assignments skipped."""
    if isinstance(argv, str | bytes):
        words = _text(argv).split()
        while words and "=" in words[0] and not words[0].startswith(("/", ".")):
            words.pop(0)
        return words
    if isinstance(argv, list | tuple):
        return [_path_text(a) for a in argv]
    return []


def _path_text(value: object) -> str:
    if isinstance(value, _PathLike):
        value = _fspath(value)
    return _text(value)


def _caller_frame() -> FrameType | None:
    """The Python frame that made the audited call (the first frame outside this module)."""
    frame: FrameType | None = _getframe(1)
    while frame is not None and frame.f_globals is _OWN_GLOBALS:
        frame = frame.f_back
    return frame


def _is_frame_of(frame: FrameType, module: str, function: str) -> bool:
    return frame.f_code.co_name == function and frame.f_globals.get("__name__") == module
