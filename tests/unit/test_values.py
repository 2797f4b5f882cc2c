"""Value summaries: canonical forms, digests, shapes, buckets and bounded sets.

The two promises under test: a summary is a deterministic function of the value alone (not of
the process, hash seed or Python version), and computing it never runs the value's own code.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import hashlib
import hmac
import json
import math
import os
import pickle
import struct
import subprocess
import sys
import tracemalloc
import types
import typing
import uuid
import warnings
import zoneinfo
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diffgenome.recording.collect import values as value_summaries
from diffgenome.recording.collect.values import (
    BoundedValues,
    Digester,
    bucket,
    canonical,
    shape,
)
from diffgenome.store.key import key_fingerprint

REPO = Path(__file__).resolve().parents[2]

# Types for generated values live in a synthetic module whose source is shipped to the
# subprocesses, so that parent and children agree on module and qualname.
FIXTURE_MODULE = "dg_values_fixture"
FIXTURE_SOURCE = """
import collections, dataclasses, enum, typing

class Color(enum.Enum):
    RED = 1
    GREEN = "g"

class Perm(enum.IntFlag):
    R = 4
    W = 2

Point = collections.namedtuple("Point", "x y")

class Pair(typing.NamedTuple):
    left: object
    right: object

@dataclasses.dataclass
class Box:
    item: object
    label: str = "box"

@dataclasses.dataclass(slots=True, frozen=True)
class Slot:
    a: object
"""


def _load_fixture() -> types.ModuleType:
    module = types.ModuleType(FIXTURE_MODULE)
    sys.modules[FIXTURE_MODULE] = module
    exec(FIXTURE_SOURCE, module.__dict__)
    return module


fx = sys.modules.get(FIXTURE_MODULE) or _load_fixture()

CHILD_SCRIPT = """
import json, pickle, sys, types
source = pickle.load(sys.stdin.buffer)
module = types.ModuleType("dg_values_fixture")
sys.modules["dg_values_fixture"] = module
exec(source, module.__dict__)
from diffgenome.recording.collect.values import bucket, canonical, shape
values = pickle.load(sys.stdin.buffer)
out = []
for value in values:
    form = canonical(value)
    out.append([None if form is None else form.hex(), shape(value), bucket(value)])
json.dump(out, sys.stdout)
"""


def summaries(values: list[object]) -> list[list[str | None]]:
    out: list[list[str | None]] = []
    for value in values:
        form = canonical(value)
        out.append([None if form is None else form.hex(), shape(value), bucket(value)])
    return out


def run_child(python: str, values: list[object], hash_seed: str) -> list[list[str | None]]:
    payload = pickle.dumps(FIXTURE_SOURCE) + pickle.dumps(values)
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [python, "-c", CHILD_SCRIPT],
        input=payload,
        capture_output=True,
        env=env,
        cwd=REPO,
        check=True,
    )
    result: list[list[str | None]] = json.loads(done.stdout)
    return result


# --- strategies and a reference equality -----------------------------------------------------

hashable_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.complex_numbers(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
    | st.binary(max_size=6)
    | st.sampled_from([*fx.Color, fx.Perm.R, fx.Perm.W, fx.Perm.R | fx.Perm.W])
)
scalars = hashable_scalars | st.binary(max_size=6).map(bytearray)
hashables = st.recursive(
    hashable_scalars,
    lambda inner: (
        st.tuples(inner, inner)
        | st.frozensets(inner, max_size=3)
        | st.builds(fx.Point, inner, inner)
        | st.builds(fx.Slot, inner)
    ),
    max_leaves=6,
)
values = st.recursive(
    scalars | hashables,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(hashables, inner, max_size=3)
        | st.sets(hashables, max_size=4)
        | st.frozensets(hashables, max_size=4)
        | st.builds(fx.Pair, inner, inner)
        | st.builds(fx.Box, inner, st.text(max_size=3))
    ),
    max_leaves=14,
)


def _fields(value: Any) -> list[tuple[str, object]]:
    if dataclasses.is_dataclass(value):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    return list(zip(type(value)._fields, value, strict=True))


def _matching(left: list[Any], right: list[Any], eq: Any) -> bool:
    """Multiset equality under an equivalence relation."""
    if len(left) != len(right):
        return False
    rest = list(right)
    for item in left:
        for i, other in enumerate(rest):
            if eq(item, other):
                del rest[i]
                break
        else:
            return False
    return True


def strict_eq(a: object, b: object) -> bool:
    """Type-strict equality: 1 != 1.0 != True, -0.0 != 0.0, all NaNs equal."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        assert isinstance(b, float)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, complex):
        assert isinstance(b, complex)
        return strict_eq(a.real, b.real) and strict_eq(a.imag, b.imag)
    if isinstance(a, enum.Enum):
        return a is b
    if dataclasses.is_dataclass(a) or hasattr(type(a), "_fields"):
        return _matching(_fields(a), _fields(b), strict_eq) and all(
            strict_eq(x, y) for x, y in zip(_fields(a), _fields(b), strict=True)
        )
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple)
        return len(a) == len(b) and all(strict_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return _matching(
            list(a.items()),
            list(b.items()),
            lambda p, q: strict_eq(p[0], q[0]) and strict_eq(p[1], q[1]),
        )
    if isinstance(a, set | frozenset):
        assert isinstance(b, set | frozenset)
        return _matching(list(a), list(b), strict_eq)
    return a == b


def container_depth(value: object) -> int:
    if isinstance(value, enum.Enum):
        return 0
    if dataclasses.is_dataclass(value) or hasattr(type(value), "_fields"):
        return 1 + max([container_depth(v) for _, v in _fields(value)], default=0)
    if isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = list(value)
    else:
        return 0
    return 1 + max([container_depth(v) for v in items], default=0)


def rebuilt(value: Any) -> Any:
    """An equal value built from fresh objects with dicts and sets filled in reverse order."""
    if isinstance(value, enum.Enum):
        return value
    cls: Any = type(value)
    if dataclasses.is_dataclass(value):
        return cls(*[rebuilt(v) for _, v in _fields(value)])
    if hasattr(cls, "_fields"):
        return cls(*[rebuilt(v) for v in value])
    if isinstance(value, list):
        return [rebuilt(v) for v in value]
    if isinstance(value, tuple):
        return tuple(rebuilt(v) for v in value)
    if isinstance(value, dict):
        return {rebuilt(k): rebuilt(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, set | frozenset):
        return type(value)(rebuilt(v) for v in reversed(list(value)))
    if isinstance(value, bytearray):
        return bytearray(value)
    if isinstance(value, float):
        return struct.unpack("<d", struct.pack("<d", value))[0]
    return value


# --- canonical: format and type tags ---------------------------------------------------------


def test_canonical_format_is_pinned() -> None:
    # The byte format is compared across commits and machines: changing it silently would make
    # every digest in every stored genome read as "changed".
    assert canonical(None) == b"N"
    assert canonical(True) == b"T"
    assert canonical(False) == b"F"
    assert canonical(255) == b"iff;"
    assert canonical(-1) == b"i-1;"
    assert canonical(1.5) == b"f0x1.8000000000000p+0;"
    assert canonical(-0.0) == b"f-0x0.0p+0;"
    assert canonical(float("nan")) == b"fnan;"
    assert canonical(1j) == b"c0x0.0p+0;0x1.0000000000000p+0;"
    assert canonical("hé") == b"s3:h\xc3\xa9"
    assert canonical(b"ab") == b"b2:ab"
    assert canonical(bytearray(b"ab")) == b"y2:ab"
    assert canonical([1, "a"]) == b"l2:i1;s1:a"
    assert canonical((1,)) == b"t1:i1;"
    assert canonical({"b": 1, "a": 2}) == b"d2:s1:ai2;s1:bi1;"
    assert canonical({3, 1}) == b"S2:i1;i3;"
    assert canonical(frozenset()) == b"z0:"
    assert canonical(fx.Color.RED) == b"e23:dg_values_fixture.Color3:RED"
    assert canonical(fx.Point(1, 2)) == b"n23:dg_values_fixture.Point4:s1:xi1;s1:yi2;"
    assert canonical(fx.Box(None)) == b"D21:dg_values_fixture.Box4:s4:itemNs5:labels3:box"


def test_standard_library_value_forms_are_pinned() -> None:
    """Values revision 2 (docs/protocol.md): the standard library's value types by the fields
    that make them, under a ``v``-tag naming the type."""
    utc = datetime.UTC
    assert canonical(datetime.timedelta(days=-1, seconds=5, microseconds=7)) == (
        b"v18:datetime.timedelta-1;5;7;"
    )
    assert canonical(datetime.date(2024, 1, 2)) == b"v13:datetime.date7e8;1;2;"
    assert canonical(datetime.datetime(2024, 1, 2, 3, 4, 5, 6)) == (
        b"v17:datetime.datetime7e8;1;2;3;4;5;6;0;N"
    )
    assert canonical(datetime.datetime(2024, 1, 2, tzinfo=utc)) == (
        b"v17:datetime.datetime7e8;1;2;0;0;0;0;0;v17:datetime.timezone0;0;0;3:UTC"
    )
    berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    assert canonical(datetime.time(1, 2, fold=1, tzinfo=berlin)) == (
        b"v13:datetime.time1;2;0;0;1;v17:zoneinfo.ZoneInfo13:Europe/Berlin"
    )
    assert canonical(decimal.Decimal("1.10")) == b"v15:decimal.Decimal4:1.10"
    assert canonical(uuid.UUID(int=255)) == b"v9:uuid.UUIDff;"
    assert canonical(fractions.Fraction(-3, 4)) == b"v18:fractions.Fraction-3;4;"
    assert canonical([datetime.timedelta(0)]) == b"l1:v18:datetime.timedelta0;0;0;"


def test_standard_library_values_differ_where_they_mean_something_else() -> None:
    """A changed deadline, amount or id is a changed form; so is what Python calls equal but
    behaves otherwise (an aware time in another zone, 1.10 against 1.1)."""
    utc, plus_one = datetime.UTC, datetime.timezone(datetime.timedelta(hours=1))
    noon = datetime.datetime(2024, 1, 1, 12, tzinfo=utc)
    distinct: list[object] = [
        datetime.timedelta(seconds=30),
        datetime.timedelta(seconds=31),
        datetime.timedelta(days=30),
        datetime.date(2024, 1, 1),
        datetime.date(2024, 1, 2),
        datetime.datetime(2024, 1, 1),
        noon,
        noon.astimezone(plus_one),  # the same instant, == noon
        datetime.datetime(2024, 1, 1, 12, tzinfo=zoneinfo.ZoneInfo("UTC")),
        datetime.time(12),
        datetime.time(12, tzinfo=utc),
        decimal.Decimal("1.10"),
        decimal.Decimal("1.1"),
        decimal.Decimal("NaN"),
        decimal.Decimal("sNaN"),
        decimal.Decimal("-0"),
        uuid.UUID(int=1),
        uuid.UUID(int=2),
        fractions.Fraction(1, 3),
        fractions.Fraction(2, 3),
        utc,
        plus_one,
        datetime.timezone(datetime.timedelta(hours=1), "CET"),
        "2024-01-01",
        30,
    ]
    forms = [canonical(v) for v in distinct]
    assert None not in forms
    assert len(set(forms)) == len(distinct)
    assert canonical(noon) == canonical(datetime.datetime(2024, 1, 1, 12, tzinfo=utc))


def test_decimal_forms_do_not_follow_the_context() -> None:
    value = decimal.Decimal("1E+5")
    with decimal.localcontext() as context:
        context.capitals = 0
        assert str(value) == "1e+5"
        assert canonical(value) == b"v15:decimal.Decimal4:1E+5"


def test_standard_library_values_without_a_readable_form() -> None:
    """Subclasses (their methods may be overridden: freezegun's FakeDatetime) and time zones
    that compute their offsets in their own code have no form; neither has what holds them."""

    class FakeDatetime(datetime.datetime):
        pass

    class Zone(datetime.tzinfo):
        def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
            raise AssertionError("never called")

    class MyDecimal(decimal.Decimal):
        pass

    for value in (
        FakeDatetime(2024, 1, 1),
        datetime.datetime(2024, 1, 1, tzinfo=Zone()),
        datetime.time(1, tzinfo=Zone()),
        MyDecimal("1"),
        [datetime.date(2024, 1, 1), FakeDatetime(2024, 1, 1)],
    ):
        assert canonical(value) is None, value
        assert shape(value)
    # The class is remembered as plain (no form) only for the subclass, never for the type.
    value_summaries.reset_class_summaries()
    assert value_summaries.summarize(FakeDatetime(2024, 1, 1))[1] is None
    assert value_summaries.summarize(datetime.datetime(2024, 1, 1))[1] is not None


def test_type_tags_keep_look_alike_values_apart() -> None:
    look_alikes: list[object] = [
        1,
        1.0,
        True,
        1 + 0j,
        "1",
        b"1",
        bytearray(b"1"),
        [1],
        (1,),
        {1},
        frozenset({1}),
        {1: None},
        fx.Point(1, None),
        fx.Pair(1, None),
        fx.Box(1, ""),
        0,
        False,
        None,
        "",
        b"",
        [],
        (),
        {},
        set(),
        frozenset(),
        "N",
        [None],
        fx.Color.RED,
        fx.Perm.R,
        4,
    ]
    forms = [canonical(v) for v in look_alikes]
    assert None not in forms
    assert len(set(forms)) == len(look_alikes)


def test_float_edge_cases() -> None:
    assert canonical(0.0) != canonical(-0.0)
    payload_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]
    nans = [float("nan"), -float("nan"), float("inf") - float("inf"), payload_nan]
    assert {canonical(n) for n in nans} == {b"fnan;"}
    assert canonical(float("inf")) != canonical(float("-inf"))
    assert canonical(complex(0.0, -0.0)) != canonical(complex(0.0, 0.0))


def test_lone_surrogates_are_canonicalised() -> None:
    assert canonical("\ud800") is not None
    assert canonical("\ud800") != canonical("\ud801")


# --- canonical: properties -------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(values)
def test_canonical_exists_exactly_within_the_depth_bound(value: object) -> None:
    assert (canonical(value) is None) == (container_depth(value) > 4)


@settings(max_examples=300, deadline=None)
@given(values, values)
def test_canonical_equal_exactly_for_type_strict_equal_values(a: object, b: object) -> None:
    ca, cb = canonical(a), canonical(b)
    if ca is None or cb is None:
        return
    assert (ca == cb) == strict_eq(a, b)


@settings(max_examples=300, deadline=None)
@given(values)
def test_canonical_ignores_identity_and_insertion_order(value: object) -> None:
    copy = rebuilt(value)
    assert strict_eq(value, copy)
    assert canonical(copy) == canonical(value)
    assert shape(copy) == shape(value)
    assert bucket(copy) == bucket(value)


@given(st.lists(st.text(max_size=5), max_size=20, unique=True), st.randoms(use_true_random=False))
def test_set_and_dict_order_does_not_matter(items: list[str], rnd: Any) -> None:
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert canonical(set(items)) == canonical(set(shuffled))
    assert canonical(frozenset(items)) == canonical(frozenset(shuffled))
    assert canonical(dict.fromkeys(items, 0)) == canonical(dict.fromkeys(shuffled, 0))


def _generated_values(count: int) -> list[object]:
    collected: list[object] = []

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(values)
    def collect(value: object) -> None:
        collected.append(value)

    collect()
    # Values hypothesis rarely builds but whose order depends most on the hash seed.
    collected.append({f"key{i}": i for i in range(40)})
    collected.append({f"member{i}" for i in range(40)})
    collected.append({frozenset({f"a{i}", f"b{i}"}) for i in range(10)})
    collected.append({f"s{i}" for i in range(60)} | {1, 2.5, b"x"})
    # Standard-library value types, whose forms read the C types' fields.
    collected.extend(
        [
            datetime.timedelta(days=-3, microseconds=9),
            datetime.datetime(2024, 2, 29, 23, 59, 59, 999999, fold=1),
            datetime.datetime(2024, 1, 1, tzinfo=zoneinfo.ZoneInfo("America/New_York")),
            datetime.time(8, tzinfo=datetime.timezone(-datetime.timedelta(hours=5), "EST")),
            datetime.date(1, 1, 1),
            decimal.Decimal("-1.50E-7"),
            decimal.Decimal("sNaN12"),
            uuid.UUID("12345678-1234-5678-1234-567812345678"),
            fractions.Fraction(-22, 7),
            {datetime.date(2024, 1, d): decimal.Decimal(d) for d in range(1, 9)},
        ]
    )
    return collected


def test_summaries_stable_across_processes_and_hash_seeds() -> None:
    sample = _generated_values(200)
    here = summaries(sample)
    assert any(row[0] is not None for row in here)
    assert run_child(sys.executable, sample, "1") == here
    assert run_child(sys.executable, sample, "4242") == here


def test_summaries_stable_across_python_versions() -> None:
    other = {(3, 12): ".venv-3.13", (3, 13): ".venv"}.get(sys.version_info[:2])
    python = REPO / other / "bin" / "python" if other else None
    if python is None or not python.exists():
        pytest.skip("the other supported interpreter is not installed")
    sample = _generated_values(150)
    assert run_child(str(python), sample, "7") == summaries(sample)


# --- canonical: bounds -----------------------------------------------------------------------


def nested(levels: int) -> object:
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


def test_depth_bound() -> None:
    assert canonical(nested(4)) is not None
    assert canonical(nested(5)) is None
    assert canonical({"a": {"b": {"c": (1,)}}}) is not None
    assert canonical({"a": {"b": {"c": (fx.Point(1, 2),)}}}) is None  # a namedtuple is a level
    loop: list[object] = []
    loop.append(loop)
    assert canonical(loop) is None


def test_item_bound() -> None:
    for build in (list, tuple, set, frozenset, lambda r: dict.fromkeys(r)):
        assert canonical(build(range(64))) is not None
        assert canonical(build(range(65))) is None


def test_size_bound_gives_none_not_a_partial_form() -> None:
    assert canonical("x" * 4000) is not None
    assert canonical("x" * 4094) is None  # the tag and length prefix push it over 4096
    assert canonical(["x" * 100] * 30) is not None
    assert canonical(["x" * 100] * 50) is None
    assert canonical({f"{i:03}" + "y" * 100: i for i in range(40)}) is None
    assert canonical(2**1000) is not None
    assert canonical(10**5000) is None
    assert canonical(b"\0" * 5000) is None


@pytest.mark.parametrize(
    "build",
    [
        lambda: list(range(10**6)),
        lambda: tuple(range(10**6)),
        lambda: set(range(10**6)),
        lambda: dict.fromkeys(range(10**6)),
        lambda: [list(range(10**6))],
        lambda: "x" * 10**6,
        lambda: b"x" * 10**6,
        lambda: 1 << (8 * 10**6),
    ],
)
def test_huge_values_are_refused_with_bounded_memory(build: Any) -> None:
    value = build()
    tracemalloc.start()
    try:
        form = canonical(value)
        summary = (shape(value), bucket(value))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert form is None
    assert summary[0]
    assert peak < 64 * 1024


def test_unsupported_item_makes_the_whole_value_none() -> None:
    assert canonical([1, object()]) is None
    assert canonical({"a": object()}) is None
    assert canonical(fx.Box(object())) is None
    assert canonical({1: 2, object(): 3}) is None


# --- canonical: objects ----------------------------------------------------------------------


def test_enum_members() -> None:
    assert canonical(fx.Color.RED) != canonical(fx.Color.GREEN)
    assert canonical(fx.Perm.R) != canonical(4)
    assert canonical(fx.Perm.R | fx.Perm.W) not in (canonical(fx.Perm.R), canonical(fx.Perm.W))

    class Color(enum.Enum):  # same member names, other class
        RED = 1

    assert canonical(Color.RED) != canonical(fx.Color.RED)


def test_dataclasses() -> None:
    @dataclasses.dataclass
    class Order:
        qty: int
        tags: list[str] = dataclasses.field(default_factory=list)
        cache: dict[str, int] = dataclasses.field(default_factory=dict, compare=False)
        kind: typing.ClassVar[str] = "order"

        @property
        def total(self) -> int:
            raise AssertionError("a property that is not a field must not be read")

    assert canonical(Order(1)) == canonical(Order(1))
    assert canonical(Order(1)) != canonical(Order(2))
    assert canonical(Order(1, ["a"])) != canonical(Order(1))
    assert canonical(Order(1, cache={"k": 1})) != canonical(Order(1))  # state, not __eq__
    assert b"kind" not in (canonical(Order(1)) or b"")

    @dataclasses.dataclass(slots=True)
    class Slotted:
        a: int
        b: int = dataclasses.field(init=False)

    unset = Slotted(1)
    assert canonical(unset) is None  # a field without a value: no partial form
    unset.b = 2
    assert canonical(unset) is not None
    assert canonical(fx.Slot(1)) != canonical(fx.Slot(2))

    @dataclasses.dataclass
    class Counted(int):
        note: object = ""

    assert canonical(Counted(5)) is None  # the int payload is no field


def test_namedtuples() -> None:
    assert canonical(fx.Point(1, 2)) != canonical((1, 2))
    assert canonical(fx.Point(1, 2)) != canonical(fx.Pair(1, 2))
    assert canonical(fx.Pair(1, [2])) != canonical(fx.Pair(1, [3]))

    class Extended(fx.Point):  # type: ignore[misc, name-defined]
        pass

    plain = Extended(1, 2)
    assert canonical(plain) is not None
    plain.extra = 3
    assert canonical(plain) is None  # extra instance state a digest would miss


def test_builtin_subclasses_are_refused() -> None:
    class MyInt(int):
        pass

    class MyStr(str):
        pass

    class MyDict(dict[str, int]):
        pass

    class MyTuple(tuple[int, ...]):
        pass

    value: object
    for value in (MyInt(1), MyStr("a"), MyDict(a=1), MyTuple((1,)), collections.OrderedDict()):
        assert canonical(value) is None
    assert canonical(collections.defaultdict(int)) is None


# --- hostile objects -------------------------------------------------------------------------

CALLS: list[str] = []
DUNDERS = [
    "__repr__",
    "__str__",
    "__format__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__bool__",
    "__len__",
    "__iter__",
    "__contains__",
    "__getitem__",
    "__getattr__",
    "__getattribute__",
    "__setattr__",
    "__dir__",
    "__reduce__",
    "__reduce_ex__",
    "__sizeof__",
    "__index__",
    "__int__",
    "__float__",
    "__bytes__",
    "__fspath__",
    "__get__",
    "__set__",
]


def hostile(name: str) -> Any:
    def method(*args: object, **kwargs: object) -> Any:
        CALLS.append(name)
        raise RuntimeError(f"user code ran: {name}")

    return method


def hostile_namespace(*names: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {name: hostile(name) for name in names}
    namespace["__class__"] = property(hostile("__class__"))
    return namespace


def hostile_class(name: str, *bases: type, extra: tuple[str, ...] = ()) -> type:
    return type(name, bases or (object,), hostile_namespace(*DUNDERS, *extra))


class HostileMeta(type):
    __module__ = property(hostile("meta.__module__"))
    __mro__ = property(hostile("meta.__mro__"))
    __dict__ = property(hostile("meta.__dict__"))  # type: ignore[misc]
    __name__ = property(hostile("meta.__name__"))
    __bases__ = property(hostile("meta.__bases__"))
    __getattribute__ = hostile("meta.__getattribute__")
    __getattr__ = hostile("meta.__getattr__")
    __eq__ = hostile("meta.__eq__")
    __hash__ = hostile("meta.__hash__")
    __repr__ = hostile("meta.__repr__")
    __instancecheck__ = hostile("meta.__instancecheck__")
    __subclasscheck__ = hostile("meta.__subclasscheck__")
    __len__ = hostile("meta.__len__")
    __iter__ = hostile("meta.__iter__")


class Guarded(metaclass=HostileMeta):
    pass


class CollidingKey:
    """A class-namespace key whose hash equals the names a lookup in that namespace uses."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        CALLS.append("CollidingKey.__eq__")  # no raise: building the namespace compares too
        return False


class HostileColor(enum.Enum):
    RED = 1
    BLUE = 2


# Enum creation itself reads attributes of the members: make them hostile afterwards.
for _name in ("__repr__", "__eq__", "__hash__", "__getattribute__", "__getattr__", "__bool__"):
    setattr(HostileColor, _name, hostile(f"enum.{_name}"))


@dataclasses.dataclass(eq=False, repr=False)
class LoudRecord:
    """A dataclass whose dunders all run user code: fields are still read from storage."""

    a: int
    b: str

    __repr__ = hostile("LoudRecord.__repr__")
    __eq__ = hostile("LoudRecord.__eq__")
    __hash__ = hostile("LoudRecord.__hash__")
    __len__ = hostile("LoudRecord.__len__")
    __iter__ = hostile("LoudRecord.__iter__")
    __bool__ = hostile("LoudRecord.__bool__")


@dataclasses.dataclass
class ProxyRecord:
    a: int

    __getattr__ = hostile("ProxyRecord.__getattr__")


@dataclasses.dataclass
class Account:
    """The property-named field idiom: field ``owner`` is stored as ``_owner`` by a setter."""

    owner: str
    _owner: str = dataclasses.field(init=False, repr=False, default="")

    @property  # type: ignore[no-redef]
    def owner(self) -> str:
        CALLS.append("Account.owner")
        raise RuntimeError("user code ran")

    @owner.setter
    def owner(self, value: str) -> None:
        self._owner = value


@dataclasses.dataclass
class Shadowed:
    """A property over a field that is also in the instance dict: the property wins."""

    owner: str

    @property  # type: ignore[no-redef]
    def owner(self) -> str:
        CALLS.append("Shadowed.owner")
        raise RuntimeError("user code ran")

    @owner.setter
    def owner(self, value: str) -> None:
        vars(self)["owner"] = value


@dataclasses.dataclass
class DictProperty:
    a: int

    __dict__ = property(hostile("DictProperty.__dict__"))


class HostileDict(dict[str, object]):
    __getitem__ = hostile("HostileDict.__getitem__")
    __contains__ = hostile("HostileDict.__contains__")
    __iter__ = hostile("HostileDict.__iter__")
    get = hostile("HostileDict.get")


@dataclasses.dataclass
class SwappedDict:
    a: int


class LoudPoint(collections.namedtuple("LoudPoint", "x y")):
    __slots__ = ()
    __iter__ = hostile("LoudPoint.__iter__")
    __len__ = hostile("LoudPoint.__len__")
    __getitem__ = hostile("LoudPoint.__getitem__")
    __getattribute__ = hostile("LoudPoint.__getattribute__")
    __eq__ = hostile("LoudPoint.__eq__")
    __hash__ = hostile("LoudPoint.__hash__")
    __repr__ = hostile("LoudPoint.__repr__")


def hostile_values() -> list[tuple[object, bool]]:
    """(value, whether it is canonicalisable) -- built before the call counter is reset."""
    plain = hostile_class("Hostile")()
    swapped = SwappedDict(1)
    object.__setattr__(swapped, "__dict__", HostileDict(a=1))
    with warnings.catch_warnings():  # 3.13 warns about the non-str key, which is the point
        warnings.simplefilter("ignore", RuntimeWarning)
        colliding = type(
            "Colliding",
            (),
            {
                "__module__": "somewhere",
                CollidingKey("__module__"): 1,  # type: ignore[dict-item]
                CollidingKey("__dataclass_fields__"): 2,  # type: ignore[dict-item]
                CollidingKey("__dict__"): 3,  # type: ignore[dict-item]
            },
        )
    return [
        (plain, False),
        ([1, plain], False),
        ({"k": plain}, False),
        ((plain,), False),
        (hostile_class("HInt", int)(3), False),
        (hostile_class("HStr", str)("s"), False),
        (hostile_class("HBytes", bytes)(b"s"), False),
        (hostile_class("HFloat", float)(1.5), False),
        (hostile_class("HList", list)([1, 2]), False),
        (hostile_class("HDict", dict)(a=1), False),
        (hostile_class("HTuple", tuple)((1, 2)), False),
        (hostile_class("HSet", set)({1}), False),
        (hostile_class("HFrozen", frozenset)({1}), False),
        (Guarded(), False),
        (Guarded, False),
        ([Guarded(), Guarded], False),
        (colliding(), False),
        (HostileColor.RED, True),
        ([HostileColor.BLUE], True),
        (LoudRecord(1, "x"), True),
        (ProxyRecord(1), False),
        (Account("me"), False),
        (Shadowed("me"), False),
        (DictProperty(1), False),
        (swapped, False),
        (LoudPoint(1, 2), True),
        ({"p": LoudPoint(1, [2])}, True),
    ]


def test_nothing_of_the_value_runs() -> None:
    cases = hostile_values()
    digester = Digester(b"k" * 32)
    bounded = BoundedValues(limit=4)
    CALLS.clear()
    for value, supported in cases:
        form = canonical(value)
        assert (form is not None) == supported
        assert 0 < len(shape(value)) <= 120
        assert bucket(value)
        digester.digest_value(value)
        bounded.add(shape(value), form)
    bounded.export(digester)
    assert CALLS == []


def test_hostile_summaries_are_still_informative() -> None:
    cases = dict(enumerate(hostile_values()))
    CALLS.clear()
    module = __name__
    assert shape(cases[0][0]) == f"{module}.Hostile"
    assert bucket(cases[0][0]) == f"type:{module}.Hostile"
    assert shape(cases[1][0]) == f"list[int|{module}.Hostile]"
    assert shape(cases[4][0]) == f"{module}.HInt"
    assert bucket(cases[4][0]) == f"type:{module}.HInt"
    assert shape(Guarded()) == f"{module}.Guarded"
    # The metaclass's own __module__ is a property in its namespace: unknown, not computed.
    assert shape(Guarded) == "?.HostileMeta"
    assert bucket(HostileColor.RED) == "enum:HostileColor.RED"
    assert canonical(HostileColor.RED) != canonical(HostileColor.BLUE)
    assert canonical(LoudRecord(1, "x")) != canonical(LoudRecord(1, "y"))
    assert canonical(LoudPoint(1, 2)) != canonical(LoudPoint(2, 1))
    assert shape(cases[16][0]) == "?.Colliding"  # a lookup in its namespace could run __eq__
    assert CALLS == []


def test_metaclass_hazard_is_real() -> None:
    # Why shape() reads type.__dict__ descriptors: the obvious spelling runs the metaclass.
    CALLS.clear()
    with pytest.raises(RuntimeError):
        type.__getattribute__(Guarded, "__module__")
    assert CALLS == ["meta.__module__"]
    CALLS.clear()
    assert shape(Guarded()) == f"{__name__}.Guarded"
    assert CALLS == []


def test_mocks_are_neither_called_nor_believed() -> None:
    magic = mock.MagicMock()
    spec_int = mock.Mock(spec=int)
    assert isinstance(spec_int, int)  # what an isinstance-based summary would believe
    for value in (magic, spec_int, mock.NonCallableMagicMock(), [magic]):
        assert canonical(value) is None
    assert shape(magic) == "unittest.mock.MagicMock"
    assert shape(spec_int) == "unittest.mock.Mock"
    assert shape(mock.NonCallableMagicMock()) == "unittest.mock.NonCallableMagicMock"
    assert bucket(spec_int) == "type:unittest.mock.Mock"
    assert magic.mock_calls == []
    magic_methods: Any = magic
    assert not magic_methods.__len__.called
    assert not magic_methods.__iter__.called
    assert not magic_methods.__eq__.called
    assert not magic_methods.__bool__.called
    assert spec_int.mock_calls == []


# --- digests ---------------------------------------------------------------------------------


def test_digest_is_truncated_hmac_sha256() -> None:
    key = b"0123456789abcdef" * 2
    expected = hmac.new(key, b"i1;", hashlib.sha256).hexdigest()[:32]
    assert Digester(key).digest(b"i1;") == expected
    assert Digester(key).digest_value(1) == expected
    assert Digester(key).digest_value(object()) is None
    with pytest.raises(TypeError):
        Digester("not bytes")  # type: ignore[arg-type]


@given(st.binary(min_size=1, max_size=40), st.binary(min_size=1, max_size=40), values)
def test_digest_depends_on_the_key(key1: bytes, key2: bytes, value: object) -> None:
    form = canonical(value)
    if form is None or key1 == key2:
        return
    one, two = Digester(key1).digest(form), Digester(key2).digest(form)
    assert len(one) == 32
    assert one != two


@given(st.binary(max_size=8), st.binary(max_size=8))
def test_key_fingerprint(key1: bytes, key2: bytes) -> None:
    fingerprint = key_fingerprint(key1)
    assert fingerprint.startswith("hmac-sha256:")
    assert len(fingerprint) == len("hmac-sha256:") + 16
    # HMAC pads a key shorter than its block with zero bytes: keys that differ only in
    # trailing zeros are one key to HMAC, for digests and fingerprint alike (hypothesis
    # found b"" and b"\x00").
    same_key = key1.rstrip(b"\0") == key2.rstrip(b"\0")
    assert (fingerprint == key_fingerprint(key2)) == same_key
    assert (Digester(key1).digest(b"x") == Digester(key2).digest(b"x")) == same_key
    # Domain-separated: neither the plain hash of the key nor a digest made with it.
    assert hashlib.sha256(key1).hexdigest()[:16] not in fingerprint
    assert Digester(key1).digest(b"")[:16] not in fingerprint


# --- shape and bucket ------------------------------------------------------------------------


def test_shape_examples() -> None:
    assert shape(None) == "None"
    assert shape(True) == "bool"
    assert shape(1) == "int"
    assert shape(1.0) == "float"
    assert shape("a") == "str"
    assert shape(b"a") == "bytes"
    assert shape([1, 2]) == "list[int]"
    assert shape([1, "a", 2]) == "list[int|str]"
    assert shape([1, "a", 2.0, None]) == "list[...]"
    assert shape([1, "a", 2.0, True]) == "list[...]"
    assert shape([1, "a", None]) == "list[None|int|str]"
    assert shape([]) == "list[]"
    assert shape({}) == "dict[]"
    assert shape(()) == "tuple[]"
    assert shape(set()) == "set[]"
    assert shape({"a": 1}) == "dict[str,int]"
    assert shape({"a": 1, 2: "b"}) == "dict[int|str,int|str]"
    assert shape((1, "a")) == "tuple[int,str]"
    assert shape(tuple(range(8))) == "tuple[" + ",".join(["int"] * 8) + "]"
    assert shape(tuple(range(9))) == "tuple[...]"
    assert shape({1, 2}) == "set[int]"
    assert shape(frozenset({"a"})) == "frozenset[str]"
    assert shape([[1], ["a"]]) == "list[list[int]|list[str]]"
    assert shape([[[1]]]) == "list[list[list[...]]]"
    assert shape(fx.Color.RED) == "dg_values_fixture.Color"
    assert shape(fx.Point(1, 2)) == "dg_values_fixture.Point"
    assert shape(object()) == "builtins.object"
    assert shape(len) == "builtins.builtin_function_or_method"


def test_shape_looks_at_the_first_16_items_of_a_list() -> None:
    assert shape([1] * 16 + ["a"]) == "list[int]"
    assert shape([1] * 15 + ["a"]) == "list[int|str]"


def test_shape_is_bounded() -> None:
    long_class = type("C" * 300, (), {})
    assert shape(long_class()) == (__name__ + "." + "C" * 300)[:117] + "..."
    wide = type("W" * 100, (), {})
    assert len(shape(wide())) <= 120
    assert shape([wide(), 1]) == "list[...]"  # too long to spell: said, not cut
    assert shape({"k": wide()}) == "dict[...]"
    narrow = type("N" * 20, (), {})
    assert shape({"k": narrow()}) == f"dict[str,{__name__}.{'N' * 20}]"


@settings(max_examples=200, deadline=None)
@given(values)
def test_shape_is_always_bounded(value: object) -> None:
    assert 0 < len(shape(value)) <= 120


def test_bucket_examples() -> None:
    assert bucket(None) == "none"
    assert bucket(True) == "bool:true"
    assert bucket(False) == "bool:false"
    assert bucket(0) == "zero"
    assert bucket(-0.0) == "zero"
    assert bucket(3) == "pos"
    assert bucket(-2.5) == "neg"
    assert bucket(float("nan")) == "nan"
    assert bucket(float("-inf")) == "neg"
    assert bucket("") == "empty"
    assert bucket(b"x") == "nonempty"
    assert bucket([]) == "empty"
    assert bucket({"a": 1}) == "one"
    assert bucket((1, 2)) == "many"
    assert bucket(frozenset()) == "empty"
    assert bucket(fx.Color.GREEN) == "enum:Color.GREEN"
    assert bucket(fx.Perm.R) == "enum:Perm.R"
    assert bucket(fx.Point(1, 2)) == "type:dg_values_fixture.Point"
    assert bucket(1j) == "type:builtins.complex"

    class Sub(int):
        pass

    assert bucket(Sub(0)) == f"type:{__name__}.{Sub.__qualname__}"


# --- bounded sets ----------------------------------------------------------------------------

KEY = b"bounded-values-key-0123456789abc"


def filled(limit: int, observations: Sequence[tuple[str, bytes | None]]) -> BoundedValues:
    bounded = BoundedValues(limit)
    for shape_, form in observations:
        bounded.add(shape_, form)
    return bounded


def test_bounded_values_keep_the_first_distinct_entries() -> None:
    digester = Digester(KEY)
    observed = [("int", b"i%x;" % i) for i in (5, 1, 5, 3, 9, 1, 7)]
    entries, overflow = filled(3, observed).export(digester)
    kept = [("int", b"i5;"), ("int", b"i1;"), ("int", b"i3;")]
    assert entries == sorted(
        ({"shape": s, "digest": digester.digest(f)} for s, f in kept),
        key=lambda e: (e["shape"], e["digest"]),
    )
    assert overflow is not None
    assert overflow["count"] == 2  # 9 and 7; repeats of kept values are not overflow


def test_bounded_values_without_overflow() -> None:
    entries, overflow = filled(4, [("str", None), ("str", None), ("int", b"i1;")]).export(
        Digester(KEY)
    )
    assert overflow is None
    assert entries[0]["shape"] == "int"
    assert entries[1] == {"shape": "str", "digest": None}
    assert filled(4, []).export(Digester(KEY)) == ([], None)


forms = st.one_of(st.none(), st.binary(max_size=6))
observations = st.lists(st.tuples(st.sampled_from(["int", "str", "list[int]"]), forms))


@given(observations, st.randoms(use_true_random=False))
def test_overflow_digest_is_order_independent(extra: list[Any], rnd: Any) -> None:
    head = [("int", b"i1;"), ("int", b"i2;")]
    shuffled = list(extra)
    rnd.shuffle(shuffled)
    digester = Digester(KEY)
    one = filled(2, head + extra).export(digester)
    two = filled(2, head + shuffled).export(digester)
    assert one == two
    if any((s, f) not in head for s, f in extra):
        assert one[1] is not None


@given(observations.filter(bool), st.data())
def test_overflow_digest_changes_with_one_value(extra: list[Any], data: Any) -> None:
    head = [("int", b"i1;")]
    extra = [(s, f) for s, f in extra if (s, f) != head[0]]
    if not extra:
        return
    index = data.draw(st.integers(0, len(extra) - 1))
    shape_, form = extra[index]
    changed = list(extra)
    changed[index] = (shape_, (form or b"") + b"\x01")
    digester = Digester(KEY)
    _, before = filled(1, head + extra).export(digester)
    _, after = filled(1, head + changed).export(digester)
    assert before is not None and after is not None
    assert before["count"] == after["count"]
    assert before["digest"] != after["digest"]


def test_overflow_counts_every_observation() -> None:
    digester = Digester(KEY)
    head = [("int", b"i1;")]
    _, once = filled(1, [*head, ("int", b"i2;")]).export(digester)
    _, twice = filled(1, [*head, ("int", b"i2;"), ("int", b"i2;")]).export(digester)
    assert once is not None and twice is not None
    assert (once["count"], twice["count"]) == (1, 2)
    assert once["digest"] != twice["digest"]
    _, other_key = filled(1, [*head, ("int", b"i2;")]).export(Digester(b"another key"))
    assert other_key is not None and other_key["digest"] != once["digest"]
    # Values without a canonical form are folded by shape.
    _, by_shape = filled(1, [*head, ("str", None)]).export(digester)
    _, other_shape = filled(1, [*head, ("bytes", None)]).export(digester)
    assert by_shape is not None and other_shape is not None
    assert by_shape["digest"] != other_shape["digest"]


# -- per-class summaries ---------------------------------------------------------------------


class _Plain:
    def __init__(self, n: int) -> None:
        self.n = n


@dataclasses.dataclass
class _Point:
    x: int


class _Color(enum.Enum):
    RED = 1
    BLUE = 2


_Pair = collections.namedtuple("_Pair", "a b")


def test_summaries_equal_shape_and_canonical_with_the_class_memo() -> None:
    """The memo only ever answers for classes whose instances all summarise alike."""
    value_summaries.reset_class_summaries()
    samples: list[object] = [
        _Point(object()),  # no canonical form for this instance only: must not stick to _Point
        _Pair(object(), 1),
        _Plain(1),
        _Plain(2),
        _Point(1),
        _Point(2),
        _Color.RED,
        _Color.BLUE,
        _Pair(1, 2),
        _Pair(3, 4),
        "s",
        7,
        [1],
        (1, "a"),
        {"k": 1},
        frozenset({1}),
        1.5,
        None,
        True,
        mock.Mock(),
        type("Dyn", (), {}),
    ]
    for _ in range(2):  # the second round answers from the memo where it may
        for sample in samples:
            assert value_summaries.summarize(sample) == (shape(sample), canonical(sample)), sample
    carriers = (_Point(1), _Point(2), _Color.RED, _Color.BLUE)
    digests = {value_summaries.summarize(p)[1] for p in carriers}
    assert len(digests) == 4  # data-carrying instances are never folded by class


def test_class_memo_is_per_phase() -> None:
    """A class renamed between two phases is seen under its new name in the second one."""
    cls = type("Before", (), {})
    value_summaries.reset_class_summaries()
    assert value_summaries.summarize(cls())[0].endswith(".Before")
    cls.__qualname__ = "After"
    value_summaries.reset_class_summaries()
    assert value_summaries.summarize(cls())[0].endswith(".After")


# -- stable text -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("/tmp/tmplsc1pjhz/fake-repo", "/tmp/tmp_ra7uen9/fake-repo"),
        ("run /tmp/tmpe_ra7uen.sh", "run /tmp/tmpabcdefgh.sh"),
        ("<function f at 0x7f7fedef7920>", "<function f at 0x7f00aa000010>"),
        ("<Mock name='m.url' id='140187427486416'>", "<Mock name='m.url' id='9'>"),
        (
            "<MagicMock id='1'> and /tmp/pytest-of-a/pytest-1/x",
            "<MagicMock id='2'> and /tmp/pytest-of-b/pytest-9/x",
        ),
    ],
)
def test_run_specific_noise_is_made_stable(one: str, other: str) -> None:
    assert canonical(one) == canonical(other)
    assert value_summaries.stable_text(one) == value_summaries.stable_text(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("/tmp/tmplsc1pjhz/fake-repo", "/tmp/tmplsc1pjhz/other-repo"),
        ("<function f at 0x7f7fedef7920>", "<function g at 0x7f7fedef7920>"),
        ("<Mock name='m.url' id='1'>", "<Mock name='m.path' id='1'>"),
        ("/tmp/tmpfile_is_short", "/tmp/tmpfile_is_shorT"),  # not a tempfile name
        ("id='12'", "id='13'"),  # not inside a mock repr
    ],
)
def test_stable_text_keeps_every_other_difference(one: str, other: str) -> None:
    assert canonical(one) != canonical(other)


def test_every_rewrite_is_announced_by_a_marker() -> None:
    """The compiled core digests text without a marker itself: a rewrite whose text holds no
    marker would make the two cores disagree."""
    samples = [
        "/tmp/tmplsc1pjhz",
        "/var/x/tmpabcdefgh.sh",
        "<object object at 0x7f00>",
        "<NonCallableMagicMock name='x' id='5'>",
        "/tmp/pytest-of-u/pytest-3/popen-gw1",
    ]
    for text in samples:
        assert value_summaries.stable_text(text) != text
        assert any(marker in text for marker in value_summaries.STR_MARKERS)


def test_an_exception_has_a_form_of_its_class_and_args() -> None:
    """Values revision 5: what a call raises is among its results, so a changed message is
    a changed value; an exception that holds more than its args keeps its shape only."""

    class Holds(Exception):
        def __init__(self, message: str) -> None:
            super().__init__(message)
            self.code = 3

    class Lies(Exception):
        @property
        def args(self) -> tuple[object, ...]:  # type: ignore[override]
            raise AssertionError("user code must not run")

    canonical = value_summaries.canonical
    first, second = canonical(ValueError("too large")), canonical(ValueError("x"))
    assert first is not None and second is not None and first != second
    assert canonical(ValueError("too large")) == first
    assert canonical(KeyError("too large")) != first
    assert value_summaries.form_end(first) == len(first)
    assert canonical(Holds("m")) is None
    assert canonical(ValueError(object())) is None
    assert canonical(Lies("m")) is not None  # read through BaseException's descriptor
