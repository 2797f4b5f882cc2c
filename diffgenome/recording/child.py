"""The start of a recorded Python child process (collect/children.py says how it is reached).

Runs from the session's ``.pth`` line while ``site`` starts the interpreter, before the
child's own code: so everything the child runs in scope is seen, ``__main__`` included. It
records with the same collector (either core), the parent's scope and location markers,
one phase for the whole process, and sends the tree back when the process exits. Stand-ins
are not hooked in a child (a mock made there is not named as one).

A child runs under its session's egress policy, whatever becomes of its recording: the
guard (and the ``connect_ex`` that keeps its contract) is switched on first, before the
collector, so that a child whose recording cannot start is still refused what its parent
would be; what it attempts is recorded under it, refusals as refused. Under ``isolate`` the
child is in its parent's network namespace anyway, and its guard judges as under loopback.

It never raises into the child: ``start`` reports one line on stderr and the child runs on
unrecorded (still guarded, when the guard could start), which its parent discloses (no
capture arrives).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from diffgenome.recording.collect import childhook as _hook
from diffgenome.recording.collect import children as _children

_tried = False


def start() -> None:
    """Record this process for the parent session named in ``DIFFGENOME_CHILD``."""
    global _tried
    if _tried:
        return  # one environment seen twice (lib64 -> lib), or two sessions' hooks in it
    _tried = True
    try:
        _start()
    except Exception as exc:
        sys.stderr.write(f"diffgenome: this Python child process is not recorded: {exc!r}\n")


def _start() -> None:
    value = os.environ.get(_hook.ENV) or ""
    token, folder = _hook.parse_value(value)
    if not token or not folder:
        return
    try:
        with open(f"{folder}/{_hook.CONFIG_NAME}", encoding="utf-8") as stream:
            config: dict[str, Any] = json.load(stream)
    except FileNotFoundError:
        # The session that named this folder has ended (a variable left in an environment
        # that outlived it): there is nobody to record for, and nothing to say.
        return
    from diffgenome.recording.collect import egress

    # First the guard, with nobody to tell yet: refusing does not wait for recording.
    policy = str(config.get("egress") or "loopback")
    relay = _Relay()
    guard = egress.EgressGuard(policy, relay.egress, config["tree_root"], spawn=relay.spawn)
    if policy != "allow":
        egress.install_connect_ex()
    guard.hold()  # also under a recording session this child may start itself
    # The compiled core takes the location markers when it is built: before the tracer.
    from diffgenome.recording.collect import stable, values
    from diffgenome.recording.collect.contract import Bounds
    from diffgenome.recording.collect.scope import Scope
    from diffgenome.recording.collect.tracer import Tracer

    stable.configure(
        stable.locations_of_this_process(
            config["location_root"], config["basetemp"], config["home"]
        )
    )
    scope = Scope(config["rootdir"], list(config["source_roots"]), list(config["test_roots"]))
    bounds = Bounds(**config["bounds"])
    # Values are digested by the parent, which exports the child's tree: no key here.
    tracer = Tracer(scope, values.Digester(b"diffgenome-child"), bounds, core=config["core"])
    if not tracer.start():
        raise RuntimeError(tracer.unavailable_reason or "no sys.monitoring tool id")
    try:
        stable.TempfileNames().install()
        recorder = _children.Children(tracer, folder, bounds)
        relay.to = recorder
        recorder.activate()
        recorder.begin_phase()
        tracer.begin_phase()
        recorder.enter_child(token)
    except BaseException:
        relay.to = None
        tracer.stop()  # an unrecorded child runs at full speed, still guarded
        raise


class _Relay:
    """What the child's guard sees goes to the child's recorder, once there is one."""

    __slots__ = ("to",)

    def __init__(self) -> None:
        self.to: _children.Children | None = None

    def egress(self, kind: str, target: str, outcome: str) -> None:
        to = self.to
        if to is not None:
            to.on_egress(kind, target, outcome)

    def spawn(
        self, identity: str, python: bool, env: object, argv: list[str], replaces: bool
    ) -> None:
        to = self.to
        if to is not None:
            to.on_spawn(identity, python, env, argv, replaces)
