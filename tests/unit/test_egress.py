"""The egress guard against real sockets on loopback: nothing here is mocked.

A refused attempt must never reach the kernel. The tests prove it with a listener that notes
the peer of every accepted connection (and a UDP receiver that keeps every datagram): after
the refused attempts, the guard is deactivated and one sentinel is sent; the sentinel must be
the only thing that ever arrived.
"""

from __future__ import annotations

import _socket
import asyncio
import errno
import http.client
import os
import pickle
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from diffgenome.recording.collect.egress import (
    OUTCOME_ALLOWED,
    OUTCOME_PROGRAM,
    OUTCOME_REFUSED,
    OUTCOME_UNTRACED,
    EgressGuard,
    EgressRefused,
    install_connect_ex,
    uninstall_connect_ex,
)

# Taken at import, before any guard exists: the guard must see calls made through them too.
CAPTURED_CONNECT = socket.socket.connect
CAPTURED_C_CONNECT = _socket.socket.connect

Record = tuple[str, str, str]
WAIT = 10.0  # an upper bound so a broken guard fails instead of hanging; never asserted on

HAS_UNIX = hasattr(socket, "AF_UNIX")


@contextmanager
def guarding(
    policy: str, record: Callable[[str, str, str], None] | None = None
) -> Iterator[tuple[EgressGuard, list[Record]]]:
    records: list[Record] = []

    def keep(kind: str, target: str, outcome: str) -> None:
        records.append((kind, target, outcome))

    guard = EgressGuard(policy, record or keep)
    guard.activate()
    try:
        yield guard, records
    finally:
        guard.deactivate()


class TcpListener:
    """A loopback TCP server that notes every accepted peer and answers HTTP with "ok"."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)  # lets the accept loop notice close()
        self.port: int = self.sock.getsockname()[1]
        self.peers: list[tuple[str, int]] = []
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._changed:
                self.peers.append(peer)
                self._changed.notify_all()
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def _answer(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(WAIT)
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            except OSError:
                pass

    def wait_for(self, count: int) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.peers) >= count, timeout=WAIT)

    def peers_until_sentinel(self) -> list[tuple[str, int]]:
        """Connect once more (unguarded) and return every peer seen up to that sentinel."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=WAIT) as sentinel:
            mine = sentinel.getsockname()
            with self._changed:
                assert self._changed.wait_for(lambda: mine in self.peers, timeout=WAIT)
                return list(self.peers)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(WAIT)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[TcpListener]:
    server = TcpListener()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    # urllib would send requests to an environment proxy instead of the listener.
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setenv("NO_PROXY", "*")


# --- the TCP attempts, each run under block and under loopback ----------------------------


def _create_connection(port: int) -> None:
    socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()


def _sock_connect(port: int) -> None:
    with socket.socket() as sock:
        sock.settimeout(WAIT)
        sock.connect(("127.0.0.1", port))


def _captured_connect(port: int) -> None:
    with socket.socket() as sock:
        CAPTURED_CONNECT(sock, ("127.0.0.1", port))


def _c_level_connect(port: int) -> None:
    with socket.socket() as sock:
        CAPTURED_C_CONNECT(sock, ("127.0.0.1", port))


def _connect_ex(port: int) -> None:
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) == 0


def _http_client(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        conn.request("GET", "/")
        assert conn.getresponse().read() == b"ok"
    finally:
        conn.close()


def _urlopen(port: int) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=WAIT) as response:
        assert response.read() == b"ok"


@dataclass(frozen=True)
class Attempt:
    run: Callable[[int], None]
    kinds: tuple[str, ...]  # what the guard sees, in order: a name lookup comes first
    wrapped: bool = False  # urllib wraps the OSError in URLError


ATTEMPTS = {
    "create_connection": Attempt(_create_connection, ("dns", "connect")),
    "sock.connect": Attempt(_sock_connect, ("connect",)),
    "captured socket.socket.connect": Attempt(_captured_connect, ("connect",)),
    "captured _socket.socket.connect": Attempt(_c_level_connect, ("connect",)),
    "connect_ex": Attempt(_connect_ex, ("connect",)),
    "http.client": Attempt(_http_client, ("dns", "connect")),
    "urlopen": Attempt(_urlopen, ("dns", "connect"), wrapped=True),
}


def _refusal_of(attempt: Attempt, port: int) -> EgressRefused:
    if attempt.wrapped:
        with pytest.raises(urllib.error.URLError) as wrapped:
            attempt.run(port)
        assert isinstance(wrapped.value.reason, EgressRefused)
        return wrapped.value.reason
    with pytest.raises(EgressRefused) as refused:
        attempt.run(port)
    return refused.value


def shown(port: int) -> str:
    """A loopback port as recorded: one the kernel chose (from 32768 up) is ``<ephemeral>``."""
    return "<ephemeral>" if port >= 32768 else str(port)


@pytest.mark.parametrize("name", ATTEMPTS)
def test_block_refuses_loopback_tcp_before_it_connects(name: str, listener: TcpListener) -> None:
    attempt = ATTEMPTS[name]
    target = f"127.0.0.1:{listener.port}"
    with guarding("block") as (_, records):
        refusal = _refusal_of(attempt, listener.port)
    recorded = f"127.0.0.1:{shown(listener.port)}"
    assert records == [(attempt.kinds[0], recorded, OUTCOME_REFUSED)]
    assert (refusal.kind, refusal.target, refusal.policy) == (attempt.kinds[0], target, "block")
    assert "--genome-egress=loopback" in str(refusal)
    assert len(listener.peers_until_sentinel()) == 1  # only the sentinel ever connected


@pytest.mark.parametrize("name", ATTEMPTS)
def test_loopback_allows_and_records_loopback_tcp(name: str, listener: TcpListener) -> None:
    attempt = ATTEMPTS[name]
    target = f"127.0.0.1:{shown(listener.port)}"
    with guarding("loopback") as (_, records):
        attempt.run(listener.port)
    assert records == [(kind, target, OUTCOME_ALLOWED) for kind in attempt.kinds]
    assert listener.wait_for(1)


@pytest.mark.parametrize("policy", ["block", "loopback"])
def test_udp_sendto_refused_under_block_and_allowed_on_loopback(policy: str) -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender,
    ):
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(WAIT)
        address = receiver.getsockname()
        target = f"127.0.0.1:{shown(address[1])}"
        with guarding(policy) as (_, records):
            if policy == "block":
                with pytest.raises(EgressRefused):
                    sender.sendto(b"probe", address)
                with pytest.raises(EgressRefused):
                    sender.sendmsg([b"probe"], [], 0, address)
            else:
                sender.sendto(b"probe", address)
                sender.sendmsg([b"probe"], [], 0, address)
        sender.sendto(b"sentinel", address)
        received: list[bytes] = []
        while not received or received[-1] != b"sentinel":
            received.append(receiver.recv(64))
    outcome = OUTCOME_REFUSED if policy == "block" else OUTCOME_ALLOWED
    assert records == [("sendto", target, outcome)] * 2
    assert received == ([b"sentinel"] if policy == "block" else [b"probe", b"probe", b"sentinel"])


# --- what is not loopback -------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["block", "loopback"])
def test_non_loopback_addresses_are_refused_before_any_packet(policy: str) -> None:
    # 192.0.2.0/24 and 2001:db8::/32 are documentation ranges: even if the guard failed open,
    # nothing would answer. The refusal comes from the hook, not from the network.
    with guarding(policy) as (_, records):
        with socket.socket() as sock, pytest.raises(EgressRefused) as refused:
            sock.connect(("192.0.2.1", 80))
        with pytest.raises(EgressRefused):
            socket.create_connection(("192.0.2.1", 80))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, pytest.raises(EgressRefused):
            udp.sendto(b"x", ("192.0.2.1", 53))
    assert records == [
        ("connect", "192.0.2.1:80", OUTCOME_REFUSED),
        ("dns", "192.0.2.1:80", OUTCOME_REFUSED),
        ("sendto", "192.0.2.1:53", OUTCOME_REFUSED),
    ]
    assert "--genome-egress=allow" in str(refused.value)
    assert f"'{policy}'" in str(refused.value)


def test_ipv6_targets_are_bracketed() -> None:
    try:
        sock = socket.socket(socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 sockets here")
    with guarding("loopback") as (_, records), sock, pytest.raises(EgressRefused):
        sock.connect(("2001:db8::1", 80, 0, 0))
    assert records == [("connect", "[2001:db8::1]:80", OUTCOME_REFUSED)]


@pytest.mark.parametrize("policy", ["block", "loopback"])
def test_names_are_refused_before_the_resolver_is_asked(policy: str) -> None:
    # A resolver would answer gaierror for .invalid; EgressRefused means it was never asked.
    with guarding(policy) as (_, records):
        with pytest.raises(EgressRefused):
            socket.getaddrinfo("nothing.invalid", 80)
        with pytest.raises(EgressRefused):
            socket.gethostbyname("nothing.invalid")
        with pytest.raises(EgressRefused):
            socket.gethostbyname_ex("nothing.invalid")
        with pytest.raises(EgressRefused):
            socket.create_connection(("nothing.invalid", 80))
        with pytest.raises(EgressRefused):
            socket.gethostbyaddr("nothing.invalid")
    assert records == [
        ("dns", "nothing.invalid:80", OUTCOME_REFUSED),
        ("dns", "nothing.invalid", OUTCOME_REFUSED),
        ("dns", "nothing.invalid", OUTCOME_REFUSED),
        ("dns", "nothing.invalid:80", OUTCOME_REFUSED),
        ("dns", "nothing.invalid", OUTCOME_REFUSED),
    ]
    # Not tested with sock.connect(("nothing.invalid", 80)): _socket resolves a name passed
    # straight to connect before it raises the audit event (a documented limit), so that test
    # would send a real DNS query.


def test_a_name_in_connect_is_judged_as_written(listener: TcpListener) -> None:
    # "localhost" resolves from the hosts file; the connect is judged by the name, not the IP.
    with guarding("block") as (_, records), socket.socket() as sock, pytest.raises(EgressRefused):
        sock.connect(("localhost", listener.port))
    assert records == [("connect", f"localhost:{shown(listener.port)}", OUTCOME_REFUSED)]
    assert len(listener.peers_until_sentinel()) == 1


def test_localhost_names_resolve_under_loopback_but_not_under_block() -> None:
    with guarding("loopback") as (_, records):
        assert socket.getaddrinfo("localhost", 8080, type=socket.SOCK_STREAM)
        # Numeric: no resolver. IPv4-mapped loopback is loopback on 3.12 as on 3.13.
        assert socket.getaddrinfo("::ffff:127.0.0.1", 80, socket.AF_INET6)
    assert records == [
        ("dns", "localhost:8080", OUTCOME_ALLOWED),
        ("dns", "[::ffff:127.0.0.1]:80", OUTCOME_ALLOWED),
    ]
    with guarding("block") as (_, records), pytest.raises(EgressRefused) as refused:
        socket.getaddrinfo("localhost", 8080)
    assert records == [("dns", "localhost:8080", OUTCOME_REFUSED)]
    assert "--genome-egress=loopback" in str(refused.value)


def test_allow_records_without_refusing(listener: TcpListener) -> None:
    with guarding("allow") as (guard, records):
        # Numeric lookup of a documentation address: recorded, and no resolver is involved.
        assert socket.getaddrinfo("192.0.2.1", 80, socket.AF_INET)
        _create_connection(listener.port)
        with socket.socket() as wildcard:
            wildcard.bind(("0.0.0.0", 0))
    port = listener.port
    assert records == [
        ("dns", "192.0.2.1:80", OUTCOME_ALLOWED),
        ("dns", f"127.0.0.1:{shown(port)}", OUTCOME_ALLOWED),
        ("connect", f"127.0.0.1:{shown(port)}", OUTCOME_ALLOWED),
        ("bind", "0.0.0.0:0", OUTCOME_ALLOWED),
    ]
    assert listener.wait_for(1)
    assert guard.errors == 0


# --- bind ----------------------------------------------------------------------------------


def test_bind_loopback_allowed_except_under_block_and_wildcard_refused() -> None:
    with guarding("loopback") as (_, records):
        with socket.create_server(("127.0.0.1", 0)) as server:
            server_port = server.getsockname()[1]
        for wildcard in ("0.0.0.0", ""):
            with socket.socket() as sock, pytest.raises(EgressRefused):
                sock.bind((wildcard, 0))
    assert records == [
        ("bind", "127.0.0.1:0", OUTCOME_ALLOWED),
        ("bind", "0.0.0.0:0", OUTCOME_REFUSED),
        ("bind", ":0", OUTCOME_REFUSED),
    ]
    assert server_port > 0
    with guarding("block") as (_, records):
        with socket.socket() as sock, pytest.raises(EgressRefused):
            sock.bind(("127.0.0.1", 0))
        # create_server rebuilds the OSError from errno and strerror: the reason must survive.
        with pytest.raises(OSError, match=r"egress guard refused bind 127\.0\.0\.1:0") as rebuilt:
            socket.create_server(("127.0.0.1", 0))
    assert rebuilt.value.errno == errno.EACCES
    assert records == [("bind", "127.0.0.1:0", OUTCOME_REFUSED)] * 2


# --- what is not egress ---------------------------------------------------------------------


@pytest.mark.skipif(not HAS_UNIX, reason="AF_UNIX needed")
@pytest.mark.parametrize("policy", ["block", "loopback", "allow"])
def test_unix_sockets_work_and_are_not_recorded(policy: str) -> None:
    async def ticks() -> int:
        await asyncio.sleep(0)
        return 3

    with tempfile.TemporaryDirectory() as folder, guarding(policy) as (guard, records):
        left, right = socket.socketpair()
        with left, right:
            left.sendall(b"pair")
            assert right.recv(4) == b"pair"

        path = folder + "/stream"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(path)
            server.listen(1)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(path)
                conn, _ = server.accept()
                with conn:
                    client.sendall(b"unix")
                    assert conn.recv(4) == b"unix"

        with (
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as inbox,
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as outbox,
        ):
            inbox.bind(folder + "/dgram")
            outbox.sendto(b"gram", folder + "/dgram")
            assert inbox.recv(4) == b"gram"

        assert asyncio.run(ticks()) == 3  # the event loop's self-pipe is a socketpair
    assert records == []
    assert guard.errors == 0


# --- subprocesses -----------------------------------------------------------------------------


def test_subprocesses_are_recorded_as_untraced_and_never_refused() -> None:
    python = os.path.basename(sys.executable)
    with guarding("block") as (_, records):
        assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0
        assert subprocess.run("exit 0", shell=True, check=False).returncode == 0
        assert os.system(f"{shlex.quote(sys.executable)} -c pass") == 0
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], dict(os.environ))
        assert os.waitpid(pid, 0)[1] == 0
    # Exactly one record each: on 3.13 Popen also raises os.posix_spawn, which must not count.
    assert records == [
        ("subprocess", python, OUTCOME_UNTRACED),
        ("subprocess", "sh", OUTCOME_PROGRAM),  # a shell command line that runs no Python
        ("subprocess", python, OUTCOME_UNTRACED),
        ("subprocess", python, OUTCOME_UNTRACED),
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX os.spawn* is fork+exec in Python")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() in a threaded process
def test_posix_os_spawn_is_recorded_through_its_fork() -> None:
    with guarding("block") as (_, records):
        assert os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-c", "pass"]) == 0
    assert records == [("subprocess", os.path.basename(sys.executable), OUTCOME_UNTRACED)]


# --- lifecycle and robustness ----------------------------------------------------------------


def test_after_deactivate_nothing_is_recorded_or_refused(listener: TcpListener) -> None:
    records: list[Record] = []
    guard = EgressGuard("block", lambda *seen: records.append(seen))
    guard.activate()
    guard.deactivate()
    _create_connection(listener.port)
    with pytest.raises(OSError) as unguarded:  # reaches the kernel: nothing listens on port 1
        _sock_connect(1)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert not isinstance(unguarded.value, EgressRefused)
    assert records == []
    assert listener.wait_for(1)
    assert not guard.active


def test_nested_guard_restores_the_one_it_displaced(listener: TcpListener) -> None:
    with guarding("block") as (outer, outer_records):
        with guarding("allow") as (_, inner_records):
            _sock_connect(listener.port)
        with pytest.raises(EgressRefused):
            _sock_connect(listener.port)
    target = f"127.0.0.1:{shown(listener.port)}"
    assert inner_records == [("connect", target, OUTCOME_ALLOWED)]
    assert outer_records == [("connect", target, OUTCOME_REFUSED)]
    assert not outer.active


def test_install_is_idempotent(listener: TcpListener) -> None:
    records: list[Record] = []
    guard = EgressGuard("loopback", lambda *seen: records.append(seen))
    for _ in range(3):
        guard.install()
        EgressGuard("allow", lambda *seen: None).install()
    guard.activate()
    guard.activate()
    try:
        _sock_connect(listener.port)
    finally:
        guard.deactivate()
    assert records == [
        ("connect", f"127.0.0.1:{shown(listener.port)}", OUTCOME_ALLOWED)
    ]  # one hook


def test_recorder_runs_on_the_thread_that_made_the_attempt(listener: TcpListener) -> None:
    seen_on: list[int] = []
    raised: list[BaseException] = []

    def attempt() -> None:
        try:
            _sock_connect(listener.port)
        except BaseException as error:
            raised.append(error)

    with guarding("block", lambda *_: seen_on.append(threading.get_ident())):
        worker = threading.Thread(target=attempt)
        worker.start()
        worker.join(WAIT)
    assert seen_on == [worker.ident]
    assert len(raised) == 1
    assert isinstance(raised[0], EgressRefused)


def test_a_failing_recorder_is_counted_and_does_not_change_the_verdict(
    listener: TcpListener,
) -> None:
    def broken(kind: str, target: str, outcome: str) -> None:
        raise ValueError("recorder bug")

    with guarding("allow", broken) as (guard, _):
        _sock_connect(listener.port)
    assert guard.errors == 1
    assert listener.wait_for(1)
    with guarding("block", broken) as (guard, _), pytest.raises(EgressRefused):
        _sock_connect(listener.port)
    assert guard.errors == 1


def test_internal_errors_are_counted_and_fail_closed() -> None:
    with guarding("allow") as (guard, records):
        sys.audit("socket.connect")  # malformed: no socket, no address
        sys.audit("subprocess.Popen")
    assert guard.errors == 2
    assert records == [("connect", "?", OUTCOME_ALLOWED), ("subprocess", "?", OUTCOME_UNTRACED)]
    with guarding("loopback") as (guard, records), pytest.raises(EgressRefused):
        sys.audit("socket.connect")
    assert guard.errors == 1
    assert records == [("connect", "?", OUTCOME_REFUSED)]


def test_unknown_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown egress policy"):
        EgressGuard("deny", lambda *_: None)


def test_refusal_survives_pickling() -> None:
    refusal = EgressRefused("connect", "192.0.2.1:80", "loopback", "not a loopback address")
    copy = pickle.loads(pickle.dumps(refusal))
    assert isinstance(copy, EgressRefused)
    assert (copy.kind, copy.target, copy.policy, str(copy)) == (
        "connect",
        "192.0.2.1:80",
        "loopback",
        str(refusal),
    )


# --- connect_ex keeps its contract (#30) ---------------------------------------------------


@pytest.fixture
def connect_ex_contract() -> Iterator[None]:
    assert install_connect_ex()
    try:
        yield
    finally:
        uninstall_connect_ex()
    assert "connect_ex" not in socket.socket.__dict__


@pytest.mark.usefixtures("connect_ex_contract")
@pytest.mark.parametrize(
    ("policy", "host"),
    [("block", "127.0.0.1"), ("loopback", "192.0.2.1"), ("isolate", "192.0.2.1")],
)
def test_connect_ex_answers_a_refusal_with_an_errno(
    policy: str, host: str, listener: TcpListener
) -> None:
    """As the call's own contract says: an errno (EACCES), no exception; ``connect`` on the
    same kind of socket still raises ``EgressRefused``, an OSError."""
    port = listener.port if host == "127.0.0.1" else 80
    with guarding(policy) as (_, records):
        with socket.socket() as sock:
            assert sock.connect_ex((host, port)) == errno.EACCES
        with socket.socket() as sock, pytest.raises(EgressRefused) as refused:
            sock.connect((host, port))
    assert isinstance(refused.value, OSError)
    assert refused.value.errno == errno.EACCES
    assert [outcome for _, _, outcome in records] == [OUTCOME_REFUSED, OUTCOME_REFUSED]
    assert len(listener.peers_until_sentinel()) == 1


@pytest.mark.usefixtures("connect_ex_contract")
def test_connect_ex_that_is_allowed_is_the_c_call(listener: TcpListener) -> None:
    closed = _free_port()
    with guarding("loopback") as (_, records):
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", listener.port)) == 0
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", closed)) == errno.ECONNREFUSED
    assert [outcome for _, _, outcome in records] == [OUTCOME_ALLOWED, OUTCOME_ALLOWED]
    assert listener.wait_for(1)


@pytest.mark.usefixtures("connect_ex_contract")
def test_ssl_connect_ex_goes_through_the_contract(listener: TcpListener) -> None:
    import ssl

    context = ssl.create_default_context()
    wrapped = context.wrap_socket(socket.socket(), server_hostname="example.invalid")
    with guarding("block"), wrapped as sock:
        assert sock.connect_ex(("127.0.0.1", listener.port)) == errno.EACCES
    assert len(listener.peers_until_sentinel()) == 1


@pytest.mark.usefixtures("connect_ex_contract")
def test_asyncio_and_create_connection_still_raise_an_oserror(listener: TcpListener) -> None:
    """``loop.sock_connect`` (a non-blocking ``connect``), ``asyncio.open_connection`` and
    ``socket.create_connection`` keep raising: the contract of ``connect``."""

    async def sock_connect() -> None:
        loop = asyncio.get_running_loop()
        with socket.socket() as sock:
            sock.setblocking(False)
            await loop.sock_connect(sock, ("127.0.0.1", listener.port))

    async def open_connection() -> None:
        await asyncio.open_connection("127.0.0.1", listener.port)

    with guarding("block"):
        with pytest.raises(EgressRefused):
            asyncio.run(sock_connect())
        with pytest.raises(OSError):
            asyncio.run(open_connection())
        with pytest.raises(EgressRefused):
            socket.create_connection(("127.0.0.1", listener.port), timeout=WAIT)
    assert len(listener.peers_until_sentinel()) == 1


def test_connect_ex_contract_keeps_an_earlier_patch_and_restores_it() -> None:
    calls: list[object] = []

    def patched(self: socket.socket, address: object) -> int:
        calls.append(address)
        return int(_socket.socket.connect_ex(self, address))

    socket.socket.connect_ex = patched  # type: ignore[method-assign]
    try:
        assert install_connect_ex()
        assert not install_connect_ex()  # once
        with guarding("block"), socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", 9)) == errno.EACCES
        assert calls == [("127.0.0.1", 9)]
        uninstall_connect_ex()
        assert socket.socket.__dict__["connect_ex"] is patched
    finally:
        del socket.socket.connect_ex


def test_isolate_judges_as_loopback(listener: TcpListener) -> None:
    """Under isolate the namespace holds at the kernel; the guard on top judges and records
    as under loopback, so that genomes show the same egress."""
    with guarding("isolate") as (_, records):
        _sock_connect(listener.port)
        with socket.socket() as sock, pytest.raises(EgressRefused) as refused:
            sock.connect(("192.0.2.1", 80))
    assert records == [
        ("connect", f"127.0.0.1:{shown(listener.port)}", OUTCOME_ALLOWED),
        ("connect", "192.0.2.1:80", OUTCOME_REFUSED),
    ]
    assert (refused.value.policy, refused.value.reason) == ("isolate", "not a loopback address")
    assert "--genome-egress=allow" in str(refused.value)
    assert listener.wait_for(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_held_guard_judges_under_any_guard_activated_later(listener: TcpListener) -> None:
    """A recorded child holds its parent's policy: a recording session it starts itself
    (another guard, looser) cannot let a connection out, and records it as refused."""
    from diffgenome.recording.collect import egress

    floor_records: list[Record] = []
    floor = EgressGuard("block", lambda *r: floor_records.append(r))
    try:
        floor.hold()
        with guarding("allow") as (_, records):
            with socket.socket() as sock, pytest.raises(EgressRefused) as refused:
                sock.connect(("127.0.0.1", listener.port))
            subprocess.run([sys.executable, "-c", "pass"], check=True)
    finally:
        egress._STATE.floor = None
        floor.deactivate()
    target = f"127.0.0.1:{shown(listener.port)}"
    assert refused.value.policy == "block"
    assert floor_records == [("connect", target, OUTCOME_REFUSED)]  # no spawn: not its own
    assert records == [
        ("connect", target, OUTCOME_REFUSED),
        ("subprocess", "python", OUTCOME_UNTRACED),
    ]
    assert len(listener.peers_until_sentinel()) == 1
