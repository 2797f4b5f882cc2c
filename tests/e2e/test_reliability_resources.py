"""Issue #6, bounded resources: a 5,000-test suite, a million calls in one test, recursion near
the limit, containers of a million items and objects whose every special method is hostile.
The recorder stays bounded (one node for a million calls, no digest beyond the bounds), never
changes a test's outcome, and never calls user code to describe a value (``docs/reliability.md``;
memory is measured by experiments/bounded_resources.py, not asserted here).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from diffgenome.recording.collect import tracer as tracer_module
from e2e.helpers import (
    export,
    make_project,
    nodes_by_symbol,
    one_node,
    record_full,
    run_pytest,
    test_genome,
)

# -- a 5,000-test suite ------------------------------------------------------------------------

MODULES = 5
PER_MODULE = 1000


def suite_files(modules: int = MODULES, per_module: int = PER_MODULE) -> dict[str, str]:
    files = {"pkg/__init__.py": "", "pkg/mod.py": "def f(n):\n    return n + 1\n"}
    for m in range(modules):
        files[f"tests/test_suite_{m}.py"] = f"""
            import pytest

            from pkg.mod import f


            @pytest.mark.parametrize("n", range({per_module}))
            def test_case(n):
                assert f(n) == n + 1
        """
    return files


@pytest.mark.slow
def test_a_suite_of_5000_tests_is_recorded_whole(tmp_path: Path) -> None:
    project = make_project(tmp_path, suite_files())
    # 10-17 s on a quiet machine; the guard against a hang leaves room for a loaded one.
    recording = record_full(project, "-q", timeout=900)
    doc = recording.doc
    assert f"{MODULES * PER_MODULE} passed" in recording.proc.stdout
    assert doc["run"]["complete"] is True
    tests = [t for t in doc["tests"] if t["id"] != "<import>"]
    assert len(tests) == MODULES * PER_MODULE
    for test in tests:
        assert test["verified"] is True, test
        assert one_node(test["phases"]["call"], "py:pkg.mod.f")["count"] == 1


# -- calls, recursion, containers, hostile objects ---------------------------------------------

HOSTILE = '''
    import dataclasses
    import os

    LOG = os.environ["HOSTILE_LOG"]


    def called(name):
        """Every hostile method logs that it was called, then raises."""
        with open(LOG, "a") as handle:
            handle.write(name + "\\n")
        raise RuntimeError(f"hostile {name} called")


    def _hostile(name):
        def method(self, *args, **kwargs):
            called(f"{type(self).__name__}.{name}")

        method.__name__ = name
        return method


    DUNDERS = (
        "__repr__", "__str__", "__format__", "__eq__", "__ne__", "__lt__", "__hash__",
        "__bool__", "__len__", "__iter__", "__contains__", "__getitem__", "__index__",
        "__int__", "__float__", "__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__",
        "__sizeof__", "__dir__", "__getattr__", "__setattr__", "__delattr__",
        "__getstate__",
    )


    def hostile_class(name, base=object, extra=()):
        namespace = {d: _hostile(d) for d in (*DUNDERS, *extra)}
        return type(name, (base,), namespace)


    class Meta(type):
        """Even the class is hostile: its attributes, repr, hash and instance checks."""

    for _name in ("__getattribute__", "__getattr__", "__repr__", "__instancecheck__",
                  "__subclasscheck__", "__eq__", "__hash__", "__len__", "__iter__", "__bool__"):
        setattr(Meta, _name, _hostile(_name))


    Hostile = hostile_class("Hostile")
    Sneaky = hostile_class("Sneaky", extra=("__getattribute__",))
    HList = hostile_class("HList", list)
    HDict = hostile_class("HDict", dict)
    HStr = hostile_class("HStr", str)
    HInt = hostile_class("HInt", int)
    HTuple = hostile_class("HTuple", tuple)
    MetaHostile = Meta("MetaHostile", (), {})


    @dataclasses.dataclass(eq=False, repr=False)
    class Fields:
        """A dataclass whose special methods are hostile but whose fields are plain."""

        a: int
        b: str

    for _name in ("__repr__", "__eq__", "__hash__", "__bool__", "__len__", "__iter__"):
        setattr(Fields, _name, _hostile(_name))


    class Holder:
        def __init__(self, inner):
            object.__setattr__(self, "inner", inner)

        def peek(self):
            return self.inner  # a state read of a hostile field


    CURRENT = None


    def take(*values, **named):
        return values[0] if values else None


    def peek_global():
        return CURRENT
'''

WORK = """
    import sys


    def down(n):
        if n <= 0:
            return 0
        return down(n - 1) + 1


    def leaf(i):
        return i


    def loop(n):
        for i in range(n):
            leaf(i)


    def size(items):
        return len(items)
"""

TESTS = """
    import os
    import sys

    import pytest

    from pkg import hostile, work


    def depth():
        frame, n = sys._getframe(1), 0
        while frame is not None:
            n += 1
            frame = frame.f_back
        return n


    def test_a_million_calls():
        work.loop(10**6)


    def test_recursion_to_90_percent_of_the_limit():
        target = int(sys.getrecursionlimit() * 0.9)
        remaining = target - depth()
        assert work.down(remaining) == remaining


    def test_recursion_to_the_last_free_frame():
        remaining = sys.getrecursionlimit() - 1 - depth()
        assert work.down(remaining) == remaining


    def test_huge_containers():
        n = 10**6
        big_list = list(range(n))
        big_dict = dict.fromkeys(range(n), 0)
        big_set = set(range(n))
        big_str = "x" * n
        big_bytes = b"x" * n
        for value in (big_list, big_dict, big_set, big_str, big_bytes, tuple(big_list)):
            assert work.size(value) == n


    def test_hostile_objects():
        fields = hostile.Fields(1, "b")
        assert hostile.take(fields) is fields  # first: the first 8 distinct args are kept
        makers = [
            lambda: hostile.Hostile(),
            lambda: hostile.Sneaky(),
            lambda: hostile.HList([1, 2]),
            lambda: hostile.HDict(a=1),
            lambda: hostile.HStr("abc"),
            lambda: hostile.HInt(3),
            lambda: hostile.HTuple((1, 2)),
            lambda: hostile.MetaHostile(),
        ]
        for make in makers:
            value = make()
            assert hostile.take(value) is value
            assert hostile.take([value], {"k": value}, (value,), key=value)[0] is value
            hostile.CURRENT = value
            assert hostile.peek_global() is value
            assert hostile.Holder(value).peek() is value
        hostile.CURRENT = None
"""

SELF_TESTS = (
    "test_a_million_calls",
    "test_recursion_to_90_percent_of_the_limit",
    "test_recursion_to_the_last_free_frame",
    "test_huge_containers",
    "test_hostile_objects",
)


@dataclass
class Lab:
    doc: dict[str, Any]
    plain: dict[str, str]  # test name -> PASSED/FAILED, without --genome
    genome: dict[str, str]  # the same with --genome
    plain_log: str  # hostile methods called without --genome
    genome_log: str  # ... and with it


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    """The project run once without --genome and recorded once with it."""
    root = tmp_path_factory.mktemp("resources")
    project = make_project(
        root,
        {
            "pkg/__init__.py": "",
            "pkg/hostile.py": HOSTILE,
            "pkg/work.py": WORK,
            "tests/test_r.py": TESTS,
        },
    )
    outcomes: dict[str, dict[str, str]] = {}
    logs: dict[str, str] = {}
    for mode in ("plain", "genome"):
        log = root / f"hostile-{mode}.log"
        log.write_text("")
        args = ["-q", "-rA", *(["--genome"] if mode == "genome" else [])]
        done = run_pytest(project, *args, env={"HOSTILE_LOG": str(log)}, timeout=600)
        assert "INTERNALERROR" not in done.stdout + done.stderr, done.stdout + done.stderr
        outcomes[mode] = _outcomes(done.stdout)
        assert set(outcomes[mode]) == set(SELF_TESTS), done.stdout + done.stderr
        logs[mode] = log.read_text()
    return Lab(
        export(project), outcomes["plain"], outcomes["genome"], logs["plain"], logs["genome"]
    )


def _outcomes(output: str) -> dict[str, str]:
    """``test name -> PASSED/FAILED`` from pytest's -rA summary."""
    found = {}
    for line in output.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR") and "::" in rest:
            found[rest.split(" ")[0].rpartition("::")[2]] = word
    return found


def call_phase(lab: Lab, name: str) -> dict[str, Any]:
    phase: dict[str, Any] = test_genome(lab.doc, f"::{name}")["phases"]["call"]
    return phase


@pytest.mark.parametrize(
    "name", [n for n in SELF_TESTS if n != "test_recursion_to_the_last_free_frame"]
)
def test_outcome_is_the_same_with_and_without_genome(lab: Lab, name: str) -> None:
    assert lab.plain[name] == "PASSED"
    assert lab.genome[name] == lab.plain[name]
    test = test_genome(lab.doc, f"::{name}")
    assert test["outcome"] == "passed"
    assert test["verified"] is True, test["unverified_reasons"]


def test_recursion_to_the_last_free_frame_is_not_changed_by_recording(lab: Lab) -> None:
    """The compiled core's callbacks are no Python frames: a call that takes the last free
    frame below the recursion limit leaves the core none to make the call's node with, which
    it counts and discloses (below) without raising into the test. The pure-Python core's
    callbacks are Python frames, whose RecursionError reaches the test: that is known, and
    docs/recording.md says so."""
    if tracer_module._ACCEL is None:
        pytest.xfail(f"the pure-Python core records here ({tracer_module._ACCEL_ABSENT})")
    name = "test_recursion_to_the_last_free_frame"
    assert lab.plain[name] == "PASSED"
    assert lab.genome[name] == lab.plain[name]


def test_reaching_the_recursion_limit_is_disclosed(lab: Lab) -> None:
    """Where recording can move the RecursionError (the known limit above), the genome says
    so: the test is unverified, never silently recorded as if nothing differed."""
    test = test_genome(lab.doc, "::test_recursion_to_the_last_free_frame")
    assert not test["verified"]
    assert "call:recursion-limit-reached" in test["unverified_reasons"]


def test_a_million_calls_are_one_node(lab: Lab) -> None:
    phase = call_phase(lab, "test_a_million_calls")
    leaf = one_node(phase, "py:pkg.work.leaf")
    assert (leaf["count"], leaf["exits"]) == (10**6, {"returned": 10**6})
    # Bounded sets: 8 distinct arguments kept, the rest counted and folded into a digest.
    assert len(leaf["args"]) == 8 and len(leaf["results"]) == 8
    assert leaf["args_overflow"]["count"] == 10**6 - 8
    assert len(phase["nodes"]) == 3  # the test, loop, leaf


def test_recursion_near_the_limit_is_one_node_per_level(lab: Lab) -> None:
    phase = call_phase(lab, "test_recursion_to_90_percent_of_the_limit")
    levels = nodes_by_symbol(phase)["py:pkg.work.down"]
    assert len(levels) > 700  # 90 % of the default limit of 1000, minus pytest's own frames
    assert all(node["count"] == 1 for node in levels)


def test_huge_containers_get_shapes_but_no_digest(lab: Lab) -> None:
    size = one_node(call_phase(lab, "test_huge_containers"), "py:pkg.work.size")
    assert size["count"] == 6
    shapes = {arg["shape"] for arg in size["args"]}
    assert len(shapes) == 6, shapes
    assert all(arg["digest"] is None for arg in size["args"]), size["args"]


def test_hostile_methods_are_not_called_to_describe_values(lab: Lab) -> None:
    assert lab.plain_log == ""  # the test itself never calls them
    assert lab.genome_log == ""  # nor does the recorder


def test_hostile_globals_are_read_without_calling_user_code(lab: Lab) -> None:
    assert lab.genome_log == "", lab.genome_log
    test = test_genome(lab.doc, "::test_hostile_objects")
    assert test["verified"] is True, test["unverified_reasons"]


def test_hostile_values_get_no_digest_but_plain_fields_do(lab: Lab) -> None:
    phase = call_phase(lab, "test_hostile_objects")
    take = nodes_by_symbol(phase)["py:pkg.hostile.take"]
    args = [arg for node in take for arg in node["args"]]
    fields = [a for a in args if a["shape"] == "values=tuple[pkg.hostile.Fields], named=dict[]"]
    assert len(fields) == 1 and fields[0]["digest"] is not None, args
    others = [a for a in args if a not in fields]
    assert others and all(a["digest"] is None for a in others), others
    peek = nodes_by_symbol(phase)["py:pkg.hostile.peek_global"]
    buckets = {fact["bucket"] for node in peek for fact in node["state"]}
    assert buckets and all(b.startswith("type:") for b in buckets), buckets
