"""End-to-end: the example-project rows of the compatibility matrix (``make compat``, #15).

Each row runs a small project under one strict setting or plugin twice, plain and with
``--genome``, in real pytest subprocesses, and requires every test's outcome and the exit
status to be the same, every test to have a genome whose outcome is pytest's, and every genome
to be verified except where the row expects a disclosed conflict. The real-suite rows need
downloaded sdists and run only under ``make compat``; the rows, examples and checks are the
ones in experiments/compat/.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments"))

from compat.cli import example_python, run_example  # noqa: E402
from compat.matrix import ROWS, Row  # noqa: E402

WORK = REPO / "experiments" / "work"
EXAMPLE_ROWS = [row for row in ROWS if row.example]
# What the recorder must say, per row; every other row must make it say nothing.
SAYS = {"sys-monitoring": "changed diffgenome's sys.monitoring tool"}


@pytest.mark.parametrize("row", EXAMPLE_ROWS, ids=[row.key for row in EXAMPLE_ROWS])
def test_row(row: Row) -> None:
    try:
        python = example_python(row, WORK)
    except subprocess.CalledProcessError as exc:  # a plugin that cannot be installed here
        pytest.skip(f"cannot install {', '.join(row.plugins)}: {exc}")
    result = run_example(row, python)
    diffs = result.outcome_diffs()
    assert result.outcome_equal, diffs
    assert result.problems == [], result.problems
    assert result.genome[-1].genome is not None
    assert result.genome[-1].genome["records"] > 0
    notices = sorted({n for run in result.genome for n in run.notices})
    if row.key in SAYS:
        assert len(notices) == 1, notices
        assert SAYS[row.key] in notices[0]
    else:
        assert notices == [], notices
