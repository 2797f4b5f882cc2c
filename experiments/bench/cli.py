"""``make bench`` / ``make bench-quick``: argument parsing and the order of work."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import report
from bench.envs import (
    DEFAULT_WORK,
    REPO_ROOT,
    Env,
    Interpreter,
    current_python,
    ensure_env,
    find_pythons,
    log,
)
from bench.projects import PROJECTS, QUICK_PROJECT, Project, by_name
from bench.pullrequest import pull_request_row
from bench.runner import measure_project
from bench.synth import diff_benchmark, micro_benchmark

RESULTS = REPO_ROOT / "experiments" / "results"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="experiments/bench.py", description=__doc__)
    p.add_argument("--quick", action="store_true", help="one small project, this Python, 1 rep")
    p.add_argument("--projects", help="comma-separated names (default: all)")
    p.add_argument("--pythons", help="comma-separated minor versions, e.g. 3.12 (default: all)")
    p.add_argument("--reps", type=int, help="repetitions per mode (default 3; quick 1)")
    p.add_argument(
        "--out", type=Path, help="results folder (default experiments/results; quick: a temp dir)"
    )
    p.add_argument("--work", type=Path, default=DEFAULT_WORK, help="sdists, trees, venvs cache")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per pytest run")
    p.add_argument("--micro-n", type=int, help="calls in the micro-benchmark (default 10**6)")
    p.add_argument("--diff-tests", type=int, help="tests of the generated suite (default 5000)")
    p.add_argument("--name", default="", help="suffix of the result files: bench-DATE-NAME.*")
    p.add_argument("--no-micro", action="store_true")
    p.add_argument("--no-diff", action="store_true")
    p.add_argument(
        "--pull-requests",
        default="packaging,cookiecutter,more-itertools",
        help="suites of the pull-request rows (#48), comma-separated ('' for none)",
    )
    p.add_argument(
        "--only-pull-requests",
        action="store_true",
        help="only the pull-request rows: no suite rows, micro-benchmark or diff timings",
    )
    return p.parse_args(argv)


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    except (OSError, StopIteration):
        mem_kb = 0
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "mem_gb": round(mem_kb / 1024 / 1024, 1),
        "platform": platform.platform(),
        "harness_python": platform.python_version(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }


def diffgenome_info() -> dict[str, Any]:
    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("pytest-diffgenome")  # the distribution's name, not the package's
    except PackageNotFoundError:
        ver = "unknown"
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return {"version": ver, "commit": commit + ("+dirty" if dirty else "")}


def recording_core(env: Env) -> str:
    """Which callbacks ``--genome`` uses in ``env``: ``c`` or ``python (why)``."""
    probe = (
        "from diffgenome.recording.collect import tracer as t;"
        "print('c' if t._ACCEL is not None else f'python ({t._ACCEL_ABSENT})')"
    )
    done = subprocess.run([env.exe, "-c", probe], capture_output=True, text=True, check=False)
    return done.stdout.strip() or f"unknown ({done.stderr.strip()[-200:]})"


def quick_project(project: Project) -> Project:
    reason = "quick mode: left out to keep the CI check short (call-heavy)"
    deselect = dict(project.deselect) | {n: reason for n in project.quick_deselect}
    return dataclasses.replace(project, paths=project.quick_paths, deselect=deselect)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    reps = args.reps or (1 if args.quick else 3)
    if args.quick:
        projects = [quick_project(by_name(QUICK_PROJECT))]
        pythons: list[Interpreter] = [current_python()]
        micro_n, diff_tests = args.micro_n or 10**5, args.diff_tests or 200
    else:
        names = args.projects.split(",") if args.projects else [p.name for p in PROJECTS]
        projects = [by_name(n) for n in names]
        pythons = find_pythons()
        if args.pythons:
            wanted = args.pythons.split(",")
            pythons = [p for p in pythons if p.minor in wanted]
        micro_n, diff_tests = args.micro_n or 10**6, args.diff_tests or 5000
    if not pythons:
        log("no interpreter matches --pythons")
        return 2
    out = args.out
    tmp_out = None
    if out is None:
        if args.quick:
            tmp_out = tempfile.mkdtemp(prefix="diffgenome-bench-quick-")
            out = Path(tmp_out)
        else:
            out = RESULTS
    doc: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "name": args.name,
        "quick": args.quick,
        "partial": True,
        "command": " ".join(
            ["experiments/bench.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "reps": reps,
        "machine": machine_info(),
        "diffgenome": diffgenome_info(),
        "pythons": [p.version for p in pythons],
        "projects": [],
        "micro": {},
        "diff": {},
    }

    def save() -> None:
        doc["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
        json_path, md_path = report.write(doc, out)
        log(f"wrote {md_path} and {json_path.name}")

    envs: dict[tuple[str, str], Env] = {}
    if args.only_pull_requests:
        projects, args.no_micro, args.no_diff = [], True, True
    # Project by project, each on every Python, so that a cut-short run compares versions.
    for project in projects:
        for python in pythons:
            log(f"{project.name} {project.version} on Python {python.version}")
            env = ensure_env(project, python, args.work)
            envs[(project.name, python.minor)] = env
            result = measure_project(env, reps, warmup=not args.quick, timeout=args.timeout)
            entry = report.project_entry(result)
            entry["core"] = recording_core(env)
            entry["diffgenome_commit"] = diffgenome_info()["commit"]  # work may land mid-run
            doc["projects"].append(entry)
            save()
    pull_requests = [n for n in args.pull_requests.split(",") if n] if not args.quick else []
    if pull_requests:
        python = pythons[0]
        doc["pull_requests"] = []
        for name in pull_requests:
            log(f"pull request row: {name} on Python {python.version}")
            env = envs.get((name, python.minor)) or ensure_env(by_name(name), python, args.work)
            doc["pull_requests"].append(pull_request_row(env, reps, args.timeout))
            save()
    for python in pythons:
        if args.no_micro:
            break
        tool_env = envs[(projects[0].name, python.minor)]
        try:
            micro = micro_benchmark(tool_env, micro_n, max(reps, 1), args.timeout)
        except RuntimeError as exc:
            micro = {"error": str(exc)[-2000:]}
        doc["micro"][python.version] = micro
        save()
    if not args.no_diff:
        python = pythons[0]
        first = [e for e in doc["projects"] if e["python"] == python.version]
        largest = max(first, key=lambda e: e["tests"])["project"] if first else None
        largest_env = envs.get((largest, python.minor)) if largest else None
        tool_env = envs[(projects[0].name, python.minor)]
        doc["diff"] = diff_benchmark(tool_env, largest_env, diff_tests, reps, args.timeout)
        doc["diff"]["python"] = python.version
    doc["partial"] = False
    save()
    print(json.dumps(doc["goals"], indent=1))
    print(f"results: {out}")
    return 0
