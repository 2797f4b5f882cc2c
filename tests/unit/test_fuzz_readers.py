"""Issue #6, fuzzed readers: mutated REAL genome documents and stores never make a reader fail
with anything but the errors the CLI turns into one line -- ``StoreError``, ``FormatError``,
pydantic's ``ValidationError`` -- and the CLI itself never shows a traceback.

The seed is one real ``pytest --genome`` recording of a small project, made once per module:
a document exported by ``diffgenome export`` and the store's ``genome.sqlite``. Hypothesis then
flips, truncates, zeroes and splices bytes, and replaces values deep inside the JSON.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from e2e.helpers import STORE, export, make_project, run_pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from diffgenome.analysis.cli import main
from diffgenome.analysis.models import GenomeDocument, genome_problem
from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.formats import GENOME_FORMAT, FormatError, check_format
from diffgenome.store.layout import DB_FILE
from diffgenome.store.reader import StoreReader
from diffgenome.store.writer import StoreWriter

SEED_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/mod.py": """
        import dataclasses
        import socket


        @dataclasses.dataclass
        class Item:
            name: str
            qty: int


        def total(items, factor=1):
            out = 0
            for item in items:
                if item.qty <= 0:
                    raise ValueError("bad quantity")
                out += item.qty * factor
            return out


        def gen(n):
            yield from range(n)


        def dial():
            try:
                socket.create_connection(("example.invalid", 80), timeout=1)
            except OSError as exc:
                return type(exc).__name__
    """,
    "tests/test_mod.py": """
        from unittest import mock

        import pytest

        from pkg import mod


        def test_total():
            assert mod.total([mod.Item("a", 2), mod.Item("b", 3)], factor=2) == 10


        def test_rejects():
            with pytest.raises(ValueError):
                mod.total([mod.Item("a", 0)])


        @pytest.mark.parametrize("n", [0, 3])
        def test_gen(n):
            assert list(mod.gen(n)) == list(range(n))


        def test_mocked():
            with mock.patch("pkg.mod.total", return_value=7) as fake:
                assert mod.total([]) == 7
            assert fake.called


        def test_egress():
            assert mod.dial() == "EgressRefused"
    """,
}

READER_ERRORS = (StoreError, FormatError, ValidationError)
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


class Seed(tuple[str, bytes, dict[str, Any]]):
    """(exported document text, genome.sqlite bytes with the WAL folded in, parsed document);
    a short repr keeps Hypothesis from printing 100 kB per example."""

    def __repr__(self) -> str:
        return f"Seed(document of {len(self[0])} chars, store of {len(self[1])} bytes)"


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    project = make_project(tmp_path_factory.mktemp("fuzzseed"), SEED_PROJECT)
    run_pytest(project, "--genome", "-q").check_returncode()
    doc = export(project)
    assert len(doc["tests"]) >= 6
    db = project / STORE / DB_FILE
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    text = json.dumps(doc, indent=2, sort_keys=True)
    return Seed((text, db.read_bytes(), doc))


# -- the genome JSON reader -------------------------------------------------------------------


def read_genome_json(text: str | bytes) -> GenomeDocument:
    """What every reader of a genome file does: the format gate, then the model."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        check_format(data.get("format"), GENOME_FORMAT)
    return GenomeDocument.model_validate_json(text)


@st.composite
def byte_mutations(draw: st.DrawFn, original: bytes) -> bytes:
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "truncate", "splice", "delete", "zero"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del data[at:]
        elif kind == "splice":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        else:
            end = min(len(data), at + draw(st.integers(1, 4096)))
            data[at:end] = bytes(end - at)
    return bytes(data)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["diffgenome-genome/1", "diffgenome-genome/2", "call", "os_event", "-1"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*here, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*here, index)))
    return found


@st.composite
def value_mutations(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """The document with values replaced or removed at random places, at any depth."""
    mutated = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(mutated) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = mutated
        for step in path[:-1]:
            parent = parent[step]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return mutated


@FUZZ
@given(data=st.data())
def test_mutated_genome_bytes_fail_only_with_reader_errors(seed: Seed, data: st.DataObject) -> None:
    text = data.draw(byte_mutations(seed[0].encode()))
    with contextlib.suppress(*READER_ERRORS):
        read_genome_json(text)


@FUZZ
@given(data=st.data())
def test_mutated_genome_values_fail_only_with_reader_errors(
    seed: Seed, data: st.DataObject
) -> None:
    doc = data.draw(value_mutations(seed[2]))
    text = json.dumps(doc)
    with contextlib.suppress(*READER_ERRORS):
        read_genome_json(text)
    with contextlib.suppress(*READER_ERRORS):
        GenomeDocument.model_validate(doc)


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def assert_cli_answer(code: int, err: str) -> None:
    """Either an answer (0; 1 when the diff found something; 3 when a mutated outcome reads
    as a test that now fails) or one error line and exit 2, after at most the progress lines
    of the steps that went well (docs/diffing.md allows them)."""
    lines = err.splitlines()
    if code == 2:
        assert lines and lines[-1].startswith("diffgenome: error: "), err
        assert all(
            line.startswith("diffgenome: ") and "error" not in line for line in lines[:-1]
        ), err
    else:
        assert code in (0, 1, 3), (code, err)
    assert "Traceback" not in err


@settings(FUZZ, max_examples=60)
@given(data=st.data())
def test_diff_of_a_mutated_genome_file_is_an_answer_or_one_line(
    seed: Seed, data: st.DataObject
) -> None:
    if data.draw(st.booleans()):
        text = data.draw(byte_mutations(seed[0].encode()))
    else:
        text = json.dumps(data.draw(value_mutations(seed[2]))).encode()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder) / "base.json"
        head = Path(folder) / "head.json"
        base.write_bytes(text)
        head.write_text(seed[0])
        code, _, err = run_cli("diff", str(base), str(head), "--store", folder + "/none")
    assert_cli_answer(code, err)


# -- the store reader -------------------------------------------------------------------------

PAGE = 4096


@st.composite
def store_mutations(draw: st.DrawFn, original: bytes) -> bytes:
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        pages = max(1, -(-len(data) // PAGE))
        kind = draw(st.sampled_from(["flip", "flip", "truncate", "zero-page", "garbage-page"]))
        if kind == "flip":
            for _ in range(draw(st.integers(1, 8))):
                at = draw(st.integers(0, len(data) - 1))
                data[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del data[draw(st.integers(0, len(data) - 1)) :]
        else:
            page = draw(st.integers(0, pages - 1))
            start, end = page * PAGE, min(len(data), (page + 1) * PAGE)
            if kind == "zero-page":
                data[start:end] = bytes(end - start)
            else:
                data[start:end] = draw(st.binary(min_size=end - start, max_size=end - start))
        if not data:
            break
    return bytes(data)


def read_everything(folder: str) -> None:
    """Everything the CLI reads from a store: the run list, each run's tests and document."""
    with StoreReader.open(folder) as reader:
        for run in reader.runs():
            reader.resolve(run.id)
            reader.test_summaries(run.id)
            GenomeDocument.model_validate(reader.document(run.id))


@settings(FUZZ, max_examples=300)
@given(data=st.data())
def test_a_mutated_store_fails_only_with_reader_errors_and_is_not_touched(
    seed: Seed, data: st.DataObject
) -> None:
    mutated = data.draw(store_mutations(seed[1]))
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / DB_FILE
        db.write_bytes(mutated)
        with contextlib.suppress(*READER_ERRORS):
            read_everything(folder)
        assert db.read_bytes() == mutated
        # SQLite may leave its shared-memory index and an empty WAL beside the file: no data.
        extra = {p.name for p in Path(folder).iterdir()} - {DB_FILE}
        assert extra <= {DB_FILE + "-shm", DB_FILE + "-wal"}, extra
        wal = Path(folder) / (DB_FILE + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0


@settings(FUZZ, max_examples=25)
@given(data=st.data())
def test_the_cli_on_a_mutated_store_is_an_answer_or_one_line(
    seed: Seed, data: st.DataObject
) -> None:
    mutated = data.draw(store_mutations(seed[1]))
    command = data.draw(st.sampled_from([["runs"], ["show", "latest"], ["export", "latest"]]))
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / DB_FILE).write_bytes(mutated)
        if command[0] == "export":
            command = [*command, "-o", folder + "/out.json"]
        code, _, err = run_cli(*command, "--store", folder)
        assert (Path(folder) / DB_FILE).read_bytes() == mutated
    assert code in (0, 2), (code, err)
    assert_cli_answer(code, err)


def test_the_seed_itself_reads_cleanly(seed: Seed) -> None:
    """The fuzzers start from a valid document and store (else they prove nothing)."""
    assert read_genome_json(seed[0]).format == GENOME_FORMAT
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / DB_FILE).write_bytes(seed[1])
        read_everything(folder)
        with StoreReader.open(folder) as reader:
            [run] = reader.runs()
            assert reader.document(run.id) == seed[2]


@settings(FUZZ, max_examples=100)
@given(data=st.data())
def test_the_writer_opens_a_mutated_store_or_refuses_with_a_store_error(
    seed: Seed, data: st.DataObject
) -> None:
    """What ``pytest --genome`` does first with an existing store: a StoreError becomes one
    usage line; anything else would be an INTERNALERROR traceback."""
    mutated = data.draw(store_mutations(seed[1]))
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / DB_FILE).write_bytes(mutated)
        with contextlib.suppress(StoreError), StoreWriter.open(folder):
            pass


def test_a_table_name_that_is_not_utf8_is_a_store_error(seed: Seed) -> None:
    """Found by the fuzzer: a mangled name in SQLite's schema table comes back as bytes that
    Python's sqlite3 fails to decode -- a UnicodeDecodeError, not an sqlite3.Error."""
    marker = b"tablemetameta"
    assert seed[1].count(marker) == 1
    mutated = seed[1].replace(marker, b"tablem\xfftameta")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / DB_FILE
        db.write_bytes(mutated)
        with pytest.raises(StoreError) as caught:
            StoreReader.open(folder)
        assert "damaged" in str(caught.value) and "\n" not in str(caught.value)
        code, _, err = run_cli("runs", "--store", folder)
        assert code == 2 and err.count("\n") == 1 and "damaged" in err, err
        with pytest.raises(StoreError) as refused:
            StoreWriter.open(folder)
        assert "damaged" in str(refused.value) and "\n" not in str(refused.value)
        assert db.read_bytes() == mutated


@FUZZ
@given(data=st.data())
def test_the_fast_check_agrees_with_the_models_on_mutated_documents(
    seed: Seed, data: st.DataObject
) -> None:
    """``genome_problem`` (what diff and combine use: each phases object checked once) finds
    a problem exactly when the models do, here on values mutated deep inside a real
    document, and once more when both documents hold the same (valid) phases objects."""
    doc = data.draw(value_mutations(seed[2]))
    try:
        GenomeDocument.model_validate(doc)
        valid = True
    except ValidationError:
        valid = False
    assert (genome_problem(doc) is None) == valid
    assert (genome_problem(doc) is None) == valid  # a second look: remembered objects
