"""End-to-end: what a test's code prints, logs, warns, writes and sets is behaviour (#29).

``tests/projects/report`` is a tool whose functions return the same values whatever they
print, log, write, warn or set: before effects were recorded, every change below read as
``touched`` (same behaviour through changed code). Each change is reported as its own kind,
in its own test; a change of none of them reports nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import DIFF_PYTEST_ARGS, cli, cli_json, make_project

CLI = "report/cli.py"


def _edit(repo: Path, old: str, new: str) -> None:
    path = repo / CLI
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


# One edit per effect, each reached by one test only.
EDITS = {
    "test_summary": ('print(f"total: {total}")', 'print(f"total = {total}")', "output_changed"),
    "test_publish": (
        'out.write(f"items: {len(items)}\\n")',
        'out.write(f"n={len(items)}\\n")',
        "file_changed",
    ),
    "test_check": ('"%d items is many"', '"many items: %d"', "log_changed"),
    "test_legacy": ('"legacy() is deprecated"', '"legacy() goes away in 2.0"', "warning_changed"),
    "test_configure": ('"REPORT_MODE"] = "fast"', '"REPORT_MODE"] = "slow"', "environ_changed"),
}


def _by_id(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"].rpartition("::")[2]: t for t in document["tests"]}


def test_each_effect_that_changes_is_its_own_kind_of_change(tmp_path: Path) -> None:
    repo = make_project(tmp_path, {}, base="report")
    for old, new, _ in EDITS.values():
        _edit(repo, old, new)
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    tests = _by_id(document)
    for name, (_, _, kind) in EDITS.items():
        test = tests[name]
        assert test["status"] == "changed", (name, test)
        kinds = [c["kind"] for c in test["changes"]]
        assert kinds == [kind], (name, test["changes"])
        [change] = test["changes"]
        assert change["phase"] == "call"
        assert change["base"] and change["head"], change  # both sides saw it, differently
        assert change["base"] != change["head"]
    assert tests["test_quiet"]["status"] == "unchanged"
    assert code == 1
    # What each change says, as the report shows it.
    [output] = tests["test_summary"]["changes"]
    assert output["base"][0]["stream"] == "stdout"
    [written] = tests["test_publish"]["changes"]
    assert written["head"][0]["path"].endswith("/test_publish0/report.txt"), written
    assert "/tmp/" not in written["head"][0]["path"]  # made location-independent
    [logged] = tests["test_check"]["changes"]
    assert {e["logger"] for e in logged["base"] + logged["head"]} == {"report.cli"}
    [warned] = tests["test_legacy"]["changes"]
    assert [w["origin"] for w in warned["head"]] == ["py:tests.test_cli.test_legacy"]
    assert warned["head"][0]["escaped"] is False  # caught by pytest.warns
    [environ] = tests["test_configure"]["changes"]
    assert [e["name"] for e in environ["head"]] == ["REPORT_MODE"]


def test_a_change_of_no_effect_reports_nothing(tmp_path: Path) -> None:
    """The same tree, then a rewording that prints, logs, writes, warns and sets the same:
    effects add no noise (paths under tmp dirs, pytest's own files, its per-phase variable)."""
    repo = make_project(tmp_path, {}, base="report")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    assert {t["status"] for t in document["tests"]} == {"unchanged"}, document["tests"]
    assert code == 0
    _edit(
        repo,
        "    total = sum(items)\n",
        "    total = 0\n    for item in items:\n        total += item\n",
    )
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    assert {t["status"] for t in document["tests"]} <= {"unchanged", "touched"}, document
    assert [c for t in document["tests"] for c in t["changes"]] == []
    assert code == 0


SUBTESTS = {
    "app.py": """
        def label(n):
            print(f"item {n}")
            return n
        """,
    "tests/test_app.py": """
        import app


        def test_items(subtests):
            for n in (1, 2):
                with subtests.test(n=n):
                    assert app.label(n) == n
        """,
}


def test_what_a_subtest_prints_is_that_subtest_s_output(tmp_path: Path) -> None:
    """A subtest's printed text is in its own report, not in its test's (pytest's
    ``subtests``): before, a change of only that text left the test and both subtests
    ``unchanged`` with nothing said (the subtests had no effects, the test's call no output)."""
    repo = make_project(tmp_path, SUBTESTS)
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    assert {t["status"] for t in document["tests"]} == {"unchanged"}, document["tests"]
    assert code == 0
    app = repo / "app.py"
    app.write_text(app.read_text().replace('f"item {n}"', 'f"item #{n}"'))
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    tests = {t["id"]: t for t in document["tests"]}
    for n in (1, 2):
        sub = tests[f"tests/test_app.py::test_items (n={n})"]
        assert sub["status"] == "changed", sub
        assert [c["kind"] for c in sub["changes"]] == ["output_changed"], sub["changes"]
        [change] = sub["changes"]
        assert change["base"][0]["stream"] == "stdout" and change["base"] != change["head"]
    # The test itself printed nothing outside its subtests.
    assert tests["tests/test_app.py::test_items"]["status"] in ("unchanged", "touched")
    assert code == 1


OWN_CAPTURE = {
    "tool.py": """
        import sys


        def check(value):
            if value < 0:
                print(f"warning: {value} is negative")
                return 0
            return value
        """,
    "tests/test_tool.py": """
        import tool


        def test_negative(capsys):
            assert tool.check(-2) == 0
            captured = capsys.readouterr()
            assert "negative" in captured.out + captured.err


        def test_positive(capsys):
            assert tool.check(3) == 3
            assert capsys.readouterr().out == ""
        """,
}


def test_a_print_the_test_reads_with_capsys_is_its_output(tmp_path: Path) -> None:
    """A print moved to stderr in a test that reads it through ``capsys``: pytest's sections
    never hold that text, so before effects revision 4 the move read ``touched`` at best
    (``output:test-captures``) while the program said its warning somewhere else."""
    repo = make_project(tmp_path, OWN_CAPTURE)
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    assert {t["status"] for t in document["tests"]} == {"unchanged"}, document["tests"]
    assert code == 0
    tool = repo / "tool.py"
    tool.write_text(
        tool.read_text().replace(
            'print(f"warning: {value} is negative")',
            'print(f"warning: {value} is negative", file=sys.stderr)',
        )
    )
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    tests = _by_id(document)
    moved = tests["test_negative"]
    assert moved["status"] == "changed", moved
    assert moved["reach"] == "seen", moved
    [change] = [c for c in moved["changes"] if c["kind"] == "output_changed"]
    assert [e["stream"] for e in change["base"]] == ["stdout"], change
    assert [e["stream"] for e in change["head"]] == ["stderr"], change
    assert tests["test_positive"]["status"] in ("unchanged", "touched"), tests["test_positive"]
    assert code == 1
    # What a reviewer reads first: the moved text, as text, among the causes.
    shown = cli(repo, "diff", "HEAD", "WORKTREE", "--preview", "-q", "--", *DIFF_PYTEST_ARGS)
    first_screen = "\n".join(shown.stdout.splitlines()[:25])
    assert (
        "output: stdout 'warning: -2 is negative\\n' (1 line) → stderr 'warning: -2 is "
        "negative\\n' (1 line)"
    ) in first_screen, shown.stdout
