"""What the stored phase bodies of a store are made of: each body inflated, its genome put
back whole (store/4 bodies leave out what the ``sites`` table gives back), then deflated
again at level 9 with a field of its decision records left out, to see what that field
costs (session 19, docs/performance.md: jinja2's predicates were 11.6 % of the bytes).

Usage: ``.venv/bin/python experiments/store_bodies.py STORE_FOLDER``.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

from diffgenome.store.compact import expand_phase

_DIGEST = re.compile(rb'"[0-9a-f]{32}"')


def _encode(doc: object) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _without(*fields: str) -> Callable[[dict[str, object]], bytes]:
    def encode(doc: dict[str, object]) -> bytes:
        branches = doc.get("branches")
        short = [
            {k: v for k, v in record.items() if k not in fields}
            for record in (branches if isinstance(branches, list) else [])
        ]
        return _encode({**doc, "branches": short})

    return encode


def main() -> None:
    store = Path(sys.argv[1]) / "genome.sqlite"
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        predicates = dict(conn.execute("SELECT site, predicate FROM sites").fetchall())
    except sqlite3.OperationalError:  # before store/4
        predicates = {}
    docs = []
    stored = 0
    for (body,) in conn.execute("SELECT body FROM genomes"):
        stored += len(body)
        doc = json.loads(zlib.decompress(body))
        problem = expand_phase(doc, predicates.get)
        if problem:
            raise SystemExit(problem)
        docs.append(doc)
    conn.close()
    whole = sum(len(zlib.compress(_encode(doc), 9)) for doc in docs)
    print(f"{len(docs)} bodies: {stored:,} B as stored, {whole:,} B whole at level 9")
    print("| left out of every decision record | deflated bytes | change |")
    print("|---|---:|---:|")
    cases: list[tuple[str, Callable[[dict[str, object]], bytes]]] = [
        ("the predicate", _without("predicate")),
        ("kind and symbol", _without("kind", "symbol")),
        ("all three", _without("kind", "symbol", "predicate")),
        (
            "(value digests cut to 64 bits)",
            lambda doc: _DIGEST.sub(lambda m: m.group(0)[:17] + b'"', _encode(doc)),
        ),
    ]
    for name, encode in cases:
        size = sum(len(zlib.compress(encode(doc), 9)) for doc in docs)
        print(f"| {name} | {size:,} | {100 * (size - whole) / whole:+.1f} % |")


if __name__ == "__main__":
    main()
