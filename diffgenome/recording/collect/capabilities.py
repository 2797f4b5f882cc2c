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
    #: Whether a call's arguments (and a method's receiver) are read with ``PyFrame_GetVar``,
    #: which reads the interpreter frame's slot, instead of through ``f_locals``. Both give
    #: what ``frame.f_locals.get(name)`` gives for a bound argument (a cell's contents
    #: included); an unbound one is None either way. On 3.12 ``f_locals`` is a dict that
    #: keeps a snapshot of the locals alive with the frame object (a suspended generator's
    #: old values, whose weakref callbacks then run in another phase), and building it was
    #: a third of the compiled core's time per call with arguments: there the compiled core
    #: and the Python callbacks both read through the core's ``frame_var`` (tracer.py
    #: ``_frame_var``), and only an installation without a compiled core reads ``f_locals``.
    #: On 3.13 ``f_locals`` is a FrameLocalsProxy (PEP 667). On 3.14 the same documented
    #: function has not been run here.
    frame_get_var: bool
    #: Whether the compiled core reads an event's frame, its callers and its arguments from
    #: the interpreter's own frame (``_PyInterpreterFrame``, from the interpreter's internal
    #: header) instead of asking for a frame object, which CPython makes on first request and
    #: frees at the frame's end: on 3.12 and 3.13 a call in scope then makes no frame object.
    #: The layout is checked against the public frame API before a core records
    #: (contract.frame_disagreement). On 3.14 the compiled core is not used (untested).
    interpreter_frames: bool
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
            interpreter_frames=False,
            tested=False,
        )
    return Capabilities(
        version=version,
        branch_events=(events.BRANCH,),
        has_clear_tool_id=False,
        frame_get_var=True,
        interpreter_frames=version in ((3, 12), (3, 13)),
        tested=version in ((3, 12), (3, 13)),
    )


CAPABILITIES = _detect()
