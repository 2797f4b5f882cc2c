"""``diffgenome export``: a stored run written as one ``diffgenome-genome/2`` document or
as JSON Lines, streamed test by test from the store and checked as it passes, to a file
moved into place only when whole or to a buffer for standard output.

The CLI reads the arguments, finds the run and hands over the output; what is written, and
how, is here.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, NoReturn

from diffgenome.analysis.models import genome_problem, record_problem
from diffgenome.analysis.outfiles import output_file
from diffgenome.analysis.previews import without_previews
from diffgenome.analysis.progress import Progress
from diffgenome.protocol.errors import UserError
from diffgenome.protocol.formats import GENOME_FORMAT
from diffgenome.protocol.jsontext import json_encoder
from diffgenome.protocol.vocab import IMPORT_TEST_ID
from diffgenome.store.reader import StoreReader, stored_phases

#: What ``--format`` takes.
EXPORT_FORMATS = ("json", "jsonl")


class ExportError(UserError):
    """A run that cannot be exported: an output that cannot be written, a stored test that
    does not form a valid document."""


@dataclass(frozen=True)
class ExportOptions:
    """How a run is written: ``--format``, ``--indent``, ``--with-previews``."""

    #: ``json``: one document, a test record per line; ``jsonl``: a test record per line.
    format: str = "json"
    #: json only: nested values indented by this many spaces (the run is held in memory).
    indent: int | None = None
    #: Keep the previews a run recorded under ``--genome-preview``.
    with_previews: bool = False


def export_run(
    reader: StoreReader,
    run_id: str,
    options: ExportOptions,
    output: str | None,
    progress: Progress,
) -> io.BytesIO | None:
    """Write run ``run_id`` as one step of ``progress``: to the file ``output``, or (None)
    into the buffer returned, for standard output once the document is whole (an error
    half-way prints no half a document) and the progress is closed (nothing of it mixes with
    the document)."""
    buffer = io.BytesIO()
    where = "" if output is None else f" to {output}"
    # Loading and writing are one step: the run is read, checked and encoded test by test.
    with progress.step("exporting", "exported", f"run {run_id}{where}") as step:
        if output is None:
            tests = _export(reader, run_id, options, buffer)
            size = buffer.tell()
        else:
            tests, size = _export_to_file(reader, run_id, options, output)
        kind = "JSON Lines" if options.format == "jsonl" else f"a {GENOME_FORMAT} document"
        # As pytest and `runs` count them; the <import> record is written too, and said.
        imported = IMPORT_TEST_ID in reader.test_ids(run_id)
        step.result = (
            f"{tests} test{'' if tests == 1 else 's'}"
            f"{' and the <import> record' if imported else ''}, {kind}"
            f"{f' of {size // 1024} kB' if size >= 0 else ''}"
        )
    return buffer if output is None else None


_COMPACT: dict[str, Any] = {
    "sort_keys": True,
    "ensure_ascii": False,
    "allow_nan": False,
    "separators": (",", ":"),
}
# Lone surrogates as their JSON escapes (protocol/jsontext.py): the export reads back as the
# store's strings, whatever they hold.
_compact_json = json_encoder(**_COMPACT)


def _export_to_file(
    reader: StoreReader, run_id: str, options: ExportOptions, output: str
) -> tuple[int, int]:
    """Write the export to a temporary file beside ``output`` and move it into place only
    when whole: an error half-way leaves no half a document."""
    try:
        with output_file(output) as handle:
            tests = _export(reader, run_id, options, handle)
            size = handle.tell() if handle.seekable() else -1  # a FIFO, a device
    except OSError as exc:
        raise ExportError(
            f"cannot write {output}: {exc.strerror or exc}; choose another -o path"
        ) from None
    return tests, size


def _export(reader: StoreReader, run_id: str, options: ExportOptions, out: BinaryIO) -> int:
    """Stream run ``run_id`` to ``out`` as ``options.format``, each test checked as it passes
    (phases read from verified store bodies are the recorder's own bytes and are not checked
    again); how many tests (``<import>`` not counted)."""
    with contextlib.closing(reader.stream(run_id)) as pieces:
        return _write_export(run_id, options, pieces, out)


def _write_export(
    run_id: str, options: ExportOptions, pieces: Iterator[dict[str, Any]], out: BinaryIO
) -> int:
    header = next(pieces)
    problem = genome_problem({**header, "tests": []})
    if problem is not None:
        _invalid(run_id, problem)
    config = (header.get("run") or {}).get("config")
    if isinstance(config, dict) and config.get("preview") is True and not options.with_previews:
        pieces = (without_previews(test) for test in pieces)
    if options.indent is not None:
        document = {**header, "tests": list(pieces)}
        problem = genome_problem(document, stored_phases)
        if problem is not None:
            _invalid(run_id, problem)
        indented = json_encoder(indent=options.indent, **{**_COMPACT, "separators": None})
        out.write(indented(document).encode())
        out.write(b"\n")
        return _test_count(document)
    jsonl = options.format == "jsonl"
    if not jsonl:
        # Keys sorted ("tests" comes last), a test record per line: compact lines are what
        # json's C encoder writes (``indent`` takes its pure-Python path: exporting
        # sqlparse's 465 tests took 71 of 83 s encoding), and a line per test keeps the file
        # readable and line-diffable.
        out.write(b"{")
        for key in sorted(header):
            out.write(b"\n" if key == min(header) else b",\n")
            out.write(f"{json.dumps(key)}:{_compact_json(header[key])}".encode())
        out.write(b',\n"tests":[')
    count = 0
    first = True
    for index, test in enumerate(pieces):
        problem = record_problem(test, stored_phases)
        if problem is not None:
            _invalid(run_id, (f"tests.{index}.{problem[0]}", problem[1]))
        if jsonl:
            out.write(_compact_json({**test, "run_id": run_id}).encode())
            out.write(b"\n")
        else:
            out.write(b"\n" if first else b",\n")
            out.write(_compact_json(test).encode())
        first = False
        count += test.get("id") != IMPORT_TEST_ID
    if not jsonl:
        out.write(b"]\n}\n" if first else b"\n]\n}\n")
    return int(count)


def _invalid(run_id: str, problem: tuple[str, str]) -> NoReturn:
    raise ExportError(
        f"run {run_id} does not form a valid {GENOME_FORMAT} document "
        f"({problem[0]}: {problem[1]}); record the run again with this diffgenome"
    )


def _test_count(document: dict[str, Any]) -> int:
    """The tests of a run's document as the user counts them: ``<import>`` is none."""
    tests = document.get("tests")
    if not isinstance(tests, list):
        return 0
    return sum(1 for test in tests if isinstance(test, dict) and test.get("id") != IMPORT_TEST_ID)
