"""The benchmark harness (experiments/bench.py): its bookkeeping. Quick mode end to end is
tests/e2e/test_bench_harness.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))

from bench import report  # noqa: E402
from bench.envs import Env, current_python  # noqa: E402
from bench.projects import PROJECTS, Project  # noqa: E402
from bench.runner import ProjectResult, RunResult, outcome_differences  # noqa: E402


def _run(mode: str, rep: int, outcomes: dict[str, str]) -> RunResult:
    return RunResult(
        mode=mode,
        rep=rep,
        returncode=0,
        timed_out=False,
        wall_s=1.0 + rep,
        maxrss_kb=1024,
        cpu_s=1.0,
        outcomes={t: {"outcome": o, "message": f"E   boom in {t}"} for t, o in outcomes.items()},
        store_bytes=2048 if mode == "genome" else None,
    )


def _result(runs: list[RunResult]) -> ProjectResult:
    env = Env(
        project=Project(name="demo", version="1", deselect={"tests/test_net.py": "network"}),
        python=current_python(),
        tree=ROOT,
        venv=ROOT,
        packages={"pytest": "9"},
    )
    return ProjectResult(env=env, runs=runs)


def test_outcome_difference_under_genome_is_reported_and_flaky_tests_are_set_apart() -> None:
    result = _result(
        [
            _run("plain", 0, {"t::a": "passed", "t::b": "passed", "t::c": "passed"}),
            _run("plain", 1, {"t::a": "passed", "t::b": "passed", "t::c": "failed"}),
            _run("genome", 0, {"t::a": "passed", "t::b": "failed", "t::c": "passed"}),
            _run("genome", 1, {"t::a": "passed", "t::b": "failed", "t::c": "failed"}),
        ]
    )
    diffs = {d["test"]: d for d in outcome_differences(result, "genome")}
    assert set(diffs) == {"t::b", "t::c"}
    assert diffs["t::b"]["genome"] == ["failed", "failed"]
    assert not diffs["t::b"]["flaky_in_plain"]
    assert diffs["t::b"]["messages"] == ["E   boom in t::b"]
    assert diffs["t::c"]["flaky_in_plain"]


def test_report_marks_goals_and_lists_deselections() -> None:
    result = _result([_run("plain", 0, {"t::a": "passed"}), _run("genome", 0, {"t::a": "passed"})])
    entry = report.project_entry(result)
    assert entry["ratios"]["genome_over_plain"] == 1.0
    assert entry["store_kb_per_test"] == 2.0
    doc: dict[str, Any] = {
        "date": "2000-01-01",
        "quick": False,
        "reps": 1,
        "command": "bench",
        "machine": {"nproc": 2, "cpu": "x", "mem_gb": 1, "load_before": [], "load_after": []},
        "diffgenome": {"version": "0", "commit": "abc"},
        "projects": [entry],
        "diff": {"available": False, "note": "not available yet"},
    }
    doc["goals"] = report.goals(doc)
    assert doc["goals"]["median_genome_over_plain"]["met"] is True
    assert doc["goals"]["diff_5000"]["met"] is None
    text = report.markdown(doc)
    assert "deselected `tests/test_net.py`: network" in text
    assert "not available yet" in text


def test_projects_table_is_pinned_with_mock_heavy_and_object_heavy_suites() -> None:
    """Three mock-heavy suites (stand-ins are half of what the product reports) and, since
    #12, two object-heavy ones (a parser, a template engine: the per-value cost)."""
    names = {p.name for p in PROJECTS}
    assert {"attrs", "more-itertools", "google-auth", "cookiecutter"} <= names
    assert {"sqlparse", "jinja2"} <= names
    assert all(p.version and p.version[0].isdigit() for p in PROJECTS)
    assert sum(p.mock_heavy for p in PROJECTS) >= 3


def test_outcome_plugin_calls_a_failing_call_with_a_failing_teardown_error(
    tmp_path: Path,
) -> None:
    """The harness's outcome of a test is the genome's (docs/protocol.md): a failing setup or
    teardown makes it ``error`` even when its call failed too."""
    (tmp_path / "test_both.py").write_text(
        "import pytest\n\n"
        "@pytest.fixture\n"
        "def broken_teardown():\n"
        "    yield\n"
        "    raise RuntimeError('teardown')\n\n"
        "def test_both(broken_teardown):\n"
        "    assert False\n\n"
        "def test_call_only():\n"
        "    assert False\n"
    )
    out = tmp_path / "outcomes.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "experiments" / "bench" / "plugin"),
        "BENCH_OUTCOMES": str(out),
    }
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "bench_outcomes", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    outcomes = {k: v["outcome"] for k, v in json.loads(out.read_text()).items()}
    assert outcomes == {
        "test_both.py::test_both": "error",
        "test_both.py::test_call_only": "failed",
    }
