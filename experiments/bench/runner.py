"""Measure one project on one Python: plain pytest, ``pytest --genome``, coverage.py.

The three modes alternate within each repetition, and the order rotates from one repetition to
the next, so that a burst of load from other processes on the machine does not land on one mode
only. Every run is a fresh process under a fresh ``measure.py`` wrapper (peak RSS), with a fresh
store / coverage data file in its own temporary folder.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.envs import Env, log

HERE = Path(__file__).resolve().parent
PLUGIN_DIR = HERE / "plugin"
MEASURE = HERE / "measure.py"

MODES = ("plain", "genome", "coverage")
COVERAGE_RC = """\
[run]
branch = True
dynamic_context = test_function
data_file = {data_file}
"""
# Variables that would change what pytest or coverage.py do, whatever the harness runs under.
_SCRUB = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTHONPATH",
    "COVERAGE_PROCESS_START",
    "COVERAGE_RCFILE",
    "COVERAGE_CORE",
    # Projects run as in a normal checkout: bytecode cached after the (unmeasured) warm-up.
    "PYTHONDONTWRITEBYTECODE",
)


@dataclass
class RunResult:
    mode: str
    rep: int
    returncode: int
    timed_out: bool
    wall_s: float
    maxrss_kb: int
    cpu_s: float
    outcomes: dict[str, dict[str, str]]
    store_bytes: int | None = None
    genome: dict[str, Any] | None = None
    log_tail: str = ""

    @property
    def tests(self) -> int:
        return sum(1 for k in self.outcomes if not k.startswith("<collect>"))

    def counts(self) -> dict[str, int]:
        return dict(Counter(v["outcome"] for v in self.outcomes.values()))

    def summary(self) -> dict[str, Any]:
        data = {
            "mode": self.mode,
            "rep": self.rep,
            "returncode": self.returncode,
            "timed_out": self.timed_out,
            "wall_s": round(self.wall_s, 3),
            "cpu_s": round(self.cpu_s, 3),
            "maxrss_mb": round(self.maxrss_kb / 1024, 1),
            "tests": self.tests,
            "counts": self.counts(),
        }
        if self.store_bytes is not None:
            data["store_bytes"] = self.store_bytes
        if self.genome is not None:
            data["genome"] = self.genome
        if self.returncode not in (0, 1) or self.timed_out:
            data["log_tail"] = self.log_tail
        return data


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env["PYTHONPATH"] = str(PLUGIN_DIR)
    env.update(extra or {})
    return env


BASE_ARGS = ("-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "bench_outcomes")


def pytest_args(env: Env) -> list[str]:
    args = [*BASE_ARGS, *env.project.pytest_args]
    for node in env.project.deselect:
        args += ["--deselect", node]
    return args + list(env.project.paths)


def command(mode: str, python: str, bindir: Path, args: list[str], tmp: Path) -> list[str]:
    if mode == "plain":
        return [python, *args]
    if mode == "genome":
        # One argument: as two, an existing PATH would take part in pytest's rootdir choice.
        return [python, *args, "--genome", f"--genome-store={tmp / 'store'}"]
    if mode == "coverage":
        rc = tmp / "coveragerc"
        rc.write_text(COVERAGE_RC.format(data_file=tmp / ".coverage"))
        return [str(bindir / "coverage"), "run", f"--rcfile={rc}", *args]
    raise ValueError(mode)


def measured(
    cmd: list[str],
    cwd: Path,
    tmp: Path,
    timeout: float,
    extra_env: dict[str, str] | None = None,
    *,
    outcomes: bool = True,
) -> tuple[dict[str, Any], dict[str, dict[str, str]], str]:
    """Run ``cmd`` under a fresh measure.py wrapper; (measurement, outcomes, log tail).
    ``outcomes``: whether pytest's outcomes are collected (``BENCH_OUTCOMES``, a path new for
    each run). A ``diffgenome diff`` runs without it: the variable would make each diff's
    recording environment another one, and no stored run would be reused."""
    out, log_file, outcomes_file = tmp / "measure.json", tmp / "output.log", tmp / "outcomes.json"
    where = {"BENCH_OUTCOMES": str(outcomes_file)} if outcomes else {}
    env = clean_env({**where, **(extra_env or {})})
    wrapper = [sys.executable, str(MEASURE), str(out), str(log_file), str(timeout), "--", *cmd]
    subprocess.run(wrapper, cwd=cwd, env=env, check=True)
    measurement = json.loads(out.read_text())
    outcomes = json.loads(outcomes_file.read_text()) if outcomes_file.exists() else {}
    text = log_file.read_text(errors="replace") if log_file.exists() else ""
    return measurement, outcomes, "\n".join(text.splitlines()[-15:])


def store_size(store: Path) -> int:
    return sum(p.stat().st_size for p in store.glob("genome.sqlite*"))


def genome_facts(store: Path) -> dict[str, Any]:
    """What the recorder says about its own run: status, verified tests, top reasons."""
    db = store / "genome.sqlite"
    if not db.exists():
        return {"status": "no store"}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        runs = con.execute("SELECT id, status, reasons FROM runs").fetchall()
        rows = con.execute("SELECT id, verified, unverified_reasons FROM tests").fetchall()
    finally:
        con.close()
    reasons: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for test, verified, text in rows:
        if not verified:
            for reason in json.loads(text):
                kind = _reason_kind(reason)
                reasons[kind] += 1
                if len(examples.setdefault(kind, [])) < 3:
                    examples[kind].append(test)
    return {
        "status": [r[1] for r in runs],
        "run_reasons": [json.loads(r[2]) for r in runs if r[2] != "[]"],
        "records": len(rows),
        "verified": sum(1 for _, v, _ in rows if v),
        "unverified_reasons": dict(reasons.most_common(12)),
        "unverified_examples": {k: examples[k] for k, _ in reasons.most_common(12)},
    }


def _reason_kind(reason: str) -> str:
    """`call:untraced-subprocess:git` -> `untraced-subprocess:git`; drop volatile numbers."""
    parts = reason.split(":")
    if parts[0] in ("setup", "call", "teardown"):
        parts = parts[1:]
    if parts and parts[0] in ("tracer-error", "inconsistent-exits"):
        parts = parts[:1]
    return ":".join(parts)


def run_once(env: Env, mode: str, rep: int, timeout: float) -> RunResult:
    with tempfile.TemporaryDirectory(prefix=f"bench-{mode}-") as name:
        tmp = Path(name)
        cmd = command(mode, env.exe, env.bin, pytest_args(env), tmp)
        m, outcomes, tail = measured(cmd, env.tree, tmp, timeout)
        result = RunResult(
            mode=mode,
            rep=rep,
            returncode=m["returncode"],
            timed_out=m["timed_out"],
            wall_s=m["wall_s"],
            maxrss_kb=m["maxrss_kb"],
            cpu_s=m["user_s"] + m["sys_s"],
            outcomes=outcomes,
            log_tail=tail,
        )
        if mode == "genome":
            result.store_bytes = store_size(tmp / "store")
            result.genome = genome_facts(tmp / "store")
    log(
        f"  {env.project.name} py{env.python.minor} rep {rep} {mode:8s} "
        f"{result.wall_s:7.2f}s rss {result.maxrss_kb / 1024:6.0f}MB "
        f"rc={result.returncode} {result.counts()}"
    )
    return result


@dataclass
class ProjectResult:
    env: Env
    runs: list[RunResult] = field(default_factory=list)

    def of(self, mode: str) -> list[RunResult]:
        return [r for r in self.runs if r.mode == mode]

    def median(self, mode: str, attr: str) -> float | None:
        values = [float(getattr(r, attr)) for r in self.of(mode)]
        return statistics.median(values) if values else None


def measure_project(env: Env, reps: int, warmup: bool, timeout: float) -> ProjectResult:
    result = ProjectResult(env=env)
    if warmup:
        log(f"  {env.project.name} py{env.python.minor} warm-up (plain, not measured)")
        run_once(env, "plain", -1, timeout)
    for rep in range(reps):
        order = MODES[rep % 3 :] + MODES[: rep % 3]
        for mode in order:
            result.runs.append(run_once(env, mode, rep, timeout))
    return result


def outcome_differences(result: ProjectResult, other: str) -> list[dict[str, Any]]:
    """Tests whose outcome under ``other`` differs from plain pytest, with every run's outcome.

    A test that also varies between plain runs is marked ``flaky_in_plain``: its difference is
    not evidence of interference.
    """
    plain, others = result.of("plain"), result.of(other)
    ids = set().union(*(r.outcomes for r in plain + others))
    diffs = []
    for test in sorted(ids):
        p = [r.outcomes.get(test, {}).get("outcome", "missing") for r in plain]
        o = [r.outcomes.get(test, {}).get("outcome", "missing") for r in others]
        if set(p) == set(o) and len(set(p)) == 1:
            continue
        messages = sorted(
            {
                r.outcomes[test]["message"]
                for r in others
                if test in r.outcomes and r.outcomes[test]["outcome"] in ("failed", "error")
            }
        )
        diffs.append(
            {
                "test": test,
                "plain": p,
                other: o,
                "flaky_in_plain": len(set(p)) > 1,
                "messages": messages[:3],
            }
        )
    return diffs
