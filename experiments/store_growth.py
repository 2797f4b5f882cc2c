"""What a store costs over repeated runs, and what reading it back costs (#12.6, #12.7).

Records one benchmark project ``--runs`` times at one commit into one fresh store (as a CI job
or a developer re-running the suite does), then reports: the store's bytes on disk after each
run and, logically, what each run added (test rows, symbols, phase bodies); the time and peak
memory of ``diffgenome diff`` of the first two runs and of ``diffgenome export`` of the first
run (as JSON and as JSON Lines), ``--reps`` times each, medians.

``--compare PATH``: also time a copy of the same runs in the store/1 layout (one compressed
blob per test) read by the diffgenome at PATH (for example a worktree of an older commit):
the before/after of one machine at one moment.

Usage: ``.venv/bin/python experiments/store_growth.py --project sqlparse --runs 10
[--compare /work/old] [--name TAG]``. Needs the benchmark's virtualenvs
(``experiments/bench.py --projects P`` builds them). Results go to
``experiments/results/store-growth-DATE[-TAG].{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench.envs import current_python, ensure_env  # noqa: E402
from bench.projects import PROJECTS  # noqa: E402
from bench.runner import clean_env, pytest_args  # noqa: E402

WORK = HERE / "work"


def _disk(store: Path) -> int:
    return sum(p.stat().st_size for p in store.glob("genome.sqlite*"))


def _logical(db: Path) -> dict[str, Any]:
    """Bytes by table: test rows and symbols per run, phase bodies in all."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tests = dict(
            con.execute(
                "SELECT run_id, SUM(LENGTH(id) + LENGTH(phases) + LENGTH(extra)"
                " + LENGTH(unverified_reasons) + LENGTH(run_id)) FROM tests GROUP BY run_id"
            ).fetchall()
        )
        symbols = dict(
            con.execute(
                "SELECT run_id, SUM(LENGTH(id) + LENGTH(doc) + LENGTH(run_id)) FROM symbols"
                " GROUP BY run_id"
            ).fetchall()
        )
        bodies = con.execute("SELECT COUNT(*), SUM(LENGTH(body)) FROM genomes").fetchone()
        runs = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY started_at, rowid")]
        columns = {str(row[1]) for row in con.execute("PRAGMA table_info(runs)")}
        shared = (
            con.execute(
                "SELECT SUM(tests_in IS NOT NULL), SUM(symbols_in IS NOT NULL) FROM runs"
            ).fetchone()
            if "tests_in" in columns
            else (0, 0)
        )
    finally:
        con.close()
    return {
        "runs": runs,
        "test_rows": [int(tests.get(r, 0)) for r in runs],
        "symbols": [int(symbols.get(r, 0)) for r in runs],
        "bodies": int(bodies[0] or 0),
        "body_bytes": int(bodies[1] or 0),
        # store/3: runs whose test rows (symbols) are an earlier run's manifest, not their own
        "shared_tests": int(shared[0] or 0),
        "shared_symbols": int(shared[1] or 0),
    }


def _as_store_v1(src: Path, dst: Path) -> None:
    """A copy of a store/2 store in the store/1 layout: what the same runs took before."""
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    con = sqlite3.connect(src / "genome.sqlite")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    shutil.copy(src / "genome.sqlite", dst / "genome.sqlite")
    shutil.copy(src / "secret.key", dst / "secret.key")
    con = sqlite3.connect(dst / "genome.sqlite")
    bodies = {
        a: json.loads(zlib.decompress(b)) for a, b in con.execute("SELECT hash, body FROM genomes")
    }
    rows = con.execute(
        "SELECT run_id, id, worker, outcome, verified, unverified_reasons, extra, phases FROM tests"
    ).fetchall()
    con.execute("DROP TABLE tests")
    con.execute("DROP TABLE genomes")
    con.execute(
        "CREATE TABLE tests (run_id TEXT NOT NULL, id TEXT NOT NULL, worker TEXT, outcome TEXT"
        " NOT NULL, verified INTEGER NOT NULL, unverified_reasons TEXT NOT NULL DEFAULT '[]',"
        " extra TEXT NOT NULL DEFAULT '{}', phases BLOB NOT NULL, PRIMARY KEY (run_id, id))"
        " WITHOUT ROWID"
    )
    for *head, cell in rows:
        phases = {name: bodies[a] for name, a in json.loads(cell).items()}
        text = json.dumps(phases, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        con.execute(
            "INSERT INTO tests VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*head, zlib.compress(text.encode(), 3)),
        )
    con.execute("UPDATE meta SET value = 'diffgenome-store/1' WHERE key = 'format'")
    con.commit()
    con.execute("VACUUM")
    con.close()


def _timed(product: Path, args: list[str], reps: int) -> dict[str, float]:
    """Median wall time and peak RSS of ``diffgenome ARGS`` run with ``product`` first on the
    path (from a neutral folder, so that the working directory does not decide it)."""
    walls, peaks = [], []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as cwd:
            done = subprocess.run(
                [
                    "/usr/bin/time",
                    "-f",
                    "%e %M",
                    sys.executable,
                    "-m",
                    "diffgenome.analysis.cli",
                    *args,
                ],
                cwd=cwd,
                env={**os.environ, "PYTHONPATH": str(product)},
                capture_output=True,
                text=True,
                check=False,
            )
        if done.returncode not in (0, 1):
            raise SystemExit(f"diffgenome {' '.join(args)} failed: {done.stderr[-2000:]}")
        wall, peak = done.stderr.strip().splitlines()[-1].split()
        walls.append(float(wall))
        peaks.append(int(peak) / 1024)
    return {"wall_s": statistics.median(walls), "peak_mb": statistics.median(peaks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default="sqlparse")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="an older diffgenome's source folder")
    parser.add_argument("--name", default="")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()

    project = next(p for p in PROJECTS if p.name == args.project)
    env = ensure_env(project, current_python(), WORK)
    scratch = Path(tempfile.mkdtemp(prefix="store-growth-"))
    store = scratch / "store"
    disk: list[int] = []
    for n in range(args.runs):
        done = subprocess.run(
            [env.exe, *pytest_args(env), "--genome", f"--genome-store={store}"],
            cwd=env.tree,
            env=clean_env({"BENCH_OUTCOMES": str(scratch / "outcomes.json")}),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode not in (0, 1):
            raise SystemExit(f"run {n + 1} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        disk.append(_disk(store))
        print(f"run {n + 1}: store {disk[-1]:,} bytes", file=sys.stderr, flush=True)
    logical = _logical(store / "genome.sqlite")
    first, second = logical["runs"][:2]
    timings = {
        "diff": _timed(
            ROOT,
            [
                "diff",
                first,
                second,
                "--store",
                str(store),
                "-q",
                "--json",
                str(scratch / "diff.json"),
            ],
            args.reps,
        ),
        "export_json": _timed(
            ROOT,
            ["export", first, "--store", str(store), "-q", "-o", str(scratch / "run.json")],
            args.reps,
        ),
        "export_jsonl": _timed(
            ROOT,
            [
                "export",
                first,
                "--store",
                str(store),
                "-q",
                "--format",
                "jsonl",
                "-o",
                str(scratch / "run.jsonl"),
            ],
            args.reps,
        ),
    }
    before: dict[str, Any] = {}
    if args.compare is not None:
        old = scratch / "store-v1"
        _as_store_v1(store, old)
        before = {
            "product": str(args.compare),
            "disk_bytes": _disk(old),
            "diff": _timed(
                args.compare,
                [
                    "diff",
                    first,
                    second,
                    "--store",
                    str(old),
                    "-q",
                    "--json",
                    str(scratch / "diff-v1.json"),
                ],
                args.reps,
            ),
            "export_json": _timed(
                args.compare,
                ["export", first, "--store", str(old), "-q", "-o", str(scratch / "run-v1.json")],
                args.reps,
            ),
        }
        same = (scratch / "run.json").read_bytes() == (scratch / "run-v1.json").read_bytes()
        before["export_identical"] = same
        a = json.loads((scratch / "diff.json").read_text())
        b = json.loads((scratch / "diff-v1.json").read_text())
        before["diff_identical"] = a["tests"] == b["tests"] and a["summary"] == b["summary"]
    tests = len(json.loads((scratch / "outcomes.json").read_text()))
    result = {
        "date": datetime.date.today().isoformat(),
        "project": project.spec,
        "python": current_python().version,
        "tests": tests,
        "runs": args.runs,
        "disk_bytes_after_each_run": disk,
        "logical": logical,
        "timings": timings,
        "before": before,
    }
    shutil.rmtree(scratch, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"store-growth-{result['date']}" + (f"-{args.name}" if args.name else "")
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(_markdown(result))
    print(_markdown(result))


def _markdown(r: dict[str, Any]) -> str:
    disk = r["disk_bytes_after_each_run"]
    later = disk[-1] - disk[0]
    lines = [
        f"# Store growth: {r['project']}, {r['tests']} tests, {r['runs']} runs of one commit",
        "",
        f"Python {r['python']}, {r['date']}. Bytes on disk (database and WAL) after each run:",
        "",
        "| run | store bytes | added |",
        "|---:|---:|---:|",
    ]
    for n, size in enumerate(disk):
        added = size - (disk[n - 1] if n else 0)
        lines.append(f"| {n + 1} | {size:,} | {added:,} |")
    logical = r["logical"]
    lines += [
        "",
        f"Runs 2-{r['runs']} added {later:,} bytes, {100 * later / disk[0]:.1f} % of the first "
        f"run ({100 * later / disk[0] / max(len(disk) - 1, 1):.1f} % per run). Logically: "
        f"{logical['bodies']:,} distinct phase bodies ({logical['body_bytes']:,} bytes) for "
        f"all runs; per run {statistics.median(logical['test_rows']):,.0f} bytes of test rows "
        f"and {statistics.median(logical['symbols']):,.0f} of symbols (medians); "
        f"{logical.get('shared_tests', 0)} runs hold no test rows of their own and "
        f"{logical.get('shared_symbols', 0)} no symbols (store/3: an earlier run holds the "
        "same).",
        "",
        "| reading | wall (median) | peak memory |",
        "|---|---:|---:|",
    ]
    for name, t in r["timings"].items():
        lines.append(f"| {name} | {t['wall_s']:.2f} s | {t['peak_mb']:.0f} MB |")
    if r["before"]:
        b = r["before"]
        lines += [
            "",
            f"The same runs in the store/1 layout ({b['disk_bytes']:,} bytes), read by "
            f"`{b['product']}`: diff {b['diff']['wall_s']:.2f} s / {b['diff']['peak_mb']:.0f} MB, "
            f"export {b['export_json']['wall_s']:.2f} s / {b['export_json']['peak_mb']:.0f} MB; "
            f"export byte-identical: {b['export_identical']}; diff identical: "
            f"{b['diff_identical']}.",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
