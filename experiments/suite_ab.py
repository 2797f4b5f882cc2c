"""One step's saving on a real suite, on its own: plain pytest and ``--genome`` with each source
tree, alternated round by round in the same minutes (#26: "each step's saving measured on its
own").

    .venv/bin/python experiments/suite_ab.py --project /tmp/sqlparse-0.5.3 \\
        --python /tmp/v312/bin/python --rounds 3 \\
        --tree before=/tmp/before --tree after=. --tree "after-process=.|--genome-writer=process"

``--python`` is a virtualenv with the project (editable) and its test dependencies but without
diffgenome: each tree (a copy of diffgenome's sources with its compiled core built in place,
``python setup.py build_ext --inplace``) is put first on ``PYTHONPATH`` and the recorder is
loaded by name, with pytest's plugin autoload off, so the same interpreter, pytest and project
run every tree. ``LABEL=PATH|ARGS`` adds pytest arguments for that tree. Each run is one whole
process, after one unmeasured plain warm-up run; its CPU time (user + sys of it and the
children it waited for, the writer process included) and wall time are taken, and the
medians printed as a Markdown table with the multiple of plain.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """CPU seconds (user + sys, with waited-for children), wall seconds, exit status."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, wall, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True, help="the suite's folder")
    parser.add_argument("--python", required=True, help="the project's interpreter")
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH[|ARGS]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--args", default="", help="pytest arguments of every run")
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="also coverage.py as make bench runs it (branch, per-test contexts; installed in "
        "the project's interpreter)",
    )
    options = parser.parse_args()
    trees: list[tuple[str, Path, list[str]]] = []
    for spec in options.tree or [f"this={Path(__file__).resolve().parents[1]}"]:
        label, _, rest = spec.partition("=")
        path, _, args = rest.partition("|")
        trees.append((label, Path(path).resolve(), shlex.split(args)))
    common = [options.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    common += shlex.split(options.args)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DIFFGENOME_"))}
    base.pop("PYTHONPATH", None)
    # As make bench: pytest's rewritten test modules are cached after the warm-up run.
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    base["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    runs: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="suite-ab-") as scratch:
        run(common, options.project, base)  # warm-up, unmeasured (fills __pycache__)
        for round_no in range(options.rounds):
            modes: list[tuple[str, Path | None, list[str]]] = [("plain", None, []), *trees]
            if options.coverage:
                modes.append(("coverage.py", None, ["coverage"]))
            # The order turns from round to round: no mode always runs first.
            shift = round_no % len(modes)
            for label, tree, args in modes[shift:] + modes[:shift]:
                env = dict(base)
                cmd = list(common)
                if args == ["coverage"]:
                    rc = Path(scratch) / "coveragerc"
                    data = Path(scratch) / f"coverage-{round_no}"
                    rc.write_text(
                        f"[run]\nbranch = True\ndynamic_context = test_function\n"
                        f"data_file = {data}\n"
                    )
                    cmd = [options.python, "-m", "coverage", "run", f"--rcfile={rc}", *cmd[1:]]
                elif tree is not None:
                    env["PYTHONPATH"] = str(tree)
                    env["PYTEST_PLUGINS"] = "diffgenome.recording.plugin"
                    store = Path(scratch) / f"store-{label}-{round_no}"
                    cmd += ["--genome", f"--genome-store={store}", *args]
                cpu, wall, status = run(cmd, options.project, env)
                runs.setdefault(label, []).append((cpu, wall))
                said = f"cpu {cpu:.2f} s, wall {wall:.2f} s, exit {status}"
                print(f"round {round_no + 1} {label}: {said}", flush=True)
    plain_cpu = statistics.median(c for c, _ in runs["plain"])
    plain_wall = statistics.median(w for _, w in runs["plain"])
    print("\n| mode | CPU s (median) | wall s (median) | wall x plain |")
    print("|---|---:|---:|---:|")
    for label, measured in runs.items():
        cpu = statistics.median(c for c, _ in measured)
        wall = statistics.median(w for _, w in measured)
        print(f"| {label} | {cpu:.2f} | {wall:.2f} | {wall / plain_wall:.2f}x |")
    print(f"\n{options.rounds} rounds; plain CPU {plain_cpu:.2f} s; {sys.platform}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
