"""Properties of the comparison over random pairs of genomes (#10.3): every change entry shows
a real difference, and two identical genomes give no entry at all."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from diffgenome.analysis.diff.align import index_test
from diffgenome.analysis.diff.compare import compare_tests

SYMBOLS = ("py:m.a", "py:m.b", "py:m.c")
DIGESTS = ("d1", "d2", "d3")


@st.composite
def phases(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(min_value=0, max_value=7))
    nodes: list[dict[str, Any]] = []
    for i in range(n):
        parent = draw(st.none() | st.integers(min_value=0, max_value=i - 1)) if i else None
        kind = draw(st.sampled_from(["call", "call", "call", "substitution", "os_event"]))
        count = draw(st.integers(min_value=1, max_value=3))
        returned = draw(st.integers(min_value=0, max_value=count))
        exits = {"returned": returned, "raised:py:builtins.ValueError": count - returned}
        values = st.lists(
            st.fixed_dictionaries(
                {"shape": st.sampled_from(["int", "str"]), "digest": st.sampled_from(DIGESTS)}
            ),
            max_size=2,
        )
        node: dict[str, Any] = {"id": i, "parent": parent, "type": kind, "count": count}
        if kind == "call":
            node.update(
                symbol=draw(st.sampled_from(SYMBOLS)),
                exits=exits,
                args=draw(values),
                results=draw(values),
                state=draw(
                    st.lists(
                        st.fixed_dictionaries(
                            {
                                "when": st.sampled_from(["entry", "exit"]),
                                "target": st.sampled_from(["self.x", "g"]),
                                "bucket": st.sampled_from(["zero", "positive"]),
                            }
                        ),
                        max_size=2,
                    )
                ),
            )
        elif kind == "substitution":
            node.update(
                mechanism="patch-target",
                claimed_target=draw(st.sampled_from(SYMBOLS)),
                path="m.a",
                substitute=draw(st.sampled_from(["mock_object", "stub"])),
                relation="replaces",
                signature_mismatch=draw(st.booleans()),
                exits=exits,
                args=draw(values),
            )
        else:
            node.update(
                kind="connect",
                target=draw(st.sampled_from(["127.0.0.1:1", "example.org:443"])),
                outcome=draw(st.sampled_from(["allowed", "refused:egress-guard"])),
            )
        nodes.append(node)
    calls = [node["id"] for node in nodes if node["type"] == "call"]
    branches = []
    for site in ("f/if[a]", "f/if[b]"):
        if calls and draw(st.booleans()):
            branches.append(
                {
                    "node": draw(st.sampled_from(calls)),
                    "site": site,
                    "kind": "if",
                    "outcomes": {
                        "true": draw(st.integers(min_value=0, max_value=3)),
                        "false": draw(st.integers(min_value=0, max_value=3)),
                    },
                }
            )
    return {"nodes": nodes, "branches": branches}


def record(phase: dict[str, Any], outcome: str) -> dict[str, Any]:
    return {"id": "t::x", "outcome": outcome, "phases": {"call": phase}}


OUTCOMES = st.sampled_from(["passed", "failed"])


@settings(max_examples=400, deadline=None)
@given(phases(), phases(), OUTCOMES, OUTCOMES)
def test_every_change_shows_a_real_difference(
    a: dict[str, Any], b: dict[str, Any], oa: str, ob: str
) -> None:
    for found in compare_tests(index_test(record(a, oa)), index_test(record(b, ob)), digests=True):
        assert found.base != found.head, found


@settings(max_examples=200, deadline=None)
@given(phases(), OUTCOMES)
def test_identical_genomes_give_no_change(a: dict[str, Any], outcome: str) -> None:
    copy = {"nodes": [dict(n) for n in a["nodes"]], "branches": [dict(b) for b in a["branches"]]}
    assert (
        compare_tests(
            index_test(record(a, outcome)), index_test(record(copy, outcome)), digests=True
        )
        == []
    )
