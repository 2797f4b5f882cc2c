import socket
import threading

import pytest

from lab import net


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    yield server.getsockname()[1]
    server.close()


def test_loopback_connect(listener):
    assert net.try_ping(listener) == "ok"


def test_closed_port():
    assert net.try_raw(9) in ("ok", "ConnectionRefusedError", "EgressRefused")


def test_dns_refused():
    with pytest.raises(PermissionError) as info:
        net.resolve("nothing.invalid")
    assert type(info.value) is not PermissionError


def test_subprocess():
    assert net.run_child() == 0
