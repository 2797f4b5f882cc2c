"""What `pytest --genome` costs per tiny test (#26.4): N trivial parametrised tests, each calling
one tiny project function, plain and under `--genome`, alternated in the same minutes.

    .venv/bin/python experiments/pertest.py            # 5,000 tests, 5 rounds, this tree
    .venv/bin/python experiments/pertest.py --python .venv-3.13/bin/python --tests 5000
    .venv/bin/python experiments/pertest.py --tree before=/tmp/base --tree after=.   # A/B
    .venv/bin/python experiments/pertest.py --profile /tmp/pertest.prof           # one cProfile run

Each ``--tree LABEL=PATH`` is a copy of diffgenome's sources (with its compiled core built in
place) put first on ``PYTHONPATH``, so the same interpreter and pytest run every tree; the
default is this checkout. A round runs plain and each tree once, the order turning from round
to round. Each run is one whole process; its CPU time (user + sys, from ``wait4``) and wall
time are taken, and the per-test cost is (genome - plain) / N of the medians, in µs. The
process's own start-up, collection and store opening are in both, so the per-test figure is
an upper bound of what one more test costs (they amortise over N).

``--profile FILE`` runs the first tree once under cProfile (``-m cProfile -o FILE -m pytest``)
and prints the top lines by tottime and by cumtime.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

_SRC = '''\
"""The one function every test calls."""


def double(x):
    if x < 0:
        return -2 * -x
    return 2 * x
'''

_TEST = """\
import pytest

from tiny import double


@pytest.mark.parametrize("i", range({n}))
def test_double(i):
    assert double(i) == 2 * i
"""

_PYPROJECT = """\
[tool.pytest.ini_options]
pythonpath = ["src"]
testpaths = ["tests"]
"""


def write_project(root: Path, n: int) -> Path:
    (root / "src" / "tiny").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text(_PYPROJECT)
    (root / "src" / "tiny" / "__init__.py").write_text(_SRC)
    (root / "tests" / "test_tiny.py").write_text(_TEST.format(n=n))
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    (root / ".git" / "info" / "exclude").write_text("__pycache__/\n.diffgenome/\n")
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tiny"], cwd=root, check=True)
    return root


def pytest_command(python: str, mode: str, store: Path, load: bool) -> list[str]:
    """``load``: the interpreter does not have diffgenome installed (no pytest11 entry point),
    so the genome runs name the plugin; plain runs then do not load it at all."""
    args = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if mode != "plain":
        args += ["-p", "diffgenome.recording.plugin"] if load else []
        args += ["--genome", f"--genome-store={store}"]
    return args


def installed(python: str, cwd: Path, env: dict[str, str]) -> bool:
    """Whether ``python`` finds diffgenome's pytest plugin by its entry point (installed, or a
    checkout's egg-info on ``PYTHONPATH``)."""
    code = (
        "import importlib.metadata as m, sys; "
        "sys.exit(0 if any(e.name == 'diffgenome' for e in m.entry_points(group='pytest11')) "
        "else 1)"
    )
    return subprocess.run([python, "-c", code], cwd=cwd, env=env, check=False).returncode == 0


def environment(tree: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DIFFGENOME_"))}
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """CPU seconds (user + sys) and wall seconds of one whole process, and its exit status."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=sink, stderr=sink)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    return usage.ru_utime + usage.ru_stime, wall, proc.returncode


def which_tree(python: str, env: dict[str, str], cwd: Path) -> str:
    out = subprocess.run(
        [python, "-c", "import diffgenome; print(diffgenome.__file__)"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def measure(args: argparse.Namespace, trees: list[tuple[str, Path | None]]) -> dict[str, object]:
    python = args.python
    with tempfile.TemporaryDirectory(prefix="pertest-") as name:
        root = write_project(Path(name) / "tiny", args.tests)
        modes: list[tuple[str, Path | None]] = [("plain", None), *trees]
        load = {label: not installed(python, root, environment(tree)) for label, tree in trees}
        for label, tree in trees:
            print(f"# {label}: {which_tree(python, environment(tree), root)}", file=sys.stderr)
        cpu: dict[str, list[float]] = {label: [] for label, _ in modes}
        wall: dict[str, list[float]] = {label: [] for label, _ in modes}
        for turn in range(args.rounds + args.warmup):
            shift = turn % len(modes)
            for label, tree in modes[shift:] + modes[:shift]:
                store = Path(name) / f"store-{label}-{turn}"
                mode = "plain" if label == "plain" else "genome"
                cmd = pytest_command(python, mode, store, load.get(label, False))
                c, w, rc = timed(cmd, root, environment(tree))
                if rc != 0:
                    raise SystemExit(f"{label}: pytest exited {rc}")
                if turn >= args.warmup:
                    cpu[label].append(c)
                    wall[label].append(w)
                print(
                    f"# round {turn}{' (warm-up)' if turn < args.warmup else ''} {label}: "
                    f"cpu {c:.2f} s, wall {w:.2f} s",
                    file=sys.stderr,
                )
    result: dict[str, object] = {"python": python, "tests": args.tests, "rounds": args.rounds}
    plain_cpu = statistics.median(cpu["plain"])
    plain_wall = statistics.median(wall["plain"])
    rows = []
    for label, _ in modes:
        row: dict[str, object] = {
            "mode": label,
            "cpu_median": statistics.median(cpu[label]),
            "cpu_min": min(cpu[label]),
            "wall_median": statistics.median(wall[label]),
            "wall_min": min(wall[label]),
        }
        if label != "plain":
            c, w = statistics.median(cpu[label]), statistics.median(wall[label])
            row["per_test_us_cpu"] = (c - plain_cpu) / args.tests * 1e6
            row["per_test_us_wall"] = (w - plain_wall) / args.tests * 1e6
            row["x_plain_wall"] = w / plain_wall
        rows.append(row)
    result["rows"] = rows
    return result


def profile(args: argparse.Namespace, tree: Path | None) -> None:
    import pstats

    with tempfile.TemporaryDirectory(prefix="pertest-prof-") as name:
        root = write_project(Path(name) / "tiny", args.tests)
        env = environment(tree)
        load = not installed(args.python, root, env)
        run = pytest_command(args.python, "genome", Path(name) / "store", load)
        cmd = [run[0], "-m", "cProfile", "-o", str(args.profile), *run[1:]]
        subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, check=True)
    for key in ("tottime", "cumtime"):
        stats = pstats.Stats(str(args.profile))
        stats.sort_stats(key).print_stats(args.top)


def markdown(result: dict[str, object]) -> str:
    lines = [
        f"{result['python']}, {result['tests']} tests, {result['rounds']} rounds (medians):",
        "",
        "| mode | CPU s (min) | wall s (min) | wall x plain | µs/test CPU | µs/test wall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    rows = result["rows"]
    assert isinstance(rows, list)
    for row in rows:
        extra = (
            f"{row['x_plain_wall']:.2f}x | {row['per_test_us_cpu']:.0f} | "
            f"{row['per_test_us_wall']:.0f}"
            if "per_test_us_cpu" in row
            else "1.00x | | "
        )
        lines.append(
            f"| {row['mode']} | {row['cpu_median']:.2f} ({row['cpu_min']:.2f}) | "
            f"{row['wall_median']:.2f} ({row['wall_min']:.2f}) | {extra} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter with pytest")
    parser.add_argument("--tests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="a diffgenome source tree to put on PYTHONPATH (repeat for A/B); default this one",
    )
    parser.add_argument("--profile", type=Path, help="cProfile one --genome run into this file")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--json", type=Path, help="append the result as one JSON line")
    args = parser.parse_args()
    trees: list[tuple[str, Path | None]] = []
    for spec in args.tree:
        label, _, path = spec.partition("=")
        trees.append((label, Path(path).resolve()))
    if not trees:
        trees = [("genome", HERE)]
    if args.profile is not None:
        profile(args, trees[0][1])
        return 0
    result = measure(args, trees)
    print(markdown(result))
    if args.json is not None:
        with args.json.open("a") as out:
            out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
