"""pytest plugin (``-p bench_floor``): the floor of sys.monitoring's per-event cost.

With ``BENCH_FLOOR=c`` (the empty C callback of ``bench/floor/_bench_floor.c``, imported from
``BENCH_FLOOR_DIR``) or ``BENCH_FLOOR=py`` (an empty Python function), it registers the
callback for PY_START, PY_RETURN and BRANCH on the code of the functions of the module named
by ``BENCH_FLOOR_MODULE``, and only there: the events a recorder of that project code needs,
delivered to a tool that does nothing with them. What that costs over plain pytest is the
limit a recorder's per-event figures are judged against.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

_TOOL = 4  # a free id: neither coverage.py's (1) nor diffgenome's recorder runs in this mode


def _py_noop(*args: Any) -> None:
    return None


def pytest_configure(config: Any) -> None:
    kind = os.environ.get("BENCH_FLOOR")
    if kind not in ("c", "py"):
        return
    if kind == "c":
        sys.path.insert(0, os.environ["BENCH_FLOOR_DIR"])
        callback = importlib.import_module("_bench_floor").noop
    else:
        callback = _py_noop
    mon = sys.monitoring
    mon.use_tool_id(_TOOL, "bench-floor")
    events = mon.events
    for event in (events.PY_START, events.PY_RETURN, events.BRANCH):
        mon.register_callback(_TOOL, event, callback)
    module = importlib.import_module(os.environ["BENCH_FLOOR_MODULE"])
    wanted = events.PY_START | events.PY_RETURN | events.BRANCH
    functions = [f for _, f in inspect.getmembers(module, inspect.isfunction)]
    for function in functions:
        mon.set_local_events(_TOOL, function.__code__, wanted)
    # A floor that silently measured nothing would read as a free recorder: refuse instead.
    if not functions or any(mon.get_local_events(_TOOL, f.__code__) != wanted for f in functions):
        raise RuntimeError(f"bench_floor: no events set on {module.__name__}'s functions")
