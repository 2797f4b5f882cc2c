"""Interference on real third-party suites (#6.8): the same outcome for every test with and
without `--genome`, and with `--genome --cov` both tools produce their full data.

Uses the benchmark's pinned projects and cached virtualenvs (experiments/bench/, built under
experiments/work/ on first use from PyPI). Two suites, one mock-heavy (cookiecutter) and one
call-heavy (a slice of more-itertools), on the interpreter running this test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))

from bench.envs import Env, current_python, ensure_env  # noqa: E402
from bench.projects import PROJECTS  # noqa: E402
from bench.runner import clean_env, pytest_args  # noqa: E402

WORK = ROOT / "experiments" / "work"
SUITES = {"cookiecutter": "cookiecutter", "more-itertools": "more_itertools"}

pytestmark = pytest.mark.slow


def _env(name: str) -> Env:
    project = next(p for p in PROJECTS if p.name == name)
    env = ensure_env(project, current_python(), WORK)
    has_cov = subprocess.run(
        [env.exe, "-c", "import pytest_cov"], capture_output=True, check=False
    ).returncode
    if has_cov != 0:
        subprocess.run(
            [env.exe, "-m", "pip", "install", "-q", "--disable-pip-version-check", "pytest-cov"],
            check=True,
        )
    return env


def _run(env: Env, tmp: Path, *extra: str) -> dict[str, dict[str, str]]:
    tmp.mkdir(parents=True, exist_ok=True)
    outcomes = tmp / "outcomes.json"
    args = pytest_args(env)
    if env.project.name == "more-itertools":
        args = [a for a in args if not a.startswith("tests")] + list(env.project.quick_paths)
        for node in env.project.quick_deselect:
            args += ["--deselect", node]
    done = subprocess.run(
        [env.exe, *args, *extra],
        cwd=env.tree,
        env=clean_env({"BENCH_OUTCOMES": str(outcomes)}),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, dict[str, str]] = json.loads(outcomes.read_text())
    return result


def _outcomes(results: dict[str, dict[str, str]]) -> dict[str, str]:
    return {test: r["outcome"] for test, r in results.items()}


def _export(store: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "diffgenome.analysis.cli",
            "export",
            "latest",
            "--store",
            str(store),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@pytest.mark.parametrize("name", sorted(SUITES))
def test_outcomes_identical_and_both_tools_complete(name: str, tmp_path: Path) -> None:
    env = _env(name)
    plain = _outcomes(_run(env, tmp_path / "plain"))
    assert len(plain) > 50

    store = tmp_path / "genome-store"
    recorded = _outcomes(_run(env, tmp_path / "genome", "--genome", f"--genome-store={store}"))
    assert recorded == plain
    document = _export(store)
    assert document["run"]["complete"] is True
    assert {t["id"] for t in document["tests"]} >= set(plain) - {"<import>"}

    both_store = tmp_path / "both-store"
    coverage_json = tmp_path / "coverage.json"
    both = _outcomes(
        _run(
            env,
            tmp_path / "both",
            "--genome",
            f"--genome-store={both_store}",
            f"--cov={SUITES[name]}",
            "--cov-branch",
            f"--cov-report=json:{coverage_json}",
            "--cov-context=test",
        )
    )
    assert both == plain
    together = _export(both_store)
    assert together["run"]["complete"] is True
    assert {t["id"] for t in together["tests"]} == {t["id"] for t in document["tests"]}
    calls = sum(
        1
        for t in together["tests"]
        for phase in t["phases"].values()
        for n in phase["nodes"]
        if n["type"] == "call" and n["symbol"].startswith(f"py:{SUITES[name]}")
    )
    assert calls > 0
    report = json.loads(coverage_json.read_text())
    files = [f for f in report["files"] if SUITES[name] in f]
    assert files, report["files"].keys()
    executed = sum(len(report["files"][f]["executed_lines"]) for f in files)
    branches = sum(len(report["files"][f].get("executed_branches", [])) for f in files)
    assert executed > 100 and branches > 10
