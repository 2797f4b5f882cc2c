"""What a session's tests reach outside this process: Python children recorded into the tests
that start them, the egress guard on every network attempt, and the children that ran
without that guard (said once, at the end).

The ``Recorder`` (session.py) opens it when recording starts, hands it each phase's end and
closes it in two steps: the guard before anything else is undone (no test code runs after
it), the children's hook after the tracer stops (a late child may still report).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import pytest

from diffgenome.protocol.vocab import REASON_CHILD_UNFINISHED, REASON_RECORDER_ERROR
from diffgenome.recording.collect import children as child_processes
from diffgenome.recording.collect import egress
from diffgenome.recording.collect.contract import Bounds, PhaseCapture
from diffgenome.recording.collect.egress import EgressGuard
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.tracer import Tracer
from diffgenome.recording.notices import say
from diffgenome.store.layout import one_line

_getframe = sys._getframe


class Outside:
    """A session's child processes and network attempts."""

    def __init__(self, config: pytest.Config, tracer: Tracer, egress_policy: str) -> None:
        self._config = config
        self._tracer = tracer
        self.policy = egress_policy
        #: Records Python child processes into the tests that start them (None: it could
        #: not be set up, and Python children stay ``untraced-subprocess`` gaps).
        self.children: child_processes.Children | None = None
        self.guard: EgressGuard | None = None
        self._connect_ex_installed = False
        #: Under block: programs whose children ran without the guard (said at the end).
        self._unguarded: dict[str, int] = {}

    def open(
        self,
        tracing: bool,
        scope: Scope,
        bounds: Bounds,
        tree_root: str,
        locations: tuple[str, str | None, str | None],
    ) -> None:
        """Record Python children (when tracing) and guard egress from here on."""
        if tracing:
            self.children = self._open_children(scope, bounds, tree_root, locations)
        if self.policy != "allow":
            # Normally done before the conftests were imported (plugin.py); here for a
            # plugin loaded too late for that.
            self._connect_ex_installed = egress.install_connect_ex()
        self.guard = EgressGuard(
            self.policy,
            self._on_egress,
            tree_root,
            spawn=self.children.on_spawn if self.children is not None else None,
        )
        self.guard.activate()

    def _open_children(
        self,
        scope: Scope,
        bounds: Bounds,
        tree_root: str,
        locations: tuple[str, str | None, str | None],
    ) -> child_processes.Children | None:
        """The hook that records Python children, or None (said once) when this environment
        cannot take it: its Python children then stay disclosed gaps."""
        config = {
            "rootdir": scope.rootdir,
            "source_roots": scope.source_roots,
            "test_roots": scope.test_roots,
            "tree_root": tree_root,
            "location_root": locations[0],
            "basetemp": locations[1],
            "home": locations[2],
            "bounds": {
                "max_nodes": bounds.max_nodes,
                "args": bounds.args,
                "results": bounds.results,
                "state": bounds.state,
            },
            "core": "auto",
            # A Python child runs under the session's policy (recording/child.py).
            "egress": self.policy,
        }
        try:
            return child_processes.open_session(self._tracer, bounds, config)
        except Exception as exc:
            say(
                self._config,
                f"Python child processes will not be recorded ({one_line(exc)}); tests that "
                "start one are marked unverified (untraced-subprocess)",
            )
            return None

    def _on_egress(self, kind: str, target: str, outcome: str) -> None:
        """Called by the guard on the thread that attempted egress."""
        self._tracer.record_os_event(kind, target, outcome, _getframe(1))

    # -- phases --------------------------------------------------------------------------

    def begin_phase(self) -> None:
        if self.children is not None:
            self.children.begin_phase()

    def end_phase(self, capture: PhaseCapture) -> str | None:
        """The children's part of a phase folded into ``capture``; the phase's unverified
        reason when that failed."""
        if self.children is None:
            return None
        try:
            self.children.end_phase(capture)
        except Exception as exc:
            return f"{REASON_RECORDER_ERROR}:children:{type(exc).__name__}"
        return None

    def tally_unguarded(self, exported: dict[str, Any], reasons: list[str]) -> None:
        """Under block: children that ran without the egress guard: other programs, and
        Python children that never started the recorder (which is what guards them). A
        forked child keeps this process's guard; one that started recording and died had
        it too."""
        if self.policy != "block":
            return
        for node in exported.get("nodes") or ():
            if node.get("type") != "os_event" or node.get("kind") != "subprocess":
                continue
            outcome, target = node.get("outcome"), str(node.get("target"))
            if outcome == "program" or (
                outcome == "untraced-child"
                and target != child_processes.FORK_IDENTITY
                and f"{REASON_CHILD_UNFINISHED}:{target}" not in reasons
            ):
                self._unguarded[target] = self._unguarded.get(target, 0) + int(
                    node.get("count") or 1
                )

    # -- the end -------------------------------------------------------------------------

    def stop_guard(self) -> None:
        """The guard off and ``connect_ex`` put back: first of all that the session undoes."""
        guard = self.guard
        if guard is not None:
            guard.deactivate()
        if self._connect_ex_installed:
            egress.uninstall_connect_ex()
            self._connect_ex_installed = False

    def close_children(self) -> None:
        """The children's hook removed (after the tracer stopped), and what came late said."""
        children = self.children
        if children is None:
            return
        try:
            children.close()
        except Exception as exc:
            say(self._config, f"could not remove the child-process hook: {one_line(exc)}")
        if children.late:
            say(
                self._config,
                f"{children.late} Python child process(es) sent their recording after their "
                "test phase ended; those tests are marked unverified (child-unfinished)",
            )

    def abandon(self) -> None:
        """Everything :meth:`open` did undone, quietly: recording could not start."""
        with contextlib.suppress(Exception):
            if self.guard is not None:
                self.guard.deactivate()
        with contextlib.suppress(Exception):
            if self._connect_ex_installed:
                egress.uninstall_connect_ex()
        with contextlib.suppress(Exception):
            if self.children is not None:
                self.children.close()

    def say_unguarded(self) -> None:
        if not self._unguarded:
            return
        count = sum(self._unguarded.values())
        names = sorted(self._unguarded)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        say(
            self._config,
            f"under --genome-egress=block, {count} child process(es) ran without the egress "
            f"guard ({shown}): other programs, and Python that did not load the recorder, "
            "can connect anywhere; --genome-egress=isolate holds them at the kernel",
        )
