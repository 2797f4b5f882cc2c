"""The sys.monitoring (PEP 669) collector: the hot path of the recording side.

It grows, per test phase, a calling-context tree: one node per distinct call path
(parent node + callee) with counts, never one node per call. Everything that can be
decided once per code object (scope, symbol, decision map, argument names) is decided on
the first event of that code object and cached in a ``CodeInfo``; per event the work is a
frame lookup and a few dictionary steps.

Attribution follows the real frame chain, not a shadow stack: the parent of a starting or
resuming frame is the nearest frame up its ``f_back`` chain that is active in scope. That is
what makes a generator consumed elsewhere, or a callback invoked by a library, land under the
code that really drove it. Work on another thread hangs under the node that started the
thread (``Thread.start`` is wrapped while recording); what cannot be attributed is disclosed.

Events:
- ``PY_START`` and ``PY_UNWIND``, ``PY_THROW`` globally (the latter two cannot be local). Out
  of scope code is silenced with ``DISABLE`` at its first ``PY_START``.
- ``PY_RETURN``, ``PY_YIELD``, ``PY_RESUME`` (and the branch events of the capability table,
  for repo code only) locally, on in-scope code objects, armed at their first start.

The public surface is the ``Tracer`` class. The callbacks below define what is recorded; an
optional compiled core (``_accel.c``, loaded and built by cores.py) takes the common path of
the hottest ones and hands every other case to them unchanged, so both cores record
byte-identical genomes (tested). ``DIFFGENOME_CORE=python`` forces the pure-Python callbacks.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable
from types import CodeType, FrameType, FunctionType
from typing import TYPE_CHECKING, Any, Final

from diffgenome.protocol.namecache import NameCache
from diffgenome.protocol.naming import Site
from diffgenome.protocol.vocab import (
    CLASS_ATTRIBUTE_BUCKET,
    EXIT_RAISED_PREFIX,
    EXIT_RUNNING,
    ORIGIN_REPO,
    OS_SUBPROCESS,
    OUTCOME_UNTRACED_CHILD,
    REASON_RECURSION_LIMIT,
    REASON_TRUNCATED,
    REASON_UNATTRIBUTED,
    REASON_UNTRACED_SUBPROCESS,
    VIA_EARLIER_THREAD,
    VIA_FOREIGN_THREAD,
)
from diffgenome.recording.collect import codemap, contract, cores, reflect, stable, values
from diffgenome.recording.collect.capabilities import CAPABILITIES
from diffgenome.recording.collect.contract import (
    NODE_CALL,
    NODE_OS_EVENT,
    NODE_SUBSTITUTION,
    Bounds,
    CodeInfo,
    Node,
    PhaseCapture,
    StateSet,
)
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.symbols import SymbolTable
from diffgenome.recording.collect.threads import StartHooks, may_run
from diffgenome.recording.collect.tool import Tool

if TYPE_CHECKING:
    from diffgenome.recording.collect.standins import StandIns

_monitoring = sys.monitoring
_events = _monitoring.events
_DISABLE = _monitoring.DISABLE
_getframe = sys._getframe
_get_ident = threading.get_ident
_current_thread = threading.current_thread


#: ``DIFFGENOME_DEBUG=callbacks``: keep the first exception of each kind that a callback
#: caught (``Tracer.first_errors``; the session says them when it ends) instead of only
#: counting it. Read when a tracer is made, never at event time.
DEBUG_ENV = "DIFFGENOME_DEBUG"
# Code that can pause: generators, coroutines, async generators (inspect's CO_* flags).
_SUSPENDABLE = 0x20 | 0x80 | 0x100 | 0x200

# Loaded once with this module (collect/cores.py); bound here, where the callbacks read them.
_ACCEL = cores.ACCEL
_ACCEL_ABSENT = cores.ACCEL_ABSENT
#: ``frame.f_locals.get(name)`` without ``f_locals`` (None: read ``f_locals``).
_frame_var = cores.frame_var
#: The key of a running frame in ``Tracer._active`` (``cores.frame_key``).
_frame_key = cores.frame_key


# Nodes a thread can be inside of when a phase ends.
_MAY_RUN: Final = frozenset({NODE_CALL, NODE_SUBSTITUTION})


class Tracer:
    """Owns the tool id, the callbacks and the per-phase trees."""

    #: What a phase says when a callback met the recursion limit (the compiled core adds it
    #: to ``_reasons`` itself: near the limit it can call no Python code).
    RECURSION_REASON: Final = REASON_RECURSION_LIMIT

    def __init__(
        self,
        scope: Scope,
        digester: values.Digester,
        bounds: Bounds,
        *,
        core: str = "auto",
        names: NameCache | None = None,
    ) -> None:
        """``core="python"`` records with the Python callbacks even where the compiled core
        is built (the tests run the tracer under both); ``auto`` uses the core when it can.
        ``names``: where the names of source files are kept between sessions (none: every
        file is named anew)."""
        self.scope = scope
        self.digester = digester
        self.bounds = bounds
        self.errors = 0
        #: Under ``DIFFGENOME_DEBUG=callbacks``: exception type -> where it was first caught.
        self.first_errors: dict[str, str] | None = (
            {} if "callbacks" in os.environ.get(DEBUG_ENV, "").split(",") else None
        )
        #: What is known of code: per code object, per source file, per symbol.
        self.table = SymbolTable(scope, self._note_reason, names)
        # The table's own dictionaries (never replaced): the callbacks read ``codes``.
        self.codes: dict[int, CodeInfo | None] = self.table.codes
        self.symbols: dict[str, dict[str, object]] = self.table.symbols
        self.sites: dict[str, Site] = self.table.sites
        self._active: dict[int, Node] = {}
        self._roots: dict[int, tuple[threading.Thread, Node]] = {}
        self._recording = False
        self._root: Node | None = None
        self._sink: Node | None = None
        self._nodes = 0
        self._reasons: set[str] = set()
        # By id(thread): the thread, the node whose code started it (None: started while no
        # phase was recorded) and the phase it was started in. Kept while the thread lives,
        # so that its work in a later phase is still known for what it is.
        self._starters: dict[int, tuple[threading.Thread, Node | None, int, int]] = {}
        self._phase_serial = 0
        # Counted by the session at each test's first phase: a thread started by another
        # test does work here by timing, one started in this test's setup by design.
        self.test_serial = 0
        self._exc_symbols: dict[int, tuple[type, str]] = {}
        self.standins: StandIns | None = None
        self._task_frames: dict[int, tuple[weakref.ref[Any], Node]] = {}
        # Thread.start and create_task wrapped while the tool id is held (collect/threads.py).
        self._start_hooks = StartHooks(self)
        self._core: Any = None  # the compiled core's object, when it is in use
        #: The ``sys.monitoring`` tool id: claimed, armed, kept, released (collect/tool.py).
        self.tool = Tool(self)
        self._accel = _ACCEL if core == "auto" else None
        #: ``c`` or ``python``: which callbacks record (both record the same genomes).
        self.core = "python" if self._accel is None else "c"
        #: Why the Python callbacks are used, when they are.
        self.core_reason = _ACCEL_ABSENT if core == "auto" else f"core={core}"

    def failed(self, exc: BaseException) -> None:
        """A callback caught ``exc``: count it (the phase is then unverified) and, when
        debugging callbacks, keep the first one of its kind with where it was raised."""
        self.errors += 1
        if type(exc) is RecursionError:
            self._reasons.add(REASON_RECURSION_LIMIT)
        if self.first_errors is not None:
            self.keep_first_error(exc)

    def keep_first_error(self, exc: BaseException) -> None:
        """Under ``DIFFGENOME_DEBUG=callbacks``, the first ``exc`` of its kind and where it
        was raised (the compiled core counts its own and hands them here)."""
        first = self.first_errors
        if first is None:
            return
        try:
            kind = reflect.type_name(type(exc))
            if kind not in first:
                first[kind] = _describe_error(exc)
        except Exception:
            pass  # a description is a debugging aid: it must never fail a callback

    def _set_recording(self, recording: bool) -> None:
        self._recording = recording
        if self._core is not None:
            self._core.recording = recording

    @property
    def recording(self) -> bool:
        """Whether a phase is being recorded right now."""
        return self._recording

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> bool:
        """Claim a tool id and register callbacks; False (with a reason) when none is free."""
        if not self.tool.claim(self._callbacks):
            return False
        self._start_hooks.install()
        self.tool.watch()
        return True

    def stop(self) -> None:
        """Release everything: events, callbacks, the tool id, the Thread.start wrapper.

        Never raises (``Tool.release``)."""
        self._set_recording(False)
        self._start_hooks.uninstall()
        self.tool.release()

    def reclaim(self) -> list[str]:
        """Put back whatever a test changed of the tool and say what (``Tool.reclaim``)."""
        return self.tool.reclaim()

    @property
    def tool_id(self) -> int | None:
        """The ``sys.monitoring`` tool id held (None: none)."""
        return self.tool.id

    @property
    def unavailable_reason(self) -> str | None:
        """Why no tool id could be claimed, when none could."""
        return self.tool.unavailable_reason

    @property
    def lost_reason(self) -> str | None:
        """Why recording stopped for good mid-session (another tool took the id), if it did."""
        return self.tool.lost_reason

    def begin_phase(self) -> None:
        """Start a fresh tree for the calling (main) thread."""
        root = Node(NODE_CALL, None, self.bounds)
        self._root = root
        # Made when the node bound is first met (``child``): most phases never meet it.
        self._sink = None
        self._roots = {_get_ident(): (_current_thread(), root)}
        self._active.clear()
        self._task_frames.clear()
        self._phase_serial += 1
        serial = self._phase_serial
        if self._starters:
            self._starters = {k: v for k, v in self._starters.items() if may_run(v, serial)}
        self._nodes = 0
        self._reasons = set()
        values.reset_class_summaries()
        if self._core is not None:
            self._core.forget_classes()  # it holds classes too: none may outlive its phase
        self._exc_symbols.clear()  # holds exception classes: none may outlive its phase
        # Whatever changed between phases (another plugin's hook) is put back unsaid: no
        # phase was being recorded.
        self.reclaim()
        self._set_recording(self.tool.id is not None)

    def end_phase(self) -> PhaseCapture:
        """Stop attributing and hand over the phase's tree and disclosures."""
        self._set_recording(False)
        root = self._root if self._root is not None else Node(NODE_CALL, None, self.bounds)
        self._close_running_calls()
        reasons = set(self._reasons)
        reasons.update(self.reclaim())
        if self.tool.lost_reason is not None:
            reasons.add(self.tool.lost_reason)
        if self._sink is not None and self._sink.count:
            reasons.add(f"{REASON_TRUNCATED}:nodes")
        self._root = None
        self._active.clear()
        return PhaseCapture(root, sorted(reasons))

    def _close_running_calls(self) -> None:
        """Calls another thread is still inside when the phase ends (a server loop, a worker
        waiting for jobs, a consumer inside a mocked ``recv()``) end the phase as
        ``running``: entered and not yet left is a fact of this phase, not a lost event, so
        their node stays consistent."""
        frames: dict[int, tuple[Node, int]] = {}
        for node in self._active.values():
            known = frames.get(id(node))
            frames[id(node)] = (node, 1 if known is None else known[1] + 1)
        for node, open_frames in frames.values():
            if node.key is None or node.ntype not in _MAY_RUN:
                continue
            ended = node.returned + node.yielded + sum(node.exits.values())
            running = min(open_frames, node.count - ended)
            if running > 0:
                node.exits[EXIT_RUNNING] = node.exits.get(EXIT_RUNNING, 0) + running

    # -- attribution ---------------------------------------------------------------------

    def enter_substitution(self, frame: FrameType, key: tuple[Any, ...]) -> Node | None:
        """A call into a stand-in made from ``frame.f_back``; ``frame`` is the interceptor's.

        The interceptor's frame is registered as active for the new node, so code that runs
        inside the stand-in (``side_effect``, ``wraps``) hangs under it.
        """
        if not self._recording:
            return None
        parent = self._parent_of(frame.f_back)
        node = self.child(parent, NODE_SUBSTITUTION, ("sub", *key))
        node.count += 1
        self._active[_frame_key(frame)] = node
        return node

    def leave_substitution(self, frame: FrameType, node: Node, exc: BaseException | None) -> None:
        """The stand-in call that ``enter_substitution`` opened has returned or raised."""
        try:
            self._active.pop(_frame_key(frame), None)
            if exc is None:
                node.returned += 1
            else:
                key = EXIT_RAISED_PREFIX + self._exception_symbol(exc)
                node.exits[key] = node.exits.get(key, 0) + 1
        except Exception as exc:
            self.failed(exc)

    def record_substitution_event(self, frame: FrameType | None, key: tuple[Any, ...]) -> None:
        """A stand-in that is installed rather than called (``patch.dict``)."""
        if not self._recording:
            return
        node = self.child(self._parent_of(frame), NODE_SUBSTITUTION, ("sub", *key))
        node.count += 1

    def symbol_of(self, obj: object) -> str | None:
        """The symbol of a real function or class, named exactly as its calls would be."""
        if isinstance(obj, FunctionType):
            code = obj.__code__
            info = self.codes.get(id(code))
            if info is None and id(code) not in self.codes:
                info = self.table.learn(code)
                if info is not None and self.tool.id is not None:
                    self.tool.arm(code, info)  # its first start will find it known
            if info is not None:
                return info.symbol
        return self.table.name_of(obj)

    def surrogate_info(
        self, symbol: str, filename: str, origin: str, kind: str, line: int, path: str
    ) -> CodeInfo:
        """What a child process knew of one of its code objects (``SymbolTable``)."""
        return self.table.surrogate_info(symbol, filename, origin, kind, line, path)

    def add_symbol(self, entry: dict[str, object]) -> None:
        """A symbol a child process saw: the store gets it like the ones seen here."""
        self.table.add(entry)

    def take_new_symbols(self) -> list[dict[str, object]]:
        """Symbols first seen since the last call: the store gets each one once."""
        return self.table.take_new()

    def origin_of(self, symbol: str) -> str | None:
        return self.table.origin_of(symbol)

    def _note_reason(self, reason: str) -> None:
        """A disclosure of the phase being recorded (the symbol table's unmapped sources)."""
        self._reasons.add(reason)

    def map_frame(self, frame: FrameType, node: Node) -> tuple[int, Node | None]:
        """Attribute what ``frame`` calls from now on to ``node``; returns the frame's key and
        the previous node, for ``unmap_frame``. The key is taken now, while the frame runs: a
        frame object that outlives its frame has another key (``_frame_key``)."""
        key = _frame_key(frame)
        previous = self._active.get(key)
        self._active[key] = node
        return key, previous

    def unmap_frame(self, key: int, previous: Node | None) -> None:
        """Undo ``map_frame``."""
        if previous is None:
            self._active.pop(key, None)
        else:
            self._active[key] = previous

    def record_os_event(
        self, kind: str, target: str, outcome: str, frame: FrameType | None
    ) -> Node | None:
        """An OS-plane event (egress attempt, subprocess) under the in-scope caller; its node
        (a recorded child process hangs its calls under it), or None while not recording."""
        if not self._recording:
            return None
        parent = self._parent_of(frame)
        if kind == "subprocess":  # a program's basename: a temporary script's name is noise
            target = stable.stable_program(target)
        else:
            target = stable.stable_text(target)
        node = self.child(parent, NODE_OS_EVENT, ("os", kind, target, outcome))
        node.count += 1
        if kind == OS_SUBPROCESS and outcome == OUTCOME_UNTRACED_CHILD:
            # Python ran out of sight; another program's identity is evidence, no gap.
            self._reasons.add(f"{REASON_UNTRACED_SUBPROCESS}:{target}")
        return node

    def child(self, parent: Node, ntype: int, key: Any) -> Node:
        """The child of ``parent`` under ``key``, created within the node bound."""
        node = parent.children.get(key)
        if node is None:
            sink = self._sink
            if parent is sink or self._nodes >= self.bounds.max_nodes:
                if sink is None:
                    sink = self._sink = Node(NODE_CALL, None, self.bounds)
                return sink
            self._nodes += 1
            node = Node(ntype, key, self.bounds)
            parent.children[key] = node
        return node

    def _parent_of(self, frame: FrameType | None, origin: FrameType | None = None) -> Node:
        """The node of the nearest active in-scope frame up the chain from ``frame``.

        ``origin`` is the frame that is starting or resuming: when nothing above it is in
        scope and it is the body of an asyncio task, the task's creator is its parent.
        """
        if origin is not None and self._task_frames:
            # A task body's real caller is the event loop; its creator is what drove it.
            task = self._task_frames.get(id(origin))
            if task is not None:
                coro = task[0]()
                if coro is not None and getattr(coro, "cr_frame", None) is origin:
                    return task[1]
        active = self._active
        while frame is not None:
            node = active.get(_frame_key(frame))
            if node is not None and (
                node.ntype != NODE_CALL or node.key is None or node.key.code is frame.f_code
            ):
                return node
            frame = frame.f_back
        return self._thread_root()

    def _thread_root(self) -> Node:
        thread = _current_thread()
        known = self._roots.get(_get_ident())
        if known is not None and known[0] is thread:  # idents are reused, thread objects not
            return known[1]
        starter = self._starters.get(id(thread))
        if starter is not None and starter[0] is thread:
            node, serial, test = starter[1], starter[2], starter[3]
            if node is not None and serial == self._phase_serial:
                root = self._side_root(node, "thread")  # threads of one node share it
            else:
                # Started in an earlier phase: by this test (a fixture's server started in
                # setup serves the call), or by another test or between tests (a module
                # fixture's server, a worker still refreshing): done while this phase runs.
                assert self._root is not None
                via = VIA_EARLIER_THREAD if test == self.test_serial else VIA_FOREIGN_THREAD
                root = self._side_root(self._root, via)
        else:
            # Kept apart from the truncation sink: unattributed is not truncated.
            self._reasons.add(f"{REASON_UNATTRIBUTED}:thread")
            root = Node(NODE_CALL, None, self.bounds)
        self._roots[_get_ident()] = (thread, root)
        return root

    def _side_root(self, parent: Node, via: str) -> Node:
        """The shared root under ``parent`` for work that runs elsewhere (threads, tasks)."""
        for root in parent.thread_roots:
            if root.via == via:
                return root
        root = Node(NODE_CALL, None, self.bounds)
        root.via = via
        parent.thread_roots.append(root)
        return root

    # -- per code object -----------------------------------------------------------------

    # -- callbacks (hot path) ------------------------------------------------------------

    def _start_slow(self, code: CodeType) -> CodeInfo | None:
        """First start of a code object: decide scope once, arm its local events."""
        if id(code) in self.codes:
            return None
        info = self.table.learn(code)
        if info is not None:
            self.tool.arm(code, info)
        return info

    def _callbacks(self) -> dict[int, Callable[..., Any]]:
        """The event callbacks by event. Each is made by its own factory below, as a closure
        over local references bound when it is made: every attribute lookup saved there is
        saved on every call and return of in-scope code. This only assembles them; with the
        compiled core in use it takes the hottest events and falls back to these closures."""
        on_start = self._start_callback()
        on_resume = self._resume_callback()
        on_branch = self._branch_callback()
        events = _events
        callbacks: dict[int, Callable[..., Any]] = {
            events.PY_START: on_start,
            events.PY_RESUME: on_resume,
            events.PY_THROW: on_resume,
            events.PY_RETURN: self._return_callback(),
            events.PY_YIELD: self._yield_callback(),
            events.PY_UNWIND: self._unwind_callback(),
        }
        for event in CAPABILITIES.branch_events:
            callbacks[event] = on_branch
        if self._accel is not None:
            # The compiled core, over the very tables these closures work on; one whose
            # encodings disagree with values.py is not used (``core_reason`` says why).
            core, disagreement = cores.build_core(self, self._accel, on_start, on_resume, on_branch)
            if core is None:
                self.core, self.core_reason = "python", f"core-disagrees: {disagreement}"
            else:
                self._core = core
                core.recording = self._recording
                callbacks.update(cores.core_callbacks(core))  # same keys: the dict keeps its order
        return callbacks

    def _start_callback(self) -> Callable[[CodeType, int], Any]:
        """``PY_START``, raised by every code object: the scope decision on a code object's
        first start (out of scope: ``DISABLE``, never raised again), then per call in scope
        the parent up the frame chain, the call's node (or a test's stand-in), its arguments
        and the state it enters with. The hottest callback: the references it uses on every
        call are bound here, once."""
        tracer = self
        codes_get = self.codes.get
        active = self._active
        active_get = active.get
        task_frames = self._task_frames
        getframe = _getframe
        frame_key = _frame_key
        start_slow = self._start_slow
        parent_of = self._parent_of
        make_child = self.child
        record_args = self._record_args
        record_state = self._record_state
        disable = _DISABLE
        call = NODE_CALL
        entry = contract.STATE_ENTRY

        def on_start(code: CodeType, offset: int) -> Any:
            try:
                info = codes_get(id(code))
                if info is None:
                    info = start_slow(code)
                    if info is None:
                        return disable
                if not tracer._recording:
                    return None
                frame = getframe(1)
                back = frame.f_back
                parent = None if task_frames or back is None else active_get(frame_key(back))
                if parent is None or (
                    parent.ntype == call
                    and parent.key is not None
                    and parent.key.code is not back.f_code  # type: ignore[union-attr]
                ):
                    parent = parent_of(back, frame)
                if info.is_test and tracer.standins is not None:
                    from_repo = parent.ntype == call and (
                        parent.key is not None and parent.key.origin == ORIGIN_REPO
                    )
                    key = tracer.standins.fake_key(info, frame, from_repo)
                    if key is not None:
                        stand_in = make_child(parent, NODE_SUBSTITUTION, ("sub", *key))
                        stand_in.count += 1
                        active[frame_key(frame)] = stand_in
                        if info.argnames:
                            record_args(stand_in, info, frame)
                        tracer.standins.check_fake_call(stand_in, frame)
                        return None
                node = parent.children.get(info)
                if node is None:
                    node = make_child(parent, call, info)
                node.count += 1
                active[frame_key(frame)] = node
                if info.argnames:
                    record_args(node, info, frame)
                if info.has_state:
                    record_state(node, info, frame, entry)
            except Exception as exc:
                tracer.failed(exc)
            return None

        return on_start

    def _resume_callback(self) -> Callable[..., Any]:
        """``PY_RESUME`` and ``PY_THROW`` (armed locally, on in-scope code): a generator or
        coroutine going on is counted again under whoever drives it now, which may not be
        the code that started it (a generator consumed elsewhere)."""
        tracer = self
        codes_get = self.codes.get
        active = self._active
        active_get = active.get
        task_frames = self._task_frames
        getframe = _getframe
        frame_key = _frame_key
        parent_of = self._parent_of
        make_child = self.child
        call = NODE_CALL

        def on_resume(code: CodeType, offset: int, *rest: object) -> Any:
            # The parent lookup repeats on_start's on purpose: a shared helper would cost one
            # more Python call per event, and generator-heavy code resumes millions of times.
            try:
                info = codes_get(id(code))
                if info is None or not tracer._recording:
                    return None
                frame = getframe(1)
                back = frame.f_back
                parent = None if task_frames or back is None else active_get(frame_key(back))
                if parent is None or (
                    parent.ntype == call
                    and parent.key is not None
                    and parent.key.code is not back.f_code  # type: ignore[union-attr]
                ):
                    parent = parent_of(back, frame)
                node = parent.children.get(info)
                if node is None:
                    node = make_child(parent, call, info)
                node.count += 1
                active[frame_key(frame)] = node
            except Exception as exc:
                tracer.failed(exc)
            return None

        return on_resume

    def _return_callback(self) -> Callable[[CodeType, int, object], Any]:
        """``PY_RETURN`` (armed locally): the frame leaves its node with the summary of what
        it returned and the state it leaves behind. A stand-in's node only counts the return;
        a call node of another code object is not this frame's call and counts nothing."""
        tracer = self
        active_pop = self._active.pop
        getframe = _getframe
        frame_key = _frame_key
        record_state = self._record_state
        summarize = values.summarize
        call = NODE_CALL
        leave = contract.STATE_EXIT

        def on_return(code: CodeType, offset: int, value: object) -> Any:
            try:
                if not tracer._recording:
                    return None
                frame = getframe(1)
                node = active_pop(frame_key(frame), None)
                if node is None:
                    return None
                info = node.key
                if info is None:
                    return None
                if node.ntype != call:
                    node.returned += 1
                    return None
                if info.code is not code:
                    return None
                node.returned += 1
                summary = summarize(value)
                if info.salted_results:
                    summary = (summary[0], None)
                node.results.add_pair(summary)
                if info.has_state:
                    record_state(node, info, frame, leave)
            except Exception as exc:
                tracer.failed(exc)
            return None

        return on_return

    def _yield_callback(self) -> Callable[[CodeType, int, object], Any]:
        """``PY_YIELD`` (armed locally): a pause, not an exit; the frame's node counts it
        and the next resume attributes the frame afresh."""
        tracer = self
        active_pop = self._active.pop
        getframe = _getframe
        frame_key = _frame_key

        def on_yield(code: CodeType, offset: int, value: object) -> Any:
            try:
                if not tracer._recording:
                    return None
                node = active_pop(frame_key(getframe(1)), None)
                if node is not None:
                    node.yielded += 1
            except Exception as exc:
                tracer.failed(exc)
            return None

        return on_yield

    def _unwind_callback(self) -> Callable[[CodeType, int, BaseException], Any]:
        """``PY_UNWIND``, raised by every code object (it cannot be local): a frame in scope
        leaves by an exception, counted as an exit under the exception's symbol. The compiled
        core does not take this event: this closure records every unwind with either core."""
        tracer = self
        codes_get = self.codes.get
        active_pop = self._active.pop
        getframe = _getframe
        frame_key = _frame_key
        exception_symbol = self._exception_symbol
        summarize = values.summarize
        call = NODE_CALL

        def on_unwind(code: CodeType, offset: int, exc: BaseException) -> Any:
            try:
                if not tracer._recording or codes_get(id(code)) is None:
                    return None
                node = active_pop(frame_key(getframe(1)), None)
                if node is None or node.key is None:
                    return None
                if node.ntype == call and node.key.code is not code:
                    return None
                if type(exc) is RecursionError:
                    # The recorder's callbacks need frames too: near the limit, recording
                    # can move where the RecursionError happens.
                    tracer._reasons.add(REASON_RECURSION_LIMIT)
                if type(exc) is GeneratorExit and code.co_flags & _SUSPENDABLE and node.count:
                    # Closing a paused generator throws GeneratorExit into it only when the
                    # pause is inside a ``try``; elsewhere CPython closes it without an event.
                    # Both are one close by the consumer: the throw is no entry and its unwind
                    # no exit, so moving a ``try`` around a ``yield`` changes nothing.
                    node.count -= 1
                    return None
                key = EXIT_RAISED_PREFIX + exception_symbol(exc)
                exits = node.exits
                exits[key] = exits.get(key, 0) + 1
                if node.ntype == call:
                    # What it raised is what it gave back (values revision 5): an exception
                    # with another message is another result, as a returned value would be.
                    summary = summarize(exc)
                    if node.key.salted_results:
                        summary = (summary[0], None)
                    node.results.add_pair(summary)
            except Exception as exc:
                tracer.failed(exc)
            return None

        return on_unwind

    def _branch_callback(self) -> Callable[[CodeType, int, int], Any]:
        """The branch events of the capability table (armed locally, on repo code only): each
        (source, destination) pair of a code object is classified once through its file's
        decision map and cached; a pair that is no decision is disabled, never raised again,
        and a decision's outcome is counted on the frame's node."""
        tracer = self
        codes_get = self.codes.get
        active_get = self._active.get
        getframe = _getframe
        frame_key = _frame_key
        disable = _DISABLE
        no_decision = codemap.NO_DECISION
        shift = contract.BRANCH_KEY_SHIFT

        def on_branch(code: CodeType, src: int, dest: int) -> Any:
            try:
                info = codes_get(id(code))
                if info is None:
                    return disable
                cache = info.branch_cache
                pair = (src << shift) | dest
                outcome = cache.get(pair)
                if outcome is None:
                    filemap = info.filemap
                    if filemap is None:
                        return disable
                    outcome = filemap.classify(code, src, dest)
                    cache[pair] = outcome
                if outcome < 0:
                    return disable if outcome == no_decision else None
                if not tracer._recording:
                    return None
                node = active_get(frame_key(getframe(1)))
                if node is not None:
                    branches = node.branches
                    branches[outcome] = branches.get(outcome, 0) + 1
            except Exception as exc:
                tracer.failed(exc)
            return None

        return on_branch

    # -- evidence ------------------------------------------------------------------------

    def _record_args(self, node: Node, info: CodeInfo, frame: FrameType) -> None:
        read = _frame_var
        local = frame.f_locals if read is None else None
        summarize = values.summarize
        labels = info.arg_labels
        if len(labels) == 1:
            name = info.argnames[0]
            value = read(frame, name) if local is None else local.get(name)  # type: ignore[misc]
            shape, canon = summarize(value)
            node.args.add_pair((labels[0] + shape, canon))
            return
        shapes: list[str] = []
        canons: list[bytes] = []
        complete = True
        for name, label in zip(info.argnames, labels, strict=True):
            value = read(frame, name) if local is None else local.get(name)  # type: ignore[misc]
            shape, canon = summarize(value)
            shapes.append(label + shape)
            if canon is None:
                complete = False
            elif complete:
                canons.append(canon)
        node.args.add_pair(
            (_SHAPE_SEPARATOR.join(shapes), _CANON_SEPARATOR.join(canons) if complete else None)
        )

    def _record_state(self, node: Node, info: CodeInfo, frame: FrameType, when: str) -> None:
        state = node.state
        if state is None:
            state = node.state = StateSet(self.bounds.state)
        if info.self_attrs and info.receiver is not None:
            read = _frame_var
            receiver = (
                frame.f_locals.get(info.receiver) if read is None else read(frame, info.receiver)
            )
            fields = _fields_of(receiver)
            if fields is not None:
                classes: list[Any] | None = None
                for attr, label in zip(info.self_attrs, info.self_labels, strict=True):
                    value = fields.get(attr, _ABSENT)
                    if value is _ABSENT:
                        # Not on the instance: a class attribute (or a method) when its
                        # class or a base defines it, read from the class dicts, never by
                        # getattr (no descriptor runs).
                        if classes is None:
                            classes = _class_dicts(type(receiver)) or []
                        on_class = _lookup(classes, attr) is not _NOT_FOUND
                        bucket = _CLASS_ATTRIBUTE if on_class else "absent"
                    else:
                        bucket = values.bucket(value)
                    state.add((when, label, bucket))
        names = info.state_globals
        labels = info.global_labels
        module_globals = frame.f_globals
        if names is None or labels is None:
            names = info.state_globals = tuple(
                name
                for name in info.globals_read
                if not _is_code_like(module_globals.get(name, _ABSENT)) and name in module_globals
            )
            labels = info.global_labels = tuple("global:" + name for name in names)
            info.has_state = bool(info.self_attrs or names)
        for name, label in zip(names, labels, strict=True):
            value = module_globals.get(name, _ABSENT)
            if value is _ABSENT or _is_code_like(value):
                continue
            state.add((when, label, values.bucket(value)))

    def _exception_symbol(self, exc: BaseException) -> str:
        cls = type(exc)
        known = self._exc_symbols.get(id(cls))
        if known is not None and known[0] is cls:
            return known[1]
        symbol = "py:" + reflect.type_name(cls)
        self._exc_symbols[id(cls)] = (cls, symbol)
        return symbol


_ABSENT = object()
_SHAPE_SEPARATOR = contract.ARG_SHAPE_SEPARATOR
_CANON_SEPARATOR = contract.ARG_CANON_SEPARATOR
# The receiver's own fields, read without running its code (see reflect.py).
_fields_of = reflect.instance_dict
_class_dicts = reflect.class_dicts
_lookup = reflect.lookup
_NOT_FOUND = reflect.MISSING
_CLASS_ATTRIBUTE: Final = CLASS_ATTRIBUTE_BUCKET
_BUILTIN_FUNCTION = type(len)
_FUNCTION = type(lambda: 0)
_MODULE = type(sys)
_is_subtype = type.__dict__["__subclasscheck__"]


def _describe_error(exc: BaseException) -> str:
    """``message (file:line in function)`` of the innermost frame that raised ``exc``, read
    without running its ``__str__`` (an exception of user code may define one)."""
    args = exc.args
    message = args[0] if args and type(args[0]) is str else ""
    tb = exc.__traceback__
    if tb is None:
        where = "no Python frame: raised in the compiled core"
    else:
        while tb.tb_next is not None:
            tb = tb.tb_next
        code = tb.tb_frame.f_code
        where = f"{code.co_filename}:{tb.tb_lineno} in {code.co_name}"
    return f"{message} ({where})" if message else where


def _is_code_like(value: object) -> bool:
    """Functions, classes and modules read as globals are code, not state.

    Identity and the type's own subclass check only: ``in``/``==`` could run a metaclass's
    ``__eq__`` and ``isinstance`` reads ``__class__`` (a lazy proxy would resolve itself).
    """
    kind = type(value)
    return (
        kind is _FUNCTION
        or kind is _BUILTIN_FUNCTION
        or kind is _MODULE
        or _is_subtype(type, kind)  # a class: its type is a metaclass
    )
