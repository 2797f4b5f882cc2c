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
import inspect
import sys
import weakref
from collections.abc import Callable
from types import CodeType, FrameType, FunctionType, MethodType, ModuleType
from typing import TYPE_CHECKING, Any
from unittest import mock as _mock

from diffgenome.protocol.vocab import FAKE, INTERPOSITION, MOCK_OBJECT, STUB
from diffgenome.recording.collect import values

if TYPE_CHECKING:
    from diffgenome.recording.collect.tracer import CodeInfo, Node, Tracer

_getframe = sys._getframe
_signature = inspect.signature
_object_getattribute = object.__getattribute__
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_NonCallableMock = _mock.NonCallableMock
_CallableMixin = _mock.CallableMixin
_patch_class: Any = getattr(_mock, "_patch", None)
_patch_dict_class: Any = getattr(_mock, "_patch_dict", None)


def _is_mock(obj: object) -> bool:
    return _NonCallableMock in _type_mro(type(obj))


def _dict_of(obj: object) -> dict[str, Any] | None:
    try:
        data = _object_getattribute(obj, "__dict__")
    except Exception:
        return None
    return data if type(data) is dict else None


def _class_lookup(cls: type, name: str) -> object:
    """A class attribute as stored (no descriptor runs), searched along the MRO."""
    for klass in _type_mro(cls):
        namespace = _type_dict(klass)
        if name in namespace:
            return namespace[name]
    return _MISSING


_MISSING = object()


class _Claim:
    """What a stand-in root claims to replace, and how that is known."""

    __slots__ = ("instance", "mechanism", "obj", "relation")

    def __init__(self, obj: object, relation: str, instance: bool, mechanism: str) -> None:
        self.obj = obj
        self.relation = relation
        self.instance = instance
        self.mechanism = mechanism


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

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.specs = _Registry()  # mock -> its spec
        self.claims = _Registry()  # replacement -> what it replaced
        self.codes: dict[int, tuple[CodeType, _Claim]] = {}  # replacement function code
        self._saved: list[tuple[Any, str, Any]] = []
        self._signatures: dict[int, tuple[object, Any]] = {}
        self._instance_claims: dict[int, tuple[Any, _Claim | None]] = {}
        self.errors = 0

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
            self._wrap(monkeypatch.MonkeyPatch, "setattr", self._make_monkeypatch_setattr)

    def uninstall(self) -> None:
        while self._saved:
            owner, name, original = self._saved.pop()
            setattr(owner, name, original)
        self.specs.clear()
        self.claims.clear()
        self.codes.clear()

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
                except Exception:
                    standins.errors += 1
            return result

        return _mock_add_spec

    def _make_patch_enter(self, original: Callable[..., Any]) -> Callable[..., Any]:
        standins = self

        def __enter__(patcher: Any) -> Any:
            result = original(patcher)
            try:
                standins._after_patch(patcher)
            except Exception:
                standins.errors += 1
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
        self._register_replacement(replacement, original, "patch-target")

    def _register_replacement(self, replacement: object, original: object, relation: str) -> None:
        original = _unwrap_method(original)
        if _is_mock(replacement):
            self.claims.put(replacement, _Claim(original, relation, False, MOCK_OBJECT))
            return
        function_dict = _dict_of(replacement)
        if function_dict is not None and _is_mock(function_dict.get("mock")):
            # create_autospec of a function: calls go through ``replacement.mock``.
            self.claims.put(function_dict["mock"], _Claim(original, relation, False, MOCK_OBJECT))
        code = _code_of(replacement)
        if code is not None:
            mechanism = FAKE if isinstance(original, type) else STUB
            self.codes[id(code)] = (code, _Claim(original, relation, False, mechanism))

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
            except Exception:
                standins.errors += 1
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
                    if _is_real_callable(old):
                        replacement = _raw_attribute(owner, name)
                        if replacement is not _MISSING and callable(replacement):
                            standins._register_replacement(replacement, old, "monkeypatch")
            except Exception:
                standins.errors += 1
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
                except Exception:
                    standins.errors += 1
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
        claim, path, target = self._resolve_mock(mock, frame)
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
        substitute = values.type_name(type(mock))
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
        bound = claim is not None and (claim.instance or path != "")
        if (
            claim is not None
            and target is not _MISSING
            and claim.relation != "spec"
            and not self._signature_accepts(target, bound, args, kwargs)
        ):
            flags = node.flags
            if flags is None:
                flags = node.flags = set()
            flags.add("signature_mismatch")
        return node

    def _resolve_mock(self, mock: Any, frame: FrameType) -> tuple[_Claim | None, str, object]:
        """The nearest claim up the mock's parent chain, the path below it, and the target."""
        names: list[str] = []
        current: Any = mock
        for _ in range(64):
            claim = self.claims.get(current) or self.specs.get(current)
            if claim is None and not names:
                claim = self._instance_attribute_claim(current, frame)
            if claim is not None:
                path = _join_path(names)
                target = _follow(claim.obj, names, claim.instance)
                return claim, path, target
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
            return root_claim, _join_path(names), _follow(root_claim.obj, names, True)
        return None, _join_path(names), _MISSING

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
                            claim = _Claim(real, "instance-attribute", True, MOCK_OBJECT)
                        break
                if claim is not None:
                    break
        with contextlib.suppress(TypeError):
            self._instance_claims[id(root)] = (weakref.ref(root), claim)
        return claim

    def _signature_accepts(
        self, target: object, bound: bool, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bool:
        """Whether the real target could accept this call (never calls the target)."""
        if not isinstance(target, FunctionType):
            return True
        cached = self._signatures.get(id(target))
        if cached is None or cached[0] is not target:
            try:
                signature = _signature(target)
            except (TypeError, ValueError):
                return True
            cached = (target, signature)
            self._signatures[id(target)] = cached
        signature = cached[1]
        try:
            if bound:
                signature.bind(None, *args, **kwargs)
            else:
                signature.bind(*args, **kwargs)
        except TypeError:
            return False
        return True

    # -- fakes and stubs -----------------------------------------------------------------

    def fake_key(self, info: CodeInfo, frame: FrameType, from_repo: bool) -> tuple[Any, ...] | None:
        """The substitution key when test code runs as a stand-in, else None."""
        registered = self.codes.get(id(info.code))
        if registered is not None and registered[0] is info.code:
            claim = registered[1]
            claimed = self.tracer.symbol_of(_unwrap_method(claim.obj))
            return (claim.mechanism, info.symbol, claimed, claim.relation, "")
        if not from_repo:
            return None
        if info.receiver is None:
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
            break
        return (FAKE, info.symbol, claimed, "override" if claimed else "none", "")


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


def _follow(obj: object, names_from_leaf: list[str], instance: bool) -> object:
    """The real object at a mock path below a claimed root, found without running its code."""
    current = obj
    is_instance = instance
    for name in reversed(names_from_leaf):
        if name == "()":
            if isinstance(current, type) and not is_instance:
                is_instance = True
                continue
            return _MISSING
        if isinstance(current, ModuleType):
            current = (_dict_of(current) or {}).get(name, _MISSING)
            is_instance = False
        elif isinstance(current, type):
            current = _class_lookup(current, name)
        elif is_instance or not callable(current):
            current = _class_lookup(type(current), name)
        else:
            return _MISSING
        if current is _MISSING:
            return _MISSING
        current = _unwrap_method(current)
        if not isinstance(current, type):
            is_instance = False
    return current


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
