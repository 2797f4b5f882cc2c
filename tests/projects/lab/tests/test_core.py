import sys
import threading
import unittest
from pathlib import Path
from unittest import mock

import pytest

from lab import aio, calls, decisions, flow

MODULE_CONSTANT = calls.leaf(0)


@pytest.fixture
def resource():
    value = calls.leaf(10)
    yield value
    calls.via_a()


def test_fixture_phases(resource):
    assert calls.via_b() == 3


def test_loop():
    assert calls.loop(100000) == 100000


def test_paths():
    calls.via_a()
    calls.via_b()


def test_exits():
    assert calls.fail(1) == 1
    with pytest.raises(ValueError):
        calls.fail(-1)


def test_secret():
    assert calls.secret("hunter2-secret-XYZ", 987654321987654321) >= 0


def test_same_twice():
    calls.secret("abc", 1)
    calls.secret("abc", 1)
    calls.secret("abd", 1)


def test_stdlib_not_recorded():
    assert calls.encode(1) == '{"value": 1}'


def test_venv_not_recorded():
    sys.path.insert(0, str(Path(__file__).parent.parent / "myenv"))
    try:
        import venvmod
    finally:
        sys.path.pop(0)
    assert venvmod.inside_venv() == 42


def test_decisions():
    assert [decisions.classify(n) for n in (-1, 0, 1, 2)] == ["neg", "zero", "pos", "pos"]
    assert decisions.countdown(3) == 0
    assert [decisions.parity(n) for n in range(5)] == ["even", "odd", "even", "odd", "even"]
    assert decisions.evens(range(5)) == [0, 2, 4]
    assert [decisions.command(c) for c in ("go", "stop", "x", "go")] == [1, 2, 0, 1]
    assert decisions.checked(1) == 1
    assert decisions.checked(2) == 2
    with pytest.raises(AssertionError):
        decisions.checked(-1)


def test_patched_naming():
    with (
        mock.patch("os.path.join", lambda *parts: "BROKEN"),
        mock.patch("builtins.open", side_effect=OSError("patched open")),
    ):
        from lab import late

        assert late.build("a", "b") == "BROKEN"
        assert late.read("anything") is None


def test_thread_work():
    assert flow.spawn() == [42]


LEAKED = threading.Event()
SECOND = threading.Event()
THREADS = []


def test_thread_outlives():
    THREADS.append(flow.leak(LEAKED))


def test_thread_swapped():
    """One leaked thread ends and another starts: as many threads after as before."""
    LEAKED.set()
    for thread in THREADS:
        thread.join()
    flow.leak(SECOND)


def test_thread_released():
    SECOND.set()


def test_generator_consumer():
    gen = flow.make()
    assert flow.consume(gen) == 3


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    calls.leaf(n)


class TestLegacy(unittest.TestCase):
    def test_method(self):
        self.assertEqual(calls.leaf(1), 2)


@pytest.mark.asyncio
async def test_asyncio():
    assert await aio.fetch(2) == 4


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_anyio():
    assert await aio.fetch(3) == 6
