"""The seam check: could the real target have accepted what its stand-in received?

A stand-in sees a call after Python has decided how to bind it. A mock found on a class is not
a descriptor, so ``obj.method(a, b)`` reaches it as ``(a, b)`` while the real method would have
received ``(obj, a, b)``; a function put on a class binds ``self`` like the real method did; a
function put on an instance binds nothing where the real method had ``self`` bound. So the
arguments a stand-in received are mapped to the arguments the real target would have received
by a *reading*, and the real signature is bound to those, never called:

- ``function``: a module function (or one stored on an object): the arguments as received.
- ``instance``: the call went through an instance, so the real target had ``self`` implied.
- ``class``: the call went through the class, so ``self`` is among the arguments.
- ``method``: the stand-in is itself a function on the class: it got ``self`` exactly as the
  real method would have, whichever way it was called.
- ``static``/``classmethod``: the real target is a static or class method.
- ``ambiguous``: more than one reading fits what the recorder can see (a mock on a class
  called with an instance of that class first: ``obj.merge(other)`` or
  ``Class.merge(obj, other)``); the call is accepted when either reading binds.

Where the stand-in is a function (a stub, a fake, an override) its own signature is compared
with the real one once per substitution: parameters the real target accepts that the stand-in
does not, changed kinds, defaults the real target has and the stand-in lacks or changed.

Everything here runs inside user code at event time: it binds what it needs at import (tests
patch ``inspect``), never calls user code, and its results are cached per substitution.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from diffgenome.recording.collect import values

_signature = inspect.signature
_EMPTY = inspect.Parameter.empty
_POSITIONAL_ONLY = inspect.Parameter.POSITIONAL_ONLY
_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD
_VAR_POSITIONAL = inspect.Parameter.VAR_POSITIONAL
_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
_VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD
_POSITIONAL = (_POSITIONAL_ONLY, _POSITIONAL_OR_KEYWORD)
_BY_KEYWORD = (_POSITIONAL_OR_KEYWORD, _KEYWORD_ONLY)
_type_mro = type.__dict__["__mro__"].__get__
_isfinite = math.isfinite

# How the real target receives a call, from where it was found.
REAL_FUNCTION = 0  # a module function, or a function stored on an object: arguments as given
REAL_METHOD = 1  # a plain function on a class: self implied through an instance, explicit else
REAL_STATIC = 2
REAL_CLASSMETHOD = 3
REAL_BOUND = 4  # a method met through an instance: a bound method, a patched instance

# How the stand-in receives a call, from where it was put.
STAND_IN_PLAIN = 0  # binds nothing: a mock, a callable object, anything not on a class
STAND_IN_BINDS = 1  # a plain function on a class: binds self through an instance
STAND_IN_CLASSMETHOD = 2  # a classmethod on a class: binds cls

# A reading: (label, shift, needs an instance of the owner class first). The shift maps what
# the stand-in received to what the real target would have: +1 puts a placeholder for the
# implied self/cls in front, -1 drops a self the real target would not have received.
Reading = tuple[str, int, bool]

_FUNCTION: tuple[Reading, ...] = (("function", 0, False),)
_READINGS: dict[tuple[int, int], tuple[Reading, ...]] = {
    (REAL_METHOD, STAND_IN_PLAIN): (("instance", 1, False), ("class", 0, True)),
    (REAL_METHOD, STAND_IN_BINDS): (("method", 0, False),),
    (REAL_METHOD, STAND_IN_CLASSMETHOD): (("instance", 0, False), ("class", -1, False)),
    (REAL_STATIC, STAND_IN_PLAIN): (("static", 0, False),),
    (REAL_STATIC, STAND_IN_BINDS): (("instance", -1, True), ("class", 0, False)),
    (REAL_STATIC, STAND_IN_CLASSMETHOD): (("classmethod", -1, False),),
    (REAL_CLASSMETHOD, STAND_IN_PLAIN): (("classmethod", 1, False),),
    (REAL_CLASSMETHOD, STAND_IN_BINDS): (("instance", 0, True), ("class", 1, False)),
    (REAL_CLASSMETHOD, STAND_IN_CLASSMETHOD): (("classmethod", 0, False),),
    (REAL_BOUND, STAND_IN_PLAIN): (("instance", 1, False),),
}

# Readings of a path followed on a mock (``klass().get``, ``module.fetch``): the mock path says
# the route, so there is exactly one.
PATH_FUNCTION = _FUNCTION
PATH_CLASS: tuple[Reading, ...] = (("class", 0, False),)
PATH_INSTANCE: tuple[Reading, ...] = (("instance", 1, False),)
PATH_STATIC = _READINGS[(REAL_STATIC, STAND_IN_PLAIN)]
PATH_CLASSMETHOD = _READINGS[(REAL_CLASSMETHOD, STAND_IN_PLAIN)]

MAX_FLAGS = 32  # per node: readings and problems are few, but call problems name arguments
_MAX_DEFAULT_TEXT = 30
_MISMATCH = "signature_mismatch"


def readings(real: int, stand_in: int) -> tuple[Reading, ...]:
    """The readings that can map what the stand-in received to what the real target would."""
    if real == REAL_FUNCTION:
        return _FUNCTION
    found = _READINGS.get((real, stand_in))
    if found is None:
        found = _READINGS.get((real, STAND_IN_PLAIN), _FUNCTION)
    return found


class Seam:
    """One substitution's seam: the real signature, its readings, and the fixed facts.

    ``flags`` are the node flags every call of this substitution sets: the signature texts
    and, for a function stand-in, the problems of its own signature against the real one.
    """

    __slots__ = ("first_name", "flags", "owner", "readings", "signature", "stand_in")

    def __init__(
        self,
        signature: Any,
        readings: tuple[Reading, ...],
        owner: type | None,
        stand_in: Any,
        flags: frozenset[str],
    ) -> None:
        self.signature = signature
        self.readings = readings
        self.owner = owner
        self.stand_in = stand_in  # the stand-in's own signature, for function stand-ins
        self.flags = flags
        first = next(iter(signature.parameters), None)
        self.first_name = first


def make_seam(
    target: Any, readings: tuple[Reading, ...], owner: type | None, stand_in: Any
) -> Seam | None:
    """The seam of a substitution, or None when the real signature cannot be read."""
    try:
        signature = _signature(target)
    except (TypeError, ValueError):
        return None
    flags = {"seam:target=" + signature_text(signature)}
    stand_in_signature = None
    if stand_in is not None:
        try:
            stand_in_signature = _signature(stand_in)
        except (TypeError, ValueError):
            stand_in_signature = None
    if stand_in_signature is not None:
        flags.add("seam:stand_in=" + signature_text(stand_in_signature))
        problems = signature_problems(stand_in_signature, signature, readings)
        for problem in problems:
            flags.add("seam:problem=" + problem)
        if problems:
            flags.add(_MISMATCH)
    return Seam(signature, readings, owner, stand_in_signature, frozenset(flags))


def check_call(seam: Seam, flags: set[str], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Add to ``flags`` the reading of one call and whether the real target would reject it."""
    viable = seam.readings
    if len(viable) > 1:
        first_is_owner = _first_is_owner(seam, args, kwargs)
        viable = tuple(reading for reading in viable if first_is_owner or not reading[2])
    signature = seam.signature
    problem: str | None = None
    accepted = False
    for _, shift, _ in viable:
        try:
            if shift == 1:
                signature.bind(None, *args, **kwargs)
            elif shift == 0:
                signature.bind(*args, **kwargs)
            elif args:
                signature.bind(*args[1:], **kwargs)
            else:
                raise TypeError("missing the receiver")
        except TypeError as exc:
            if problem is None:
                problem = str(exc)
            continue
        accepted = True
        break
    if len(flags) < MAX_FLAGS:
        flags.update(seam.flags)
        flags.add("seam:reading=" + (viable[0][0] if len(viable) == 1 else "ambiguous"))
    if not accepted:
        flags.add(_MISMATCH)
        if problem is not None and len(flags) < MAX_FLAGS:
            flags.add("seam:problem=call: " + problem)


def _first_is_owner(seam: Seam, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the first argument could be the receiver: an instance of the class the stand-in
    was put on (read from the type's MRO, so no ``__class__`` or ``__instancecheck__`` runs)."""
    owner = seam.owner
    if owner is None:
        return True
    if args and owner in _type_mro(type(args[0])):
        return True
    return seam.first_name is not None and seam.first_name in kwargs


def call_of(stand_in: Any, local: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The call a function stand-in received, rebuilt from its bound parameters.

    How the caller spelled it is gone: positional-or-keyword parameters are taken as passed
    by position, trailing ones still holding their default object as not passed at all.
    """
    positional: list[Any] = []
    kwargs: dict[str, Any] = {}
    extra: tuple[Any, ...] = ()
    trailing: list[tuple[Any, Any]] = []
    for name, parameter in stand_in.parameters.items():
        if name not in local:
            return None
        value = local[name]
        kind = parameter.kind
        if kind in _POSITIONAL:
            trailing.append((parameter, value))
        elif kind == _VAR_POSITIONAL:
            extra = tuple(value) if type(value) is tuple else ()
        elif kind == _KEYWORD_ONLY:
            if parameter.default is _EMPTY or value is not parameter.default:
                kwargs[name] = value
        elif type(value) is dict:
            kwargs.update(value)
    if not extra:
        while trailing and trailing[-1][0].default is not _EMPTY:
            parameter, value = trailing[-1]
            if value is not parameter.default:
                break
            trailing.pop()
    positional = [value for _, value in trailing]
    return (*positional, *extra), kwargs


# -- signatures as text and their differences --------------------------------------------


def signature_text(signature: Any) -> str:
    """A signature as stable text: names, kinds and simple defaults, no annotations.

    Annotations do not decide whether a call binds; default values other than short literals
    are shown as ``…`` (their repr may hold an address or a secret).
    """
    parts: list[str] = []
    star = False
    previous = None
    for parameter in signature.parameters.values():
        kind = parameter.kind
        if previous == _POSITIONAL_ONLY and kind != _POSITIONAL_ONLY:
            parts.append("/")
        if kind == _KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if kind == _VAR_POSITIONAL:
            parts.append("*" + parameter.name)
            star = True
        elif kind == _VAR_KEYWORD:
            parts.append("**" + parameter.name)
        elif parameter.default is _EMPTY:
            parts.append(parameter.name)
        else:
            parts.append(parameter.name + "=" + default_text(parameter.default))
        previous = kind
    if previous == _POSITIONAL_ONLY:
        parts.append("/")
    return "(" + ", ".join(parts) + ")"


def default_text(value: object) -> str:
    cls = type(value)
    if value is None or cls is bool or cls is int:
        return repr(value)
    if cls is float and _isfinite(value):  # type: ignore[arg-type]
        return repr(value)
    if (cls is str or cls is bytes) and len(value) <= _MAX_DEFAULT_TEXT:  # type: ignore[arg-type]
        return values.stable_text(repr(value))
    return "…"


def _same_default(real: object, stand_in: object) -> bool:
    if real is stand_in:
        return True
    if type(real) is not type(stand_in):
        return False
    form = values.canonical(real)
    return form is not None and form == values.canonical(stand_in)


def signature_problems(stand_in: Any, real: Any, readings: tuple[Reading, ...]) -> list[str]:
    """What the stand-in's own signature changed of the real one's, or nothing when one
    reading fits. A stand-in that accepts more than the real target, or takes parameters
    through ``*args``/``**kwargs``, is no problem by itself: the calls it gets are checked one
    by one. An explicit parameter that is missing, renamed, of another kind, or has another
    default is: it is what a stand-in that drifted from its target looks like."""
    first: list[str] | None = None
    for label, shift, _ in readings:
        stand_params = list(stand_in.parameters.values())
        real_params = list(real.parameters.values())
        if shift == 1:
            real_params = real_params[1:]
        elif shift == -1:
            stand_params = stand_params[1:]
        shared_receiver = shift == 0 and label in ("method", "classmethod", "instance")
        problems = _compare(stand_params, real_params, shared_receiver)
        if not problems:
            return []
        if first is None:
            first = problems
    return first or []


def _compare(stand: list[Any], real: list[Any], shared_receiver: bool) -> list[str]:
    problems: list[str] = []
    stand_positional = [p for p in stand if p.kind in _POSITIONAL]
    real_positional = [p for p in real if p.kind in _POSITIONAL]
    stand_by_name = {p.name: p for p in stand if p.kind in _BY_KEYWORD}
    stand_var = any(p.kind == _VAR_POSITIONAL for p in stand)
    stand_var_kw = any(p.kind == _VAR_KEYWORD for p in stand)
    real_names = {p.name for p in real}
    for index, parameter in enumerate(real_positional):
        name = parameter.name
        receiver = shared_receiver and index == 0
        other = stand_positional[index] if index < len(stand_positional) else None
        if other is None:
            keyword_only = stand_by_name.get(name)
            if keyword_only is not None and keyword_only.kind == _KEYWORD_ONLY:
                problems.append(f"parameter {name} is keyword-only in the stand-in")
            elif not (stand_var or stand_var_kw):
                problems.append(f"missing parameter {name}")
            # else a catch-all (``*args``, ``**kwargs``) takes it: a forwarding stand-in has
            # not drifted, and the calls it gets are checked one by one.
            continue
        if not receiver and parameter.kind == _POSITIONAL_OR_KEYWORD:
            if other.name != name:
                problems.append(f"parameter {name} is named {other.name} in the stand-in")
                continue
            if other.kind == _POSITIONAL_ONLY:
                problems.append(f"parameter {name} is positional-only in the stand-in")
        _compare_defaults(parameter, other, problems)
    for other in stand_positional[len(real_positional) :]:
        if other.default is _EMPTY:
            problems.append(f"extra required parameter {other.name}")
    for parameter in real:
        if parameter.kind != _KEYWORD_ONLY:
            continue
        other = stand_by_name.get(parameter.name)
        if other is None:
            if not stand_var_kw:
                problems.append(f"missing parameter {parameter.name}")
            continue
        _compare_defaults(parameter, other, problems)
    for other in stand:
        if other.kind == _KEYWORD_ONLY and other.default is _EMPTY and other.name not in real_names:
            problems.append(f"extra required parameter {other.name}")
    if any(p.kind == _VAR_POSITIONAL for p in real) and not stand_var:
        problems.append("missing *args")
    if any(p.kind == _VAR_KEYWORD for p in real) and not stand_var_kw:
        problems.append("missing **kwargs")
    return problems


def _compare_defaults(real: Any, stand_in: Any, problems: list[str]) -> None:
    if real.default is _EMPTY:
        return
    if stand_in.default is _EMPTY:
        problems.append(f"parameter {real.name} has a default only in the real target")
    elif not _same_default(real.default, stand_in.default):
        problems.append(
            f"default of {real.name} differs: {default_text(real.default)} in the real target,"
            f" {default_text(stand_in.default)} in the stand-in"
        )
