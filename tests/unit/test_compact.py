"""The stored form of a phase body (store/4, store/compact.py): what a decision record
leaves out comes back exactly, and only what comes back exactly is left out."""

from __future__ import annotations

import copy
import json

from hypothesis import given
from hypothesis import strategies as st

from diffgenome.store.compact import compact_phase, expand_phase, site_kind

SITE = "py:pkg.mod.f/if[8ae3e9f222]"


def genome(**record: object) -> dict[str, object]:
    decision = {
        "kind": "if",
        "node": 0,
        "outcomes": {"false": 1, "true": 0},
        "predicate": "x > 0",
        "site": SITE,
        "symbol": "py:pkg.mod.f",
    }
    decision.update(record)
    return {
        "branches": [decision],
        "nodes": [{"id": 0, "parent": None, "symbol": "py:pkg.mod.f", "type": "call"}],
    }


def test_site_kinds() -> None:
    assert site_kind(SITE) == "if"
    assert site_kind("py:m.f.<locals>.g/ifexp[0123456789]#2") == "ifexp"
    assert site_kind("py:m.f/if") is None
    assert site_kind("[0]") is None


def test_a_full_record_is_read_as_it_is() -> None:
    doc = genome()
    assert expand_phase(doc, lambda site: None) is None
    assert doc == genome()


def test_only_what_comes_back_exactly_is_left_out() -> None:
    table = {SITE: "x > 0"}
    short = compact_phase(genome(), table)
    assert short["branches"] == [  # type: ignore[index]
        {"node": 0, "outcomes": {"false": 1, "true": 0}, "site": SITE}
    ]
    # A kind its site does not name, a symbol not its node's, a predicate the table does
    # not hold as it is: each stays.
    odd = genome(kind="while", symbol="py:pkg.mod.g", predicate="x >= 0")
    assert compact_phase(odd, table) == odd
    without_table = compact_phase(genome(), {})
    assert isinstance(without_table, dict)
    assert without_table["branches"] == [
        {"node": 0, "outcomes": {"false": 1, "true": 0}, "predicate": "x > 0", "site": SITE}
    ]


def test_compacting_leaves_its_input_alone() -> None:
    doc = genome()
    before = copy.deepcopy(doc)
    compact_phase(doc, {SITE: "x > 0"})
    assert doc == before


def test_a_predicate_the_store_lacks_is_said() -> None:
    short = compact_phase(genome(), {SITE: "x > 0"})
    assert isinstance(short, dict)
    assert expand_phase(short, lambda site: None) == (
        f"the predicate of site {SITE!r} is not in the store"
    )


@given(
    kind=st.sampled_from(["if", "while", "ifexp", "x"]),
    symbol=st.sampled_from(["py:pkg.mod.f", "py:pkg.mod.g", None]),
    predicate=st.text(max_size=20),
    table=st.dictionaries(st.sampled_from([SITE, "py:other/if[1]"]), st.text(max_size=20)),
)
def test_what_is_left_out_comes_back_with_keys_in_order(
    kind: str, symbol: str | None, predicate: str, table: dict[str, str]
) -> None:
    doc = genome(kind=kind, symbol=symbol, predicate=predicate)
    stored = json.loads(json.dumps(compact_phase(doc, table), sort_keys=True))
    assert expand_phase(stored, table.get) is None
    assert stored == doc
    assert json.dumps(stored) == json.dumps(doc, sort_keys=True)
