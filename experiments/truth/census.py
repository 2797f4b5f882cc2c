"""Stand-in census: what the recorder says about the mocks of mock-heavy suites.

Counts substitution nodes of one recorded run per project by mechanism and relation, and the
share whose ``claimed_target`` is resolved (not null), the number the earlier public prototype
reported as 42 % on a FastAPI suite. Resolved targets are split into the project's own symbols
and others (standard library, third-party), since only the former can drift in a diff.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.envs import log

from truth.common import WORK, document, env_for, load, project_args, record, save

PROTOTYPE_SHARE = 0.42


def run(projects: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in projects:
        store = WORK / "stores" / f"stability-{name}"
        stab = load(f"stability-{name}")
        if stab is not None and store.exists():
            run_id = stab["runs"][0]
        else:
            env = env_for(name)
            store = WORK / "stores" / f"census-{name}"
            log(f"census: recording {name}")
            run_id = record(env, store, project_args(env)).run_id
        log(f"census: reading {name} run {run_id}")
        results[name] = count(document(store, run_id)) | {"run": run_id}
    save("census", results)
    return results


def count(doc: dict[str, Any]) -> dict[str, Any]:
    source_roots = [r for r in doc["run"]["config"].get("source_roots", []) if isinstance(r, str)]
    own_modules = _own_modules(doc)
    nodes = 0
    tests_with = 0
    by_mechanism: Counter[str] = Counter()
    by_relation: Counter[str] = Counter()
    by_pair: Counter[str] = Counter()
    resolved = 0
    resolved_own = 0
    resolved_by_mechanism: Counter[str] = Counter()
    mismatches = 0
    # The seam check (docs/recording.md): nodes it ran on, those with a call the real target
    # would reject, those whose stand-in function's own signature differs, and the readings.
    checked = 0
    rejected = 0
    rejected_examples: Counter[str] = Counter()
    signature_problems = 0
    readings: Counter[str] = Counter()
    roots = 0
    roots_resolved = 0
    unresolved_by_relation: Counter[str] = Counter()
    unresolved_examples: Counter[str] = Counter()
    for test in doc["tests"]:
        seen = False
        for phase in test.get("phases", {}).values():
            for node in phase.get("nodes", []):
                if node["type"] != "substitution":
                    continue
                seen = True
                nodes += 1
                by_mechanism[node["mechanism"]] += 1
                by_relation[node["relation"]] += 1
                by_pair[f"{node['mechanism']}/{node['relation']}"] += 1
                mismatches += bool(node.get("signature_mismatch"))
                seam = node.get("seam")
                if isinstance(seam, dict):
                    checked += 1
                    problems = seam.get("problems") or []
                    calls = [p for p in problems if p.startswith("call: ")]
                    rejected += bool(calls)
                    signature_problems += len(calls) < len(problems)
                    readings.update(seam.get("readings") or [])
                    if calls:
                        rejected_examples[
                            f"{node['mechanism']}/{node['relation']} {node['claimed_target']} "
                            f"{node['path']}: {calls[0]}"
                        ] += 1
                target = node.get("claimed_target")
                if not node.get("path"):
                    roots += 1
                    roots_resolved += bool(target)
                if not target:
                    unresolved_by_relation[node["relation"]] += 1
                if target:
                    resolved += 1
                    resolved_by_mechanism[node["mechanism"]] += 1
                    if _module_of(target) in own_modules:
                        resolved_own += 1
                else:
                    unresolved_examples[
                        f"{node['mechanism']}/{node['relation']} "
                        f"{node['substitute']} {node['path']}"
                    ] += 1
        tests_with += seen
    return {
        "tests": len(doc["tests"]),
        "tests_with_stand_ins": tests_with,
        "nodes": nodes,
        "by_mechanism": dict(by_mechanism.most_common()),
        "by_relation": dict(by_relation.most_common()),
        "by_mechanism_relation": dict(by_pair.most_common()),
        "resolved": resolved,
        "resolved_share": round(resolved / nodes, 4) if nodes else None,
        "resolved_own_project": resolved_own,
        # The stand-in object itself (path ""), not attributes or return values reached on it.
        "root_nodes": roots,
        "root_resolved": roots_resolved,
        "root_resolved_share": round(roots_resolved / roots, 4) if roots else None,
        "unresolved_by_relation": dict(unresolved_by_relation.most_common()),
        "resolved_by_mechanism": dict(resolved_by_mechanism),
        "signature_mismatch": mismatches,
        "seam_checked": checked,
        "seam_call_rejected": rejected,
        "seam_signature_differs": signature_problems,
        "seam_readings": dict(readings.most_common()),
        "seam_rejected_top": dict(rejected_examples.most_common(12)),
        "unresolved_top": dict(unresolved_examples.most_common(12)),
        "source_roots": source_roots,
    }


def _own_modules(doc: dict[str, Any]) -> set[str]:
    return {
        _module_of(s["id"])
        for s in doc.get("symbols", [])
        if s.get("origin") == "repo" and s["id"].startswith("py:")
    }


def _module_of(symbol: str) -> str:
    """The top-level package of a ``py:`` symbol: enough to tell the project from others."""
    return symbol.removeprefix("py:").split(".", 1)[0].split("#", 1)[0]
