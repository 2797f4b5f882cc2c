"""The compiled core's own value paths agree with values.py, value by value.

The compiled core computes the summaries of scalars and exact containers itself, answers
instances of plain classes from its copy of values.py's per-phase memo, reads receivers' fields
and their buckets for state facts, and folds overflowing values into the multiset fingerprint
itself (``_accel_values.c``); everything else it asks values.py (or reflect.py) for. These
tests compare both on generated values; the end-to-end comparison of whole genomes is
tests/e2e/test_cores.py.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
import zoneinfo
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diffgenome.recording.collect import tracer as tracer_module
from diffgenome.recording.collect import values
from diffgenome.recording.collect.contract import NODE_CALL, Bounds, CodeInfo, Node
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.tracer import Tracer

pytestmark = pytest.mark.skipif(
    tracer_module._ACCEL is None, reason=f"no compiled core: {tracer_module._ACCEL_ABSENT}"
)


def _core() -> object:
    tracer = Tracer(Scope("/nonexistent", [], []), values.Digester(b"k" * 32), Bounds())
    tracer._callbacks()  # builds the compiled core, without claiming a tool id
    return tracer._core


CORE = _core() if tracer_module._ACCEL is not None else None

SCALARS = st.one_of(
    st.integers(min_value=-(10**6) - 5, max_value=10**6 + 5),
    st.integers(),
    st.text(max_size=70),
    st.text(alphabet=st.characters(), max_size=8).map(lambda t: "/pytest-of-u/pytest-3/" + t),
    st.sampled_from(["\ud800", "x\udfff", "é", "", "pytest-of-"]),
    # Any code point, lone surrogates included (an undecodable byte of a file name, #50).
    st.text(st.characters(exclude_categories=()), max_size=20),
    st.sampled_from(["/tmp/tmpabcdefgh/x", "<f at 0x7f00>", "<Mock id='3'>", "/var/tmpabcdefgh"]),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
)


@settings(max_examples=400, deadline=None)
@given(SCALARS)
def test_summaries_are_the_python_ones(value: object) -> None:
    assert CORE is not None
    first = CORE.summarize(value)  # type: ignore[attr-defined]
    again = CORE.summarize(value)  # type: ignore[attr-defined]  # from the core's tables
    expected = (values.shape(value), values.canonical(value))
    assert first == expected
    assert again == expected
    assert type(first[0]) is str and type(first[1]) in (bytes, type(None))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=6)), max_size=40))
def test_bounded_sets_fill_and_overflow_like_the_python_ones(
    pairs: list[tuple[str, bytes | None]],
) -> None:
    assert CORE is not None
    python_side = values.BoundedValues(4)
    core_side = values.BoundedValues(4)
    for pair in pairs:
        python_side.add_pair(pair)
        CORE.add_pair(core_side, pair)  # type: ignore[attr-defined]
    digester = values.Digester(b"d" * 32)
    assert core_side.export(digester) == python_side.export(digester)
    assert (core_side._count, core_side._sum) == (python_side._count, python_side._sum)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=100, max_size=300), st.none() | st.binary(max_size=400)),
        min_size=1,
        max_size=6,
    )
)
def test_overflow_hashes_of_forms_across_blocks_agree_with_hashlib(
    pairs: list[tuple[str, bytes | None]],
) -> None:
    """The core hashes overflowing forms with its own BLAKE2b (128-byte blocks, the tag and
    the form fed apart): every length around and past a block must give hashlib's digest."""
    assert CORE is not None
    python_side = values.BoundedValues(0)
    core_side = values.BoundedValues(0)
    for pair in pairs:
        python_side.add_pair(pair)
        CORE.add_pair(core_side, pair)  # type: ignore[attr-defined]
    assert (core_side._count, core_side._sum) == (python_side._count, python_side._sum)


def test_the_fingerprint_wraps_modulo_two_to_the_64() -> None:
    assert CORE is not None
    python_side = values.BoundedValues(0)
    core_side = values.BoundedValues(0)
    python_side._sum = core_side._sum = (1 << 64) - 1
    for pair in (("int", b"i1;"), ("str", None)):
        python_side.add_pair(pair)
        CORE.add_pair(core_side, pair)  # type: ignore[attr-defined]
    assert core_side._sum == python_side._sum < (1 << 64)
    assert core_side._count == python_side._count == 2


NAMES = ["ab12cd34", "zz_9xy01", "q1w2e3r4"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(NAMES), st.text(max_size=6), st.sampled_from(["x", "-", "."])),
        max_size=6,
    ).map("".join)
)
def test_text_holding_a_tempfile_name_is_summarised_like_python(text: str) -> None:
    """Names ``tempfile`` made are rewritten anywhere in a text, without a marker: the core
    must hand every such text to Python (its bitmap may send more, never fewer)."""
    from diffgenome.recording.collect import stable

    for name in NAMES:
        stable.learn_tempfile_name(name)
    try:
        assert CORE is not None
        expected = (values.shape(text), values.canonical(text))
        assert CORE.summarize(text) == expected  # type: ignore[attr-defined]
        if any(name in text for name in NAMES):
            assert b"<random>" in (expected[1] or b"")
    finally:
        stable.tempfile_names().clear()
        stable.TEMPFILE_NAME_BITS[:] = bytes(len(stable.TEMPFILE_NAME_BITS))


# -- objects: the memo of plain classes, and everything else the core hands to Python --------

CALLED: list[str] = []


def _hostile(name: str) -> object:
    def method(self: object, *args: object, **kwargs: object) -> object:
        CALLED.append(name)
        raise RuntimeError(f"hostile {name} called")

    method.__name__ = name
    return method


_DUNDERS = (
    "__repr__", "__str__", "__format__", "__eq__", "__ne__", "__lt__", "__hash__", "__bool__",
    "__len__", "__iter__", "__contains__", "__getitem__", "__index__", "__int__", "__float__",
    "__reduce__", "__reduce_ex__", "__sizeof__", "__dir__", "__getattr__", "__setattr__",
    "__delattr__", "__getstate__",
)  # fmt: skip


def _hostile_class(name: str, base: type = object, extra: tuple[str, ...] = ()) -> type:
    return type(name, (base,), {d: _hostile(d) for d in (*_DUNDERS, *extra)})


class _Meta(type):
    pass


for _name in (
    "__getattribute__", "__getattr__", "__repr__", "__instancecheck__", "__subclasscheck__",
    "__eq__", "__hash__", "__len__", "__iter__", "__bool__",
):  # fmt: skip
    setattr(_Meta, _name, _hostile(_name))

Hostile = _hostile_class("Hostile")
Sneaky = _hostile_class("Sneaky", extra=("__getattribute__",))
HList = _hostile_class("HList", list)
HDict = _hostile_class("HDict", dict)
HStr = _hostile_class("HStr", str)
HInt = _hostile_class("HInt", int)
HTuple = _hostile_class("HTuple", tuple)
MetaHostile = _Meta("MetaHostile", (), {})


class Plain:
    def __init__(self, x: object) -> None:
        self.x = x


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a: object) -> None:
        self.a = a


class TokenType(tuple[object, ...]):
    """Like sqlparse's _TokenType: a tuple subclass that is no namedtuple."""

    parent = None


@dataclasses.dataclass
class Point:
    x: object
    y: object = 0


@dataclasses.dataclass(slots=True, frozen=True)
class SlotPoint:
    x: object


class Color(enum.Enum):
    RED = 1
    BLUE = "b"


class Flag(enum.IntFlag):
    A = 1
    B = 2


Pair = collections.namedtuple("Pair", "a b")

LEAVES = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.integers(),
    st.text(max_size=70),
    st.sampled_from(["\ud800", "é", "/tmp/pytest-of-u/x", "<Mock id='3'>"]),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True),
    st.binary(max_size=8),
    st.builds(bytearray, st.binary(max_size=4)),
    st.complex_numbers(allow_nan=True),
    # Standard-library value types: values.py writes their forms, the core hands them over.
    st.timedeltas(),
    st.dates(),
    st.datetimes(timezones=st.none() | st.timezones() | st.just(datetime.UTC)),
    st.times(timezones=st.none() | st.just(datetime.timezone(datetime.timedelta(hours=-3)))),
    st.decimals(allow_nan=True, places=None),
    st.uuids(),
    st.fractions(),
    st.sampled_from([zoneinfo.ZoneInfo("Europe/Paris"), datetime.UTC]),
)


class Later(datetime.datetime):
    """A subclass of a value type: its methods may be overridden, so no form."""


STDLIB_VALUES = st.one_of(
    st.timedeltas(),
    st.datetimes(timezones=st.none() | st.timezones()),
    st.decimals(allow_nan=True),
    st.uuids(),
    st.fractions(),
    st.just(Later(2024, 1, 1)),
)


@settings(max_examples=300, deadline=None)
@given(STDLIB_VALUES | st.lists(STDLIB_VALUES, max_size=4))
def test_standard_library_values_are_summarised_like_python(value: object) -> None:
    assert CORE is not None
    expected = (values.shape(value), values.canonical(value))
    assert CORE.summarize(value) == expected  # type: ignore[attr-defined]
    assert CORE.summarize(value) == expected  # type: ignore[attr-defined]
    if type(value) is Later:
        assert expected[1] is None
    elif type(value) is not list:
        assert expected[1] is not None


def _objects(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(
        st.builds(Plain, inner),
        st.builds(Slotted, inner),
        st.builds(Point, inner, inner),
        st.builds(SlotPoint, inner),
        st.builds(Pair, inner, inner),
        st.builds(lambda items: TokenType(items), st.lists(inner, max_size=3)),
        st.sampled_from([Color.RED, Color.BLUE, Flag.A, Flag.A | Flag.B]),
        st.sampled_from([Plain, len, lambda: 0, iter([]), object()]),
    )


def _containers(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(
        st.lists(inner, max_size=20),
        st.lists(inner, max_size=10).map(tuple),
        st.dictionaries(st.one_of(st.integers(), st.text(max_size=4)), inner, max_size=6),
        st.frozensets(st.integers(), max_size=5),
        st.sets(st.text(max_size=3), max_size=5),
        _objects(inner),
    )


VALUES = st.recursive(LEAVES | _objects(LEAVES), _containers, max_leaves=40)


def _summarised_alike(value: object) -> None:
    assert CORE is not None
    first = CORE.summarize(value)  # type: ignore[attr-defined]
    again = CORE.summarize(value)  # type: ignore[attr-defined]  # from the core's copies
    expected = (values.shape(value), values.canonical(value))
    assert first == expected
    assert again == expected


@settings(max_examples=600, deadline=None)
@given(VALUES)
def test_objects_and_containers_are_summarised_like_python(value: object) -> None:
    _summarised_alike(value)


BIG = st.one_of(
    st.lists(st.text(max_size=300), max_size=80),
    st.lists(st.binary(max_size=300), max_size=40).map(tuple),
    st.sets(st.integers(), max_size=80),
    st.frozensets(st.text(max_size=3), min_size=60, max_size=70),
    st.dictionaries(st.integers(), st.text(max_size=200), max_size=70),
    st.integers(min_value=0, max_value=8).map(lambda n: _nested(n)),
    st.text(min_size=4000, max_size=4200),
    st.lists(st.floats(allow_nan=True) | st.integers(min_value=-(2**64), max_value=2**64)),
)


def _nested(depth: int) -> object:
    value: object = [1, "a"]
    for level in range(depth):
        value = (value,) if level % 2 else [value, {"k": value}]
    return value


@settings(max_examples=300, deadline=None)
@given(BIG)
def test_bounds_are_met_where_python_meets_them(value: object) -> None:
    """Items, depth, bytes and shape lengths at and past values.py's bounds."""
    _summarised_alike(value)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["/tmp/pytest-of-u/x", "ab12cd34", "plain", 1]), max_size=5))
def test_text_that_stable_py_rewrites_inside_containers_is_pythons(items: list[object]) -> None:
    from diffgenome.recording.collect import stable

    stable.learn_tempfile_name("ab12cd34")
    try:
        _summarised_alike(items)
        _summarised_alike(tuple(items))
        _summarised_alike({str(i): item for i, item in enumerate(items)})
    finally:
        stable.tempfile_names().clear()
        stable.TEMPFILE_NAME_BITS[:] = bytes(len(stable.TEMPFILE_NAME_BITS))


HOSTILE = [Hostile, Sneaky, HList, HDict, HStr, HInt, HTuple, MetaHostile]


@pytest.mark.parametrize("which", range(8))
@pytest.mark.parametrize(
    "wrap",
    [
        lambda v: v,
        lambda v: [v],
        lambda v: (v, 1),
        lambda v: (1, "a", v),
        lambda v: {"k": v},
        lambda v: [Plain(1), v, None],
        lambda v: ((v,), [v]),
        lambda v: Point(v, v),
        lambda v: Pair(1, v),
    ],
)
def test_hostile_objects_are_summarised_without_running_their_code(
    which: int, wrap: object
) -> None:
    """Also once their class is in the memo of plain classes (the second round)."""
    make = HOSTILE[which]  # by index: pytest would look at a parameter's attributes
    values.reset_class_summaries()
    CALLED.clear()
    for _ in range(2):
        if make is HList:
            inner: object = make([1, 2])
        elif make is HDict:
            inner = make(a=1)
        elif make is HStr:
            inner = make("abc")
        elif make is HInt:
            inner = make(3)
        elif make is HTuple:
            inner = make((1, 2))
        else:
            inner = make()
        _summarised_alike_boxed(_Box(inner))
        _summarised_alike_boxed(_Box(wrap(inner)))  # type: ignore[operator]
    assert CALLED == []


class _Box:
    """Hands a hostile value on: pytest shows the arguments of failing frames."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<a hostile value>"


def _summarised_alike_boxed(box: _Box) -> None:
    assert CORE is not None
    for _ in range(2):
        assert CORE.summarize(box.value) == (  # type: ignore[attr-defined]
            values.shape(box.value),
            values.canonical(box.value),
        )


@pytest.mark.parametrize("phases", [1, 3])
def test_the_memo_of_plain_classes_is_per_phase(phases: int) -> None:
    """The core's copy of the memo follows values.py's: renamed between two phases (the
    memo reset), a class is seen under its new name."""
    cls = type("Before", (), {})
    for _ in range(phases):
        values.reset_class_summaries()
        assert CORE.summarize(cls())[0].endswith(".Before")  # type: ignore[attr-defined]
        assert CORE.summarize((cls(), 1)) == values.summarize((cls(), 1))  # type: ignore[attr-defined]
    cls.__qualname__ = "After"
    values.reset_class_summaries()
    assert CORE.summarize(cls())[0].endswith(".After")  # type: ignore[attr-defined]
    assert CORE.summarize([cls()]) == ("list[" + values.shape(cls()) + "]", None)  # type: ignore[attr-defined]


def test_a_class_changed_mid_phase_is_summarised_by_the_memo_everywhere() -> None:
    """Within a phase the memo is the definition: a class that becomes a namedtuple after
    its instances were seen keeps its memoised summary, alone and inside containers."""
    values.reset_class_summaries()
    cls = type("Late", (tuple,), {})
    before = CORE.summarize(cls((1, 2)))  # type: ignore[attr-defined]
    assert before == values.summarize(cls((1, 2)))
    cls._fields = ("a", "b")  # type: ignore[attr-defined]
    for value in (cls((1, 2)), (cls((1, 2)),), [cls((3, 4)), 1]):
        assert CORE.summarize(value) == (values.shape(value), values.canonical(value))  # type: ignore[attr-defined]
        assert values.summarize(value) == (values.shape(value), values.canonical(value))
    values.reset_class_summaries()
    fresh = CORE.summarize(cls((1, 2)))  # type: ignore[attr-defined]
    assert fresh == values.summarize(cls((1, 2))) != before
    assert fresh[1] is not None


# -- state: buckets and instance dicts ------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(VALUES | BIG)
def test_buckets_are_the_python_ones(value: object) -> None:
    assert CORE is not None
    expected = values.bucket(value)
    assert CORE.bucket(value) == expected  # type: ignore[attr-defined]
    assert CORE.bucket(value) == expected  # type: ignore[attr-defined]  # the class's copy


class WithDictProperty:
    @property
    def __dict__(self) -> dict[str, object]:  # type: ignore[override]
        CALLED.append("__dict__")
        return {}


class NonStrKeys:
    pass


def test_instance_dicts_are_read_as_reflect_reads_them() -> None:
    from diffgenome.recording.collect import reflect

    values.reset_class_summaries()
    odd = NonStrKeys()
    odd.__dict__[1] = 2  # type: ignore[index]
    samples: list[object] = [Plain(1), Slotted(1), Point(1, 2), SlotPoint(1), WithDictProperty()]
    samples += [odd, Pair(1, 2), Color.RED, object(), len, Plain, None, 1, TokenType((1,))]
    samples += [Hostile(), Sneaky(), MetaHostile(), HList([1]), HTuple((1,))]
    CALLED.clear()
    for sample in samples:
        assert CORE.instance_dict(_Box(sample).value) is ...  # type: ignore[attr-defined]
        expected = reflect.instance_dict(sample)  # makes reflect's memo entry
        for _ in range(2):
            got = CORE.instance_dict(sample)  # type: ignore[attr-defined]
            assert (got is None and expected is None) or got is expected
    assert CALLED == []


# ---- a call's values down the allocation-free path (#26.2) ---------------------------------


class _Plain:
    """Instances are the memo's (shape only): the path writes no form for them."""


class _Pláin:  # a class name that is not ASCII: the general path's
    pass


CALL_VALUES = st.one_of(
    st.integers(min_value=-20, max_value=20),
    st.integers(min_value=-(2**63) - 2, max_value=2**63 + 2),
    st.integers(),
    st.text(alphabet="abc:;", max_size=4),
    st.text(max_size=6),
    st.text(alphabet="xy", min_size=500, max_size=520),  # around the path's own form bound
    st.sampled_from(["/tmp/tmpabcdefgh/x", "<f at 0x7f00>", "pytest-of-"]),
    st.binary(max_size=4),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, width=16),
    st.builds(_Plain),
    st.builds(_Pláin),
    st.lists(st.integers(), max_size=2),
)
ARG_NAMES = st.sampled_from(["x", "value", "é", "_"])


def _python_frame(names: tuple[str, ...], items: tuple[object, ...]) -> object:
    """A real frame whose arguments are ``items`` under ``names``, for Tracer._record_args."""
    params = ", ".join(f"{name}{i}" for i, name in enumerate(names))
    namespace: dict[str, object] = {}
    exec(f"import sys\ndef call({params}):\n    return sys._getframe()\n", namespace)
    return namespace["call"](*items)  # type: ignore[operator]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=4),
    st.lists(
        st.lists(st.tuples(ARG_NAMES, CALL_VALUES), min_size=1, max_size=4).map(tuple),
        max_size=25,
    ),
)
def test_a_calls_values_are_added_like_the_python_callbacks_add_them(
    limit: int, calls: list[tuple[tuple[str, object], ...]]
) -> None:
    """Arguments and results through the core's own path (fast_add, or the general path for
    what it hands back) and through the Python callbacks' code (Tracer._record_args on a real
    frame; values.summarize and add_pair for a result) fill and overflow the bounded sets
    alike, byte for byte: kept pairs in order, overflow count and fingerprint, export."""
    assert CORE is not None
    core: Any = CORE
    values.reset_class_summaries()
    for kind in (_Plain, _Pláin):
        core.summarize(kind())  # the phase's memo knows them
    bounds = Bounds(args=limit, results=limit)
    tracer = Tracer(Scope("/nonexistent", [], []), values.Digester(b"k" * 32), bounds)
    python_node = Node(NODE_CALL, None, bounds)
    core_node = Node(NODE_CALL, None, bounds)
    took = 0
    for call in calls:
        names = tuple(name for name, _ in call)
        items = tuple(item for _, item in call)
        frame = _python_frame(names, items)
        code = frame.f_code
        info = CodeInfo(code, "call", "repo", "function", 1, "/x.py", None)
        tracer._record_args(python_node, info, frame)  # type: ignore[arg-type]
        took += core.add_values(core_node.args, info.arg_labels, items, False)
        for shape_only in (False, True):
            shape, form = values.summarize(items[0])
            python_node.results.add_pair((shape, None) if shape_only else (shape, form))
            core.add_values(core_node.results, None, items[:1], shape_only)
    digester = values.Digester(b"d" * 32)
    for python_side, core_side in (
        (python_node.args, core_node.args),
        (python_node.results, core_node.results),
    ):
        assert list(core_side._seen) == list(python_side._seen)
        assert (core_side._count, core_side._sum) == (python_side._count, python_side._sum)
        assert core_side.export(digester) == python_side.export(digester)
    assert took <= len(calls)


def test_the_allocation_free_path_takes_repeated_and_overflowing_scalars() -> None:
    """The path is used (not only agreed with): a repeated value and overflowing ints, strs,
    bytes and memo instances are taken by it; floats, containers and non-ASCII text are not."""
    assert CORE is not None
    core: Any = CORE
    values.reset_class_summaries()
    core.summarize(_Plain())
    kept = values.BoundedValues(2)
    labels = ("self=", "x=")
    assert not core.add_values(kept, labels, (_Plain(), 1), False)  # new: general path
    assert core.add_values(kept, labels, (_Plain(), 2), False)  # the same pair
    assert not core.add_values(kept, ("x=",), (1,), False)
    assert core.add_values(kept, ("x=",), (1,), False)
    for item in (5, -(2**40), "new", b"new", None, True, "y" * 400):
        assert core.add_values(kept, ("x=",), (item,), False), item
    for item in (2.5, [1], "é", 2**64):
        assert not core.add_values(kept, ("x=",), (item,), False), item
    assert kept._count == 11 and len(kept._seen) == 2


def test_the_overflow_hash_is_the_revision_6_polynomial_then_blake2b() -> None:
    """values.overflow_hash is part of values revision 6 (docs/protocol.md): a change to it
    changes every overflow digest, so its values are pinned here, and both regimes meet the
    core's."""
    import hashlib

    assert values.overflow_hash(b"ci1;") == 0x6713CB5BE464DE42
    assert values.overflow_hash(b"s") == 0x558C590B6DEE41AF
    long_form = b"c" + b"x" * 64  # 65 bytes: past the polynomial's regime
    assert values.overflow_hash(long_form) == int.from_bytes(
        hashlib.blake2b(long_form, digest_size=8).digest()
    )
    assert values.overflow_hash(b"c" + b"x" * 63) != int.from_bytes(
        hashlib.blake2b(b"c" + b"x" * 63, digest_size=8).digest()
    )
    assert CORE is not None
    for form in (b"", b"i1;", b"\x00", b"\x00\x00", b"y" * 62, b"y" * 63, b"y" * 64, b"z" * 300):
        python_side, core_side = values.BoundedValues(0), values.BoundedValues(0)
        python_side.add_pair(("str", form))
        CORE.add_pair(core_side, ("str", form))  # type: ignore[attr-defined]
        assert core_side._sum == python_side._sum == values.overflow_hash(b"c" + form)


def test_the_overflow_fingerprint_of_two_sets_with_equal_sums_differs() -> None:
    """Without the mixer the polynomial is linear, and {1, 4} and {2, 3} (forms `i1;`, `i4;`
    against `i2;`, `i3;`, whose chunks sum alike) would share a fingerprint."""
    assert CORE is not None
    sums = []
    for pair in ((1, 4), (2, 3)):
        bounded = values.BoundedValues(0)
        for number in pair:
            assert CORE.add_values(bounded, ("x=",), (number,), False)  # type: ignore[attr-defined]
        sums.append(bounded._sum)
    assert sums[0] != sums[1]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80), st.sampled_from(["int", "list[str]", "é"]))
def test_the_core_folds_any_form_or_shape_as_values_py_does(form: bytes, shape: str) -> None:
    assert CORE is not None
    for pair in ((shape, form), (shape, None)):
        python_side, core_side = values.BoundedValues(0), values.BoundedValues(0)
        for _ in range(2):
            python_side.add_pair(pair)
            CORE.add_pair(core_side, pair)  # type: ignore[attr-defined]
        assert (core_side._count, core_side._sum) == (python_side._count, python_side._sum)
        assert core_side._overflow == python_side._overflow
