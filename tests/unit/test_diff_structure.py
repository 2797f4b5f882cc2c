"""The contraction of one-sided code (docs/diffing.md, "Structure"), on small documents."""

from __future__ import annotations

from genomes import branch, call, document, phase, test_record

from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.diff.codechanges import CodeChangeInput, SiteChange, SymbolChange

T = "py:tests.test_m.test_t"


def _code(*changes: SymbolChange) -> CodeChangeInput:
    return CodeChangeInput(symbols=tuple(changes))


def _one(base: dict, head: dict, code: CodeChangeInput) -> dict:  # type: ignore[type-arg]
    diff = diff_documents(
        document([test_record("tests/test_m.py::test_t", {"call": base})]),
        document([test_record("tests/test_m.py::test_t", {"call": head})]),
        base_rev="b",
        head_rev="h",
        code_changes=code,
    )
    [test] = [t for t in diff.tests if t.id == "tests/test_m.py::test_t"]
    return test.model_dump()


def test_an_extracted_helper_with_equal_results_is_restructured() -> None:
    value = [{"shape": "int", "digest": "d1"}]
    base = phase([call(0, None, T), call(1, 0, "py:m.f", results=value)])
    head = phase([call(0, None, T), call(1, 0, "py:m.f", results=value), call(2, 1, "py:m._g")])
    test = _one(
        base, head, _code(SymbolChange("py:m.f", "modified"), SymbolChange("py:m._g", "added"))
    )
    assert test["status"] == "restructured"
    assert test["structure"] == ["`m._g` extracted from `m.f`"]
    assert test["changes"] == []


def test_a_result_that_changed_stays_changed_and_names_the_helper_as_new() -> None:
    base = phase(
        [call(0, None, T), call(1, 0, "py:m.f", results=[{"shape": "int", "digest": "a"}])]
    )
    head = phase(
        [
            call(0, None, T),
            call(1, 0, "py:m.f", results=[{"shape": "int", "digest": "b"}]),
            call(2, 1, "py:m._g"),
        ]
    )
    test = _one(
        base, head, _code(SymbolChange("py:m.f", "modified"), SymbolChange("py:m._g", "added"))
    )
    assert test["status"] == "changed"
    assert [c["kind"] for c in test["changes"]] == ["result_changed"]  # not the helper's call
    assert test["structure"] == ["new `m._g`, called by `m.f`"]


def test_a_moved_decision_is_reported_by_the_function_that_holds_it() -> None:
    """Two changed functions hold the same condition (one content key, ``~/if[aaa]``): each
    difference names its own function, whichever came first."""
    base = phase(
        [call(0, None, T), call(1, 0, "py:m.f"), call(2, 0, "py:m.h")],
        [
            branch(1, "py:m.f/if[aaa]", "k is None", 1, 0),
            branch(2, "py:m.h/if[aaa]", "k is None", 1, 0),
        ],
    )
    head = phase(
        [call(0, None, T), call(1, 0, "py:m.f"), call(2, 0, "py:m.h"), call(3, 1, "py:m._g")],
        [
            branch(1, "py:m.f/if[aaa]", "k is None", 0, 1),
            branch(2, "py:m.h/if[aaa]", "k is None", 0, 1),
        ],
    )
    code = _code(
        SymbolChange(
            "py:m.f", "modified", (SiteChange("py:m.f/if[aaa]", "modified", "k is None"),)
        ),
        SymbolChange(
            "py:m.h", "modified", (SiteChange("py:m.h/if[aaa]", "modified", "k is None"),)
        ),
        SymbolChange("py:m._g", "added"),
    )
    test = _one(base, head, code)
    assert test["status"] == "changed"
    sites = sorted(
        (tuple(c["path"]), c["site"]) for c in test["changes"] if c["kind"] == "branch_changed"
    )
    assert sites == [((T, "py:m.f"), "py:m.f/if[aaa]"), ((T, "py:m.h"), "py:m.h/if[aaa]")]


def test_a_renamed_by_content_generator_is_never_contracted() -> None:
    """A generator expression whose code changed is one removed and one added name for the
    same slot: modified code, whose values are behaviour."""
    gen_a, gen_b = "py:m.f.<locals>.<genexpr>[aaaaaaaaaa]", "py:m.f.<locals>.<genexpr>[bbbbbbbbbb]"
    base = phase([call(0, None, T), call(1, 0, "py:m.f"), call(2, 1, gen_a)])
    head = phase([call(0, None, T), call(1, 0, "py:m.f"), call(2, 1, gen_b)])
    code = _code(
        SymbolChange("py:m.f", "modified"),
        SymbolChange(gen_a, "removed"),
        SymbolChange(gen_b, "added"),
    )
    test = _one(base, head, code)
    assert test["status"] == "changed"
    assert {c["kind"] for c in test["changes"]} == {"call_added", "call_removed"}


def test_a_lambda_turned_into_a_local_function_is_said_as_such() -> None:
    lam = "py:m.f.<locals>.<lambda>[aaaaaaaaaa]"
    key = "py:m.f.<locals>._key"
    base = phase([call(0, None, T), call(1, 0, "py:m.f"), call(2, 1, lam)])
    head = phase([call(0, None, T), call(1, 0, "py:m.f"), call(2, 1, key)])
    code = _code(
        SymbolChange("py:m.f", "modified"), SymbolChange(lam, "removed"), SymbolChange(key, "added")
    )
    test = _one(base, head, code)
    assert test["status"] == "restructured"
    assert test["structure"] == [
        "`m.f.<locals>._key` extracted from `m.f`",
        "a lambda removed from `m.f`",
    ]
