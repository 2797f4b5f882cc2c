"""The stored form of a phase body (store format 4): decision records without what the store
gives back.

A decision record repeats its site's kind, its symbol and its predicate (the condition as
written) in every test that reaches the decision: 40 % of a template engine's phase JSON, and
each body is deflated alone, so each test paid for them again. The kind is part of the site
id (``…/if[…]``), the symbol is the record's node's, and the predicate is kept once per store
in the ``sites`` table, by site id. A record leaves a field out only when the field's value
is exactly what comes back; one whose predicate differs from the table's (a condition masked
by other secret rules, a site id shared by two conditions) keeps its own. Readers put the
fields back before anyone sees the record, so genomes, exports and schemas are unchanged;
the address is the stored bytes' (docs/protocol.md, "The store").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from diffgenome.protocol.jsontext import escape_surrogates

_SITES_QUERY_CHUNK: Final = 500


def site_kind(site: str) -> str | None:
    """The kind a site id names (``py:m.f/if[0123456789]#1`` -> ``if``), or None."""
    tail = site.rpartition("/")[2]
    kind, bracket, _ = tail.partition("[")
    return kind if bracket and kind else None


def _node_symbols(nodes: object) -> dict[object, object]:
    if type(nodes) is not list:
        return {}
    return {node.get("id"): node.get("symbol") for node in nodes if type(node) is dict}


def compact_phase(genome: object, predicates: Mapping[str, str]) -> object:
    """``genome`` with its decision records' derived fields left out where they come back
    exactly (``predicates``: the store's ``sites`` table, or what this transaction put in
    it). The input is not changed."""
    if type(genome) is not dict:
        return genome
    branches = genome.get("branches")
    if type(branches) is not list or not branches:
        return genome
    symbols = _node_symbols(genome.get("nodes"))
    records: list[object] = []
    for record in branches:
        site = record.get("site") if type(record) is dict else None
        if type(site) is not str:
            records.append(record)
            continue
        assert type(record) is dict
        short = dict(record)
        kind = short.get("kind")
        if type(kind) is str and kind == site_kind(site):
            del short["kind"]
        symbol = short.get("symbol")
        if type(symbol) is str and symbol == symbols.get(short.get("node")):
            del short["symbol"]
        predicate = short.get("predicate")
        if type(predicate) is str and predicates.get(site) == predicate:
            del short["predicate"]
        records.append(short)
    compacted = dict(genome)
    compacted["branches"] = records
    return compacted


_RECORD_KEYS: Final = frozenset(("kind", "node", "outcomes", "predicate", "site", "symbol"))


def expand_phase(doc: dict[str, object], predicate: Callable[[str], str | None]) -> str | None:
    """Put back, in place, the fields a stored body's decision records left out (their keys
    in sorted order, as canonical JSON had them); None, or what is missing."""
    branches = doc.get("branches")
    if type(branches) is not list:
        return None
    symbols: dict[object, object] | None = None
    for index, record in enumerate(branches):
        if type(record) is not dict or (
            "predicate" in record and "kind" in record and "symbol" in record
        ):
            continue
        site = record.get("site")
        if type(site) is not str:
            return "a decision record without its fields has no site"
        kind = record["kind"] if "kind" in record else site_kind(site)
        if "symbol" in record:
            symbol = record["symbol"]
        else:
            if symbols is None:
                symbols = _node_symbols(doc.get("nodes"))
            symbol = symbols.get(record.get("node"))
        if "predicate" in record:
            text = record["predicate"]
        else:
            text = predicate(site)
            if text is None:
                return f"the predicate of site {site!r} is not in the store"
        if record.keys() <= _RECORD_KEYS and "node" in record and "outcomes" in record:
            branches[index] = {
                "kind": kind,
                "node": record["node"],
                "outcomes": record["outcomes"],
                "predicate": text,
                "site": site,
                "symbol": symbol,
            }
        else:
            full = dict(record)
            full.update(kind=kind, predicate=text, symbol=symbol)
            branches[index] = dict(sorted(full.items()))
    return None


def confirm_predicates(
    conn: sqlite3.Connection, wanted: Mapping[str, str], known: Mapping[str, str]
) -> dict[str, str]:
    """Put the ``wanted`` pairs that ``known`` (what the store is known to hold) lacks into
    the ``sites`` table, and read back what the table holds for them: a site another
    writer put in first keeps its predicate (the caller holds a transaction)."""
    new = [(site, text) for site, text in wanted.items() if site not in known]
    if not new:
        return {}
    conn.executemany(
        "INSERT OR IGNORE INTO sites (site, predicate) VALUES (?, ?)",
        # A lone surrogate has no UTF-8 form: the table holds its escape, which differs from
        # the record's text, so such a record keeps its own predicate (nothing is lost).
        [(escape_surrogates(site), escape_surrogates(text)) for site, text in new],
    )
    confirmed: dict[str, str] = {}
    for start in range(0, len(new), _SITES_QUERY_CHUNK):
        chunk = [site for site, _ in new[start : start + _SITES_QUERY_CHUNK]]
        marks = ",".join("?" * len(chunk))
        for site, text in conn.execute(
            f"SELECT site, predicate FROM sites WHERE site IN ({marks})", chunk
        ):
            confirmed[str(site)] = str(text)
    return confirmed


def all_predicates(phases: Iterable[object]) -> dict[str, str]:
    """The ``site -> predicate`` pairs of some phases' decision records (the first of each)."""
    found: dict[str, str] = {}
    for genome in phases:
        branches = genome.get("branches") if type(genome) is dict else None
        for record in branches if type(branches) is list else ():
            if type(record) is dict:
                site, text = record.get("site"), record.get("predicate")
                if type(site) is str and type(text) is str:
                    found.setdefault(site, text)
    return found


def tests_predicates(tests: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """``all_predicates`` over every phase of some test records."""
    return all_predicates(
        genome
        for test in tests
        if type(phases := test.get("phases")) is dict
        for genome in phases.values()
    )
