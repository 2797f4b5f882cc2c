"""Stability: the same commit recorded twice must diff as unchanged, test by test.

Both runs go into one store (one digest key), then ``diffgenome diff RUN1 RUN2``. Every test
the differ does not call ``unchanged`` is listed with its change kinds and reasons, so that
each one can be explained (time, randomness, temp paths, threads, ...).
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from bench.envs import log

from truth.common import WORK, diff, env_for, load, project_args, record, save


def run(projects: list[str], *, basetemp: bool = False) -> dict[str, Any]:
    """``basetemp``: both runs get the same ``--basetemp``, which isolates pytest's numbered
    temporary folders (``/tmp/pytest-of-USER/pytest-N/``) from every other source of change."""
    results: dict[str, Any] = {}
    variant = "-basetemp" if basetemp else ""
    for name in projects:
        env = env_for(name)
        store = WORK / "stores" / f"stability{variant}-{name}"
        shutil.rmtree(store, ignore_errors=True)
        # pytest creates --basetemp but not its parents; a missing parent errors every test.
        (WORK / "basetemp").mkdir(parents=True, exist_ok=True)
        extra = [f"--basetemp={WORK / 'basetemp' / name}"] if basetemp else []
        runs = []
        for i in (1, 2):
            log(f"stability{variant}: recording {name} ({i}/2)")
            runs.append(record(env, store, [*project_args(env), *extra]))
        document = diff(store, runs[0].run_id, runs[1].run_id, env.tree)
        results[name] = summarise(document) | {
            "outcomes": [outcomes(store, r.run_id) for r in runs],
            "runs": [r.run_id for r in runs],
            "wall_s": [round(r.wall_s, 1) for r in runs],
            "store": str(store),
        }
        save(f"stability{variant}-{name}", results[name] | {"diff": document})
    previous = load(f"stability{variant}") or {}
    save(f"stability{variant}", previous | results)
    return results


def outcomes(store: Path, run_id: str) -> dict[str, int]:
    """Per-run outcome counts: two runs where every test errored identically diff unchanged."""
    from diffgenome.store.reader import StoreReader

    with StoreReader.open(str(store)) as reader:
        return dict(Counter(t.outcome for t in reader.test_summaries(run_id)))


def summarise(document: dict[str, Any]) -> dict[str, Any]:
    tests = document["tests"]
    statuses = Counter(t["status"] for t in tests)
    changed = []
    kinds: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for test in tests:
        if test["status"] in ("changed", "added", "removed"):
            test_kinds = Counter(c["kind"] for c in test.get("changes", []))
            kinds.update(test_kinds)
            changed.append(
                {
                    "test": test["id"],
                    "status": test["status"],
                    "kinds": dict(test_kinds),
                    "changes": [_short(c) for c in test.get("changes", [])[:6]],
                }
            )
        if test["status"] == "unverified":
            for reason in test.get("reasons", []):
                reasons[_reason_class(reason)] += 1
    return {
        "tests": len(tests),
        "statuses": dict(statuses),
        "change_kinds": dict(kinds),
        "changed_tests": changed,
        "unverified_reasons": dict(reasons.most_common()),
    }


def _short(change: dict[str, Any]) -> dict[str, Any]:
    keep = ("kind", "phase", "symbol", "site", "base", "head")
    out = {k: change.get(k) for k in keep if change.get(k) is not None}
    out["path"] = change.get("path", [])[-3:]
    return out


def _reason_class(reason: str) -> str:
    """``side: phase:reason`` without a numeric tail (``inconsistent-exits:7``), to be counted."""
    parts = reason.split(":")
    if parts[-1].strip().isdigit():
        parts = parts[:-1]
    if parts[-1].startswith("tmp"):  # a hook copied to a tempfile.mkstemp() script
        parts[-1] = "tmp*" + Path(parts[-1]).suffix
    return ":".join(parts)
