"""What the two "real history" measurements share: run ``diffgenome diff REV REV`` the way a
user does (revisions recorded in disposable worktrees, ``--python`` for the project's venv,
the default gate), keep the raw document, and summarise it per test.

The raw diff documents go to experiments/work/truth/history/ (gitignored); the summaries to
experiments/results/truth-DATE-<measurement>[-TAG].{json,md}, merged project by project so that
one project can be re-run alone.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.envs import REPO_ROOT, log

from truth.common import RESULTS, WORK

HISTORY = WORK / "history"
# The differ's statuses, worst first (the order of the tables).
STATUSES = (
    "changed",
    "unverified",
    "added",
    "removed",
    "restructured",
    "touched",
    "unstable",
    "unchanged",
)
MAX_CHANGES = 40  # per test in the result files (the raw documents keep all)
_SCRUB = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "COVERAGE_PROCESS_START")


@dataclass
class DiffRun:
    command: list[str]
    cwd: Path
    exit_code: int
    wall_s: float
    document: dict[str, Any] | None
    stderr_tail: str
    terminal: str


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=truth", "-c", "user.email=truth@example.invalid", *args]
    done = subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def run_diff(
    repo: Path,
    python: str,
    pytest_args: list[str],
    out: Path,
    *,
    base: str = "HEAD~1",
    head: str = "HEAD",
    fail_on: str | None = None,
    timeout: float = 3600,
    extra_env: dict[str, str] | None = None,
    diff_args: list[str] | None = None,
    store: Path | None = None,
) -> DiffRun:
    """``python -m diffgenome.analysis.cli diff BASE HEAD --python PY --json OUT -- ARGS``.

    A fresh store per run (``--store``), so nothing is reused from an earlier measurement,
    unless ``store`` names one to keep (diff then reuses a run of the same commit and
    selection); the exit status is the gate's (``--fail-on`` default unless given). After
    ``timeout`` the diff gets SIGTERM (as Ctrl-C: it stops its pytest and removes its
    worktrees), then SIGKILL, and ``subprocess.TimeoutExpired`` is raised."""
    out.mkdir(parents=True, exist_ok=True)
    if store is None:
        store = out / "store"
        if store.exists():
            subprocess.run(["rm", "-rf", str(store)], check=True)
    json_path = out / "diff.json"
    json_path.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "diffgenome.analysis.cli", "diff", base, head]
    cmd += ["--python", python, "--store", str(store), "--json", str(json_path)]
    cmd += ["--markdown", str(out / "diff.md")]
    if fail_on:
        cmd += ["--fail-on", fail_on]
    cmd += [*(diff_args or []), "--", *pytest_args]
    environ = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    environ.update(extra_env or {})
    log(f"$ (cd {repo} && {shlex.join(cmd)})")
    started = time.monotonic()
    done = _run_stoppable(cmd, repo, environ, timeout)
    wall = time.monotonic() - started
    (out / "terminal.txt").write_text(done.stdout)
    (out / "stderr.txt").write_text(done.stderr)
    document = json.loads(json_path.read_text()) if json_path.exists() else None
    log(f"exit {done.returncode} after {wall:.0f} s")
    return DiffRun(cmd, repo, done.returncode, wall, document, done.stderr[-3000:], done.stdout)


def _run_stoppable(
    cmd: list[str], cwd: Path, environ: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` whose timeout stops the diff with SIGTERM, which it handles as Ctrl-C
    (its pytest runs in a process group of its own, which a plain kill of the diff would leave
    running). Not SIGINT: a job started with ``&`` by a shell ignores SIGINT, and so do its
    children, the diff and its pytest included."""
    with subprocess.Popen(
        cmd, cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            log(f"timeout after {timeout:.0f} s: interrupted")
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def shown(command: list[str], extra_env: dict[str, str] | None = None) -> str:
    """The command as a reader would type it, from the repository's folder."""
    words = ["python" if w == sys.executable else w for w in command]
    text = shlex.join(words)
    if extra_env:
        text = " ".join(f"{k}={v}" for k, v in extra_env.items()) + " " + text
    return text.replace(str(REPO_ROOT) + "/", "")


def reason_kind(reason: str) -> str:
    """``base: call:untraced-subprocess:git`` -> ``untraced-subprocess`` (sides and phases
    dropped, numbers and names after the kind dropped), to count reasons by kind."""
    text = reason.split(": ", 1)[1] if reason.startswith(("base: ", "head: ")) else reason
    parts = text.split(":")
    if parts[0] in ("setup", "call", "teardown", "import", "session") and len(parts) > 1:
        parts = parts[1:]
    head = parts[0].strip()
    if head.startswith(("base run incomplete", "head run incomplete")):
        return head
    if head.startswith("digests not comparable"):
        return "digests not comparable"
    if head.startswith("not recorded in"):
        return "not recorded in one side"
    return head


def summarise(document: dict[str, Any]) -> dict[str, Any]:
    tests = document["tests"]
    statuses = Counter(t["status"] for t in tests)
    reasons_by_kind: Counter[str] = Counter()
    reasons_full: Counter[str] = Counter()
    reported = []
    for test in tests:
        if test["status"] == "unchanged":
            continue
        kinds = {reason_kind(r) for r in test.get("reasons", [])}
        if test["status"] == "unverified":
            reasons_by_kind.update(kinds)
            reasons_full.update(set(test.get("reasons", [])))
        reported.append(
            {
                "test": test["id"],
                "status": test["status"],
                "outcome": [test["outcome"].get("base"), test["outcome"].get("head")],
                "reasons": test.get("reasons", []),
                "changes": [short_change(c) for c in test.get("changes", [])[:MAX_CHANGES]],
                "n_changes": len(test.get("changes", [])),
                "structure": test.get("structure", []),
            }
        )
    return {
        "tests": len(tests),
        "statuses": {s: statuses[s] for s in STATUSES if statuses[s]},
        "unverified_reasons_by_kind": dict(reasons_by_kind.most_common()),
        "unverified_reasons": dict(reasons_full.most_common(40)),
        "reported": reported,
        "code_changes": [
            {"symbol": c.get("symbol"), "change": c.get("change"), "gaps": c.get("gaps", [])}
            for c in document.get("code_changes", [])
        ],
        "drift": len(document.get("drift", [])),
    }


def short_change(change: dict[str, Any], limit: int = 300) -> dict[str, Any]:
    keep = ("kind", "phase", "symbol", "site", "predicate", "base", "head")
    out: dict[str, Any] = {}
    for key in keep:
        value = change.get(key)
        if value is None:
            continue
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        out[key] = text if len(text) <= limit else text[:limit] + "…"
    out["path"] = change.get("path", [])[-3:]
    return out


def today() -> str:
    return datetime.date.today().isoformat()


def diffgenome_commit() -> str:
    """The last commit that changed the product (experiments/ commits do not count), in the
    tree whose ``diffgenome`` this interpreter imports: the diffs run ``sys.executable -m
    diffgenome...``, so the harness run with another checkout's venv (a "before" product, in
    a ``git worktree`` of an older commit) names that checkout's commit, not this one's."""
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import diffgenome, os; print(os.path.dirname(diffgenome.__file__))",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",  # not this checkout's folder, whose diffgenome ``-c`` would import first
    ).stdout.strip()
    root = Path(where).parent if where else REPO_ROOT
    return git(root, "log", "-1", "--format=%h", "--", "diffgenome", "setup.py")


def results_path(measurement: str, tag: str, suffix: str, date: str | None = None) -> Path:
    name = f"truth-{date or today()}-{measurement}{'-' + tag if tag else ''}.{suffix}"
    return RESULTS / name


def merge_results(measurement: str, tag: str, project: str, entry: dict[str, Any]) -> Path:
    """Add one project's entry to the dated result file (other projects' entries are kept)."""
    path = results_path(measurement, tag, "json")
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault("format", f"diffgenome-truth-{measurement}/1")
    data.setdefault("projects", {})
    data["projects"][project] = entry
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    log(f"wrote {path}")
    return path
