"""End-to-end: the first screen groups the causes by the code change they descend from (#23).

A pull request that changes two functions, each run by several tests, and a third function
(unchanged) that calls both: the first screen names each changed function with what changed
in its code, its tests and its causes under it; the caller's changed result reaches both
code changes and is said to ("through several code changes"), never put under one of them;
every cause is in exactly one group, in the JSON as in the reports. Before this, the causes
were one flat list, ranked by test count, with no code change named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import DIFF_PYTEST_ARGS, cli, cli_json, git_in, make_project

FILES = {
    "words/__init__.py": "",
    "words/text.py": """
        def slug(text):
            return text.strip().lower().replace(" ", "-")


        def title(text):
            return text.strip().title()
    """,
    "words/page.py": """
        from words.text import slug, title


        def heading(text):
            return f"{title(text)} <{slug(text)}>"


        def initials(text):
            return "".join(word[0] for word in text.split())
    """,
    "tests/test_text.py": """
        from words.text import slug, title


        def test_slug_two_words():
            assert slug("Hello World")


        def test_slug_padded():
            assert slug("  Good Day ")


        def test_slug_three_words():
            assert slug("a b c")


        def test_title_two_words():
            assert title("hello world")


        def test_title_three_words():
            assert title("a b c")
    """,
    "words/marks.py": """
        MARKS = {"bold": "*", "code": "`"}


        def mark(text, kind):
            return MARKS[kind] + text + MARKS[kind]
    """,
    "tests/test_marks.py": """
        from words.marks import MARKS, mark


        def test_every_mark():
            for kind in MARKS:
                print(mark("x", kind))
    """,
    "tests/test_page.py": """
        from words.page import heading, initials


        def test_heading_two_words():
            assert heading("hello world")


        def test_heading_three_words():
            assert heading("one two three")


        def test_initials():
            assert initials("one two")


        def test_initials_of_one_word():
            assert initials("one")
    """,
}
SLUG = ('.replace(" ", "-")', '.replace(" ", "_")')
TITLE = (".title()", ".capitalize()")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``main`` as above; ``HEAD`` changes ``slug`` and ``title`` in one commit."""
    project = make_project(tmp_path_factory.mktemp("groups"), FILES)
    git_in(project, "branch", "-M", "main")
    git_in(project, "checkout", "-q", "-b", "change")
    path = project / "words" / "text.py"
    text = path.read_text()
    for old, new in (SLUG, TITLE):
        assert text.count(old) == 1
        text = text.replace(old, new)
    path.write_text(text)
    git_in(project, "commit", "-qam", "slug with underscores, titles capitalized")
    git_in(project, "checkout", "-q", "-b", "genexpr", "main")
    page = project / "words" / "page.py"
    page.write_text(page.read_text().replace("word[0] for", "word[0].upper() for"))
    git_in(project, "commit", "-qam", "initials in capitals")
    git_in(project, "checkout", "-q", "-b", "table", "main")
    marks = project / "words" / "marks.py"
    marks.write_text(marks.read_text().replace('"code": "`"', '"code": "`", "strike": "~"'))
    git_in(project, "commit", "-qam", "a third mark")
    git_in(project, "checkout", "-q", "-b", "config", "main")
    (project / "pytest.ini").write_text(CONFIG)
    path.write_text(path.read_text().replace(*SLUG))
    git_in(project, "add", "pytest.ini")
    git_in(project, "commit", "-qam", "a filter naming a module that is not there; slug")
    return project


#: pytest warns in every test that it cannot import the filter's module.
CONFIG = "[pytest]\nfilterwarnings =\n    ignore::nosuchmodule.NoSuchWarning\n"


def _groups(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(group["symbol"] or group["reach"]): group for group in document["cause_groups"]}


def test_the_causes_are_grouped_by_the_code_change_they_descend_from(
    repo: Path, tmp_path: Path
) -> None:
    code, document = cli_json(repo, tmp_path, "diff", "main", "change")
    assert code == 1
    causes = document["causes"]
    groups = _groups(document)
    assert set(groups) == {"py:words.text.slug", "py:words.text.title", "several"}, groups
    slug, title, several = (
        groups["py:words.text.slug"],
        groups["py:words.text.title"],
        groups["several"],
    )
    # Each changed function: what happened to its code, and every test that saw it change.
    assert slug["reach"] == "code" and slug["change"] == "modified"
    assert slug["code"] == "modified"
    assert slug["tests"] == 5, slug  # three slug tests, two heading tests
    assert title["tests"] == 4, title  # the three-word inputs: title() != capitalize()
    for group, symbol in ((slug, "py:words.text.slug"), (title, "py:words.text.title")):
        members = [causes[i] for i in group["causes"]]
        assert members and all(c["origin"] == symbol and c["reach"] == "code" for c in members)
        assert any(c["symbol"] == symbol and c["kind"] == "result_changed" for c in members)
    # heading's result changed because both did: said so, with both named.
    assert several["symbols"] == ["py:words.text.slug", "py:words.text.title"]
    [caller] = [causes[i] for i in several["causes"]]
    assert caller["symbol"] == "py:words.page.heading", caller
    assert caller["reach"] == "several" and caller["origin"] is None
    # Every cause is in exactly one group.
    listed = sorted(i for group in document["cause_groups"] for i in group["causes"])
    assert listed == list(range(len(causes)))


def test_the_first_screen_leads_with_the_code_changes(repo: Path, tmp_path: Path) -> None:
    done = cli(repo, "diff", "main", "change", "--", *DIFF_PYTEST_ARGS)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("causes ("))
    assert lines[start] == "causes (3) by code change (2)", lines[start]
    first, second = lines[start + 1], lines[start + 2]
    assert first.startswith("  py:words.text.slug (modified): 5 tests, 1 cause  e.g. "), first
    assert second.startswith("    5 tests: py:words.text.slug results: "), second
    titled = next(i for i, line in enumerate(lines) if line.startswith("  py:words.text.title"))
    assert lines[titled].startswith("  py:words.text.title (modified): 4 tests, 1 cause")
    assert lines[titled + 1].startswith("    4 tests: py:words.text.title results: ")
    several = next(i for i, line in enumerate(lines) if "through several" in line)
    assert lines[several].startswith(
        "  through several code changes (py:words.text.slug, py:words.text.title): 2 tests"
    ), lines[several]
    assert lines[several + 1].startswith("    2 tests: py:words.page.heading results: ")
    assert start < titled < several < next(i for i, x in enumerate(lines) if "to review" in x)


def test_the_markdown_and_html_reports_group_the_causes_too(repo: Path, tmp_path: Path) -> None:
    markdown, html = tmp_path / "diff.md", tmp_path / "html"
    done = cli(
        repo,
        "diff",
        "main",
        "change",
        "--markdown",
        str(markdown),
        "--html",
        str(html),
        "--",
        *DIFF_PYTEST_ARGS,
    )
    assert done.returncode == 1, done.stderr
    text = markdown.read_text()
    assert "#### Causes by code change (2 code changes, 3 causes)" in text, text
    assert "- **`py:words.text.slug`** (modified) · 5 tests" in text, text
    assert "  - `5 tests: py:words.text.slug results: " in text
    assert "- **through several code changes** (`py:words.text.slug`, `py:words.text.title`)" in (
        text
    )
    index = (html / "index.html").read_text()
    assert index.count('class="cause-group"') == 3, index
    assert "through several code changes" in index


def test_a_changed_generator_expression_is_its_functions_code_change(
    repo: Path, tmp_path: Path
) -> None:
    """A generator expression is named by its content within a version; across versions the
    mapping pairs it with its old self (docs/diffing.md, "Identity by mapping"), so what
    changed is what it made: the enclosing function's code changing, one group."""
    code, document = cli_json(repo, tmp_path, "diff", "main", "genexpr")
    assert code == 1
    groups = _groups(document)
    assert "several" not in groups, document["cause_groups"]
    group = groups["py:words.page.initials"]
    assert group["reach"] == "code" and group["tests"] == 2, group
    kinds = {document["causes"][i]["kind"] for i in group["causes"]}
    assert kinds == {"result_changed"}, [document["causes"][i] for i in group["causes"]]


def test_a_changed_module_level_table_is_the_cause_of_what_its_readers_do(
    repo: Path, tmp_path: Path
) -> None:
    """termcolor 2.5.0 added ``strike`` to its module-level ``ATTRIBUTES``; a test that loops
    over it called ``colored`` more often and printed more. No changed function ran: the
    changed body is the module's, run at import. What the test did otherwise is that body's
    change, read off who reads the names it binds, never "no changed code on its call path"
    (which it was before)."""
    code, document = cli_json(repo, tmp_path, "diff", "main", "table")
    assert code == 1
    groups = _groups(document)
    assert "none" not in groups, document["cause_groups"]
    group = groups["py:words.marks"]
    summaries = [document["causes"][i]["summary"] for i in group["causes"]]
    assert "py:words.marks.mark ran more often" in summaries, summaries
    assert any(summary.startswith("output: stdout") for summary in summaries), summaries


def test_a_warning_about_pytests_configuration_is_put_down_to_the_configuration(
    repo: Path, tmp_path: Path
) -> None:
    """A ``filterwarnings`` entry naming a module that cannot be imported makes pytest warn
    in every test; the same commit changes ``slug``. The warning is pytest's about its
    configuration: not ``slug``'s (only some tests run it) nor "several code changes" (as
    it read before), but the group with no changed code in reach, which names the file."""
    code, document = cli_json(repo, tmp_path, "diff", "main", "config")
    assert code == 1
    groups = _groups(document)
    none = groups["none"]
    assert none["code"] == "no changed code on its call path; changed besides code: pytest.ini"
    [warned] = [
        document["causes"][i]
        for i in none["causes"]
        if document["causes"][i]["kind"] == "warnings_changed"
    ]
    assert "PytestConfigWarning" in warned["summary"], warned
    assert warned["tests"] == 11 and warned["origins"] == [], warned
    assert "several" not in groups, document["cause_groups"]
    assert groups["py:words.text.slug"]["reach"] == "code"
    done = cli(repo, "diff", "main", "config", "--", *DIFF_PYTEST_ARGS)
    assert (
        "  no changed code on its call path; changed besides code: pytest.ini: 11 tests"
        in done.stdout
    ), done.stdout
