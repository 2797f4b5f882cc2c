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

from e2e.helpers import diffgenome_notices  # noqa: E402

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


# A real project whose own configuration is strict: packaging sets `filterwarnings = ["error"]`,
# `--strict-config` and `--strict-markers`. Three of its smaller files keep the test short.
STRICT_FILES = ("tests/test_metadata.py", "tests/test_tags.py", "tests/test_utils.py")

# Loaded with `-p`: in the first test's call after the store's database is open, it reopens
# its descriptors (database and write-ahead log) read-only, so the recorder's next write
# fails mid-run, as a store broken under a session does.
STORE_BREAKER = """
import os

_broken = []


def pytest_runtest_call(item):
    if _broken:
        return
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "genome.sqlite" in target:
            os.dup2(os.open(target, os.O_RDONLY), int(fd))
            _broken.append(item.nodeid)
            # A new digest key: the writer cannot open the store again after its descriptors
            # were taken, so the store fails for good.
            key = os.path.join(os.path.dirname(target), "secret.key")
            with open(key, "wb") as out:
                out.write(os.urandom(32))
"""


def _strict_run(
    env: Env, tmp: Path, *extra: str, pythonpath: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    tmp.mkdir(parents=True, exist_ok=True)
    outcomes = tmp / "outcomes.json"
    extra_env = {"BENCH_OUTCOMES": str(outcomes)}
    environment = clean_env(extra_env)
    if pythonpath is not None:
        environment["PYTHONPATH"] += f":{pythonpath}"
    done = subprocess.run(
        [env.exe, *pytest_args(env), *STRICT_FILES, *extra],
        cwd=env.tree,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    results: dict[str, dict[str, str]] = json.loads(outcomes.read_text())
    return done, _outcomes(results)


def test_a_real_filterwarnings_error_project_records_with_the_store_as_two_arguments(
    tmp_path: Path,
) -> None:
    """#15's first failure on a real strict project: `--genome-store PATH` as two arguments
    made the recorder's advice a `PytestWarning`, which the project's filter raised at
    configure time (INTERNALERROR). Now: the plain outcomes, one plain line of advice, a
    complete run with every test verified."""
    env = _env("packaging")
    plain_proc, plain = _strict_run(env, tmp_path / "plain")
    assert plain_proc.returncode == 0 and len(plain) > 500, plain_proc.stdout[-2000:]

    store = tmp_path / "genome-store"
    proc, recorded = _strict_run(env, tmp_path / "genome", "--genome", "--genome-store", str(store))
    output = proc.stdout + proc.stderr
    assert proc.returncode == plain_proc.returncode, output[-3000:]
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert "Warning" not in output
    assert recorded == plain
    notices = diffgenome_notices(output)
    assert len(notices) == 1 and "--genome-store=PATH" in notices[0], notices
    document = _export(store)
    assert document["run"]["complete"] is True, document["run"]
    assert {t["id"] for t in document["tests"]} >= set(plain)
    # `<import>` is the session's imports; pytest itself imports packaging before recording.
    unverified = [t["id"] for t in document["tests"] if not t["verified"]]
    assert unverified == ["<import>"], unverified


def test_a_store_failing_mid_run_in_a_real_strict_project_leaves_the_suite_alone(
    tmp_path: Path,
) -> None:
    """#15's second failure: recording stopped with "run ... is not in the store" and the
    session went wrong. A store whose writes fail mid-run (here: its descriptors reopened
    read-only during the first test, and its digest key replaced so that it cannot be opened
    again) is one line; every test keeps its plain outcome and the
    session its plain exit status."""
    env = _env("packaging")
    breaker = tmp_path / "plugins"
    breaker.mkdir()
    (breaker / "store_breaker.py").write_text(STORE_BREAKER)
    plain_proc, plain = _strict_run(
        env, tmp_path / "plain", "-p", "store_breaker", pythonpath=breaker
    )
    store = tmp_path / "genome-store"
    proc, recorded = _strict_run(
        env,
        tmp_path / "genome",
        "-p",
        "store_breaker",
        "--genome",
        f"--genome-store={store}",
        pythonpath=breaker,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == plain_proc.returncode == 0, output[-3000:]
    assert recorded == plain and len(plain) > 500
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert "not in the store" not in output and "Warning" not in output
    notices = diffgenome_notices(output)
    assert len(notices) == 1 and "the store at" in notices[0], notices
    document = _export(store)
    assert document["run"]["complete"] is False, document["run"]
