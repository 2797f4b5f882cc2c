"""End-to-end: the store keeps what a diff reuses (#25 points 2 and 3).

Real pytest sessions and real diffs over a git repository with two commits, the store's cap
made small so that a few recordings reach it:

- a diff's confirmation runs belong to it: they do not count against the cap, and they go
  once the diff is over, never the sides it reuses (before: a few diffs pushed the base and
  head recordings out, and the next diff recorded both sides again);
- the cap never removes a run a diff under way holds, nor the newest complete run of a
  commit; ``prune --keep-last 1`` keeps the newest *complete* run;
- ``latest`` (and a commit) is the newest complete recording, never a confirmation run.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from e2e.helpers import (
    PY,
    clean_env,
    cli,
    git_in,
    make_project,
    run_pytest,
    write_files,
)

pytestmark = pytest.mark.slow

#: What ``run_pytest`` gives beyond ``--genome``, less the output-only ``-p no:cacheprovider``:
#: the same selection as a diff given these arguments after ``--``.
SAME = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-W", "ignore::DeprecationWarning")
SEEDED = {"PYTHONHASHSEED": "0"}

FILES = {
    "calc/__init__.py": "",
    "calc/core.py": """
        def sign(x):
            if x >= 0:
                return "pos"
            return "neg"


        def double(x):
            return x * 2
    """,
    "tests/test_core.py": """
        from calc import core


        def test_sign():
            assert core.sign(0) in ("pos", "zero")


        def test_double():
            assert core.double(2) == 4


        def test_negative():
            assert core.sign(-1) == "neg"
    """,
}
HEAD_CORE = """
    def sign(x):
        if x == 0:
            return "zero"
        if x > 0:
            return "pos"
        return "neg"


    def double(x):
        return x * 2
"""


def two_commits(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    project = make_project(tmp_path, {**FILES, **(extra or {})})
    write_files(project, {"calc/core.py": HEAD_CORE})
    git_in(project, "add", "-A")
    git_in(project, "commit", "-qm", "zero is its own sign")
    return project


def diff(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD", *args, "--", *SAME],
        cwd=project,
        env=clean_env({"TMPDIR": str(project.parent)}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def runs(project: Path) -> list[dict[str, object]]:
    done = cli(project, "runs", "--json", "-")
    assert done.returncode == 0, done.stderr
    listed: list[dict[str, object]] = json.loads(done.stdout)
    return listed


def recordings(project: Path) -> list[dict[str, object]]:
    return [run for run in runs(project) if run["origin"] != "confirmation"]


def commit(project: Path, rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", rev], cwd=project, capture_output=True, text=True, check=True
    ).stdout.strip()


def at(project: Path, rev: str, *args: str, env: dict[str, str] | None = None) -> None:
    """``pytest --genome ARGS`` with ``rev`` checked out (then back to main)."""
    git_in(project, "checkout", "-q", rev)
    try:
        done = run_pytest(project, "--genome", *args, env=env)
        assert done.returncode in (0, 1), done.stdout + done.stderr
    finally:
        git_in(project, "checkout", "-q", "-")


def test_diffs_keep_what_they_reuse_and_confirmations_do_not_count(tmp_path: Path) -> None:
    project = two_commits(tmp_path)
    # The user's own recording of HEAD, made to be reused (docs/diffing.md, "Reuse").
    done = run_pytest(project, "--genome", "--genome-random-seed=0", env=SEEDED)
    assert done.returncode == 0, done.stdout + done.stderr
    capped = cli(project, "prune", "--cap", "2")
    assert capped.returncode == 0, capped.stderr
    first = diff(project, "-q")
    assert first.returncode == 1, first.stderr
    [user_run] = [run for run in runs(project) if run["origin"] == "pytest"]
    # Confirmation runs (one per side: the change is deterministic, docs/diffing.md
    # "Confirmation") and two recordings, with a cap of two: the recordings stay, and so
    # does the user's.
    confirming = len([run for run in runs(project) if run["origin"] == "confirmation"])
    assert confirming == 2
    assert len(recordings(project)) == 2
    for options in ((), ("--markdown", "-"), ("--json", "-"), ("--all",)):
        again = diff(project, *options)
        assert again.returncode == 1, again.stderr
        said = again.stderr
        assert said.count("diffgenome: reusing run ") == 2, said
        assert not re.search(r"recorded (base|head) \S+ \([0-9a-f]{12}\): ", said), said
        assert "no run" not in said
        # The confirmations of the diff before went; those of this one are there. Their
        # going is not announced under every report: they were that diff's own evidence.
        assert len([run for run in runs(project) if run["origin"] == "confirmation"]) == 2
        assert "note: removed" not in again.stdout, again.stdout
    by_commit = [run["commit"] for run in recordings(project)]
    assert sorted(by_commit) == sorted([commit(project, "HEAD"), commit(project, "HEAD~1")])
    assert user_run["id"] in [run["id"] for run in recordings(project)]
    # A plain recording afterwards removes the finished confirmation runs first.
    plain = run_pytest(project, "--genome", "-q")
    assert plain.returncode == 0
    assert [run for run in runs(project) if run["origin"] == "confirmation"] == []
    # What it says names the recording it removed (the cap is 2), not the confirmations.
    [notice] = [line for line in plain.stdout.splitlines() if "older run" in line]
    assert notice.startswith("diffgenome: removed 1 older run ("), notice


def test_the_cap_keeps_the_newest_complete_run_of_each_commit(tmp_path: Path) -> None:
    die = {
        "tests/test_die.py": """
            import os


            def test_die():
                if os.environ.get("DIE"):
                    os._exit(3)
        """
    }
    project = two_commits(tmp_path, die)
    base, head = commit(project, "HEAD~1"), commit(project, "HEAD")
    at(project, "HEAD~1", "-q")
    assert cli(project, "prune", "--cap", "1").returncode == 0
    done = run_pytest(project, "--genome", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    # An interrupted run of head, newest of all.
    died = run_pytest(project, "--genome", "-q", env={"DIE": "1"})
    assert died.returncode != 0
    listed = runs(project)
    assert [run["commit"] for run in listed] == [head, head, base]
    assert listed[0]["status"] == "incomplete"
    # One more complete run of head: the cap removes the older complete run of head and the
    # interrupted one, never the newest complete run of base, which is beyond it.
    again = run_pytest(project, "--genome", "-q")
    assert again.returncode == 0
    kept = runs(project)
    assert [(run["commit"], run["status"]) for run in kept] == [
        (head, "complete"),
        (base, "complete"),
    ]
    assert any("newest complete run of each commit" in line for line in again.stdout.splitlines())
    # prune --keep-last 1 keeps the newest complete run, not a newer interrupted one.
    run_pytest(project, "--genome", "-q", env={"DIE": "1"})
    newest_complete = kept[0]["id"]
    pruned = cli(project, "prune", "--keep-last", "1")
    assert pruned.returncode == 0, pruned.stderr
    assert [run["id"] for run in runs(project)] == [newest_complete]


def test_a_diff_under_way_keeps_the_runs_it_uses(tmp_path: Path) -> None:
    """A plain ``pytest --genome`` that applies the cap while a diff records its head does not
    remove the base recording the diff reuses (held by the live diff), although that run is
    beyond the cap and not the newest run of its commit; once the diff is over it may."""
    gate = tmp_path / "gate"
    blocking = {
        "tests/test_gate.py": f"""
            import os
            import time

            GATE = {str(gate)!r}


            def test_gate():
                if os.environ.get("DIFFGENOME_ORIGIN") == "diff" and os.path.exists(GATE):
                    open(GATE + ".waiting", "w").close()
                    while os.path.exists(GATE):
                        time.sleep(0.05)
        """
    }
    project = two_commits(tmp_path, blocking)
    at(project, "HEAD~1", "--genome-random-seed=0", env=SEEDED)  # what the diff reuses
    at(project, "HEAD~1", "-k", "not nothing")  # a newer complete run of that commit
    [newer, reused] = runs(project)
    assert cli(project, "prune", "--cap", "2").returncode == 0
    gate.write_text("")
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "diffgenome.analysis.cli",
            "diff",
            "HEAD~1",
            "HEAD",
            "--no-confirm",
            "--",
            *SAME,
        ],
        cwd=project,
        env=clean_env({"TMPDIR": str(tmp_path)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "gate.waiting").exists():  # synchronisation, not timing
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the diff never reached its head's gate"
            time.sleep(0.05)
        # Two plain recordings of head meanwhile: with a cap of two, the reused run is beyond.
        for _ in range(2):
            assert run_pytest(project, "--genome", "-q").returncode == 0
        assert reused["id"] in [run["id"] for run in runs(project)]
        gate.unlink()
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    assert f"reusing run {reused['id']}" in err
    assert "no run" not in err
    # The diff is over: nothing holds that run any more, and the next cap removes it.
    assert run_pytest(project, "--genome", "-q").returncode == 0
    left = [run["id"] for run in runs(project)]
    assert reused["id"] not in left and newer["id"] in left


def test_latest_is_the_newest_complete_recording_not_a_confirmation(tmp_path: Path) -> None:
    project = two_commits(tmp_path)
    done = diff(project, "-q")
    assert done.returncode == 1, done.stderr
    assert runs(project)[0]["origin"] == "confirmation"  # the newest run of all
    # test_double differs in nothing, so no confirmation run holds it.
    shown = cli(project, "show", "latest", "tests/test_core.py::test_double")
    assert shown.returncode == 0, shown.stderr
    assert "py:calc.core.double" in shown.stdout
    exported = json.loads(cli(project, "export", "latest").stdout)
    assert exported["run"]["origin"] == "diff"
    assert exported["run"]["commit"] == commit(project, "HEAD")
    assert len(exported["tests"]) == 4  # three tests and <import>
    # A commit names its full recording too.
    by_commit = cli(project, "show", "HEAD~1", "tests/test_core.py::test_double")
    assert by_commit.returncode == 0, by_commit.stderr
