"""The store's writer process (store/writer_process.py, ``--genome-writer``): who starts one, and
what happens when it is gone. That it stores what the test process would is
test_recording_runs.py's; the faults of a session with one are test_reliability_faults.py's
(both modes)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from e2e.helpers import diffgenome_notices, export, make_project, run_pytest

MOD = {"pkg/__init__.py": "", "pkg/mod.py": "def f(n):\n    return n + 1\n"}

MANY = """
import pytest

from pkg.mod import f


@pytest.mark.parametrize("n", range({count}))
def test_f(n):
    assert f(n) == n + 1
"""


def _writers(project: Path) -> dict[str, int]:
    with sqlite3.connect(project / ".diffgenome" / "genome.sqlite") as conn:
        return dict(conn.execute("SELECT worker, ok FROM workers WHERE left_at IS NOT NULL"))


@pytest.mark.parametrize(("count", "started"), [(5, False), (200, True)])
def test_auto_starts_a_writer_for_a_session_of_200_tests_or_more(
    tmp_path: Path, count: int, started: bool
) -> None:
    project = make_project(tmp_path, {**MOD, "tests/test_many.py": MANY.format(count=count)})
    result = run_pytest(project, "-q", "--genome")
    assert result.returncode == 0, result.stdout + result.stderr
    assert diffgenome_notices(result.stdout + result.stderr) == []
    expected = {"main": 1, "main/writer": 1} if started else {"main": 1}
    assert _writers(project) == expected
    doc = export(project)
    assert doc["run"]["complete"] is True
    assert len(doc["tests"]) == count + 1  # and <import>


def test_auto_starts_none_where_xdist_runs_a_worker_on_every_core(tmp_path: Path) -> None:
    """The writers would only take turns with the workers for the same cores."""
    project = make_project(tmp_path, {**MOD, "tests/test_many.py": MANY.format(count=400)})
    cores = len(os.sched_getaffinity(0))
    result = run_pytest(project, "-q", "--genome", "-n", str(cores))
    assert result.returncode == 0, result.stdout + result.stderr
    assert _writers(project) == {f"gw{i}": 1 for i in range(cores)}
    assert export(project)["run"]["complete"] is True


def test_inline_starts_none_however_many_tests(tmp_path: Path) -> None:
    project = make_project(tmp_path, {**MOD, "tests/test_many.py": MANY.format(count=200)})
    result = run_pytest(project, "-q", "--genome", "--genome-writer=inline")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _writers(project) == {"main": 1}


KILLS_ITS_WRITER = """
import os
import signal

from pkg.mod import f


def _writer_pid():
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as stat:
                parent = stat.read().rpartition(")")[2].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                argv = cmdline.read()
        except OSError:
            continue
        if parent == me and b"diffgenome.store.writer_process" in argv:
            return int(pid)
    return None


def test_first():
    assert f(1) == 2


def test_kills_the_writer():
    pid = _writer_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert f(2) == 3


def test_after():
    assert f(3) == 4


def test_last():
    assert f(4) == 5
"""


def test_a_killed_writer_leaves_the_rest_to_the_test_process(tmp_path: Path) -> None:
    """A test kills the writer process (and reaps it): the test process says so once, writes
    what the writer had not acknowledged and every later test itself, and the run is
    complete with every test."""
    project = make_project(tmp_path, {**MOD, "tests/test_x.py": KILLS_ITS_WRITER})
    result = run_pytest(project, "-q", "--genome", "--genome-writer=process")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    notices = diffgenome_notices(output)
    assert len(notices) == 1 and "the store's writer process stopped" in notices[0], notices
    assert "this process writes the rest of the tests itself" in notices[0]
    doc = export(project)
    assert doc["run"]["complete"] is True, doc["run"]
    assert sorted(t["id"].rpartition("::")[2] for t in doc["tests"]) == [
        "<import>",
        "test_after",
        "test_first",
        "test_kills_the_writer",
        "test_last",
    ]
    assert all(t["verified"] for t in doc["tests"]), [t["unverified_reasons"] for t in doc["tests"]]
    assert _writers(project) == {"main": 1, "main/writer": 1}
