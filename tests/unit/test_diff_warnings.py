"""The warnings comparison: counts per (category, origin, message), and "not recorded" is
never read as "none"; messages compare by their keyed digests, and where they cannot be
compared (two keys, text against digests) the test is unverified, never unchanged."""

from __future__ import annotations

from genomes import document, run, test_record

from diffgenome.analysis.diff import DIGESTS_NOT_COMPARABLE, diff_documents
from diffgenome.analysis.diff.describe import describe, warning_text
from diffgenome.analysis.diff.verdict import WARNING_MESSAGES_NOT_COMPARABLE
from diffgenome.analysis.diff.warned import warning_messages_comparable, warnings_diff
from diffgenome.analysis.models import Change
from diffgenome.analysis.models import TestRecord as Record


def _w(message: str, count: int = 1) -> dict[str, object]:
    return {
        "category": "UserWarning",
        "origin": "<root>/pkg/m.py",
        "message": message,
        "count": count,
    }


def test_equal_warnings_in_any_order_are_no_change() -> None:
    assert warnings_diff([_w("a"), _w("b")], [_w("b"), _w("a")]) is None
    assert warnings_diff([], []) is None


def test_only_the_warnings_whose_count_differs_are_listed() -> None:
    base = [_w("a"), _w("b", 2)]
    head = [_w("a"), _w("b", 3), _w("c")]
    assert warnings_diff(base, head) == ([_w("b", 2)], [_w("b", 3), _w("c")])
    assert warnings_diff(head, base) == ([_w("b", 3), _w("c")], [_w("b", 2)])


def test_a_side_that_did_not_record_warnings_is_unknown_not_none() -> None:
    assert warnings_diff(None, []) is None
    assert warnings_diff(None, None) is None
    assert warnings_diff(None, [_w("a")]) == (None, [_w("a")])
    assert warnings_diff([_w("a")], None) == ([_w("a")], None)


def test_described_for_people() -> None:
    change = Change(kind="warnings_changed", base=[], head=[_w("new")])
    assert describe(change) == "warnings: now also UserWarning('new') from <root>/pkg/m.py \u00d71"
    unknown = Change(kind="warnings_changed", base=None, head=[_w("new")])
    assert describe(unknown).startswith("warnings not recorded on the base side")


# -- messages as keyed digests (#30) ------------------------------------------------------------


def _d(digest: str, count: int = 1, **fields: object) -> dict[str, object]:
    """A warning as this recorder writes it: the message's digest, no text."""
    return {
        "category": "UserWarning",
        "origin": "<root>/pkg/m.py",
        "message_digest": digest * 32,
        "count": count,
        **fields,
    }


def test_digested_messages_compare_by_digest_and_a_preview_is_never_compared() -> None:
    assert warnings_diff([_d("a", message="x")], [_d("a", message="other text")]) is None
    base, head = [_d("a")], [_d("b")]
    assert warnings_diff(base, head) == ([_d("a")], [_d("b")])


def test_under_different_keys_only_categories_origins_and_counts_compare() -> None:
    same = ([_d("a")], [_d("b")])
    assert warnings_diff(*same, digests=False) is None
    plain = {"category": "UserWarning", "origin": "<root>/pkg/m.py"}
    assert warnings_diff([_d("a")], [_d("b", 2)], digests=False) == (
        [{**plain, "count": 1}],
        [{**plain, "count": 2}],
    )
    # Messages kept as text need no key.
    assert warnings_diff([_w("a")], [_w("b")], digests=False) == ([_w("a")], [_w("b")])


def test_text_against_digests_is_not_comparable_and_makes_the_test_unverified() -> None:
    assert not warning_messages_comparable([_w("a")], [_d("a")])
    assert warning_messages_comparable([_w("a")], [_w("b")])
    assert warning_messages_comparable([], [_d("a")])  # nothing on one side: a real change
    assert warning_messages_comparable(None, [_d("a")])
    assert warnings_diff([_w("a")], [_d("a")]) is None  # same category, origin and count

    def doc(warned: list[dict[str, object]]) -> dict[str, object]:
        return document([test_record("t.py::test_x", {}, warnings=warned)])

    diff = diff_documents(doc([_w("a")]), doc([_d("a")]), base_rev="b", head_rev="h")
    [test] = diff.tests
    assert test.status == "unverified"
    assert test.reasons == [WARNING_MESSAGES_NOT_COMPARABLE]
    assert test.may_hide_change
    # Under one key, digests are evidence: the same digest is unchanged, another is changed.
    same = diff_documents(doc([_d("a")]), doc([_d("a")]), base_rev="b", head_rev="h")
    assert same.tests[0].status == "unchanged"
    other = diff_documents(doc([_d("a")]), doc([_d("b")]), base_rev="b", head_rev="h")
    assert other.tests[0].status == "changed"
    # Under two keys, a test whose only digests are its warnings' is unverified, never unchanged.
    keyed = document(
        [test_record("t.py::test_x", {}, warnings=[_d("b")])],
        run(key_fingerprint="hmac-sha256:other"),
    )
    apart = diff_documents(doc([_d("a")]), keyed, base_rev="b", head_rev="h")
    assert apart.tests[0].status == "unverified"
    assert apart.tests[0].reasons == [DIGESTS_NOT_COMPARABLE]


def test_a_finalizing_warning_is_timing_by_the_recorders_word() -> None:
    """The recorder keeps no text, so "coroutine ... was never awaited" is flagged by it."""

    def doc(warned: list[dict[str, object]]) -> dict[str, object]:
        return document([test_record("t.py::test_x", {}, warnings=warned)])

    never_awaited = _d("c", category="RuntimeWarning", finalizing=True)
    diff = diff_documents(doc([]), doc([never_awaited]), base_rev="b", head_rev="h")
    [test] = diff.tests
    assert test.status == "unstable" and not test.changes
    assert any("finalizer timing" in reason for reason in test.reasons)


def test_a_changed_message_reads_as_a_changed_digest() -> None:
    change = Change(kind="warnings_changed", base=[_d("a")], head=[_d("b")])
    assert describe(change) == (
        "warnings: UserWarning from <root>/pkg/m.py: message changed "
        "(message #aaaaaaaa \u00d71 \u2192 message #bbbbbbbb \u00d71)"
    )
    more = Change(kind="warnings_changed", base=[_d("a")], head=[_d("a", 2)])
    assert describe(more) == (
        "warnings: UserWarning from <root>/pkg/m.py: (message #aaaaaaaa \u00d71 \u2192 "
        "message #aaaaaaaa \u00d72)"
    )
    previewed = Change(kind="warnings_changed", base=[], head=[_d("a", message="token <secret:x>")])
    assert describe(previewed) == (
        "warnings: now also UserWarning('token <secret:x>' message #aaaaaaaa) "
        "from <root>/pkg/m.py \u00d71"
    )


def test_an_older_recording_with_text_is_still_read_and_shown() -> None:
    old = Record.model_validate(
        {"id": "t.py::test_x", "outcome": "passed", "verified": True, "warnings": [_w("said")]}
    )
    [warned] = old.warnings or []
    assert warned.message == "said" and warned.message_digest is None
    assert warning_text(warned.model_dump(mode="json")) == (
        "UserWarning('said') from <root>/pkg/m.py \u00d71"
    )
