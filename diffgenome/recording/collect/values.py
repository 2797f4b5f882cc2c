"""Summaries of argument values, results and state that never keep a raw value.

The recorder must say *that* a function saw a different value under a new commit without
writing the value into an export that may be shared (values are secrets, personal data, tokens).
So a value is reduced to three things:

* ``shape``: a bounded type description (``"list[int|str]"``, ``"dict[str,int]"``,
  ``"pkg.mod.Class"``), at most 120 characters;
* ``bucket``: a low-cardinality class for state facts (``"zero"``, ``"empty"``,
  ``"enum:Color.RED"``);
* ``canonical``: a type-tagged byte form that is only ever *digested* (HMAC-SHA256 under a
  per-run key, truncated to 128 bits). HMAC rather than a plain hash because most interesting
  values are short (``0``, ``"admin"``, a four-digit PIN): an unkeyed hash of them is reversed
  by enumeration, a keyed one is not without the key. ``store.key.key_fingerprint`` lets a
  reader tell which digests are comparable without revealing the key (it is only as strong as
  the key, so keys must be long and random).

What is canonicalised: ``None``, ``bool``, ``int``, ``float`` (``float.hex``; ``-0.0`` differs
from ``0.0``; every NaN has one form), ``complex``, ``str``, ``bytes``, ``bytearray``, *exact*
``list``/``tuple``/``dict``/``set``/``frozenset`` of canonicalisable items (set items and dict
items sorted by their canonical bytes, so iteration order and hash seed do not matter), enum
members (class ``module.qualname`` and member name), namedtuples and dataclass instances (class
``module.qualname``, field names and values), and (values revision 2, docs/protocol.md) the
standard library's value types, exact classes only: ``timedelta``, ``date``, ``datetime``,
``time``, ``timezone``, ``zoneinfo.ZoneInfo``, ``Decimal``, ``UUID``, ``Fraction`` (a ``v`` tag,
the type's name, the fields that make the value: a datetime's zone must be one of these or
none), and (values revision 5) exceptions: their class's ``module.qualname`` and their
``args``, unless the instance holds attributes of its own. Every form carries a type tag, so
``1``, ``1.0``, ``True``, ``"1"`` and ``(1,)`` all differ; equality is therefore
*type-strict* (``{1: 0}`` and ``{1.0: 0}`` differ although Python calls them equal).

Bounds: at most 4 nested container levels (dataclasses and namedtuples count as containers),
at most 64 items per container, at most 4096 canonical bytes in total. Anything beyond a bound,
or of any other type, gives ``None``: the caller then stores no digest at all rather than a
digest of a truncated form, because two different values with the same truncated form would
read as "unchanged" in a diff.

No user code ever runs. A tracer that calls ``__eq__``, ``__repr__`` or a property would change
the behaviour it records (and could raise, recurse into itself or deadlock). Hence:

* types are tested by identity (``type(v) is int``), never with ``isinstance`` (which consults
  ``__class__``, so ``Mock(spec=int)`` passes it) and never as dict keys (a metaclass may
  define ``__hash__``/``__eq__``);
* a subclass of a builtin that is not an enum member or a namedtuple gives ``None``: its
  methods, and so its meaning, may be overridden;
* classes and instance dicts are read as reflect.py reads them (descriptors taken from
  ``type.__dict__``, never attribute access); slot fields through the exact ``__slots__``
  member descriptors found in the class dicts;
* a dataclass whose class (other than ``object``) defines ``__getattribute__`` or
  ``__getattr__`` gives ``None``: its attributes are virtual (proxies, lazy objects), so its
  stored fields may not be what the code sees. We would not call them either way. The same
  holds for a field whose class attribute is a descriptor (a property named like a field): the
  code sees the property's result, which we cannot compute without running it.

Dataclasses contribute *all* their fields (also ``compare=False`` ones): the digest describes
state, not ``__eq__``. Extra instance attributes of a namedtuple subclass give ``None``.
Object ids, addresses and other memory-dependent values never enter a canonical form.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import fractions
import hashlib
import hmac
import math
import struct
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import Any, Final

from diffgenome.recording.collect import stable
from diffgenome.recording.collect.reflect import (
    HEAPTYPE,
    MISSING,
    Member,
    class_dicts,
    fields_of,
    forget_classes,
    is_descriptor,
    lookup,
    qualified_name,
    type_bases,
    type_dict,
    type_flags,
    type_mro,
    type_name,
    type_qualname,
)

__all__ = [
    "BoundedValues",
    "Digester",
    "bucket",
    "canonical",
    "shape",
    "type_name",
]

MAX_DEPTH: Final = 4
MAX_ITEMS: Final = 64
MAX_BYTES: Final = 4096
MAX_SHAPE: Final = 120
DIGEST_HEX: Final = 32

# Captured at import: tests patch module globals, the recorder must not notice.
_hmac_digest: Final = hmac.digest
_blake2b: Final = hashlib.blake2b
_isnan: Final = math.isnan
_islice: Final = islice

_Enum: Final = enum.Enum
# The standard library's value types, as they are now: freezegun and others replace
# ``datetime.datetime`` in its module, and what they put there is a subclass (no form).
_timedelta: Final = datetime.timedelta
_date: Final = datetime.date
_datetime: Final = datetime.datetime
_time: Final = datetime.time
_timezone: Final = datetime.timezone
_utcoffset: Final = datetime.timezone.utcoffset
_tzname: Final = datetime.timezone.tzname
_Decimal: Final = decimal.Decimal
_decimal_text: Final = decimal.Decimal.__str__
_UUID: Final = uuid.UUID
_uuid_int: Final = uuid.UUID.__dict__["int"]  # the slot itself: UUID.int is a plain member
_Fraction: Final = fractions.Fraction
_numerator: Final = fractions.Fraction.__dict__["_numerator"]
_denominator: Final = fractions.Fraction.__dict__["_denominator"]
# zoneinfo is not imported here: importing it reads PYTHONTZPATH and sysconfig once and for
# all, which the program under test may want to do later. An instance of its ZoneInfo
# exists only once the program imported it: then the class is found in sys.modules.
_modules: Final = sys.modules
_module_dict: Final[Any] = vars(type(sys))["__dict__"]  # the getset: reads md_dict
#: ``[ZoneInfo, its key descriptor]`` once found.
_zoneinfo_class: list[object] = []
_Field: Final = dataclasses.Field
_FIELD_KIND: Final = getattr(dataclasses, "_FIELD", None)


# --- canonical -------------------------------------------------------------------------------


# Run- and location-specific text is made stable before digesting: see stable.py.
STR_MARKERS: Final = stable.FIXED_MARKERS
stable_text = stable.stable_text


def _str_form(text: str) -> bytes:
    text = stable_text(text)
    raw = text.encode("utf-8", "surrogatepass")
    return b"%d:" % len(raw) + raw


def _float_form(number: float) -> bytes:
    if _isnan(number):
        return b"nan;"
    return number.hex().encode("ascii") + b";"


def _sequence_form(
    tag: bytes, items: Iterator[object], n: int, depth: int, budget: int
) -> bytes | None:
    parts = [tag, b"%d:" % n]
    budget -= len(tag) + len(parts[1])
    for item in items:
        form = _enc(item, depth + 1, budget)
        if form is None:
            return None
        budget -= len(form)
        parts.append(form)
    return b"".join(parts)


def _sorted_form(tag: bytes, forms: list[bytes]) -> bytes:
    forms.sort()
    return tag + b"%d:" % len(forms) + b"".join(forms)


def _enc(value: object, depth: int, budget: int) -> bytes | None:
    """Self-delimiting canonical form of ``value`` in at most ``budget`` bytes, else None."""
    out: bytes | None
    if value is None:
        out = b"N"
    elif type(value) is bool:
        out = b"T" if value else b"F"
    elif type(value) is int:
        if value.bit_length() > budget * 4:
            return None
        out = b"i%x;" % value
    elif type(value) is float:
        out = b"f" + _float_form(value)
    elif type(value) is str:
        if len(value) > budget:
            return None
        out = b"s" + _str_form(value)
    elif type(value) is bytes or type(value) is bytearray:
        if len(value) > budget:
            return None
        tag = b"b" if type(value) is bytes else b"y"
        out = tag + b"%d:" % len(value) + bytes(value)
    elif type(value) is complex:
        out = b"c" + _float_form(value.real) + _float_form(value.imag)
    elif type(value) is list or type(value) is tuple:
        if len(value) > MAX_ITEMS or depth >= MAX_DEPTH:
            return None
        tag = b"l" if type(value) is list else b"t"
        out = _sequence_form(tag, iter(value), len(value), depth, budget)
    elif type(value) is dict:
        if len(value) > MAX_ITEMS or depth >= MAX_DEPTH:
            return None
        out = _pairs_form(value, depth, budget)
    elif type(value) is set or type(value) is frozenset:
        if len(value) > MAX_ITEMS or depth >= MAX_DEPTH:
            return None
        out = _members_form(b"S" if type(value) is set else b"z", value, depth, budget)
    elif id(type(value)) in _VALUE_TYPE_IDS:
        out = _value_type_form(value, type(value))
    else:
        kind = type(value)
        known = _PLAIN_SUMMARY.get(id(kind))
        if known is not None and known[0] is kind:
            return None  # the phase's memo: see summarize
        if _is_exception(kind):
            out = _exception_form(value, kind, depth, budget)
        elif _is_zoneinfo(kind):
            out = _zone_form(value)
        else:
            out = _object_form(value, kind, depth, budget)
    if out is None or len(out) > budget:
        return None
    return out


def _head(name: str) -> bytes:
    """The tag of a standard-library value type: ``v`` and its name as a str form (made at
    import, so never rewritten by stable.py)."""
    raw = name.encode("ascii")
    return b"v%d:" % len(raw) + raw


_TIMEDELTA_HEAD: Final = _head("datetime.timedelta")
_DATE_HEAD: Final = _head("datetime.date")
_DATETIME_HEAD: Final = _head("datetime.datetime")
_TIME_HEAD: Final = _head("datetime.time")
_TIMEZONE_HEAD: Final = _head("datetime.timezone")
_ZONEINFO_HEAD: Final = _head("zoneinfo.ZoneInfo")
_DECIMAL_HEAD: Final = _head("decimal.Decimal")
_UUID_HEAD: Final = _head("uuid.UUID")
_FRACTION_HEAD: Final = _head("fractions.Fraction")
#: Exact classes (by id: a class as a dict key could run a metaclass's ``__eq__``) whose
#: instances have a form of their own; their subclasses have none (their methods may be
#: overridden: freezegun's ``FakeDatetime``, pandas' ``Timestamp``). ``ZoneInfo`` is one too
#: (``_is_zoneinfo``), found once the program has imported it.
_VALUE_TYPE_IDS: Final = frozenset(
    id(t) for t in (_timedelta, _date, _datetime, _time, _timezone, _Decimal, _UUID, _Fraction)
)


#: Their shapes (``type_name``: ``module.qualname``).
_VALUE_TYPE_NAMES: Final = {
    id(t): t.__module__ + "." + t.__qualname__
    for t in (_timedelta, _date, _datetime, _time, _timezone, _Decimal, _UUID, _Fraction)
}


def _delta_body(delta: datetime.timedelta) -> bytes:
    return b"%x;%x;%x;" % (delta.days, delta.seconds, delta.microseconds)


def _zone_form(zone: object) -> bytes | None:
    """A time zone that says what it is without running user code: ``None``, a fixed
    ``datetime.timezone`` (its offset and name), a ``zoneinfo.ZoneInfo`` by its key. Any other
    ``tzinfo`` (pytz, dateutil) computes its offsets in its own code: None."""
    if zone is None:
        return b"N"
    last = _last_zone[0]  # one read: another thread may replace it meanwhile
    if last[0] is zone:  # both kinds are immutable: the same object, the same form
        return last[1]
    kind = type(zone)
    form: bytes | None = None
    if kind is _timezone:
        offset = _utcoffset(zone, None)  # type: ignore[arg-type]
        name = _tzname(zone, None)  # type: ignore[arg-type]
        if type(offset) is _timedelta and type(name) is str:
            form = _TIMEZONE_HEAD + _delta_body(offset) + _raw_text(name)
    elif _is_zoneinfo(kind):
        key = _zoneinfo_class[1].__get__(zone, kind)  # type: ignore[attr-defined]
        if type(key) is str:  # None: made from a file, known by no name
            form = _ZONEINFO_HEAD + _raw_text(key)
    if form is not None:
        _last_zone[0] = (zone, form)
    return form


#: The last time zone given a form, and that form (most aware values share one zone).
_last_zone: list[tuple[object, bytes | None]] = [(None, None)]


def _raw_text(text: str) -> bytes:
    """A name's text form, as ``_str_form`` writes it but not made stable (a zone's name
    holds no path)."""
    raw = text.encode("utf-8", "surrogatepass")
    return b"%d:" % len(raw) + raw


def _is_zoneinfo(kind: type) -> bool:
    """Whether ``kind`` is ``zoneinfo.ZoneInfo`` itself (read from the loaded module's dict:
    no attribute of a module, a class or a patched ``sys.modules`` entry is looked up)."""
    if _zoneinfo_class:
        return kind is _zoneinfo_class[0]
    module = _modules.get("zoneinfo")
    try:
        found = _module_dict.__get__(module).get("ZoneInfo")
    except TypeError:  # not a module
        return False
    if found is not kind:
        return False
    key = type_dict(kind).get("key")
    if type(key) is not Member:  # the C type's slot; the pure-Python fallback has no form
        return False
    _zoneinfo_class[:] = [kind, key]
    return True


def _value_type_form(value: object, kind: type) -> bytes | None:
    """The form of an instance of one of the exact classes of ``_VALUE_TYPE_IDS``: the fields
    that make the value, read from the C type (or the slot) without running user code."""
    if kind is _timedelta:
        return _TIMEDELTA_HEAD + _delta_body(value)  # type: ignore[arg-type]
    if kind is _datetime:
        zone = _zone_form(value.tzinfo)  # type: ignore[attr-defined]
        if zone is None:
            return None
        fields = b"%x;%x;%x;%x;%x;%x;%x;%x;" % (
            value.year,  # type: ignore[attr-defined]
            value.month,  # type: ignore[attr-defined]
            value.day,  # type: ignore[attr-defined]
            value.hour,  # type: ignore[attr-defined]
            value.minute,  # type: ignore[attr-defined]
            value.second,  # type: ignore[attr-defined]
            value.microsecond,  # type: ignore[attr-defined]
            value.fold,  # type: ignore[attr-defined]
        )
        return _DATETIME_HEAD + fields + zone
    if kind is _date:
        return _DATE_HEAD + b"%x;%x;%x;" % (value.year, value.month, value.day)  # type: ignore[attr-defined]
    if kind is _time:
        zone = _zone_form(value.tzinfo)  # type: ignore[attr-defined]
        if zone is None:
            return None
        fields = b"%x;%x;%x;%x;%x;" % (
            value.hour,  # type: ignore[attr-defined]
            value.minute,  # type: ignore[attr-defined]
            value.second,  # type: ignore[attr-defined]
            value.microsecond,  # type: ignore[attr-defined]
            value.fold,  # type: ignore[attr-defined]
        )
        return _TIME_HEAD + fields + zone
    if kind is _Decimal:
        # As written, so 1.10 and 1.1 differ (they round and print differently); the
        # context's ``capitals`` only chooses between ``E`` and ``e``.
        text = _decimal_text(value).replace("e", "E")
        raw = text.encode("ascii")
        return _DECIMAL_HEAD + b"%d:" % len(raw) + raw
    if kind is _UUID:
        number = _uuid_int.__get__(value, _UUID)
        return _UUID_HEAD + b"%x;" % number if type(number) is int else None
    if kind is _Fraction:
        top = _numerator.__get__(value, _Fraction)
        bottom = _denominator.__get__(value, _Fraction)
        if type(top) is not int or type(bottom) is not int:
            return None
        return _FRACTION_HEAD + b"%x;%x;" % (top, bottom)
    if kind is _timezone:
        return _zone_form(value)
    return None  # pragma: no cover - every id of _VALUE_TYPE_IDS is handled above


def _pairs_form(value: dict[object, object], depth: int, budget: int) -> bytes | None:
    forms = []
    for key, item in value.items():
        key_form = _enc(key, depth + 1, budget)
        if key_form is None:
            return None
        budget -= len(key_form)
        item_form = _enc(item, depth + 1, budget)
        if item_form is None:
            return None
        budget -= len(item_form)
        forms.append(key_form + item_form)
    return _sorted_form(b"d", forms)


def _members_form(
    tag: bytes, value: set[object] | frozenset[object], depth: int, budget: int
) -> bytes | None:
    forms = []
    for item in value:
        form = _enc(item, depth + 1, budget)
        if form is None:
            return None
        budget -= len(form)
        forms.append(form)
    return _sorted_form(tag, forms)


#: ``BaseException.args`` read through the base's own descriptor: a subclass's ``args``
#: property (user code) is never run.
_EXCEPTION_ARGS: Final = BaseException.__dict__["args"]


def _is_exception(cls: type) -> bool:
    return any(klass is BaseException for klass in type_mro(cls))


def _exception_form(value: object, cls: type, depth: int, budget: int) -> bytes | None:
    """An exception by its class and its ``args`` (what its message is made of), tag ``x``
    (values revision 5: a call that raises keeps the exception among its results, so a
    changed message is a changed result). None when the instance holds attributes of its
    own (a digest of its args would miss them) or an argument has no form."""
    if depth >= MAX_DEPTH:
        return None
    dicts = class_dicts(cls)
    if dicts is None or fields_of(value, dicts):
        return None
    name = qualified_name(cls, None)
    if name is None:
        return None
    args = _EXCEPTION_ARGS.__get__(value, cls)
    if type(args) is not tuple or len(args) > MAX_ITEMS:
        return None
    return _sequence_form(b"x" + _str_form(name), iter(args), len(args), depth, budget)


def _object_form(value: object, cls: type, depth: int, budget: int) -> bytes | None:
    """Enum members, namedtuples and dataclass instances; None for everything else."""
    mro = type_mro(cls)
    dicts = class_dicts(cls)
    if dicts is None:
        return None
    is_enum = any(klass is _Enum for klass in mro)
    is_tuple = not is_enum and any(klass is tuple for klass in mro)
    fields = MISSING if is_enum or is_tuple else lookup(dicts, "__dataclass_fields__")
    if not (is_enum or is_tuple or type(fields) is dict):
        return None
    name = qualified_name(cls, None)
    if name is None:
        return None
    head = _str_form(name)
    if is_enum:
        inst = fields_of(value, dicts)
        if not inst:
            return None
        member = inst.get("_name_")
        if type(member) is str:
            out = b"e" + head + _str_form(member)
        elif type(inst.get("_value_")) is int:
            out = b"E" + head + b"%x;" % inst["_value_"]  # type: ignore[str-format]
        else:
            return None
        return out if len(out) <= budget else None
    if depth >= MAX_DEPTH:
        return None
    if is_tuple:
        return _namedtuple_form(value, mro, dicts, head, depth, budget)
    if type(fields) is not dict:  # pragma: no cover - excluded above; narrows the type
        return None
    return _dataclass_form(value, cls, mro, dicts, fields, head, depth, budget)


def _namedtuple_form(
    value: object,
    mro: tuple[type, ...],
    dicts: list[Mapping[object, object]],
    head: bytes,
    depth: int,
    budget: int,
) -> bytes | None:
    names = _namedtuple_fields(mro, dicts)
    if names is None:
        return None
    items = tuple.__getitem__(value, slice(0, None))  # type: ignore[call-overload]
    if len(items) != len(names) or len(items) > MAX_ITEMS:
        return None
    if fields_of(value, dicts):  # non-empty: extra state a digest would miss
        return None
    return _sequence_form(b"n" + head, _interleave(names, items), 2 * len(items), depth, budget)


def _namedtuple_fields(
    mro: tuple[type, ...], dicts: list[Mapping[object, object]]
) -> tuple[str, ...] | None:
    """The field names of a namedtuple class, or None when the class is not one."""
    names: object = MISSING
    for klass, ns in zip(mro, dicts, strict=True):
        if "_fields" in ns:
            # The class that declares _fields must be the namedtuple itself: a direct tuple child.
            bases = type_bases(klass)
            if len(bases) == 1 and bases[0] is tuple:
                names = ns["_fields"]
            break
    if type(names) is not tuple or any(type(name) is not str for name in names):
        return None
    return names


def _interleave(names: tuple[str, ...], items: tuple[object, ...]) -> Iterator[object]:
    for name, item in zip(names, items, strict=True):
        yield name
        yield item


def _dataclass_form(
    value: object,
    cls: type,
    mro: tuple[type, ...],
    dicts: list[Mapping[object, object]],
    fields: dict[object, object],
    head: bytes,
    depth: int,
    budget: int,
) -> bytes | None:
    for klass, ns in zip(mro, dicts, strict=True):
        if klass is object:
            continue
        # A builtin base (int, dict, BaseException, a C extension type) holds state no field shows.
        if not type_flags(klass) & HEAPTYPE:
            return None
        if "__getattribute__" in ns or "__getattr__" in ns:
            return None
    if len(fields) > MAX_ITEMS or _FIELD_KIND is None:  # no marker: cannot tell fields apart
        return None
    inst = fields_of(value, dicts)
    if inst is None:
        return None
    names: list[str] = []
    values: list[object] = []
    for name, spec in fields.items():
        if type(name) is not str or type(spec) is not _Field:
            return None
        if spec._field_type is not _FIELD_KIND:  # type: ignore[attr-defined]
            continue  # ClassVar / InitVar pseudo-fields hold no instance state
        found = _field_value(value, cls, dicts, inst, name)
        if found is MISSING:
            return None
        names.append(name)
        values.append(found)
    return _sequence_form(
        b"D" + head, _interleave(tuple(names), tuple(values)), 2 * len(names), depth, budget
    )


def _field_value(
    value: object,
    cls: type,
    dicts: list[Mapping[object, object]],
    inst: dict[str, object],
    name: str,
) -> object:
    """What ``value.<name>`` would give, or MISSING when computing it could run user code."""
    attr = lookup(dicts, name)
    if attr is not MISSING:
        if type(attr) is Member:
            try:
                return attr.__get__(value, cls)
            except AttributeError:  # slot never assigned
                return MISSING
        data = is_descriptor(attr, data_only=True)
        if data is None or data:
            return MISSING
    if name in inst:
        return inst[name]
    if attr is MISSING or is_descriptor(attr, data_only=False) is not False:
        return MISSING
    return attr  # a plain class-level default


def canonical(value: object) -> bytes | None:
    """The canonical bytes of ``value``, or None when it is not canonicalisable within bounds."""
    try:
        return _enc(value, 0, MAX_BYTES)
    except Exception:  # a container mutated by another thread mid-walk, MemoryError, ...
        return None


# --- reading forms back (previews) ---------------------------------------------------------


class FormError(ValueError):
    """Bytes that are not a canonical form (a preview is then not shown)."""


def _until(form: bytes, at: int, end: bytes) -> int:
    """The index just past the next ``end`` from ``at``."""
    stop = form.find(end, at)
    if stop < 0:
        raise FormError("unterminated")
    return stop + 1


def _counted(form: bytes, at: int) -> tuple[int, int]:
    """``<n>:`` at ``at``: n, and the index after the colon."""
    colon = _until(form, at, b":")
    text = form[at : colon - 1]
    if not text.isdigit():
        raise FormError("bad count")
    return int(text), colon


def _text_end(form: bytes, at: int) -> int:
    """The end of a ``<n>:<n bytes>`` text (a str's form without its tag)."""
    n, at = _counted(form, at)
    if at + n > len(form):
        raise FormError("short text")
    return at + n


def _items_end(form: bytes, at: int, items: int) -> int:
    for _ in range(items):
        at = form_end(form, at)
    return at


# Fields of each standard-library value type after its head: ``;``-ended numbers, then
# whether a time zone form follows, or a text (``_VALUE_TEXT``).
_VALUE_FIELDS: Final = {
    b"datetime.timedelta": (3, False),
    b"datetime.date": (3, False),
    b"datetime.datetime": (8, True),
    b"datetime.time": (5, True),
    b"uuid.UUID": (1, False),
    b"fractions.Fraction": (2, False),
}
_VALUE_TEXT: Final = {b"datetime.timezone": 3, b"zoneinfo.ZoneInfo": 0, b"decimal.Decimal": 0}


def form_end(form: bytes, at: int = 0) -> int:
    """The index just past the canonical form that starts at ``at`` (every form delimits
    itself); FormError for bytes that are none. The inverse walk of ``_enc``: a preview reads
    one argument's form out of a tuple's forms joined by a separator that a form may hold."""
    if at >= len(form):
        raise FormError("empty")
    tag = form[at : at + 1]
    at += 1
    if tag in (b"N", b"T", b"F"):
        return at
    if tag in (b"i", b"f"):
        return _until(form, at, b";")
    if tag == b"c":
        return _until(form, _until(form, at, b";"), b";")
    if tag in (b"s", b"b", b"y"):
        return _text_end(form, at)
    if tag in (b"l", b"t", b"S", b"z", b"d"):
        n, at = _counted(form, at)
        return _items_end(form, at, 2 * n if tag == b"d" else n)
    if tag == b"e":
        return _text_end(form, _text_end(form, at))
    if tag == b"E":
        return _until(form, _text_end(form, at), b";")
    if tag in (b"n", b"D", b"x"):
        n, at = _counted(form, _text_end(form, at))
        return _items_end(form, at, n)
    if tag == b"v":
        start = at
        at = _text_end(form, at)
        name = form[form.index(b":", start) + 1 : at]
        known = _VALUE_FIELDS.get(name)
        if known is not None:
            numbers, zone = known
            for _ in range(numbers):
                at = _until(form, at, b";")
            return form_end(form, at) if zone else at
        before_text = _VALUE_TEXT.get(name)
        if before_text is None:
            raise FormError("unknown value type")
        for _ in range(before_text):
            at = _until(form, at, b";")
        return _text_end(form, at)
    raise FormError("unknown tag")


#: The scalars a preview shows, by the tag of their form.
PREVIEW_TAGS: Final = frozenset(b"NTFifcs")


def scalar_of(form: bytes) -> object:
    """The value of a whole form of None, a bool, an int, a float, a complex number or a str
    (a str as it was digested: made stable by stable.py); FormError for any other form."""
    if not form or form[0] not in PREVIEW_TAGS or form_end(form) != len(form):
        raise FormError("not a scalar")
    tag, body = form[:1], form[1:]
    if tag == b"N":
        return None
    if tag in (b"T", b"F"):
        return tag == b"T"
    if tag == b"i":
        return int(body[:-1], 16)
    if tag == b"f":
        return _float_of(body[:-1])
    if tag == b"c":
        real, _, imag = body[:-1].partition(b";")
        return complex(_float_of(real), _float_of(imag))
    return body[body.index(b":") + 1 :].decode("utf-8", "surrogatepass")


def exception_of(form: bytes) -> tuple[str, list[object]]:
    """The class name and the scalar arguments of a whole exception form (tag ``x``, values
    revision 5); FormError for any other form, or an argument that is no scalar."""
    if not form or form[:1] != b"x" or form_end(form) != len(form):
        raise FormError("not an exception")
    end = _text_end(form, 1)
    name = form[form.index(b":", 1) + 1 : end].decode("utf-8", "surrogatepass")
    n, at = _counted(form, end)
    args: list[object] = []
    for _ in range(n):
        stop = form_end(form, at)
        args.append(scalar_of(form[at:stop]))
        at = stop
    return name, args


def _float_of(text: bytes) -> float:
    return float("nan") if text == b"nan" else float.fromhex(text.decode("ascii"))


# --- digests ---------------------------------------------------------------------------------


class Digester:
    """Keyed digests of canonical forms: comparable only between runs that share the key."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if type(key) is not bytes:
            raise TypeError("digest key must be bytes")
        self._key = key

    def digest(self, canonical: bytes) -> str:
        return _hmac_digest(self._key, canonical, "sha256").hex()[:DIGEST_HEX]

    def digest_value(self, value: object) -> str | None:
        form = canonical(value)
        return None if form is None else self.digest(form)


# --- shape -----------------------------------------------------------------------------------

_SCALARS: Final = (
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (str, "str"),
    (bytes, "bytes"),
    (complex, "complex"),
    (bytearray, "bytearray"),
)
# Items whose shapes are joined, by nesting level; deeper containers are not opened.
SHAPE_ITEMS: Final = (16, 4)
MAX_UNION: Final = 3


def _union(shapes: set[str]) -> str:
    if len(shapes) > MAX_UNION:
        return "..."
    return "|".join(sorted(shapes))


def _shape(value: object, depth: int) -> str:
    if value is None:
        return "None"
    t = type(value)
    for scalar, name in _SCALARS:
        if t is scalar:
            return name
    if type(value) is tuple:
        if len(value) > 8:
            return "tuple[...]"
        if depth >= len(SHAPE_ITEMS):
            return "tuple[...]" if value else "tuple[]"
        return _bounded("tuple", ",".join(_shape(item, depth + 1) for item in value))
    if type(value) is list:
        if depth >= len(SHAPE_ITEMS):
            return "list[...]" if value else "list[]"
        limit = SHAPE_ITEMS[depth]
        return _bounded("list", _union({_shape(item, depth + 1) for item in value[:limit]}))
    if type(value) is dict:
        if depth >= len(SHAPE_ITEMS):
            return "dict[...]" if value else "dict[]"
        if not value:
            return "dict[]"
        keys: set[str] = set()
        items: set[str] = set()
        for key, item in _islice(value.items(), SHAPE_ITEMS[depth]):
            keys.add(_shape(key, depth + 1))
            items.add(_shape(item, depth + 1))
        return _bounded("dict", _union(keys) + "," + _union(items))
    if type(value) is set or type(value) is frozenset:
        name = "set" if type(value) is set else "frozenset"
        # Set order follows the hash seed: only a scan of every item is reproducible.
        if depth >= len(SHAPE_ITEMS) or len(value) > SHAPE_ITEMS[depth] * 4:
            return name + "[...]" if value else name + "[]"
        return _bounded(name, _union({_shape(item, depth + 1) for item in value}))
    known = _PLAIN_SUMMARY.get(id(t))
    if known is not None and known[0] is t:
        return known[1][0]  # the phase's memo: see summarize
    out = type_name(t)
    return out if len(out) <= MAX_SHAPE else out[: MAX_SHAPE - 3] + "..."


def _bounded(name: str, inner: str) -> str:
    out = name + "[" + inner + "]"
    return out if len(out) <= MAX_SHAPE else name + "[...]"


def shape(value: object) -> str:
    """Bounded type shape of ``value`` (at most 120 characters); never runs user code.

    Lists and dicts show the union of their first 16 items' shapes (4 one level down; deeper
    containers show ``[...]``). A set shows the union of *all* its items when it has at most 64
    (16 one level down), else ``set[...]``: its first items depend on the hash seed, and a shape
    must not. A shape that would exceed 120 characters becomes ``name[...]``; a class name is cut.
    """
    try:
        return _shape(value, 0)
    except Exception:  # a container mutated by another thread mid-walk
        return "?"


# --- bucket ----------------------------------------------------------------------------------


def bucket(value: object) -> str:
    """Low-cardinality class of a state value; never runs user code."""
    try:
        return _bucket(value)
    except Exception:  # pragma: no cover - defensive, like canonical()
        return "?"


def _bucket(value: object) -> str:
    if value is None:
        return "none"
    if type(value) is bool:
        return "bool:true" if value else "bool:false"
    if type(value) is float and _isnan(value):
        return "nan"
    if type(value) is int or type(value) is float:
        return "zero" if value == 0 else "pos" if value > 0 else "neg"
    if type(value) is str or type(value) is bytes or type(value) is bytearray:
        return "nonempty" if value else "empty"
    if (
        type(value) is list
        or type(value) is tuple
        or type(value) is dict
        or type(value) is set
        or type(value) is frozenset
    ):
        n = len(value)
        return "empty" if n == 0 else "one" if n == 1 else "many"
    t = type(value)
    if any(klass is _Enum for klass in type_mro(t)):
        dicts = class_dicts(t)
        inst = fields_of(value, dicts) if dicts is not None else None
        name = inst.get("_name_") if inst else None
        qualname = type_qualname(t)
        if type(name) is str and type(qualname) is str:
            return "enum:" + qualname + "." + name
    return "type:" + type_name(t)


# --- bounded sets ----------------------------------------------------------------------------

_MASK64: Final = (1 << 64) - 1
#: An overflowing pair is hashed as a tag and its canonical form (or, without one, its shape)
#: by ``overflow_hash``, and the hash is added to the fingerprint modulo 2**64.
OVERFLOW_SHAPE_TAG: Final = b"s"
OVERFLOW_CANON_TAG: Final = b"c"
OVERFLOW_DIGEST_SIZE: Final = 8
#: Tagged forms up to this many bytes are hashed by a polynomial over the Mersenne prime
#: 2**61 - 1 (7-byte chunks, then the length) at ``OVERFLOW_POINT``, finished by MurmurHash3's
#: 64-bit mixer; longer ones by BLAKE2b (8 bytes, big-endian). Values revision 6: a hot loop's
#: new small value costs a few multiplications where a BLAKE2b block cost about 100 ns.
OVERFLOW_SHORT_BYTES: Final = 64
#: A fixed point chosen at random once (2026-12-05), so no input is special: two distinct
#: forms of at most 64 bytes take the same polynomial value at it with odds of at most 10 in
#: 2**61 (docs/protocol.md, "Values").
OVERFLOW_POINT: Final = 0x2104CA6DFF5A858
_P61: Final = (1 << 61) - 1
_OVERFLOW_LAYOUT: Final = struct.Struct("<QQ")


def overflow_hash(data: bytes) -> int:
    """The 64-bit hash of one overflowing tagged form (the compiled core computes the same).

    Unkeyed, as only the sum's keyed digest leaves the process; its mixer is a bijection, so
    it keeps the polynomial's odds, and it makes the hash of a sum of forms no sum of their
    hashes (a linear hash would give {1, 4} and {2, 3} the same fingerprint).
    """
    size = len(data)
    if size > OVERFLOW_SHORT_BYTES:
        return int.from_bytes(_blake2b(data, digest_size=OVERFLOW_DIGEST_SIZE).digest())
    point, prime = OVERFLOW_POINT, _P61
    h = 0
    for start in range(0, size, 7):
        h = (h * point + int.from_bytes(data[start : start + 7])) % prime
    h = (h * point + size) % prime
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK64
    return h ^ (h >> 33)


_SUMMARY_CACHE: dict[tuple[type, object], tuple[str, bytes | None]] = {}
_SUMMARY_CACHE_LIMIT: Final = 8192
#: Exact ints in (-SMALL_INT, SMALL_INT) and strs shorter than SHORT_STR have summaries worth
#: remembering (the compiled core writes these itself; contract.py checks that it agrees).
SMALL_INT: Final = 1_000_000
SHORT_STR: Final = 64


# Instances of a plain class (not a builtin container or scalar, enum, namedtuple or
# dataclass) have no canonical form and a shape that is the class's name: their summary depends
# on the class alone, so it is worked out once per class and recorded phase (the tracer resets
# this at every phase start, which keeps each phase's genome independent of earlier ones). By
# id with the class kept alongside: a class as a dict key could run a metaclass's ``__eq__``.
#
# Within a phase the memo is the definition: ``shape`` and ``canonical`` answer from it for
# items inside containers too, and an entry, once made, stays until the next reset (when the
# memo is full, no more are made). So a class changed mid-phase (given ``_fields`` or
# ``__dataclass_fields__`` after its instances were seen) is summarised the same way by every
# path, and the compiled core may keep its own copy of entries (reflect.CLASS_EPOCH, bumped
# at every reset, tells it when to drop them).
_PLAIN_SUMMARY: dict[int, tuple[type, tuple[str, bytes | None]]] = {}
_PLAIN_SUMMARY_LIMIT: Final = 4096
_BUILTIN_IDS: Final = frozenset(
    id(t)
    for t in (
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        bytearray,
        list,
        tuple,
        dict,
        set,
        frozenset,
    )
)


def reset_class_summaries() -> None:
    """Forget everything remembered per class (called at every phase start).

    These tables hold the classes themselves (ids alone could be reused), so they must not
    outlive a phase: a test's dynamically made classes would otherwise stay alive for the
    rest of the session, changing when their finalizers run and making every later full
    garbage collection walk them.
    """
    _PLAIN_SUMMARY.clear()
    forget_classes()


def _is_plain(cls: type) -> bool:
    """Whether ``canonical`` is None for every instance of ``cls`` for reasons of the class
    alone: the class-level exits of ``_object_form``, taken in the same order."""
    if id(cls) in _BUILTIN_IDS or id(cls) in _VALUE_TYPE_IDS or _is_zoneinfo(cls):
        return False
    dicts = class_dicts(cls)
    if dicts is None:
        return True
    mro = type_mro(cls)
    if any(klass is _Enum for klass in mro):
        return False
    if any(klass is tuple for klass in mro):  # a tuple subclass that is no namedtuple
        return _namedtuple_fields(mro, dicts) is None
    return type(lookup(dicts, "__dataclass_fields__")) is not dict


def summarize(value: object) -> tuple[str, bytes | None]:
    """``(shape(value), canonical(value))``, cached for small scalars.

    The hot path summarises every argument and result; most are small ints, short strings,
    None and booleans, whose summaries never change. The cache key includes the exact type, so
    ``1`` and ``True`` stay apart; only exact ints, strs and bools are cached, so no user
    ``__hash__``/``__eq__`` ever runs.
    """
    kind = type(value)
    if (
        (kind is int and -SMALL_INT < value < SMALL_INT)  # type: ignore[operator]
        or (kind is str and len(value) < SHORT_STR)  # type: ignore[arg-type]
        or kind is bool
    ):  # never floats: -0.0 == 0.0 would share an entry
        key = (kind, value)
        known = _SUMMARY_CACHE.get(key)
        if known is None:
            if len(_SUMMARY_CACHE) >= _SUMMARY_CACHE_LIMIT:
                _SUMMARY_CACHE.clear()
            known = _SUMMARY_CACHE[key] = (shape(value), canonical(value))
        return known
    if value is None:
        return NONE_SUMMARY
    if id(kind) in _VALUE_TYPE_IDS:
        # Straight to the form: these are no containers, and their shape is their class's.
        try:
            form = _value_type_form(value, kind)
        except Exception:  # like canonical(): never an error, only no form
            form = None
        return (
            _VALUE_TYPE_NAMES[id(kind)],
            form if form is None or len(form) <= MAX_BYTES else None,
        )
    known_plain = _PLAIN_SUMMARY.get(id(kind))
    if known_plain is not None and known_plain[0] is kind:
        return known_plain[1]
    summary = (shape(value), canonical(value))
    if summary[1] is None and len(_PLAIN_SUMMARY) < _PLAIN_SUMMARY_LIMIT and _is_plain(kind):
        _PLAIN_SUMMARY[id(kind)] = (kind, summary)
    return summary


class BoundedValues:
    """Distinct (shape, canonical) pairs up to a limit, then a count and a multiset fingerprint.

    The fingerprint is a sum modulo 2**64 of 64-bit hashes, so it does not depend on the order
    in which overflowing values arrive (threads, set iteration); the hash is unkeyed because it
    never leaves the process: only its keyed digest is exported. The count and the sum live in
    16 bytes made at the first overflow (``_overflow``: two unsigned 64-bit little-endian
    integers), which the compiled core updates in place: a hot loop of new values then makes
    no Python int per call.
    """

    __slots__ = ("_limit", "_overflow", "_seen")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: dict[tuple[str, bytes | None], None] = {}
        self._overflow: bytearray | None = None

    def _totals(self) -> tuple[int, int]:
        """The overflow's count and sum."""
        overflow = self._overflow
        return (0, 0) if overflow is None else _OVERFLOW_LAYOUT.unpack(overflow)

    @property
    def _count(self) -> int:
        return self._totals()[0]

    @_count.setter
    def _count(self, count: int) -> None:
        self._fold(count - self._count, 0)

    @property
    def _sum(self) -> int:
        return self._totals()[1]

    @_sum.setter
    def _sum(self, total: int) -> None:
        self._fold(0, total - self._sum)

    def _fold(self, count: int, total: int) -> None:
        overflow = self._overflow
        if overflow is None:
            overflow = self._overflow = bytearray(_OVERFLOW_LAYOUT.size)
        was_count, was_sum = _OVERFLOW_LAYOUT.unpack(overflow)
        _OVERFLOW_LAYOUT.pack_into(
            overflow, 0, (was_count + count) & _MASK64, (was_sum + total) & _MASK64
        )

    def add(self, shape: str, canonical: bytes | None) -> None:
        self.add_pair((shape, canonical))

    def add_pair(self, key: tuple[str, bytes | None]) -> None:
        """``add`` for a pair built once and reused (see ``summarize``)."""
        shape, canonical = key
        seen = self._seen
        if key in seen:
            return
        if len(seen) < self._limit:
            seen[key] = None
            return
        data = (
            OVERFLOW_SHAPE_TAG + shape.encode("utf-8", "surrogatepass")
            if canonical is None
            else OVERFLOW_CANON_TAG + canonical
        )
        self._fold(1, overflow_hash(data))

    @property
    def limit(self) -> int:
        return self._limit

    def merge_into(self, other: BoundedValues) -> None:
        """Fold these observations into ``other`` (two tree nodes that turned out to be one).

        Kept entries are re-added, so they land in ``other``'s set or its overflow; this
        side's overflow count and fingerprint are added as they are.
        """
        for shape, form in self._seen:
            other.add(shape, form)
        if self._overflow is not None:
            other._fold(*self._totals())

    def export(
        self, digester: Digester, preview: Callable[[str, bytes], str | None] | None = None
    ) -> tuple[list[dict[str, str | None]], dict[str, object] | None]:
        """The entries (sorted) and the overflow; ``preview`` (``--genome-preview``) gives
        an entry with a canonical form its text for people, or None (collect/preview.py)."""
        seen = self._seen
        if preview is None and self._overflow is None and len(seen) < 2:
            # Most nodes saw one value or none: nothing to sort (a parser's export calls
            # this twice per node).
            if not seen:
                return [], None
            [(shape, form)] = seen
            return [
                {"shape": shape, "digest": None if form is None else digester.digest(form)}
            ], None
        entries: list[dict[str, str | None]] = [
            {"shape": shape, "digest": None if form is None else digester.digest(form)}
            for shape, form in self._seen
        ]
        if preview is not None:
            for entry, (shape, form) in zip(entries, self._seen, strict=True):
                if form is not None:
                    try:
                        text = preview(shape, form)
                    except Exception:  # a form it cannot read: no preview, never an error
                        text = None
                    if text is not None:
                        entry["preview"] = text
        entries.sort(key=lambda entry: (entry["shape"] or "", entry["digest"] or ""))
        count, total = self._totals()
        if not count:
            return entries, None
        overflow_form = b"diffgenome-overflow\0" + total.to_bytes(8, "big")
        return entries, {"count": count, "digest": digester.digest(overflow_form)}


NONE_SUMMARY: Final = (shape(None), canonical(None))
