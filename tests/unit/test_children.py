"""A child's tree on the wire (collect/children.py): sent, rebuilt and exported here, it must
give the genome the child's own export would have given, and several children under one
spawn must give the same genome whichever finished first.

The end-to-end tests with real children of every kind are tests/e2e/test_children.py.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from test_tracer import DIGESTER, _load, _workload
from test_tracer import core as core  # the fixtures: each core, and the recorded module
from test_tracer import project as project

from diffgenome.protocol.vocab import OS_SUBPROCESS, OUTCOME_UNTRACED_CHILD
from diffgenome.recording.collect import childhook, children, childwire
from diffgenome.recording.collect.contract import Bounds, Node, PhaseCapture
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.tracer import Tracer
from diffgenome.recording.genome import export_phase


def _tracer(project: Path, core: str = "python") -> Tracer:
    return Tracer(Scope(str(project), [str(project)], []), DIGESTER, Bounds(), core=core)


def _recorded(project: Path, core: str) -> PhaseCapture:
    """A phase of the tracer tests' workload, plus work on a thread (a side root)."""
    module = _load(project)
    tracer = _tracer(project, core)
    assert tracer.start(), tracer.unavailable_reason
    try:
        tracer.begin_phase()
        _workload(module, tracer)
        thread = threading.Thread(target=module.odd_total, args=(3,))
        thread.start()
        thread.join()
        return tracer.end_phase()
    finally:
        tracer.stop()


def _wire(root: Node) -> list[list[Any]]:
    entries, _ = childwire.dump_tree(root)
    loaded: list[list[Any]] = json.loads(json.dumps(entries))
    return loaded


def test_a_tree_sent_by_a_child_exports_as_it_would_have_there(project: Path, core: str) -> None:
    capture = _recorded(project, core)
    wire = _wire(capture.root)  # before export, which marks thread work with its ``via``
    there = export_phase(capture, DIGESTER)
    rebuilt = childwire.load_tree(wire, _tracer(project), Bounds())
    here = export_phase(PhaseCapture(rebuilt, []), DIGESTER)
    assert here == there
    assert any(b for b in here["branches"]), "decisions survive the trip"
    assert any(n.get("via") == "thread" for n in here["nodes"])


def _spawn_phase(project: Path, folder: Path, captures: list[tuple[int, list[list[Any]]]]) -> Any:
    """A phase with one spawn whose children sent ``captures`` (pid, tree), exported."""
    tracer = _tracer(project)
    recorder = children.Children(tracer, str(folder), Bounds())
    recorder.begin_phase()
    root = Node(0, None, Bounds())
    spawn = tracer.child(root, 2, ("os", OS_SUBPROCESS, "python", OUTCOME_UNTRACED_CHILD))
    spawn.count = len(captures)
    tokens = [recorder._token_for(spawn) for _ in captures]
    for token, (pid, tree) in zip(tokens, captures, strict=True):
        data = {"token": token, "reasons": [], "symbols": [], "tree": tree}
        (folder / f"{token}~{pid}.json").write_text(json.dumps(data))
    capture = PhaseCapture(root, ["untraced-subprocess:python"])
    tracer._root = root
    recorder.end_phase(capture)
    return capture.reasons, export_phase(capture, DIGESTER)


def test_children_of_one_spawn_merge_whichever_finished_first(
    project: Path, tmp_path: Path
) -> None:
    one = _wire(_recorded(project, "python").root)
    module = _load(project)
    tracer = _tracer(project)
    assert tracer.start()
    try:
        tracer.begin_phase()
        module.pair("other")
        two = _wire(tracer.end_phase().root)
    finally:
        tracer.stop()
    first = tmp_path / "first"
    second = tmp_path / "second"
    first.mkdir()
    second.mkdir()
    reasons, genome = _spawn_phase(project, first, [(11, one), (12, two)])
    again_reasons, again = _spawn_phase(project, second, [(12, two), (11, one)])
    assert genome == again
    assert reasons == again_reasons == []
    [spawn] = [n for n in genome["nodes"] if n["type"] == "os_event"]
    assert spawn["outcome"] == "recorded-child"
    assert list(first.iterdir()) == [], "captures are removed once read"


def test_a_spawn_without_capture_stays_a_gap(project: Path, tmp_path: Path) -> None:
    tracer = _tracer(project)
    recorder = children.Children(tracer, str(tmp_path), Bounds())
    recorder.begin_phase()
    root = Node(0, None, Bounds())
    spawn = tracer.child(root, 2, ("os", OS_SUBPROCESS, "python", OUTCOME_UNTRACED_CHILD))
    token = recorder._token_for(spawn)
    (tmp_path / f"{token}~5.started").write_text("")
    capture = PhaseCapture(root, ["untraced-subprocess:python"])
    recorder.end_phase(capture)
    assert capture.reasons == ["child-unfinished:python", "untraced-subprocess:python"]
    assert spawn.key[3] == OUTCOME_UNTRACED_CHILD


@pytest.mark.parametrize(
    "value",
    [
        "diffgenome-child:123.4.5|/tmp/diffgenome-children-99-abcdefgh",
        "diffgenome-child:7.1|/somewhere/else",
    ],
)
def test_the_variable_is_stable_text(value: str) -> None:
    from diffgenome.recording.collect import stable

    assert stable.stable_text(value) == "diffgenome-child:<token>"
    assert stable.stable_text(f"{{'DIFFGENOME_CHILD': '{value}'}}") == (
        "{'DIFFGENOME_CHILD': 'diffgenome-child:<token>'}"
    )
    assert childhook.parse_value(value)[0] == value.split(":")[1].split("|")[0]


def test_a_session_that_cannot_write_its_hook_leaves_nothing_behind(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorder then says so and Python children stay ``untraced-subprocess`` gaps."""
    import os
    import tempfile

    monkeypatch.setattr(childhook, "site_folders", lambda: ["/nonexistent/site-packages"])
    before = os.environ.get(childhook.ENV)
    mine = f"{childhook.FOLDER_PREFIX}{os.getpid()}-"
    with pytest.raises(OSError, match="cannot write the child-process hook"):
        children.open_session(_tracer(project), Bounds(), {})
    assert os.environ.get(childhook.ENV) == before
    assert children._ACTIVE is None
    assert [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(mine)] == []


def test_children_sharing_a_token_are_told_apart_by_their_arguments() -> None:
    bounds = Bounds()
    script = Node(2, ("os", OS_SUBPROCESS, "python", OUTCOME_UNTRACED_CHILD), bounds)
    module = Node(2, ("os", OS_SUBPROCESS, "python", OUTCOME_UNTRACED_CHILD), bounds)
    tool = Node(2, ("os", OS_SUBPROCESS, "tool", OUTCOME_UNTRACED_CHILD), bounds)
    spawns = [
        (script, True, ("/r/run.py", "a")),
        (module, True, ("-m", "pkg")),
        (tool, True, ("x",)),
    ]
    assert children._spawner(spawns, ("/r/run.py", "a")) is script
    assert children._spawner(spawns, ("-m", "pkg")) is module
    # A script run directly: the interpreter gives it its path before the arguments.
    assert children._spawner(spawns, ("/r/tool", "x")) is tool
    assert children._spawner(spawns, ("-c", "pass")) is None
    assert children._spawner(spawns, None) is None
    assert children._spawner([(tool, True, None), (tool, True, None)], None) is tool


def test_a_variable_left_behind_by_an_ended_session_is_silent(tmp_path: Path) -> None:
    """A process that outlived its recording session (the variable stayed in its C
    environment) starts children that find no capture folder: they run unrecorded and say
    nothing (the CLI's one-line errors gained a second line in CI)."""
    import subprocess
    import sys

    from diffgenome.recording.collect import childhook

    gone = tmp_path / "ended-session"
    code = "from diffgenome.recording import child; child.start(); print('ran')"
    env = {"DIFFGENOME_CHILD": f"{childhook.VALUE_PREFIX}1.call.0|{gone}", "PATH": "/usr/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", "")
