"""The start of a recorded Python child process (collect/children.py says how it is reached).

Runs from the session's ``.pth`` line while ``site`` starts the interpreter, before the
child's own code: so everything the child runs in scope is seen, ``__main__`` included. It
records with the same collector (either core), the parent's scope and location markers,
one phase for the whole process, and sends the tree back when the process exits. Stand-ins
are not hooked in a child (a mock made there is not named as one), and the child's egress is
recorded, never refused (``allow``): recording a child must not change what it can do.

It never raises into the child: ``start`` reports one line on stderr and the child runs on
unrecorded, which its parent discloses (no capture arrives).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

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
    value = os.environ.get(_children.ENV) or ""
    token, folder = _children.parse_value(value)
    if not token or not folder:
        return
    try:
        with open(f"{folder}/{_children.CONFIG_NAME}", encoding="utf-8") as stream:
            config: dict[str, Any] = json.load(stream)
    except FileNotFoundError:
        # The session that named this folder has ended (a variable left in an environment
        # that outlived it): there is nobody to record for, and nothing to say.
        return
    # The compiled core takes the location markers when it is built: before the tracer.
    from diffgenome.recording.collect import stable, values
    from diffgenome.recording.collect.contract import Bounds
    from diffgenome.recording.collect.egress import EgressGuard
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
        guard = EgressGuard(
            "allow", recorder.on_egress, config["tree_root"], spawn=recorder.on_spawn
        )
        guard.activate()
        recorder.activate()
        recorder.begin_phase()
        tracer.begin_phase()
        recorder.enter_child(token)
    except BaseException:
        tracer.stop()  # an unrecorded child runs at full speed
        raise
