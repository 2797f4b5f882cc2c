"""The Markdown report as a pull-request comment (#13 point 8): what a reviewer must look at
first, one ``<details>`` block per test that GitHub renders, recorded text that cannot format
the comment or inject HTML, and a hard size limit that cuts whole blocks and counts exactly
what it left out.

The documents are synthesized; the comments are parsed by markdown-it-py (a CommonMark parser
that passes HTML blocks through as GitHub does; installed with rich), so "renders" means what
a real parser makes of the text, not what a regular expression expects.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from genomes import call, document, phase, test_record
from markdown_it import MarkdownIt
from rich.console import Console

from diffgenome.analysis.cli import main
from diffgenome.analysis.diff.describe import ValueLabels, describe
from diffgenome.analysis.models import (
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
from diffgenome.analysis.report.common import Selection
from diffgenome.analysis.report.markdown import (
    DEFAULT_MARKDOWN_LIMIT,
    GITHUB_COMMENT_LIMIT,
    MAX_ITEM_CHARS,
    MIN_MARKDOWN_LIMIT,
    MarkdownTooLong,
    comment_length,
)

#: A block: a ``<details>`` element (open in a small comment), or one line when it has one.
SUMMARY = re.compile(
    r"^(?:<details(?: open)?><summary>)?(\w+) · (.*?)"
    r"(?:</summary>|: (?:`|_|outcome |structure: |used by ).*)$",
    re.MULTILINE,
)
CUT = re.compile(r"^\*\*Cut to fit ([\d,]+) characters\*\*: left out (.*); (.*)\.$", re.MULTILINE)
HEADING = re.compile(r"^#### (.+?) \((\d+)(?:[,;] [^)]*)?\)$", re.MULTILINE)


def gfm() -> MarkdownIt:
    """CommonMark with raw HTML passed through, plus GitHub's tables and strike-through."""
    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


def value(shape: str, digest: str) -> dict[str, str]:
    return {"shape": shape, "digest": digest}


def exit_change(symbol: str = "py:pkg.f") -> Change:
    return Change(
        kind="exit_changed",
        phase="call",
        path=["py:tests.test_x.test_case", symbol],
        symbol=symbol,
        base={"returned": 1},
        head={"raised:py:builtins.ValueError": 1},
    )


def a_test(test_id: str, status: str, *changes: Change, **fields: object) -> DiffOfTest:
    return DiffOfTest.model_validate(
        {
            "id": test_id,
            "status": status,
            "outcome": {"base": "passed", "head": "passed"},
            "changes": [change.model_dump() for change in changes],
            **fields,
        }
    )


def diff_of(
    tests: list[DiffOfTest],
    *,
    drift: list[Drift] | None = None,
    code_changes: list[CodeChange] | None = None,
) -> DiffDocument:
    counts = Counter(test.status for test in tests)
    return DiffDocument(
        base=DiffSide(run="r1", commit="a" * 40, rev="main"),
        head=DiffSide(run="r2", commit="b" * 40, rev="HEAD"),
        summary=DiffSummary(tests=len(tests), **counts),
        tests=tests,
        drift=drift or [],
        code_changes=code_changes or [],
    )


def review_diff() -> DiffDocument:
    """Every status, two changed tests of which the later id reaches the changed code, two
    unverified of which the later id may hide a change, mock drift and a gap."""
    return diff_of(
        [
            a_test("tests/test_a.py::test_far", "changed", exit_change()),
            a_test("tests/test_z.py::test_near", "changed", exit_change("py:pkg.price")),
            a_test(
                "tests/test_a.py::test_same_reasons",
                "unverified",
                reasons=[
                    "base: call:untraced-subprocess:git",
                    "head: call:untraced-subprocess:git",
                ],
            ),
            a_test(
                "tests/test_z.py::test_incomplete",
                "unverified",
                reasons=["head run incomplete: interrupted"],
                may_hide_change=True,
            ),
            a_test(
                "tests/test_t.py::test_touched",
                "touched",
                Change(
                    kind="branch_changed",
                    path=["py:t", "py:pkg.price"],
                    site="py:pkg.price/if[0123456789]",
                    predicate="amount > 100",
                    base=None,
                    head={"true": 1, "false": 0},
                ),
            ),
            a_test("tests/test_u.py::test_clock", "unstable", reasons=["unstable (repeats): x"]),
            DiffOfTest(
                id="tests/test_n.py::test_new", status="added", outcome=OutcomePair(head="passed")
            ),
            DiffOfTest(
                id="tests/test_o.py::test_old", status="removed", outcome=OutcomePair(base="failed")
            ),
            a_test("tests/test_s.py::test_same", "unchanged"),
        ],
        drift=[
            Drift(
                claimed_target="py:pkg.fetch",
                tests=["tests/test_m.py::test_mocked"],
                evidence=["code: py:pkg.fetch modified"],
            )
        ],
        code_changes=[
            CodeChange(
                symbol="py:pkg.price",
                change="modified",
                tests_head=["tests/test_z.py::test_near"],
                gaps=["decision py:pkg.price/if[0123456789] never false"],
            )
        ],
    )


def shown(text: str) -> list[tuple[str, str]]:
    """(status or kind, the rest of the summary) of every block, in order."""
    return [(m.group(1), m.group(2)) for m in SUMMARY.finditer(text)]


def blocks_of(text: str) -> list[str]:
    """The text of every ``<details>`` block, from its opening tag to its closing tag."""
    return re.findall(r"^<details(?: open)?>.*?^</details>$", text, flags=re.MULTILINE | re.DOTALL)


# -- order ----------------------------------------------------------------------------------


def test_the_comment_leads_with_the_summary_then_changed_drift_gaps_unverified_rest() -> None:
    text = render_markdown(review_diff())
    lines = text.splitlines()
    assert lines[0] == "### diffgenome: `main (aaaaaaaaaaaa)` → `HEAD (bbbbbbbbbbbb)`"
    assert lines[2] == (
        "**9 tests: 2 changed, 2 unverified, 1 unstable, 1 touched, 1 added, 1 removed, "
        "1 unchanged**"
    )
    assert [m.group(1) for m in HEADING.finditer(text)] == [
        "Changed",
        "Mock drift",
        "Changed code not fully exercised",
        "Unverified",
        "Added and removed tests",
        "Same behaviour",
    ]
    order = [
        (kind, html.unescape(re.sub("</?code>", "", rest)).split(" · ")[0])
        for kind, rest in shown(text)
    ]
    assert order == [
        # The test that reaches the changed code first, whatever its id (the terminal's rank).
        ("changed", "tests/test_z.py::test_near"),
        ("changed", "tests/test_a.py::test_far"),
        ("drift", "stand-in for py:pkg.fetch"),
        ("gaps", "py:pkg.price (modified)"),
        # The one whose missing evidence may hide a change first, whatever its id.
        ("unverified", "tests/test_z.py::test_incomplete"),
        ("unverified", "tests/test_a.py::test_same_reasons"),
        # Then tests added and removed, and last what behaves the same.
        ("added", "tests/test_n.py::test_new"),
        ("removed", "tests/test_o.py::test_old"),
        ("touched", "tests/test_t.py::test_touched"),
        ("unstable", "tests/test_u.py::test_clock"),
    ]
    assert "test_same" not in text.replace("test_same_reasons", "")  # unchanged: only --all
    assert "CUT" not in text and "Cut to fit" not in text


def test_each_test_is_one_block_that_github_renders_as_markdown() -> None:
    """A block of several lines is a ``<details>`` element; a block of one line is that line
    (five identical one-line tests are five lines, not five clicks, #25 point 12)."""
    diff = review_diff()
    text = render_markdown(diff)
    assert len(shown(text)) == 10
    assert text.count("<details>") == text.count("</details>") == 2  # drift, test_same_reasons
    for block in blocks_of(text):
        # A blank line after </summary> and before </details>, or GitHub shows the Markdown
        # inside as raw text.
        assert re.match(r"<details><summary>[^\n]*</summary>\n\n- ", block), block
        assert block.endswith("\n\n</details>"), block
    rendered = gfm().render(text)
    assert rendered.count("<details>") == rendered.count("</details>") == 2
    # Markdown inside each block became a list, and the summary's id is code.
    assert len(re.findall(r"</summary>\n<ul>\n<li>", rendered)) == 2
    assert "<code>tests/test_z.py::test_near</code>" in rendered
    # A one-line block renders as one paragraph: its summary, then its line as code.
    assert (
        "<p>changed · <code>tests/test_z.py::test_near</code> · 1 change: "
        "<code>py:pkg.price exits returned 1 → raised:py:builtins.ValueError 1</code></p>"
    ) in rendered
    # That a test reaches the changed code is said once, by its section.
    assert "#### Changed (2, 1 reaching the changed code)" in text.splitlines()
    assert "reaches the changed code" not in text
    lines = text.splitlines()
    incomplete = next(line for line in lines if "test_incomplete" in line)
    assert "0 changes · 1 reason · may hide a change: _`head run incomplete" in incomplete
    added = next(line for line in lines if "test_new" in line)
    assert added.endswith("0 changes: outcome `passed` (head only)")


def test_a_small_comment_has_its_blocks_open() -> None:
    """Up to eight blocks, a reviewer reads them without a click."""
    many = [exit_change(f"py:pkg.f{i}") for i in range(3)]
    small = diff_of([a_test(f"tests/t.py::test_{n}", "changed", *many) for n in range(8)])
    text = render_markdown(small)
    assert text.count("<details open>") == 8 and "<details>" not in text
    rendered = gfm().render(text)
    assert rendered.count("<details open>") == 8
    large = diff_of([a_test(f"tests/t.py::test_{n}", "changed", *many) for n in range(9)])
    assert render_markdown(large).count("<details>") == 9


def test_full_shas_are_short_and_a_given_link_is_always_there() -> None:
    diff = review_diff().model_copy(deep=True)
    diff.base.rev, diff.head.rev = "a" * 40, "b" * 40
    text = render_markdown(diff, link="https://ci.example/run/1")
    assert text.splitlines()[0] == "### diffgenome: `aaaaaaaaaaaa` → `bbbbbbbbbbbb`"
    assert "a" * 13 not in text
    assert (
        "[the whole report](https://ci.example/run/1): every test, both call trees, the JSON."
        in text.splitlines()
    )
    assert "Cut to fit" not in text  # not cut, and linked all the same


def test_changes_come_in_the_fixed_order_with_the_terminal_s_value_labels() -> None:
    test = a_test(
        "tests/test_b.py::test_far",
        "changed",
        Change(kind="warnings_changed", base=[], head=[]),
        Change(
            kind="result_changed",
            phase="call",
            path=["py:t", "py:pkg.name"],
            base=[value("str", "d" * 32)],
            head=[value("str", "e" * 32)],
        ),
        Change(kind="call_added", phase="call", path=["py:t", "py:pkg.new"], head={"count": 1}),
        Change(kind="outcome_changed", base="passed", head="failed"),
    )
    near = a_test(
        "tests/test_a.py::test_near",
        "changed",
        Change(
            kind="args_changed",
            phase="call",
            path=["py:t", "py:pkg.price"],
            base=[value("dict[str, list[int]]", "e" * 32)],
            head=[value("dict[str, list[int]]", "f" * 32)],
        ),
    )
    diff = diff_of([test, near])
    text = render_markdown(diff)
    [far] = blocks_of(text)  # test_near has one line: a line, not a block
    items = [line[3:-1] for line in far.splitlines() if line.startswith("- `")]
    assert items == [
        "outcome passed → failed",
        "call added: py:pkg.new (\u00d71, none) under py:t",
        "py:pkg.name results: str (value C) → str (value A)",
        "warnings: nothing else",
    ]
    # The same lines, with the same labels, as the terminal report of the same diff.
    console = Console(record=True, width=300, color_system=None)
    console.print(render_terminal(diff))
    terminal = console.export_text()
    for item in items:
        assert f"    {item}\n" in terminal
    # ... which are describe()'s lines: one wording of a change everywhere.
    labels = ValueLabels()
    for change in near.changes:
        describe(change, labels)
    assert describe(test.changes[1], labels) == items[2]


def test_a_long_block_lists_ten_lines_the_other_differences_three() -> None:
    many = [exit_change(f"py:pkg.f{i}") for i in range(15)]
    diff = diff_of(
        [
            a_test("tests/t.py::test_a", "changed", *many),
            a_test("tests/t.py::test_b", "touched", *many),
        ]
    )
    changed, touched = blocks_of(render_markdown(diff))
    assert changed.count("\n- `") == 10
    assert "- … and 5 more lines (`diffgenome diff --test` with this test id shows them)" in changed
    assert touched.count("\n- `") == 3 and "- … and 12 more lines" in touched
    whole = render_markdown(diff, selection=Selection(pattern="tests/t.py::*"))
    assert whole.count("\n- `") == 30 and "more lines" not in whole


def test_a_selection_shows_its_tests_and_all_shows_unchanged_ones() -> None:
    diff = review_diff()
    one = render_markdown(diff, selection=Selection(pattern="test_near"))
    assert [kind for kind, _ in shown(one)] == ["changed"]
    assert "Mock drift" not in one and "Changed code" not in one
    none = render_markdown(diff, selection=Selection(pattern="no_such"))
    assert "No test matches `no_such`." in none and "<details>" not in none
    everything = render_markdown(diff, selection=Selection(everything=True))
    assert shown(everything)[-1][0] == "unchanged"


# -- escaping -------------------------------------------------------------------------------

HOSTILE_ID = "tests/t.py::test_x[a|b *bold* `tick` <script>alert(1)</script> </details> @team _e_]"
HOSTILE_LINE = "py:pkg.f `x` | y *z* <img src=x onerror=alert(1)> </details>\n\n<details>"


def hostile_diff() -> DiffDocument:
    return diff_of(
        [
            a_test(
                HOSTILE_ID,
                "changed",
                Change(kind="outcome_changed", base="passed", head="failed"),
                Change(
                    kind="branch_changed",
                    path=["py:t", "py:pkg.f"],
                    site="py:pkg.f/if[0]",
                    predicate=HOSTILE_LINE,
                    base={"true": 1, "false": 0},
                    head={"true": 0, "false": 1},
                ),
                Change(
                    kind="result_changed",
                    path=["py:t", "py:pkg.f"],
                    base=[{"shape": "str", "digest": "a" * 32, "preview": HOSTILE_LINE}],
                    head=[{"shape": "str", "digest": "b" * 32, "preview": repr(HOSTILE_LINE)}],
                ),
                reasons=[HOSTILE_LINE],
            ),
            a_test("tests/t.py::test_z_after", "changed", exit_change()),
        ],
        drift=[Drift(claimed_target=HOSTILE_LINE, tests=[HOSTILE_ID], evidence=[HOSTILE_LINE])],
        code_changes=[CodeChange(symbol=HOSTILE_LINE, change="added", gaps=[HOSTILE_LINE])],
    )


def test_ids_and_values_cannot_format_the_comment_or_inject_html() -> None:
    text = render_markdown(hostile_diff(), notes=[HOSTILE_LINE])
    rendered = gfm().render(text)
    # Four blocks (two of one line, two open: a small comment), each closed where it should
    # be: nothing recorded opened or closed one.
    assert len(shown(text)) == 4
    assert rendered.count("<details open>") == rendered.count("</details>") == 2
    assert text.count("\n<details open>") == 2 and "<details>" not in rendered
    assert "<script" not in rendered and "<img" not in rendered
    # No emphasis, table or link came from recorded text: only the report's own bold.
    assert "<em>" not in rendered.replace("<em><code>", "")  # reasons are italic code spans
    assert rendered.count("<strong>") == 1  # the summary line
    assert "<table" not in rendered and "<a " not in rendered
    # And the text is all there, literally, for a reader: the id in its summary, the line in
    # the code spans (whitespace collapsed).
    collapsed = " ".join(HOSTILE_LINE.split())
    ids = [
        html.unescape(m.group(1))
        for m in re.finditer(
            r"^(?:<details open><summary>)?changed · <code>(.*?)</code>", text, re.M
        )
    ]
    assert ids == [HOSTILE_ID, "tests/t.py::test_z_after"]
    # In the HTML of a summary, which a renderer that looked for Markdown there might format,
    # none of the characters that format or ping is left bare.
    for summary in re.findall(r"<summary>.*</summary>", text):
        assert not set("`*|\\~@") & set(summary), summary
    assert rendered.count(escape_html(collapsed)) >= 4  # predicate, reason, evidence, gap
    # The block after the hostile one is whole: its summary, then its line.
    assert re.search(
        r"<p>changed · <code>tests/t.py::test_z_after</code> · 1 change: <code>", rendered
    )
    note = next(line for line in text.splitlines() if line.startswith("> note: "))
    rendered_note = gfm().render(note)
    assert "<img" not in rendered_note and "<details>" not in rendered_note


def escape_html(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


# -- the limit ------------------------------------------------------------------------------


def thousands(n: int = 4000) -> DiffDocument:
    """``n`` tests of every status but unchanged (in blocks of different sizes), plus drift and
    gaps; a quarter of the changed ones reach the changed code."""
    statuses = ["changed", "changed", "unverified", "touched", "unstable", "added", "removed"]
    tests = []
    reaching = []
    for i in range(n):
        status = statuses[i % len(statuses)]
        test_id = f"tests/test_{i % 13}.py::test_case_{i}[{'x' * (i % 40)}]"
        changes = [exit_change(f"py:pkg.f{j}") for j in range(1 + i % 4)]
        reasons = ["head run incomplete: interrupted"] if status == "unverified" else []
        tests.append(
            a_test(test_id, status, *changes, reasons=reasons, may_hide_change=i % 3 == 0)
            if status not in ("added", "removed")
            else DiffOfTest(id=test_id, status=status, outcome=OutcomePair(head="passed"))
        )
        if status == "changed" and i % 4 == 0:
            reaching.append(test_id)
    return diff_of(
        tests,
        drift=[
            Drift(claimed_target=f"py:pkg.m{i}", tests=reaching[:7], evidence=["code: modified"])
            for i in range(30)
        ],
        code_changes=[
            CodeChange(symbol=f"py:pkg.g{i}", change="modified", tests_head=reaching, gaps=["x"])
            for i in range(25)
        ],
    )


def kinds_in(diff: DiffDocument) -> Counter[str]:
    out = Counter(test.status for test in diff.tests if test.status != "unchanged")
    out["drift"] = len(diff.drift)
    out["gaps"] = sum(1 for entry in diff.code_changes if entry.gaps)
    return out


def left_out(text: str) -> Counter[str]:
    """What the closing line says was left out, by status or kind."""
    match = CUT.search(text)
    if match is None:
        return Counter()
    out: Counter[str] = Counter()
    for part in match.group(2).split("; "):
        tests = re.fullmatch(r"(\d+) tests? \((.*)\)", part)
        if tests:
            by_status = dict(
                re.fullmatch(r"(\d+) (\w+)", p).groups()[::-1] for p in tests.group(2).split(", ")
            )  # type: ignore[union-attr]
            assert sum(int(n) for n in by_status.values()) == int(tests.group(1)), part
            out.update({status: int(n) for status, n in by_status.items()})
        elif m := re.fullmatch(r"(\d+) stand-ins? with drift", part):
            out["drift"] = int(m.group(1))
        elif m := re.fullmatch(r"(\d+) changed symbols? with gaps", part):
            out["gaps"] = int(m.group(1))
        else:
            raise AssertionError(f"unexpected part of the closing line: {part!r}")
    return out


LIMITS = [MIN_MARKDOWN_LIMIT, 5_000, 20_000, 39_999, DEFAULT_MARKDOWN_LIMIT, GITHUB_COMMENT_LIMIT]


@pytest.mark.parametrize("limit", LIMITS)
def test_thousands_of_tests_are_cut_to_the_limit_counting_exactly_what_was_left_out(
    limit: int,
) -> None:
    diff = thousands()
    whole = render_markdown(diff, limit=10**9)
    assert len(whole) > 10 * GITHUB_COMMENT_LIMIT  # the cut has work to do
    text = render_markdown(diff, limit=limit, link="https://ci.example/run/1")
    assert len(text) <= comment_length(text) <= limit
    # Nothing dropped silently: what is shown plus what the closing line counts is exactly
    # what the document holds, status by status.
    assert CUT.search(text) is not None, text[-500:]
    assert Counter(kind for kind, _ in shown(text)) + left_out(text) == kinds_in(diff)
    assert text.rstrip("\n").splitlines()[-1].startswith("**Cut to fit")
    assert "[the whole report](https://ci.example/run/1)" in text.splitlines()[-1]
    # Whole blocks, lowest priority first: the blocks shown are the first blocks of the whole
    # report, byte for byte (so no block nor code span was cut open, and values keep their
    # labels), and the cut did not stop early: the next block would not have fitted.
    kept, every = blocks_of(text), blocks_of(whole)
    assert kept == every[: len(kept)]
    assert len(text) + len(every[len(kept)]) + 200 > limit
    assert all(block.count("`") % 2 == 0 for block in kept)


def test_a_report_within_the_limit_is_not_cut_and_the_limit_is_the_whole_text() -> None:
    diff = review_diff()
    whole = render_markdown(diff)
    exact = render_markdown(diff, limit=comment_length(whole))
    assert exact == whole and "Cut to fit" not in exact
    one_less = render_markdown(diff, limit=comment_length(whole) - 1)
    assert comment_length(one_less) < comment_length(whole)
    assert left_out(one_less) + Counter(kind for kind, _ in shown(one_less)) == kinds_in(diff)
    assert left_out(one_less)  # one character less costs at least the last block


def test_characters_outside_the_basic_plane_count_twice_as_forges_may_count_them() -> None:
    emoji = "\U0001f600" * 50
    diff = diff_of(
        [a_test(f"tests/t.py::test_{i}[{emoji}]", "changed", exit_change()) for i in range(200)]
    )
    text = render_markdown(diff, limit=MIN_MARKDOWN_LIMIT * 2)
    assert comment_length(text) <= MIN_MARKDOWN_LIMIT * 2
    assert comment_length(text) > len(text)  # the astral characters were counted twice
    assert left_out(text)["changed"] == 200 - len(shown(text))


def test_one_huge_line_is_shortened_inside_its_code_span() -> None:
    huge = "py:pkg." + "f_" * 4000
    diff = diff_of(
        [
            a_test(
                "tests/t.py::test_a", "changed", Change(kind="call_added", path=[huge], symbol=huge)
            )
        ]
    )
    text = render_markdown(diff)
    [line] = [line for line in text.splitlines() if "tests/t.py::test_a" in line]
    item = line.split(" · 1 change: ", 1)[1]  # one line: the block is that line
    assert item.startswith("`") and item.endswith("…`")
    assert len(item) == len("``") + MAX_ITEM_CHARS


@pytest.mark.parametrize(
    ("link", "written", "where"),
    [
        (
            "https://ci.example/run (1)",
            ["html/"],
            "[the whole report](https://ci.example/run%20%281%29)",
        ),
        (None, ["html/", "diff.json"], "the whole report is in `html/` and `diff.json`"),
        (None, [], "`diffgenome diff` with `--json FILE` or `--html DIR` writes the whole report"),
    ],
)
def test_the_closing_line_says_where_the_whole_report_is(
    link: str | None, written: list[str], where: str
) -> None:
    text = render_markdown(thousands(300), limit=MIN_MARKDOWN_LIMIT, link=link, written=written)
    last = text.splitlines()[-1]
    assert where in last, last
    assert len(gfm().render(last).split("<a ")) == (2 if link else 1)


def test_notes_lead_and_a_lead_that_cannot_fit_is_an_error() -> None:
    text = render_markdown(review_diff(), notes=["code changes skipped: <b>x</b>"])
    lines = text.splitlines()
    assert lines.index("> note: code changes skipped\\: \\<b\\>x\\</b\\>") < lines.index(
        "#### Changed (2, 1 reaching the changed code)"
    )
    with pytest.raises(MarkdownTooLong, match="more than the limit of 2,000"):
        render_markdown(review_diff(), limit=MIN_MARKDOWN_LIMIT, notes=["n" * 900] * 3)


# -- the command ----------------------------------------------------------------------------


def genome_file(path: Path, exits: str, n: int) -> str:
    tests = [
        test_record(
            f"tests/test_x.py::test_{i}",
            {"call": phase([call(0, None, f"py:pkg.f{i}", exits={exits: 1})])},
        )
        for i in range(n)
    ]
    path.write_text(json.dumps(document(tests)))
    return str(path)


def test_diff_writes_a_comment_within_markdown_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    base = genome_file(tmp_path / "base.json", "returned", 400)
    head = genome_file(tmp_path / "head.json", "raised:py:builtins.ValueError", 400)
    out = tmp_path / "comment.md"
    args = ["diff", base, head, "--markdown", str(out), "--json", "diff.json"]
    code = main([*args, "--markdown-limit", "3000", "--markdown-link", "https://ci/1"])
    assert code == 1, capsys.readouterr().err
    text = out.read_text()
    assert comment_length(text) <= 3000
    assert left_out(text) == Counter(changed=400 - len(shown(text)))
    assert "[the whole report](https://ci/1)" in text
    assert json.loads((tmp_path / "diff.json").read_text())["summary"]["changed"] == 400
    # Notes (a side without a commit: no code changes) lead, inside the limit.
    assert "> note: " in text.split("#### Changed")[0]
    capsys.readouterr()
    assert main([*args, "--markdown-limit", "100"]) == 2
    assert "--markdown-limit must be at least 2000, not 100" in capsys.readouterr().err


def test_effect_changes_read_alike_in_markdown_and_the_terminal() -> None:
    """#29: each effect kind is one line of its own in every report."""
    out = {"type": "output", "phase": "call", "stream": "stdout", "lines": 1}
    env = {"type": "environ", "phase": "call", "name": "APP_MODE", "change": "set"}
    test = a_test(
        "tests/test_cli.py::test_run",
        "changed",
        Change(
            kind="output_changed",
            phase="call",
            base=[{**out, "digest": "a" * 32}],
            head=[{**out, "digest": "b" * 32}],
        ),
        Change(
            kind="environ_changed",
            phase="call",
            base=[],
            head=[{**env, "digest": "c" * 32}],
        ),
    )
    diff = diff_of([test])
    markdown = render_markdown(diff)
    console = Console(record=True, width=200)
    console.print(render_terminal(diff))
    terminal = console.export_text()
    # An effect's digest is named as the report names every digest (#29: it printed as
    # ``#aaaaaaaa`` beside ``(value A)``).
    for line in (
        "output: stdout (value A) (1 line) \u2192 stdout (value B) (1 line)",
        "environment: nothing \u2192 set APP_MODE = (value C)",
    ):
        assert line in markdown, markdown
        assert line in terminal, terminal
    assert "#aaaaaaaa" not in markdown and "#aaaaaaaa" not in terminal
