"""End-to-end: threads that outlive the phase that started them (#11.3).

Seen on google-auth: a fixture's server thread, started in one phase, served the requests of
later phases; its work there was "unattributed" and made those tests unverified, and a call
it was still inside when a phase ended read as ``inconsistent-exits``. Now its work in a later
phase hangs under that phase's root as ``via: earlier-thread``, a call still running at the
phase's end exits ``running``, and the starting test discloses the thread instead of being
unverified.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import make_project, record, test_genome

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/server.py": """
        import queue
        import threading


        def handle(request):
            if request < 0:
                return "negative"
            return request * 2


        class Server:
            def __init__(self):
                self.requests = queue.Queue()
                self.replies = queue.Queue()
                self.thread = threading.Thread(target=self.serve, daemon=True)

            def start(self):
                self.thread.start()

            def serve(self):
                while True:
                    request = self.requests.get()
                    if request is None:
                        return
                    self.replies.put(handle(request))

            def ask(self, request):
                self.requests.put(request)
                return self.replies.get(timeout=10)

            def stop(self):
                self.requests.put(None)
                self.thread.join(10)
    """,
    "tests/conftest.py": """
        import pytest

        from pkg.server import Server


        @pytest.fixture(scope="module")
        def server():
            server = Server()
            server.start()
            yield server
            server.stop()
    """,
    "tests/test_server.py": """
        def test_first(server):
            assert server.ask(2) == 4


        def test_second(server):
            assert server.ask(-1) == "negative"
            assert server.ask(3) == 6
    """,
}


def _nodes(test: dict[str, Any], phase: str) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = test["phases"][phase]["nodes"]
    return nodes


def test_a_fixtures_server_thread_serves_later_phases_attributed_and_verified(
    tmp_path: Path,
) -> None:
    doc = record(make_project(tmp_path, PROJECT))
    first = test_genome(doc, "::test_first")
    second = test_genome(doc, "::test_second")
    for test in (first, second):
        assert test["verified"], test["unverified_reasons"]
    # The thread started in test_first's setup: its work in the call phases hangs under the
    # phase's root, with the handling each test asked for.
    # test_first's own setup started it: "earlier-thread"; for test_second it is another
    # test's thread ("foreign-thread"), whose differences the differ reads as timing.
    for test, handled, via in ((first, 1, "earlier-thread"), (second, 2, "foreign-thread")):
        handles = [n for n in _nodes(test, "call") if n.get("symbol") == "py:pkg.server.handle"]
        assert [(n["count"], n["via"], n["parent"]) for n in handles] == [(handled, via, None)], (
            _nodes(test, "call")
        )
    # serve() entered in setup (under start(), on the thread it started) is still inside its
    # loop when setup ends: it exits "running", which is no inconsistency.
    [serve] = [n for n in _nodes(first, "setup") if n.get("symbol") == "py:pkg.server.Server.serve"]
    assert (serve["via"], serve["count"], serve["exits"]) == ("thread", 1, {"running": 1})
    second_sites = {b["predicate"]: b["outcomes"] for b in second["phases"]["call"]["branches"]}
    assert second_sites["request < 0"] == {"true": 1, "false": 1}
    # The test whose setup started it says so, and stays verified.
    assert first["disclosed"] == ["setup:thread-outlived-phase"]


def test_two_recordings_of_the_server_suite_are_identical(tmp_path: Path) -> None:
    project = make_project(tmp_path, PROJECT)
    first, second = record(project), record(project)
    assert [t["phases"] for t in first["tests"]] == [t["phases"] for t in second["tests"]]


STAND_IN_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/worker.py": """
        def run(source):
            while True:
                item = source.get()
                if item is None:
                    return
    """,
    "tests/test_worker.py": """
        import threading
        from unittest import mock

        import pytest

        from pkg import worker


        @pytest.fixture
        def gate():
            gate = threading.Event()
            yield gate
            gate.set()


        def test_ends_while_its_thread_is_inside_a_stand_in(gate):
            entered = threading.Event()

            def wait():
                entered.set()
                gate.wait(10)

            source = mock.Mock()
            source.get.side_effect = wait
            thread = threading.Thread(target=worker.run, args=(source,), daemon=True)
            thread.start()
            assert entered.wait(10)
    """,
}


def test_a_stand_in_call_still_running_at_the_phases_end_exits_running(tmp_path: Path) -> None:
    """google-api-core: a consumer thread inside a mocked ``recv()`` when the test returned
    left the stand-in with one entry and no exit (``inconsistent-exits``, unverified)."""
    doc = record(make_project(tmp_path, STAND_IN_PROJECT))
    test = test_genome(doc, "::test_ends_while_its_thread_is_inside_a_stand_in")
    assert test["verified"], test["unverified_reasons"]
    stand_ins = [n for n in _nodes(test, "call") if n["type"] == "substitution"]
    assert [(n["count"], n["exits"]) for n in stand_ins] == [(1, {"running": 1})], stand_ins
