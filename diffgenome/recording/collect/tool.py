"""The tracer's ``sys.monitoring`` tool id: claimed, given the callbacks, code objects armed
with their local events, kept as the recorder set it against code under test, and released.

``sys.monitoring`` is one per process and any code may call it: a test can free the tool id,
replace a callback, reset the events, or switch off the local events of a code object the
recorder armed. ``reclaim`` (at each phase's start and end) puts back what it can and says
what was changed, so that a phase during which recording was switched off is never taken for
a whole one. Nothing here runs in a callback: the tracer arms a code object on its first
start (``arm``), once.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from types import CodeType
from typing import Any, Final, Protocol

from diffgenome.protocol.vocab import REASON_MONITORING_DISTURBED, REASON_TOOL_ID_UNAVAILABLE
from diffgenome.recording.collect.capabilities import CAPABILITIES
from diffgenome.recording.collect.contract import CodeInfo

_monitoring = sys.monitoring
_events = _monitoring.events
# Bound at import: the session puts a watch in ``sys.monitoring.set_local_events``'s place
# (``Tool.watch``), and the recorder's own calls must not go through it.
_set_local_events = _monitoring.set_local_events
_get_local_events = _monitoring.get_local_events
# Bound at import likewise: ``reclaim`` runs twice a phase, and code under test may replace
# these names in ``sys.monitoring``.
_get_tool = _monitoring.get_tool
_get_events = _monitoring.get_events
_register_callback = _monitoring.register_callback
# How many code objects a watch remembers between two phase ends; past it, every armed code
# object is looked at again.
_TOUCHED_LIMIT: Final = 256

# Tool ids in probing order: never 0 (debugger) nor 1 (coverage.py); 5 is the optimizer's.
TOOL_IDS = (4, 3, 2)
TOOL_NAME = "diffgenome"
# The events every code object raises to the tool; the rest are armed per code object.
GLOBAL_EVENTS = _events.PY_START | _events.PY_UNWIND | _events.PY_THROW


class _Tracer(Protocol):
    """What the tool reads and changes of the tracer (collect/tracer.py) that holds it."""

    codes: dict[int, CodeInfo | None]
    errors: int

    def _set_recording(self, recording: bool) -> None: ...


class Tool:
    """The tool id a tracer holds, and what it registered and armed under it."""

    def __init__(self, tracer: _Tracer) -> None:
        self.tracer = tracer
        self.id: int | None = None
        self.unavailable_reason: str | None = None
        #: Why recording stopped for good mid-session (another tool took the id), if it did.
        self.lost_reason: str | None = None
        # The callback objects registered for the tool id, kept to see whether a test
        # replaced one (the compiled core's bound methods are new objects at each lookup).
        self._registered: dict[int, Callable[..., Any]] = {}
        #: The code objects whose local events are armed.
        self.armed: list[CodeType] = []
        # The watch put in ``sys.monitoring.set_local_events``'s place, and the code objects
        # whose local events code under test set for this tool id since the last phase end
        # (None: more than the watch remembers).
        self._local_watch: Callable[..., Any] | None = None
        self._local_touched: list[CodeType] | None = []

    def claim(self, callbacks: Callable[[], dict[int, Callable[..., Any]]]) -> bool:
        """Claim a tool id and register the ``callbacks()`` made once it is held; False (with
        a reason) when none is free."""
        for tool_id in TOOL_IDS:
            try:
                _monitoring.use_tool_id(tool_id, TOOL_NAME)
            except ValueError:
                continue
            self.id = tool_id
            break
        else:
            taken = ", ".join(
                f"{i}={_monitoring.get_tool(i)}" for i in TOOL_IDS if _monitoring.get_tool(i)
            )
            self.unavailable_reason = f"{REASON_TOOL_ID_UNAVAILABLE}:{taken}"
            return False
        tid = self.id
        self._registered = callbacks()
        for event, callback in self._registered.items():
            _monitoring.register_callback(tid, event, callback)
        _monitoring.set_events(tid, GLOBAL_EVENTS)
        return True

    def release(self) -> None:
        """Release the watch, the events, the callbacks and the tool id.

        Never raises: a test may have freed the tool id (``set_events`` then refuses it) or
        handed it to another tool, whose events and callbacks are not ours to clear."""
        self.unwatch()
        tid = self.id
        if tid is None:
            return
        self.id = None
        self._registered = {}
        if _monitoring.get_tool(tid) != TOOL_NAME:
            self.armed.clear()
            return
        with contextlib.suppress(ValueError):
            _monitoring.set_events(tid, 0)
            for code in self.armed:
                _set_local_events(tid, code, 0)
        events = (
            _events.PY_START,
            _events.PY_RESUME,
            _events.PY_THROW,
            _events.PY_RETURN,
            _events.PY_YIELD,
            _events.PY_UNWIND,
            *CAPABILITIES.branch_events,
        )
        with contextlib.suppress(ValueError):
            for event in events:
                _monitoring.register_callback(tid, event, None)
        with contextlib.suppress(ValueError):
            if CAPABILITIES.has_clear_tool_id:
                _monitoring.clear_tool_id(tid)  # type: ignore[attr-defined]
            _monitoring.free_tool_id(tid)
        self.armed.clear()

    def reclaim(self) -> list[str]:
        """Check that the tool id, its events and callbacks are still as the recorder set
        them, put back whatever a test changed (``sys.monitoring`` is one per process, and
        any code may call it), and say what had changed: a phase during which recording was
        switched off is not whole. Another tool holding the id cannot be undone: recording
        stops for the rest of the session (``lost_reason``)."""
        tid = self.id
        if tid is None:
            return []
        changed: list[str] = []
        try:
            owner = _get_tool(tid)
            if owner != TOOL_NAME:
                if owner is not None:
                    self.lost_reason = f"{REASON_MONITORING_DISTURBED}:tool-id-taken:{owner}"
                    self.id = None
                    self._registered = {}
                    self.armed.clear()
                    self.tracer._set_recording(False)
                    return [self.lost_reason]
                _monitoring.use_tool_id(tid, TOOL_NAME)
                changed.append(f"{REASON_MONITORING_DISTURBED}:tool-id-freed")
            replaced = False
            for event, callback in self._registered.items():
                if _register_callback(tid, event, callback) is not callback:
                    replaced = True
            if replaced:
                changed.append(f"{REASON_MONITORING_DISTURBED}:callback-replaced")
            if _get_events(tid) != GLOBAL_EVENTS:
                _monitoring.set_events(tid, GLOBAL_EVENTS)
                changed.append(f"{REASON_MONITORING_DISTURBED}:events-changed")
            if self._local_events_changed(tid):
                changed.append(f"{REASON_MONITORING_DISTURBED}:local-events-changed")
            if changed:
                # Freeing clears local events on some versions, a test that reset events may
                # have reset those too, and code first seen while the id was free could not
                # be armed at all: arm every code object in scope again.
                self.armed = []
                for info in list(self.tracer.codes.values()):
                    if info is not None:
                        self.arm(info.code, info)
        except Exception:
            self.tracer.errors += 1
            changed.append(f"{REASON_MONITORING_DISTURBED}:unrestorable")
        return changed

    def _local_events_changed(self, tid: int) -> bool:
        """Whether code under test changed the local events of a code object this tool armed
        (switching them off blinds the recorder to that code's returns and decisions in
        every later test), each such one armed again. The watch says which ones were
        touched; where it was taken out of ``sys.monitoring`` or forgot some, every armed
        code object is looked at."""
        touched = self._local_touched
        watched = getattr(_monitoring, "set_local_events", None) is self._local_watch
        self._local_touched = []
        if watched and touched is not None:
            if not touched:
                return False
            suspects = touched
        else:
            suspects = self.armed
        differs = False
        for code in suspects:
            info = self.tracer.codes.get(id(code))
            if info is None or info.code is not code:
                continue
            wanted = self.local_events_of(info)
            if _get_local_events(tid, code) != wanted:
                _set_local_events(tid, code, wanted)
                differs = True
        return differs

    def watch(self) -> None:
        """Put a watch in ``sys.monitoring.set_local_events``'s place: it does what the
        function does and notes the code objects whose events it set for this tool id, so
        that the phase end finds a test that switched them off (``reclaim``) without
        looking at every armed code object. Taken out by ``release``."""
        original = _set_local_events
        tool = self

        def set_local_events(tool_id: int, code: CodeType, event_set: int, /) -> Any:
            result = original(tool_id, code, event_set)
            if tool_id == tool.id:
                touched = tool._local_touched
                if touched is not None:
                    if len(touched) < _TOUCHED_LIMIT:
                        touched.append(code)
                    else:
                        tool._local_touched = None
            return result

        set_local_events.__wrapped__ = original  # type: ignore[attr-defined]
        set_local_events.__doc__ = original.__doc__
        with contextlib.suppress(AttributeError, TypeError):
            _monitoring.set_local_events = set_local_events
            self._local_watch = set_local_events

    def unwatch(self) -> None:
        watch = self._local_watch
        if watch is not None and getattr(_monitoring, "set_local_events", None) is watch:
            with contextlib.suppress(AttributeError, TypeError):
                _monitoring.set_local_events = _set_local_events
        self._local_watch = None

    @staticmethod
    def local_events_of(info: CodeInfo) -> int:
        """The events armed on an in-scope code object: returns, yields, resumes, and the
        branch events where its file has a decision map."""
        local = _events.PY_RETURN | _events.PY_YIELD | _events.PY_RESUME
        if info.filemap is not None:
            for event in CAPABILITIES.branch_events:
                local |= event
        return local

    def arm(self, code: CodeType, info: CodeInfo) -> None:
        """Arm an in-scope code object's local events for the tool id held."""
        assert self.id is not None
        _set_local_events(self.id, code, self.local_events_of(info))
        self.armed.append(code)
