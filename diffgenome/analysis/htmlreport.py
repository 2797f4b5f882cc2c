"""``--html DIR`` of ``diff`` and ``show``: gathers what the site shows, and writes it.

Rendering is :mod:`diffgenome.analysis.report.html` (documents in, bytes out); this module
only loads: the recordings of a diff's tests (for their call trees) from the store or from
the genome files the sides were given as, and a run from the store.
"""

from __future__ import annotations

import json
import os
import sys

from pydantic import ValidationError

from diffgenome.analysis.models import DiffDocument, DiffSide, Run, TestRecord
from diffgenome.analysis.previews import without_previews
from diffgenome.analysis.report.html import SiteError, diff_site, run_site, write_site
from diffgenome.protocol.errors import UserError
from diffgenome.protocol.vocab import STATUS_UNCHANGED
from diffgenome.store.reader import StoreReader

PROG = "diffgenome"


def _records(raw: list[dict[str, object]]) -> dict[str, TestRecord]:
    out: dict[str, TestRecord] = {}
    for item in raw:
        try:
            record = TestRecord.model_validate(item)
        except ValidationError:
            continue  # the page says the recording is not available
        out.setdefault(record.id, record)
    return out


def _side_tests(
    side: DiffSide, wanted: set[str], store: str, previews: bool = True
) -> dict[str, TestRecord]:
    if os.path.isfile(side.rev):
        try:
            with open(side.rev, encoding="utf-8") as handle:
                document = json.load(handle)
        except (OSError, ValueError, RecursionError):
            return {}
        tests = document.get("tests") if isinstance(document, dict) else None
        raw = [t for t in tests or () if isinstance(t, dict) and t.get("id") in wanted]
        return _records(raw if previews else [without_previews(t) for t in raw])
    if side.run is None or not os.path.exists(store):
        return {}
    try:
        with StoreReader.open(store) as reader:
            raw = reader.tests(side.run, sorted(wanted))
            return _records(raw if previews else [without_previews(t) for t in raw])
    except UserError:
        return {}  # a run removed since: the pages say so


def write_diff_html(
    diff: DiffDocument,
    directory: str,
    store: str,
    source_url: str | None = None,
    *,
    previews: bool = True,
) -> str:
    """The site of ``diff``, with the call trees of its tests read from ``store`` (the store
    the diff used) or from the genome files its sides were; ``source_url`` links places;
    ``previews``: whether the trees keep the previews the recordings took."""
    wanted = {test.id for test in diff.tests if test.status != STATUS_UNCHANGED or test.changes}
    base = _side_tests(diff.base, wanted, store, previews)
    head = _side_tests(diff.head, wanted, store, previews)
    return _written(write_site(diff_site(diff, base, head, source_url), directory))


def write_run_html(reader: StoreReader, run: Run, directory: str, test_id: str | None) -> str:
    """The site of ``run``; only ``test_id`` when given."""
    raw = reader.tests(run.id, None if test_id is None else [test_id])
    tests: list[TestRecord] = []
    for item in raw:
        try:
            tests.append(TestRecord.model_validate(item))
        except ValidationError as exc:
            raise SiteError(
                f"run {run.id}: test {item.get('id')!r} is not valid ({exc.error_count()} "
                "problems); record the run again with this diffgenome"
            ) from None
    return _written(write_site(run_site(run, tests), directory))


def _written(index: str) -> str:
    sys.stderr.write(f"{PROG}: HTML report written to {index}\n")
    sys.stderr.flush()
    return index
