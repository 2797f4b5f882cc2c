"""The compiled core's own value paths agree with values.py, value by value.

The compiled core computes the summaries of small ints and short strs itself and folds
overflowing values into the multiset fingerprint itself (``_accel.c``); everything else it
asks values.py for. These tests compare both on generated values; the end-to-end comparison
of whole genomes is tests/e2e/test_cores.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diffgenome.recording.collect import tracer as tracer_module
from diffgenome.recording.collect import values
from diffgenome.recording.collect.contract import Bounds
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
