"""The HTML report's renderer (report/html.py): escaping, stable bytes, trees, writing.

Diffs here come from the real differ over genome documents put together in ``genomes``; the
browser-side behaviour is tested in tests/e2e/test_html_report.py.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import genomes
import pytest
from genomes import branch, call

from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.models import (
    Change,
    CodeChange,
    DiffDocument,
    Drift,
    GenomeDocument,
    Run,
)
from diffgenome.analysis.models import TestRecord as Recorded
from diffgenome.analysis.report.html import (
    INDEX,
    SiteError,
    diff_site,
    page_name,
    run_site,
    write_site,
)

EVIL = "<x-evil onclick=\"alert('1')\">&amp;"
TEST_ID = f"tests/test_a.py::test_it[{EVIL}]"
SYMBOL = f"py:pkg.{EVIL}"
# What the renderer itself writes; anything else in a page came from recorded text.
TAGS = {
    *("html", "head", "meta", "title", "link", "script", "body", "header", "main", "nav"),
    *("section", "article", "h1", "h2", "h3", "p", "a", "span", "b", "code", "div", "br"),
    *("form", "label", "input", "output", "table", "thead", "tbody", "tr", "th", "td"),
    *("ul", "li", "details", "summary", "button"),
}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.handlers: list[str] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.handlers += [name for name, _value in attrs if name.startswith("on")]

    def handle_data(self, data: str) -> None:
        self.text += data


def parsed(page: bytes) -> Tags:
    parser = Tags()
    parser.feed(page.decode("utf-8"))
    return parser


def genome(test_id: str, inner: list[dict[str, Any]], predicate: str = "x > 0") -> dict[str, Any]:
    nodes = [call(0, None, "py:tests.test_a.test_it"), call(1, 0, "py:pkg.f"), *inner]
    site = "py:pkg.f/if[abc]"
    return genomes.document(
        [
            genomes.test_record(
                test_id,
                {"call": genomes.phase(nodes, [branch(1, site, predicate, 1, 0)])},
            )
        ]
    )


def evil_diff() -> tuple[DiffDocument, dict[str, Any], dict[str, Any]]:
    base = genome(TEST_ID, [], predicate=EVIL)
    head = genome(TEST_ID, [call(2, 1, SYMBOL)], predicate=EVIL)
    diff = diff_documents(base, head, base_rev=EVIL, head_rev="HEAD")
    diff.tests[0].reasons.append(EVIL)
    # A preview (--genome-preview) is recorded text too: a value's own characters.
    preview = [{"shape": "str", "digest": "a" * 32, "preview": repr(EVIL)}]
    diff.tests[0].changes.append(
        Change(
            kind="result_changed",
            phase="call",
            path=["py:tests.test_a.test_it", "py:pkg.f"],
            symbol="py:pkg.f",
            base=preview,
            head=[{"shape": "str", "digest": "b" * 32, "preview": EVIL}],
        )
    )
    diff.code_changes.append(
        CodeChange(symbol=SYMBOL, change="modified", gaps=[EVIL], sites=[{"predicate": EVIL}])
    )
    diff.drift.append(Drift(claimed_target=SYMBOL, tests=[TEST_ID], evidence=[EVIL]))
    return diff, base, head


def records(document: dict[str, Any]) -> dict[str, Recorded]:
    parsed_doc = GenomeDocument.model_validate(document)
    return {test.id: test for test in parsed_doc.tests}


def test_recorded_text_is_never_markup_in_any_page() -> None:
    diff, base, head = evil_diff()
    assert diff.tests[0].status == "changed"
    site = diff_site(diff, records(base), records(head))
    pages = {name: data for name, data in site.items() if name.endswith(".html")}
    assert set(pages) == {INDEX, page_name(TEST_ID)}
    for name, data in pages.items():
        tags = parsed(data)
        assert tags.tags <= TAGS, (name, tags.tags - TAGS)
        assert tags.handlers == [], name
        assert EVIL in tags.text, name  # shown, as text
        assert b"<x-evil" not in data, name
    # The users of a drifted stand-in link to their pages.
    assert f'<li><a href="{page_name(TEST_ID)}">tests/test_a.py::test_it[&lt;x-evil' in (
        pages[INDEX].decode()
    )
    page = pages[page_name(TEST_ID)].decode()
    # In attribute values too (the full path is a tooltip).
    assert 'title="py:tests.test_a.test_it \u203a py:pkg.f \u203a py:pkg.&lt;x-evil' in page


def test_recorded_text_is_never_markup_in_a_run_site() -> None:
    _diff, _base, head = evil_diff()
    record = records(head)[TEST_ID]
    record.unverified_reasons = [EVIL]
    record.verified = False
    run = Run.model_validate(genomes.run(EVIL, commit=EVIL, incomplete_reasons=[EVIL]))
    run.complete = False
    site = run_site(run, [record])
    for name in (INDEX, page_name(TEST_ID)):
        tags = parsed(site[name])
        assert tags.tags <= TAGS, (name, tags.tags - TAGS)
        assert tags.handlers == [] and b"<x-evil" not in site[name], name
        assert EVIL in tags.text, name


def test_a_lone_surrogate_in_an_id_is_shown_as_its_escape_not_a_crash() -> None:
    odd = "t.py::test[\ud800]"
    base = genome(odd, [])
    head = genome(odd, [call(2, 1, "py:pkg.new")])
    site = diff_site(diff_documents(base, head, base_rev="a", head_rev="b"))
    assert "t.py::test[\\ud800]" in site[page_name(odd)].decode("utf-8")


def test_the_same_documents_give_the_same_bytes() -> None:
    first, base, head = evil_diff()
    second, *_ = evil_diff()
    assert diff_site(first, records(base), records(head)) == diff_site(
        second, records(base), records(head)
    )
    run = Run.model_validate(genomes.run())
    tests = list(records(head).values())
    assert run_site(run, tests) == run_site(run, tests)


def plain(page: str) -> str:
    """A page without the keys that tie both trees' nodes together (tested in Chromium,
    tests/e2e/test_html_trees.py) and without the class of a predicate."""
    return re.sub(r' data-key="[0-9a-f]+"', "", page).replace(' class="predicate"', "")


def test_a_new_call_is_marked_on_head_only_and_the_way_to_it_is_open() -> None:
    base = genome("t::a", [call(2, 1, "py:pkg.g"), call(3, 2, "py:pkg.h")])
    head = genome(
        "t::a", [call(2, 1, "py:pkg.g"), call(3, 2, "py:pkg.h"), call(4, 3, "py:pkg.new")]
    )
    diff = diff_documents(base, head, base_rev="a", head_rev="b")
    page = plain(diff_site(diff, records(base), records(head))[page_name("t::a")].decode())
    base_side, head_side = page.split('data-side="base"')[1].split('data-side="head"')
    assert "py:pkg.new" not in base_side
    assert '<span class="node add"><code>py:pkg.new</code>' in head_side
    # Every ancestor of the change is open, so the change is visible without a click, and
    # base's tree is open at the same nodes (#25 point 4).
    for symbol in ("py:tests.test_a.test_it", "py:pkg.f", "py:pkg.g", "py:pkg.h"):
        assert f'<details open><summary><span class="node"><code>{symbol}</code>' in head_side
        if symbol != "py:pkg.h":  # a leaf on base: nothing to open
            assert f'<details open><summary><span class="node"><code>{symbol}</code>' in base_side
    # The changes table puts the sides next to each other.
    assert re.search(r'<td class="base"><span class="none">—</span></td><td class="head">', page)


def test_decisions_new_on_head_and_gone_from_base_are_marked_on_their_side() -> None:
    base = genome("t::b", [], predicate="old > 0")
    head = genome("t::b", [], predicate="new > 0")
    head["tests"][0]["phases"]["call"]["branches"][0]["site"] = "py:pkg.f/if[def]"
    diff = diff_documents(base, head, base_rev="a", head_rev="b")
    assert [c.kind for c in diff.tests[0].changes] == ["branch_changed", "branch_changed"]
    page = plain(diff_site(diff, records(base), records(head))[page_name("t::b")].decode())
    base_side, head_side = page.split('data-side="base"')[1].split('data-side="head"')
    assert '<span class="decision del">◇ if[abc] <code>old &gt; 0</code>' in base_side
    assert '<span class="decision add">◇ if[def] <code>new &gt; 0</code>' in head_side
    assert "decision chg" not in page


def test_values_are_named_by_label_the_same_on_the_index_and_the_page() -> None:
    def results(digest: str) -> dict[str, Any]:
        return genome(
            "t::v", [call(2, 1, "py:pkg.g", results=[{"shape": "int", "digest": digest}])]
        )

    base, head = results("1" * 64), results("2" * 64)
    diff = diff_documents(base, head, base_rev="a", head_rev="b")
    assert [c.kind for c in diff.tests[0].changes] == ["result_changed"]
    site = diff_site(diff, records(base), records(head))
    index, page = site[INDEX].decode(), site[page_name("t::v")].decode()
    said = "py:pkg.g results: int (value A) → int (value B)"
    assert said in index and said in page
    assert '<td class="base">int (value A)</td><td class="head">int (value B)</td>' in page
    assert "1111" not in page and "2222" not in page


def test_test_pages_step_through_the_tests_in_the_index_order() -> None:
    def two(extra: str) -> dict[str, Any]:
        doc = genome("t::b", [call(2, 1, extra)])
        doc["tests"] += genome("t::a", [call(2, 1, extra)])["tests"]
        doc["tests"] += genome("t::c", [])["tests"]  # unchanged: no page, not a step
        return doc

    base, head = two("py:pkg.old"), two("py:pkg.new")
    diff = diff_documents(base, head, base_rev="a", head_rev="b")
    assert [(t.id, t.status) for t in diff.tests] == [
        ("t::a", "changed"),
        ("t::b", "changed"),
        ("t::c", "unchanged"),
    ]
    site = diff_site(diff, records(base), records(head))
    first, second = site[page_name("t::a")].decode(), site[page_name("t::b")].decode()
    assert f'<a href="../{page_name("t::b")}" rel="next" title="t::b">next →</a>' in first
    assert 'rel="prev"' not in first
    assert f'<a href="../{page_name("t::a")}" rel="prev" title="t::a">← previous</a>' in second
    assert 'rel="next"' not in second
    assert page_name("t::c") not in site


def test_a_test_without_its_recording_gets_a_page_that_says_so() -> None:
    diff, _base, _head = evil_diff()
    page = diff_site(diff)[page_name(TEST_ID)].decode()
    assert page.count("recording not available") == 2


def test_call_chains_deeper_than_the_recursion_limit_render() -> None:
    depth = 1500  # more than the recursion limit (1000)
    nodes = [call(i, i - 1 if i else None, f"py:pkg.f{i}") for i in range(depth)]
    record = Recorded.model_validate(genomes.test_record("t::deep", {"call": genomes.phase(nodes)}))
    site = run_site(Run.model_validate(genomes.run()), [record])
    page = site[page_name("t::deep")].decode()
    assert page.count("<details") == depth - 1 + 1  # every node with a child, and the phase
    assert page.count("</details>") == page.count("<details")


def test_page_names_are_digests_and_never_the_ids() -> None:
    names = {page_name(f"t.py::test[{i}]") for i in range(1000)}
    names.add(page_name("../../etc/passwd"))
    assert len(names) == 1001
    assert all(re.fullmatch(r"t/[0-9a-f]{20}\.html", name) for name in names)


def test_write_site_replaces_an_earlier_report_and_drops_stale_pages(tmp_path: Path) -> None:
    out = tmp_path / "report"
    diff, base, head = evil_diff()
    stale = out / "t" / ("0" * 20 + ".html")  # a page of an earlier report
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    (out / "t" / "mine.html").write_text("mine")
    (out / "notes.txt").write_text("mine")
    index = write_site(diff_site(diff, records(base), records(head)), str(out))
    assert index == str(out / INDEX)
    assert not stale.exists()
    assert (out / "notes.txt").read_text() == "mine"  # not ours: left alone
    assert (out / "t" / "mine.html").read_text() == "mine"
    assert (out / page_name(TEST_ID)).is_file()
    assert sorted(p.name for p in out.iterdir()) == ["assets", "index.html", "notes.txt", "t"]


def test_write_site_into_a_file_is_a_user_error(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(SiteError, match="is not a folder"):
        write_site({"index.html": b""}, str(target))
    blocked = tmp_path / "blocked"
    blocked.write_text("x")
    with pytest.raises(SiteError, match="cannot write the HTML report to"):
        write_site({"index.html": b""}, str(blocked / "sub"))


def test_the_index_says_which_core_recorded_each_side() -> None:
    """The run line names each side's core, the pure-Python one with its reason (escaped)."""
    diff, base, head = evil_diff()
    diff.base.core = "c"
    diff.head.core, diff.head.core_reason = "python", f"other-interpreter: {EVIL}"
    index = diff_site(diff, records(base), records(head))[INDEX]
    tags = parsed(index)
    assert f"; head run {diff.head.run}, pure-Python core: other-interpreter: {EVIL}" in tags.text
    assert f"base run {diff.base.run}, compiled core; " in tags.text
    assert tags.tags <= TAGS and not tags.handlers


def test_a_tests_page_lists_its_effects_as_text() -> None:
    """#29: what a phase printed, logged, wrote and set, each side on its page; recorded
    names (a logger's, a path) are text, never markup."""

    def doc(digest: str) -> dict[str, Any]:
        record = genomes.test_record(TEST_ID, {"call": genomes.phase([call(0, None, "t")])})
        record["effects"] = [
            {"type": "output", "phase": "call", "stream": "stdout", "digest": digest, "lines": 2},
            {"type": "log", "phase": "setup", "logger": EVIL, "level": "INFO", "count": 1},
            {
                "type": "file",
                "phase": "call",
                "path": "<root>/out.txt",
                "mode": "write",
                "digest": digest,
            },
        ]
        record["effects_unrecorded"] = ["output:test-captures"]
        return genomes.document([record])

    base, head = doc("a" * 32), doc("b" * 32)
    diff = diff_documents(base, head, base_rev="b", head_rev="h")
    # Output was not seen (the test captures it itself): only the file is claimed.
    assert [c.kind for c in diff.tests[0].changes] == ["file_changed"]
    site = diff_site(diff, records(base), records(head))
    page = site[page_name(TEST_ID)]
    tags = parsed(page)
    assert tags.tags <= TAGS and tags.handlers == []
    assert b"<x-evil" not in page
    text = tags.text
    assert "[call] stdout #aaaaaaaa (2 lines)" in text
    assert "[call] stdout #bbbbbbbb (2 lines)" in text
    assert f"[setup] {EVIL} INFO template (no digest) \u00d71" in text
    assert "not seen: output:test-captures" in text


def test_the_unverified_warning_counts_in_the_right_number() -> None:
    """One unverified test is "it" (the terminal and Markdown reports said so; the site said
    "their recordings ... they are")."""
    diff, base, head = evil_diff()
    for n, words in (
        (1, "1 test is unverified: its recordings cannot be compared as a whole, so it is never"),
        (3, "3 tests are unverified: their recordings cannot be compared as a whole, so they"),
    ):
        diff.summary.unverified = n
        text = parsed(diff_site(diff, records(base), records(head))[INDEX]).text
        assert words in " ".join(text.split()), text
