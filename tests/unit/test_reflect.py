"""The one reader of instance dicts that the tracer, the stand-ins and values.py share."""

from __future__ import annotations

import types

from diffgenome.recording.collect import reflect


class Plain:
    def __init__(self) -> None:
        self.size = 3


class Slotted:
    __slots__ = ("size",)

    def __init__(self) -> None:
        self.size = 3


def test_an_instance_dict_is_read_as_it_is() -> None:
    obj = Plain()
    assert reflect.instance_dict(obj) is obj.__dict__
    module = types.ModuleType("m")
    assert reflect.instance_dict(module) is module.__dict__


def test_what_has_no_dict_reads_as_none() -> None:
    assert reflect.instance_dict(Slotted()) is None
    assert reflect.instance_dict(3) is None
    assert reflect.instance_dict(Plain) is None  # a class's namespace is no instance dict


def test_a_dict_property_is_never_run() -> None:
    ran: list[str] = []

    class Lazy:
        @property
        def __dict__(self) -> dict[str, object]:  # type: ignore[override]
            ran.append("property")
            return {"size": 1}

    assert reflect.instance_dict(Lazy()) is None
    assert ran == []


def test_a_dict_with_a_key_whose_eq_could_run_is_not_read() -> None:
    class Key:
        def __hash__(self) -> int:
            return 12345  # no collision here; a lookup of a name hashing alike would call __eq__

        def __eq__(self, other: object) -> bool:
            raise AssertionError("ran")

    obj = Plain()
    obj.__dict__[Key()] = 1  # type: ignore[index]
    assert reflect.instance_dict(obj) is None


def test_what_is_remembered_per_class_is_forgotten_at_a_phase_start() -> None:
    reflect.instance_dict(Plain())
    assert any(entry[0] is Plain for entry in reflect._DICT_DESCRIPTORS.values())
    reflect.forget_classes()
    assert reflect._DICT_DESCRIPTORS == {}
