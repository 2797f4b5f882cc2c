"""Decision identity by content (#10.2): what a decision tests names it, not where it sits."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from diffgenome.protocol.naming import SourceNames

TARGET = "if total > limit and not frozen:"
TARGET_KEY = ("py:pkg.mod.f", "total > limit and (not frozen)")


def ids(source: str) -> dict[tuple[str, str], list[str]]:
    """(symbol, predicate) -> the ids of the decisions with that text, in source order."""
    out: dict[tuple[str, str], list[str]] = {}
    for site in SourceNames(textwrap.dedent(source), "pkg.mod").sites:
        out.setdefault((site.symbol, site.predicate), []).append(site.id)
    return out


def function(*decisions: str) -> str:
    body = "".join(f"    {d}\n        x += 1\n" for d in decisions)
    return f"def f(total, limit, frozen, x):\n{body}    return x\n"


OTHERS = ["if x > 3:", "while x < 0:", "if total == 0:", "if frozen:", "if limit is None:"]


@settings(max_examples=80, deadline=None)
@given(
    above=st.lists(st.sampled_from(OTHERS), unique=True, max_size=4),
    below=st.lists(st.sampled_from(OTHERS), unique=True, max_size=4),
    data=st.data(),
)
def test_inserting_deleting_and_reordering_other_decisions_keeps_an_identity(
    above: list[str], below: list[str], data: st.DataObject
) -> None:
    base = ids(function(*above, TARGET, *below))[TARGET_KEY]
    shuffled = data.draw(st.permutations(above))
    kept = data.draw(st.lists(st.sampled_from(OTHERS), unique=True, max_size=4))
    head = ids(function(*shuffled, *kept, TARGET))[TARGET_KEY]
    assert head == base


def test_comments_layout_and_renamed_locals_keep_an_identity() -> None:
    base = ids(
        """
        def f(items):
            count = len(items)
            if count > 2 and items[0]:
                return 1
            return 0
        """
    )
    head = ids(
        """
        def f(entries):  # a parameter renamed
            # a comment, and a local renamed
            n = len(entries)
            if (n > 2
                    and entries[0]):
                return 1
            return 0
        """
    )
    assert list(base.values()) == list(head.values())


def test_equal_conditions_in_two_arms_stay_apart() -> None:
    source = textwrap.dedent(
        """
        def f(a, b):
            if a:
                if b:
                    return 1
            else:
                if b:
                    return 2
            return 0
        """
    )
    found = ids(source)
    (in_true, in_false) = found[("py:pkg.mod.f", "b")]
    assert in_true != in_false
    # Another decision above does not change either, nor which arm is which.
    head = ids(source.replace("    if a:\n", "    if a is None:\n        return 3\n    if a:\n"))
    assert head[("py:pkg.mod.f", "b")] == [in_true, in_false]


def test_equal_conditions_in_one_arm_are_told_apart_by_the_statement_before() -> None:
    """The ordinal stays only where even the statement before each is the same."""
    found = ids(
        """
        def f(a):
            if a:
                pass
            if a:
                pass
            if a:
                pass
        """
    )
    first, second, third = found[("py:pkg.mod.f", "a")]
    assert len({first, second}) == 2 and "#" not in first + second
    assert third == second + "#1"


def _one(source: str, predicate: str, symbol: str = "py:pkg.mod.f") -> list[str]:
    return ids(source)[(symbol, predicate)]


NOTES = """
def f(state, text):
    notes = state.get("notes")
{above}    if text:
        if not notes:
            return None
    for item in text:
{inside}        notes.append(item)
    return notes
"""


def test_a_look_alike_added_elsewhere_never_renames_a_decision() -> None:
    """mistune 3.0 → 3.1: an ``if not notes:`` added to ``parse_inline_footnote`` renamed the
    one under ``if text:`` (its parent decision entered its digest only once it had a
    look-alike)."""
    base = _one(NOTES.format(above="", inside=""), "not notes")
    added_above = _one(
        NOTES.format(above="    if not notes:\n        notes = []\n", inside=""), "not notes"
    )
    added_inside = _one(
        NOTES.format(above="", inside="        if not notes:\n            break\n"), "not notes"
    )
    assert len(base) == 1
    # in source order: the added one first, then the one under ``if text:``; and the reverse
    assert added_above[1] == base[0] and added_inside[0] == base[0]
    assert len(set(added_above)) == len(set(added_inside)) == 2


def test_except_handlers_tell_look_alikes_apart() -> None:
    """click 8.1 ``Command.main``: ``if not standalone_mode:`` under ``except
    ClickException:`` keeps its identity when another one is added before it."""
    source = """
def f(standalone_mode, run):
    try:
        rv = run()
{added}        return rv
    except ValueError:
        if not standalone_mode:
            raise
    except KeyError:
        if not standalone_mode:
            raise
"""
    base = _one(source.format(added=""), "not standalone_mode")
    head = _one(
        source.format(added="        if not standalone_mode:\n            return rv\n"),
        "not standalone_mode",
    )
    assert len(base) == 2 and not any("#" in i for i in base)
    assert head[1:] == base


def test_an_enclosing_header_is_part_of_an_identity() -> None:
    """``if x`` under ``if a:`` and under ``if b:`` are apart whether or not the other exists
    (mistune: the second ``if not notes:`` sat under another ``if``); changing the enclosing
    header makes the decision another one, as a changed condition does."""
    one = "def f(a, b, x):\n    if a:\n        if x:\n            pass\n"
    two = "def f(a, b, x):\n    if b:\n        if x:\n            pass\n" + one.partition("\n")[2]
    assert _one(two, "x")[1] == _one(one, "x")[0]
    assert len(set(_one(two, "x"))) == 2
    assert _one(one.replace("if a:", "if a > 1:"), "x") != _one(one, "x")


def test_an_unrelated_if_or_comment_renames_no_decision() -> None:
    source = NOTES.format(above="", inside="")
    every = SourceNames(textwrap.dedent(source), "pkg.mod").sites
    added = "    # a comment\n    if state:\n        pass\n    for item"
    edited = source.replace("    for item", added)
    after = {s.id for s in SourceNames(textwrap.dedent(edited), "pkg.mod").sites}
    assert {s.id for s in every} <= after


def test_a_changed_condition_is_another_decision() -> None:
    base = ids("def f(x):\n    if x > 0:\n        return 1\n")
    head = ids("def f(x):\n    if x >= 0:\n        return 1\n")
    assert base[("py:pkg.mod.f", "x > 0")] != head[("py:pkg.mod.f", "x >= 0")]


def test_a_global_is_not_a_local_placeholder() -> None:
    """``LIMIT`` and ``limit`` name different things: a module constant stays as written."""
    found = ids(
        """
        LIMIT = 3
        def f(limit):
            if limit > 0:
                pass
            if LIMIT > 0:
                pass
        """
    )
    assert found[("py:pkg.mod.f", "limit > 0")] != found[("py:pkg.mod.f", "LIMIT > 0")]


def test_ids_hold_no_line_numbers_nor_positions() -> None:
    source = function(*OTHERS, TARGET)
    moved = "\n\n\n# moved down\n\n" + source
    assert ids(source) == ids(moved)


def test_removing_one_of_two_same_shaped_conditions_never_hands_over_its_identity() -> None:
    """semver 3.1.2 removed ``if not rccmp:`` next to ``if not rc1:``: with locals as
    placeholders both read ``not _0``. Their names tell them apart before any ordinal, so the
    survivor never takes the removed one's identity (its counts are never compared with the
    other's); it may get an identity of its own, shown as one decision gone and one new."""
    base = ids(
        "def f(rc1, rccmp):\n    if not rccmp:\n        pass\n    if not rc1:\n        pass\n"
    )
    head = ids("def f(rc1, rccmp):\n    if not rc1:\n        pass\n")
    assert base[("py:pkg.mod.f", "not rc1")] != base[("py:pkg.mod.f", "not rccmp")]
    assert head[("py:pkg.mod.f", "not rc1")] != base[("py:pkg.mod.f", "not rccmp")]
    assert not any("#" in i for ids_ in base.values() for i in ids_)
