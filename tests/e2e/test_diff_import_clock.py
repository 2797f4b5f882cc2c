"""End-to-end: a clock read at import time is noise on an identical tree (#24 done-when).

boltons 24.1.0's ``ecoutils`` takes the start time at import (``_get_utc_now()`` in its
module body): on two commits of one tree ``<import>`` was ``changed`` (``results:
datetime.datetime (value A) → (value B)``), exit 1, because ``<import>`` was left out of
confirmation altogether. Its two confirming imports of the same modules differ on that
value too, which masks it as for any test; ``<import>`` is still never counted as confirmed.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import GitRepo, cli_json, write_files

CLOCK = """
import datetime


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


STARTED = _utc_now()


def stamp():
    return _utc_now()
"""
TESTS = """
from pkg import clock


def test_stamp():
    assert clock.stamp() >= clock.STARTED
"""


def test_a_start_time_taken_at_import_is_not_a_change(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, {"pkg/__init__.py": "", "pkg/clock.py": CLOCK, "tests/test_clock.py": TESTS})
    git = GitRepo.init(repo)
    git.commit_all("a module that reads the clock at import")
    git.commit_empty("the same tree")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    statuses = {t["id"]: t["status"] for t in document["tests"]}
    assert statuses["<import>"] == "unstable", document["tests"]
    assert statuses["tests/test_clock.py::test_stamp"] == "unstable", statuses
    assert document["summary"]["changed"] == 0
    assert code == 0
