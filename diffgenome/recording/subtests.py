"""Subtests (pytest >= 9's ``subtests`` fixture) recorded as tests of their own.

Code inside ``with subtests.test(...):`` runs in the test function's own frame, so the
collector cannot tell it apart by frames alone. While a subtest block runs, the frame that
entered it is mapped to a fresh root node: calls made in the block hang there, and the block's
genome is exported when it exits, right before pytest logs the subtest's report, which the
recorder pairs with it. Calls outside any subtest block stay in the parent test's genome.

pytest's private ``_SubTestContextManager`` is wrapped while recording and restored after;
the separate pytest-subtests plugin is not handled (its subtests fold into their test).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from diffgenome.recording.collect.contract import NODE_CALL, Node, PhaseCapture
from diffgenome.recording.collect.tracer import Tracer

_getframe = sys._getframe


class SubtestCapture:
    """Brackets subtest blocks; ``finished`` holds captures waiting for their report."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.finished: list[PhaseCapture] = []
        self._open: list[tuple[int, Node | None, Node]] = []
        self._saved: list[tuple[type, str, Callable[..., Any]]] = []

    def install(self) -> bool:
        module = sys.modules.get("_pytest.subtests")
        manager = getattr(module, "_SubTestContextManager", None) if module else None
        if not isinstance(manager, type):
            return False
        enter = manager.__dict__.get("__enter__")
        leave = manager.__dict__.get("__exit__")
        if enter is None or leave is None:
            return False
        capture = self

        def __enter__(context: Any) -> Any:
            result = enter(context)
            try:
                capture._open_block(_getframe(1))
            except Exception as exc:
                capture.tracer.failed(exc)
            return result

        def __exit__(context: Any, *exc_info: Any) -> Any:
            try:
                capture._close_block()
            except Exception as exc:
                capture.tracer.failed(exc)
            return leave(context, *exc_info)

        self._saved = [(manager, "__enter__", enter), (manager, "__exit__", leave)]
        manager.__enter__ = __enter__  # type: ignore[attr-defined]
        manager.__exit__ = __exit__  # type: ignore[attr-defined]
        return True

    def uninstall(self) -> None:
        for owner, name, original in self._saved:
            setattr(owner, name, original)
        self._saved = []

    def _open_block(self, frame: FrameType) -> None:
        tracer = self.tracer
        if not tracer.recording:
            return
        root = Node(NODE_CALL, None, tracer.bounds)
        key, previous = tracer.map_frame(frame, root)
        self._open.append((key, previous, root))

    def _close_block(self) -> None:
        if not self._open:
            return
        key, previous, root = self._open.pop()
        self.tracer.unmap_frame(key, previous)
        self.finished.append(PhaseCapture(root, []))
