"""Per-call cost of summarising one argument of a standard-library value type (#24.7), in
this process: a loop calling ``ident(value)`` plain and under one recorded phase, for each
kind of value, with the compiled core (``auto``) or the Python callbacks (``python``).

Values revision 2 gave ``timedelta``, ``datetime``, ``Decimal``, ``UUID`` ... canonical forms:
before, their summary was the class's (no form) and both cores answered it from the phase's
memo of plain classes; now every call computes the form in values.py. ``-- new`` values are
made fresh each call (``datetime.now()``), so the bounded set overflows and each one also
costs the overflow fingerprint.

Usage: ``.venv/bin/python experiments/value_calls.py [auto|python] [N]``.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from diffgenome.recording.collect import values
from diffgenome.recording.collect.contract import Bounds
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.tracer import Tracer

HOT = """
def ident(x):
    return x


def run(values, n):
    for i in range(n):
        ident(values[i % len(values)])


def run_new(make, n):
    for _ in range(n):
        ident(make())
"""

SAME: dict[str, list[object]] = {
    "int 5": [5],
    "str 'abc'": ["abc"],
    "timedelta": [datetime.timedelta(days=30)],
    "date": [datetime.date(2024, 1, 2)],
    "datetime (UTC)": [datetime.datetime(2024, 1, 2, 3, 4, tzinfo=datetime.UTC)],
    "Decimal": [decimal.Decimal("2.50")],
    "UUID": [uuid.UUID(int=7)],
    "Fraction": [fractions.Fraction(1, 3)],
}
NEW: dict[str, Callable[[], object]] = {
    "datetime.now() (new every call)": lambda: datetime.datetime.now(datetime.UTC),
    "uuid4() (new every call)": uuid.uuid4,
}


def main() -> None:
    core = sys.argv[1] if len(sys.argv) > 1 else "auto"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    root = Path(tempfile.mkdtemp(prefix="value-calls-"))
    (root / "hot.py").write_text(HOT)
    sys.path.insert(0, str(root))
    import hot  # type: ignore[import-not-found]

    tracer = Tracer(
        Scope(str(root), [str(root)], []), values.Digester(b"k" * 32), Bounds(), core=core
    )
    if not tracer.start():
        raise SystemExit(f"no tracer: {tracer.unavailable_reason}")
    try:
        cases: list[tuple[str, Callable[[], None]]] = [
            (name, lambda items=items: hot.run(items, n)) for name, items in SAME.items()
        ]
        cases += [(name, lambda make=make: hot.run_new(make, n)) for name, make in NEW.items()]
        for name, work in cases:
            tracer.stop()
            started = time.perf_counter()
            work()
            plain = time.perf_counter() - started
            tracer.start()
            tracer.begin_phase()
            started = time.perf_counter()
            work()
            recorded = time.perf_counter() - started
            tracer.end_phase()
            extra = (recorded - plain) / n * 1e9
            print(f"core {tracer.core:8} {name:34} {extra:7.0f} ns per call over plain")
    finally:
        tracer.stop()


if __name__ == "__main__":
    main()
