"""What both cores share: the tree they grow, what they know per code object, and the
encodings the compiled core must write exactly as the Python callbacks do.

The Python callbacks (tracer.py) and the compiled core (``_accel.c``) work on the same
objects: the core reads and writes the ``__slots__`` below through their descriptors' offsets.
Everything the core would otherwise have to repeat by hand (node type numbers, separators,
the branch cache key, which values it summarises itself) is a constant here, used by the
Python side and handed to ``_accel.Core`` by ``core_encodings``; what cannot be handed over
(the byte forms it writes) is compared with values.py by ``core_disagreement`` when the core
is built, so that one edit cannot make the two cores record different genomes.
"""

from __future__ import annotations

import datetime
import decimal
import sys
import uuid
from dis import get_instructions as _get_instructions
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any, Final

from diffgenome.protocol import vocab
from diffgenome.protocol.vocab import ORIGIN_TEST
from diffgenome.recording.collect import codemap, stable, values

if TYPE_CHECKING:
    from collections.abc import Callable

NODE_CALL = 0
NODE_SUBSTITUTION = 1
NODE_OS_EVENT = 2


class Bounds:
    """Hard bounds on every set the collector keeps; what does not fit is disclosed."""

    __slots__ = ("args", "max_nodes", "results", "state")

    def __init__(
        self, max_nodes: int = 20_000, args: int = 8, results: int = 8, state: int = 256
    ) -> None:
        # ``state``: a fact is a field or global the code names (a static, small set per code
        # object) at entry or exit with one of a few buckets. 32 overflowed on ordinary
        # classes (xmltodict's SAX handler: 13 fields, 22 of 645 nodes of its suite), and
        # which facts an overflowing set keeps depends on the order they came in: a refactor
        # that moved one read made every other fact of the method move too (values
        # revision 7).
        self.max_nodes = max_nodes
        self.args = args
        self.results = results
        self.state = state

    def as_config(self) -> dict[str, int]:
        return {
            "max_nodes_per_phase": self.max_nodes,
            "args_per_node": self.args,
            "results_per_node": self.results,
            "state_facts_per_node": self.state,
        }


class CodeInfo:
    """Everything decided once per in-scope code object."""

    __slots__ = (
        "arg_labels",
        "argnames",
        "branch_cache",
        "code",
        "filemap",
        "global_labels",
        "globals_read",
        "has_state",
        "is_test",
        "kind",
        "line",
        "origin",
        "path",
        "receiver",
        "salted_results",
        "self_attrs",
        "self_labels",
        "state_globals",
        "symbol",
    )

    def __init__(
        self,
        code: CodeType,
        symbol: str,
        origin: str,
        kind: str,
        line: int,
        path: str,
        filemap: codemap.FileMap | None,
    ) -> None:
        self.code = code
        self.symbol = symbol
        self.origin = origin
        self.is_test = origin == ORIGIN_TEST
        self.kind = kind
        self.line = line
        self.path = path
        self.filemap = filemap
        self.branch_cache: dict[int, int] = {}
        names, receiver = _argument_names(code)
        self.argnames = names
        self.arg_labels = tuple(name + "=" for name in names)
        # ``__hash__`` results are salted per process (str and bytes hashing): their value is
        # noise between two recordings of one commit, so only their shape is kept.
        self.salted_results = code.co_name == "__hash__"
        self.receiver = receiver
        self.self_attrs, self.globals_read = _state_reads(code, receiver)
        if self.salted_results:
            # A hash it caches on the instance (cachetools' ``_HashedTuple.__hashvalue``)
            # is salted like the hash it returns: its bucket moves with str hashing and
            # object addresses, not with behaviour (values revision 5).
            self.self_attrs = ()
        self.self_labels = tuple("self." + attr for attr in self.self_attrs)
        # Globals that hold data, not code: decided at the first call, from the module's
        # namespace then (a name bound to a function is a function's name, not state).
        self.state_globals: tuple[str, ...] | None = None if self.globals_read else ()
        #: ``"global:" + name`` for each of state_globals, decided with them.
        self.global_labels: tuple[str, ...] | None = None if self.globals_read else ()
        self.has_state = bool(self.self_attrs or self.globals_read)


class Node:
    """A calling-context tree node: a call path, a stand-in, or an OS event."""

    __slots__ = (
        "args",
        "branches",
        "children",
        "count",
        "exits",
        "flags",
        "key",
        "ntype",
        "results",
        "returned",
        "state",
        "thread_roots",
        "via",
        "yielded",
    )

    def __init__(self, ntype: int, key: Any, bounds: Bounds) -> None:
        # No link back to the parent: a tree without cycles is freed by reference counting
        # when its phase is exported, instead of waiting for (and feeding) the cyclic GC.
        self.ntype = ntype
        self.key = key
        self.children: dict[Any, Node] = {}
        self.count = 0
        self.returned = 0
        self.yielded = 0
        self.exits: dict[str, int] = {}
        self.args = values.BoundedValues(bounds.args)
        self.results = values.BoundedValues(bounds.results)
        self.state: StateSet | None = None
        self.branches: dict[int, int] = {}
        self.thread_roots: list[Node] = []
        self.via: str | None = None
        self.flags: set[str] | None = None


class StateSet:
    """Bounded set of (when, target, bucket) facts; overflow is counted, never dropped silently."""

    __slots__ = ("facts", "limit", "overflow")

    def __init__(self, limit: int) -> None:
        self.facts: set[tuple[str, str, str]] = set()
        self.limit = limit
        self.overflow = 0

    def add(self, fact: tuple[str, str, str]) -> None:
        facts = self.facts
        if fact in facts:
            return
        if len(facts) < self.limit:
            facts.add(fact)
        else:
            self.overflow += 1


class PhaseCapture:
    """What one phase produced: the tree, the decision map it refers to, and disclosures."""

    __slots__ = ("reasons", "root")

    def __init__(self, root: Node, reasons: list[str]) -> None:
        self.root = root
        self.reasons = reasons


# -- encodings the compiled core writes as the Python callbacks do ---------------------------

#: ``when`` of a state fact read as a frame starts, and as it returns.
STATE_ENTRY: Final = vocab.STATE_ENTRY
STATE_EXIT: Final = vocab.STATE_EXIT
#: Several arguments are one pair: their labelled shapes joined by the first, their
#: canonical forms by the second (a form of its own never holds a bare record separator).
ARG_SHAPE_SEPARATOR: Final = ", "
ARG_CANON_SEPARATOR: Final = b"\x1e"
#: A branch event's key in ``CodeInfo.branch_cache``: ``(src << BRANCH_KEY_SHIFT) | dest``.
BRANCH_KEY_SHIFT: Final = 24

# Values whose byte forms the compiled core writes itself (``_accel_values.c``): it cannot be
# handed a format, so ``core_disagreement`` compares it with values.py on these when it is built.
_INT_SAMPLES: Final = (0, 1, -1, 9, 10, 255, -4096, values.SMALL_INT - 1, 1 - values.SMALL_INT)
_STR_SAMPLES: Final = ("", "a", "é", "\ud800", "\x00:;", "x" * (values.SHORT_STR - 1))
#: One value down each path of the core's walk of containers and the other scalars (shapes,
#: unions, elisions, sorted forms, bounds); plain instances are the memo's, not written.
_VALUE_SAMPLES: Final[tuple[object, ...]] = (
    (1, "a", None, True, (), []),
    [1, 2.5, "x", b"", None],
    ["a", "b", 1],
    {"k": [1, (2,)], 3: b"x", 4.5: {}},
    frozenset({1, "a", -1}),
    {2.5, -0.0, float("nan")},
    bytearray(b"y\x00"),
    2j - 1,
    "\u00e9" * 70,
    -(10**12),
    [[[[[1]]]]],
    ((1, (2, (3,))),),
    tuple(range(9)),
    list(range(65)),
    ["x" * 200] * 30,
    {"a": {"b": {"c": {}}}},
    set(range(70)),
    # Standard-library value types: values.py's forms, which the core hands over.
    [datetime.timedelta(days=-1), decimal.Decimal("2.50")],
    (uuid.UUID(int=7), datetime.date(2024, 1, 1)),
)
#: One value for each bucket the core names itself (values.bucket).
_BUCKET_SAMPLES: Final[tuple[object, ...]] = (
    None, True, False, float("nan"), 0, -0.0, 3, -(2**70), 2.5, "", "x", b"", bytearray(b"y"),
    [], (1,), {1: 2, 3: 4}, set(), frozenset({1}),
)  # fmt: skip
#: Forms and shapes short and long, on both sides of values.OVERFLOW_SHORT_BYTES (tagged).
_OVERFLOW_SAMPLES: Final = (
    ("int", b"i0;"), ("list[int]", None), ("\ud800", None), ("s", b""),
    ("str", b"s" * 63), ("str", b"s" * 64), ("t" * 63, None), ("t" * 64, None),
)  # fmt: skip
#: Calls down each branch of the core's allocation-free path of a call's values (fast_add):
#: kept, repeated, overflowing with and without a form, several arguments, a label or a value
#: it hands back to the general path, the largest ints and forms it writes itself.
_CALL_SAMPLES: Final[tuple[tuple[tuple[str, ...] | None, tuple[object, ...]], ...]] = (
    (("x=",), (1,)),
    (("x=",), (1,)),
    (("y=",), (1,)),
    (("x=",), ("ab",)),
    (("x=",), (2**63 - 1,)),
    (("x=",), (-(2**63) + 1,)),
    (("x=",), (-(2**63),)),
    (("x=",), (None,)),
    (("x=",), (b"\x00:",)),
    (("a=", "b="), (True, "s" * 300)),
    (("a=", "b="), (False, 2.5)),
    (("é=",), (3,)),
    (("x=",), ("é",)),
    (None, (7,)),
    (None, ("t" * 600,)),
    (("x=",), (1,)),
    (("a" * 58 + "=",), (4,)),
    (("a" * 59 + "=",), (5,)),
    (("a" * 70 + "=",), (6.5,)),
)


def core_encodings() -> dict[str, Any]:
    """The keyword arguments of ``_accel.Core`` that say how things are written."""
    return {
        "node_call": NODE_CALL,
        "state_entry": STATE_ENTRY,
        "state_exit": STATE_EXIT,
        "arg_shape_separator": ARG_SHAPE_SEPARATOR,
        "arg_canon_separator": ARG_CANON_SEPARATOR,
        "branch_key_shift": BRANCH_KEY_SHIFT,
        "no_decision": codemap.NO_DECISION,
        "small_int": values.SMALL_INT,
        "short_str": values.SHORT_STR,
        "overflow_tags": (values.OVERFLOW_SHAPE_TAG, values.OVERFLOW_CANON_TAG),
        "overflow_digest_size": values.OVERFLOW_DIGEST_SIZE,
        "none_summary": values.NONE_SUMMARY,
        "tempfile_name_hash": (
            stable.TEMPFILE_NAME_LENGTH,
            stable.NAME_HASH_BASE,
            stable.NAME_HASH_BITS,
        ),
        "value_bounds": (
            values.MAX_DEPTH,
            values.MAX_ITEMS,
            values.MAX_BYTES,
            values.MAX_SHAPE,
            values.SHAPE_ITEMS,
            values.MAX_UNION,
        ),
    }


def frame_disagreement(
    frame_probe: Callable[[tuple[str, ...]], Any],
    frame_key: Callable[[FrameType], int],
    frame_var: Callable[[FrameType, str], Any],
) -> str | None:
    """Where what the compiled core reads of a running frame differs from the public frame
    API, or None. The core reads the interpreter's own frames (``_accel.h``): their layout is
    CPython's private business, so before a core records, its reading of a few real frames is
    compared here: the frame and its caller (keys as ``frame_key`` gives them, as the Python
    callbacks key their tables), the code object, and each argument, which must be read
    straight from its slot when it is a plain local, and left to the frame object's path when
    it is a cell."""
    getframe = sys._getframe
    marker = object()

    def seen(frame: FrameType, names: tuple[str, ...]) -> Any:
        # Called from the frame itself: a frame object that outlives its frame moves.
        back = frame.f_back
        return (
            frame_key(frame),
            None if back is None else frame_key(back),
            frame.f_code,
            tuple(frame_var(frame, name) for name in names),
        )

    def plain(a: object, b: object, *rest: object, c: object = None, **kw: object) -> Any:
        names = plain.__code__.co_varnames[:5]
        return frame_probe(names), seen(getframe(), names)

    def celled(a: object, b: object) -> Any:
        names = celled.__code__.co_varnames[:2]
        return (frame_probe(names), seen(getframe(), names)), (lambda: b)

    class Owner:
        def method(self, a: object, b: object) -> Any:
            names = Owner.method.__code__.co_varnames[1:3]
            return frame_probe(names), seen(getframe(), names)

    def unbound(a: object, b: object) -> Any:
        names = unbound.__code__.co_varnames[:2]
        del b
        return frame_probe(names), seen(getframe(), names)

    def paused(a: object) -> Any:
        names = paused.__code__.co_varnames[:1]
        yield frame_probe(names), seen(getframe(), names)
        yield frame_probe(names), seen(getframe(), names)

    try:
        generator = paused(marker)
        first, second = next(generator), next(generator)
        cases: list[tuple[str, Any, tuple[bool, ...]]] = [
            ("plain", plain(marker, "b", 3, 4, c=5.0, d=6), (True,) * 5),
            ("celled", celled(marker, "b")[0], (True, False)),
            ("method", Owner().method(marker, "b"), (True, True)),
            ("unbound", unbound(marker, "b"), (True, True)),
            ("generator", first, (True,)),
            ("resumed generator", second, (True,)),
        ]
        for name, (probe, expected), direct in cases:
            if probe is None:
                return f"frames: no running frame in {name}"
            if probe[:3] != expected[:3]:
                return f"frames: {name}'s frame, caller or code"
            for index, (read_here, slot) in enumerate(zip(direct, probe[3], strict=True)):
                if read_here != (slot is not None):
                    return f"frames: {name}'s argument {index} read from the wrong place"
                if slot is not None and slot[0] is not expected[3][index]:
                    return f"frames: {name}'s argument {index}"
        if first[0][0] != second[0][0]:
            return "frames: a generator's frame moved between resumes"
    except Exception as exc:  # a probe that fails is a disagreement, not a crash
        return f"frames: {type(exc).__name__}: {exc}"
    return None


def core_disagreement(
    summarize: Callable[[object], tuple[str, bytes | None]],
    add_pair: Callable[[values.BoundedValues, tuple[str, bytes | None]], None],
    bucket: Callable[[object], str] | None = None,
    add_values: Callable[
        [values.BoundedValues, tuple[str, ...] | None, tuple[object, ...], bool], bool
    ]
    | None = None,
) -> str | None:
    """Where the compiled core's own summaries or overflow fingerprints differ from
    values.py's, or None: a core that disagrees must not record (its genomes would differ).

    Given the core's test entry points (``Core.summarize``, ``Core.add_pair``,
    ``Core.bucket``); the values compared are the kinds the core writes without asking Python.
    """
    for value in (*_INT_SAMPLES, *_STR_SAMPLES, True, False, None, *_VALUE_SAMPLES):
        if summarize(value) != values.summarize(value):
            return f"summary of {type(value).__name__} {value!r}"
    if bucket is not None:
        for value in _BUCKET_SAMPLES:
            if bucket(value) != values.bucket(value):
                return f"bucket of {type(value).__name__} {value!r}"
    python_side = values.BoundedValues(0)
    core_side = values.BoundedValues(0)
    for pair in _OVERFLOW_SAMPLES:
        python_side.add_pair(pair)
        add_pair(core_side, pair)
        if (core_side._count, core_side._sum) != (python_side._count, python_side._sum):
            return f"overflow fingerprint of {pair!r}"
    if add_values is not None:
        for limit in (0, 2, 8):
            python_side = values.BoundedValues(limit)
            core_side = values.BoundedValues(limit)
            for labels, items in _CALL_SAMPLES:
                python_side.add_pair(python_values_pair(labels, items, shape_only=False))
                add_values(core_side, labels, items, False)
                if labels is None:
                    python_side.add_pair(python_values_pair(None, items, shape_only=True))
                    add_values(core_side, None, items, True)
                if (list(core_side._seen), core_side._count, core_side._sum) != (
                    list(python_side._seen),
                    python_side._count,
                    python_side._sum,
                ):
                    return f"the values of a call {labels!r} {items!r} (limit {limit})"
    return None


def python_values_pair(
    labels: tuple[str, ...] | None, items: tuple[object, ...], *, shape_only: bool
) -> tuple[str, bytes | None]:
    """The pair the Python callbacks add for a call's arguments (Tracer._record_args, with
    ``labels``) or for a result (``labels`` None: one value; ``shape_only`` for a salted
    ``__hash__``), for comparing the compiled core's own path with them."""
    if labels is None:
        shape, canon = values.summarize(items[0])
        return (shape, None) if shape_only else (shape, canon)
    summaries = [values.summarize(item) for item in items]
    if len(summaries) == 1:
        return (labels[0] + summaries[0][0], summaries[0][1])
    forms = [form for _, form in summaries]
    return (
        ARG_SHAPE_SEPARATOR.join(
            label + shape for label, (shape, _) in zip(labels, summaries, strict=True)
        ),
        None
        if any(form is None for form in forms)
        else ARG_CANON_SEPARATOR.join(form for form in forms if form is not None),
    )


def _argument_names(code: CodeType) -> tuple[tuple[str, ...], str | None]:
    """Parameter names to summarise, and the receiver's name for methods."""
    flags = code.co_flags
    count = code.co_argcount + code.co_kwonlyargcount
    if flags & 0x04:  # CO_VARARGS
        count += 1
    if flags & 0x08:  # CO_VARKEYWORDS
        count += 1
    names = code.co_varnames[:count]
    receiver: str | None = None
    qualname = code.co_qualname
    if names and "." in qualname and names[0] in ("self", "cls"):
        owner = qualname.rpartition(".")[0]
        if not owner.endswith("<locals>"):
            receiver = names[0]
            names = names[1:]
    if code.co_name == "__deepcopy__" and receiver is not None and names:
        # ``copy.deepcopy``'s memo maps id() of each object copied so far to its copy: its
        # digest differs in every process (values revision 4; marshmallow's fields, 442 of
        # 1,233 tests unstable). It is the copy module's bookkeeping, not the caller's data.
        names = names[1:]
    return tuple(names), receiver


_STATE_READS: dict[tuple[object, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _state_reads(code: CodeType, receiver: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Receiver fields and module globals that a code object reads (static, from bytecode).

    Remembered by bytecode and names: code generators (attrs, dataclasses, namedtuple) make
    a new code object with the same instructions for every class they build.
    """
    key = (
        code.co_code,
        code.co_names,
        code.co_varnames,
        code.co_cellvars,
        code.co_freevars,
        receiver,
    )
    known = _STATE_READS.get(key)
    if known is None:
        if len(_STATE_READS) >= 4096:
            _STATE_READS.clear()
        known = _STATE_READS[key] = _read_state_reads(code, receiver)
    return known


#: Instructions that push one local, and those that push two (3.13's superinstructions;
#: the BORROW forms are 3.14's, behind the capability table and untested here). A receiver
#: a nested scope shares (a generator expression or closure that reads ``self``) is a cell,
#: pushed by ``LOAD_DEREF`` (values revision 7; before, such a method recorded no fields).
_LOAD_ONE = frozenset(("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW", "LOAD_DEREF"))
_LOAD_PAIR = frozenset(("LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"))


def _read_state_reads(
    code: CodeType, receiver: str | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    attrs: list[str] = []
    globals_read: list[str] = []
    previous_self = False
    for instruction in _get_instructions(code):
        opname = instruction.opname
        if previous_self and opname == "COPY" and instruction.arg == 1:
            # ``self.n += 1``: the receiver is copied for the store, then ``n`` is read from
            # it (values revision 4; before, a counter changed in place was never state).
            continue
        if opname == "LOAD_GLOBAL" and isinstance(instruction.argval, str):
            globals_read.append(instruction.argval)
        if previous_self and opname == "LOAD_ATTR" and isinstance(instruction.argval, str):
            attrs.append(instruction.argval)
        argval = instruction.argval
        if opname in _LOAD_PAIR:
            # 3.13 fuses two loads (``amount * self.rate``): the second is on top of the stack.
            argval = argval[-1] if isinstance(argval, tuple) and argval else None
        previous_self = (
            receiver is not None
            and (opname in _LOAD_ONE or opname in _LOAD_PAIR)
            and argval == receiver
        )
    return tuple(sorted(set(attrs))), tuple(sorted(set(globals_read)))
