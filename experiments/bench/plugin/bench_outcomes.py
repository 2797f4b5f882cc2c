"""pytest plugin (``-p bench_outcomes``): every test's final outcome, as JSON, for the harness.

Loaded identically in all three modes so that its cost cancels out. It lives outside every
project tree, so neither diffgenome nor coverage.py counts it as project code. The file named
by ``BENCH_OUTCOMES`` receives ``{nodeid: {"outcome": ..., "message": ...}}``; outcomes are
passed, failed, error (setup or teardown), skipped, xfailed, xpassed; collection errors are
keyed ``<collect>:<nodeid>``.
"""

from __future__ import annotations

import json
import os
from typing import Any

_RESULTS: dict[str, dict[str, str]] = {}
# A failing setup or teardown makes the test ``error`` even when its call failed too: the
# genome's vocabulary (docs/protocol.md), so that the two can be compared test by test.
_RANK = {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 3, "error": 4}


def _message(report: Any) -> str:
    text = getattr(report, "longreprtext", "") or ""
    lines = [line for line in text.splitlines() if line.strip()]
    # The last line of a failure holds "E   SomeError: ..." or "file:line: Error" -- the gist.
    error_lines = [line for line in lines if line.startswith("E ")]
    gist = error_lines[:3] if error_lines else lines[-2:]
    return " | ".join(s.strip() for s in gist)[:500]


def _set(nodeid: str, outcome: str, message: str = "") -> None:
    old = _RESULTS.get(nodeid)
    if old is not None and _RANK[old["outcome"]] >= _RANK[outcome] and outcome != "passed":
        return  # the first message of the worst outcome is kept
    if old is not None and _RANK[old["outcome"]] > _RANK[outcome]:
        return
    _RESULTS[nodeid] = {"outcome": outcome, "message": message}


def pytest_runtest_logreport(report: Any) -> None:
    xfail = hasattr(report, "wasxfail")
    if report.failed:
        _set(report.nodeid, "failed" if report.when == "call" else "error", _message(report))
    elif report.skipped:
        _set(report.nodeid, "xfailed" if xfail else "skipped", _message(report)[:200])
    elif report.when == "call":
        _set(report.nodeid, "xpassed" if xfail else "passed")


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _RESULTS[f"<collect>:{report.nodeid}"] = {"outcome": "error", "message": _message(report)}


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path = os.environ.get("BENCH_OUTCOMES")
    if path:
        with open(path, "w") as fh:
            json.dump(_RESULTS, fh, sort_keys=True)
