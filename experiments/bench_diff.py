"""Benchmark of the differ: two synthetic genome documents of N tests x ~20 nodes each.

Run: ``python experiments/bench_diff.py [--tests 5000] [--nodes 20] [--repeats 0]``. Prints the
time to diff (and to export the diff as JSON). The documents are generated, not recorded, so
that the size is exact; they validate as ``diffgenome-genome/1``. One test in ten changes.
"""

from __future__ import annotations

import argparse
import copy
import random
import time
from typing import Any

from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.models import GenomeDocument


def _value(rng: random.Random) -> dict[str, Any]:
    return {"shape": "x=int", "digest": f"{rng.getrandbits(128):032x}"}


def make_document(tests: int, nodes: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    records = []
    for t in range(tests):
        phase_nodes: list[dict[str, Any]] = []
        branches: list[dict[str, Any]] = []
        for i in range(nodes):
            parent = None if i == 0 else rng.randrange(0, i)
            symbol = f"py:tests.test_m{t % 50}.test_{t}" if i == 0 else f"py:pkg.mod{i % 7}.f{i}"
            phase_nodes.append(
                {
                    "id": i,
                    "parent": parent,
                    "type": "call",
                    "symbol": symbol,
                    "count": 1 + i % 3,
                    "exits": {"returned": 1 + i % 3},
                    "args": [_value(rng)],
                    "results": [_value(rng)],
                    "state": [{"when": "entry", "target": "self.x", "bucket": "pos"}],
                }
            )
            if i % 4 == 1:
                branches.append(
                    {
                        "node": i,
                        "site": f"{symbol}/if[0]",
                        "symbol": symbol,
                        "kind": "if",
                        "predicate": "x > 0",
                        "outcomes": {"true": 1, "false": i % 3},
                    }
                )
        records.append(
            {
                "id": f"tests/test_m{t % 50}.py::test_{t}",
                "outcome": "passed",
                "verified": True,
                "unverified_reasons": [],
                "phases": {
                    "setup": {"nodes": [], "branches": []},
                    "call": {"nodes": phase_nodes, "branches": branches},
                    "teardown": {"nodes": [], "branches": []},
                },
            }
        )
    return {
        "format": "diffgenome-genome/1",
        "run": {
            "id": f"run-{seed}",
            "commit": None,
            "dirty": None,
            "python": "CPython 3.12",
            "platform": "bench",
            "started_at": "2026-01-01T00:00:00Z",
            "complete": True,
            "config": {},
            "key_fingerprint": "hmac-sha256:bench",
        },
        "tests": records,
    }


def change_some(document: dict[str, Any], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    head = copy.deepcopy(document)
    head["run"]["id"] = "run-head"
    for test in head["tests"][::10]:
        nodes = test["phases"]["call"]["nodes"]
        node = nodes[rng.randrange(1, len(nodes))]
        node["results"] = [_value(rng)]
        node["exits"] = {"raised:py:builtins.ValueError": node["count"]}
    return head


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tests", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=0, help="repeat recordings per side")
    args = parser.parse_args()

    started = time.perf_counter()
    base = make_document(args.tests, args.nodes, 1)
    head = change_some(base, 2)
    base_repeats = [copy.deepcopy(base) for _ in range(args.repeats)]
    head_repeats = [copy.deepcopy(head) for _ in range(args.repeats)]
    GenomeDocument.model_validate(base)
    print(
        f"generated and validated 2 x {args.tests} tests x {args.nodes} nodes "
        f"in {time.perf_counter() - started:.2f}s"
    )

    started = time.perf_counter()
    diff = diff_documents(
        base,
        head,
        base_rev="base",
        head_rev="head",
        base_repeats=base_repeats,
        head_repeats=head_repeats,
    )
    diffed = time.perf_counter() - started
    started = time.perf_counter()
    text = diff.model_dump_json()
    dumped = time.perf_counter() - started
    print(
        f"diff: {diffed:.2f}s ({diff.summary.changed} changed of {diff.summary.tests}); "
        f"JSON export: {dumped:.2f}s, {len(text) // 1024} KiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
