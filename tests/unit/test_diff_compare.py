"""Alignment rules on small synthesized genomes (shapes the example projects do not easily
produce: deep removed subtrees, loops scaling whole subtrees, overflowing value sets)."""

from __future__ import annotations

from typing import Any

import genomes
from genomes import call

from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.diff.codechanges import CodeChangeInput, SymbolChange
from diffgenome.analysis.models import GenomeDocument


def document(nodes: list[dict[str, Any]], run: str = "r") -> dict[str, Any]:
    doc = genomes.document(
        [genomes.test_record("t.py::test", {"call": genomes.phase(nodes)})], genomes.run(run)
    )
    GenomeDocument.model_validate(doc)
    return doc


def changes(
    base: list[dict[str, Any]], head: list[dict[str, Any]]
) -> list[tuple[str, str, Any, Any]]:
    diff = diff_documents(document(base), document(head), base_rev="b", head_rev="h")
    (test,) = diff.tests
    return [(c.kind, "/".join(c.path), c.base, c.head) for c in test.changes]


def test_a_removed_subtree_is_reported_once_at_its_top() -> None:
    base = [call(0, None, "t"), call(1, 0, "a"), call(2, 1, "b"), call(3, 2, "c")]
    head = [call(0, None, "t")]
    assert changes(base, head) == [
        ("call_removed", "t/a", {"count": 1, "exits": {"returned": 1}}, None)
    ]


def test_node_ids_do_not_matter_only_paths() -> None:
    base = [call(0, None, "t"), call(1, 0, "a"), call(2, 0, "b")]
    head = [call(0, None, "t"), call(1, 0, "b"), call(2, 0, "a")]
    assert changes(base, head) == []


def test_a_loop_going_round_more_is_one_count_change_not_one_per_descendant() -> None:
    base = [call(0, None, "t"), call(1, 0, "loop", 2), call(2, 1, "body", 4), call(3, 2, "leaf", 8)]
    head = [
        call(0, None, "t"),
        call(1, 0, "loop", 3),
        call(2, 1, "body", 6),
        call(3, 2, "leaf", 12),
    ]
    assert changes(base, head) == [("call_count_changed", "t/loop", 2, 3)]


def test_a_child_count_that_does_not_scale_with_its_parent_is_reported() -> None:
    base = [call(0, None, "t"), call(1, 0, "loop", 2), call(2, 1, "body", 2)]
    head = [call(0, None, "t"), call(1, 0, "loop", 3), call(2, 1, "body", 5)]
    assert changes(base, head) == [
        ("call_count_changed", "t/loop", 2, 3),
        ("call_count_changed", "t/loop/body", 2, 5),
    ]


def test_overflow_compares_by_count_and_digest() -> None:
    value = [{"shape": "int", "digest": "00"}]
    base = [call(0, None, "t", args=value, args_overflow={"count": 3, "digest": "aa"})]
    same = [call(0, None, "t", args=value, args_overflow={"count": 3, "digest": "aa"})]
    more = [call(0, None, "t", args=value, args_overflow={"count": 4, "digest": "bb"})]
    assert changes(base, same) == []
    assert changes(base, more) == [
        (
            "args_changed",
            "t",
            [{"overflow": 3, "digest": "aa"}],
            [{"overflow": 4, "digest": "bb"}],
        )
    ]


def _status(base: dict[str, Any], head: dict[str, Any]) -> tuple[str, list[str], list[str]]:
    diff = diff_documents(base, head, base_rev="b", head_rev="h")
    (test,) = diff.tests
    return test.status, [c.kind for c in test.changes], test.reasons


def test_a_finalizer_run_in_another_test_is_timing_not_a_change() -> None:
    """google-auth: ``Request.__del__`` runs in whichever test triggers the collection."""
    base = [call(0, None, "t"), call(1, 0, "py:pkg.Request.__del__", 2), call(2, 1, "close")]
    head = [call(0, None, "t")]
    status, kinds, reasons = _status(document(base), document(head))
    assert (status, kinds) == ("unstable", [])
    assert reasons == [
        "unstable (finalizer timing): call removed: "
        "py:pkg.Request.__del__ (\u00d72, returned 2) under t"
    ]
    # anything else that differs is still a change
    head_other = [call(0, None, "t"), call(1, 0, "py:pkg.other")]
    status, kinds, _ = _status(document(base), document(head_other))
    assert (status, kinds) == ("changed", ["call_added"])


def _warned(*items: tuple[str, str]) -> dict[str, Any]:
    warnings = [
        {"category": c, "origin": "<root>/pkg/m.py", "message": m, "count": 1} for c, m in items
    ]
    test = genomes.test_record("t.py::test", {"call": genomes.phase([call(0, None, "t")])})
    test["warnings"] = warnings
    return genomes.document([test])


def test_warnings_said_at_finalization_are_timing_and_never_hide_the_others() -> None:
    never_awaited = ("RuntimeWarning", "coroutine 'f' was never awaited")
    status, kinds, reasons = _status(_warned(never_awaited), _warned())
    assert (status, kinds) == ("unstable", [])
    assert reasons[0].startswith("unstable (finalizer timing): warnings: no longer RuntimeWarning")
    deprecation = ("DeprecationWarning", "use g()")
    status, kinds, _ = _status(_warned(never_awaited), _warned(deprecation))
    assert (status, kinds) == ("changed", ["warnings_changed"])


def test_work_of_another_tests_thread_is_timing_not_a_change() -> None:
    """google-auth: a refresh worker another test started runs in whichever test is on."""
    worker = "py:pkg.RefreshThread.run"
    base = [call(0, None, "t"), call(1, None, worker, 2, via="foreign-thread")]
    head = [call(0, None, "t")]
    status, kinds, reasons = _status(document(base), document(head))
    assert (status, kinds) == ("unstable", [])
    assert reasons[0].startswith("unstable (thread timing): call removed: " + worker)
    # the same work by a thread this test started earlier is a change
    mine = [call(0, None, "t"), call(1, None, worker, 2, via="earlier-thread")]
    status, kinds, _ = _status(document(mine), document(head))
    assert (status, kinds) == ("changed", ["call_removed"])


def test_work_of_a_thread_still_running_when_the_phase_ended_is_timing() -> None:
    """google-auth: a refresh thread the test started, done on one side and still running on
    the other when the test returned."""
    thread = "py:pkg.RefreshThread.run"

    def recording(exits: dict[str, int], state: list[dict[str, str]]) -> dict[str, Any]:
        return document(
            [
                call(0, None, "t"),
                call(1, 0, "py:pkg.start"),
                call(2, 1, thread, via="thread", exits=exits, state=state),
                call(3, 2, "py:pkg.fetch"),
            ]
        )

    done = recording({"returned": 1}, [{"when": "exit", "target": "self.x", "bucket": "pos"}])
    cut = recording({"running": 1}, [])
    status, kinds, reasons = _status(done, cut)
    assert (status, kinds) == ("unstable", [])
    assert all(reason.startswith("unstable (unfinished thread): ") for reason in reasons)
    assert len(reasons) == 2  # its exits and its state
    # In a test that runs changed code, the change may be what keeps the thread running.
    changed = CodeChangeInput(symbols=(SymbolChange(thread, "modified"),))
    diff = diff_documents(done, cut, base_rev="b", head_rev="h", code_changes=changed)
    assert [(t.status, sorted({c.kind for c in t.changes})) for t in diff.tests] == [
        ("changed", ["exit_changed", "state_changed"])
    ]
    # The same differences in a thread that finished on both sides are changes.
    finished = recording({"returned": 1}, [])
    status, kinds, _ = _status(done, finished)
    assert (status, kinds) == ("changed", ["state_changed"])
    # And so is anything outside the unfinished thread.
    outside = document(
        [
            call(0, None, "t"),
            call(1, 0, "py:pkg.start", 2),
            call(2, 1, thread, via="thread", exits={"running": 1}),
            call(3, 2, "py:pkg.fetch"),
        ]
    )
    status, kinds, _ = _status(done, outside)
    assert status == "changed"
    assert "call_count_changed" in kinds


def test_a_call_whose_arguments_are_unstable_has_unstable_products() -> None:
    """google-api-core: a stall control fed ``time.monotonic()`` deltas left a lag of zero in
    one full run and a positive one in the next; the confirming runs saw only the deltas
    differ. What a call makes of unstable arguments is unstable too, its callers are not."""

    def recording(elapsed: str, lag: str) -> dict[str, Any]:
        return document(
            [
                call(0, None, "t"),
                call(
                    1,
                    0,
                    "py:pkg.stall",
                    args=[{"shape": "t_elapsed=float", "digest": elapsed}],
                    state=[{"when": "exit", "target": "self.lag", "bucket": lag}],
                ),
            ]
        )

    def diff(head: dict[str, Any]) -> tuple[str, list[str]]:
        confirmations = [recording("c1", "zero"), recording("c2", "zero")]
        result = diff_documents(
            recording("b", "pos"),
            head,
            base_rev="b",
            head_rev="h",
            base_confirmation=confirmations,
        )
        (test,) = result.tests
        return test.status, [c.kind for c in test.changes]

    assert diff(recording("h", "zero")) == ("unstable", [])
    # In a test that runs changed code, only the arguments are masked: the code may be what
    # changed the state.
    changed = CodeChangeInput(symbols=(SymbolChange("py:pkg.stall", "modified"),))
    result = diff_documents(
        recording("b", "pos"),
        recording("h", "zero"),
        base_rev="b",
        head_rev="h",
        code_changes=changed,
        base_confirmation=[recording("c1", "zero"), recording("c2", "zero")],
    )
    assert [(t.status, [c.kind for c in t.changes]) for t in result.tests] == [
        ("changed", ["state_changed"])
    ]
    # Nothing masks the products of a call whose arguments held still between confirmations.
    steady = [recording("c", "zero"), recording("c", "zero")]
    held = diff_documents(
        recording("b", "pos"),
        recording("b", "zero"),
        base_rev="b",
        head_rev="h",
        base_confirmation=steady,
    )
    assert [(t.status, [c.kind for c in t.changes]) for t in held.tests] == [
        ("changed", ["state_changed"])
    ]


def _timed_decision(outcome: str) -> dict[str, Any]:
    """google-api-core: ``now_timestamp - first_attempt_timestamp < 0.001`` in a retry."""
    doc = document([call(0, None, "t"), call(1, 0, "py:pkg.retry")])
    doc["tests"][0]["phases"]["call"]["branches"] = [
        {
            "node": 1,
            "site": "py:pkg.retry/if[6ccd75fce5]",
            "symbol": "py:pkg.retry",
            "kind": "if",
            "predicate": "now - first < 0.001",
            "outcomes": {"true": 1, "false": 0} if outcome == "true" else {"true": 0, "false": 1},
        }
    ]
    GenomeDocument.model_validate(doc)
    return doc


def test_a_difference_both_sides_lose_when_recorded_again_is_not_a_change() -> None:
    """The full runs went two ways; every pair of confirming recordings (base and head side by
    side) agrees: how the runs went made the difference, not the code."""
    again = [_timed_decision("true"), _timed_decision("true")]

    def diff(
        code: CodeChangeInput | None, head_again: list[dict[str, Any]]
    ) -> tuple[str, list[str]]:
        result = diff_documents(
            _timed_decision("false"),
            _timed_decision("true"),
            base_rev="b",
            head_rev="h",
            code_changes=code,
            base_confirmation=again,
            head_confirmation=head_again,
        )
        (test,) = result.tests
        return test.status, test.reasons

    status, reasons = diff(CodeChangeInput(), again)
    assert status == "unstable"
    assert reasons[0].startswith("unstable (not reproduced when both sides were recorded again)")
    # reproduced by the confirming recordings: a change
    assert diff(CodeChangeInput(), [_timed_decision("false")] * 2)[0] == "changed"
    # a test that runs changed code keeps every difference
    changed = CodeChangeInput(symbols=(SymbolChange("py:pkg.retry", "modified"),))
    assert diff(changed, again)[0] == "changed"
    # without code changes (runs or files compared) nothing is put down to the runs
    assert diff(None, again)[0] == "changed"


def test_in_other_environments_only_what_confirmation_reproduces_is_a_change() -> None:
    """Base is a user's ``pytest --genome`` run (no environment fingerprint), head a run the
    diff recorded: the confirming pairs, recorded in one environment, are the evidence even in
    a test that runs changed code. Not reproduced: unstable with its reason; reproduced: a
    change."""
    changed = CodeChangeInput(symbols=(SymbolChange("py:pkg.retry", "modified"),))
    head = _timed_decision("true")
    head["run"]["config"]["environment"] = "0123456789abcdef01234567"

    def diff(head_again: list[dict[str, Any]]) -> tuple[str, list[str]]:
        result = diff_documents(
            _timed_decision("false"),
            head,
            base_rev="b",
            head_rev="h",
            code_changes=changed,
            base_confirmation=[_timed_decision("true")] * 2,
            head_confirmation=head_again,
        )
        (test,) = result.tests
        return test.status, test.reasons

    status, reasons = diff([_timed_decision("true")] * 2)
    assert status == "unstable"
    assert "recorded again in one environment" in reasons[0]
    assert diff([_timed_decision("false")] * 2)[0] == "changed"
