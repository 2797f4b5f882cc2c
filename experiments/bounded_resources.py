"""Peak memory of recording (issue #6): the 5,000-test suite and the test making 10^6 in-scope
calls, each run with and without ``--genome``; prints a small table.

Usage: python experiments/bounded_resources.py [--repeat N]

Each pytest session runs in a fresh child of a fresh wrapper process, so ``ru_maxrss`` of the
wrapper's children is the peak resident set of exactly that session (Linux reports KiB).
Wall time is printed for orientation only; it depends on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PY = sys.executable

SUITE_MODULES, SUITE_PER_MODULE = 5, 1000

WRAPPER = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": done.returncode, "peak_kib": peak, "tail": done.stdout[-300:]}))
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def suite_project(root: Path) -> Path:
    project = root / "suite"
    files = {"pkg/__init__.py": "", "pkg/mod.py": "def f(n):\n    return n + 1\n"}
    for m in range(SUITE_MODULES):
        files[f"tests/test_suite_{m}.py"] = f"""
            import pytest

            from pkg.mod import f


            @pytest.mark.parametrize("n", range({SUITE_PER_MODULE}))
            def test_case(n):
                assert f(n) == n + 1
        """
    write(project, files)
    return project


def calls_project(root: Path) -> Path:
    project = root / "calls"
    write(
        project,
        {
            "pkg/__init__.py": "",
            "pkg/work.py": """
                def leaf(i):
                    return i


                def loop(n):
                    for i in range(n):
                        leaf(i)
            """,
            "tests/test_calls.py": """
                from pkg import work


                def test_a_million_calls():
                    work.loop(10**6)
            """,
        },
    )
    return project


def measure(project: Path, genome: bool) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    store = project / ".diffgenome"
    if store.exists():
        for item in store.iterdir():
            item.unlink()
        store.rmdir()
    cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += ["-p", "no:hypothesispytest", "-p", "no:xdist"]
    if genome:
        cmd.append("--genome")
    started = time.perf_counter()
    done = subprocess.run(
        [PY, "-c", WRAPPER, *cmd],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    result["wall_s"] = time.perf_counter() - started
    if result["rc"] != 0:
        raise SystemExit(f"pytest failed in {project}: {result['tail']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the max is kept")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, project in (
            (f"{SUITE_MODULES * SUITE_PER_MODULE:,} tests", suite_project(root)),
            ("10^6 calls in one test", calls_project(root)),
        ):
            cells = {}
            for genome in (False, True):
                runs = [measure(project, genome) for _ in range(args.repeat)]
                cells[genome] = (
                    max(int(str(r["peak_kib"])) for r in runs),
                    min(float(str(r["wall_s"])) for r in runs),
                )
            rows.append((name, cells))
    print(f"Python {sys.version.split()[0]}, peak RSS of the pytest process (ru_maxrss)")
    print(f"{'workload':<24} {'plain MiB':>10} {'--genome MiB':>13} {'ratio':>6}   wall s")
    for name, cells in rows:
        plain, genome = cells[False][0] / 1024, cells[True][0] / 1024
        walls = f"{cells[False][1]:.1f} / {cells[True][1]:.1f}"
        print(f"{name:<24} {plain:>10.1f} {genome:>13.1f} {genome / plain:>6.2f}   {walls}")


if __name__ == "__main__":
    main()
