"""Causes: the changes of many tests grouped by what changed (docs/diffing.md, "The report")."""

from __future__ import annotations

from diffgenome.analysis.diff.causes import find_causes, unreached_text
from diffgenome.analysis.models import Change, OutcomePair
from diffgenome.analysis.models import TestDiff as DiffOfTest
from diffgenome.analysis.pipeline import other_files


def _test(test_id: str, *changes: Change, status: str = "changed", **extra: object) -> DiffOfTest:
    return DiffOfTest(
        id=test_id,
        status=status,  # type: ignore[arg-type]
        outcome=OutcomePair(base="passed", head="passed"),
        changes=list(changes),
        **extra,  # type: ignore[arg-type]
    )


def _args(test: int, base: str, head: str) -> Change:
    return Change(
        kind="args_changed",
        phase="call",
        path=["py:t", "py:m.DateTime.__init__"],
        symbol="py:m.DateTime.__init__",
        base=[{"shape": base, "digest": f"b{test}"}],
        head=[{"shape": head, "digest": f"h{test}"}],
    )


def test_an_argument_list_that_gained_a_parameter_is_one_cause_whatever_else_varies() -> None:
    tests = [
        _test("t1", _args(1, "year=int, tzinfo=None", "year=int, tzinfo=None, fold=int")),
        _test("t2", _args(2, "year=int, tzinfo=tz", "year=int, tzinfo=tz, fold=int")),
        _test("t3", _args(3, "year=int, tzinfo=None", "year=int, tzinfo=None, fold=int")),
    ]
    [cause] = find_causes(tests)
    assert cause.summary == "py:m.DateTime.__init__ args: now also fold=int"
    assert cause.tests == 3 and cause.examples == ["t1", "t2", "t3"]


def test_values_that_differ_by_test_are_collapsed_and_the_biggest_cause_comes_first() -> None:
    def result(test: int) -> Change:
        return Change(
            kind="result_changed",
            path=["py:t", "py:m.f"],
            symbol="py:m.f",
            base=[{"shape": "str", "digest": f"x{test}"}],
            head=[{"shape": "str", "digest": f"y{test}"}],
        )

    once = Change(
        kind="call_count_changed", path=["py:t", "py:m.g"], symbol="py:m.g", base=1, head=2
    )
    outcome = Change(kind="outcome_changed", base="passed", head="failed")
    tests = [_test(f"t{n}", result(n)) for n in range(3)] + [_test("u", once, outcome)]
    causes = find_causes(tests)
    assert [c.summary for c in causes] == [
        "outcome passed → failed",  # outcomes first, whatever their count
        "py:m.f results: other values of str",
        "py:m.g ran more often",
    ]
    assert [c.tests for c in causes] == [1, 3, 1]


def test_a_changed_generator_expression_is_one_cause() -> None:
    def call(kind: str, digest: str) -> Change:
        name = f"py:m.f.<locals>.<genexpr>[{digest}]"
        side = {"head": {"count": 1}} if kind == "call_added" else {"base": {"count": 1}}
        return Change(kind=kind, path=["py:t", "py:m.f", name], symbol=name, **side)  # type: ignore[arg-type]

    tests = [
        _test(f"t{n}", call("call_added", "b" * 10), call("call_removed", "a" * 10))
        for n in range(2)
    ]
    [cause] = find_causes(tests)
    assert cause.kind == "anonymous_changed"
    assert cause.summary == "py:m.f.<locals>.<genexpr>: its code changed under py:m.f"
    assert cause.tests == 2


def test_one_thing_moved_is_one_cause_whichever_words_each_test_gave_it() -> None:
    tests = [
        _test("quiet", status="restructured", structure=["`m._g` extracted from `m.f`"]),
        _test("loud", status="changed", structure=["new `m._g`, called by `m.f`"]),
    ]
    [cause] = find_causes(tests)
    assert cause.kind == "structure"
    assert cause.summary == "`m._g` extracted from `m.f`"  # the words of a test that stayed quiet
    assert cause.statuses == {"changed": 1, "restructured": 1}


def test_the_files_no_symbol_speaks_for_are_named_configuration_first() -> None:
    """The heading of the causes with no changed code in reach names the changed files that
    are no recorded module: pytest's configuration first, documents last, three at most."""
    modules = {"src/pkg/a.py": "pkg.a"}
    paths = ["README.md", "data/table.csv", "src/pkg/a.py", "tox.ini", "pyproject.toml", "setup.py"]
    found = other_files(paths, modules.get)
    assert found == ("pyproject.toml", "tox.ini", "data/table.csv", "setup.py", "README.md")
    assert unreached_text(found) == (
        "no changed code on its call path; changed besides code: pyproject.toml, tox.ini, "
        "data/table.csv and 2 more"
    )
    assert unreached_text(()) == "no changed code on its call path"
