"""Which core runs the tracer's hottest callbacks: the compiled core (``_accel.c``) loaded and
checked once per process, or why the Python callbacks record instead; and the compiled core
built for one tracer, over that tracer's own tables.

The Python callbacks in tracer.py define what is recorded: the compiled core takes the common
path of the hottest events and hands every other case to them unchanged, so both cores record
byte-identical genomes (tested). Nothing here runs at event time: the core is loaded when this
module is imported, and built when a tracer's callbacks are made.
``DIFFGENOME_CORE=python`` forces the pure-Python callbacks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from diffgenome.protocol.vocab import CLASS_ATTRIBUTE_BUCKET
from diffgenome.recording.collect import contract, reflect, stable, values
from diffgenome.recording.collect.capabilities import CAPABILITIES
from diffgenome.recording.collect.contract import CodeInfo, Node, StateSet

_events = sys.monitoring.events
_DISABLE = sys.monitoring.DISABLE

CORE_ENV = "DIFFGENOME_CORE"

#: The ``VERSION`` of ``_accel.c`` the Python callbacks (tracer.py) were written with.
CORE_VERSION = 22


#: Written beside the recorder's copy by ``diffgenome diff`` when it found no compiled core for
#: the target interpreter (analysis/record/core.py): why, and the command that fixes it.
CORE_ABSENT_FILE = "_accel.absent"


def load_accelerator() -> tuple[Any, str | None]:
    """The compiled core's module, or None and why the Python callbacks are used instead."""
    wanted = os.environ.get(CORE_ENV, "").strip().lower()
    if wanted == "python":
        return None, f"{CORE_ENV}=python"
    if not CAPABILITIES.tested:
        version = ".".join(map(str, CAPABILITIES.version))
        return None, f"untested-interpreter: the compiled core is not yet tested on {version}"
    try:
        from diffgenome.recording.collect import _accel
    except ImportError as exc:
        return None, _absent_reason(exc)
    if getattr(_accel, "VERSION", None) != CORE_VERSION:
        return None, "stale-build: rebuild it with pip install -e ."
    if CAPABILITIES.interpreter_frames:
        disagreement = contract.frame_disagreement(
            _accel.frame_probe, _accel.frame_key, _accel.frame_var
        )
        if disagreement is not None:
            return None, f"core-disagrees: {disagreement}"
    return _accel, None


def _absent_reason(exc: ImportError) -> str:
    """Why this interpreter has no compiled core, in words: never built, built only for other
    interpreters (a copy of an install made with another Python), or there and unloadable."""
    from importlib.machinery import EXTENSION_SUFFIXES

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(here, CORE_ABSENT_FILE), encoding="utf-8") as said:
            return " ".join(said.read().split())
    except OSError:
        pass
    try:
        built = [n[len("_accel") :] for n in sorted(os.listdir(here)) if n.startswith("_accel.")]
    except OSError:
        built = []
    if any(suffix in built for suffix in EXTENSION_SUFFIXES):
        return f"import-failed: {exc}"
    others = [suffix for suffix in built if suffix.endswith((".so", ".pyd"))]
    if others:
        return (
            f"other-interpreter: the compiled core here is built for {', '.join(others)}, "
            f"not for this interpreter ({EXTENSION_SUFFIXES[0]})"
        )
    return (
        "not-built: this installation has no compiled core (pip leaves it out when no C "
        "compiler works at install time)"
    )


ACCEL, ACCEL_ABSENT = load_accelerator()


def load_frame_var() -> Callable[[FrameType, str], Any] | None:
    """The compiled core's ``frame_var`` wherever it is built, whichever core records: the
    Python callbacks read arguments as the compiled core does (capabilities.frame_get_var),
    so that both leave the same objects alive. None without a built core of this version."""
    if not CAPABILITIES.frame_get_var or not CAPABILITIES.tested:
        return None
    try:
        from diffgenome.recording.collect import _accel
    except ImportError:
        return None
    if getattr(_accel, "VERSION", None) != CORE_VERSION:
        return None
    found: Callable[[FrameType, str], Any] | None = getattr(_accel, "frame_var", None)
    return found


#: ``frame.f_locals.get(name)`` without ``f_locals`` (None: read ``f_locals``).
frame_var = load_frame_var()

#: The key of a running frame in ``Tracer._active``: with a compiled core, the address of the
#: interpreter's frame, which the core reads without making a frame object (``_accel.h``), so
#: both cores key the one table alike; else ``id(frame)``.
frame_key: Callable[[FrameType], int] = ACCEL.frame_key if ACCEL is not None else id


class _Tracer(Protocol):
    """What the compiled core is built over: the tracer (collect/tracer.py) whose tables it
    shares and whose Python callbacks it falls back to."""

    codes: dict[int, CodeInfo | None]
    _active: dict[int, Node]
    _task_frames: dict[int, tuple[Any, Node]]
    bounds: contract.Bounds
    first_errors: dict[str, str] | None

    def _record_state(self, node: Node, info: CodeInfo, frame: FrameType, when: str) -> None: ...

    def keep_first_error(self, exc: BaseException) -> None: ...


def build_core(
    tracer: _Tracer,
    accel: Any,
    on_start: Callable[..., Any],
    on_resume: Callable[..., Any],
    on_branch: Callable[..., Any],
) -> tuple[Any, str | None]:
    """The compiled core built for ``tracer``, or None and why, when its encodings disagree
    with values.py (the Python callbacks then record). It is handed the Python callbacks it
    falls back to and the very tables they work on (code objects, active frames, task
    frames), so either core grows the same tree."""
    core = accel.Core(
        tracer=tracer,
        codes=tracer.codes,
        active=tracer._active,
        task_frames=tracer._task_frames,
        on_start=on_start,
        on_resume=on_resume,
        on_branch=on_branch,
        record_state=tracer._record_state,
        summarize=values.summarize,
        disable=_DISABLE,
        node_type=Node,
        info_type=CodeInfo,
        bounded_type=values.BoundedValues,
        blake2b=values._blake2b,
        str_markers=stable.markers(),
        tempfile_names=stable.tempfile_names(),
        tempfile_name_bits=stable.TEMPFILE_NAME_BITS,
        frame_get_var=CAPABILITIES.frame_get_var,
        class_tables=(
            values._PLAIN_SUMMARY,
            reflect._DISPLAY_NAMES,
            reflect._DICT_DESCRIPTORS,
            reflect.CLASS_EPOCH,
        ),
        class_namespaces=(reflect._STR_KEYED, reflect._STR_KEYED_MAX, CLASS_ATTRIBUTE_BUCKET),
        state_type=StateSet,
        state_limit=tracer.bounds.state,
        bucket=values.bucket,
        enum_type=values._Enum,
        on_error=None if tracer.first_errors is None else tracer.keep_first_error,
        **contract.core_encodings(),
    )
    disagreement = contract.core_disagreement(
        core.summarize, core.add_pair, core.bucket, core.add_values
    )
    if disagreement is not None:
        return None, disagreement
    return core, None


def core_callbacks(core: Any) -> dict[int, Callable[..., Any]]:
    """The compiled core's callbacks for the events it takes."""
    events = _events
    callbacks: dict[int, Callable[..., Any]] = {
        events.PY_START: core.on_start,
        events.PY_RESUME: core.on_resume,
        events.PY_THROW: core.on_resume,
        events.PY_RETURN: core.on_return,
        events.PY_YIELD: core.on_yield,
    }
    for event in CAPABILITIES.branch_events:
        callbacks[event] = core.on_branch
    return callbacks
