"""The benchmark harness (experiments/bench.py) in quick mode, end to end.

It builds (or reuses) the more-itertools virtualenv under experiments/work/, runs a slice of its
real suite plain, under --genome and under coverage.py, plus the micro-benchmark and the diff
timing, and checks what the results say -- never how fast anything was. Its bookkeeping is
tests/unit/test_bench_harness.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_mode_end_to_end() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = Path(proc.stdout.strip().splitlines()[-1].removeprefix("results: "))
    assert ROOT / "experiments" / "results" not in out.parents
    try:
        (json_file,) = out.glob("bench-*.json")
        doc = json.loads(json_file.read_text())
        assert doc["quick"] and not doc["partial"]
        assert doc["machine"]["nproc"] >= 1
        (row,) = doc["projects"]
        assert row["project"] == "more-itertools"
        assert row["python"] == ".".join(map(str, sys.version_info[:3]))
        assert row["tests"] > 50
        assert set(row["medians"]) == {"plain", "genome", "coverage"}
        modes = [r["mode"] for r in row["runs"]]
        assert sorted(modes) == ["coverage", "genome", "plain"]
        # Every run ran the same tests; the recorder stored something for them.
        assert {r["tests"] for r in row["runs"]} == {row["tests"]}
        assert row["store_kb_per_test"] > 0
        assert row["genome_facts"]["status"] == ["complete"]
        assert isinstance(row["outcome_differences_genome"], list)
        assert row["deselected"], "quick mode leaves the call-heaviest tests out, and says so"
        micro = doc["micro"][row["python"]]
        assert {"genome", "coverage", "plain"} <= set(micro)
        assert isinstance(micro["genome"]["ns_per_call_return"], float)
        # The floor: an empty C callback on the same events, built with this machine's
        # compiler (as the core is), and every figure also as a multiple of it.
        assert "floor_error" not in micro, micro.get("floor_error")
        assert isinstance(micro["floor_c"]["ns_per_call_return"], float)
        assert "ns_per_call_return" in micro["genome"]["over_floor"]
        diff = doc["diff"]
        if diff["available"]:
            assert diff["generated"]["returncodes"] == [0]
        else:
            assert diff["note"].startswith("not available yet")
        text = (out / json_file.name.replace(".json", ".md")).read_text()
        assert "| project | python | core | tests |" in text
        assert "floor (sys.monitoring, PY_START+PY_RETURN+BRANCH" in text
        # The row says which callbacks recorded; a clean clone builds the compiled core.
        core = row["core"]
        assert core == "c" or core.startswith("python (untested-interpreter: "), core
        assert row["diffgenome_commit"]
        assert "more-itertools 11.2.1" in text
    finally:
        for f in out.glob("bench-*"):
            f.unlink()
        out.rmdir()
