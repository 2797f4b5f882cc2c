"""Generated projects: the per-event micro-benchmark and the N-test suite for the diff timing.

Both are written from scratch into a folder, so what they measure is exactly what the code
below says. They only need pytest, coverage and diffgenome, so they run in any of the
projects' virtualenvs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from bench.envs import Env, log
from bench.floor import build as build_floor
from bench.runner import BASE_ARGS, MODES, command, measured, pytest_args

_PYPROJECT = """\
[tool.pytest.ini_options]
pythonpath = ["src"]
testpaths = ["tests"]
"""

_MICRO_SRC = '''\
"""A call-heavy hot path: one function without a decision, one with exactly one `if`."""


def ident(x):
    return x


def branchy(x):
    if x & 1:
        return 1
    return 0
'''

_MICRO_TEST = """\
import json
import os
import time

from hot import branchy, ident

N = int(os.environ["BENCH_MICRO_N"])


def _record(name, seconds):
    with open(os.environ["BENCH_MICRO_OUT"], "a") as fh:
        fh.write(json.dumps({"case": name, "seconds": seconds}) + "\\n")


def test_loop_only():
    start = time.perf_counter()
    for i in range(N):
        pass
    _record("loop", time.perf_counter() - start)


def test_calls_without_decision():
    start = time.perf_counter()
    for i in range(N):
        ident(i)
    _record("ident", time.perf_counter() - start)


def test_calls_same_argument():
    start = time.perf_counter()
    for i in range(N):
        ident(7)
    _record("ident_same", time.perf_counter() - start)


def test_calls_with_one_decision():
    start = time.perf_counter()
    for i in range(N):
        branchy(i)
    _record("branchy", time.perf_counter() - start)
"""


def write_micro_project(root: Path) -> Path:
    (root / "src" / "hot").mkdir(parents=True, exist_ok=True)
    (root / "tests").mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(_PYPROJECT)
    (root / "src" / "hot" / "__init__.py").write_text(_MICRO_SRC)
    (root / "tests" / "test_hot.py").write_text(_MICRO_TEST)
    return root


def micro_benchmark(env: Env, n: int, reps: int, timeout: float) -> dict[str, Any]:
    """ns per call+return and per decision under each mode, by difference with plain.

    The loops time themselves (time.perf_counter around the loop only), so pytest start-up and
    the store write at session end are excluded. Per call: (ident under mode - ident plain) / N.
    Per decision: the extra cost of ``branchy`` over ``ident`` under the mode, minus the same
    difference in plain, / N.

    Two more modes give the floor (``bench/floor``): sys.monitoring delivering the same
    events on the same functions to an empty C callback (``floor_c``) and to an empty Python
    function (``floor_py``). Every figure of ``--genome`` and coverage.py is also given as a
    multiple of the C floor: what the machinery costs before a recorder does anything.
    """
    with tempfile.TemporaryDirectory(prefix="bench-micro-") as name:
        root = write_micro_project(Path(name) / "micro")
        floor_dir, floor_error = build_floor(env.exe, Path(name) / "floor")
        modes = [*MODES, *(("floor_c", "floor_py") if floor_dir is not None else ())]
        times: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
        for rep in range(reps):
            turn = rep % len(modes)
            for mode in modes[turn:] + modes[:turn]:
                with tempfile.TemporaryDirectory(prefix=f"bench-micro-{mode}-") as t:
                    tmp = Path(t)
                    out = tmp / "micro.jsonl"
                    extra = {"BENCH_MICRO_N": str(n), "BENCH_MICRO_OUT": str(out)}
                    if mode.startswith("floor_"):
                        cmd = [*command("plain", env.exe, env.bin, list(BASE_ARGS), tmp)]
                        cmd += ["-p", "bench_floor"]
                        extra["BENCH_FLOOR"] = mode.removeprefix("floor_")
                        extra["BENCH_FLOOR_DIR"] = str(floor_dir)
                        extra["BENCH_FLOOR_MODULE"] = "hot"
                    else:
                        cmd = command(mode, env.exe, env.bin, list(BASE_ARGS), tmp)
                    m, _, tail = measured(cmd, root, tmp, timeout, extra)
                    if m["returncode"] != 0 or not out.exists():
                        raise RuntimeError(f"micro-benchmark under {mode} failed:\n{tail}")
                    for line in out.read_text().splitlines():
                        row = json.loads(line)
                        times[mode].setdefault(row["case"], []).append(row["seconds"])
        med = {m: {c: statistics.median(v) for c, v in cases.items()} for m, cases in times.items()}
    result: dict[str, Any] = {"n": n, "reps": reps, "median_s": med}
    plain = med["plain"]
    for mode in modes[1:]:
        cur = med[mode]
        call = (cur["ident"] - plain["ident"]) / n * 1e9
        decision = ((cur["branchy"] - cur["ident"]) - (plain["branchy"] - plain["ident"])) / n * 1e9
        same = (cur["ident_same"] - plain["ident_same"]) / n * 1e9
        result[mode] = {
            "ns_per_call_return": round(call, 1),
            "ns_per_call_return_same_arg": round(same, 1),
            "ns_per_decision": round(decision, 1),
            "slowdown_ident": round(cur["ident"] / plain["ident"], 2),
            "slowdown_branchy": round(cur["branchy"] / plain["branchy"], 2),
        }
    result["plain"] = {
        "ns_per_call_return": round((plain["ident"] - plain["loop"]) / n * 1e9, 1),
        "ns_per_decision": round((plain["branchy"] - plain["ident"]) / n * 1e9, 1),
    }
    if floor_dir is None:
        result["floor_error"] = floor_error
    else:
        floor = result["floor_c"]
        for mode in ("genome", "coverage", "floor_py"):
            result[mode]["over_floor"] = {
                key: _multiple(result[mode][key], floor[key])
                for key in ("ns_per_call_return", "ns_per_call_return_same_arg", "ns_per_decision")
            }
    log(f"  micro n={n}: genome {result['genome']}  coverage {result['coverage']}")
    if "floor_c" in result:
        log(f"  micro floor: C {result['floor_c']}  Python {result['floor_py']}")
    return result


def _multiple(value: float, floor: float) -> float | None:
    """``value`` as a multiple of the floor; None when either is lost in the noise (a
    difference of timings that came out at or below a nanosecond, or below zero, as the
    per-decision estimate can: see docs/performance.md, has no ratio)."""
    return round(value / floor, 1) if floor > 1.0 and value > 0 else None


def _module_source(k: int, variant: int) -> str:
    return textwrap.dedent(
        f'''\
        """Generated module {k}."""


        def classify_{k}(x):
            if x < {10 + variant}:
                return "small"
            elif x % 3 == 0:
                return "fizz"
            return "big"


        def total_{k}(items):
            acc = 0
            for item in items:
                if item % 2:
                    acc += item
            return acc + len(classify_{k}(acc))
        '''
    )


def _test_source(k: int, tests: int) -> str:
    lines = [f"from synth.mod_{k} import classify_{k}, total_{k}", ""]
    for t in range(tests):
        lines += [
            "",
            f"def test_{t}():",
            f"    assert classify_{k}({t}) in ('small', 'fizz', 'big')",
            f"    assert total_{k}(range({t % 17})) >= 0",
            "",
        ]
    return "\n".join(lines)


def write_suite(root: Path, n_tests: int, variant: int = 0) -> Path:
    """A suite of ``n_tests`` tests over 50 modules; ``variant`` changes one module's branch."""
    files = 50
    per_file, rest = divmod(n_tests, files)
    (root / "src" / "synth").mkdir(parents=True, exist_ok=True)
    (root / "tests").mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(_PYPROJECT)
    (root / ".gitignore").write_text("__pycache__/\n")
    (root / "src" / "synth" / "__init__.py").write_text("")
    for k in range(files):
        source = _module_source(k, variant if k == 0 else 0)
        (root / "src" / "synth" / f"mod_{k}.py").write_text(source)
        count = per_file + (1 if k < rest else 0)
        (root / "tests" / f"test_mod_{k}.py").write_text(_test_source(k, count))
    return root


def _git(root: Path, *args: str) -> None:
    base = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*base, *args], cwd=root, check=True, capture_output=True)


def diff_available(env: Env) -> bool:
    probe = subprocess.run(
        [env.exe, "-m", "diffgenome.analysis.cli", "diff", "--help"],
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0


def run_ids(store: Path) -> list[str]:
    import sqlite3

    con = sqlite3.connect(f"file:{store / 'genome.sqlite'}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("SELECT id FROM runs ORDER BY started_at")]
    finally:
        con.close()


def record_twice(
    env: Env, root: Path, store: Path, timeout: float, between: Any = None
) -> list[dict[str, Any]]:
    """Two ``pytest --genome`` runs of ``root`` into one store; ``between`` edits the tree."""
    runs = []
    for i in range(2):
        if i == 1 and between is not None:
            between()
        with tempfile.TemporaryDirectory(prefix="bench-rec-") as t:
            tmp = Path(t)
            args = pytest_args(env) if root == env.tree else list(BASE_ARGS)
            cmd = [env.exe, *args, "--genome", f"--genome-store={store}"]
            m, outcomes, tail = measured(cmd, root, tmp, timeout)
            entry = {"wall_s": round(m["wall_s"], 3), "returncode": m["returncode"]}
            entry["tests"] = sum(1 for k in outcomes if not k.startswith("<collect>"))
            if m["returncode"] not in (0, 1):
                entry["log_tail"] = tail
            runs.append(entry)
    return runs


def time_diff(env: Env, store: Path, repo: Path, reps: int, timeout: float) -> dict[str, Any]:
    """Median wall time of ``diffgenome diff`` between the store's first two runs.

    Run in the project's git repository (so that it can look at the code changes between the
    two runs' commits); the report goes to a file, the exit code is kept (1 = changes found).
    """
    base, head = run_ids(store)[:2]
    help_text = subprocess.run(
        [env.exe, "-m", "diffgenome.analysis.cli", "diff", "--help"],
        capture_output=True,
        text=True,
    ).stdout
    cmd = [env.exe, "-m", "diffgenome.analysis.cli", "diff"]
    cmd += ["--store", str(store)] if "--store" in help_text else []
    cmd += ["--fail-on", "never"] if "--fail-on" in help_text else []
    cmd += [base, head]
    walls, codes = [], []
    for _ in range(reps):
        with tempfile.TemporaryDirectory(prefix="bench-diff-") as t:
            m, _, tail = measured(cmd, repo, Path(t), timeout)
            walls.append(m["wall_s"])
            codes.append(m["returncode"])
    return {
        "command": " ".join(cmd[2:]),
        "median_s": round(statistics.median(walls), 3),
        "runs_s": [round(w, 3) for w in walls],
        "returncodes": codes,
        "last_output_tail": tail,
    }


def diff_benchmark(
    env: Env, largest: Env | None, n_tests: int, reps: int, timeout: float
) -> dict[str, Any]:
    """``diffgenome diff`` timings, or why there are none (never a made-up number)."""
    if not diff_available(env):
        return {"available": False, "note": "not available yet: `diffgenome diff --help` fails"}
    result: dict[str, Any] = {"available": True}
    with tempfile.TemporaryDirectory(prefix="bench-diffsuite-") as name:
        root = write_suite(Path(name) / "suite", n_tests)
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "base")

        def change() -> None:
            write_suite(root, n_tests, variant=5)
            _git(root, "commit", "-q", "-am", "head")

        store = Path(name) / "store"
        recorded = record_twice(env, root, store, timeout, change)
        result["generated"] = {"tests": n_tests, "record": recorded}
        result["generated"].update(time_diff(env, store, root, reps, timeout))
        log(f"  diff of two {n_tests}-test runs: {result['generated']['median_s']} s")
    if largest is not None:
        with tempfile.TemporaryDirectory(prefix="bench-diffreal-") as name:
            store = Path(name) / "store"
            recorded = record_twice(largest, largest.tree, store, timeout)
            entry = {"project": largest.project.name, "record": recorded}
            entry.update(time_diff(largest, store, largest.tree, reps, timeout))
            result["largest"] = entry
            log(f"  diff of two {largest.project.name} runs: {entry['median_s']} s")
    return result
