"""The "pull request" rows of ``make bench`` (#48): what a one-function change costs to diff.

A team puts diffgenome in CI when a pull request's diff costs about what its test run costs.
For each suite: the project's tree as a repository, a one-function change committed on top
(:data:`CHANGES`, a change the suite passes), and a store that already holds base's whole
recording (as a CI cache of ``.diffgenome/`` keyed by commit would, docs/ci.md). Then, in
alternating order, ``reps`` times each:

- ``plain``: one plain pytest run of the suite;
- ``selective``: ``diffgenome diff BASE HEAD --selective`` (base reused; head records the
  tests the change reaches; confirmation as by default);
- ``whole``: ``diffgenome diff BASE HEAD`` (base reused; head records every test).

Each diff's head is a new commit (the change, then an empty commit per repetition), so that
no head recording is reused. The row says the medians, the ratios to ``plain`` (goal: the
selective diff at most 1.3x), how many tests were carried over, and whether the two diffs
agree test by test (the same statuses; the goal: no test ``changed`` in one and not the
other).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.envs import Env, log
from bench.runner import clean_env, measured, pytest_args

#: Per suite: a file of its tree, a text in it and what the change makes of it (one function).
CHANGES: dict[str, tuple[str, str, str]] = {
    "packaging": (
        "src/packaging/version.py",
        "        letter = letter.lower()\n",
        "        letter = letter.lower().strip()\n",
    ),
    "cookiecutter": (
        "cookiecutter/utils.py",
        "msg = f'Unable to create directory at {path}'",
        "msg = f'Cannot create the directory {path}'",
    ),
    "more-itertools": (
        "more_itertools/more.py",
        "raise ValueError('iterable is not divisible by n.')",
        "raise ValueError('iterable is not divisible by n')",
    ),
}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _diff_command(env: Env, store: Path, base: str, out: Path, selective: bool) -> list[str]:
    cmd = [sys.executable, "-m", "diffgenome.analysis.cli", "diff", base, "HEAD"]
    cmd += ["--python", env.exe, "--store", str(store), "--json", str(out), "--fail-on", "never"]
    cmd += ["-q", *(["--selective"] if selective else []), "--"]
    args = list(env.project.pytest_args)
    for node in env.project.deselect:
        args += ["--deselect", node]
    return cmd + args + list(env.project.paths)


def pull_request_row(env: Env, reps: int, timeout: float) -> dict[str, Any]:
    """One suite's row (see the module docstring); an ``error`` where a step failed."""
    name = env.project.name
    if name not in CHANGES:
        return {"project": name, "error": "no one-function change defined for this suite"}
    path, old, new = CHANGES[name]
    with tempfile.TemporaryDirectory(prefix="bench-pr-") as temp:
        root = Path(temp)
        repo = root / "repo"
        _git(root, "clone", "-q", str(env.tree), str(repo))
        base = _git(repo, "rev-parse", "HEAD")
        target = repo / path
        text = target.read_text()
        if old not in text:
            return {"project": name, "error": f"{path} no longer holds {old!r}"}
        target.write_text(text.replace(old, new, 1))
        _git(repo, "commit", "-q", "-am", "a one-function change")
        store = root / "store"
        # The stored base: a first selective diff records it whole (and is not timed), in the
        # environment the timed diffs have, or none of them would reuse it.
        first = root / "first.json"
        done = subprocess.run(
            _diff_command(env, store, base, first, True),
            cwd=repo,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode not in (0, 1) or not first.exists():
            return {"project": name, "error": done.stderr[-1500:]}
        stored_base = json.loads(first.read_text())["base"]["run"]
        # Each timed diff whose base was recorded again rather than reused: its time is not a
        # pull request's (session 23's rows were, by a variable new for every run).
        recorded_again: list[str] = []
        walls: dict[str, list[float]] = {"plain": [], "selective": [], "whole": []}
        documents: dict[str, dict[str, Any]] = {}
        for rep in range(reps):
            order = ["plain", "selective", "whole"]
            if rep % 2:
                order.reverse()
            for mode in order:
                with tempfile.TemporaryDirectory(prefix="bench-pr-run-") as t:
                    tmp = Path(t)
                    if mode == "plain":
                        cmd = [env.exe, *pytest_args(env)]
                    else:
                        _git(repo, "commit", "-q", "--allow-empty", "-m", f"{mode} {rep}")
                        out = tmp / "diff.json"
                        cmd = _diff_command(env, store, base, out, mode == "selective")
                    m, _outcomes, tail = measured(cmd, repo, tmp, timeout, outcomes=mode == "plain")
                    if m["returncode"] not in (0, 1):
                        return {"project": name, "error": f"{mode}: {tail}"}
                    walls[mode].append(m["wall_s"])
                    if mode != "plain":
                        documents[mode] = json.loads(out.read_text())
                        if documents[mode]["base"]["run"] != stored_base:
                            recorded_again.append(f"{mode} {rep}")
        medians = {mode: round(statistics.median(w), 2) for mode, w in walls.items()}
        selective, whole = documents["selective"], documents["whole"]
        statuses = {
            mode: {t["id"]: t["status"] for t in doc["tests"]} for mode, doc in documents.items()
        }
        disagree = sorted(
            test_id
            for test_id in statuses["whole"]
            if (statuses["whole"][test_id] == "changed")
            != (statuses["selective"].get(test_id) == "changed")
        )
        row = {
            "project": f"{name} {env.project.version}",
            "python": env.python.version,
            "change": f"{path}: {old.strip()!r} -> {new.strip()!r}",
            "reps": reps,
            "median_s": medians,
            "runs_s": {mode: [round(w, 2) for w in ws] for mode, ws in walls.items()},
            "selective_over_plain": round(medians["selective"] / medians["plain"], 2),
            "whole_over_plain": round(medians["whole"] / medians["plain"], 2),
            "tests": selective["summary"]["tests"],
            "carried": selective["summary"].get("carried", 0),
            "changed_selective": sum(1 for s in statuses["selective"].values() if s == "changed"),
            "changed_whole": sum(1 for s in statuses["whole"].values() if s == "changed"),
            "changed_in_one_only": disagree,
            "base_recorded_again": recorded_again,
            "confirmed": {
                "selective": selective["summary"].get("confirmed"),
                "whole": whole["summary"].get("confirmed"),
            },
        }
        log(
            f"  pull request {name}: plain {medians['plain']} s, selective "
            f"{medians['selective']} s ({row['selective_over_plain']}x), whole "
            f"{medians['whole']} s ({row['whole_over_plain']}x), carried {row['carried']} of "
            f"{row['tests']}"
        )
        return row


__all__ = ["CHANGES", "pull_request_row"]
