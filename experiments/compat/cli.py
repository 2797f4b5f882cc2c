"""``make compat``: the matrix of strict settings and common plugins (issue #15)."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shutil
import sys
from pathlib import Path
from typing import Any

from bench.envs import DEFAULT_WORK, REPO_ROOT, current_python, ensure_env, log
from bench.projects import by_name

from compat import examples, report
from compat.matrix import ROWS, Row, by_key
from compat.run import (
    Result,
    check_genome,
    installed,
    missing_plugins,
    overlay,
    run_pair,
    scratch_dir,
)

RESULTS = REPO_ROOT / "experiments" / "results"
TIMEOUT = 1800.0


def suite_args(suite: str, row: Row) -> list[str]:
    project = by_name(suite)
    args = ["-p", "compat_outcomes", "-q", "-rN"]
    if row.no_cache:
        args += ["-p", "no:cacheprovider"]
    args += list(project.pytest_args)
    for node in project.deselect:
        args += ["--deselect", node]
    extra = list(row.args_for(suite))
    paths = [a for a in row.per_suite.get(suite, ()) if not a.startswith("-")]
    if not paths:
        args += list(project.paths)
    return args + extra


def example_args(row: Row) -> list[str]:
    args = ["-p", "compat_outcomes", "-q", "-rN", "-W", "ignore::DeprecationWarning"]
    if row.no_cache:
        args += ["-p", "no:cacheprovider"]
    if "pytest-randomly" not in row.plugins:
        args += ["-p", "no:randomly"]
    return args + list(row.args if row.example_args is None else row.example_args)


def example_python(row: Row, work: Path) -> str:
    """This interpreter, or an overlay of it with the row's plugins it lacks."""
    missing = tuple(missing_plugins(row.plugins))
    if not missing:
        return sys.executable
    base = f"example-{Path(sys.prefix).name}-py{platform.python_version()}"
    return overlay(sys.executable, missing, work, base)


def run_example(row: Row, python: str | None = None) -> Result:
    """One example row: plain and --genome in a fresh copy of the example project."""
    assert row.example is not None
    example = examples.EXAMPLES[row.example]
    result = Result(row=row.key, target=f"example:{example.name}", kind="example")
    scratch = scratch_dir(f"compat-{row.key}-")
    try:
        project = examples.write(example, scratch / "project")
        run_pair(
            result,
            python or sys.executable,
            project,
            example_args(row),
            dict(row.env),
            row.repeat,
            600.0,
            scratch,
        )
        check_example(result, example, row.partial)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def check_example(result: Result, example: examples.Example, partial: bool = False) -> None:
    check_genome(result)
    for mode_runs in (result.plain, result.genome):
        for run in mode_runs:
            for suffix, outcome in example.expect.items():
                found = [o for t, o in run.outcomes.items() if t.endswith("::" + suffix)]
                if found != [outcome] and not (partial and not found):
                    result.problems.append(
                        f"{run.mode}: {suffix} is {found or 'missing'}, the example needs {outcome}"
                    )
    last = result.genome[-1].genome if result.genome else None
    if not last or not last.get("exported"):
        return
    for test, reasons in last["reasons_by_test"].items():
        suffix = test.rsplit("::", 1)[-1]
        wanted = example.disclosed.get(suffix)
        if wanted is None and reasons:
            result.problems.append(f"{suffix} unverified: {reasons[:3]}")
        if wanted is not None and not any(r.startswith(wanted) for r in reasons):
            result.problems.append(f"{suffix} should be unverified ({wanted}...), has {reasons}")


def run_suite(row: Row, suite: str, work: Path, baseline: dict[str, set[str]]) -> Result:
    result = Result(row=row.key, target=suite, kind="suite")
    try:
        env = ensure_env(by_name(suite), current_python(), work)
        python = overlay(env.exe, row.plugins, work, env.venv.name)
        result.packages = {
            k: v for k, v in installed(python).items() if k in {p.lower() for p in row.plugins}
        }
    except Exception as exc:  # a plugin that will not install is a row "not run", with why
        result.not_run = f"environment: {type(exc).__name__}: {exc}"[:300]
        return result
    scratch = scratch_dir(f"compat-{row.key}-{suite}-")
    try:
        run_pair(
            result,
            python,
            env.tree,
            suite_args(suite, row),
            dict(row.env),
            row.repeat,
            TIMEOUT,
            scratch,
            control=row.plain_control,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    allowed = baseline.get(suite)
    check_genome(result, allowed)
    if row.key == "baseline" and result.genome and result.genome[-1].genome:
        baseline[suite] = set(result.genome[-1].genome.get("unverified_reasons", {}))
    return result


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="experiments/compat.py", description=__doc__)
    p.add_argument("--rows", help="comma-separated row keys (default: all)")
    p.add_argument("--examples-only", action="store_true", help="no real suites (no downloads)")
    p.add_argument("--suites-only", action="store_true", help="no example projects")
    p.add_argument("--work", type=Path, default=DEFAULT_WORK, help="sdists, trees, venvs cache")
    p.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    p.add_argument("--name", default="", help="suffix of the result files")
    p.add_argument("--no-docs", action="store_true", help="leave docs/reliability.md alone")
    p.add_argument("--suites", help="comma-separated real suites to keep (default: each row's)")
    p.add_argument(
        "--report",
        type=Path,
        nargs="+",
        help="write docs/reliability.md's table from these results JSON files (e.g. runs cut "
        "short), the first file's entry winning for a (row, target) measured twice",
    )
    return p.parse_args(argv)


def write(opts: argparse.Namespace, results: list[Result], name: str, docs: bool) -> str:
    data: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "results": [r.summary() for r in results],
    }
    for entry in data["results"]:
        if entry["genome"]:
            entry["genome"].pop("reasons_by_test", None)
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True))
    table = report.table(data)
    (opts.out / f"{name}.md").write_text(report.details(data, table))
    if docs:
        report.update_docs(REPO_ROOT / "docs" / "reliability.md", table, name)
    return table


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    if opts.report:
        data = json.loads(opts.report[0].read_text())
        seen = {(e["row"], e["target"]) for e in data["results"]}
        for extra in opts.report[1:]:
            for entry in json.loads(extra.read_text())["results"]:
                if (entry["row"], entry["target"]) not in seen:
                    seen.add((entry["row"], entry["target"]))
                    data["results"].append(entry)
        names = ", ".join(f"experiments/results/{path.stem}.md" for path in opts.report)
        report.update_docs(REPO_ROOT / "docs" / "reliability.md", report.table(data), names)
        return 0
    rows = [by_key(k) for k in opts.rows.split(",")] if opts.rows else list(ROWS)
    results: list[Result] = []
    baseline: dict[str, set[str]] = {}
    if not opts.examples_only and rows[0].key != "baseline":
        rows.insert(0, by_key("baseline"))  # reasons of the baseline are the yardstick
    name = f"compat-{datetime.date.today().isoformat()}" + (f"-{opts.name}" if opts.name else "")
    for row in rows:
        log(f"row {row.key}")
        if row.example and not opts.suites_only:
            results.append(run_example(row, example_python(row, opts.work)))
        if not opts.examples_only:
            keep = opts.suites.split(",") if opts.suites else row.suites
            for suite in (s for s in row.suites if s in keep):
                results.append(run_suite(row, suite, opts.work, baseline))
        write(opts, results, name, docs=False)  # a run cut short keeps its whole rows
    full = not (opts.rows or opts.examples_only or opts.suites_only)
    table = write(opts, results, name, docs=full and not opts.no_docs)
    log(f"wrote {opts.out / name}.json and .md")
    print(table)
    # Green or explained: a suite whose plain sessions disagree among themselves under a
    # setting cannot be judged there (the table says "not judged"); it is named here, not
    # counted as a failure. Its --genome differences are listed in the results' Details.
    unjudged = [r for r in results if not r.ok and r.plain_unstable()]
    for r in unjudged:
        log(f"not judged: {r.row} on {r.target} (its plain sessions disagree)")
    return 0 if all(r.ok or r in unjudged for r in results) else 1
