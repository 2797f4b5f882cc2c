"""The tracer in this process, under each core: what a phase records, and how it fails.

Every test that records runs once with the compiled core and once with the Python callbacks
(``core`` parameter; the compiled one is skipped where it is not built). The end-to-end
comparison of whole recorded suites is tests/e2e/test_cores.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib.util
import itertools
import sys
import textwrap
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from diffgenome.recording.collect import contract, cores, values
from diffgenome.recording.collect import tracer as tracer_module
from diffgenome.recording.collect.contract import Bounds
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.tracer import Tracer
from diffgenome.recording.genome import export_phase

MODULE = """
    class Box:
        def __init__(self, size):
            self.size = size

        def grow(self, by):
            if by < 0:
                raise ValueError("shrink")
            self.size += by
            return self.size


    def ident(x):
        return x


    def pair(a, b="b"):
        return (a, b)


    def numbers(n):
        for i in range(n):
            yield i


    def odd_total(n):
        total = 0
        for value in numbers(n):
            if value % 2:
                total += ident(value)
        return total


    def fail():
        Box(1).grow(-1)


    def closing(a, /, b, *rest, key=None, **more):
        def inner():
            return a, b, key, more  # every one of them a cell

        return inner


    class Slots:
        __slots__ = ("v",)

        def __init__(self, v):
            self.v = v

        def read(self):
            return self.v


    class Holder:
        def __init__(self, **fields):
            self.__dict__.update(fields)

        def read(self):
            return (self.a, self.b, getattr(self, "c", None) if self.a else self.c, LIMIT)


    LIMIT = 3
    TABLE = {"a": 1}


    def over(x):
        return x if type(LIMIT) is not int else x > LIMIT and TABLE and ident(x)
"""

_names = itertools.count()
_NO_CORE = f"no compiled core: {tracer_module._ACCEL_ABSENT}"
Record = Callable[..., tuple[dict[str, Any], Tracer]]


@pytest.fixture(
    params=[
        pytest.param(
            "c",
            marks=pytest.mark.skipif(
                tracer_module._ACCEL is None,
                reason=_NO_CORE,
            ),
        ),
        "python",
    ]
)
def core(request: pytest.FixtureRequest) -> str:
    """Which callbacks record: ``auto`` takes the compiled core where it is built."""
    return "auto" if request.param == "c" else "python"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "work.py").write_text(textwrap.dedent(MODULE))
    return tmp_path


def _load(project: Path) -> ModuleType:
    """A fresh copy of the module: new code objects, which no earlier tracer has seen."""
    spec = importlib.util.spec_from_file_location(
        f"_tracer_test_{next(_names)}", project / "lib" / "work.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DIGESTER = values.Digester(b"k" * 32)


def _tracer(project: Path, core: str) -> Tracer:
    return Tracer(Scope(str(project), [str(project)], []), DIGESTER, Bounds(), core=core)


@pytest.fixture
def record(project: Path) -> Iterator[Record]:
    started: list[Tracer] = []

    def run(
        core: str, body: Callable[[ModuleType, Tracer], object]
    ) -> tuple[dict[str, Any], Tracer]:
        module = _load(project)
        tracer = _tracer(project, core)
        assert tracer.start(), tracer.unavailable_reason
        started.append(tracer)
        tracer.begin_phase()
        try:
            body(module, tracer)
        finally:
            capture = tracer.end_phase()
            tracer.stop()
        return export_phase(capture, DIGESTER), tracer

    yield run
    for tracer in started:
        tracer.stop()


def _workload(module: Any, tracer: Tracer) -> None:
    box = module.Box(2)
    box.grow(3)
    box.grow(4)
    for i in range(12):  # more distinct arguments than a node keeps: the rest overflow
        module.ident(i)
    module.pair("a")
    module.pair(1, b=None)
    module.odd_total(5)
    with contextlib.suppress(ValueError):
        module.fail()


def _by_symbol(phase: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for node in phase["nodes"]:
        found.setdefault(node.get("symbol"), []).append(node)
    return found


def test_a_phase_records_calls_values_exits_and_decisions(core: str, record: Record) -> None:
    phase, tracer = record(core, _workload)
    assert tracer.core == ("c" if core == "auto" else "python")
    assert tracer.errors == 0
    nodes = _by_symbol(phase)
    grow = nodes["py:lib.work.Box.grow"]
    top_grow = next(node for node in grow if node["count"] == 2)
    assert top_grow["exits"] == {"returned": 2}
    assert len(top_grow["args"]) == 2 and top_grow["args"][0]["shape"] == "by=int"
    raised = next(node for node in grow if node["count"] == 1)
    assert raised["exits"] == {"raised:py:builtins.ValueError": 1}
    ident = [node for node in nodes["py:lib.work.ident"] if node["count"] == 12]
    assert len(ident) == 1
    assert len(ident[0]["args"]) == 8 and ident[0]["args_overflow"]["count"] == 4
    pairs = nodes["py:lib.work.pair"][0]
    assert {entry["shape"] for entry in pairs["args"]} == {"a=str, b=str", "a=int, b=None"}
    generator = nodes["py:lib.work.numbers"][0]
    assert generator["exits"] == {"returned": 1, "yielded": 5}
    assert any(branch["site"].startswith("py:lib.work.odd_total/") for branch in phase["branches"])


def test_both_cores_record_the_same_phase(
    record: Record,
) -> None:
    if tracer_module._ACCEL is None:
        pytest.skip(_NO_CORE)
    compiled, tracer = record("auto", _workload)
    python, _ = record("python", _workload)
    assert tracer.core == "c"
    assert compiled == python


def _arguments_workload(module: Any, tracer: Tracer) -> None:
    """Arguments of every kind (cells, positional-only, star, keyword-only) holding values
    the compiled core describes itself: plain and slotted instances, containers of them."""
    box = module.Box(1)
    module.closing(1, 2, 3, (4, box), key=frozenset({1, 2}), z={"k": [1.5, b"x"]})
    module.closing([], b=(), key=module.Slots)
    for value in (1, "a", 2.5, None, box, module.Slots(1), (box, 2), [box, "x"], {"k": box}):
        module.ident(value)
        module.closing(value, value)
    # State: the receiver's fields, of every kind of value, some absent.
    kinds: list[object] = [None, 0, -1, 2**70, 2.5, -0.0, float("nan"), "", "x", b"", [], [1]]
    kinds += [(1, 2), {}, {1}, frozenset(), True, box, module.Slots(1), module.Slots, len]
    for i, value in enumerate(kinds):
        module.LIMIT = value if i % 3 else i
        module.over(i)
        if i == 5:
            del module.TABLE
        if i == 9:
            module.TABLE = value
        module.Holder(a=value, b=kinds[i - 1], c=1).read()
        module.Holder(a=1, b=value).read()  # c absent
        module.Holder(a=value, b=value, c=value).read()
    module.Slots(2).read()


@pytest.mark.parametrize("frame_get_var", [True, False])
def test_both_cores_read_every_kind_of_argument_alike(
    record: Record, frame_get_var: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read from the interpreter frame (capabilities.frame_get_var) or from f_locals."""
    if tracer_module._ACCEL is None:
        pytest.skip(_NO_CORE)
    row = dataclasses.replace(cores.CAPABILITIES, frame_get_var=frame_get_var)
    monkeypatch.setattr(cores, "CAPABILITIES", row)
    # Each recording loads its own copy of the module: the same genome but for its name (and
    # the overflow digests of values that have only a shape).
    compiled, tracer = record("auto", lambda module, tracer: _named(module, "m"))
    python, _ = record("python", lambda module, tracer: _named(module, "m"))
    assert tracer.core == "c"
    assert tracer.errors == 0
    assert compiled == python
    read = _by_symbol(compiled)["py:lib.work.Holder.read"][0]
    assert len(read["state"]) > 20
    over = _by_symbol(compiled)["py:lib.work.over"][0]
    assert {fact["target"] for fact in over["state"]} == {"global:LIMIT", "global:TABLE"}
    closing = _by_symbol(compiled)["py:lib.work.closing"][0]
    assert {entry["shape"] for entry in closing["args"]} >= {
        "a=int, b=int, key=frozenset[int], rest=tuple[int,tuple[int,m.Box]], "
        "more=dict[str,dict[str,list[...]]]",
        "a=list[], b=tuple[], key=builtins.type, rest=tuple[], more=dict[]",
    }


def _named(module: Any, name: str) -> None:
    for cls in (module.Box, module.Slots, module.Holder):
        cls.__module__ = name
    _arguments_workload(module, None)  # type: ignore[arg-type]


def test_the_python_core_can_be_asked_for(project: Path) -> None:
    tracer = _tracer(project, "python")
    assert (tracer.core, tracer.core_reason) == ("python", "core=python")


def test_a_compiled_core_that_disagrees_with_values_py_does_not_record(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One encoding changed on one side only: the core is built, checked, and left unused."""
    if tracer_module._ACCEL is None:
        pytest.skip(_NO_CORE)
    encodings = contract.core_encodings()
    monkeypatch.setattr(
        contract, "core_encodings", lambda: {**encodings, "overflow_tags": (b"S", b"C")}
    )
    tracer = _tracer(project, "auto")
    tracer._callbacks()  # builds the core, without claiming a tool id
    assert tracer.core == "python"
    assert tracer.core_reason is not None
    assert tracer.core_reason.startswith("core-disagrees: overflow fingerprint of ")


def test_the_compiled_core_reads_frames_as_the_frame_api_does() -> None:
    """The core reads the interpreter's own frames (no frame object per call): its reading of
    real frames (a plain call, a cell, a method, an unbound argument, a generator) agrees with
    the public API, and the check tells a wrong key or a wrong value apart."""
    accel = tracer_module._ACCEL
    if accel is None:
        pytest.skip(_NO_CORE)
    assert tracer_module._frame_key is accel.frame_key
    assert contract.frame_disagreement(accel.frame_probe, accel.frame_key, accel.frame_var) is None
    by_id = contract.frame_disagreement(accel.frame_probe, id, accel.frame_var)
    assert by_id == "frames: plain's frame, caller or code"
    copies = contract.frame_disagreement(
        accel.frame_probe, accel.frame_key, lambda frame, name: object()
    )
    assert copies == "frames: plain's argument 0"


def test_a_compiled_core_whose_frames_disagree_is_not_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if tracer_module._ACCEL is None:
        pytest.skip(_NO_CORE)
    monkeypatch.setattr(contract, "frame_disagreement", lambda *args: "frames: plain's frame")
    assert cores.load_accelerator() == (None, "core-disagrees: frames: plain's frame")


def _break_a_node(module: Any, tracer: Tracer) -> None:
    """Two starts of a call node whose count is no number: inside repo code, where the
    compiled core takes the start itself (from the test, Python's callback always does)."""
    module.odd_total(2)
    root = tracer._root
    assert root is not None
    (outer,) = (node for node in root.children.values() if node.key.symbol.endswith("total"))
    (inner,) = (node for node in outer.children.values() if node.key.symbol.endswith("ident"))
    inner.count = "not a count"  # type: ignore[assignment]
    module.odd_total(2)  # each start of ``ident`` fails in the callback: counted, not raised
    module.odd_total(2)


def test_a_failing_callback_is_counted_and_never_raised(
    core: str,
    record: Record,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(tracer_module.DEBUG_ENV, raising=False)
    _, tracer = record(core, _break_a_node)
    assert tracer.errors == 2
    assert tracer.first_errors is None


def test_debugging_callbacks_keeps_the_first_error_of_each_kind(
    core: str,
    record: Record,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(tracer_module.DEBUG_ENV, "callbacks")
    _, tracer = record(core, _break_a_node)
    assert tracer.errors == 2
    assert tracer.first_errors is not None
    assert list(tracer.first_errors) == ["builtins.TypeError"]
    kept = tracer.first_errors["builtins.TypeError"]
    assert kept.startswith("can only concatenate str")
    where = "compiled core" if tracer.core == "c" else "tracer.py:"
    assert where in kept


def test_a_thread_being_started_while_a_phase_begins_keeps_its_starter(project: Path) -> None:
    """google-auth: a refresh worker started a thread while the main thread began the next
    phase; the new thread was not alive yet, its starter was forgotten, and its work read as
    ``unattributed:thread``. Threads are real here; the interleaving is driven by hand."""
    import threading

    tracer = _tracer(project, "python")
    assert tracer.start(), tracer.unavailable_reason
    try:
        tracer.begin_phase()
        starting = threading.Thread(target=lambda: None)  # registered, not started yet
        tracer._starters[id(starting)] = (starting, None, tracer._phase_serial, 1)
        done = threading.Thread(target=lambda: None)
        done.start()
        done.join()
        tracer._starters[id(done)] = (done, None, tracer._phase_serial, 1)
        for _ in range(3):
            tracer.end_phase()
            tracer.begin_phase()
            assert id(starting) in tracer._starters  # never started: may still run
        assert id(done) not in tracer._starters  # finished, phases ago
    finally:
        tracer.end_phase()
        tracer.stop()


def test_no_class_a_phase_met_outlives_the_next_phase_start(core: str, project: Path) -> None:
    """Every phase start empties what the cores remember per class and per argument (the
    compiled core empties its caches only when something may be in them: twice in a row, so
    that the second phase fills them again after they were emptied)."""
    module = _load(project)
    tracer = _tracer(project, core)
    assert tracer.start(), tracer.unavailable_reason
    try:
        for _ in range(3):
            made = type("Made", (), {})
            tracer.begin_phase()
            module.ident(made())
            module.pair(made(), made())
            module.ident(made())
            tracer.end_phase()
            gone = weakref.ref(made)
            del made
            tracer.begin_phase()
            tracer.end_phase()
            gc.collect()
            assert gone() is None
    finally:
        tracer.stop()


def test_reclaim_uses_sys_monitoring_as_it_was_at_import(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code under test may replace names in ``sys.monitoring``: the checks of every phase
    start and end call the functions bound when the recorder was imported."""
    tracer = _tracer(project, "python")
    assert tracer.start(), tracer.unavailable_reason
    try:

        def broken(*args: object) -> object:
            raise AssertionError("called through sys.monitoring")

        for name in ("get_tool", "get_events", "register_callback"):
            monkeypatch.setattr(sys.monitoring, name, broken)
        assert tracer.reclaim() == []
        assert tracer.errors == 0
    finally:
        monkeypatch.undo()
        tracer.stop()


def test_each_phase_that_meets_the_node_bound_says_so_and_only_those(
    core: str, project: Path
) -> None:
    """The sink that takes the calls past the bound is a phase's own, made when the bound
    is first met: a phase within it says nothing, the next one past it says so again."""
    module = _load(project)
    tracer = Tracer(
        Scope(str(project), [str(project)], []), DIGESTER, Bounds(max_nodes=2), core=core
    )
    assert tracer.start(), tracer.unavailable_reason
    try:
        found = []
        for many in (True, False, True, True):
            tracer.begin_phase()
            module.ident(1)
            if many:
                module.pair(1)
                module.odd_total(3)
            capture = tracer.end_phase()
            phase = export_phase(capture, DIGESTER)
            found.append((len(phase["nodes"]), "truncated:nodes" in capture.reasons))
        assert found == [(2, True), (1, False), (2, True), (2, True)]
    finally:
        tracer.stop()
