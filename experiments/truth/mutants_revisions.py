"""Mutants through revisions (#11.6): ``diffgenome diff BASE MUTANT`` with and without
confirmation, side by side.

``truth.py mutants`` diffs stored runs, which cannot be recorded again, so confirmation never
runs there. Here each mutant is a commit: a clone of the project's sdist commit
(``identical.prepare``, in a folder of its own), the mutated file committed on top of the base
commit and the branch reset back, so the mutant is a detached commit that only its id names.
Each mutant is then diffed twice, the way a user runs it::

    python -m diffgenome.analysis.cli diff BASE MUTANT --python VENV_PY --store STORE \\
        --json OUT [--no-confirm] -- <the module's test file>

once as is (confirmation, the default) and once with ``--no-confirm``. Each mode has its own
store, kept for the whole run: the base commit is recorded once per test file and mode and
reused by the mode's later diffs (same commit and selection), never by the other mode. The
two modes run one after the other for each mutant, in alternating order, so that a change in
the machine's load falls on both alike.

The mutants are ``mutants.select``'s, so ``--limit``/``--seed`` choose the same ones as
``truth.py mutants``. Per mutant and mode: the exit status, the statuses, the tests reported
``changed``/``unverified``/``unstable``, ``summary.confirmed`` and the wall time. Detected:
a test ``changed``, or ``unverified`` with ``may_hide_change``, or a test whose outcome
differs; killed: a test's outcome changed from ``passed``. A diff that runs past its timeout
(a mutant that loops forever) is stopped and counted killed and detected in that mode, as
``truth.py mutants`` counts a hung recording.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.envs import REPO_ROOT, log

from diffgenome.store.layout import open_store
from diffgenome.store.retention import set_keep_runs
from truth.common import env_for
from truth.history import HISTORY, diffgenome_commit, git, results_path, run_diff, shown
from truth.identical import prepare
from truth.mutants import TARGETS, Mutant, _cell, select

MODES = {"confirm": [], "no-confirm": ["--no-confirm"]}
FOLDER = HISTORY / "mutants-revisions"
MIN_TIMEOUT_S = 120.0  # a diff of a mutant that hangs is stopped after 10x a finished one
FIRST_TIMEOUT_S = 900.0  # before any diff of that test file finished
MAX_IDS = 30  # test ids per list in the result files (the raw documents keep all)


def run(project: str, *, limit: int, seed: int, tag: str = "") -> dict[str, Any]:
    env = env_for(project)
    root = FOLDER / project
    repo = prepare(project, root / "repo")
    base = git(repo, "rev-parse", "HEAD")
    for file in TARGETS[project]:  # the same bytes as the tree truth.py mutants mutates
        if (repo / file).read_bytes() != (env.tree / file).read_bytes():
            raise RuntimeError(f"{file} differs between {repo} and {env.tree}")
    mutants = select(project, limit, seed, repo)
    stores = {mode: _fresh_store(root / f"store-{mode}") for mode in MODES}
    log(f"mutants via revisions: {len(mutants)} mutants of {project}, base {base[:12]}")
    walls: dict[str, list[float]] = {}
    bases: dict[str, set[str]] = {mode: set() for mode in MODES}
    results = []
    started = time.monotonic()
    summary: dict[str, Any] = {}
    for index, mutant in enumerate(mutants):
        head = _commit(repo, base, mutant)
        result: dict[str, Any] = {
            "id": mutant.id,
            "file": mutant.file,
            "tests": mutant.tests,
            "operator": mutant.operator,
            "symbol": mutant.symbol,
            "line": mutant.line,
            "before": mutant.before,
            "after": mutant.after,
            "commit": head,
        }
        order = list(MODES) if index % 2 == 0 else list(reversed(MODES))
        for mode in order:
            runs = walls.setdefault(mutant.tests, [])
            timeout = max(MIN_TIMEOUT_S, 10 * statistics.median(runs)) if runs else None
            out = root / mode / mutant.id.replace(":", "-")
            one = _diff(env, repo, base, head, mutant, out, stores[mode], mode, timeout)
            one["order"] = order.index(mode)
            if one.get("base_run"):
                one["base_reused"] = one["base_run"] in bases[mode]
                bases[mode].add(one["base_run"])
            if "document" in one:
                runs.append(one["wall_s"])
            one.pop("document", None)
            result[mode] = one
        result["detection_differs"] = (
            result["confirm"]["detected"] != result["no-confirm"]["detected"]
        )
        log(
            f"mutant {index + 1}/{len(mutants)} {mutant.id} {mutant.before!r}->{mutant.after!r}: "
            + "; ".join(
                f"{mode} {'detected' if result[mode]['detected'] else 'not detected'} "
                f"{result[mode]['statuses']} {result[mode]['wall_s']} s"
                for mode in MODES
            )
        )
        results.append(result)
        # After every mutant, so that a run stopped early still leaves its figures.
        summary = summarise(results) | {
            "project": f"{env.project.name} {env.project.version}",
            "python": env.python.version,
            "seed": seed,
            "limit": limit,
            "selected": len(mutants),
            "targets": TARGETS[project],
            "base_commit": base,
            "repo": str(repo.relative_to(REPO_ROOT)),
            "command": next(
                (shown(r["confirm"]["command"]) for r in results if r["confirm"]["command"]),
                None,
            ),
            "wall_s": round(time.monotonic() - started, 1),
        }
        write_result(summary, results, tag)
    return summary


def _fresh_store(store: Path) -> Path:
    """An empty store that keeps every run: the base run must survive dozens of mutants'
    runs (the cap is 20 runs by default) to be reused."""
    subprocess.run(["rm", "-rf", str(store)], check=True)
    opened = open_store(str(store))
    try:
        set_keep_runs(opened.conn, 0)
    finally:
        opened.conn.close()
    return store


def _commit(repo: Path, base: str, mutant: Mutant) -> str:
    """The mutant as a commit on top of ``base``; the branch is reset back to ``base``."""
    path = repo / mutant.file
    original = path.read_bytes()
    path.write_bytes(mutant.apply(original))
    try:
        git(
            repo,
            "commit",
            "-q",
            "-a",
            "-m",
            f"mutant {mutant.id}: {mutant.before} -> {mutant.after}",
        )
        return git(repo, "rev-parse", "HEAD")
    finally:
        git(repo, "reset", "-q", "--hard", base)


def _diff(
    env: Any,
    repo: Path,
    base: str,
    head: str,
    mutant: Mutant,
    out: Path,
    store: Path,
    mode: str,
    timeout: float | None,
) -> dict[str, Any]:
    args = [*env.project.pytest_args, *mutant.tests.split()]  # a value may name several files
    started = time.monotonic()
    try:
        done = run_diff(
            repo,
            env.exe,
            args,
            out,
            base=base,
            head=head,
            timeout=timeout or FIRST_TIMEOUT_S,
            diff_args=MODES[mode],
            store=store,
        )
    except subprocess.TimeoutExpired:
        wall = round(time.monotonic() - started, 1)
        return {
            "verdict": "killed:timeout",
            "detected": True,
            "killed": True,
            "exit_code": None,
            "statuses": {},
            "wall_s": wall,
            "timeout_s": timeout or FIRST_TIMEOUT_S,
            "command": [],
        }
    entry: dict[str, Any] = {
        "exit_code": done.exit_code,
        "wall_s": round(done.wall_s, 1),
        "command": done.command,
        "raw": str(out.relative_to(REPO_ROOT)),
    }
    if done.document is None:
        return entry | {
            "verdict": "error",
            "detected": False,
            "killed": False,
            "statuses": {},
            "error": done.stderr_tail[-600:],
        }
    return entry | judge(done.document) | {"document": True}


def judge(document: dict[str, Any]) -> dict[str, Any]:
    """What one diff document says about a mutant."""
    tests = document["tests"]
    statuses = Counter(t["status"] for t in tests)
    changed = [t["id"] for t in tests if t["status"] == "changed"]
    unverified = [t["id"] for t in tests if t["status"] == "unverified"]
    hiding = [t["id"] for t in tests if t["status"] == "unverified" and t.get("may_hide_change")]
    outcome = [t for t in tests if _outcomes(t) and _outcomes(t)[0] != _outcomes(t)[1]]
    killed = [t["id"] for t in outcome if _outcomes(t)[0] == "passed"]
    unstable = {t["id"]: t.get("reasons", [])[:6] for t in tests if t["status"] == "unstable"}
    # A test that stayed changed may still have had some of its differences masked.
    masked_in_changed = {
        t["id"]: [r for r in t.get("reasons", []) if r.startswith("unstable")][:6]
        for t in tests
        if t["status"] == "changed" and any(r.startswith("unstable") for r in t.get("reasons", []))
    }
    detected = bool(changed or hiding or outcome)
    verdict = ("killed" if killed else "changed") if detected else "unchanged"
    return {
        "verdict": verdict,
        "detected": detected,
        "killed": bool(killed),
        "statuses": {s: statuses[s] for s in sorted(statuses)},
        "confirmed": document["summary"].get("confirmed"),
        "changed": len(changed),
        "changed_ids": changed[:MAX_IDS],
        "unverified_ids": unverified[:MAX_IDS],
        "may_hide_change_ids": hiding[:MAX_IDS],
        "outcome_changed": len(outcome),
        "killed_tests": len(killed),
        "killed_ids": killed[:MAX_IDS],
        "unstable": len(unstable),
        "unstable_reasons": dict(list(unstable.items())[:MAX_IDS]),
        "masked_in_changed": len(masked_in_changed),
        "masked_in_changed_reasons": dict(list(masked_in_changed.items())[:MAX_IDS]),
        "base_run": (document.get("base") or {}).get("run"),
        "head_run": (document.get("head") or {}).get("run"),
    }


def _outcomes(test: dict[str, Any]) -> tuple[str, str] | None:
    pair = test.get("outcome") or {}
    base, head = pair.get("base"), pair.get("head")
    return (base, head) if base and head else None


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    modes: dict[str, Any] = {}
    both = [r for r in results if all("confirmed" in r[m] for m in MODES)]
    for mode in MODES:
        rows = [r[mode] for r in results]
        finished = [r[mode] for r in both]
        # A diff that recorded the base too is slower by one recording: means over the
        # others as well.
        reused = [r for r in finished if r.get("base_reused")]
        modes[mode] = {
            "detected": sum(1 for r in rows if r["detected"]),
            "killed": sum(1 for r in rows if r["killed"]),
            "changed_not_killed": sum(1 for r in rows if r["detected"] and not r["killed"]),
            "undetected": [r["id"] for r in results if not r[mode]["detected"]],
            "timeouts": sum(1 for r in rows if r["verdict"] == "killed:timeout"),
            "errors": sum(1 for r in rows if r["verdict"] == "error"),
            "exit_codes": dict(Counter(str(r["exit_code"]) for r in rows)),
            "statuses": dict(sum((Counter(r["statuses"]) for r in rows), Counter())),
            "confirmed_tests": sum(r.get("confirmed") or 0 for r in rows),
            "unstable_tests": sum(r.get("unstable") or 0 for r in rows),
            "mutants_with_unstable": sum(1 for r in rows if r.get("unstable")),
            # Tests that stayed changed with some of their differences masked as unstable.
            "changed_with_masked_parts": sum(r.get("masked_in_changed") or 0 for r in rows),
            "mutants_with_masked_parts": sum(1 for r in rows if r.get("masked_in_changed")),
            "mean_wall_s": _mean([r["wall_s"] for r in finished]),
            "mean_wall_s_by_file": {
                file: _mean([r[mode]["wall_s"] for r in both if r["file"] == file])
                for file in sorted({r["file"] for r in both})
            },
            "mean_wall_s_base_reused": _mean([r["wall_s"] for r in reused]),
            "total_wall_s": round(sum(r["wall_s"] for r in rows), 1),
        }
    ratio = None
    if modes["no-confirm"]["mean_wall_s"]:
        ratio = round(modes["confirm"]["mean_wall_s"] / modes["no-confirm"]["mean_wall_s"], 2)
    ratio_reused = None
    if modes["no-confirm"]["mean_wall_s_base_reused"]:
        ratio_reused = round(
            modes["confirm"]["mean_wall_s_base_reused"]
            / modes["no-confirm"]["mean_wall_s_base_reused"],
            2,
        )
    return {
        "total": len(results),
        "by_operator": dict(Counter(r["operator"] for r in results)),
        "by_file": dict(Counter(r["file"] for r in results)),
        "finished_both": len(both),
        "modes": modes,
        "wall_ratio_confirm_over_no_confirm": ratio,
        "wall_ratio_base_reused": ratio_reused,
        "detection_differs": [r["id"] for r in results if r["detection_differs"]],
        "verdict_differs": [
            r["id"] for r in results if r["confirm"]["verdict"] != r["no-confirm"]["verdict"]
        ],
    }


def _mean(values: list[float]) -> float | None:
    return round(statistics.mean(values), 1) if values else None


def write_result(summary: dict[str, Any], results: list[dict[str, Any]], tag: str = "") -> None:
    """experiments/results/truth-DATE-mutants-revisions[-TAG].{json,md}."""
    rows = [
        r | {mode: {k: v for k, v in r[mode].items() if k != "command"} for mode in MODES}
        for r in results
    ]  # the command is the summary's, with another mutant and folder
    data = summary | {"diffgenome_commit": diffgenome_commit(), "mutants": rows}
    path = results_path("mutants-revisions", tag, "json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")
    log(f"wrote {path}")
    m = summary["modes"]
    n = summary["total"]
    out = [f"# Mutants of {summary['project']} through revisions, with and without confirmation"]
    out += [
        "",
        f"diffgenome `{data['diffgenome_commit']}`; {n} of {summary['selected']} mutants "
        f"(seed {summary['seed']}, "
        f"limit {summary['limit']}: {summary['by_file']}); base commit "
        f"`{summary['base_commit'][:12]}`; wall {summary['wall_s']} s. Each mutant is a commit "
        "on top of the base, diffed with `diffgenome diff BASE MUTANT --python VENV_PY "
        "--store STORE --json OUT [--no-confirm] -- <the module's test file>`, one store per "
        "mode (the base recording is reused within a mode).",
        "",
        "| mode | mutants | detected | killed | changed, not killed | not detected | "
        "timeouts | tests confirmed | tests unstable | changed tests with masked parts | "
        "mean wall s | mean wall s, base reused | mean wall s by test file |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for mode, e in m.items():
        by_file = ", ".join(f"{Path(k).stem} {v}" for k, v in e["mean_wall_s_by_file"].items())
        out.append(
            f"| {mode} | {n} | {e['detected']} | {e['killed']} | {e['changed_not_killed']} | "
            f"{len(e['undetected'])} | {e['timeouts']} | {e['confirmed_tests']} | "
            f"{e['unstable_tests']} | {e['changed_with_masked_parts']} "
            f"({e['mutants_with_masked_parts']} mutants) | {e['mean_wall_s']} | "
            f"{e['mean_wall_s_base_reused']} | {by_file} |"
        )
    out += [
        "",
        f"Wall ratio confirm / no-confirm: {summary['wall_ratio_confirm_over_no_confirm']} "
        f"(diffs that reused the base: {summary['wall_ratio_base_reused']}); means over the "
        f"{summary['finished_both']} mutants whose two diffs both finished.",
        "",
        f"Detection differs between the modes: {len(summary['detection_differs'])} "
        f"({', '.join(summary['detection_differs']) or 'none'}); verdict differs: "
        f"{len(summary['verdict_differs'])} ({', '.join(summary['verdict_differs']) or 'none'}).",
        "",
    ]
    for r in results:
        if r["id"] not in summary["verdict_differs"]:
            continue
        out.append(f"- `{r['id']}` `{_cell(r['before'])}` → `{_cell(r['after'])}`:")
        for mode in MODES:
            e = r[mode]
            out.append(
                f"  - {mode}: {e['verdict']}, {e['statuses']}, changed "
                f"{e.get('changed_ids')}, unstable {e.get('unstable_reasons')}"
            )
    masked = [r for r in results if r["confirm"].get("masked_in_changed")]
    if masked:
        out += ["", "Tests that stayed `changed` under confirmation with parts masked:", ""]
    for r in masked:
        reasons = sorted(
            {x for rs in r["confirm"]["masked_in_changed_reasons"].values() for x in rs}
        )
        out.append(
            f"- `{r['id']}`: {r['confirm']['masked_in_changed']} tests, e.g. "
            f"`{next(iter(r['confirm']['masked_in_changed_reasons']))}`: {reasons[0][:160]}"
        )
    out += [
        "",
        "| mutant | change | confirm: verdict, statuses, confirmed, s | "
        "no-confirm: verdict, statuses, s |",
        "|---|---|---|---|",
    ]
    for r in results:
        c, p = r["confirm"], r["no-confirm"]
        out.append(
            f"| {r['id']} | `{_cell(r['before'])}` → `{_cell(r['after'])}` | "
            f"{c['verdict']}, {_statuses(c)}, {c.get('confirmed')}, {c['wall_s']} | "
            f"{p['verdict']}, {_statuses(p)}, {p['wall_s']} |"
        )
    out += [
        "",
        f"Command (confirmation; `--no-confirm` added for the other mode): `{summary['command']}`",
        "",
    ]
    results_path("mutants-revisions", tag, "md").write_text("\n".join(out))


def _statuses(entry: dict[str, Any]) -> str:
    return " ".join(f"{k} {v}" for k, v in entry["statuses"].items()) or "-"
