"""pytest plugin (``-p compat_outcomes``): every test's outcome as it becomes known.

The benchmark's ``bench_outcomes`` writes its file at the session's end; a session that a
plugin ends with ``os._exit`` (pytest-timeout's thread method) never gets there. This plugin
keeps bench_outcomes' rules (one final outcome per test, the worst phase wins) and appends
each test's outcome to ``COMPAT_OUTCOMES`` as one JSON line the moment it changes, so the
file holds whatever ran before the process died. The reader keeps the last line per test.
"""

from __future__ import annotations

import json
import os
from typing import Any

import bench_outcomes  # the benchmark's plugin, beside it on PYTHONPATH

_PATH = os.environ.get("COMPAT_OUTCOMES")


def _emit(key: str) -> None:
    if not _PATH or key not in bench_outcomes._RESULTS:
        return
    with open(_PATH, "a") as fh:
        fh.write(json.dumps({key: bench_outcomes._RESULTS[key]}) + "\n")


def pytest_runtest_logreport(report: Any) -> None:
    bench_outcomes.pytest_runtest_logreport(report)
    _emit(report.nodeid)


def pytest_collectreport(report: Any) -> None:
    bench_outcomes.pytest_collectreport(report)
    _emit(f"<collect>:{report.nodeid}")


def read(path: str) -> dict[str, dict[str, str]]:
    results: dict[str, dict[str, str]] = {}
    if not os.path.exists(path):
        return results
    with open(path) as fh:
        for line in fh:
            if line.strip():
                results.update(json.loads(line))
    return results
