"""Turn measurements into the dated JSON and Markdown results, and check the #5 goals."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from bench.runner import ProjectResult, outcome_differences

GOALS = {
    "genome_vs_coverage": "--genome wall time <= coverage.py (branch + test contexts), "
    "every project and Python",
    "median_genome_over_plain": "median over projects of --genome / plain <= 1.3",
    "diff_5000": "diffgenome diff of two 5,000-test runs < 5 s",
    "store_per_test": "store <= 20 KB per test (median over projects)",
}


def project_entry(result: ProjectResult) -> dict[str, Any]:
    env = result.env
    medians = {
        mode: {
            "wall_s": _round(result.median(mode, "wall_s")),
            "cpu_s": _round(result.median(mode, "cpu_s")),
            "maxrss_mb": _round((result.median(mode, "maxrss_kb") or 0) / 1024, 1),
        }
        for mode in ("plain", "genome", "coverage")
        if result.of(mode)
    }
    plain_runs, genome_runs = result.of("plain"), result.of("genome")
    tests = plain_runs[0].tests if plain_runs else 0
    store = [r.store_bytes / r.tests for r in genome_runs if r.store_bytes and r.tests]
    entry: dict[str, Any] = {
        "project": env.project.name,
        "version": env.project.version,
        "python": env.python.version,
        "mock_heavy": env.project.mock_heavy,
        "notes": env.project.notes,
        "deselected": dict(env.project.deselect),
        "tests": tests,
        "reps": len(plain_runs),
        "counts_plain": plain_runs[0].counts() if plain_runs else {},
        "medians": medians,
        "ratios": {
            "genome_over_plain": _ratio(medians, "genome"),
            "coverage_over_plain": _ratio(medians, "coverage"),
        },
        "store_kb_per_test": _round(statistics.median(store) / 1024, 2) if store else None,
        "genome_facts": genome_runs[-1].genome if genome_runs else None,
        "outcome_differences_genome": outcome_differences(result, "genome"),
        "outcome_differences_coverage": outcome_differences(result, "coverage"),
        "packages": {
            k: env.packages[k]
            for k in sorted(env.packages)
            if k not in ("pip", "setuptools", "wheel")
        },
        "runs": [r.summary() for r in result.runs],
    }
    return entry


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)


def _ratio(medians: dict[str, dict[str, Any]], mode: str) -> float | None:
    plain = medians.get("plain", {}).get("wall_s")
    other = medians.get(mode, {}).get("wall_s")
    if not plain or other is None:
        return None
    return round(float(other) / float(plain), 2)


def goals(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    entries = doc["projects"]
    out: dict[str, dict[str, Any]] = {}
    slower = [
        f"{e['project']} py{e['python']}"
        for e in entries
        if e["medians"].get("genome", {}).get("wall_s") is not None
        and e["medians"].get("coverage", {}).get("wall_s") is not None
        and e["medians"]["genome"]["wall_s"] > e["medians"]["coverage"]["wall_s"]
    ]
    out["genome_vs_coverage"] = {
        "met": not slower if entries else None,
        "detail": ("slower than coverage.py: " + ", ".join(slower)) if slower else "",
    }
    ratios = [e["ratios"]["genome_over_plain"] for e in entries if e["ratios"]["genome_over_plain"]]
    med = statistics.median(ratios) if ratios else None
    out["median_genome_over_plain"] = {
        "met": None if med is None else med <= 1.3,
        "detail": f"median {med:.2f}x" if med is not None else "no data",
    }
    diff = doc.get("diff") or {}
    gen = diff.get("generated")
    if not diff.get("available"):
        out["diff_5000"] = {"met": None, "detail": diff.get("note", "not measured")}
    elif gen is None or gen.get("tests") != 5000:
        out["diff_5000"] = {"met": None, "detail": "not measured at 5,000 tests in this run"}
    else:
        out["diff_5000"] = {"met": gen["median_s"] < 5, "detail": f"{gen['median_s']} s"}
    stores = [e["store_kb_per_test"] for e in entries if e["store_kb_per_test"] is not None]
    med_store = statistics.median(stores) if stores else None
    out["store_per_test"] = {
        "met": None if med_store is None else med_store <= 20,
        "detail": f"median {med_store:.1f} KB/test" if med_store is not None else "no data",
    }
    return out


def _fmt(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _diff_cell(entry: dict[str, Any]) -> str:
    diffs = entry["outcome_differences_genome"]
    if not diffs:
        return "none"
    real = [d for d in diffs if not d["flaky_in_plain"]]
    flaky = len(diffs) - len(real)
    cell = f"**{len(real)}**" if real else "0"
    return cell + (f" (+{flaky} flaky in plain)" if flaky else "")


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [
        f"# diffgenome benchmark, {doc['date']}" + (" (quick mode)" if doc["quick"] else ""),
        "",
        f"Machine: {m['nproc']} cores, {m['cpu']}, {m['mem_gb']} GiB; load average "
        f"before {m['load_before']}, after {m['load_after']}. "
        f"Repetitions: {doc['reps']} (median shown; modes alternate per repetition). "
        f"diffgenome {doc['diffgenome']['version']} at {doc['diffgenome']['commit']}.",
        "",
        f"Command: `{doc['command']}`",
        "",
    ]
    if doc.get("partial"):
        lines += ["**Partial results: the run was still going or was cut short.**", ""]
    lines += [
        "| project | python | core | tests | reps | plain s | genome s | coverage s | genome/plain "
        "| coverage/plain | RSS MB plain / genome / coverage | store KB/test "
        "| outcome differences (genome vs plain) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for e in doc["projects"]:
        med = e["medians"]
        rss = " / ".join(_fmt(med.get(k, {}).get("maxrss_mb"), ".0f") for k in med)
        mock = " (mock)" if e["mock_heavy"] else ""
        lines.append(
            f"| {e['project']} {e['version']}{mock} | {e['python']} | {e.get('core', '?')} "
            f"| {e['tests']} "
            f"| {e.get('reps', len([r for r in e['runs'] if r['mode'] == 'plain']))} "
            f"| {_fmt(med.get('plain', {}).get('wall_s'))} "
            f"| {_fmt(med.get('genome', {}).get('wall_s'))} "
            f"| {_fmt(med.get('coverage', {}).get('wall_s'))} "
            f"| {_fmt(e['ratios']['genome_over_plain'])}x "
            f"| {_fmt(e['ratios']['coverage_over_plain'])}x "
            f"| {rss} | {_fmt(e['store_kb_per_test'], '.1f')} | {_diff_cell(e)} |"
        )
    lines += ["", "## Goals of #5", ""]
    for key, text in GOALS.items():
        g = doc["goals"][key]
        verdict = {True: "met", False: "NOT met", None: "not measured"}[g["met"]]
        lines.append(f"- {text}: **{verdict}** {g['detail']}".rstrip())
    lines += ["", "## Per-event cost (micro-benchmark)", ""]
    for py, micro in (doc.get("micro") or {}).items():
        if "error" in micro:
            lines.append(f"- Python {py}: failed: {micro['error']}")
            continue
        lines.append(
            f"- Python {py}, {micro['n']:,} calls, median of {micro['reps']}: "
            f"`--genome` {micro['genome']['ns_per_call_return']} ns per call+return "
            f"(distinct argument each call; "
            f"{micro['genome']['ns_per_call_return_same_arg']} ns with the same argument), "
            f"{micro['genome']['ns_per_decision']} ns per decision "
            f"(loop slowdown {micro['genome']['slowdown_ident']}x / "
            f"{micro['genome']['slowdown_branchy']}x); coverage.py "
            f"{micro['coverage']['ns_per_call_return']} ns per call+return, "
            f"{micro['coverage']['ns_per_decision']} ns per decision; plain call "
            f"{micro['plain']['ns_per_call_return']} ns."
        )
        if "floor_c" in micro:
            lines.append(_floor_line(micro))
        elif "floor_error" in micro:
            lines.append(f"  - the floor was not measured: {micro['floor_error']}")
    lines += ["", "## diffgenome diff", ""]
    diff = doc.get("diff") or {}
    if not diff.get("available"):
        lines.append(f"- {diff.get('note', 'not measured')}")
    else:
        for key in ("generated", "largest"):
            if key in diff:
                d = diff[key]
                what = d.get("project") or f"generated {d['tests']}-test suite"
                lines.append(f"- {what}: `{d['command']}` median {d['median_s']} s {d['runs_s']}")
    rows = doc.get("pull_requests") or []
    if rows:
        lines += ["", "## Pull requests (#48): a one-function change, base stored", ""]
        lines += [
            "| suite | plain s | `diff --selective` s | x plain | `diff` (whole) s | x plain | "
            "carried / tests | changed selective / whole | differ | base recorded again |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
        ]
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['project']} | error: {r['error'][:200]} | | | | | | | | |")
                continue
            m = r["median_s"]
            lines.append(
                f"| {r['project']} ({r['python']}) | {m['plain']} | {m['selective']} | "
                f"{r['selective_over_plain']}x | {m['whole']} | {r['whole_over_plain']}x | "
                f"{r['carried']} / {r['tests']} | {r['changed_selective']} / "
                f"{r['changed_whole']} | {len(r['changed_in_one_only']) or 'none'} | "
                f"{', '.join(r.get('base_recorded_again') or []) or 'never'} |"
            )
        lines += ["", "Changes: " + "; ".join(r.get("change", "") for r in rows if "change" in r)]
    lines += ["", "## Outcome differences and deselections", ""]
    for e in doc["projects"]:
        head = f"### {e['project']} {e['version']} on {e['python']}"
        body = []
        for d in e["outcome_differences_genome"]:
            flag = " (also varies in plain: flaky)" if d["flaky_in_plain"] else ""
            body.append(
                f"- `{d['test']}`: plain {d['plain']}, genome {d['genome']}{flag}"
                + (f" — {'; '.join(d['messages'])}" if d["messages"] else "")
            )
        for d in e["outcome_differences_coverage"]:
            body.append(f"- (coverage) `{d['test']}`: plain {d['plain']}, coverage {d['coverage']}")
        for node, why in e["deselected"].items():
            body.append(f"- deselected `{node}`: {why}")
        facts = e.get("genome_facts") or {}
        if facts.get("unverified_reasons"):
            body.append(
                f"- recorder: {facts.get('verified')}/{facts.get('records')} records verified; "
                f"unverified reasons: {facts['unverified_reasons']}"
            )
        if body:
            lines += [head, "", *body, ""]
    return "\n".join(lines) + "\n"


def write(doc: dict[str, Any], out: Path) -> tuple[Path, Path]:
    doc["goals"] = goals(doc)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"bench-{doc['date']}" + (f"-{doc['name']}" if doc.get("name") else "")
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    json_path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    md_path.write_text(markdown(doc))
    return json_path, md_path


def _floor_line(micro: dict[str, Any]) -> str:
    """The floor (an empty callback on the same events) and every mode as a multiple of it."""
    c, py = micro["floor_c"], micro["floor_py"]

    def times(mode: str) -> str:
        over = micro[mode]["over_floor"]
        cells = [over["ns_per_call_return"], over["ns_per_call_return_same_arg"]]
        return " / ".join("n/a" if x is None else f"{x}x" for x in cells)

    return (
        f"  - floor (sys.monitoring, PY_START+PY_RETURN+BRANCH on the same functions): empty C "
        f"callback {c['ns_per_call_return']} ns per call+return, {c['ns_per_decision']} ns per "
        f"decision; empty Python callback {py['ns_per_call_return']} / "
        f"{py['ns_per_decision']} ns. As multiples of the C floor (new argument / same "
        f"argument): `--genome` {times('genome')}, coverage.py {times('coverage')}, the "
        f"empty Python callback {times('floor_py')}."
    )
