"""The effects comparison (#29): each kind per phase, a multiset of entries; a side that did
not see a kind is unknown (reported only where the other side has some), never "none";
warnings that escaped are left to ``warnings_changed``; previews are never compared."""

from __future__ import annotations

from typing import Any

import genomes
from genomes import call

from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.diff.describe import describe
from diffgenome.analysis.diff.effects import effects_diff
from diffgenome.analysis.models import Change


def _out(digest: str, phase: str = "call") -> dict[str, Any]:
    return {"type": "output", "phase": phase, "stream": "stdout", "digest": digest, "lines": 1}


def _warned(digest: str, escaped: bool) -> dict[str, Any]:
    return {
        "type": "warning",
        "phase": "call",
        "category": "DeprecationWarning",
        "origin": "py:pkg.f",
        "message_digest": digest,
        "escaped": escaped,
        "count": 1,
    }


def _record(effects: list[dict[str, Any]] | None, **more: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"id": "t.py::test"}
    if effects is not None:
        record["effects"] = effects
    record.update(more)
    return record


def test_equal_effects_in_any_order_are_no_change() -> None:
    both = [_out("a"), _out("b", "setup")]
    assert effects_diff(_record(both), _record(both[::-1])) == []


def test_each_kind_and_phase_is_its_own_change_with_the_one_sided_entries() -> None:
    env = {"type": "environ", "phase": "teardown", "name": "X", "change": "set", "digest": "d"}
    found = effects_diff(_record([_out("a")]), _record([_out("b"), env]))
    assert found == [
        ("output_changed", "call", [_out("a")], [_out("b")]),
        ("environ_changed", "teardown", [], [env]),
    ]


def test_a_side_without_effects_is_unknown_not_none() -> None:
    assert effects_diff(_record(None), _record([])) == []
    assert effects_diff(_record(None), _record([_out("a")])) == [
        ("output_changed", "call", None, [_out("a")])
    ]
    # Output that could not be seen (-s) is unknown too; the other kinds still compare.
    log = {"type": "log", "phase": "call", "logger": "l", "level": "INFO", "count": 1}
    unseen = _record([log], effects_unrecorded=["output:capture-off"])
    assert effects_diff(unseen, _record([_out("a"), log])) == [
        ("output_changed", "call", None, [_out("a")])
    ]
    assert effects_diff(unseen, _record([log])) == []


def test_escaped_warnings_are_left_to_warnings_changed() -> None:
    assert effects_diff(_record([_warned("a", True)]), _record([_warned("b", True)])) == []
    [(kind, _, base, head)] = effects_diff(
        _record([_warned("a", False)]), _record([_warned("b", False)])
    )
    assert kind == "warning_changed"
    assert [w["message_digest"] for w in base + head] == ["a", "b"]


def test_previews_are_not_compared_and_digests_of_two_keys_are_not_either() -> None:
    a = {"type": "log", "phase": "call", "logger": "l", "level": "INFO", "count": 1}
    assert effects_diff(_record([{**a, "template": "x"}]), _record([{**a, "template": "y"}])) == []
    assert effects_diff(_record([_out("a")]), _record([_out("b")]), digests=False) == []


def test_the_verdict_and_the_line_people_read() -> None:
    def doc(effects: list[dict[str, Any]]) -> dict[str, Any]:
        test = genomes.test_record("t.py::test", {"call": genomes.phase([call(0, None, "t")])})
        test["effects"] = effects
        return genomes.document([test])

    diff = diff_documents(doc([_out("a" * 32)]), doc([_out("b" * 32)]), base_rev="b", head_rev="h")
    (test,) = diff.tests
    assert test.status == "changed"
    [change] = test.changes
    assert change.kind == "output_changed"
    assert describe(change) == (
        "output: stdout #aaaaaaaa (1 line) \u2192 stdout #bbbbbbbb (1 line)"
    )
    unknown = Change(kind="file_changed", phase="setup", base=None, head=[])
    assert describe(unknown) == "[setup] files written: not recorded \u2192 nothing"
