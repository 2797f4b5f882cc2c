"""What `diffgenome diff BASE HEAD` costs once both sides are recorded, with code changes
analysed (#12: the 2 s goal for a 500-test suite).

For each ``--change`` (a function of the project, ``module.qualname``) this copies the
benchmark project's tree into a fresh git repository, commits it, then commits a change to
that function that does not change what it does (a local assignment at the start of its body),
so that the function is a changed symbol and no test behaves differently. It then runs, from
that repository, ``diffgenome diff HEAD~1 HEAD --no-confirm`` once to record both sides, and
``--reps`` more times, each of which reuses the two recorded runs: the time of a diff whose
recording is done. ``--compare PATH`` times the same reused diffs with the diffgenome at PATH
(an older commit's source) and checks that both give the same answer.

The function chosen decides how many tests ran the changed code (those genomes are read) and
how many did not (those the two runs hold alike are left unread): a function nearly every test
runs (``sqlparse.utils.imt``) is the worst case, one that few run the usual one.

Usage: ``.venv/bin/python experiments/diff_reading.py --project sqlparse --change
sqlparse.utils.imt --change sqlparse.utils.remove_quotes [--compare /tmp/old] [--name TAG]``.
Needs the benchmark's virtualenvs (``experiments/bench.py --projects P`` builds them). Results:
``experiments/results/diff-reading-DATE[-TAG].{json,md}``.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench.envs import current_python, ensure_env  # noqa: E402
from bench.projects import PROJECTS  # noqa: E402
from bench.runner import clean_env  # noqa: E402

WORK = HERE / "work"
_NOT_READ = re.compile(r"(\d+) the same genome in both runs: not read")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=exp", "-c", "user.email=exp@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _change(repo: Path, target: str) -> str:
    """Insert a no-op assignment at the start of ``target``'s body; the file changed."""
    module, _, qualname = target.partition(":") if ":" in target else _split(repo, target)
    path = repo / (module.replace(".", "/") + ".py")
    text = path.read_text()
    tree = ast.parse(text)
    node: ast.AST = tree
    for part in qualname.split("."):
        node = next(
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and child.name == part
        )
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    first = node.body[0]
    lines = text.splitlines(keepends=True)
    indent = " " * first.col_offset
    lines.insert(first.lineno - 1, f"{indent}_diff_reading_experiment = None\n")
    path.write_text("".join(lines))
    return str(path.relative_to(repo))


def _split(repo: Path, dotted: str) -> tuple[str, str, str]:
    """``pkg.mod.func`` → (``pkg.mod``, ``.``, ``func``): the longest prefix that is a file."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if (repo / ("/".join(parts[:cut]) + ".py")).is_file():
            return ".".join(parts[:cut]), ".", ".".join(parts[cut:])
    raise SystemExit(f"no module file for {dotted}")


def _diff(product: Path, repo: Path, exe: str, pytest: list[str]) -> dict[str, Any]:
    json_out = repo.parent / "diff.json"
    done = subprocess.run(
        [
            *("/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "diffgenome.analysis.cli"),
            *("diff", "HEAD~1", "HEAD", "--no-confirm", "--fail-on", "never", "--python", exe),
            *("--json", str(json_out), "--", *pytest),
        ],
        cwd=repo,
        env={**clean_env({}), "PYTHONPATH": str(product)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"diffgenome diff failed: {done.stderr[-3000:]}")
    wall, peak = done.stderr.strip().splitlines()[-1].split()
    result = json.loads(json_out.read_text())
    unread = [int(n) for n in _NOT_READ.findall(done.stderr)]
    return {
        "wall_s": float(wall),
        "peak_mb": int(peak) / 1024,
        "reused": done.stderr.count("reusing run"),
        "not_read": unread,
        "answer": {k: result[k] for k in ("summary", "tests", "code_changes", "drift")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default="sqlparse")
    parser.add_argument("--change", action="append", required=True, help="module.function")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="an older diffgenome's source folder")
    parser.add_argument("--name", default="")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()

    project = next(p for p in PROJECTS if p.name == args.project)
    env = ensure_env(project, current_python(), WORK)
    pytest = ["-p", "no:cacheprovider", *project.pytest_args, *project.paths]
    cases: list[dict[str, Any]] = []
    for target in args.change:
        scratch = Path(tempfile.mkdtemp(prefix="diff-reading-"))
        repo = scratch / "repo"
        shutil.copytree(
            env.tree, repo, ignore=shutil.ignore_patterns("__pycache__", ".diffgenome", ".git")
        )
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "base")
        changed = _change(repo, target)
        _git(repo, "commit", "-qam", f"a no-op change to {target}")
        first = _diff(ROOT, repo, env.exe, pytest)
        new = [_diff(ROOT, repo, env.exe, pytest) for _ in range(args.reps)]
        old = (
            [_diff(args.compare, repo, env.exe, pytest) for _ in range(args.reps)]
            if args.compare
            else []
        )
        entry = next(
            (
                e
                for e in first["answer"]["code_changes"]
                if e["symbol"].endswith(target.split(".")[-1])
            ),
            None,
        )
        case: dict[str, Any] = {
            "change": target,
            "file": changed,
            "tests": first["answer"]["summary"]["tests"],
            "summary": first["answer"]["summary"],
            "tests_running_it": len(entry["tests_head"]) if entry else None,
            "record_and_diff_s": first["wall_s"],
            "new": {
                "wall_s": statistics.median(r["wall_s"] for r in new),
                "walls": [r["wall_s"] for r in new],
                "peak_mb": statistics.median(r["peak_mb"] for r in new),
                "reused_runs": new[0]["reused"],
                "not_read": new[0]["not_read"],
            },
        }
        if old:
            case["old"] = {
                "product": str(args.compare),
                "wall_s": statistics.median(r["wall_s"] for r in old),
                "walls": [r["wall_s"] for r in old],
                "peak_mb": statistics.median(r["peak_mb"] for r in old),
                "reused_runs": old[0]["reused"],
            }
            case["same_answer"] = all(r["answer"] == new[0]["answer"] for r in old + new)
        cases.append(case)
        print(json.dumps(case, indent=2), file=sys.stderr, flush=True)
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "date": datetime.date.today().isoformat(),
        "project": project.spec,
        "python": current_python().version,
        "load_after": os.getloadavg(),
        "cases": cases,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"diff-reading-{result['date']}" + (f"-{args.name}" if args.name else "")
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(_markdown(result))
    print(_markdown(result))


def _markdown(r: dict[str, Any]) -> str:
    lines = [
        f"# `diffgenome diff HEAD~1 HEAD` with both sides recorded: {r['project']}",
        "",
        f"Python {r['python']}, {r['date']}, load average after {r['load_after']}. Each row: a "
        "no-op change to one function, recorded once, then diffed again reusing both runs "
        "(median wall time).",
        "",
        "| changed function | tests | tests that ran it | genomes left unread (base, head) "
        "| diff | before | same answer |",
        "|---|---:|---:|---|---:|---:|---|",
    ]
    for c in r["cases"]:
        old = c.get("old")
        before = f"{old['wall_s']:.2f} s" if old else "-"
        lines.append(
            f"| `{c['change']}` | {c['tests']} | {c['tests_running_it']} | "
            f"{', '.join(map(str, c['new']['not_read'])) or '0'} | {c['new']['wall_s']:.2f} s | "
            f"{before} | {c.get('same_answer', '-')} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
