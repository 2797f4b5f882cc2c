"""End-to-end: a pull request that adds tests, as a reviewer reads its report (#23.C).

A new test module makes ``<import>`` differ (pytest imports one more module, and the
project's collection hook runs once more) and fails the default gate, as documented: an added
test is a change ``--fail-on changed`` counts. The first line says so plainly when that is all
there is, and ``<import>``, a record rather than a test, is read after the tests of its tier.
Before this the first line gave the statuses only, and ``<import>`` led the tests to review.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.helpers import DIFF_PYTEST_ARGS, cli, cli_json, git_in, make_project

FILES = {
    "calc/__init__.py": "",
    "calc/ops.py": """
        def add(a, b):
            return a + b


        def clamp(value, low, high):
            return max(low, min(value, low))
    """,
    "calc/files.py": """
        import os


        def modules_in(folder):
            return sorted(name for name in os.listdir(folder) if name.endswith(".py"))
    """,
    "tests/test_tree.py": """
        import os

        from calc.files import modules_in

        CODE = os.path.join(os.path.dirname(__file__), "..", "calc")


        def test_ops_is_a_module():
            assert "ops.py" in modules_in(CODE)


        def test_files_is_a_module():
            assert "files.py" in modules_in(CODE)
    """,
    "tests/conftest.py": """
        def pytest_ignore_collect(collection_path, config):
            return None
    """,
    "tests/test_ops.py": """
        from calc.ops import add, clamp


        def test_add():
            assert add(2, 3) == 5


        def test_clamp():
            assert clamp(5, 0, 10) <= 10
    """,
}
NEW_TESTS = """from calc.ops import add


def test_add_negative():
    assert add(-2, -3) == -5
"""
GATE = "the gate fails only because 1 test was added"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``main``; ``tests-only`` adds a test module; ``fix-and-test`` fixes ``clamp`` (its
    upper bound), adds the same test module and a module nothing imports yet."""
    project = make_project(tmp_path_factory.mktemp("added"), FILES)
    git_in(project, "branch", "-M", "main")
    git_in(project, "checkout", "-q", "-b", "tests-only")
    (project / "tests" / "test_more.py").write_text(NEW_TESTS)
    git_in(project, "add", "-A")
    git_in(project, "commit", "-qm", "a test of negative numbers")
    git_in(project, "checkout", "-q", "-b", "fix-and-test", "main")
    ops = project / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace("min(value, low)", "min(value, high)"))
    (project / "tests" / "test_more.py").write_text(NEW_TESTS)
    (project / "calc" / "units.py").write_text("UNIT = 1\n")  # imported by nothing yet
    git_in(project, "add", "-A")
    git_in(project, "commit", "-qm", "clamp: the upper bound is high")
    git_in(project, "checkout", "-q", "main")
    return project


def test_the_first_line_says_the_gate_fails_only_on_the_added_test(
    repo: Path, tmp_path: Path
) -> None:
    comment = tmp_path / "comment.md"
    done = cli(
        repo, "diff", "main", "tests-only", "--markdown", str(comment), "--", *DIFF_PYTEST_ARGS
    )
    assert done.returncode == 1, done.stderr  # the documented rule stays
    first = done.stdout.splitlines()[0]
    assert "1 added" in first, first
    assert GATE in first, first
    assert "--fail-on changed counts an added test; no existing test's behaviour changed" in first
    summary = next(line for line in comment.read_text().splitlines() if line.startswith("**"))
    assert GATE in summary, summary
    # With the gate off, or when behaviour changed too, nothing of the kind is said.
    quiet = cli(repo, "diff", "main", "tests-only", "--fail-on", "never", "--", *DIFF_PYTEST_ARGS)
    assert quiet.returncode == 0 and "the gate fails" not in quiet.stdout
    both = cli(repo, "diff", "main", "fix-and-test", "--", *DIFF_PYTEST_ARGS)
    assert both.returncode == 1 and "the gate fails" not in both.stdout, both.stdout


def test_import_is_read_after_the_tests_of_its_tier(repo: Path) -> None:
    done = cli(repo, "diff", "main", "fix-and-test", "--", *DIFF_PYTEST_ARGS)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("to review ("))
    blocks = [
        line.split()[0]
        for line in lines[start + 1 :]
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert blocks[0] == "tests/test_ops.py::test_clamp", lines[start:]
    assert "<import>" in blocks, lines[start:]
    assert blocks.index("<import>") > blocks.index("tests/test_ops.py::test_clamp")


def test_the_code_change_leads_the_causes_before_what_no_code_change_reaches(
    repo: Path, tmp_path: Path
) -> None:
    """Two tests list the package's folder, which the pull request's new module joins (no
    code imports it): their results changed with no changed code in reach, and they are
    more than the fix's one test.
    The fix's code change comes first all the same; theirs is "no changed code on its call path"."""
    code, document = cli_json(repo, tmp_path, "diff", "main", "fix-and-test")
    assert code == 1
    groups = document["cause_groups"]
    assert groups[0]["symbol"] == "py:calc.ops.clamp", groups
    [none] = [group for group in groups if group["reach"] == "none"]
    listing = {
        "tests/test_tree.py::test_files_is_a_module",
        "tests/test_tree.py::test_ops_is_a_module",
    }
    # With them, <import>: test_more.py, collected first, now imports calc before test_ops.py.
    assert listing <= set(none["examples"]) and none["tests"] >= len(listing), none
    assert groups.index(none) > 0


def test_new_test_modules_that_only_import_shows_are_one_line_of_the_causes(
    tmp_path: Path,
) -> None:
    """Two new test modules, collected after the others (no import order moves) in a
    project without collection hooks, beside an extracted helper: ``<import>`` is
    restructured, one cause per new module and class. On the first screen and in the
    comment they are one line after the code changes' causes, each named (a pull request
    with tests was one heading per module, test code in the lead); ``--all`` lists them one
    by one."""
    files = {name: text for name, text in FILES.items() if name != "tests/conftest.py"}
    files["tests/test_bounds.py"] = """
        from calc.ops import clamp


        def test_clamp_low():
            assert clamp(-5, 0, 10) == 0
    """
    project = make_project(tmp_path, files)
    git_in(project, "branch", "-M", "main")
    git_in(project, "checkout", "-q", "-b", "more-tests")
    (project / "tests" / "test_zz_more.py").write_text(NEW_TESTS)
    (project / "tests" / "test_zz_class.py").write_text(
        "from calc.ops import add\n\n\nclass TestAdd:\n    def test_zero(self):\n"
        "        assert add(0, 0) == 0\n"
    )
    ops = project / "calc" / "ops.py"  # and a pure refactor: a helper extracted
    ops.write_text(
        ops.read_text().replace(
            "return max(low, min(value, low))",
            "return max(low, _bounded(value, low))\n\n\ndef _bounded(value, low):\n"
            "    return min(value, low)",
        )
    )
    git_in(project, "add", "-A")
    git_in(project, "commit", "-qm", "two test modules, and a helper")
    comment = tmp_path / "comment.md"
    args = ("diff", "main", "more-tests", "--markdown", str(comment), "--", *DIFF_PYTEST_ARGS)
    done = cli(project, *args)
    assert "<import> restructured" in done.stdout.splitlines()[0], done.stdout
    folded = [line for line in done.stdout.splitlines() if "only <import> shows" in line]
    assert len(folded) == 1, done.stdout
    for symbol in (
        "py:tests.test_zz_more",
        "py:tests.test_zz_class",
        "py:tests.test_zz_class.TestAdd",
    ):
        assert symbol in folded[0], folded
    assert "structure: new `tests.test_zz_more`" not in done.stdout, done.stdout
    lines = done.stdout.splitlines()
    extraction = next(i for i, line in enumerate(lines) if "py:calc.ops._bounded" in line)
    assert extraction < lines.index(folded[0]), lines
    text = comment.read_text()
    assert "new code that only &lt;import&gt; shows, no test's behaviour (3)" in text, text
    assert "**5 tests" not in text or "&lt;import&gt; restructured**" in text, text
    everything = cli(project, *args[:3], "--all", "--", *DIFF_PYTEST_ARGS)
    assert "only <import> shows" not in everything.stdout, everything.stdout
    assert "structure: new `tests.test_zz_more`" in everything.stdout, everything.stdout
