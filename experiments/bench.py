"""`make bench`: diffgenome side by side with plain pytest and coverage.py on real test suites.

    python experiments/bench.py            # all pinned projects, every Python found, 3 reps
    python experiments/bench.py --quick    # one small project, this Python, 1 rep (CI check)
    python experiments/bench.py --projects attrs,cookiecutter --pythons 3.13 --reps 5

The method and the latest table are in docs/performance.md; the code is in experiments/bench/.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `bench` is the package next to this file (a package wins over this module of the same name).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
