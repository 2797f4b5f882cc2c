"""Work started elsewhere, traced back to what started it: ``Thread.start`` and asyncio's
``create_task`` wrapped while the tracer holds its tool id.

A thread's events carry no caller: the wrapper notes, before the thread runs, which node's
code started it and in which phase and test, and the tracer hangs the thread's work under
that node (``Tracer._thread_root``). A task's body is driven by the event loop: the wrapper
notes which node created it (a weak reference to its coroutine, never its frame), and the
tracer's parent lookup finds it there. The wrappers run when code starts a thread or a task,
never in a ``sys.monitoring`` callback.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from diffgenome.recording.collect.contract import Node

_getframe = sys._getframe


def may_run(starter: tuple[threading.Thread, Node | None, int, int], phase_serial: int) -> bool:
    """Whether a started thread may still run in-scope code. A thread another thread is
    starting right now is not alive yet (google-auth: a refresh worker starting a thread
    while the phase ended): an entry made in the last two phases is kept regardless."""
    thread, _, serial, _ = starter
    return serial >= phase_serial - 2 or thread.is_alive() or thread.ident is None


class _Tracer(Protocol):
    """What the wrappers read and note of the tracer (collect/tracer.py) they serve."""

    _recording: bool
    _starters: dict[int, tuple[threading.Thread, Node | None, int, int]]
    _phase_serial: int
    test_serial: int
    _task_frames: dict[int, tuple[weakref.ref[Any], Node]]

    def _parent_of(self, frame: FrameType | None, origin: FrameType | None = None) -> Node: ...

    def _side_root(self, parent: Node, via: str) -> Node: ...

    def failed(self, exc: BaseException) -> None: ...


class StartHooks:
    """The tracer's wrappers of ``Thread.start`` and ``BaseEventLoop.create_task``."""

    def __init__(self, tracer: _Tracer) -> None:
        self.tracer = tracer
        self._thread_start_original: Callable[..., None] | None = None
        self._create_task_original: tuple[Any, Any] | None = None

    def install(self) -> None:
        self._wrap_thread_start()
        self._wrap_create_task()

    def _wrap_thread_start(self) -> None:
        original = threading.Thread.start
        tracer = self.tracer

        def start(thread: threading.Thread) -> None:
            # Registered before the thread runs: its first event may come before start returns.
            try:
                node = tracer._parent_of(_getframe(1)) if tracer._recording else None
                tracer._starters[id(thread)] = (
                    thread,
                    node,
                    tracer._phase_serial,
                    tracer.test_serial,
                )
            except Exception as exc:
                tracer.failed(exc)
            original(thread)

        start.__wrapped__ = original  # type: ignore[attr-defined]
        self._thread_start_original = original
        threading.Thread.start = start  # type: ignore[method-assign,assignment]

    def _wrap_create_task(self) -> None:
        """Remember which node created each asyncio task, to attribute the task's work."""
        import asyncio.base_events

        loop_class = asyncio.base_events.BaseEventLoop
        original = loop_class.__dict__["create_task"]
        tracer = self.tracer

        def create_task(loop: Any, coro: Any, *args: Any, **kwargs: Any) -> Any:
            if tracer._recording:
                try:
                    frame = getattr(coro, "cr_frame", None)
                    if frame is not None:
                        creator = tracer._parent_of(_getframe(1))
                        root = tracer._side_root(creator, "task")
                        # A weak reference: holding the frame would keep the coroutine alive.
                        tracer._task_frames[id(frame)] = (weakref.ref(coro), root)
                    frame = None
                except Exception as exc:
                    tracer.failed(exc)
            return original(loop, coro, *args, **kwargs)

        create_task.__wrapped__ = original  # type: ignore[attr-defined]
        self._create_task_original = (loop_class, original)
        loop_class.create_task = create_task  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        original = self._thread_start_original
        if original is not None:
            threading.Thread.start = original  # type: ignore[method-assign]
            self._thread_start_original = None
        saved = self._create_task_original
        if saved is not None:
            saved[0].create_task = saved[1]
            self._create_task_original = None
