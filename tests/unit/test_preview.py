"""Previews of small values (``collect/preview.py``, ``--genome-preview``): read back from the
canonical forms the digests are made of, shown only for small scalars, masked by the secret
rules, withheld for secret-named parameters, secret-named functions' results and values of
the environment; and the reader of forms (``values.form_end``) agrees with the writer."""

from __future__ import annotations

import datetime
import decimal
import os
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diffgenome.recording.collect import stable, values
from diffgenome.recording.collect.contract import ARG_CANON_SEPARATOR, ARG_SHAPE_SEPARATOR
from diffgenome.recording.collect.preview import MAX_PREVIEW, ValuePreviews
from diffgenome.recording.collect.redact import Redactor

DIGESTER = values.Digester(b"k" * 32)
TOKEN = "tok_8f885559d76fbd9cc9fb9459a063a18c"

LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.complex_numbers(allow_nan=True),
    st.text(max_size=20),
    st.binary(max_size=6),
    st.timedeltas(),
    st.datetimes(timezones=st.none() | st.timezones()),
    st.times(),
    st.dates(),
    st.decimals(allow_nan=True),
    st.uuids(),
    st.fractions(),
)
FORMED = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.integers() | st.text(max_size=3), inner, max_size=3)
        | st.frozensets(st.integers(), max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=500, deadline=None)
@given(FORMED)
def test_every_form_is_read_to_its_end(value: object) -> None:
    form = values.canonical(value)
    if form is None:
        return
    assert values.form_end(form) == len(form)
    # Joined as a call's arguments are, each form is found again past the separator.
    joined = ARG_CANON_SEPARATOR.join([form, form])
    end = values.form_end(joined)
    assert end == len(form) and joined[end : end + 1] == ARG_CANON_SEPARATOR


@settings(max_examples=300, deadline=None)
@given(st.none() | st.booleans() | st.integers() | st.floats() | st.complex_numbers() | st.text())
def test_scalars_read_back_as_they_were(value: object) -> None:
    form = values.canonical(value)
    assert form is not None
    back = values.scalar_of(form)
    assert type(back) is type(value)
    assert values.canonical(back) == form


def test_other_forms_are_no_scalars() -> None:
    for value in ([1], (1,), b"x", datetime.date(2024, 1, 1), decimal.Decimal(1), uuid.UUID(int=1)):
        form = values.canonical(value)
        assert form is not None
        with pytest.raises(values.FormError):
            values.scalar_of(form)
    for junk in (b"", b"s9:ab", b"i12", b"q", b"l2:i1;", b"v3:abci1;"):
        with pytest.raises(values.FormError):
            values.form_end(junk)


def _previews(environ: dict[str, str] | None = None) -> ValuePreviews:
    previews = ValuePreviews(Redactor(DIGESTER, {}).text)
    if environ is not None:
        saved = dict(os.environ)
        os.environ.update(environ)
        try:
            previews.note_environment()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return previews


def _args(previews: ValuePreviews, **arguments: object) -> str | None:
    shapes, forms = [], []
    for name, value in arguments.items():
        shape, form = values.summarize(value)
        assert form is not None
        shapes.append(f"{name}={shape}")
        forms.append(form)
    return previews.args(ARG_SHAPE_SEPARATOR.join(shapes), ARG_CANON_SEPARATOR.join(forms))


def _result(previews: ValuePreviews, value: object, symbol: str = "py:pkg.m.f") -> str | None:
    form = values.canonical(value)
    assert form is not None
    show = previews.result_of(symbol)
    return None if show is None else show("", form)


def test_small_scalars_read_as_python_writes_them() -> None:
    previews = _previews()
    assert _result(previews, "---") == "'---'"
    assert _result(previews, "it's\n") == '"it\'s\\n"'
    assert _result(previews, None) == "None"
    assert _result(previews, True) == "True"
    assert _result(previews, -0.0) == "-0.0"
    assert _result(previews, float("nan")) == "nan"
    assert _result(previews, 2j) == "2j"
    assert _result(previews, 999_999_999_999) == "999999999999"
    assert _result(previews, "x" * MAX_PREVIEW) == repr("x" * MAX_PREVIEW)
    assert _args(previews, width=3, fill="-") == "width=3, fill='-'"
    assert _args(previews, sep="\x1e", n=1) == "sep='\\x1e', n=1"  # the separator inside a str


def test_what_is_not_a_small_scalar_has_no_preview() -> None:
    previews = _previews()
    assert _result(previews, "x" * (MAX_PREVIEW + 1)) is None
    assert _result(previews, 10**40) is None  # 41 characters
    for value in ([1], b"ab", datetime.timedelta(1), decimal.Decimal("2.50")):
        assert _result(previews, value) is None
    # One argument that cannot be shown: the entry has no preview at all.
    assert _args(previews, width=3, rows=[1, 2]) is None


def test_secret_rules_mask_what_they_call_secret() -> None:
    previews = _previews()
    assert _result(previews, TOKEN) == f"'{Redactor(DIGESTER, {}).mark(TOKEN)}'"
    assert _result(previews, 4111111111111111).startswith("<secret:")  # 16 digits
    note = _args(previews, user="ada", note=f"key {TOKEN}")
    assert note == f"user='ada', note='key {Redactor(DIGESTER, {}).mark(TOKEN)}'"


@pytest.mark.parametrize("name", ["password", "api_key", "token", "AUTH", "db_secret", "pwd"])
def test_secret_named_parameters_and_functions_are_never_shown(name: str) -> None:
    previews = _previews()
    assert _args(previews, **{"user": "ada", name: "opensesame"}) is None
    assert _result(previews, "opensesame", f"py:pkg.m.get_{name}") is None
    assert _result(previews, "opensesame", f"py:pkg.m.C.{name}") is None


def test_values_of_the_environment_are_never_shown() -> None:
    previews = _previews({"GREETING": "grandmother rhubarb", "SHLVL": "1", "PORT": "8080"})
    assert _result(previews, "grandmother rhubarb") is None
    assert _result(previews, "GRANDMOTHER RHUBARB") is None  # in any case
    assert _result(previews, "x grandmother rhubarb y") is None  # held within
    assert _result(previews, 8080) is None  # the number as the environment writes it
    assert _result(previews, 1) == "1"  # too short to say where it came from
    assert _result(previews, "80") == "'80'"
    # Once seen, withheld for the session, also after the variable is gone.
    assert "GREETING" not in os.environ
    previews.note_environment()
    assert _result(previews, "grandmother rhubarb") is None


def test_a_preview_is_kept_beside_the_digest_and_never_changes_it() -> None:
    bounded = values.BoundedValues(8)
    bounded.add(*values.summarize("---"))
    bounded.add(*values.summarize([1]))
    plain, _ = bounded.export(DIGESTER)
    previews = _previews()
    shown, _ = bounded.export(DIGESTER, previews.result_of("py:pkg.m.f"))
    assert [{k: v for k, v in e.items() if k != "preview"} for e in shown] == plain
    assert {e["shape"]: e.get("preview") for e in shown} == {"str": "'---'", "list[int]": None}

    def broken(shape: str, form: bytes) -> str | None:
        raise RuntimeError("never an error")

    assert bounded.export(DIGESTER, broken)[0] == plain


def _phases(previews: ValuePreviews, monkeypatch: pytest.MonkeyPatch, tests: int) -> None:
    """What a session does to the environment at every phase of ``tests`` tests: pytest sets
    ``PYTEST_CURRENT_TEST``, the recorder ``DIFFGENOME_CHILD``, then the phase ends."""
    for n in range(tests):
        for phase in ("setup", "call", "teardown"):
            monkeypatch.setenv("PYTEST_CURRENT_TEST", f"tests/test_m.py::test_{n} ({phase})")
            monkeypatch.setenv("DIFFGENOME_CHILD", f"tok{n}{phase}:/tmp/diffgenome-children")
            previews.note_environment()


def test_the_values_of_the_per_phase_variables_are_not_withheld(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A test id and diffgenome's own token hold no secret: taken as values, one more was
    kept at every phase, and every scalar was searched for all of them (#47)."""
    previews = _previews()
    _phases(previews, monkeypatch, 3)
    shown = "tests/test_m.py::test_1 (call)"
    assert _result(previews, shown) == repr(shown)
    assert _result(previews, "tok2teardown:/tmp/diffgenome-children") is not None


def test_a_phase_whose_environment_did_not_change_reads_and_compiles_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the per-phase variables change: the environment is read and its patterns
    compiled as often after 300 phases as after 3 (it was every phase, each pattern holding
    every test id seen so far: cookiecutter's suite took 519 s instead of 16 s)."""
    previews = _previews()
    _phases(previews, monkeypatch, 1)
    after_one = (previews.scans, previews.rebuilds, previews.compiled)
    _phases(previews, monkeypatch, 100)
    assert (previews.scans, previews.rebuilds, previews.compiled) == after_one


def test_a_new_value_every_test_is_compiled_a_logarithmic_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fixture that sets a new value in every test (``HOME`` to its ``tmp_path``) makes a
    new value at every phase end; each is still withheld for the rest of the session, and
    compiled again only when its run of patterns doubles, never once per later test."""
    previews = _previews()
    base = previews.compiled
    tests = 512
    for n in range(tests):
        monkeypatch.setenv("FIXTURE_HOME", f"/tmp/pytest-7/test_{n:04d}0")
        previews.note_environment()
    assert previews.scans >= tests
    assert previews.compiled - base <= tests * 10  # log2(512) + 1 runs a value is part of
    monkeypatch.delenv("FIXTURE_HOME")
    previews.note_environment()
    # As in a session, the temp folder is a location made stable (``<tmp>``): the values
    # are still found in the forms that hold them rewritten.
    stable.configure([("/tmp", "<tmp>")])
    try:
        _held_within(previews)
    finally:
        stable.configure([])


def _held_within(previews: ValuePreviews) -> None:
    for n in (0, 1, 255, 256, 510, 511):
        value = f"/tmp/pytest-7/test_{n:04d}0"
        assert _result(previews, value) is None, value  # equal
        assert _result(previews, f"at {value}!") is None, value  # held within
    assert _result(previews, "/tmp/pytest-7/test_9999") is not None
