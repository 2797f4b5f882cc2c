"""Small example projects for the settings no real suite of the benchmark exercises.

Each one is written by the harness into a fresh git repository (as ``tests/projects/`` are
for the end-to-end tests) and run with the harness's own interpreter, which has diffgenome
and the plugins of its ``test`` extras installed. ``expect`` names the outcome each test must
have in *both* modes: it proves the example really exercises the setting (a timeout that did
not fire, a socket guard that did not refuse, would make the row meaningless).
"""

from __future__ import annotations

import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Example:
    name: str
    files: dict[str, str]
    # test node id suffix -> outcome it must have with and without --genome
    expect: dict[str, str] = field(default_factory=dict)
    # test node id suffix -> an unverified reason (prefix) its genome must carry: a conflict
    # the recorder detects and discloses instead of recording something wrong
    disclosed: dict[str, str] = field(default_factory=dict)


PKG = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        import datetime
        import time


        def step(n):
            if n > 0:
                return n - 1
            return 0


        def depth(n):
            if n <= 0:
                return 0
            return 1 + depth(n - 1)


        def stamp():
            return datetime.datetime.now().year, int(time.time())
    """,
}
INI = """
    [pytest]
    asyncio_default_fixture_loop_scope = function
"""


def _ex(name: str, tests: str, ini: str = INI, **kw: dict[str, str]) -> Example:
    files = {**PKG, "pytest.ini": ini, "tests/test_it.py": tests}
    return Example(name=name, files=files, **kw)  # type: ignore[arg-type]


EXAMPLES: dict[str, Example] = {}


def _add(example: Example) -> None:
    EXAMPLES[example.name] = example


_add(
    _ex(
        "basic",
        """
        import pytest
        from pkg.core import step


        def test_pass():
            assert step(2) == 1


        def test_fail():
            assert step(0) == 1


        @pytest.mark.skip(reason="because")
        def test_skip():
            pass


        @pytest.mark.xfail(strict=True)
        def test_xfail():
            assert step(1) == 5
        """,
        expect={
            "test_pass": "passed",
            "test_fail": "failed",
            "test_skip": "skipped",
            "test_xfail": "xfailed",
        },
    )
)

_add(
    _ex(
        "strict-ini-keys",
        """
        import pytest
        from pkg.core import step


        @pytest.mark.fast
        def test_marked():
            assert step(2) == 1
        """,
        ini="""
        [pytest]
        asyncio_default_fixture_loop_scope = function
        markers =
            fast: a registered marker
        genome_egress = loopback
        genome_source_roots = pkg
        genome_max_nodes = 100000
        """,
        expect={"test_marked": "passed"},
    )
)

_add(
    _ex(
        "timeout-signal",
        """
        import time

        import pytest
        from pkg.core import step


        def test_in_time():
            assert step(2) == 1


        @pytest.mark.timeout(1, method="signal")
        def test_too_slow():
            while True:
                step(3)
                time.sleep(0.01)


        def test_after():
            assert step(1) == 0
        """,
        expect={"test_in_time": "passed", "test_too_slow": "failed", "test_after": "passed"},
    )
)

_add(
    _ex(
        "timeout-thread",
        """
        import time

        import pytest
        from pkg.core import step


        @pytest.mark.timeout(30, method="thread")
        def test_in_time():
            assert step(2) == 1


        @pytest.mark.timeout(30, method="thread")
        def test_sleeps_a_little():
            time.sleep(0.2)
            assert step(1) == 0
        """,
        expect={"test_in_time": "passed", "test_sleeps_a_little": "passed"},
    )
)

# The thread method ends the whole process with os._exit when a test overruns: the tests
# before it must have their outcome and genome, the run reads as unfinished.
_add(
    _ex(
        "timeout-thread-fires",
        """
        import time

        import pytest
        from pkg.core import step


        def test_a_first():
            assert step(2) == 1


        @pytest.mark.timeout(1, method="thread")
        def test_b_hangs():
            while True:
                time.sleep(0.05)
        """,
        expect={"test_a_first": "passed"},
    )
)

_add(
    _ex(
        "rerunfailures",
        """
        import os
        import pathlib

        import pytest
        from pkg.core import step

        MARK = pathlib.Path(os.environ.get("COMPAT_TMP", ".")) / "flaky-count"


        @pytest.mark.flaky(reruns=2)
        def test_flaky_passes_second_time():
            n = int(MARK.read_text()) if MARK.exists() else 0
            MARK.write_text(str(n + 1))
            assert step(2) == 1
            assert n % 2 == 1, "fails on the first attempt of each session"


        @pytest.mark.flaky(reruns=1)
        def test_always_fails():
            assert step(0) == 1


        def test_plain():
            assert step(3) == 2
        """,
        expect={
            "test_flaky_passes_second_time": "passed",
            "test_always_fails": "failed",
            "test_plain": "passed",
        },
    )
)

_add(
    _ex(
        "asyncio-anyio",
        """
        import asyncio

        import pytest
        from pkg.core import step


        async def astep(n):
            await asyncio.sleep(0)
            return step(n)


        @pytest.mark.asyncio
        async def test_asyncio():
            assert await astep(2) == 1


        @pytest.mark.asyncio
        async def test_asyncio_tasks():
            results = await asyncio.gather(*(astep(i) for i in range(3)))
            assert results == [0, 0, 1]


        @pytest.mark.anyio
        async def test_anyio():
            assert await astep(1) == 0


        @pytest.fixture
        def anyio_backend():
            return "asyncio"
        """,
        expect={"test_asyncio": "passed", "test_asyncio_tasks": "passed", "test_anyio": "passed"},
    )
)

_add(
    _ex(
        "hypothesis-database",
        """
        from hypothesis import given, settings, strategies as st
        from pkg.core import step


        @settings(deadline=None)
        @given(st.integers(min_value=0, max_value=1000))
        def test_holds(n):
            assert step(n) <= n


        @settings(deadline=None)
        @given(st.integers(min_value=0, max_value=1000))
        def test_found_and_replayed(n):
            # Hypothesis finds 500, saves it in its database and replays it first next time.
            assert step(n) < 499
        """,
        expect={"test_holds": "passed", "test_found_and_replayed": "failed"},
    )
)

_add(
    _ex(
        "freezegun",
        """
        import datetime
        import time

        from freezegun import freeze_time
        from pkg.core import stamp, step


        @freeze_time("2001-02-03 04:05:06")
        def test_frozen():
            assert stamp() == (2001, 981173106)
            assert step(1) == 0


        def test_ticking():
            with freeze_time("2010-01-01", tick=True):
                first = time.time()
                step(5)
                assert time.time() >= first
                assert datetime.datetime.now().year == 2010


        def test_moved():
            with freeze_time("2020-01-01") as frozen:
                frozen.tick(datetime.timedelta(days=400))
                assert stamp()[0] == 2021
        """,
        expect={"test_frozen": "passed", "test_ticking": "passed", "test_moved": "passed"},
    )
)

_add(
    _ex(
        "time-machine",
        """
        import datetime
        import time

        import time_machine
        from pkg.core import stamp, step


        WHEN = datetime.datetime(2001, 2, 3, 4, 5, 6, tzinfo=datetime.UTC)


        @time_machine.travel(WHEN, tick=False)
        def test_traveled():
            assert stamp() == (2001, 981173106)
            assert step(1) == 0


        def test_fixture(time_machine):
            time_machine.move_to(datetime.datetime(1999, 1, 1, tzinfo=datetime.UTC))
            assert stamp()[0] in (1998, 1999)
            time_machine.shift(datetime.timedelta(days=3))
            assert time.time() > 915148800


        def test_monotonic_still_moves():
            with time_machine.travel(0, tick=True):
                first = time.monotonic()
                step(4)
                assert time.monotonic() >= first
        """,
        expect={
            "test_traveled": "passed",
            "test_fixture": "passed",
            "test_monotonic_still_moves": "passed",
        },
    )
)

_add(
    _ex(
        "pytest-socket",
        """
        import socket
        import threading

        import pytest
        from pytest_socket import SocketBlockedError
        from pkg.core import step


        def test_refused_by_pytest_socket():
            with pytest.raises(SocketBlockedError):
                socket.create_connection(("127.0.0.1", 9))
            assert step(1) == 0


        @pytest.mark.enable_socket
        def test_loopback_server():
            server = socket.create_server(("127.0.0.1", 0))
            port = server.getsockname()[1]
            def serve():
                conn, _ = server.accept()
                conn.sendall(b"ok")
                conn.close()
            thread = threading.Thread(target=serve)
            thread.start()
            with socket.create_connection(("127.0.0.1", port)) as client:
                assert client.recv(2) == b"ok"
            thread.join()
            server.close()
            assert step(2) == 1


        def test_unix_socketpair():
            a, b = socket.socketpair()
            a.sendall(b"x")
            assert b.recv(1) == b"x"
            a.close()
            b.close()
        """,
        expect={
            "test_refused_by_pytest_socket": "passed",
            "test_loopback_server": "passed",
            "test_unix_socketpair": "passed",
        },
    )
)

_add(
    _ex(
        "gc-disable",
        """
        import gc

        from pkg.core import step


        class Cycle:
            def __init__(self):
                self.me = self


        def test_gc_disabled_in_test():
            gc.disable()
            try:
                for _ in range(1000):
                    Cycle()
                assert step(2) == 1
                assert not gc.isenabled()
            finally:
                gc.enable()


        def test_gc_left_disabled():
            gc.disable()  # and never re-enabled: the next tests run without gc
            assert step(1) == 0


        def test_after_gc_left_disabled():
            assert not gc.isenabled()
            gc.collect()
            assert gc.garbage == []
            gc.enable()
            assert step(3) == 2
        """,
        expect={
            "test_gc_disabled_in_test": "passed",
            "test_gc_left_disabled": "passed",
            "test_after_gc_left_disabled": "passed",
        },
    )
)

_add(
    _ex(
        "settrace-debugger",
        """
        import io
        import pdb
        import sys

        from pkg.core import depth, step


        def test_settrace_counts_lines():
            lines = []

            def tracer(frame, event, arg):
                if frame.f_code.co_name == "step":
                    lines.append((event, frame.f_lineno))
                return tracer

            old = sys.gettrace()
            sys.settrace(tracer)
            try:
                assert step(2) == 1
            finally:
                sys.settrace(old)
            assert [e for e, _ in lines] == ["call", "line", "line", "return"]


        def test_setprofile():
            calls = []
            sys.setprofile(lambda frame, event, arg: calls.append(event))
            try:
                depth(3)
            finally:
                sys.setprofile(None)
            assert calls.count("call") >= 4


        def test_pdb_runs_code():
            out = io.StringIO()
            debugger = pdb.Pdb(stdin=io.StringIO("step\\nnext\\ncontinue\\n"), stdout=out)
            debugger.use_rawinput = False
            assert debugger.runcall(step, 5) == 4
            assert "step" in out.getvalue()


        def test_after_debugger():
            assert sys.gettrace() is None
            assert step(1) == 0
        """,
        expect={
            "test_settrace_counts_lines": "passed",
            "test_setprofile": "passed",
            "test_pdb_runs_code": "passed",
            "test_after_debugger": "passed",
        },
    )
)

_add(
    _ex(
        "sys-monitoring",
        """
        import sys

        from pkg.core import depth, step

        mon = sys.monitoring


        def test_own_tool_id():
            calls = []
            tool = mon.DEBUGGER_ID
            mon.use_tool_id(tool, "a-test")
            try:
                mon.register_callback(
                    tool, mon.events.PY_START, lambda code, off: calls.append(code.co_name)
                )
                mon.set_events(tool, mon.events.PY_START)
                depth(3)
                mon.set_events(tool, 0)
                mon.register_callback(tool, mon.events.PY_START, None)
            finally:
                mon.free_tool_id(tool)
            assert calls.count("depth") == 4


        def test_restart_events():
            mon.restart_events()
            assert step(2) == 1


        def test_probes_every_tool_id():
            names = [mon.get_tool(i) for i in range(6)]
            free = [i for i, name in enumerate(names) if name is None]
            assert free
            mon.use_tool_id(free[0], "probe")
            mon.free_tool_id(free[0])
            assert step(1) == 0


        def _their_tool():
            return next((i for i in range(6) if mon.get_tool(i) == "diffgenome"), None)


        def test_switches_off_diffgenome():
            tool = _their_tool()
            if tool is not None:
                mon.set_events(tool, 0)
            assert step(3) == 2


        def test_replaces_diffgenome_callback():
            tool = _their_tool()
            if tool is not None:
                mon.register_callback(tool, mon.events.PY_START, None)
            assert step(3) == 2


        def test_frees_diffgenome_tool_id():
            tool = _their_tool()
            if tool is not None:
                mon.free_tool_id(tool)
            assert step(4) == 3


        def test_after_all_that():
            assert depth(2) == 2
        """,
        expect={
            "test_own_tool_id": "passed",
            "test_restart_events": "passed",
            "test_probes_every_tool_id": "passed",
            "test_switches_off_diffgenome": "passed",
            "test_replaces_diffgenome_callback": "passed",
            "test_frees_diffgenome_tool_id": "passed",
            "test_after_all_that": "passed",
        },
        disclosed={
            "test_switches_off_diffgenome": "call:monitoring-disturbed",
            "test_replaces_diffgenome_callback": "call:monitoring-disturbed",
            "test_frees_diffgenome_tool_id": "call:monitoring-disturbed",
        },
    )
)

_add(
    _ex(
        "recursionlimit",
        """
        import sys

        import pytest
        from pkg.core import depth


        def _here():
            n, frame = 0, sys._getframe()
            while frame is not None:
                n, frame = n + 1, frame.f_back
            return n


        def test_raised_limit():
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(old + 5000)
            try:
                assert depth(old + 1000) == old + 1000
            finally:
                sys.setrecursionlimit(old)


        def test_tight_limit_just_enough():
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(_here() + 60)
            try:
                assert depth(40) == 40
            finally:
                sys.setrecursionlimit(old)


        def test_tight_limit_overrun():
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(_here() + 60)
            try:
                with pytest.raises(RecursionError):
                    depth(100)
            finally:
                sys.setrecursionlimit(old)


        @pytest.fixture
        def low_limit():
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(_here() + 40)
            yield
            sys.setrecursionlimit(old)


        def test_limit_low_for_the_whole_test(low_limit):
            assert depth(10) == 10
        """,
        expect={
            "test_raised_limit": "passed",
            "test_tight_limit_just_enough": "passed",
            "test_tight_limit_overrun": "passed",
            "test_limit_low_for_the_whole_test": "passed",
        },
        disclosed={"test_tight_limit_overrun": "call:recursion-limit-reached"},
    )
)


def write(example: Example, root: Path) -> Path:
    """The example as a committed git repository at ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in example.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    git = ["git", "-c", "user.name=compat", "-c", "user.email=compat@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "example"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
    return root
