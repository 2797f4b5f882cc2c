"""asyncio tasks hang under the node that created them, not under whatever ran the loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import make_project, record


def _record(tmp_path: Path) -> dict[str, Any]:
    return record(make_project(tmp_path, {}, base="tasks"))


def _tree(document: dict[str, Any], suffix: str) -> dict[int, dict[str, Any]]:
    test = next(t for t in document["tests"] if t["id"].endswith(suffix))
    assert test["verified"], test["unverified_reasons"]
    return {n["id"]: n for n in test["phases"]["call"]["nodes"]}


def test_tasks_attach_to_their_creator(tmp_path: Path) -> None:
    document = _record(tmp_path)
    for suffix in ("test_sync", "test_async"):
        nodes = _tree(document, suffix)
        by_symbol = {n["symbol"]: n for n in nodes.values()}
        worker = by_symbol["py:app.worker"]
        # Created by spawn's create_task calls: under spawn, marked as task work.
        assert nodes[worker["parent"]]["symbol"] == "py:app.spawn"
        assert worker["via"] == "task"
        assert worker["count"] == 6 and worker["exits"] == {"returned": 3, "yielded": 3}
        leaf = by_symbol["py:app.leaf"]
        assert nodes[leaf["parent"]]["symbol"] == "py:app.worker"
    sync = {n["symbol"]: n for n in _tree(document, "test_sync").values()}
    spawn = sync["py:app.spawn"]
    assert spawn["via"] == "task"  # asyncio.run's main task, created from app.run
