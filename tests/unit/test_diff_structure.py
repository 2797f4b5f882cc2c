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


def test_a_generator_renamed_only_where_it_is_bound_is_contracted() -> None:
    """The same generator expression passed to a renamed callee (voluptuous'
    ``self._exec(Schema(v) for v in ...)`` → ``self._execute(...)``): its name says where
    it is bound, so it is one removed and one added name, but the code is the same (equal
    bodies): a rename, contracted like a renamed function, not a change."""
    gen_a, gen_b = "py:m.f.<locals>.<genexpr>[aaaaaaaaaa]", "py:m.f.<locals>.<genexpr>[bbbbbbbbbb]"
    base = phase([call(0, None, T), call(1, 0, "py:m.f"), call(2, 1, gen_a)])
    head = phase([call(0, None, T), call(1, 0, "py:m.f"), call(2, 1, gen_b)])
    code = _code(
        SymbolChange("py:m.f", "modified"),
        SymbolChange(gen_a, "removed", body="same"),
        SymbolChange(gen_b, "added", body="same"),
    )
    test = _one(base, head, code)
    assert test["status"] == "restructured", test["changes"]
    assert test["structure"] == [
        "`m.f.<locals>.<genexpr>[aaaaaaaaaa]` renamed to `m.f.<locals>.<genexpr>[bbbbbbbbbb]`"
        " (the same code), called by `m.f`"
    ]
    # Another body is another generator: changed, as before.
    code = _code(
        SymbolChange("py:m.f", "modified"),
        SymbolChange(gen_a, "removed", body="old"),
        SymbolChange(gen_b, "added", body="new"),
    )
    assert _one(base, head, code)["status"] == "changed"


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


def _state(*facts: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"when": when, "target": target, "bucket": bucket} for when, target, bucket in facts]


RANGE_CHANGES = (
    SymbolChange("py:m.Range.__call__", "modified"),
    SymbolChange("py:m.Range._below_min", "added"),
)


def _raising_call(i: int, parent: int, symbol: str, state: list[dict[str, str]]) -> dict:  # type: ignore[type-arg]
    return call(i, parent, symbol, exits={"raised:py:m.ValidationError": 1}, state=state)


def test_an_extracted_predicate_whose_caller_raises_after_it_returned_is_restructured() -> None:
    """marshmallow's ``Range.__call__``: its bound check moved into ``_below_min``, which
    returns before the caller raises. The caller left no exit state on either side; the
    helper's exit facts are no exit of the caller's, and a field the caller reads itself
    (``self.max``) is what the caller's own entry says, not what the helper saw later."""
    base = phase(
        [
            call(0, None, T),
            _raising_call(
                1,
                0,
                "py:m.Range.__call__",
                _state(("entry", "self.min", "zero"), ("entry", "self.max", "pos")),
            ),
        ]
    )
    head = phase(
        [
            call(0, None, T),
            _raising_call(
                1,
                0,
                "py:m.Range.__call__",
                _state(
                    ("entry", "self.max", "pos"),
                    ("entry", "self._below_min", "class attribute"),
                ),
            ),
            call(
                2,
                1,
                "py:m.Range._below_min",
                state=_state(
                    ("entry", "self.min", "zero"),
                    ("exit", "self.min", "zero"),
                    ("entry", "self.max", "neg"),
                    ("exit", "self.max", "neg"),
                ),
            ),
        ]
    )
    test = _one(base, head, _code(*RANGE_CHANGES))
    assert test["status"] == "restructured", test["changes"]
    assert test["changes"] == []


def test_what_the_helper_saw_still_counts_where_the_caller_did_not_read_it() -> None:
    """The lifted facts are evidence where the caller has none of its own: a field only the
    helper reads, whose bucket changed, is a change."""
    base = phase(
        [
            call(0, None, T),
            _raising_call(1, 0, "py:m.Range.__call__", _state(("entry", "self.min", "zero"))),
        ]
    )
    head = phase(
        [
            call(0, None, T),
            _raising_call(1, 0, "py:m.Range.__call__", []),
            call(2, 1, "py:m.Range._below_min", state=_state(("entry", "self.min", "pos"))),
        ]
    )
    test = _one(base, head, _code(*RANGE_CHANGES))
    assert test["status"] == "changed"
    assert [c["kind"] for c in test["changes"]] == ["state_changed"]


def test_a_returning_caller_takes_the_helpers_exit_facts() -> None:
    """Where the caller returned, what the extracted helper left is what it leaves: a write
    that differs is a change."""
    base = phase(
        [
            call(0, None, T),
            call(
                1,
                0,
                "py:m.Range.__call__",
                state=_state(("entry", "self.n", "zero"), ("exit", "self.n", "pos")),
            ),
        ]
    )
    head = phase(
        [
            call(0, None, T),
            call(1, 0, "py:m.Range.__call__"),
            call(
                2,
                1,
                "py:m.Range._below_min",
                state=_state(("entry", "self.n", "zero"), ("exit", "self.n", "zero")),
            ),
        ]
    )
    test = _one(base, head, _code(*RANGE_CHANGES))
    assert test["status"] == "changed"
    assert [c["kind"] for c in test["changes"]] == ["state_changed"]
