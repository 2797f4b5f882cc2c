"""Issue #5.4, "truth of the diff": stability, mutant sensitivity and a stand-in census.

    python experiments/truth.py stability --projects cookiecutter,google-auth
    python experiments/truth.py mutants --project more-itertools --limit 60 --jobs 2
    python experiments/truth.py mutants --via-revisions --project packaging --limit 20
    python experiments/truth.py census --projects cookiecutter,google-auth,google-api-core
    python experiments/truth.py report
    python experiments/truth.py releases --projects boltons,isodate --tag s10-after
    python experiments/truth.py ways --projects boltons,isodate --tag s10

Each step writes its raw result under experiments/work/truth/; `report` joins them into
experiments/results/truth-YYYY-MM-DD.{md,json}. The method is in docs/experiments.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `truth` is the package next to this file; `bench` (the harness it reuses) sits beside it.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from truth.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
