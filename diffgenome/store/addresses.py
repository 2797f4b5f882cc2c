"""Genomes by content address: a test's phases become canonical JSON bodies, compressed and
stored once however often they recur (most tests share their setup and teardown)."""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import zlib
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Final

from diffgenome.protocol.jsontext import canonical_json as _canonical_json
from diffgenome.protocol.vocab import TYPE_SUBSTITUTION
from diffgenome.store.compact import compact_phase

# Level 3 deflates a phase two to three times faster than the default 6 for about a tenth
# more bytes; the recorder runs it once per phase, in the user's test process.
PHASE_ZLIB_LEVEL: Final = 3


_PHASE_ADDRESS_TAG: Final = b"diffgenome-phase/1\0"


_SUBSTITUTION_NODE: Final = f'"type":"{TYPE_SUBSTITUTION}"'.encode()


# The store's JSON text, lone surrogates escaped (protocol/jsontext.py); re-exported here,
# where the store's writers have always taken it.
canonical_json = _canonical_json


def phase_address(text: bytes, genome_format: str, fingerprint: str | None) -> str:
    """The content address of one phase's genome: its canonical JSON bytes, with the genome
    format and the digest key's fingerprint they were written under (equal bytes under another
    key or format are another genome, never shared)."""
    head = f"{genome_format}\0{fingerprint or ''}\0".encode()
    return hashlib.blake2b(_PHASE_ADDRESS_TAG + head + text, digest_size=16).hexdigest()


# A phase that ran no recorded code (the setup and teardown of most tests without fixtures
# of the project's): its body and address are known without encoding it.
_EMPTY_PHASE: Final = canonical_json({"nodes": [], "branches": []}).encode()


def _empty(genome: object) -> bool:
    # ``[] == []`` only: no value of another type compares equal to an empty list.
    return (
        type(genome) is dict
        and len(genome) == 2
        and genome.get("nodes") == []
        and genome.get("branches") == []
    )


@functools.lru_cache(maxsize=8)
def _empty_address(genome_format: str, fingerprint: str | None) -> str:
    return phase_address(_EMPTY_PHASE, genome_format, fingerprint)


@dataclass(frozen=True, slots=True)
class PhaseRows:
    """A test's phases as the store keeps them: ``refs`` (the ``tests.phases`` cell: canonical
    JSON of phase name -> address), ``size`` (bytes of the compressed bodies) and the
    ``(address, body, substitutions)`` rows for the ``genomes`` table, stored once however
    often they recur."""

    refs: str
    size: int
    bodies: list[tuple[str, bytes, int]]


def phase_rows(
    phases: Mapping[str, object],
    genome_format: str,
    fingerprint: str | None,
    stored: Mapping[str, int] | None = None,
    level: int = PHASE_ZLIB_LEVEL,
    predicates: Mapping[str, str] | None = None,
) -> PhaseRows:
    """Split a test's ``phases`` object into content-addressed rows. ``stored``: addresses
    the caller knows the store holds, with their compressed sizes; their bodies are neither
    compressed again nor among the rows (most tests share their setup and teardown).
    ``level``: zlib's; any level reads back the same bytes, so the address is the same.
    ``predicates``: the store's ``sites`` table as far as this write knows it; given, the
    bodies are stored compact (store/compact.py) and addressed as stored."""
    refs: dict[str, str] = {}
    bodies: list[tuple[str, bytes, int]] = []
    size = 0
    for name, genome in phases.items():
        if _empty(genome):
            text = _EMPTY_PHASE
            address = _empty_address(genome_format, fingerprint)
        else:
            if predicates is not None:
                genome = compact_phase(genome, predicates)
            text = canonical_json(genome).encode()
            address = phase_address(text, genome_format, fingerprint)
        refs[name] = address
        known = stored.get(address) if stored is not None else None
        if known is not None:
            size += known
            continue
        body = zlib.compress(text, level)
        # Canonical JSON writes a node's type exactly so; inside a string value the quotes
        # would be escaped. A reader that needs only stand-ins reads only these bodies.
        bodies.append((address, body, text.count(_SUBSTITUTION_NODE)))
        size += len(body)
    return PhaseRows(canonical_json(refs), size, bodies)


def insert_bodies(conn: sqlite3.Connection, rows: Iterable[PhaseRows]) -> None:
    """Store the bodies of ``rows`` that the store does not hold yet (the caller holds a
    transaction)."""
    bodies = [body for row in rows for body in row.bodies]
    if bodies:  # most tests of a suite of tiny ones only name bodies stored before
        conn.executemany(
            "INSERT OR IGNORE INTO genomes (hash, body, substitutions) VALUES (?, ?, ?)", bodies
        )


def drop_unreferenced_genomes(conn: sqlite3.Connection) -> int:
    """Remove the bodies no test refers to any more (after runs were removed; the caller
    holds a transaction); how many."""
    referenced: set[str] = set()
    for (refs,) in conn.execute("SELECT phases FROM tests"):
        if isinstance(refs, str):
            with suppress(ValueError, AttributeError, TypeError):
                referenced.update(str(v) for v in json.loads(refs).values())
    stale = [
        (address,)
        for (address,) in conn.execute("SELECT hash FROM genomes")
        if address not in referenced
    ]
    conn.executemany("DELETE FROM genomes WHERE hash = ?", stale)
    return len(stale)
