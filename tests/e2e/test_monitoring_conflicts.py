"""End-to-end: tests that touch what the recorder stands on (#15).

``sys.monitoring`` has one table of tool ids per process, and any code may call it. A test
that switches off, replaces or frees diffgenome's tool must neither crash the session (the
recorder's end once raised ``ValueError: tool 4 is not in use`` from ``pytest_sessionfinish``
and turned a green session's exit status to 1) nor leave the rest of the run silently
unrecorded: the recorder puts its tool back, marks the phase it could not see whole, and says
so in one line. A test that raises the recursion limit may build a call tree deeper than the
limit in force when the phase is exported, which once cost the test its genome.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from e2e.helpers import (
    diffgenome_notices,
    make_project,
    record_full,
    run_pytest,
    symbols_of,
    test_genome,
)

PKG = {
    "pkg/__init__.py": "",
    "pkg/mod.py": """
        def f(n):
            if n > 0:
                return n - 1
            return 0


        def depth(n):
            return 0 if n <= 0 else 1 + depth(n - 1)
    """,
}
FIND_TOOL = """
    import sys

    from pkg.mod import f

    mon = sys.monitoring


    def their_tool():
        return next((i for i in range(6) if mon.get_tool(i) == "diffgenome"), None)
"""
AFTER = """

    def test_z_after():
        assert f(3) == 2
"""


def _project(tmp_path: Path, body: str) -> Path:
    files = dict(PKG)
    parts = (FIND_TOOL, body, AFTER)
    files["tests/test_m.py"] = "\n".join(textwrap.dedent(part) for part in parts)
    return make_project(tmp_path, files)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            """
            def test_a_disturbs():
                mon.set_events(their_tool(), 0)
                assert f(2) == 1
            """,
            "call:monitoring-disturbed:events-changed",
        ),
        (
            """
            def test_a_disturbs():
                mon.register_callback(their_tool(), mon.events.PY_START, None)
                assert f(2) == 1
            """,
            "call:monitoring-disturbed:callback-replaced",
        ),
        (
            """
            def test_a_disturbs():
                mon.free_tool_id(their_tool())
                assert f(2) == 1
            """,
            "call:monitoring-disturbed:tool-id-freed",
        ),
        (
            """
            def test_a_disturbs():
                assert f(2) == 1  # f is armed now
                mon.set_local_events(their_tool(), f.__code__, 0)
                assert f(2) == 1
            """,
            "call:monitoring-disturbed:local-events-changed",
        ),
        (
            """
            def test_a_disturbs():
                # The watch taken out of sys.monitoring first: every armed code is looked at.
                assert f(2) == 1
                mon.set_local_events = mon.set_local_events.__wrapped__
                mon.set_local_events(their_tool(), f.__code__, 0)
                assert f(2) == 1
            """,
            "call:monitoring-disturbed:local-events-changed",
        ),
    ],
    ids=["set_events", "register_callback", "free_tool_id", "set_local_events", "unwatched"],
)
def test_disturbed_tool_is_restored_and_disclosed(tmp_path: Path, body: str, reason: str) -> None:
    project = _project(tmp_path, body)
    rec = record_full(project)  # exit status 0, as without --genome
    disturbed = test_genome(rec.doc, "test_a_disturbs")
    assert disturbed["outcome"] == "passed"
    assert reason in disturbed["unverified_reasons"]
    after = test_genome(rec.doc, "test_z_after")
    assert after["verified"], after["unverified_reasons"]
    assert "py:pkg.mod.f" in symbols_of(after["phases"]["call"])
    # Its returns and decisions are seen again (its local events armed anew).
    (node,) = [n for n in after["phases"]["call"]["nodes"] if n.get("symbol") == "py:pkg.mod.f"]
    assert node["exits"] == {"returned": 1} and node["results"], node
    assert after["phases"]["call"]["branches"], after["phases"]["call"]
    assert rec.doc["run"]["complete"]
    notices = diffgenome_notices(rec.output)
    assert len(notices) == 1, notices
    assert "changed diffgenome's sys.monitoring tool" in notices[0]
    assert "unverified" in notices[0]
    assert "Traceback" not in rec.output


def test_tool_id_taken_by_another_tool_stops_recording_honestly(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        """
        def test_a_takes():
            tool = their_tool()
            if tool is not None:  # None without --genome
                mon.free_tool_id(tool)
                mon.use_tool_id(tool, "someone-else")
            assert f(2) == 1
        """,
    )
    plain = run_pytest(project)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    rec = record_full(project)
    assert "Traceback" not in rec.output
    for name in ("test_a_takes", "test_z_after"):
        genome = test_genome(rec.doc, name)
        assert genome["outcome"] == "passed"
        assert (
            "call:monitoring-disturbed:tool-id-taken:someone-else" in (genome["unverified_reasons"])
        )
    notices = diffgenome_notices(rec.output)
    assert len(notices) == 1, notices
    assert "recording stopped for the rest" in notices[0]


def test_call_tree_deeper_than_the_restored_recursion_limit(tmp_path: Path) -> None:
    files = dict(PKG)
    files["tests/test_deep.py"] = """
        import sys

        from pkg.mod import depth


        def test_deep():
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(old + 5000)
            try:
                assert depth(old + 1500) == old + 1500
            finally:
                sys.setrecursionlimit(old)
    """
    project = make_project(tmp_path, files)
    rec = record_full(project)
    genome = test_genome(rec.doc, "test_deep")
    assert genome["verified"], genome["unverified_reasons"]
    nodes = [n for n in genome["phases"]["call"]["nodes"] if n["symbol"] == "py:pkg.mod.depth"]
    assert len(nodes) > 2500  # one node per level: the whole chain is there
