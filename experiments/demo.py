"""`make demo`: record the bundled example project's tests and show their genomes.

Copies tests/projects/shop into a temporary git repository, runs `pytest --genome` there with
this interpreter, then prints what the store holds. Everything shown is recorded, nothing is
made up. (Once the differ lands, the demo becomes a two-commit `diffgenome diff`.)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "tests" / "projects" / "shop"


def run(*args: str, cwd: Path) -> None:
    print(f"\n$ {' '.join(args)}", flush=True)
    subprocess.run(args, cwd=cwd, check=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="diffgenome-demo-") as tmp:
        project = Path(tmp) / "shop"
        shutil.copytree(EXAMPLE, project)
        git = ["git", "-c", "user.name=demo", "-c", "user.email=demo@example.invalid"]
        subprocess.run([*git, "init", "-q"], cwd=project, check=True)
        subprocess.run([*git, "add", "-A"], cwd=project, check=True)
        subprocess.run([*git, "commit", "-q", "-m", "example"], cwd=project, check=True)
        run(sys.executable, "-m", "pytest", "--genome", "-q", "-p", "no:cacheprovider", cwd=project)
        cli = [sys.executable, "-m", "diffgenome.analysis.cli"]
        run(*cli, "runs", cwd=project)
        run(*cli, "show", "latest", cwd=project)
        run(*cli, "show", "latest", "tests/test_pricing.py::test_total_with_discount", cwd=project)
        run(*cli, "show", "latest", "test_checkout_with_mocked_gateway", cwd=project)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
