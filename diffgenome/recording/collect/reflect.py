"""Reading classes and instances without running user code.

The recorder looks into the objects a test passes around (to summarise values, to read the
state a method reads, to find what a stand-in replaced) and must never run their code: a
tracer that calls ``__eq__``, ``__getattr__``, a property or a metaclass's descriptor would
change the behaviour it records, and could raise, recurse into itself or deadlock. So:

* class facts (``__mro__``, ``__dict__``, ``__module__``, ``__qualname__``, ``__bases__``,
  ``__flags__``) are read through the descriptors stored in ``type.__dict__``;
  ``type.__getattribute__(cls, "__module__")`` is *not* safe: it runs a data descriptor of the
  same name defined on a metaclass;
* a class whose namespace holds a non-str key (possible only through the class body) is
  unreadable: looking any name up in it could run that key's ``__eq__``;
* an instance's ``__dict__`` is read through the builtin getset (or member) descriptor found
  in its class's namespaces, never through attribute access (``object.__getattribute__`` would
  run a ``__dict__`` property), and only when every key is an exact str.

What is remembered per class holds the class itself (an id alone could be reused), so
``forget_classes`` drops it all at every phase start. Within a phase an entry, once made, is
never replaced (a full table makes no more entries): the compiled core keeps copies of them,
and ``CLASS_EPOCH`` (bumped by ``forget_classes``) tells it when to drop its copies.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Final

type_mro: Final[Callable[[type], tuple[type, ...]]] = type.__dict__["__mro__"].__get__
type_dict: Final[Callable[[type], Mapping[object, object]]] = type.__dict__["__dict__"].__get__
type_module: Final[Callable[[type], object]] = type.__dict__["__module__"].__get__
type_qualname: Final[Callable[[type], object]] = type.__dict__["__qualname__"].__get__
type_bases: Final[Callable[[type], tuple[type, ...]]] = type.__dict__["__bases__"].__get__
type_flags: Final[Callable[[type], int]] = type.__dict__["__flags__"].__get__
HEAPTYPE: Final = 1 << 9  # Py_TPFLAGS_HEAPTYPE: the class was made by a class statement

GetSet: Final = types.GetSetDescriptorType
Member: Final = types.MemberDescriptorType
#: What a lookup gives for a name no namespace holds.
MISSING: Final = object()

# Classes whose dict holds only exact-str keys, by id (the class is kept alive, so the id is
# not reused). A non-str key with a colliding hash would have its __eq__ run by any lookup in
# that dict; keys added after creation are always exact str (type.__setattr__ interns a copy),
# so a class once verified stays verified.
_STR_KEYED: dict[int, type] = {}
_STR_KEYED_MAX: Final = 8192


def class_dict(cls: type) -> Mapping[object, object] | None:
    """The class's own namespace, or None when a lookup in it could run user code."""
    ns = type_dict(cls)
    if _STR_KEYED.get(id(cls)) is cls:
        return ns
    for key in ns:
        if type(key) is not str:
            return None
    if len(_STR_KEYED) >= _STR_KEYED_MAX:
        _STR_KEYED.clear()
    _STR_KEYED[id(cls)] = cls
    return ns


def class_dicts(cls: type) -> list[Mapping[object, object]] | None:
    out = []
    for klass in type_mro(cls):
        ns = class_dict(klass)
        if ns is None:
            return None
        out.append(ns)
    return out


def lookup(dicts: list[Mapping[object, object]], name: str) -> object:
    for ns in dicts:
        if name in ns:
            return ns[name]
    return MISSING


# Class display names, by id with the class alongside (a class as a dict key could run a
# metaclass's ``__eq__``).
_DISPLAY_NAMES: dict[int, tuple[type, str]] = {}
_DISPLAY_NAMES_MAX: Final = 4096


def type_name(cls: type) -> str:
    """``module.qualname`` of a class, read without running user code ("?" for what can't
    be); remembered per class until ``forget_classes``."""
    known = _DISPLAY_NAMES.get(id(cls))
    if known is not None and known[0] is cls:
        return known[1]
    name = qualified_name(cls, "?") or "?"
    if len(_DISPLAY_NAMES) < _DISPLAY_NAMES_MAX:
        _DISPLAY_NAMES[id(cls)] = (cls, name)
    return name


def qualified_name(cls: type, unknown: str | None) -> str | None:
    """``module.qualname`` of a class read without running user code; ``unknown`` replaces
    a part that cannot be read that way (a metaclass property, a non-str ``__module__``)."""
    qualname = type_qualname(cls)
    module = type_module(cls) if class_dict(cls) is not None else None
    if type(qualname) is not str or type(module) is not str:
        if unknown is None:
            return None
        qualname = qualname if type(qualname) is str else unknown
        module = module if type(module) is str else unknown
    return module + "." + qualname


def is_descriptor(attr: object, data_only: bool) -> bool | None:
    """Whether attribute lookup would run ``type(attr)``'s descriptor methods (None: unknown)."""
    dicts = class_dicts(type(attr))
    if dicts is None:
        return None
    names = ("__set__", "__delete__") if data_only else ("__get__", "__set__", "__delete__")
    return any(lookup(dicts, name) is not MISSING for name in names)


def _own_dict(value: object, descr: object) -> dict[str, object] | None:
    """``value``'s ``__dict__`` through ``descr`` when that is the builtin getset or member
    (C code that only reads a pointer) and every key is an exact str; else None."""
    if type(descr) is not GetSet and type(descr) is not Member:
        return None
    try:
        inst = descr.__get__(value, type(value))
    except AttributeError:  # a member never set
        return None
    if type(inst) is not dict:
        return None
    for key in inst:
        if type(key) is not str:
            return None
    return inst


def fields_of(value: object, dicts: list[Mapping[object, object]]) -> dict[str, object] | None:
    """The instance ``__dict__`` of ``value`` given its class's namespaces; ``{}`` when the
    class has no dict (all its state is in slots), None when it cannot be read safely."""
    descr = lookup(dicts, "__dict__")
    if descr is MISSING:
        return {}
    return _own_dict(value, descr)


# The ``__dict__`` descriptor of each class asked about (None: it has none, or not one that
# is safe), so that reading an instance's fields at every call of a method costs a lookup.
# A class's ``__dict__`` entry cannot be replaced: ``type.__dict__["__dict__"]`` has no setter.
_DICT_DESCRIPTORS: dict[int, tuple[type, object]] = {}
_DICT_DESCRIPTORS_MAX: Final = 4096


def instance_dict(value: object) -> dict[str, object] | None:
    """``value``'s own ``__dict__``, or None when it has none or reading it could run user
    code (a ``__dict__`` property, a class with a non-str key, an instance dict with one)."""
    cls = type(value)
    known = _DICT_DESCRIPTORS.get(id(cls))
    if known is None or known[0] is not cls:
        dicts = class_dicts(cls)
        descr = lookup(dicts, "__dict__") if dicts is not None else None
        known = (cls, descr)
        if len(_DICT_DESCRIPTORS) < _DICT_DESCRIPTORS_MAX:
            _DICT_DESCRIPTORS[id(cls)] = known
    return _own_dict(value, known[1])


#: Bumped whenever the tables above are emptied (see the module's docstring).
CLASS_EPOCH: Final = [0]


def forget_classes() -> None:
    """Drop everything remembered per class (called at every phase start)."""
    CLASS_EPOCH[0] += 1
    _STR_KEYED.clear()
    _DISPLAY_NAMES.clear()
    _DICT_DESCRIPTORS.clear()
