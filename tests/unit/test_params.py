"""A parametrized test's values as keyed digests (recording/params.py), remembered or not."""

from __future__ import annotations

import gc
import operator
import weakref
from types import SimpleNamespace
from typing import Any

from diffgenome.recording.collect import values
from diffgenome.recording.params import param_digests

DIGESTER = values.Digester(b"p" * 32)


def _item(**params: object) -> Any:
    return SimpleNamespace(callspec=SimpleNamespace(params=params))


def test_a_remembered_digest_is_the_one_computed_afresh() -> None:
    memo: dict[tuple[type, object], str | None] = {}
    first = param_digests(_item(op=operator.lt, left="1.0", flag=True), DIGESTER, memo)
    again = param_digests(_item(op=operator.lt, left="1.0", flag=True), DIGESTER, memo)
    fresh = param_digests(_item(op=operator.lt, left="1.0", flag=True), DIGESTER, {})
    assert first == again == fresh
    assert first is not None and first["op"] is not None
    assert (type(operator.lt), operator.lt) in memo  # a module's builtin function
    other = param_digests(_item(op=operator.le, left=1, flag=1), DIGESTER, memo)
    assert other is not None
    assert other["op"] != first["op"]
    assert other["flag"] != first["flag"]  # True and 1 stay apart
    assert other["left"] != first["left"]


def test_a_bound_builtin_method_is_not_remembered_nor_its_receiver_kept() -> None:
    class Box(list[int]):
        pass

    box = Box()
    memo: dict[tuple[type, object], str | None] = {}
    digests = param_digests(_item(add=box.append), DIGESTER, memo)
    assert digests == param_digests(_item(add=box.append), DIGESTER, {})
    assert memo == {}
    gone = weakref.ref(box)
    del box
    gc.collect()
    assert gone() is None
