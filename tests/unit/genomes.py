"""Genome documents for unit tests, put together from small parts.

Each part carries what the recorder always writes for it, so a test spells out only what it
is about (a count, an exit, a site). Imported as ``genomes``: pytest puts this folder on
``sys.path``, and so do the child processes of test_store.py.
"""

from __future__ import annotations

from typing import Any

from diffgenome.protocol.formats import GENOME_FORMAT


def call(i: int, parent: int | None, symbol: str, count: int = 1, **extra: Any) -> dict[str, Any]:
    """A call node that returned ``count`` times, with no values seen unless ``extra`` says."""
    node: dict[str, Any] = {
        "id": i,
        "parent": parent,
        "type": "call",
        "symbol": symbol,
        "count": count,
        "exits": {"returned": count},
        "args": [],
        "results": [],
        "state": [],
    }
    node.update(extra)
    return node


def os_event(
    i: int, parent: int | None, kind: str, target: str, outcome: str, count: int = 1
) -> dict[str, Any]:
    return {
        "id": i,
        "parent": parent,
        "type": "os_event",
        "kind": kind,
        "target": target,
        "outcome": outcome,
        "count": count,
    }


def branch(
    node: int, site: str, predicate: str, true: int, false: int, kind: str = "if"
) -> dict[str, Any]:
    """A decision of ``site`` (``<symbol>/<kind>[n]``) at ``node``."""
    return {
        "node": node,
        "site": site,
        "symbol": site.rpartition("/")[0],
        "kind": kind,
        "predicate": predicate,
        "outcomes": {"true": true, "false": false},
    }


def phase(
    nodes: list[dict[str, Any]] | None = None, branches: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"nodes": nodes or [], "branches": branches or []}


def run(run_id: str = "r", **fields: Any) -> dict[str, Any]:
    """A complete run of a clean tree with no recording configuration; ``fields`` override."""
    out: dict[str, Any] = {
        "id": run_id,
        "commit": None,
        "dirty": None,
        "python": "CPython 3.12",
        "platform": "test",
        "started_at": "2026-01-01T00:00:00Z",
        "complete": True,
        "config": {},
        "key_fingerprint": "hmac-sha256:k",
    }
    out.update(fields)
    return out


def test_record(
    test_id: str, phases: dict[str, Any], outcome: str = "passed", **fields: Any
) -> dict[str, Any]:
    """A verified test unless ``fields`` say otherwise."""
    out: dict[str, Any] = {"id": test_id, "outcome": outcome, "verified": True, "phases": phases}
    out.update(fields)
    return out


test_record.__test__ = False  # type: ignore[attr-defined]  # not a test, despite its name


def document(
    tests: list[dict[str, Any]],
    run_fields: dict[str, Any] | None = None,
    symbols: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {"format": GENOME_FORMAT, "run": run_fields or run(), "tests": tests}
    if symbols is not None:
        doc["symbols"] = symbols
    return doc
