"""Run one row of the matrix on one suite or example: plain pytest, then ``pytest --genome``,
with the same arguments, environment and (fresh) state; compare every test's outcome and read
the genome back through ``diffgenome export``.

Environments. A real suite runs in the benchmark's virtualenv for it (``bench.envs``). A row
that needs plugins gets an *overlay*: a small virtualenv whose site-packages holds only those
plugins and a ``.pth`` line that adds the base virtualenv's site-packages (with its editable
installs) behind them. The plugins of one row so never reach another row, and nothing is
installed twice. Examples run in the harness's own interpreter (an overlay of it when the
row's plugins are not installed there).
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.envs import log
from bench.runner import PLUGIN_DIR, _reason_kind, measured

HERE = Path(__file__).resolve().parent
COMPAT_PLUGIN_DIR = HERE / "plugin"
sys.path.insert(0, str(COMPAT_PLUGIN_DIR))
sys.path.insert(0, str(PLUGIN_DIR))
import compat_outcomes  # noqa: E402

IMPORT_TEST_ID = "<import>"
NOTICE = "diffgenome: "


def _site_packages(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def overlay(base_python: str, plugins: tuple[str, ...], work: Path, name: str) -> str:
    """A python that sees ``plugins`` in front of everything ``base_python`` has."""
    if not plugins:
        return base_python
    folder = work / "compat-venvs" / f"{name}+{'+'.join(sorted(plugins))}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Several processes may ask at once (tests under xdist, two checkouts): one builds.
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _overlay_locked(base_python, plugins, folder)


def _overlay_locked(base_python: str, plugins: tuple[str, ...], folder: Path) -> str:
    marker = folder / ".compat-installed"
    python = str(folder / "bin" / "python")
    if marker.exists():
        return python
    log(f"building overlay {folder.name}")
    shutil.rmtree(folder, ignore_errors=True)
    base_site = _site_packages(base_python)
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(folder)], check=True)
    (Path(_site_packages(python)) / "_compat_base.pth").write_text(
        f"import site; site.addsitedir({base_site!r})\n"
    )
    # pip from the base: it installs into the overlay (its sys.prefix) and sees the base's
    # packages as installed through the .pth line.
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *plugins],
        check=True,
    )
    freeze = subprocess.run(
        [python, "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
    )
    versions = {p["name"].lower(): p["version"] for p in json.loads(freeze.stdout)}
    marker.write_text(json.dumps(versions, indent=1, sort_keys=True))
    return python


def installed(python: str) -> dict[str, str]:
    freeze = subprocess.run(
        [python, "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
    )
    return {p["name"].lower(): p["version"] for p in json.loads(freeze.stdout)}


def missing_plugins(plugins: tuple[str, ...]) -> list[str]:
    """The plugins not importable by this interpreter (by their module name)."""
    modules = {
        "pytest-randomly": "pytest_randomly",
        "pytest-timeout": "pytest_timeout",
        "pytest-rerunfailures": "pytest_rerunfailures",
        "pytest-asyncio": "pytest_asyncio",
        "anyio": "anyio",
        "pytest-socket": "pytest_socket",
        "pytest-cov": "pytest_cov",
        "pytest-xdist": "xdist",
    }
    return [p for p in plugins if importlib.util.find_spec(modules.get(p, p)) is None]


@dataclass
class ModeRun:
    mode: str
    returncode: int
    timed_out: bool
    wall_s: float
    outcomes: dict[str, str]
    messages: dict[str, str]
    notices: list[str]
    log_tail: str
    genome: dict[str, Any] | None = None


@dataclass
class Result:
    row: str
    target: str  # suite name or "example:NAME"
    kind: str  # "suite" or "example"
    plain: list[ModeRun] = field(default_factory=list)
    genome: list[ModeRun] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    not_run: str | None = None
    packages: dict[str, str] = field(default_factory=dict)
    # more plain sessions, where the row asks for them (Row.plain_control)
    control: list[ModeRun] = field(default_factory=list)

    def plain_unstable(self) -> set[str]:
        """Tests whose outcome differs between any two plain sessions."""
        if not self.control or not self.plain:
            return set()
        sessions = [self.plain[0].outcomes, *(run.outcomes for run in self.control)]
        tests = set().union(*sessions)
        return {t for t in tests if len({s.get(t) for s in sessions}) > 1}

    def explained_by_control(self) -> bool:
        """Every plain/--genome difference is among tests that two plain sessions also
        disagree on, and there are such tests: the suite is not deterministic here."""
        unstable = self.plain_unstable()
        if not unstable or not self.plain or not self.genome:
            return False
        p, g = self.plain[0].outcomes, self.genome[0].outcomes
        differing = {t for t in set(p) | set(g) if p.get(t) != g.get(t)}
        return differing <= unstable

    @property
    def outcome_equal(self) -> bool:
        return bool(self.plain) and all(
            p.outcomes == g.outcomes for p, g in zip(self.plain, self.genome, strict=True)
        )

    def outcome_diffs(self) -> list[str]:
        out = []
        for i, (p, g) in enumerate(zip(self.plain, self.genome, strict=True)):
            for test in sorted(set(p.outcomes) | set(g.outcomes)):
                a, b = p.outcomes.get(test, "missing"), g.outcomes.get(test, "missing")
                if a != b:
                    msg = g.messages.get(test) or p.messages.get(test) or ""
                    out.append(f"session {i + 1}: {test}: {a} -> {b} {msg[:160]}".rstrip())
        return out

    def summary(self) -> dict[str, Any]:
        g = self.genome[-1].genome if self.genome else None
        return {
            "row": self.row,
            "target": self.target,
            "kind": self.kind,
            "not_run": self.not_run,
            "tests": len(self.plain[-1].outcomes) if self.plain else 0,
            "counts": dict(Counter(self.plain[-1].outcomes.values())) if self.plain else {},
            "outcome_equal": self.outcome_equal if not self.not_run else None,
            "outcome_diffs": self.outcome_diffs()[:20] if self.plain else [],
            "returncodes": {
                "plain": [r.returncode for r in self.plain],
                "genome": [r.returncode for r in self.genome],
            },
            "wall_s": {
                "plain": [round(r.wall_s, 2) for r in self.plain],
                "genome": [round(r.wall_s, 2) for r in self.genome],
            },
            "genome": g,
            "notices": sorted({n for r in self.genome for n in r.notices}),
            "plain_notices": sorted({n for r in self.plain for n in r.notices}),
            "problems": self.problems,
            "ok": self.ok,
            "plain_control": (
                {
                    "sessions": len(self.control),
                    "returncode": self.control[0].returncode,
                    "unstable_tests": len(self.plain_unstable()),
                    "unstable_examples": sorted(self.plain_unstable())[:5],
                    "explains_differences": self.explained_by_control(),
                }
                if self.control
                else None
            ),
        }

    @property
    def ok(self) -> bool:
        return self.not_run is None and self.outcome_equal and not self.problems


def run_mode(
    mode: str,
    python: str,
    cwd: Path,
    args: list[str],
    env: dict[str, str],
    tmp: Path,
    state: Path,
    timeout: float,
) -> ModeRun:
    tmp.mkdir(parents=True, exist_ok=True)
    outcomes_file = tmp / "outcomes.jsonl"
    outcomes_file.unlink(missing_ok=True)
    cmd = [python, "-m", "pytest", *args]
    store = state / "store"
    if mode == "genome":
        cmd += ["--genome", f"--genome-store={store}"]
    extra = {
        "PYTHONPATH": f"{COMPAT_PLUGIN_DIR}{os.pathsep}{PLUGIN_DIR}",
        "COMPAT_OUTCOMES": str(outcomes_file),
        # Every mode starts from its own empty hypothesis database (and keeps it between the
        # sessions of a repeated row).
        "HYPOTHESIS_STORAGE_DIRECTORY": str(state / "hypothesis"),
        "COMPAT_TMP": str(state),
        # pytest-cov's data file out of the project tree: a default ``.coverage`` there is
        # shared with any other run of the same tree (the bench, tests/e2e/test_real_suites).
        "COVERAGE_FILE": str(state / ".coverage"),
        "COLUMNS": "200",
        **env,
    }
    m, _, tail = measured(cmd, cwd, tmp, timeout, extra)
    text = (tmp / "output.log").read_text(errors="replace") if (tmp / "output.log").exists() else ""
    raw = compat_outcomes.read(str(outcomes_file))
    run = ModeRun(
        mode=mode,
        returncode=m["returncode"],
        timed_out=m["timed_out"],
        wall_s=m["wall_s"],
        outcomes={k: v["outcome"] for k, v in raw.items()},
        messages={k: v.get("message", "") for k, v in raw.items()},
        notices=[
            line.strip()
            for line in text.splitlines()
            if line.strip().startswith(NOTICE)
            # The header (which core records) and the summary (which run) are not notices.
            and not line.strip().startswith(("diffgenome: recording with", "diffgenome: run "))
        ],
        log_tail=tail,
    )
    if mode == "genome":
        run.genome = genome_facts(python, cwd, store, run.outcomes)
    return run


def export(python: str, cwd: Path, store: Path) -> dict[str, Any] | str:
    done = subprocess.run(
        [python, "-m", "diffgenome.analysis.cli", "export", "latest", "--store", str(store)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        return " ".join((done.stderr or done.stdout).split())[:300] or f"exit {done.returncode}"
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def genome_facts(python: str, cwd: Path, store: Path, outcomes: dict[str, str]) -> dict[str, Any]:
    """What the store says, checked against what pytest reported."""
    doc = export(python, cwd, store)
    if isinstance(doc, str):
        return {"exported": False, "error": doc}
    run = doc["run"]
    tests = {t["id"]: t for t in doc.get("tests", []) if t["id"] != IMPORT_TEST_ID}
    ran = {k: v for k, v in outcomes.items() if not k.startswith("<collect>")}
    missing = sorted(set(ran) - set(tests))
    mismatched = sorted(
        f"{t}: pytest {ran[t]}, genome {tests[t]['outcome']}"
        for t in set(ran) & set(tests)
        if tests[t]["outcome"] != ran[t]
    )
    reasons: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for test in tests.values():
        for reason in test["unverified_reasons"]:
            kind = _reason_kind(reason)
            reasons[kind] += 1
            examples.setdefault(kind, [])
            if len(examples[kind]) < 2:
                examples[kind].append(test["id"])
    return {
        "exported": True,
        "complete": run.get("complete"),
        "incomplete_reasons": run.get("incomplete_reasons", []),
        "records": len(tests),
        "verified": sum(1 for t in tests.values() if t["verified"]),
        "missing": missing[:20],
        "missing_count": len(missing),
        "outcome_mismatch": mismatched[:20],
        "unverified_reasons": dict(reasons.most_common(10)),
        "unverified_examples": {k: examples[k] for k, _ in reasons.most_common(10)},
        "reasons_by_test": {t["id"]: t["unverified_reasons"] for t in tests.values()},
    }


def run_pair(
    result: Result,
    python: str,
    cwd: Path,
    args: list[str],
    env: dict[str, str],
    repeat: int,
    timeout: float,
    scratch: Path,
    control: int = 0,
) -> Result:
    """Plain then --genome (``repeat`` sessions each), each mode with its own state; with
    ``control``, then that many more plain sessions (each with fresh state) to compare plain
    with plain."""
    modes = ("plain", "genome", "control") if control else ("plain", "genome")
    for mode in modes:
        state = scratch / f"state-{mode}"
        shutil.rmtree(state, ignore_errors=True)
        state.mkdir(parents=True)
        for i in range(repeat if mode != "control" else control):
            as_mode = "plain" if mode == "control" else mode
            if mode == "control":
                state = scratch / f"state-control-{i}"
                state.mkdir(parents=True)
            run = run_mode(as_mode, python, cwd, args, env, scratch / f"{mode}-{i}", state, timeout)
            getattr(result, mode).append(run)
            log(
                f"  {result.row:22s} {result.target:24s} {mode:6s} {run.wall_s:7.2f}s "
                f"rc={run.returncode} {dict(Counter(run.outcomes.values()))}"
            )
    return result


def check_genome(result: Result, allowed_kinds: set[str] | None = None) -> None:
    """Add a problem for every way the genome run lost or misstated something."""
    for plain, genome in zip(result.plain, result.genome, strict=True):
        if plain.returncode != genome.returncode:
            result.problems.append(
                f"exit status {plain.returncode} plain, {genome.returncode} with --genome"
            )
    for run in result.plain:
        if run.notices:
            result.problems.append(f"plain run said: {run.notices[0]}")
    for run in result.genome:
        facts = run.genome or {}
        if not facts.get("exported"):
            result.problems.append(f"no genome: {facts.get('error', 'not exported')}")
            continue
        if facts["missing_count"]:
            result.problems.append(
                f"{facts['missing_count']} tests without a genome, e.g. {facts['missing'][0]}"
            )
        if facts["outcome_mismatch"]:
            result.problems.append(f"genome outcome differs: {facts['outcome_mismatch'][0]}")
        if allowed_kinds is not None:
            new = sorted(set(facts["unverified_reasons"]) - allowed_kinds)
            if new:
                result.problems.append(f"unverified reasons not in the baseline: {new[:4]}")


def scratch_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))
