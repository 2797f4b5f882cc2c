"""`make compat`: strict settings and common plugins, each with and without --genome (#15).

    python experiments/compat.py                     # the whole matrix; updates docs/reliability.md
    python experiments/compat.py --examples-only     # the example-project rows (no downloads)
    python experiments/compat.py --rows randomly,pytest-cov

Every test's outcome must be the same with and without --genome, and the genome must be
there and verified as far as the setting allows. The code is in experiments/compat/; the
environments come from experiments/bench/.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `compat` and `bench` are packages next to this file (a package wins over this module).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compat.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
