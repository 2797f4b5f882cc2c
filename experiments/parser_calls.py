"""Per-call cost of the tracer on a parser's hot loop (#12): ``sqlparse.format`` of one
statement, repeated, plain and under one recorded phase, in this process.

Needs the benchmark's sqlparse tree (``experiments/bench.py --projects sqlparse`` builds it).
Usage: ``.venv/bin/python experiments/parser_calls.py [auto|python] [N ...]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from diffgenome.recording.collect import values
from diffgenome.recording.collect.contract import Bounds
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.tracer import Tracer

ROOT = Path(__file__).parent / "work" / "trees" / "sqlparse-0.5.3" / "py3.12" / "src-root"
SQL = (
    "select a.x, b.y as z, count(*) from foo a join bar b on a.id = b.id "
    "where a.q > 3 and b.r in (1,2,3) group by a.x order by 2 desc"
)


def main() -> None:
    core = sys.argv[1] if len(sys.argv) > 1 else "auto"
    sizes = [int(n) for n in sys.argv[2:]] or [50, 200]
    sys.path.insert(0, str(ROOT))
    import sqlparse

    def work(n: int) -> None:
        for _ in range(n):
            sqlparse.format(SQL, reindent=True, keyword_case="upper")

    work(20)
    tracer = Tracer(
        Scope(str(ROOT), [str(ROOT)], []), values.Digester(b"k" * 32), Bounds(), core=core
    )
    if not tracer.start():
        raise SystemExit(f"no tracer: {tracer.unavailable_reason}")
    try:
        for n in sizes:
            started = time.perf_counter()
            work(n)
            plain = time.perf_counter() - started
            tracer.begin_phase()
            started = time.perf_counter()
            work(n)
            recorded = time.perf_counter() - started
            tracer.end_phase()
            print(
                f"core {tracer.core} n={n}: plain {plain * 1000 / n:.2f} ms/iteration, "
                f"recorded {recorded * 1000 / n:.2f} ms/iteration ({recorded / plain:.1f}x)"
            )
    finally:
        tracer.stop()


if __name__ == "__main__":
    main()
