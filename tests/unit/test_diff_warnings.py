"""The warnings comparison: counts per (category, origin, message), and "not recorded" is
never read as "none"."""

from __future__ import annotations

from diffgenome.analysis.diff.compare import warnings_diff
from diffgenome.analysis.diff.describe import describe
from diffgenome.analysis.models import Change


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
