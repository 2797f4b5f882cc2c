"""Mutants through revisions, a whole recording against ``diff --selective`` (#48.1).

Each mutant is a commit on top of the project's base commit (as ``mutants_revisions`` makes
them), diffed twice the way a user runs it::

    python -m diffgenome.analysis.cli diff BASE MUTANT --python VENV_PY --store STORE \\
        --json OUT [--selective] -- <the module's test file>

Each mode has its own store, kept for the whole run, so the base commit is recorded once per
test file and mode and reused after (as a pull request's base is in CI). The modes run one
after the other for each mutant, in alternating order. Per mutant and mode: the verdict
(``mutants_revisions.judge``: detected is a test ``changed``, ``unverified`` where it may hide
a change, or an outcome that differs), the statuses, how many tests were carried over
(``summary.carried``) and the wall time. Lost: a mutant the whole recording detects and the
selective one does not; the goal is none.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from bench.envs import REPO_ROOT, log

from truth import mutants_revisions
from truth.common import env_for
from truth.history import HISTORY, diffgenome_commit, git, results_path
from truth.identical import prepare
from truth.mutants import _cell, select
from truth.mutants_revisions import MIN_TIMEOUT_S, _commit, _diff, _fresh_store

MODES = {"whole": [], "selective": ["--selective"]}
FOLDER = HISTORY / "mutants-selective"


def run(project: str, *, limit: int, seed: int, tag: str = "") -> dict[str, Any]:
    env = env_for(project)
    root = FOLDER / project
    repo = prepare(project, root / "repo")
    base = git(repo, "rev-parse", "HEAD")
    mutants = select(project, limit, seed, repo)
    stores = {mode: _fresh_store(root / f"store-{mode}") for mode in MODES}
    # _diff takes its mode's options from mutants_revisions.MODES: these are ours.
    mutants_revisions.MODES.clear()
    mutants_revisions.MODES.update(MODES)
    log(f"selective: {len(mutants)} mutants of {project}, base {base[:12]}")
    walls: dict[str, list[float]] = {}
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    summary: dict[str, Any] = {}
    for index, mutant in enumerate(mutants):
        head = _commit(repo, base, mutant)
        result: dict[str, Any] = {
            "id": mutant.id,
            "tests": mutant.tests,
            "before": mutant.before,
            "after": mutant.after,
        }
        order = list(MODES) if index % 2 == 0 else list(reversed(MODES))
        for mode in order:
            runs = walls.setdefault(f"{mode}:{mutant.tests}", [])
            timeout = max(MIN_TIMEOUT_S, 10 * statistics.median(runs)) if runs else None
            out = root / mode / mutant.id.replace(":", "-")
            one = _diff(env, repo, base, head, mutant, out, stores[mode], mode, timeout)
            if "document" in one:
                runs.append(one["wall_s"])
                document = json.loads((out / "diff.json").read_text())
                one["carried"] = document["summary"].get("carried", 0)
                one["tests_total"] = document["summary"].get("tests", 0)
            one.pop("document", None)
            one.pop("command", None)
            result[mode] = one
        result["lost"] = result["whole"]["detected"] and not result["selective"]["detected"]
        log(
            f"mutant {index + 1}/{len(mutants)} {mutant.id}: "
            + "; ".join(
                f"{mode} {result[mode]['verdict']} {result[mode]['wall_s']} s"
                + (f" carried {result[mode].get('carried')}" if mode == "selective" else "")
                for mode in MODES
            )
        )
        results.append(result)
        summary = _summary(results) | {
            "project": f"{env.project.name} {env.project.version}",
            "seed": seed,
            "limit": limit,
            "base_commit": base,
            "repo": str(repo.relative_to(REPO_ROOT)),
            "wall_s": round(time.monotonic() - started, 1),
            "diffgenome_commit": diffgenome_commit(),
        }
        _write(summary, results, project, tag)
    return summary


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"mutants": len(results)}
    for mode in MODES:
        done = [r[mode] for r in results if "wall_s" in r[mode]]
        out[mode] = {
            "detected": sum(1 for r in done if r["detected"]),
            "killed": sum(1 for r in done if r["killed"]),
            "mean_wall_s": round(statistics.mean(r["wall_s"] for r in done), 1) if done else None,
        }
    carried = [r["selective"].get("carried") for r in results if "carried" in r["selective"]]
    totals = [r["selective"].get("tests_total") for r in results if "carried" in r["selective"]]
    out["carried_share"] = round(sum(carried) / sum(totals), 3) if sum(totals) else None
    out["lost"] = [r["id"] for r in results if r["lost"]]
    out["gained"] = [
        r["id"] for r in results if r["selective"]["detected"] and not r["whole"]["detected"]
    ]
    return out


def _write(summary: dict[str, Any], results: list[dict[str, Any]], project: str, tag: str) -> None:
    name = f"selective-{project}"
    results_path(name, tag, "json").write_text(
        json.dumps(summary | {"results": results}, indent=1, sort_keys=True, default=str) + "\n"
    )
    whole, selective = summary["whole"], summary["selective"]
    lines = [
        f"# Mutants of {summary['project']}: a whole recording against `diff --selective`",
        "",
        f"diffgenome `{summary['diffgenome_commit']}`; {summary['mutants']} mutants (seed "
        f"{summary['seed']}); wall {summary['wall_s']} s. Each mutant a commit, diffed against "
        "the base commit with the module's test file, base recorded once per file and mode.",
        "",
        "| mode | detected | killed | mean wall s |",
        "|---|---:|---:|---:|",
        f"| whole | {whole['detected']} | {whole['killed']} | {whole['mean_wall_s']} |",
        f"| selective | {selective['detected']} | {selective['killed']} | "
        f"{selective['mean_wall_s']} |",
        "",
        f"Lost by `--selective` (detected whole, not selective): {summary['lost'] or 'none'}; "
        f"detected only selective: {summary['gained'] or 'none'}. Share of the tests carried "
        f"over (not run at head): {summary['carried_share']}.",
        "",
        "| mutant | change | whole | selective | carried / tests |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        w, s = r["whole"], r["selective"]
        lines.append(
            f"| {r['id']} | `{_cell(str(r['before']))}` → `{_cell(str(r['after']))}` | "
            f"{w['verdict']} {w['wall_s']} s | {s['verdict']} {s['wall_s']} s | "
            f"{s.get('carried')} / {s.get('tests_total')} |"
        )
    results_path(name, tag, "md").write_text("\n".join(lines) + "\n")


__all__ = ["run"]
