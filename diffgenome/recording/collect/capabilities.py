"""The one table of what differs between CPython versions in sys.monitoring.

Everything version-specific in the collector reads this table instead of testing
``sys.version_info`` itself, so a new CPython needs one new row, not a hunt.

Python 3.14 (BRANCH_LEFT/BRANCH_RIGHT, ``clear_tool_id``) is written from the documentation
and has NOT been run here: no 3.14 interpreter exists on the machines this is developed on.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the running interpreter's sys.monitoring offers the collector."""

    version: tuple[int, int]
    #: Events that report decision outcomes. 3.12/3.13 have one BRANCH event for both
    #: directions; 3.14 splits it into BRANCH_LEFT (not taken) and BRANCH_RIGHT (taken),
    #: each of which can be disabled alone.
    branch_events: tuple[int, ...]
    #: 3.14 adds ``sys.monitoring.clear_tool_id``; before it, ``free_tool_id`` leaves
    #: callbacks and events registered, so the collector must clear them itself.
    has_clear_tool_id: bool
    #: Whether the compiled core reads a call's arguments with ``PyFrame_GetVar``, which
    #: reads the interpreter frame's slot, instead of ``PyFrame_GetLocals``, which builds
    #: ``f_locals`` first. Both give what ``frame.f_locals.get(name)`` gives for a bound
    #: argument (a cell's contents included); an unbound one is None either way. Only from
    #: 3.13, where ``f_locals`` is a FrameLocalsProxy (PEP 667): on 3.12 it is a dict that
    #: keeps a snapshot of the locals alive with the frame object, and the Python callbacks
    #: must build it, so the compiled core builds it too: else objects would die at other
    #: moments under the two cores (a weakref callback run in another phase: jinja2's
    #: test_weak_references recorded differently). On 3.14 the same documented function has
    #: not been run here.
    frame_get_var: bool
    #: Whether this row was exercised by the test suite on a real interpreter.
    tested: bool


def _detect() -> Capabilities:
    version = (sys.version_info[0], sys.version_info[1])
    events = sys.monitoring.events
    if version >= (3, 14):
        left = getattr(events, "BRANCH_LEFT", 0)
        right = getattr(events, "BRANCH_RIGHT", 0)
        return Capabilities(
            version=version,
            branch_events=(left, right) if left and right else (events.BRANCH,),
            has_clear_tool_id=hasattr(sys.monitoring, "clear_tool_id"),
            frame_get_var=True,
            tested=False,
        )
    return Capabilities(
        version=version,
        branch_events=(events.BRANCH,),
        has_clear_tool_id=False,
        frame_get_var=version >= (3, 13),
        tested=version in ((3, 12), (3, 13)),
    )


CAPABILITIES = _detect()
