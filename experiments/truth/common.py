"""Recording and diffing through the real CLI, in the benchmark's environments.

Every recording is ``python -m pytest --genome`` in the project's virtualenv (built and cached
by ``bench.envs.ensure_env``); every diff is ``diffgenome diff ... --json``, the command a user
runs, so the experiment measures the product rather than a re-implementation of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.envs import DEFAULT_WORK, REPO_ROOT, Env, current_python, ensure_env, log
from bench.projects import by_name

WORK = DEFAULT_WORK / "truth"
RESULTS = REPO_ROOT / "experiments" / "results"
DIFFGENOME = str(Path(sys.executable).with_name("diffgenome"))
_SCRUB = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "COVERAGE_PROCESS_START")


def env_for(name: str) -> Env:
    return ensure_env(by_name(name), current_python(), DEFAULT_WORK)


def project_args(env: Env) -> list[str]:
    args = [*env.project.pytest_args]
    for node in env.project.deselect:
        args += ["--deselect", node]
    return args + list(env.project.paths)


@dataclass
class Recording:
    run_id: str
    returncode: int
    wall_s: float


def record(
    env: Env,
    store: Path,
    args: list[str],
    *,
    cwd: Path | None = None,
    extra_env: dict[str, str] | None = None,
    timeout: float = 1800,
) -> Recording:
    """One ``pytest --genome`` run into ``store``; the store's own key, so digests compare."""
    store.mkdir(parents=True, exist_ok=True)
    environ = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    environ.update(extra_env or {})
    cmd = [env.exe, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    cmd += [*args, "--genome", f"--genome-store={store}"]
    started = time.monotonic()
    proc = subprocess.run(
        cmd,
        cwd=cwd or env.tree,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    wall = time.monotonic() - started
    if proc.returncode not in (0, 1):
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"pytest exited {proc.returncode} in {cwd or env.tree}:\n{tail}")
    return Recording(run_id=latest_run(store), returncode=proc.returncode, wall_s=wall)


def latest_run(store: Path) -> str:
    from diffgenome.store.reader import StoreReader

    with StoreReader.open(str(store)) as reader:
        return reader.runs()[0].id


def document(store: Path, run_id: str) -> dict[str, Any]:
    from diffgenome.store.reader import StoreReader

    with StoreReader.open(str(store)) as reader:
        return reader.document(run_id)


def diff(store: Path, base: str, head: str, repo: Path) -> dict[str, Any]:
    """``diffgenome diff BASE HEAD --json - --no-confirm`` between two stored runs or two genome
    files. Without confirmation: a stored run of a commit would be recorded again from that
    commit's checkout, which holds neither a mutant's edit nor the project's interpreter
    (diffgenome's own would run it); the callers keep their own base-vs-base control."""
    where = ["--store", str(store), "--repo", str(repo), "--no-confirm"]
    proc = subprocess.run(
        [DIFFGENOME, "diff", base, head, *where, "--json", "-", "--fail-on", "never"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"diffgenome diff failed ({proc.returncode}): {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def save(name: str, data: object) -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
    log(f"wrote {path}")
    return path


def load(name: str) -> Any:
    path = WORK / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None
