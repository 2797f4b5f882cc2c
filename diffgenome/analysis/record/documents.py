"""A side's genome document as the diff reads it: a run's from the store, or a genome JSON
file's, checked against the format and decoded for good.

Reading a big run takes seconds, so a side's is a step of its own in progress; a
confirmation's recordings are read within the confirmation's step.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator
from typing import Any

from diffgenome.analysis.progress import Progress
from diffgenome.analysis.record.process import DiffError
from diffgenome.analysis.validate import validated_genome
from diffgenome.protocol.formats import GENOME_FORMAT, FormatError, check_genome_format
from diffgenome.protocol.vocab import IMPORT_TEST_ID
from diffgenome.store.reader import StoreHandle, stored_phases

#: What a side whose document is not valid needs.
_RECORD_AGAIN = "record it again"


def stored(
    handle: StoreHandle,
    run_id: str,
    progress: Progress,
    subject: str | None,
    unread: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A run's document from the store, checked; a step of its own for a side (a big run
    takes seconds to load), silent for a confirmation (``subject`` None), whose step covers
    it. ``unread``: tests whose genomes are not read (the pipeline's ``_load_sides``)."""
    if subject is None:
        return _load(handle, run_id, unread)
    with progress.step("loading", "loaded", subject) as step:
        document = _load(handle, run_id, unread)
        step.result = f"run {run_id}, {tests_text(document)}"
        alike = sum(1 for test in document.get("tests") or () if test.get("id") in unread)
        if alike:
            step.result += f" ({alike} the same genome in both runs: not read)"
    return document


def header(handle: StoreHandle, run_id: str) -> dict[str, Any]:
    """A run's document without its tests' genomes: what a side is until the diff knows which
    genomes it needs."""
    with handle.reader() as reader:
        return reader.header(run_id)


def _load(handle: StoreHandle, run_id: str, unread: frozenset[str]) -> dict[str, Any]:
    with handle.reader() as reader, _decoded_for_good():
        document = reader.document(run_id, unread)
    return validated_genome(
        document, f"run {run_id}", DiffError, again=_RECORD_AGAIN, trusted=stored_phases
    )


def from_file(path: str, progress: Progress, subject: str) -> dict[str, Any]:
    """A genome JSON file's document, checked, as a step of progress."""
    with progress.step("loading", "loaded", subject) as step:
        document = _read_file(path)
        step.result = tests_text(document)
    return document


def _read_file(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle, _decoded_for_good():
            data = json.load(handle)
    except (OSError, UnicodeDecodeError) as exc:
        raise DiffError(f"cannot read {path}: {exc}; pass a readable genome file") from None
    except ValueError as exc:
        raise DiffError(
            f"{path} is not JSON ({' '.join(str(exc).split())}); pass a {GENOME_FORMAT} file"
        ) from None
    except RecursionError:
        raise DiffError(
            f"{path} is nested too deeply to be a {GENOME_FORMAT} document; "
            "pass a file written by `diffgenome export`"
        ) from None
    if not isinstance(data, dict):
        raise DiffError(f"{path} is not a {GENOME_FORMAT} document; pass a genome file")
    try:
        check_genome_format(data.get("format"))
    except FormatError as exc:
        raise DiffError(f"{path}: {exc}") from None
    return validated_genome(data, path, DiffError, again=_RECORD_AGAIN)


def tests_text(document: dict[str, Any]) -> str:
    """``9 tests``, as the user counts them (``<import>`` is no test)."""
    count = sum(1 for test in document.get("tests") or () if test.get("id") != IMPORT_TEST_ID)
    return f"{count} test{'s' if count != 1 else ''}"


@contextlib.contextmanager
def _decoded_for_good() -> Iterator[None]:
    """While a side's genomes are decoded, no cyclic garbage collection; afterwards, all that
    was decoded is frozen out of later ones (``gc.freeze``).

    A run decodes into millions of dicts and lists without a single cycle, kept until the
    command ends: every full collection of the rest of the diff would traverse all of them
    again (sqlparse, 465 tests with the changed code run by most: 4.2 s -> 2.9 s on a busy
    machine). Reference counting still frees them. Only the analysis side, in its own short
    process, does this; the recorder never touches the user's collector."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


__all__ = ["from_file", "header", "stored", "tests_text"]
