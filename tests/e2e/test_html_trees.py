"""End-to-end: a test page's two call trees in a real Chromium (#25 point 4).

A real git repository with two commits, recorded by ``diffgenome diff --html``; the changed
test's page is opened in headless Chromium through the DevTools protocol (tests/e2e/
browser.py, standard library only), where the page's own script runs, and what a reviewer sees
is asserted on the page as drawn:

- amber (the colour of "changed") is only on what changed: a decision taken one way only
  (``true 0 / false 1``) is no change, and a screenshot has no amber pixel outside the boxes
  of the changed nodes;
- both trees open at the same nodes (before: base stayed collapsed where only head had the
  new call), and opening or closing a node on one side does it on the other;
- scrolling one tree scrolls the other to the same node;
- a long predicate wraps inside its panel instead of running past its edge.

The screenshot is kept as docs/html-report-trees.png when ``DIFFGENOME_SCREENSHOTS`` names
the docs folder (how the picture in the docs is made).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from diffgenome.analysis.report.html import page_name
from e2e.browser import png_pixels, tab
from e2e.helpers import cli_json, git_in, make_project, write_files

pytestmark = pytest.mark.slow

LONG = " and ".join(f"limit_{i} is not None" for i in range(12))
STEPS = 40  # calls enough for a tree taller than its panel


def core(head: bool) -> str:
    steps = "\n\n\n".join(f"def step_{i}(x):\n    return x + {i}" for i in range(STEPS))
    # step_7 calls a helper on both sides, and on head a new one too: only head has a change
    # under it, which before opened step_7 on head alone.
    noted = "    note(x)\n" if head else ""
    steps = steps.replace(
        "def step_7(x):\n    return x + 7",
        f"def inner(x):\n    return x\n\n\ndef note(x):\n    return None\n\n\n"
        f"def step_7(x):\n{noted}    return inner(x) + 7",
    )
    calls = "\n".join(f"    total = step_{i}(total)" for i in range(STEPS))
    limits = ", ".join(f"limit_{i}=0" for i in range(12))
    pad = "\n\n\ndef pad(text):\n    return text.center(6)\n" if head else ""
    cell_body = "    return pad(str(value))" if head else "    return str(value)"
    return f"""{steps}
{pad}

def cell(value):
    if value is None:
        return ""
{cell_body}


def check(value, {limits}):
    if {LONG}:
        return value > 0
    return False


def row(values):
    return [cell(v) for v in values]


def table(rows):
    total = 0
{calls}
    check(total)
    return [row(r) for r in rows], total
"""


TESTS = """
from fmt import core


def test_table():
    cells, total = core.table([[1, 2], [3]])
    assert len(cells) == 2 and total > 0
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trees")
    repo = make_project(
        root, {"fmt/__init__.py": "", "fmt/core.py": core(False), "tests/test_fmt.py": TESTS}
    )
    write_files(repo, {"fmt/core.py": core(True)})
    git_in(repo, "commit", "-qam", "pad the cells")
    site = root / "site"
    _, diff = cli_json(repo, root, "diff", "HEAD~1", "HEAD", "--no-confirm", "--html", str(site))
    [test] = [t for t in diff["tests"] if t["id"] == "tests/test_fmt.py::test_table"]
    assert test["status"] == "changed", json.dumps(test)[:2000]
    return site / page_name(test["id"])


#: The page's amber: the text of a change, and the background of a changed node.
AMBER_TEXT = (154, 103, 0)
AMBER_BACKGROUND = (255, 248, 197)


def boxes(driven: Any, selector: str) -> list[tuple[float, float, float, float]]:
    found: list[list[float]] = driven.evaluate(
        f"Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => {{"
        " const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })"
    )
    return [(a, b, c, d) for a, b, c, d in found]


def test_amber_is_only_on_what_changed(page: Path, tmp_path: Path) -> None:
    with tab(page, 1280, 900) as driven:
        assert driven.evaluate("document.querySelectorAll('#trees .one-sided').length") > 0
        # In the trees, nothing but a changed node (or the legend's sample) is amber.
        amber = driven.evaluate(
            """Array.from(document.querySelectorAll('#trees *')).filter(e => {
                 const s = getComputedStyle(e);
                 return (s.color === 'rgb(154, 103, 0)' ||
                         s.backgroundColor === 'rgb(255, 248, 197)') &&
                        !e.closest('.chg') && !e.closest('.legend');
               }).map(e => e.outerHTML.slice(0, 200))"""
        )
        assert amber == [], amber
        shot = driven.screenshot(tmp_path / "trees.png")
        allowed = boxes(driven, ".chg, .badge, .legend, ul.gaps, .s-changed")
        width, height, pixels = png_pixels(shot)
    keep = os.environ.get("DIFFGENOME_SCREENSHOTS")
    if keep:
        shutil.copy(tmp_path / "trees.png", Path(keep) / "html-report-trees.png")
    channels = len(pixels[0]) // width
    outside = 0
    for y in range(height):
        line = pixels[y]
        for x in range(width):
            rgb = tuple(line[x * channels : x * channels + 3])
            if rgb not in (AMBER_TEXT, AMBER_BACKGROUND):
                continue
            inside = any(a - 2 <= x <= c + 2 and b - 2 <= y <= d + 2 for a, b, c, d in allowed)
            outside += not inside
    assert outside == 0, f"{outside} amber pixels outside what changed"


def test_both_trees_open_at_the_same_nodes_and_toggle_together(page: Path) -> None:
    with tab(page, 1280, 900) as driven:
        # The call under which only head calls a new helper is open on base too.
        opened = driven.evaluate(
            """Array.from(document.querySelectorAll('.side details')).filter(d =>
                 d.querySelector(':scope > summary').textContent.includes('step_7'))
               .map(d => [d.closest('.side').dataset.side, d.open])"""
        )
        assert opened == [["base", True], ["head", True]], opened
        state = driven.evaluate(
            """(() => {
                 const open = side => Object.fromEntries(Array.from(
                   document.querySelectorAll(`.side[data-side=${side}] details[data-key]`)
                 ).map(d => [d.dataset.key, d.open]));
                 return {base: open('base'), head: open('head')};
               })()"""
        )
        both = set(state["base"]) & set(state["head"])
        assert both, state
        assert {k: state["base"][k] for k in both} == {k: state["head"][k] for k in both}
        # Closing a node on head closes it on base.
        key = driven.evaluate(
            """(() => {
                 const d = Array.from(document.querySelectorAll(
                   '.side[data-side=head] details[data-key][open]')).pop();
                 d.open = false; return d.dataset.key; })()"""
        )
        driven.settle()
        assert (
            driven.evaluate(
                f"document.querySelector('.side[data-side=base] details[data-key=\"{key}\"]').open"
            )
            is False
        )


def test_scrolling_one_tree_scrolls_the_other_to_the_same_node(page: Path) -> None:
    with tab(page, 1280, 700) as driven:
        tall = driven.evaluate(
            "Array.from(document.querySelectorAll('#trees .side'))"
            ".map(p => p.scrollHeight > p.clientHeight)"
        )
        assert tall == [True, True], "the trees fit their panels: nothing to scroll"
        first = """(side => {
                     const p = document.querySelector(`.side[data-side=${side}]`);
                     const top = p.getBoundingClientRect().top;
                     return Array.from(p.querySelectorAll('span[data-key]')).find(s => {
                       const b = s.getBoundingClientRect();
                       return b.height > 0 && b.bottom > top; }).dataset.key; })"""
        # Down on base, then back up a little on head: both within what either can scroll
        # (at the very end the shorter tree cannot follow).
        for side, other, by in (("base", "head", 300), ("head", "base", -150)):
            driven.evaluate(f"document.querySelector('.side[data-side={side}]').scrollTop += {by}")
            driven.settle()
            driven.settle()
            assert driven.evaluate(f"({first})('{side}')") == driven.evaluate(
                f"({first})('{other}')"
            )
            assert (
                driven.evaluate(f"document.querySelector('.side[data-side={other}]').scrollTop") > 0
            )


def test_a_long_predicate_wraps_inside_its_panel(page: Path) -> None:
    with tab(page, 1000, 900) as driven:
        found = driven.evaluate(
            """(() => {
                 const out = [];
                 for (const code of document.querySelectorAll('#trees .decision code')) {
                   if (!code.textContent.startsWith('limit_0 is not None')) continue;
                   const panel = code.closest('.side').getBoundingClientRect();
                   const box = code.getBoundingClientRect();
                   const line = parseFloat(getComputedStyle(code).lineHeight) || 16;
                   out.push({right: box.right, edge: panel.right, height: box.height, line});
                 }
                 return out; })()"""
        )
        assert len(found) == 2, found  # one in each tree
        for one in found:
            assert one["right"] <= one["edge"], one  # not past the panel's edge
            assert one["height"] > 1.5 * one["line"], one  # on more than one line
