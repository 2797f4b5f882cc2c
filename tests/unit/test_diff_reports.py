"""The terminal and Markdown reports of a diff document: verdict first, one block per test,
ranking, value labels, selection and collapsing."""

from __future__ import annotations

from rich.console import Console

from diffgenome.analysis.models import (
    Cause,
    CauseGroup,
    Change,
    CodeChange,
    DiffDocument,
    DiffSide,
    DiffSummary,
    Drift,
    OutcomePair,
)
from diffgenome.analysis.models import TestDiff as DiffOfTest
from diffgenome.analysis.report import render_markdown, render_terminal
from diffgenome.analysis.report.common import Selection, matches
from diffgenome.analysis.report.markdown import code

COLLAPSED = Selection()


def text_of(
    diff: DiffDocument, max_tests: int = 20, max_changes: int = 10, selection: Selection = COLLAPSED
) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(
        render_terminal(diff, max_tests=max_tests, max_changes=max_changes, selection=selection)
    )
    return console.export_text()


def changed_test(index: int) -> DiffOfTest:
    return DiffOfTest(
        id=f"tests/test_x.py::test_case[{index}]",
        status="changed",
        outcome=OutcomePair(base="passed", head="passed"),
        changes=[
            Change(
                kind="exit_changed",
                phase="call",
                path=["py:tests.test_x.test_case", "py:pkg.f"],
                symbol="py:pkg.f",
                base={"returned": 1},
                head={"raised:py:builtins.ValueError": 1},
            )
        ],
    )


def big_diff(n: int) -> DiffDocument:
    tests = [changed_test(i) for i in range(n)]
    tests.append(
        DiffOfTest(
            id="tests/test_x.py::test_net",
            status="unverified",
            outcome=OutcomePair(base="passed", head="passed"),
            reasons=["head: call:untraced-subprocess:git"],
        )
    )
    return DiffDocument(
        base=DiffSide(run="r1", commit="a" * 40, rev="main"),
        head=DiffSide(run="r2", commit="b" * 40, rev="HEAD"),
        summary=DiffSummary(tests=n + 1, changed=n, unverified=1),
        tests=tests,
        drift=[
            Drift(
                claimed_target="py:pkg.fetch",
                tests=["tests/test_x.py::test_mocked"],
                evidence=["code: py:pkg.fetch modified"],
            )
        ],
        code_changes=[
            CodeChange(
                symbol="py:pkg.g",
                change="added",
                gaps=["not executed by any test"],
            )
        ],
    )


def test_terminal_puts_the_summary_first_and_collapses_thousands() -> None:
    text = text_of(big_diff(3000), max_tests=5)
    first = text.splitlines()[0]
    assert first.startswith("diffgenome main (aaaaaaaaaaaa) → HEAD (bbbbbbbbbbbb): 3001 tests")
    assert "3000 changed" in first and "1 unverified" in first
    # 3000 cases with the same change: one shown whole, the others named on one line.
    assert (
        "    … and 2999 more tests with the same changes (their values aside): "
        "tests/test_x.py::test_case[1000], tests/test_x.py::test_case[1001], "
        "tests/test_x.py::test_case[1002] and 2996 more"
    ) in text
    assert text.count("py:pkg.f exits returned 1 → raised:py:builtins.ValueError 1") == 1
    assert "tests/test_x.py::test_net  unverified" in text  # not pushed off by the cases
    assert len(text.splitlines()) < 60


def test_terminal_folds_tests_alike_and_shows_each_kind_of_change_once() -> None:
    """The first of each set of tests whose changes are the same but for their values is
    shown whole, the others named under it; ``max_tests`` counts what is shown whole, and
    tests past it are counted, never dropped."""
    tests = []
    for i in range(12):
        test = changed_test(i)
        if i % 3:  # 8 alike (i = 1, 2, 4, ...); every third its own change at its own symbol
            test.changes[0].path[-1] = test.changes[0].symbol = f"py:pkg.g{i}"
        tests.append(test)
    diff = DiffDocument(
        base=DiffSide(run="r1", commit="a" * 40, rev="main"),
        head=DiffSide(run="r2", commit="b" * 40, rev="HEAD"),
        summary=DiffSummary(tests=12, changed=12),
        tests=tests,
    )
    text = text_of(diff, max_tests=3)
    assert text.count("  changed  passed") == 3, text
    # test_case[0] is shown whole; [3], [6], [9] share its change.
    assert (
        "    … and 3 more tests with the same changes (their values aside): "
        "tests/test_x.py::test_case[3], tests/test_x.py::test_case[6], "
        "tests/test_x.py::test_case[9]"
    ) in text
    assert "  … and 6 more tests (--all shows every test)" in text  # 12 = 3 + 3 + 6
    assert "test_case[3]  changed" not in text
    everything = text_of(diff, selection=Selection(everything=True))
    assert everything.count("  changed  passed") == 12  # --all folds nothing


def test_a_cause_group_collapsed_shows_each_kind_before_a_second_of_one() -> None:
    """A group shows two causes collapsed: the output that moved, not a second result."""
    causes = [
        Cause(summary=f"py:pkg.f{i} results: other values", kind="result_changed", tests=9 - i)
        for i in range(3)
    ]
    causes.append(
        Cause(
            summary="output: stderr 'ERROR x' → stderr 'ERROR: x'", kind="output_changed", tests=1
        )
    )
    diff = DiffDocument(
        base=DiffSide(run="r1", commit="a" * 40, rev="main"),
        head=DiffSide(run="r2", commit="b" * 40, rev="HEAD"),
        summary=DiffSummary(tests=9, changed=9),
        tests=[changed_test(i) for i in range(9)],
        causes=causes,
        cause_groups=[
            CauseGroup(
                reach="code",
                symbol="py:pkg.f",
                change="modified",
                code="modified",
                tests=9,
                causes=[0, 1, 2, 3],
            )
        ],
    )
    text = text_of(diff)
    assert "    9 tests: py:pkg.f0 results: other values" in text, text
    assert "    1 test: output: stderr 'ERROR x' → stderr 'ERROR: x'" in text
    assert "py:pkg.f1 results" not in text
    assert "… and 2 more causes" in text


def test_terminal_keeps_brackets_and_shows_unverified_drift_and_gaps() -> None:
    text = text_of(big_diff(2))
    assert "tests/test_x.py::test_case[0]  changed  passed" in text  # not eaten as markup
    assert "the same changes (their values aside): tests/test_x.py::test_case[1]" in text
    assert (
        "tests/test_x.py::test_net  unverified  passed\n    head: call:untraced-subprocess:git"
        in text
    )
    assert "stand-in for py:pkg.fetch in tests/test_x.py::test_mocked" in text
    assert "code: py:pkg.fetch modified" in text
    assert "py:pkg.g (added)" in text and "not executed by any test" in text


def value(shape: str, digest: str) -> dict[str, str]:
    return {"shape": shape, "digest": digest}


def ranked_diff() -> DiffDocument:
    """Three tests: one far from the change with four kinds of change, one reaching the
    changed code with a result change, one unverified; the change mapping names the second."""
    scattered = DiffOfTest(
        id="tests/test_b.py::test_far",
        status="changed",
        outcome=OutcomePair(base="passed", head="failed"),
        changes=[
            Change(kind="warnings_changed", base=[], head=[]),
            Change(kind="call_added", phase="call", path=["py:t", "py:pkg.new"], head={"count": 1}),
            Change(
                kind="result_changed",
                phase="call",
                path=["py:t", "py:pkg.name"],
                base=[value("str", "d" * 32)],
                head=[value("str", "e" * 32)],
            ),
            Change(kind="outcome_changed", base="passed", head="failed"),
        ],
    )
    reaching = DiffOfTest(
        id="tests/test_a.py::test_near",
        status="changed",
        outcome=OutcomePair(base="passed", head="passed"),
        changes=[
            Change(
                kind="args_changed",
                phase="call",
                path=["py:t", "py:pkg.price"],
                base=[value("dict[str, list[int]]", "e" * 32)],
                head=[value("dict[str, list[int]]", "f" * 32)],
            )
        ],
    )
    unverified = DiffOfTest(
        id="tests/test_a.py::test_net",
        status="unverified",
        outcome=OutcomePair(base="passed", head="passed"),
        reasons=["head: call:untraced-subprocess:git"],
    )
    return DiffDocument(
        base=DiffSide(run="r1", commit="a" * 40, rev="main"),
        head=DiffSide(run="r2", commit="b" * 40, rev="HEAD"),
        summary=DiffSummary(tests=4, changed=2, unverified=1, unchanged=1),
        tests=[
            unverified,
            scattered,
            DiffOfTest(id="tests/test_c.py::test_same", status="unchanged", outcome=OutcomePair()),
            reaching,
        ],
        code_changes=[
            CodeChange(symbol="py:pkg.price", change="modified", tests_head=[reaching.id])
        ],
    )


def test_one_block_per_test_in_a_fixed_order_reaching_tests_first() -> None:
    text = text_of(ranked_diff())
    lines = text.splitlines()
    # The test that now fails is named in the first line.
    assert lines[0].startswith(
        "diffgenome main (aaaaaaaaaaaa) → HEAD (bbbbbbbbbbbb): 1 test now fails "
        "(tests/test_b.py::test_far); 4 tests: "
    )
    order = [line.split()[0] for line in lines if line.startswith("  tests/")]
    # A test that now fails first, then behaviour changed, then what cannot be told.
    assert order == [
        "tests/test_b.py::test_far",
        "tests/test_a.py::test_near",
        "tests/test_a.py::test_net",
    ]
    assert "to review (3 tests, 1 reaches the changed code)" in text
    assert "test_near  changed  passed  · reaches the changed code" in text
    far = lines.index(next(line for line in lines if line.startswith("  tests/test_b.py")))
    # The four kinds of the scattered test sit together, outcome first, warnings last.
    assert lines[far].endswith("changed  passed → failed")
    assert lines[far + 1].strip() == "outcome passed → failed"
    assert lines[far + 2].strip().startswith("call added: py:pkg.new")
    assert lines[far + 3].strip().startswith("py:pkg.name results:")
    assert lines[far + 4].strip().startswith("warnings:")
    assert "test_same" not in text  # unchanged tests only with --all


def test_the_same_digest_gets_the_same_label_and_shapes_stay_whole() -> None:
    text = text_of(ranked_diff())
    # test_far, which now fails, comes first: its base value is A, its head value B;
    # test_near's base value is test_far's head value (digest e...), so it is B there too.
    assert "py:pkg.name results: str (value A) → str (value B)" in text
    assert (
        "py:pkg.price args: dict[str, list[int]] (value B) → dict[str, list[int]] (value C)"
    ) in text
    assert "#" not in text  # no digest prefixes in a report


def test_a_pattern_shows_only_its_tests_whole_and_all_shows_everything() -> None:
    long = ranked_diff()
    text = text_of(long, max_changes=1, selection=Selection(pattern="test_far"))
    assert "  tests/test_b.py::test_far" in text
    assert "test_near" not in text and "test_net" not in text
    assert "warnings:" in text and "more lines" not in text
    collapsed = text_of(long, max_changes=1)
    assert "… and 3 more lines (--test 'tests/test_b.py::test_far')" in collapsed
    glob = text_of(long, selection=Selection(pattern="tests/test_a.py::*"))
    assert "test_near" in glob and "test_net" in glob and "  tests/test_b.py" not in glob
    everything = text_of(long, max_tests=1, max_changes=1, selection=Selection(everything=True))
    assert "test_same  unchanged" in everything and "more" not in everything


def test_markdown_ranks_and_labels_like_the_terminal() -> None:
    """The comment's own order and limit are tested in test_markdown_report.py; here, that it
    ranks the changed tests and names values as the terminal does."""
    markdown = render_markdown(ranked_diff())
    assert "#### Changed (2, 1 reaching the changed code)" in markdown
    assert "#### Unverified (1)" in markdown
    assert "**1 test now fails (tests/test_b.py::test_far); 4 tests:" in markdown
    entries = markdown.split("#### Changed", 1)[1]
    assert entries.index("test_far") < entries.index("test_near") < entries.index("test_net")
    assert "`py:pkg.name results: str (value A) → str (value B)`" in markdown
    everything = render_markdown(ranked_diff(), selection=Selection(everything=True))
    assert "\nunchanged · <code>tests/test_c.py::test_same</code> · 0 changes\n" in everything


def test_markdown_code_spans_survive_backticks() -> None:
    assert code("a `b` c") == "``a `b` c``"
    assert code("`x`") == "`` `x` ``"
    assert code("plain") == "`plain`"


def test_digests_in_reasons_get_the_labels_of_the_report() -> None:
    diff = ranked_diff()
    diff.tests.append(
        DiffOfTest(
            id="tests/test_d.py::test_clock",
            status="unstable",
            outcome=OutcomePair(base="passed", head="passed"),
            reasons=[
                f"unstable (base repeats): py:app.now results: int #{'e' * 8} → int #12345678"
            ],
        )
    )
    # An unstable test behaves the same: by default its title only, whole with --all.
    assert "py:app.now" not in text_of(diff)
    text = text_of(diff, selection=Selection(everything=True))
    # e... is value B (test_far's head value, shown first); 12345678 is new: value D.
    assert "py:app.now results: int (value B) → int (value D)" in text
    assert "#" not in text


def test_a_preview_says_the_value_in_place_of_its_shape_and_label() -> None:
    """``--genome-preview``: ``'---' → '==='`` in the terminal and the Markdown; a value
    without a preview keeps its shape and label."""
    diff = big_diff(0)
    diff.tests.insert(
        0,
        DiffOfTest(
            id="tests/test_t.py::test_rule",
            status="changed",
            outcome=OutcomePair(base="passed", head="passed"),
            changes=[
                Change(
                    kind="result_changed",
                    phase="call",
                    path=["py:tests.test_t.test_rule", "py:tabulate._dashes"],
                    symbol="py:tabulate._dashes",
                    base=[{"shape": "str", "digest": "1" * 32, "preview": "'---'"}],
                    head=[{"shape": "str", "digest": "2" * 32, "preview": "'==='"}],
                ),
                Change(
                    kind="args_changed",
                    phase="call",
                    path=["py:tests.test_t.test_rule", "py:tabulate.login"],
                    symbol="py:tabulate.login",
                    base=[{"shape": "user=str, password=str", "digest": "3" * 32}],
                    head=[{"shape": "user=str, password=str", "digest": "4" * 32}],
                ),
            ],
        ),
    )
    diff.summary.tests += 1
    diff.summary.changed += 1
    for text in (text_of(diff), render_markdown(diff)):
        assert "py:tabulate._dashes results: '---' → '==='" in text
        assert (
            "py:tabulate.login args: user=str, password=str (value A) → "
            "user=str, password=str (value B)"
        ) in text


def test_a_node_id_selects_the_items_that_share_it() -> None:
    """``--test t.cases::greet`` selects what ``pytest t.cases::greet`` runs: every item of
    that node id, recorded ``greet``, ``greet#1``... (docs/recording.md)."""
    assert matches("t.cases::greet#1", "t.cases::greet")
    assert matches("t.cases::greet#2 [row]", "t.cases::greet")
    assert matches("t.cases::greet#1", "t.cases::greet#1")
    assert not matches("t.cases::greet", "t.cases::greet#1")
    assert not matches("t.cases::greeting", "t.cases::greet")


def test_the_summary_names_the_tests_recorded_again_apart_from_the_last_count() -> None:
    """The count of tests confirmation recorded again follows a semicolon: in parentheses
    after "32 unchanged" it read as 28 of those 32, where it counts the tests that differed."""
    diff = big_diff(2)
    diff.summary.confirmed = 3
    first = text_of(diff).splitlines()[0]
    assert first.endswith(
        "3 tests: 2 changed, 1 unverified; 3 recorded again to tell change from noise"
    ), first


def test_a_test_whose_own_file_was_edited_where_it_runs_says_so() -> None:
    """A release that changes behaviour and the test's assertion together: the reviewer
    reads the changed test as intended, once the report says its own code was edited too."""
    diff = big_diff(2)
    edited, other = diff.tests[0].id, diff.tests[1].id
    diff.code_changes = [
        CodeChange(symbol="py:pkg.f", change="modified", path="pkg.py", tests_head=[edited, other]),
        CodeChange(
            symbol="py:tests.test_x.test_case",
            change="modified",
            path="tests/test_x.py",
            tests_base=[edited],
            tests_head=[edited],
        ),
        # A file of another folder with the same name is not the test's file.
        CodeChange(
            symbol="py:other.tests.test_x.helper",
            change="modified",
            path="other/tests/test_x.py",
            tests_head=[other],
        ),
    ]
    text = text_of(diff, selection=Selection(everything=True))
    titles = {line.split()[0]: line for line in text.splitlines() if line.startswith("  tests/")}
    assert "· reaches the changed code  · its test code was edited" in titles[edited], titles
    assert "reaches the changed code" in titles[other]
    assert "edited" not in titles[other]
    comment = render_markdown(diff)
    assert comment.count("its test code was edited") == 1, comment
