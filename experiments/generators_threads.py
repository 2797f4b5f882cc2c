"""Issue #12.5: where `--genome` spends its time on more-itertools' generator and thread tests.

    python experiments/generators_threads.py                  # everything, 3 reps
    python experiments/generators_threads.py --part walls     # pytest plain vs --genome only
    python experiments/generators_threads.py --part probe     # in-process probes only

The two tests are ``tests/test_recipes.py::PrimeFunctionTests::test_primes`` (a ``yield from``
chain stepped ~46 million times) and ``tests/test_more.py::TestConcurrentTee::
test_concurrent_consumers`` (100 threads share one lock). Run it with the benchmark's venv of
more-itertools 11.2.1 (``--python``) and its tree (``--tree``); the diffgenome that records is
the one this file belongs to (its folder goes first on PYTHONPATH). The tree is copied to a
temporary folder so that nothing is written into it.

Parts:

- ``walls``: wall time of each test under ``pytest`` and ``pytest --genome``, alternating, the
  median of ``--reps`` runs, and the load average before each run.
- ``probe``: the same work run in-process under a ``Tracer`` (as the plugin builds it): how
  many events of each kind the recorder's callbacks receive, how many of them the compiled
  core hands to the Python callbacks, and per-workload time. For the threads case the same
  ``concurrent_tee`` consumption is also run in one thread (the same calls, the same events,
  no contention), and with a longer GIL switch interval, and the process's context switches
  are counted: what recording adds per event, and what the contention multiplies it by.

Counting wraps every registered callback in a Python function, so the counting runs are
slower than the timed ones; counts and times come from separate runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _work() -> Path:
    """experiments/work of this checkout, or of the main worktree when this one is another
    git worktree (the benchmark's trees and venvs are made once, in the main one)."""
    if (HERE / "work/trees").is_dir():
        return HERE / "work"
    try:
        common = subprocess.run(
            ["git", "rev-parse", "--git-common-dir"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return HERE / "work"
    return (HERE / common).resolve().parent / "experiments/work"


WORK = _work()
DEFAULT_TREE = WORK / "trees/more-itertools-11.2.1/py3.12/src-root"
DEFAULT_PYTHON = WORK / "venvs/more-itertools-11.2.1-py3.12/bin/python"
TESTS = {
    "primes": "tests/test_recipes.py::PrimeFunctionTests::test_primes",
    "tee": "tests/test_more.py::TestConcurrentTee::test_concurrent_consumers",
}


def _load() -> str:
    return os.getloadavg()[0].__format__(".2f")


def _env(root: Path = REPO) -> dict[str, str]:
    """The environment of a child that records with the diffgenome found in ``root``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # ``root`` may be another worktree: write nothing
    return env


def walls(python: str, tree: Path, reps: int, roots: dict[str, Path]) -> dict[str, Any]:
    """Median wall time of each test, plain and recorded (with each diffgenome of ``roots``),
    the runs of one repetition alternating."""
    out: dict[str, Any] = {}
    for name, test in TESTS.items():
        times: dict[str, list[float]] = {"plain": [], **{label: [] for label in roots}}
        loads: list[str] = []
        for rep in range(reps):
            for mode in times:
                store = tempfile.mkdtemp(prefix="gt-store-")
                cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", test]
                if mode != "plain":
                    cmd[4:4] = ["--genome", "--genome-store", store]
                env = _env(roots.get(mode, REPO))
                loads.append(_load())
                start = time.perf_counter()
                done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
                elapsed = time.perf_counter() - start
                shutil.rmtree(store, ignore_errors=True)
                if done.returncode != 0:
                    raise SystemExit(f"{mode} {test} failed:\n{done.stdout}\n{done.stderr}")
                times[mode].append(elapsed)
                print(f"  {name} {mode} rep {rep + 1}: {elapsed:.2f} s (load {loads[-1]})")
        out[name] = {mode: {"median": statistics.median(t), "runs": t} for mode, t in times.items()}
        out[name]["loads"] = loads
    return out


# -- in-process probes (run in the benchmark venv, as a child of this script) ----------------


def _probe_child(tree: str, workload: str, count: bool, args: dict[str, Any]) -> dict[str, Any]:
    """Run one workload under a Tracer in this process and say what it cost and received."""
    import resource
    import threading

    sys.path.insert(0, tree)
    import more_itertools as mi

    from diffgenome.recording.collect import tracer as tracer_module
    from diffgenome.recording.collect import values
    from diffgenome.recording.collect.contract import Bounds
    from diffgenome.recording.collect.scope import Scope

    counts: dict[str, int] = {}
    record = args.get("record", True)
    tracer = None
    counter_tool = None
    if record:
        core = args.get("core", "auto")
        if count:
            _count_fallbacks(tracer_module, counts)
        tracer = tracer_module.Tracer(
            Scope(tree, [tree], [tree + "/tests"]), values.Digester(b"k" * 32), Bounds(), core=core
        )
        if count:
            slow = tracer._parent_of
            tracer._parent_of = _counted(slow, "parent_of: frame walk", counts)  # type: ignore[method-assign]
            state = tracer._record_state  # receiver fields / globals: Python in both cores
            tracer._record_state = _counted(state, "record_state (Python)", counts)  # type: ignore[method-assign]
        assert tracer.start(), tracer.unavailable_reason
        tracer.begin_phase()
        if count:
            counter_tool = _count_events(tracer, counts)
    if tracer is not None and args.get("outer_unarmed"):
        # An upper bound, not a recording: sieve's PY_RESUME/PY_YIELD switched off, as if the
        # outer level of its ``yield from`` cost nothing (its counts are then wrong).
        from sys import monitoring

        tracer.symbol_of(mi.sieve)  # learnt and armed now
        code = mi.sieve.__code__
        armed = monitoring.get_local_events(tracer.tool_id, code)
        off = monitoring.events.PY_RESUME | monitoring.events.PY_YIELD
        monitoring.set_local_events(tracer.tool_id, code, armed & ~off)
    if tracer is not None and args.get("state_unrecorded"):
        # An upper bound, not a recording: ``__next__``'s receiver state not recorded (its
        # state facts are then missing), to see what recording them costs.
        tracer.symbol_of(mi.more._concurrent_tee.__next__)
        info = tracer.codes[id(mi.more._concurrent_tee.__next__.__code__)]
        assert info is not None
        info.self_attrs, info.state_globals, info.has_state = (), (), False
    if args.get("switchinterval"):
        sys.setswitchinterval(args["switchinterval"])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    extra: dict[str, Any] = {}
    if workload == "primes":
        limit = args["limit"]
        values_out = 0
        for i, n in enumerate(mi.sieve(limit)):
            assert mi.is_prime(n)
            assert mi.nth_prime(i) == n
            values_out += i + 1  # nth(sieve(...), i) takes i + 1 values from the chain
        extra["values through the chain"] = values_out + len(list(mi.sieve(0)))
        extra["primes"] = i + 1
    elif workload == "tee":
        limit, n_threads = args["limit"], args["threads"]

        # The test's two closures, compiled as code of its test file (test code, in scope).
        item = "None" if args.get("constant") else "x"
        code = compile(
            f"def producer(limit):\n    for x in range(limit):\n        yield {item}\n"
            "def consumer(iterator, out):\n    out.append(len([x for x in iterator]))\n",
            tree + "/tests/test_more.py",  # test code, as the real test's closures are
            "exec",
        )
        space: dict[str, Any] = {}
        exec(code, space)
        tees = mi.concurrent_tee(space["producer"](limit), n=n_threads)
        out: list[int] = []
        if args["threaded"]:
            workers = [threading.Thread(target=space["consumer"], args=[t, out]) for t in tees]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
        else:
            for t in tees:
                space["consumer"](t, out)
        assert out == [limit] * n_threads, out[:3]
        extra["next calls"] = limit * n_threads
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    errors = None
    nodes = None
    if counter_tool is not None:
        sys.monitoring.set_events(counter_tool, 0)
        sys.monitoring.free_tool_id(counter_tool)
    if tracer is not None:
        capture = tracer.end_phase()
        tracer.stop()
        errors = tracer.errors
        nodes = _summary(capture.root)
    return {
        "seconds": seconds,
        "voluntary_switches": after.ru_nvcsw - usage.ru_nvcsw,
        "involuntary_switches": after.ru_nivcsw - usage.ru_nivcsw,
        "counts": counts,
        "errors": errors,
        "core": None if tracer is None else tracer.core,
        "nodes": nodes,
        **extra,
    }


def _count_fallbacks(tracer_module: Any, counts: dict[str, int]) -> None:
    """Count the events the compiled core hands to the Python callbacks.

    The Python callbacks find the frame of the event with ``getframe(1)``; a counting wrapper
    in between would be that frame, so the module's ``_getframe`` (bound when the callbacks
    are made) is replaced by one that steps over the wrappers' frames."""
    real_accel = tracer_module._ACCEL
    wrappers: set[Any] = set()

    def getframe(depth: int = 0) -> Any:
        frame = sys._getframe(depth + 1)
        while frame is not None and frame.f_code in wrappers:
            frame = frame.f_back
        return frame

    class Counted:
        VERSION = getattr(real_accel, "VERSION", None)

        @staticmethod
        def Core(**kw: Any) -> Any:
            for key in ("on_start", "on_resume", "on_branch"):
                kw[key] = _counted(kw[key], "fallback to Python " + key, counts)
                wrappers.add(kw[key].__code__)
            kw["summarize"] = _counted(kw["summarize"], "fallback to Python summarize", counts)
            return real_accel.Core(**kw)

    tracer_module._getframe = getframe
    if real_accel is not None:
        tracer_module._ACCEL = Counted


def _count_events(tracer: Any, counts: dict[str, int]) -> int:
    """A second sys.monitoring tool that receives the events the recorder receives: the
    recorder's global events, and its local ones on every code object it has armed (armed
    ones are re-checked as new code objects are armed). Counting on another tool keeps the
    recorder's own callbacks, and the frames they see, unchanged."""
    mon = sys.monitoring
    events = mon.events
    tool = next(t for t in (3, 2, 1) if mon.get_tool(t) is None)
    mon.use_tool_id(tool, "gt-counter")
    names = {
        events.PY_START: "PY_START",
        events.PY_RESUME: "PY_RESUME",
        events.PY_THROW: "PY_THROW",
        events.PY_RETURN: "PY_RETURN",
        events.PY_YIELD: "PY_YIELD",
        events.PY_UNWIND: "PY_UNWIND",
        events.BRANCH: "BRANCH",
    }
    armed = [0]  # how many of tracer.tool.armed this tool has armed too
    codes = tracer.codes

    def arm() -> None:
        done = tracer.tool.armed
        while armed[0] < len(done):
            code = done[armed[0]]
            armed[0] += 1
            mon.set_local_events(tool, code, mon.get_local_events(tracer.tool_id, code))

    for event, name in names.items():
        counts[name] = 0

        def counter(code: Any, *args: Any, _name: str = name, _event: int = event) -> Any:
            if _event == events.PY_START:
                arm()  # a code object the recorder armed at this start
                if codes.get(id(code)) is None:
                    return None  # out of scope: the recorder disabled it at its first start
            counts[_name] += 1
            return None

        mon.register_callback(tool, event, counter)
    mon.set_events(tool, events.PY_START | events.PY_UNWIND | events.PY_THROW)
    arm()
    return tool


def _counted(callback: Any, name: str, counts: dict[str, int]) -> Any:
    counts[name] = 0

    def counted(*args: Any) -> Any:
        counts[name] += 1
        return callback(*args)

    return counted


def _summary(root: Any) -> list[dict[str, Any]]:
    """count / yielded / returned of the in-scope call nodes, by symbol and depth."""
    rows: list[dict[str, Any]] = []

    def walk(node: Any, depth: int) -> None:
        for child in node.children.values():
            key = child.key
            symbol = getattr(key, "symbol", str(key))
            rows.append(
                {
                    "depth": depth,
                    "symbol": symbol,
                    "count": child.count,
                    "yielded": child.yielded,
                    "returned": child.returned,
                }
            )
            walk(child, depth + 1)
        for side in node.thread_roots:
            walk(side, depth + 1)

    walk(root, 0)
    return rows[:12]


def probe(
    python: str, tree: Path, roots: dict[str, Path], reps: int, only: str | None = None
) -> dict[str, Any]:
    runs = {
        # Counts (slow: every callback wrapped): a prefix of test_primes' work.
        "primes-count-c": ("primes", True, {"limit": 2000}),
        "primes-count-python": ("primes", True, {"limit": 2000, "core": "python"}),
        # Time per value through the chain, same prefix, not counted.
        "primes-plain": ("primes", False, {"limit": 10**4, "record": False}),
        "primes-c": ("primes", False, {"limit": 10**4}),
        "primes-c-outer-level-unarmed": ("primes", False, {"limit": 10**4, "outer_unarmed": True}),
        # concurrent_tee: 100 tees of 10**5 values, the test's sizes.
        "tee-count-threads": ("tee", True, {"limit": 10**4, "threads": 100, "threaded": True}),
        "tee-plain-threads": (
            "tee",
            False,
            {"limit": 10**5, "threads": 100, "threaded": True, "record": False},
        ),
        "tee-plain-one-thread": (
            "tee",
            False,
            {"limit": 10**5, "threads": 100, "threaded": False, "record": False},
        ),
        "tee-c-threads": ("tee", False, {"limit": 10**5, "threads": 100, "threaded": True}),
        "tee-c-one-thread": ("tee", False, {"limit": 10**5, "threads": 100, "threaded": False}),
        "tee-c-one-thread-state-unrecorded": (
            "tee",
            False,
            {"limit": 10**5, "threads": 100, "threaded": False, "state_unrecorded": True},
        ),
        "tee-c-one-thread-none-values-state-unrecorded": (
            "tee",
            False,
            {
                "limit": 10**5,
                "threads": 100,
                "threaded": False,
                "constant": True,
                "state_unrecorded": True,
            },
        ),
        # The same calls returning None: what the 10**5 distinct results cost to summarise.
        "tee-c-one-thread-none-values": (
            "tee",
            False,
            {"limit": 10**5, "threads": 100, "threaded": False, "constant": True},
        ),
        "tee-c-threads-switch-50ms": (
            "tee",
            False,
            {"limit": 10**5, "threads": 100, "threaded": True, "switchinterval": 0.05},
        ),
        "tee-plain-threads-switch-50ms": (
            "tee",
            False,
            {
                "limit": 10**5,
                "threads": 100,
                "threaded": True,
                "record": False,
                "switchinterval": 0.05,
            },
        ),
    }
    for label in list(roots)[1:]:  # the other diffgenomes: the timed recorded runs only
        for name in [n for n in runs if n.startswith(("primes-c", "tee-c-")) and "count" not in n]:
            runs[f"{name}@{label}"] = runs[name]
    if only:
        runs = {name: run for name, run in runs.items() if only in name}
    results: dict[str, Any] = {}
    # Counting runs once; timed runs ``reps`` times, one repetition of all of them after the
    # other, so that before/after and plain/recorded share the machine's load.
    order = [n for n in runs if "count" in n] + [
        n for _ in range(reps) for n in runs if "count" not in n
    ]
    for name in order:
        workload, count, args = runs[name]
        root = roots[name.split("@", 1)[1]] if "@" in name else REPO
        payload = json.dumps(
            {"tree": str(tree), "workload": workload, "count": count, "args": args}
        )
        load = _load()
        done = subprocess.run(
            [python, __file__, "--child", payload],
            cwd=tempfile.gettempdir(),
            env=_env(root),
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"probe {name} failed:\n{done.stdout}\n{done.stderr}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["load"] = load
        kept = results.setdefault(name, {**result, "runs": [], "loads": []})
        kept["runs"].append(result["seconds"])
        kept["loads"].append(load)
        kept["seconds"] = statistics.median(kept["runs"])
        print(f"  {name}: {result['seconds']:.2f} s (load {load}) {json.dumps(result['counts'])}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--python", default=str(DEFAULT_PYTHON) if DEFAULT_PYTHON.exists() else sys.executable
    )
    parser.add_argument("--tree", default=str(DEFAULT_TREE))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--part", choices=("all", "walls", "probe"), default="all")
    parser.add_argument("--only", help="run only the probes whose name contains this")
    parser.add_argument("--json", help="write the numbers here as JSON")
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="also record with the diffgenome of this checkout (its C core built in place)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        spec = json.loads(options.child)
        result = _probe_child(spec["tree"], spec["workload"], spec["count"], spec["args"])
        print(json.dumps(result))
        return 0
    with tempfile.TemporaryDirectory(prefix="gt-tree-") as scratch:
        tree = Path(scratch) / "src-root"
        shutil.copytree(options.tree, tree, ignore=shutil.ignore_patterns(".diffgenome"))
        roots = {"genome": REPO}
        for spec in options.compare:
            label, _, path = spec.partition("=")
            roots["genome@" + label] = Path(path).resolve()
        report: dict[str, Any] = {
            "python": options.python,
            "cpus": os.cpu_count(),
            "roots": {k: str(v) for k, v in roots.items()},
        }
        if options.part in ("all", "walls"):
            print("walls (pytest, median of reps, alternating):")
            report["walls"] = walls(options.python, tree, options.reps, roots)
        if options.part in ("all", "probe"):
            print("probes (in-process):")
            probe_roots = {k.removeprefix("genome@"): v for k, v in roots.items()}
            report["probe"] = probe(options.python, tree, probe_roots, options.reps, options.only)
    if options.json:
        Path(options.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
