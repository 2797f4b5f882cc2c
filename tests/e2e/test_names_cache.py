"""The names cache across real sessions: a second recording into the same store reads the
names the first one kept (``DIFFGENOME_DEBUG=names`` says so) and records the same genomes;
an entry damaged between sessions is refused, built again, and the genomes stay the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import STORE, diffgenome_notices, make_project, record_full, without_run

pytestmark = pytest.mark.e2e

SELECTION = ("tests/test_core.py", "tests/test_outcomes.py")
DEBUG = {"DIFFGENOME_DEBUG": "names"}
#: Modules of the lab project that every session of the selection names.
NAMED = ("lab.decisions", "lab.calls", "tests.test_core")


def _record(project: Path) -> tuple[dict[str, Any], list[str]]:
    recording = record_full(project, *SELECTION, env=DEBUG, returncode=1)  # failing on purpose
    return without_run(recording.doc), diffgenome_notices(recording.output)


def _said(notices: list[str], what: str, module: str) -> bool:
    return f"diffgenome: names cache: {what} the names of {module}" in notices


def test_a_later_session_reads_the_names_and_records_the_same_genomes(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path, {}, base="lab")
    first, said_first = _record(project)
    for module in NAMED:
        assert _said(said_first, "built and kept", module), said_first
    entries = sorted((project / STORE / "cache" / "names").iterdir())
    assert entries and all(e.suffix == ".json" for e in entries)

    second, said_second = _record(project)
    for module in NAMED:
        assert _said(said_second, "read", module), said_second
    assert not any("built and kept the names" in line for line in said_second), said_second
    assert any(", 0 built and kept, 0 built and not kept, 0 refused" in s for s in said_second)
    assert second == first

    # Damaged between sessions: refused, named again, kept again; the genomes unchanged.
    for entry in entries:
        data = bytearray(entry.read_bytes())
        data[-3] ^= 0x01
        entry.write_bytes(bytes(data))
    third, said_third = _record(project)
    assert any(
        line.startswith("diffgenome: names cache: refused the entry of lab.decisions")
        and "built again" in line
        for line in said_third
    ), said_third
    assert _said(said_third, "built and kept", "lab.decisions")
    assert third == first
    fourth, said_fourth = _record(project)
    assert _said(said_fourth, "read", "lab.decisions") and fourth == first
