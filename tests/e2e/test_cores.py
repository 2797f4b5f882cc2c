"""The compiled core and the pure-Python callbacks record byte-identical genomes.

The compiled core (``diffgenome/recording/collect/_accel.c``) is only allowed because of
this: every project is recorded twice under one key, once with ``DIFFGENOME_CORE=python``,
and the stored genomes (tests and symbols, in their canonical JSON) must be equal byte for
byte. The ``workout`` project exercises every path the C code takes or hands back to Python:
generators with ``yield from``, exceptions through frames, recursion, threads, tasks, bounded
argument sets that overflow, uncacheable values, salted ``__hash__``, receiver and global
state, decisions of every kind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from diffgenome.recording.collect import cores
from diffgenome.recording.collect import tracer as tracer_module
from diffgenome.recording.collect.capabilities import CAPABILITIES
from e2e.helpers import REPO, make_project, record_full

pytestmark = pytest.mark.slow

WORKOUT = {
    "work/__init__.py": "",
    "work/core.py": """
        import asyncio
        import threading

        LIMIT = 3
        registry = {}


        class Box:
            KIND = "crate"  # read through self: a class attribute, not an absent field

            def __init__(self, size, label="box"):
                self.size = size
                self.label = label

            def kind(self):
                return self.KIND + self.label

            def weighed(self, factors):
                # ``self`` is a cell here (the generator expression reads it): the core
                # hands the receiver's state to Python, which reads the cell.
                return sum(f * self.size for f in factors) + len(self.label)

            def grow(self, by):
                if by < 0:
                    raise ValueError("shrink")
                self.size += by
                return self.size

            def __hash__(self):
                return hash((self.size, self.label))

            def __eq__(self, other):
                return isinstance(other, Box) and other.size == self.size


        class Crate(Box):
            # Read through self in C (#26): a base's method and constant, one of its own,
            # and a name neither the instance nor a class holds.
            LID = "lid"

            def describe(self):
                try:
                    extra = self.missing
                except AttributeError:
                    extra = "-"
                return self.kind() + self.LID + self.KIND + extra


        def ident(x):
            return x


        def pair(a, b=2, *rest, key=None, **extra):
            return (a, b, rest, key, extra)


        def countdown(n):
            while n > 0:
                yield n
                n -= 1


        def chained(n):
            yield from countdown(n)
            yield from (i * 2 for i in range(n) if i % 2)


        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)


        def classify(value):
            match value:
                case int() if value > LIMIT:
                    return "big"
                case int():
                    return "small"
                case str():
                    return "text"
                case _:
                    return "other"


        def fails(n):
            try:
                return 10 // n
            except ZeroDivisionError:
                registry["zero"] = registry.get("zero", 0) + 1
                raise


        def in_thread(values):
            out = []
            worker = threading.Thread(target=lambda: out.extend(ident(v) for v in values))
            worker.start()
            worker.join()
            return out


        async def twice(x):
            await asyncio.sleep(0)
            return ident(x) * 2


        def run_tasks(values):
            async def main():
                tasks = [asyncio.ensure_future(twice(v)) for v in values]
                return [await t for t in tasks]

            return asyncio.run(main())
    """,
    "tests/test_workout.py": """
        import pytest

        from work import core


        def test_calls_and_overflowing_arguments():
            for i in range(40):
                core.ident(i)
                core.ident(str(i) * 30)
                core.ident(i * 10**30)
                core.ident([i, {"k": (i, None)}])
            core.pair(1, 2, 3, 4, key="k", z=1.5)
            core.pair(None)
            assert core.fact(12) == 479001600


        def test_scalar_calls_past_the_bounds():
            # The compiled core's allocation-free path (#26.2) and what it hands back.
            box = core.Box(1)
            for i in range(40):
                core.ident(i)
                core.ident(-i * 10**12)
                core.ident("t%d" % i)
                core.ident(b"b" * i)
                core.ident(i % 3 == 0)
                core.ident(None)
                core.ident("\u00e9%d" % i)
                core.ident("s" * (500 + i))
                core.ident(i / 4)
                core.pair(i, "k", key=b"v")
                box.grow(i)
                hash(box)
            for i in range(40):
                core.ident(i % 5)  # kept pairs met again


        def test_generators():
            assert list(core.chained(6)) == [6, 5, 4, 3, 2, 1, 2, 6, 10]
            gen = core.countdown(3)
            assert next(gen) == 3
            gen.close()


        def test_objects_and_state():
            box = core.Box(2)
            assert box.grow(3) == 5
            with pytest.raises(ValueError):
                box.grow(-1)
            assert len({core.Box(1), core.Box(1), core.Box(2)}) == 2
            assert box.kind() == "cratebox"
            assert box.weighed([1, 2]) == 18
            crate = core.Crate(4, "c")
            for _ in range(3):
                assert crate.describe() == "cratec" + "lid" + "crate" + "-"
            crate.missing = "!"
            assert crate.describe().endswith("!")


        def test_decisions():
            assert [core.classify(v) for v in (1, 9, "s", 2.5)] == [
                "small", "big", "text", "other"
            ]


        def test_exceptions():
            assert core.fails(5) == 2
            with pytest.raises(ZeroDivisionError):
                core.fails(0)


        def test_threads_and_tasks():
            assert core.in_thread([1, 2, 3]) == [1, 2, 3]
            assert core.run_tasks([1, 2]) == [2, 4]


        @pytest.mark.parametrize("n", [0, 1, 7])
        def test_parametrized(n):
            assert core.fact(n) >= 1


        def test_standard_library_values():
            # Forms of their own (values.py; the compiled core hands them over), also inside
            # containers and past the bounded set, a subclass without one, a clock's values.
            import datetime as dt
            import decimal
            import fractions
            import uuid
            import zoneinfo

            class Later(dt.date):
                pass

            zone = zoneinfo.ZoneInfo("Europe/Paris")
            for i in range(12):
                core.ident(dt.timedelta(days=i, microseconds=i))
                core.ident(decimal.Decimal(i) / 4)
                core.ident([dt.date(2024, 1, i + 1), uuid.UUID(int=i)])
            core.ident(dt.datetime(2024, 3, 1, 12, tzinfo=zone))
            core.ident(dt.time(1, 2, tzinfo=dt.timezone.utc))
            core.ident(fractions.Fraction(1, 3))
            core.ident(Later(2024, 1, 1))
            core.pair(zone, dt.timezone.utc, key="short text", z=-0.0)
    """,
}


def _canonical_genomes(doc: dict[str, Any]) -> str:
    """What a recording says about the code, without the run's own metadata."""
    return json.dumps(
        {k: v for k, v in doc.items() if k != "run"}, sort_keys=True, separators=(",", ":")
    )


def _record_both(project: Path, *args: str, returncode: int = 0) -> tuple[str, str, str, str]:
    key = project.parent / f"{project.name}.key"
    key.write_bytes(os.urandom(32))
    texts: dict[str, str] = {}
    headers: dict[str, str] = {}
    for core in ("c", "python"):
        store = f".dg-{core}"
        done = record_full(
            project,
            f"--genome-key-file={key}",
            f"--genome-store={store}",
            *args,
            env={"DIFFGENOME_CORE": core},
            returncode=returncode,
            store=store,
        )
        texts[core] = _canonical_genomes(done.doc)
        headers[core] = done.output
    return texts["c"], texts["python"], headers["c"], headers["python"]


def test_the_compiled_core_is_built_where_it_is_supported() -> None:
    """A clean clone builds it (``pip install -e .``); without it recording is only slower,
    so its absence must be a failure here rather than a silent slowdown."""
    if not CAPABILITIES.tested:
        pytest.skip(f"the compiled core is not used on {sys.version_info[:2]} (untested row)")
    assert os.environ.get(cores.CORE_ENV, "") != "python"
    assert tracer_module._ACCEL is not None, tracer_module._ACCEL_ABSENT


@pytest.mark.parametrize("preview", [(), ("--genome-preview",)], ids=["digests", "previews"])
def test_workout_records_the_same_genomes_with_both_cores(
    tmp_path: Path, preview: tuple[str, ...]
) -> None:
    project = make_project(tmp_path, WORKOUT)
    compiled, python, header, python_header = _record_both(project, *preview)
    assert "datetime.timedelta" in compiled
    assert ('"preview":"' in compiled) == bool(preview)
    if CAPABILITIES.tested:
        assert "diffgenome: recording with the compiled core" in header
    expected = "diffgenome: recording with the pure-Python core (DIFFGENOME_CORE=python)"
    assert expected in python_header
    assert '"type":"call"' in compiled and "work.core.chained" in compiled
    # A method whose receiver is a cell records the fields it reads itself (values revision 7).
    weighed = [
        {fact["target"] for fact in node["state"]}
        for test in json.loads(compiled)["tests"]
        for genome in test["phases"].values()
        for node in genome["nodes"]
        if node.get("symbol") == "py:work.core.Box.weighed"
    ]
    assert weighed == [{"self.label"}], weighed
    assert compiled == python


def test_a_bounded_tree_is_the_same_with_both_cores(tmp_path: Path) -> None:
    """Past the node bound every new call lands in the phase's sink; the compiled core makes
    a call's new node through the tracer's own ``child`` (#26), bound and sink included."""
    project = make_project(tmp_path, WORKOUT)
    compiled, python, _, _ = _record_both(project, "-o", "genome_max_nodes=12")
    assert "truncated" in compiled
    assert compiled == python


@pytest.mark.parametrize(
    ("base", "args", "returncode"),
    [
        ("shop", (), 0),
        ("mocks", (), 0),
        ("tasks", (), 0),
        ("lab", ("tests/test_core.py", "tests/test_outcomes.py"), 1),
    ],
)
def test_example_projects_record_the_same_genomes_with_both_cores(
    tmp_path: Path, base: str, args: tuple[str, ...], returncode: int
) -> None:
    project = make_project(tmp_path, {}, base=base)
    compiled, python, _, _ = _record_both(project, *args, returncode=returncode)
    assert '"nodes":[{' in compiled
    assert compiled == python


def test_a_core_built_from_other_sources_is_not_used() -> None:
    """An in-place build left over from older sources (its VERSION differs) would run callbacks
    that disagree with tracer.py: the Python callbacks record instead, and say why."""
    if not CAPABILITIES.tested:
        pytest.skip("the compiled core is not used on this interpreter")
    probe = (
        "from diffgenome.recording.collect import cores as t\n"
        "t.CORE_VERSION = -1\n"
        "core, why = t.load_accelerator()\n"
        "print(core is None, why)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIFFGENOME_")}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True stale-build: rebuild it with pip install -e ."


def test_a_versioned_venv_folder_gets_its_own_python_or_a_clear_error(tmp_path: Path) -> None:
    """``scripts/venv .venv-3.X`` without PYTHON must not build that folder with another
    interpreter; with no 3.X here it says so in one line and creates nothing."""
    target = tmp_path / ".venv-3.9"
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    done = subprocess.run(
        ["sh", str(REPO / "scripts" / "venv"), str(target)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == f"venv: no Python 3.9 found for {target}; set PYTHON="
    assert not target.exists()
