"""Stand-ins: code that replaced real code during a test, and what it claims to replace.

A stand-in becomes a substitution node under the in-scope caller. Its claimed target is taken
only from facts, never from names:

- ``spec``: the spec object a mock was built with (``Mock(spec=...)``, ``spec_set``,
  ``create_autospec`` of classes, instances and functions, and autospec's child mocks, which
  carry the real method as their own spec). Seen by wrapping ``NonCallableMock._mock_add_spec``.
- ``patch-target``: the original that ``patch``/``patch.object``/``patch.multiple`` saved before
  replacing it (decorator, context manager and ``start()`` all go through ``_patch.__enter__``);
  ``patch.dict`` is an ``interposition`` on the dictionary it names.
- ``monkeypatch``: the attribute that pytest's ``monkeypatch.setattr`` replaced.
- ``instance-attribute``: a mock stored on a real object under a name its class defines (found
  in the calling frame's objects, by identity).
- ``override``: a method of a test-defined subclass that overrides a repo class's method.
- ``none`` (claimed target null): nothing factual says what it replaces.

Calls to mocks are seen by wrapping ``CallableMixin._mock_call``; code that runs inside a
stand-in (``side_effect``, ``wraps``) hangs under its substitution node because the wrapper's
own frame is registered as active for that node. Test-defined functions entered from repo code
are hand-written fakes (methods) or stubs (functions); the tracer asks ``fake_key`` about them.

Everything wrapped is restored by ``uninstall``; the patched objects (``unittest.mock.patch``
and friends) are never replaced, only private methods on their classes, so identity holds.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable
from types import CodeType, FrameType, FunctionType, MethodType, ModuleType
from typing import TYPE_CHECKING, Any, Protocol
from unittest import mock as _mock

from diffgenome.protocol.vocab import FAKE, INTERPOSITION, MOCK_OBJECT, STUB
from diffgenome.recording.collect import reflect, seams, values

if TYPE_CHECKING:
    from diffgenome.recording.collect.contract import CodeInfo, Node


class _Tracer(Protocol):
    """What stand-ins ask of the tracer (collect/tracer.py): where a substitution's call
    hangs in the tree, and how code is named there."""

    @property
    def recording(self) -> bool: ...

    def enter_substitution(self, frame: FrameType, key: tuple[Any, ...]) -> Node | None: ...

    def leave_substitution(
        self, frame: FrameType, node: Node, exc: BaseException | None
    ) -> None: ...

    def record_substitution_event(self, frame: FrameType | None, key: tuple[Any, ...]) -> None: ...

    def symbol_of(self, obj: object) -> str | None: ...

    def origin_of(self, symbol: str) -> str | None: ...

    def keep_first_error(self, exc: BaseException) -> None: ...


_getframe = sys._getframe
_type_mro = reflect.type_mro
_type_dict = reflect.type_dict
# An object's own __dict__, read without running its code (no __dict__ property, no
# non-str key whose __eq__ a lookup could run).
_dict_of: Callable[[object], dict[str, Any] | None] = reflect.instance_dict
_NonCallableMock = _mock.NonCallableMock
_CallableMixin = _mock.CallableMixin
_patch_class: Any = getattr(_mock, "_patch", None)
_patch_dict_class: Any = getattr(_mock, "_patch_dict", None)


def _is_mock(obj: object) -> bool:
    return _NonCallableMock in _type_mro(type(obj))


def _class_lookup(cls: type, name: str) -> object:
    """A class attribute as stored (no descriptor runs), searched along the MRO."""
    for klass in _type_mro(cls):
        namespace = _type_dict(klass)
        if name in namespace:
            return namespace[name]
    return _MISSING


_MISSING = object()


class _Claim:
    """What a stand-in root claims to replace, and how that is known.

    ``readings`` (``seams``) say how a call the stand-in receives maps to one of the real
    target, from where both were found; None where no seam check applies (a spec already
    describes the mock). ``stand_in`` is the replacing function, whose own signature is
    compared with the real one.
    """

    __slots__ = ("instance", "mechanism", "obj", "owner", "readings", "relation", "stand_in")

    def __init__(
        self,
        obj: object,
        relation: str,
        instance: bool,
        mechanism: str,
        readings: tuple[seams.Reading, ...] | None = None,
        owner: type | None = None,
        stand_in: object | None = None,
    ) -> None:
        self.obj = obj
        self.relation = relation
        self.instance = instance
        self.mechanism = mechanism
        self.readings = readings
        self.owner = owner
        self.stand_in = stand_in


class _Registry:
    """Claims keyed by the stand-in's identity, without keeping stand-ins alive."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Any, _Claim]] = {}

    def put(self, stand_in: object, claim: _Claim) -> None:
        try:
            ref: Any = weakref.ref(stand_in)
        except TypeError:
            ref = lambda: stand_in  # noqa: E731 - strong reference for objects without weakrefs
        if len(self._entries) > 4096:
            self._sweep()
        self._entries[id(stand_in)] = (ref, claim)

    def get(self, stand_in: object) -> _Claim | None:
        entry = self._entries.get(id(stand_in))
        if entry is None or entry[0]() is not stand_in:
            return None
        return entry[1]

    def _sweep(self) -> None:
        self._entries = {k: v for k, v in self._entries.items() if v[0]() is not None}

    def clear(self) -> None:
        self._entries.clear()


class StandIns:
    """Installs the hooks that see stand-ins, and answers the tracer's questions about them."""

    def __init__(self, tracer: _Tracer) -> None:
        self.tracer = tracer
        self.specs = _Registry()  # mock -> its spec
        self.claims = _Registry()  # replacement -> what it replaced
        self.codes: dict[int, tuple[CodeType, _Claim]] = {}  # replacement function code
        self._saved: list[tuple[Any, str, Any]] = []
        # (target, readings, owner, stand-in) -> the seam, with the objects to check identity
        self._seams: dict[tuple[Any, ...], tuple[tuple[object, ...], seams.Seam | None]] = {}
        self._instance_claims: dict[int, tuple[Any, _Claim | None]] = {}
        # test function code -> the claim of a function stored on a real object, or None
        self._function_claims: dict[int, tuple[CodeType, _Claim | None]] = {}
        # a fake's frame -> its code and the seam its call is checked against
        self._pending: dict[int, tuple[CodeType, seams.Seam]] = {}
        self._notset: object = _MISSING
        self.errors = 0

    def failed(self, exc: BaseException) -> None:
        """A hook caught ``exc``: counted apart from the tracer's (the session adds both to
        the phase), kept like the tracer's under ``DIFFGENOME_DEBUG=callbacks``."""
        self.errors += 1
        self.tracer.keep_first_error(exc)

    # -- install / uninstall -------------------------------------------------------------

    def install(self) -> None:
        self._wrap(_CallableMixin, "_mock_call", self._make_mock_call)
        self._wrap(_NonCallableMock, "_mock_add_spec", self._make_add_spec)
        if _patch_class is not None:
            self._wrap(_patch_class, "__enter__", self._make_patch_enter)
        if _patch_dict_class is not None:
            self._wrap(_patch_dict_class, "_patch_dict", self._make_patch_dict)
        monkeypatch = sys.modules.get("_pytest.monkeypatch")
        if isinstance(monkeypatch, ModuleType):
            self._notset = getattr(monkeypatch, "NOTSET", getattr(monkeypatch, "notset", _MISSING))
            self._wrap(monkeypatch.MonkeyPatch, "setattr", self._make_monkeypatch_setattr)

    def uninstall(self) -> None:
        while self._saved:
            owner, name, original = self._saved.pop()
            setattr(owner, name, original)
        self.specs.clear()
        self.claims.clear()
        self.codes.clear()
        self._seams.clear()
        self._function_claims.clear()
        self._pending.clear()

    def _wrap(self, owner: type, name: str, make: Callable[[Any], Any]) -> None:
        original = _type_dict(owner).get(name, _MISSING)
        if original is _MISSING:
            return
        wrapper = make(original)
        wrapper.__wrapped__ = original
        self._saved.append((owner, name, original))
        setattr(owner, name, wrapper)

    # -- hooks ---------------------------------------------------------------------------

    def _make_add_spec(self, original: Callable[..., Any]) -> Callable[..., Any]:
        specs = self.specs
        standins = self

        def _mock_add_spec(mock: Any, spec: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(mock, spec, *args, **kwargs)
            if spec is not None:
                try:
                    eat_self = bool(args[2]) if len(args) > 2 else bool(kwargs.get("_eat_self"))
                    as_instance = bool(args[1]) if len(args) > 1 else False
                    as_instance = as_instance or bool(kwargs.get("_spec_as_instance"))
                    instance = as_instance or not isinstance(spec, type)
                    claim = _Claim(spec, "spec", instance and not eat_self, MOCK_OBJECT)
                    if eat_self and isinstance(spec, FunctionType):
                        claim.instance = True  # an autospecced method: self is eaten
                    specs.put(mock, claim)
                except Exception as exc:
                    standins.failed(exc)
            return result

        return _mock_add_spec

    def _make_patch_enter(self, original: Callable[..., Any]) -> Callable[..., Any]:
        standins = self

        def __enter__(patcher: Any) -> Any:
            result = original(patcher)
            try:
                standins._after_patch(patcher)
            except Exception as exc:
                standins.failed(exc)
            return result

        return __enter__

    def _after_patch(self, patcher: Any) -> None:
        target = _dict_of(patcher) or {}
        owner = target.get("target")
        name = target.get("attribute")
        original = target.get("temp_original", _MISSING)
        if owner is None or not isinstance(name, str) or original is _MISSING:
            return
        if original is _mock.DEFAULT:  # create=True on a missing attribute: nothing replaced
            return
        replacement = _raw_attribute(owner, name)
        if replacement is _MISSING:
            return
        self._register_replacement(replacement, original, "patch-target", owner, name)

    def _register_replacement(
        self,
        replacement: object,
        original: object,
        relation: str,
        owner: object,
        name: str,
        through_instance: bool = False,
    ) -> None:
        real_kind = _real_kind(owner, name, original, through_instance)
        stand_in_kind = _stand_in_kind(owner, replacement)
        readings = seams.readings(real_kind, stand_in_kind)
        owner_class = owner if isinstance(owner, type) else None
        original = _unwrap_method(original)
        if _is_mock(replacement):
            claim = _Claim(original, relation, False, MOCK_OBJECT, readings, owner_class)
            self.claims.put(replacement, claim)
            return
        function_dict = _dict_of(replacement)
        if function_dict is not None and _is_mock(function_dict.get("mock")):
            # create_autospec of a function: calls go through ``replacement.mock``, with the
            # arguments the wrapping function received (it binds self on a class).
            claim = _Claim(original, relation, False, MOCK_OBJECT, readings, owner_class)
            self.claims.put(function_dict["mock"], claim)
        code = _code_of(replacement)
        if code is not None:
            mechanism = FAKE if isinstance(original, type) else STUB
            # A bound method (``self.fake_put`` of a test class) already holds its self: its
            # signature, and the call rebuilt from its frame, leave that self out.
            stand_in: object = replacement
            if not isinstance(replacement, MethodType):
                stand_in = _unwrap_method(replacement)
            claim = _Claim(original, relation, False, mechanism, readings, owner_class, stand_in)
            self.codes[id(code)] = (code, claim)

    def _make_patch_dict(self, original: Callable[..., Any]) -> Callable[..., Any]:
        standins = self

        def _patch_dict(patcher: Any) -> Any:
            named = (_dict_of(patcher) or {}).get("in_dict")
            result = original(patcher)
            try:
                claimed = ("py:" + named) if isinstance(named, str) else None
                standins.tracer.record_substitution_event(
                    _getframe(1),
                    (INTERPOSITION, "unittest.mock.patch.dict", claimed, "patch-target", ""),
                )
            except Exception as exc:
                standins.failed(exc)
            return result

        return _patch_dict

    def _make_monkeypatch_setattr(self, original: Callable[..., Any]) -> Callable[..., Any]:
        standins = self

        def setattr(monkeypatch: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(monkeypatch, *args, **kwargs)
            try:
                undo = (_dict_of(monkeypatch) or {}).get("_setattr")
                if undo:
                    owner, name, old = undo[-1]
                    through_instance = False
                    if old is standins._notset or old is _MISSING:
                        # Not in the object's own __dict__: inherited from a base class, or a
                        # method of the instance's class (monkeypatch records nothing to undo
                        # then, but the replaced attribute is still the class's).
                        old, through_instance = _inherited(owner, name)
                    if _is_real_callable(old):
                        replacement = _raw_attribute(owner, name)
                        if replacement is not _MISSING and callable(replacement):
                            standins._register_replacement(
                                replacement, old, "monkeypatch", owner, name, through_instance
                            )
            except Exception as exc:
                standins.failed(exc)
            return result

        return setattr

    def _make_mock_call(self, original: Callable[..., Any]) -> Callable[..., Any]:
        standins = self
        tracer = self.tracer

        def _mock_call(mock: Any, /, *args: Any, **kwargs: Any) -> Any:
            if not tracer.recording:
                return original(mock, *args, **kwargs)
            # Our own frame, to hang side-effect code under the stand-in. Held in a local it
            # would form a frame -> locals -> frame cycle that keeps the call's arguments and
            # result (an AsyncMock's coroutine) alive until the next garbage collection, which
            # moves "never awaited" warnings out of the test: always dropped before returning.
            frame: FrameType | None = _getframe(0)
            try:
                node: Node | None = None
                try:
                    node = standins._enter_mock(mock, args, kwargs, frame)  # type: ignore[arg-type]
                except Exception as exc:
                    standins.failed(exc)
                if node is None:
                    return original(mock, *args, **kwargs)
                try:
                    result = original(mock, *args, **kwargs)
                except BaseException as exc:
                    tracer.leave_substitution(frame, node, exc)  # type: ignore[arg-type]
                    raise
                tracer.leave_substitution(frame, node, None)  # type: ignore[arg-type]
                return result
            finally:
                frame = None

        return _mock_call

    # -- identity of a mock call ---------------------------------------------------------

    def _enter_mock(
        self, mock: Any, args: tuple[Any, ...], kwargs: dict[str, Any], frame: FrameType
    ) -> Node | None:
        claim, path, target, readings = self._resolve_mock(mock, frame)
        claimed: str | None = None
        relation = "none"
        mechanism = MOCK_OBJECT
        if claim is not None:
            mechanism = claim.mechanism
            if target is not _MISSING:
                claimed = self.tracer.symbol_of(target)
            # A relation only next to a claim: below a patched or spec'd root, a path that
            # cannot be followed to real code claims nothing (never a relation with a null).
            relation = claim.relation if claimed is not None else "none"
        substitute = reflect.type_name(type(mock))
        key = (mechanism, substitute, claimed, relation, path)
        node = self.tracer.enter_substitution(frame, key)
        if node is None:
            return None
        shapes: list[str] = []
        forms: list[bytes] = []
        complete = True
        for index, value in enumerate(args):
            shapes.append(f"{index}={values.shape(value)}")
            form = values.canonical(value) if complete else None
            complete = complete and form is not None
            if form is not None:
                forms.append(form)
        for name in sorted(kwargs):
            value = kwargs[name]
            shapes.append(f"{name}={values.shape(value)}")
            form = values.canonical(value) if complete else None
            complete = complete and form is not None
            if form is not None:
                forms.append(form)
        node.args.add(", ".join(shapes), b"\x1e".join(forms) if complete else None)
        if (
            claim is not None
            and readings is not None
            and isinstance(target, FunctionType)
            and claim.relation != "spec"
        ):
            owner = claim.owner if path == "" else None
            seam = self._seam(target, readings, owner, None)
            if seam is not None:
                flags = node.flags
                if flags is None:
                    flags = node.flags = set()
                seams.check_call(seam, flags, args, kwargs)
        return node

    def _resolve_mock(
        self, mock: Any, frame: FrameType
    ) -> tuple[_Claim | None, str, object, tuple[seams.Reading, ...] | None]:
        """The nearest claim up the mock's parent chain, the path below it, the target, and
        the readings of a call of the target through that path."""
        names: list[str] = []
        current: Any = mock
        for _ in range(64):
            claim = self.claims.get(current) or self.specs.get(current)
            if claim is None and not names:
                claim = self._instance_attribute_claim(current, frame)
            if claim is not None:
                path = _join_path(names)
                if not names:
                    return claim, path, claim.obj, claim.readings
                target, readings = _follow(claim.obj, names, claim.instance)
                return claim, path, target, readings
            data = _dict_of(current)
            if data is None:
                break
            parent = data.get("_mock_new_parent")
            if parent is None:
                break
            names.append(str(data.get("_mock_new_name") or ""))
            current = parent
        root_claim = self._instance_attribute_claim(current, frame) if names else None
        if root_claim is not None:
            target, readings = _follow(root_claim.obj, names, True)
            return root_claim, _join_path(names), target, readings
        return None, _join_path(names), _MISSING, None

    def _instance_attribute_claim(self, root: Any, frame: FrameType) -> _Claim | None:
        """A mock stored on a real object, under a name that object's class defines."""
        cached = self._instance_claims.get(id(root))
        if cached is not None and cached[0]() is root:
            return cached[1]
        claim: _Claim | None = None
        caller = frame.f_back.f_back if frame.f_back is not None else None
        if caller is not None:
            try:
                local_values = list(caller.f_locals.values())[:32]
            except Exception:
                local_values = []
            for obj in local_values:
                if _is_mock(obj):
                    continue
                fields = _dict_of(obj)
                if not fields:
                    continue
                for name, value in fields.items():
                    if value is root:
                        real = _class_lookup(type(obj), name)
                        if real is not _MISSING:
                            readings = seams.readings(
                                _real_kind(obj, name, real, True), seams.STAND_IN_PLAIN
                            )
                            claim = _Claim(
                                _unwrap_method(real),
                                "instance-attribute",
                                True,
                                MOCK_OBJECT,
                                readings,
                                type(obj),
                            )
                        break
                if claim is not None:
                    break
        with contextlib.suppress(TypeError):
            self._instance_claims[id(root)] = (weakref.ref(root), claim)
        return claim

    def _seam(
        self,
        target: object,
        readings: tuple[seams.Reading, ...],
        owner: type | None,
        stand_in: object | None,
    ) -> seams.Seam | None:
        """The seam of one substitution, read once: signatures are not read per call."""
        key = (id(target), readings, id(owner), id(stand_in))
        cached = self._seams.get(key)
        if cached is not None:
            held = cached[0]
            if held[0] is target and held[1] is owner and held[2] is stand_in:
                return cached[1]
        if len(self._seams) > 4096:
            self._seams.clear()
        seam = seams.make_seam(target, readings, owner, stand_in)
        self._seams[key] = ((target, owner, stand_in), seam)
        return seam

    # -- fakes and stubs -----------------------------------------------------------------

    def fake_key(self, info: CodeInfo, frame: FrameType, from_repo: bool) -> tuple[Any, ...] | None:
        """The substitution key when test code runs as a stand-in, else None.

        Where the stand-in claims a real function, the seam its call is checked against is
        left for ``check_fake_call``, which the tracer calls once the node exists.
        """
        registered = self.codes.get(id(info.code))
        if registered is not None and registered[0] is info.code:
            claim = registered[1]
            real = _unwrap_method(claim.obj)
            claimed = self.tracer.symbol_of(real)
            if claimed is not None:
                self._pend_seam(frame, real, claim)
            return (claim.mechanism, info.symbol, claimed, claim.relation, "")
        if not from_repo:
            return None
        if info.receiver is None:
            stored = self._function_claim(info.code, frame)
            if stored is not None:
                claimed = self.tracer.symbol_of(stored.obj)
                if claimed is not None:
                    self._pend_seam(frame, stored.obj, stored)
                    return (STUB, info.symbol, claimed, stored.relation, "")
            return (STUB, info.symbol, None, "none", "")
        try:
            receiver = frame.f_locals.get(info.receiver)
        except Exception:
            receiver = None
        cls = receiver if isinstance(receiver, type) else type(receiver)
        name = info.code.co_name
        claimed = None
        for klass in _type_mro(cls)[1:]:
            real = _type_dict(klass).get(name, _MISSING)
            if real is _MISSING:
                continue
            symbol = self.tracer.symbol_of(_unwrap_method(real))
            if symbol is not None and self.tracer.origin_of(symbol) == "repo":
                claimed = symbol
                self._pend_override_seam(frame, info.code, cls, name, real)
            break
        return (FAKE, info.symbol, claimed, "override" if claimed else "none", "")

    def check_fake_call(self, node: Node, frame: FrameType) -> None:
        """Check the call a fake or stub just received against the real target's signature."""
        pending = self._pending.pop(id(frame), None)
        if pending is None or pending[0] is not frame.f_code:
            return
        seam = pending[1]
        try:
            call = seams.call_of(seam.stand_in, frame.f_locals) if seam.stand_in else None
            flags = node.flags
            if flags is None:
                flags = node.flags = set()
            if call is None:
                flags.update(seam.flags)
            else:
                seams.check_call(seam, flags, call[0], call[1])
        except Exception as exc:
            self.failed(exc)

    def _pend_seam(self, frame: FrameType, real: object, claim: _Claim) -> None:
        if claim.readings is None or not isinstance(real, FunctionType):
            return
        seam = self._seam(real, claim.readings, claim.owner, claim.stand_in)
        if seam is not None:
            self._pending[id(frame)] = (frame.f_code, seam)

    def _pend_override_seam(
        self, frame: FrameType, code: CodeType, cls: type, name: str, real: object
    ) -> None:
        """An overriding method's seam: both sit on classes, so each binds like the other."""
        target = _unwrap_method(real)
        if not isinstance(target, FunctionType):
            return
        own = _class_lookup(cls, name)
        if _code_of(own) is not code:
            return
        readings = seams.readings(_real_kind(cls, name, real, False), _stand_in_kind(cls, own))
        seam = self._seam(target, readings, cls, _unwrap_method(own))
        if seam is not None:
            self._pending[id(frame)] = (code, seam)

    def _function_claim(self, code: CodeType, frame: FrameType) -> _Claim | None:
        """A test function stored on a real object under a name its class defines as a method
        (``obj.method = fake``), found once per function in its caller's objects."""
        cached = self._function_claims.get(id(code))
        if cached is not None and cached[0] is code:
            return cached[1]
        claim: _Claim | None = None
        caller = frame.f_back
        if caller is not None:
            try:
                local_values = list(caller.f_locals.values())[:32]
            except Exception:
                local_values = []
            for obj in local_values:
                mro = _type_mro(type(obj))
                if type in mro or ModuleType in mro or _NonCallableMock in mro:
                    continue
                fields = _dict_of(obj)
                if not fields:
                    continue
                for name, value in fields.items():
                    if type(value) is not FunctionType or value.__code__ is not code:
                        continue
                    real = _class_lookup(type(obj), name)
                    if _is_real_callable(real) and not isinstance(real, type):
                        readings = seams.readings(
                            _real_kind(obj, name, real, True), seams.STAND_IN_PLAIN
                        )
                        claim = _Claim(
                            _unwrap_method(real),
                            "instance-attribute",
                            True,
                            STUB,
                            readings,
                            type(obj),
                            value,
                        )
                    break
                if claim is not None:
                    break
        if len(self._function_claims) > 4096:
            self._function_claims.clear()
        self._function_claims[id(code)] = (code, claim)
        return claim


def _join_path(names_from_leaf: list[str]) -> str:
    path = ""
    for name in reversed(names_from_leaf):
        if name == "()":
            path += "()"
        elif path:
            path += "." + name
        else:
            path = name
    return path


def _follow(
    obj: object, names_from_leaf: list[str], instance: bool
) -> tuple[object, tuple[seams.Reading, ...] | None]:
    """The real object at a mock path below a claimed root, found without running its code,
    and how a call through that path reaches it (the path says the route: no guessing)."""
    current = obj
    is_instance = instance
    readings: tuple[seams.Reading, ...] | None = None
    for name in reversed(names_from_leaf):
        if name == "()":
            if isinstance(current, type) and not is_instance:
                is_instance = True
                readings = None
                continue
            return _MISSING, None
        if isinstance(current, ModuleType):
            current = (_dict_of(current) or {}).get(name, _MISSING)
            is_instance = False
            readings = seams.PATH_FUNCTION
        elif isinstance(current, type):
            current = _class_lookup(current, name)
            readings = _path_readings(current, is_instance)
        elif is_instance or not callable(current):
            current = _class_lookup(type(current), name)
            readings = _path_readings(current, True)
        else:
            return _MISSING, None
        if current is _MISSING:
            return _MISSING, None
        current = _unwrap_method(current)
        if not isinstance(current, type):
            is_instance = False
    return current, readings


def _path_readings(raw: object, through_instance: bool) -> tuple[seams.Reading, ...] | None:
    if isinstance(raw, staticmethod):
        return seams.PATH_STATIC
    if isinstance(raw, classmethod):
        return seams.PATH_CLASSMETHOD
    if not isinstance(raw, FunctionType):
        return None  # a property's value, a nested class: not a call of the function found
    return seams.PATH_INSTANCE if through_instance else seams.PATH_CLASS


def _real_kind(owner: object, name: str, original: object, through_instance: bool) -> int:
    """How the replaced attribute received calls, from the raw object and where it was."""
    if isinstance(original, staticmethod):
        return seams.REAL_STATIC
    if isinstance(original, classmethod):
        return seams.REAL_CLASSMETHOD
    if isinstance(original, MethodType):
        bound_to = original.__self__
        return seams.REAL_CLASSMETHOD if isinstance(bound_to, type) else seams.REAL_BOUND
    if not isinstance(original, FunctionType):
        return seams.REAL_FUNCTION
    if through_instance:
        return seams.REAL_BOUND
    if isinstance(owner, type):
        # ``patch`` reads an inherited attribute with getattr, which unwraps a staticmethod.
        for klass in _type_mro(owner)[1:]:
            raw = _type_dict(klass).get(name, _MISSING)
            if raw is _MISSING:
                continue
            if isinstance(raw, staticmethod) and raw.__func__ is original:
                return seams.REAL_STATIC
            break
        return seams.REAL_METHOD
    return seams.REAL_FUNCTION


def _stand_in_kind(owner: object, replacement: object) -> int:
    """How the stand-in receives calls: only a function on a class binds a receiver."""
    if not isinstance(owner, type):
        return seams.STAND_IN_PLAIN
    if isinstance(replacement, classmethod):
        return seams.STAND_IN_CLASSMETHOD
    if isinstance(replacement, FunctionType):
        return seams.STAND_IN_BINDS
    return seams.STAND_IN_PLAIN


def _inherited(owner: object, name: str) -> tuple[object, bool]:
    """What ``name`` was on ``owner`` before it was set in its own __dict__, and whether that
    was a class attribute met through an instance."""
    if isinstance(owner, ModuleType):
        return _MISSING, False
    if isinstance(owner, type):
        for klass in _type_mro(owner)[1:]:
            namespace = _type_dict(klass)
            if name in namespace:
                return namespace[name], False
        return _MISSING, False
    return _class_lookup(type(owner), name), True


def _unwrap_method(obj: object) -> object:
    if isinstance(obj, (staticmethod, classmethod)):
        return obj.__func__
    if isinstance(obj, MethodType):
        return obj.__func__
    if isinstance(obj, property) and obj.fget is not None:
        return obj.fget
    return obj


def _code_of(obj: object) -> CodeType | None:
    obj = _unwrap_method(obj)
    if isinstance(obj, FunctionType):
        return obj.__code__
    return None


def _raw_attribute(owner: object, name: str) -> object:
    data = _dict_of(owner)
    if data is not None and name in data:
        return data[name]
    if isinstance(owner, type):
        return _type_dict(owner).get(name, _MISSING)
    return _MISSING


def _is_real_callable(obj: object) -> bool:
    obj = _unwrap_method(obj)
    return isinstance(obj, (FunctionType, type)) and not _is_mock(obj)
