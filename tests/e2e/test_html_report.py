"""End-to-end: the HTML report (#13.7) of ``diff --html DIR`` and ``show RUN --html DIR``.

A real git repository with two commits, recorded by real ``pytest --genome`` sessions through
``diffgenome diff``; the site it writes is opened in a real headless Chromium (Debian's
package, see tests/e2e/browser.py): its pages load without a single console message, the
filters and the search change which tests are visible (through the URL and through clicks), and
a screenshot of the index is a real, non-blank picture. Test ids that look like markup must
stay text everywhere.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from diffgenome.analysis.models import Run
from diffgenome.analysis.models import TestRecord as Recorded
from diffgenome.analysis.report.html import CSP, page_name, run_site, write_site
from diffgenome.protocol.vocab import IMPORT_TEST_ID
from e2e.browser import load, png_pixels, rows, screenshot
from e2e.helpers import GitRepo, cli, cli_json, export, run_pytest, write_files

BASE = {
    "shop/__init__.py": "",
    "shop/pricing.py": """
        def discount(total, code):
            if code == "SAVE10":
                return total * 0.9
            return total


        def price(items, code=None):
            total = sum(items)
            return round(discount(total, code), 2)
    """,
    "tests/test_pricing.py": """
        import pytest

        from shop.pricing import price


        def test_plain():
            assert price([1, 2]) == 3


        def test_code():
            assert price([10, 10], "SAVE10") == 18


        LABELS = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>"]


        @pytest.mark.parametrize("label", LABELS)
        def test_label(label):
            assert price([len(label)]) > 0


        def test_old():
            assert price([]) == 0


        def test_unrelated():
            assert 1 + 1 == 2


        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass
    """,
}
HEAD = {
    # A helper extracted, which now also makes the total a float (equal, so the tests pass):
    # the tests that price something changed, and the helper is structure.
    "shop/pricing.py": """
        def _total(items):
            return float(sum(items))


        def discount(total, code):
            if code == "SAVE10":
                return total * 0.9
            if code == "HALF":
                return total / 2
            return total


        def price(items, code=None):
            total = _total(items)
            return round(discount(total, code), 2)


        def refund(total):
            return -total
    """,
    "tests/test_pricing.py": """
        import pytest

        from shop.pricing import price


        def test_plain():
            assert price([1, 2]) == 3


        def test_code():
            assert price([10, 10], "SAVE10") == 18


        LABELS = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>"]


        @pytest.mark.parametrize("label", LABELS)
        def test_label(label):
            assert price([len(label)]) > 0


        def test_unrelated():
            assert 1 + 1 == 2


        def test_new():
            assert price([4], "HALF") == 2


        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass
    """,
}
SCRIPT_ID = "tests/test_pricing.py::test_label[<script>alert(1)</script>]"
IMG_ID = "tests/test_pricing.py::test_label[<img src=x onerror=alert(2)>]"


class Site:
    def __init__(self, root: Path, document: dict[str, Any]) -> None:
        self.root = root
        self.document = document

    def status_of(self) -> dict[str, str]:
        return {test["id"]: test["status"] for test in self.document["tests"]}

    def page_texts(self) -> dict[str, str]:
        return {
            str(path.relative_to(self.root)): path.read_text(encoding="utf-8")
            for path in sorted(self.root.rglob("*.html"))
        }


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("html") / "repo"
    write_files(repo, BASE)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, HEAD)
    GitRepo(repo).commit_all("head")
    return repo


@pytest.fixture(scope="module")
def site(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Site:
    out = tmp_path_factory.mktemp("site") / "report"
    code, document = cli_json(repo, repo.parent, "diff", "HEAD~1", "HEAD", "--html", str(out))
    assert code == 1  # tests changed
    return Site(out, document)


def test_diff_site_has_an_index_and_a_page_per_test_that_is_not_unchanged(site: Site) -> None:
    statuses = site.status_of()
    assert statuses[SCRIPT_ID] == "changed"
    assert statuses["tests/test_pricing.py::test_new"] == "added"
    assert statuses["tests/test_pricing.py::test_old"] == "removed"
    assert statuses["tests/test_pricing.py::test_unrelated"] == "unchanged"
    index = (site.root / "index.html").read_text(encoding="utf-8")
    start = index.index('<table id="tests"')
    table = index[start : index.index("</table>", start)]
    links = re.findall(r'<a href="(t/[0-9a-f]+\.html)">([^<]*)</a>', table)
    linked = {_unescape(text) for _href, text in links}
    expected = {test_id for test_id, status in statuses.items() if status != "unchanged"}
    assert linked == expected
    pages = sorted(p.name for p in (site.root / "t").iterdir())
    assert pages == sorted(href.split("/")[1] for href, _text in links)
    # Every test is in the index (unchanged ones too), as a row that carries its status.
    assert Counter(re.findall(r'<tr data-status="([a-z]+)">', index)) == Counter(statuses.values())
    # The changed test's page: its change, side by side, what moved as structure, and both
    # call trees with the call of the new helper drawn as structure.
    page = _page_of(site, SCRIPT_ID)
    assert '<section id="structure">' in page
    assert "new `shop.pricing._total`, called by `shop.pricing.price`" in page
    assert "py:shop.pricing.price" in page and "results" in page
    assert '<div class="side" data-side="base">' in page
    assert re.search(
        r'<span class="node moved" data-key="[0-9a-f]+"><code>py:shop.pricing._total</code>', page
    )
    # The code changes with their gaps: refund() is new and no test runs it.
    code = index[index.index('<section id="code">') :]
    assert "<code>py:shop.pricing.discount</code>" in code
    refund = code[code.index("<code>py:shop.pricing.refund</code>") :]
    assert refund.index(
        '<ul class="gaps">\n<li>not executed by any test <span class="place">at <code>'
        "shop/pricing.py:"
    ) < refund.index("</article>")


def test_the_site_is_self_contained(site: Site) -> None:
    """Nothing but the site's own files is referenced: no network, no CDN, no absolute path."""
    files = {str(p.relative_to(site.root)) for p in site.root.rglob("*") if p.is_file()}
    for name, text in site.page_texts().items():
        assert "http://" not in text and "https://" not in text, name
        for ref in re.findall(r'(?:href|src)="([^"]*)"', text):
            if ref.startswith("#"):
                continue
            assert not ref.startswith(("/", "//")) and ":" not in ref, (name, ref)
            target = str((site.root / name).parent.joinpath(ref).resolve().relative_to(site.root))
            assert target in files, (name, ref)
        assert "Content-Security-Policy" in text, name
    for asset in ("assets/report.js", "assets/style.css"):
        text = (site.root / asset).read_text(encoding="utf-8")
        assert "http" not in text and "url(" not in text and "@import" not in text


def test_test_ids_that_look_like_markup_stay_text(site: Site) -> None:
    for name, text in site.page_texts().items():
        assert "<script>alert" not in text and "<img src=x" not in text, name
        assert len(re.findall(r"<script\b", text)) == 1, name  # ours, from assets/
    index = (site.root / "index.html").read_text(encoding="utf-8")
    assert "test_label[&lt;script&gt;alert(1)&lt;/script&gt;]" in index
    assert "test_label[&lt;img src=x onerror=alert(2)&gt;]" in index


def test_the_console_of_chromium_is_heard(tmp_path: Path) -> None:
    """The check below can fail: an error thrown or logged, and a CSP violation (the policy is
    the report's own), all reach the console messages that ``load`` collects."""
    policy = re.search(r'<meta http-equiv="Content-Security-Policy"[^>]*>', CSP_PAGE)
    assert policy is not None
    (tmp_path / "probe.js").write_text('console.error("probe-logged"); undefinedThing();')
    (tmp_path / "probe.html").write_text(CSP_PAGE)
    loaded = load(tmp_path / "probe.html")
    said = "\n".join(loaded.console)
    assert "probe-logged" in said
    assert "undefinedThing is not defined" in said
    assert "Content Security Policy" in said  # the inline script was refused
    assert 'data-ran="yes"' not in loaded.dom


CSP_PAGE = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP)}">
<script src="probe.js"></script></head>
<body><script>document.body.setAttribute("data-" + "ran", "yes");</script></body></html>
"""


def test_pages_load_in_chromium_without_console_messages(site: Site) -> None:
    index = load(site.root / "index.html")
    assert index.console == [], index.console
    found, body = rows(index.dom)
    assert len(found) == len(site.document["tests"])
    # report.js ran: by default everything but the unchanged tests is shown.
    visible = {row.status for row in found if not row.hidden}
    assert "unchanged" not in visible and {"changed", "added", "removed"} <= visible
    assert body["data-shown"] == str(sum(1 for row in found if not row.hidden))
    # The ids came through as text: the browser shows them literally.
    texts = " ".join(row.text for row in found)
    assert "<script>alert(1)</script>" in texts and "<img src=x onerror=alert(2)>" in texts
    for test_id in (SCRIPT_ID, IMG_ID, "tests/test_pricing.py::test_old"):
        page = load(site.root / _page_name(site, test_id))
        assert page.console == [], (test_id, page.console)
        assert test_id in _text_of(page.dom)


def test_filters_and_search_choose_the_visible_tests_in_chromium(site: Site) -> None:
    statuses = site.status_of()
    index = site.root / "index.html"

    def visible(fragment: str) -> set[str]:
        loaded = load(index, fragment)
        assert loaded.console == [], loaded.console
        found, _body = rows(loaded.dom)
        return {row.id for row in found if not row.hidden}

    assert visible("status=added") == {"tests/test_pricing.py::test_new"}
    assert visible("status=unchanged") == {
        test_id for test_id, status in statuses.items() if status == "unchanged"
    }
    assert visible("status=changed,added&q=onerror") == {IMG_ID}
    assert visible("status=changed,added,removed,unchanged&q=NEW") == {
        "tests/test_pricing.py::test_new"
    }
    # Clicks and typing, as a person would: a harness script loaded after report.js on a copy
    # of the index unticks "changed", ticks "unchanged", types a query, and writes down what
    # it sees.
    harness = site.root / "harness.html"
    (site.root / "assets" / "harness.js").write_text(HARNESS_JS, encoding="utf-8")
    text = index.read_text(encoding="utf-8").replace(
        "</head>", '<script src="assets/harness.js" defer></script>\n</head>'
    )
    harness.write_text(text, encoding="utf-8")
    try:
        loaded = load(harness)
    finally:
        harness.unlink()
        (site.root / "assets" / "harness.js").unlink()
    assert loaded.console == [], loaded.console
    _found, body = rows(loaded.dom)
    seen = json.loads(body["data-harness"])
    not_changed = sorted(test_id for test_id, status in statuses.items() if status != "changed")
    assert sorted(seen["after_clicks"]) == not_changed
    assert seen["after_search"] == ["tests/test_pricing.py::test_unrelated"]
    # The view is in the URL, to bookmark or share.
    assert seen["hash"] == "#status=added,removed,unchanged&q=unrelated"


HARNESS_JS = """
(function () {
  function visible() {
    return Array.prototype.slice
      .call(document.querySelectorAll("#tests tbody tr"))
      .filter(function (row) { return !row.hidden; })
      .map(function (row) { return row.querySelector("td.id").textContent; });
  }
  var box = function (status) {
    return document.querySelector('input[data-status="' + status + '"]');
  };
  if (box("changed")) { box("changed").click(); }
  box("unchanged").click();
  var afterClicks = visible();
  var search = document.getElementById("search");
  search.value = "unrelated";
  search.dispatchEvent(new Event("input"));
  document.body.setAttribute("data-harness", JSON.stringify({
    after_clicks: afterClicks,
    after_search: visible(),
    hash: location.hash
  }));
})();
"""


def test_screenshot_of_the_index_is_a_real_picture(site: Site, tmp_path: Path) -> None:
    data = screenshot(site.root / "index.html", tmp_path / "index.png", 1024, 700)
    assert 10_000 < len(data) < 5_000_000
    width, height, lines = png_pixels(data)
    assert (width, height) == (1024, 700)
    step = 3 if len(lines[0]) == width * 3 else 4
    colours: Counter[bytes] = Counter()
    for line in lines:
        for x in range(0, len(line), step):
            colours[line[x : x + 3]] += 1
    background, most = colours.most_common(1)[0]
    assert len(colours) > 50  # text, badges, links: antialiased, in several colours
    assert most < 0.97 * width * height  # not a blank page
    assert background == b"\xff\xff\xff"  # the page's own white, so the CSS was applied


def test_the_same_diff_writes_the_same_bytes(site: Site, repo: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    # In the environment the site was made in (its temp folder too): a diff reuses a run only
    # where it would record the same one (docs/diffing.md, "One environment").
    code, _document = cli_json(repo, repo.parent, "diff", "HEAD~1", "HEAD", "--html", str(again))
    assert code == 1
    assert _files(site.root) == _files(again)


def test_a_run_site_shows_only_unverified_tests_when_asked_in_chromium(tmp_path: Path) -> None:
    run = Run(
        id="r1", commit=None, dirty=None, python="CPython 3.12", platform="linux",
        started_at="2026-01-01T00:00:00Z", config={},
    )  # fmt: skip
    tests = [
        Recorded(id="t.py::ok", outcome="passed", verified=True),
        Recorded(id="t.py::net", outcome="passed", verified=False, unverified_reasons=["x"]),
        Recorded(id="t.py::bad", outcome="failed", verified=True),
        Recorded(id="t.py::both", outcome="failed", verified=False, unverified_reasons=["y"]),
    ]
    index = Path(write_site(run_site(run, tests), str(tmp_path / "run")))

    def visible(fragment: str) -> list[str]:
        loaded = load(index, fragment)
        assert loaded.console == [], loaded.console
        found, _body = rows(loaded.dom)
        return sorted(row.id for row in found if not row.hidden)

    assert visible("") == ["t.py::bad", "t.py::both", "t.py::net", "t.py::ok"]
    assert visible("only=unverified") == ["t.py::both", "t.py::net"]
    assert visible("status=failed&only=unverified") == ["t.py::both"]
    assert visible("status=passed") == ["t.py::net", "t.py::ok"]


def test_sides_given_as_genome_files_show_their_call_trees(
    site: Site, repo: Path, tmp_path: Path
) -> None:
    files = []
    for side in ("base", "head"):
        path = tmp_path / f"{side}.json"
        done = cli(repo, "export", site.document[side]["run"], "-o", str(path))
        assert done.returncode == 0, done.stderr
        files.append(str(path))
    out = tmp_path / "from-files"
    # Another store, without these runs: the trees can only come from the files.
    elsewhere = str(tmp_path / "other-store")
    code, document = cli_json(
        repo, tmp_path, "diff", *files, "--no-confirm", "--store", elsewhere, "--html", str(out)
    )
    assert code == 1
    assert {t["id"]: t["status"] for t in document["tests"]} == site.status_of()
    page = (out / page_name(SCRIPT_ID)).read_text(encoding="utf-8")
    assert "recording not available" not in page
    assert re.search(
        r'<span class="node moved" data-key="[0-9a-f]+"><code>py:shop.pricing._total</code>', page
    )


def test_show_writes_a_run_site_with_outcome_filters(repo: Path, tmp_path: Path) -> None:
    done = run_pytest(repo, "--genome")
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "run-site"
    shown = cli(repo, "show", "latest", "--html", str(out))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == ""
    assert shown.stderr == f"diffgenome: HTML report written to {out / 'index.html'}\n"
    # A page for every test of the run (and for what ran while modules were imported).
    recorded = [test["id"] for test in export(repo)["tests"]]
    assert len(recorded) == 8 and IMPORT_TEST_ID in recorded
    pages = {str(p.relative_to(out)) for p in (out / "t").iterdir()}
    assert pages == {page_name(test_id) for test_id in recorded}
    loaded = load(out / "index.html", "status=skipped")
    assert loaded.console == [], loaded.console
    found, _body = rows(loaded.dom)
    assert [row.status for row in found if not row.hidden] == ["skipped"]
    assert Counter(row.status for row in found) == {"passed": 7, "skipped": 1}
    page = load(out / _name_for(out, "tests/test_pricing.py::test_code"))
    assert page.console == []
    assert "py:shop.pricing.discount" in page.dom and "code == 'SAVE10'" in _text_of(page.dom)
    # One test only: its page and an index with one row.
    one = tmp_path / "one"
    assert cli(repo, "show", "latest", "test_plain", "--html", str(one)).returncode == 0
    assert len(list((one / "t").iterdir())) == 1


def test_html_dir_that_is_a_file_is_one_line_and_exit_2_before_recording(
    repo: Path, tmp_path: Path
) -> None:
    target = tmp_path / "a-file"
    target.write_text("not a folder")
    done = cli(repo, "diff", "HEAD~1", "HEAD", "--rerecord", "--html", str(target))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "is not a folder" in done.stderr, done.stderr
    assert target.read_text() == "not a folder"
    shown = cli(repo, "show", "latest", "--html", str(target))
    assert shown.returncode == 2 and shown.stderr.count("\n") == 1, shown.stderr


def test_a_missing_browser_skips_on_a_workstation_and_fails_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_needs_browser=f"""
        import sys

        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from e2e.browser import chromium


        def test_it():
            chromium()
        """
    )
    monkeypatch.setenv("PATH", str(pytester.path))  # no browser there
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setenv("CI", "false")
    here = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    here.assert_outcomes(skipped=1)
    here.stdout.fnmatch_lines(["*no Chromium on PATH (install Debian's package*"])
    monkeypatch.setenv("CI", "true")
    ci = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    ci.assert_outcomes(failed=1)
    ci.stdout.fnmatch_lines(["*no Chromium on PATH*CI must run the browser tests*"])


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _unescape(text: str) -> str:
    return html.unescape(text)


def _page_name(site: Site, test_id: str) -> str:
    return _name_for(site.root, test_id)


def _name_for(root: Path, test_id: str) -> str:
    name = page_name(test_id)
    assert (root / name).is_file(), test_id
    return name


def _page_of(site: Site, test_id: str) -> str:
    return (site.root / _page_name(site, test_id)).read_text(encoding="utf-8")


def _text_of(dom: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", dom))
