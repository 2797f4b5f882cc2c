"""End-to-end: the recorder in its environment -- tool ids taken by others, coverage.py in the
same process, project layouts and configured roots, the node bound, and recording switched off.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    ALL_PLUGINS,
    diffgenome_notices,
    make_project,
    one_node,
    parent_symbol,
    record,
    record_full,
    run_pytest,
    symbol_table,
    symbols_of,
    test_genome,
)

PKG = {
    "pkg/__init__.py": "",
    "pkg/mod.py": """
        def f(n):
            if n > 0:
                return g(n - 1)
            return 0


        def g(n):
            return n * 2
    """,
}


# -- tool ids --------------------------------------------------------------------------------


def test_all_tool_ids_taken_runs_tests_unverified_with_one_notice(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        {
            **PKG,
            # Root conftest.py is imported before the plugin's (trylast) pytest_configure.
            "conftest.py": """
                import sys

                for tool_id in (2, 3, 4):
                    sys.monitoring.use_tool_id(tool_id, f"squatter{tool_id}")
            """,
            "tests/test_a.py": """
                from pkg.mod import f


                def test_one():
                    assert f(2) == 2


                def test_two():
                    assert f(0) == 0
            """,
        },
    )
    recording = record_full(project)
    assert "2 passed" in recording.proc.stdout
    notices = diffgenome_notices(recording.output)
    assert len(notices) == 1, recording.output
    assert "tool id" in notices[0]
    assert "Warning" not in recording.output
    tests = recording.doc["tests"]
    assert {t["id"] for t in tests} >= {"tests/test_a.py::test_one", "tests/test_a.py::test_two"}
    for test in tests:
        assert test["verified"] is False
        assert any(r.startswith("tool-id-unavailable") for r in test["unverified_reasons"])
        assert all(not phase["nodes"] for phase in test["phases"].values())
    [reason] = {r for r in tests[0]["unverified_reasons"] if r.startswith("tool-id-unavailable")}
    assert "squatter4" in reason and "squatter2" in reason


# -- coverage.py in the same process ---------------------------------------------------------


@pytest.mark.parametrize(
    ("core", "branch"),
    [(None, True), ("sysmon", False), ("sysmon", True)],
    ids=["default-core", "sysmon", "sysmon-branch"],
)
@ALL_PLUGINS
def test_coverage_and_genome_both_record(tmp_path: Path, core: str | None, branch: bool) -> None:
    # coverage's sys.monitoring core measures branches only from 3.14 on; before that it falls
    # back to its tracer, which then does not hold tool id 1.
    expect_sysmon = core == "sysmon" and (not branch or sys.version_info >= (3, 14))
    project = make_project(
        tmp_path,
        {
            **PKG,
            "tests/test_cov.py": f"""
                import sys

                from pkg.mod import f


                def test_f():
                    assert f(3) == 4
                    assert f(0) == 0
                    tools = [sys.monitoring.get_tool(i) for i in range(6)]
                    assert "diffgenome" in tools
                    if {expect_sysmon!r}:
                        assert tools[1] == "coverage.py"
            """,
        },
    )
    args = ["--cov=pkg", "--cov-report=json:cov.json"] + (["--cov-branch"] if branch else [])
    env = {"COVERAGE_CORE": core} if core else None
    doc = record(project, *args, env=env)

    coverage = json.loads((project / "cov.json").read_text())
    mod = coverage["files"]["pkg/mod.py"]
    assert set(mod["executed_lines"]) >= {2, 3, 4, 8}
    assert mod["missing_lines"] == []
    if branch:
        assert coverage["meta"]["branch_coverage"] is True
        assert mod["summary"]["covered_branches"] == mod["summary"]["num_branches"] == 2

    test = test_genome(doc, "::test_f")
    assert test["verified"] is True, test["unverified_reasons"]
    phase = test["phases"]["call"]
    f = one_node(phase, "py:pkg.mod.f")
    assert f["count"] == 2
    assert one_node(phase, "py:pkg.mod.g")["count"] == 1
    assert phase["branches"][0]["site"].startswith("py:pkg.mod.f/if[")
    assert phase["branches"][0]["outcomes"] == {"true": 1, "false": 1}


# -- layouts and roots -----------------------------------------------------------------------


def test_src_layout_names_modules_from_the_source_root(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        {
            "pyproject.toml": """
                [tool.pytest.ini_options]
                pythonpath = ["src"]
            """,
            "src/pkg/__init__.py": "",
            "src/pkg/mod.py": PKG["pkg/mod.py"],
            "tests/test_src.py": """
                from pkg.mod import f


                def test_f():
                    assert f(1) == 0
            """,
        },
    )
    doc = record(project)
    assert doc["run"]["config"]["source_roots"] == ["src/"]
    assert doc["run"]["config"]["test_roots"] == ["tests/"]
    symbols = symbol_table(doc)
    f = symbols["py:pkg.mod.f"]
    assert (f["origin"], f["path"]) == ("repo", "src/pkg/mod.py")
    assert symbols["py:tests.test_src.test_f"]["origin"] == "test"
    phase = test_genome(doc, "tests/test_src.py::test_f")["phases"]["call"]
    assert parent_symbol(phase, one_node(phase, "py:pkg.mod.g")) == "py:pkg.mod.f"


def test_testpaths_from_the_ini_are_test_roots(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        {
            **PKG,
            "pyproject.toml": """
                [tool.pytest.ini_options]
                testpaths = ["checks"]
            """,
            "checks/support.py": """
                from pkg.mod import f


                def helper():
                    return f(1)
            """,
            "checks/test_checks.py": """
                from support import helper


                def test_helper():
                    assert helper() == 0
            """,
        },
    )
    doc = record(project)
    assert doc["run"]["config"]["test_roots"] == ["checks/"]
    symbols = symbol_table(doc)
    # Not named like a test module, yet test code: it lies under a testpath.
    support = symbols["py:checks.support.helper"]
    assert (support["origin"], support["path"]) == ("test", "checks/support.py")
    assert symbols["py:pkg.mod.f"]["origin"] == "repo"
    phase = test_genome(doc, "checks/test_checks.py::test_helper")["phases"]["call"]
    assert parent_symbol(phase, one_node(phase, "py:pkg.mod.f")) == "py:checks.support.helper"


ROOTS_FILES = {
    "app/core.py": """
        from util import double


        def run(n):
            return double(n)
    """,
    "lib/util.py": """
        def double(n):
            return n * 2
    """,
    "qa/helper.py": """
        from core import run


        def check():
            return run(2)
    """,
    "tests/test_roots.py": """
        from helper import check


        def test_check():
            assert check() == 4
    """,
}
ROOTS_INI = """
    [tool.pytest.ini_options]
    pythonpath = ["app", "lib", "qa"]
"""


def _origins(doc: dict[str, Any]) -> dict[str, str]:
    return {s["id"]: s["origin"] for s in doc["symbols"] if s["kind"] == "function"}


def test_default_roots_take_the_whole_flat_tree(tmp_path: Path) -> None:
    project = make_project(tmp_path, {**ROOTS_FILES, "pyproject.toml": ROOTS_INI})
    doc = record(project)
    assert _origins(doc) == {
        "py:app.core.run": "repo",
        "py:lib.util.double": "repo",
        "py:qa.helper.check": "repo",
        "py:tests.test_roots.test_check": "test",
    }


def test_command_line_roots_change_origins(tmp_path: Path) -> None:
    project = make_project(tmp_path, {**ROOTS_FILES, "pyproject.toml": ROOTS_INI})
    doc = record(project, "--genome-source-root=app", "--genome-test-root=qa")
    config = doc["run"]["config"]
    assert (config["source_roots"], config["test_roots"]) == (["app/"], ["qa/"])
    # lib/ is no longer project code; qa/ is test code; app/ modules are named from app/.
    assert _origins(doc) == {
        "py:core.run": "repo",
        "py:qa.helper.check": "test",
        "py:tests.test_roots.test_check": "test",  # named like a test module
    }
    phase = test_genome(doc, "::test_check")["phases"]["call"]
    run = one_node(phase, "py:core.run")
    assert run["exits"] == {"returned": 1}
    assert [n for n in phase["nodes"] if n["parent"] == run["id"]] == []


def test_ini_source_roots_add_to_the_command_line(tmp_path: Path) -> None:
    ini = ROOTS_INI + '    genome_source_roots = ["lib"]\n'
    project = make_project(tmp_path, {**ROOTS_FILES, "pyproject.toml": ini})
    doc = record(project, "--genome-source-root=app")
    assert doc["run"]["config"]["source_roots"] == ["app/", "lib/"]
    origins = _origins(doc)
    assert origins["py:util.double"] == "repo"
    assert origins["py:core.run"] == "repo"
    assert "py:qa.helper.check" not in origins  # neither a source nor a test root now
    phase = test_genome(doc, "::test_check")["phases"]["call"]
    assert parent_symbol(phase, one_node(phase, "py:util.double")) == "py:core.run"


# -- bounds ----------------------------------------------------------------------------------


def test_node_bound_truncates_and_discloses(tmp_path: Path) -> None:
    wide = "\n\n".join(f"def f{i}():\n    return {i}" for i in range(60))
    project = make_project(
        tmp_path,
        {
            "pyproject.toml": """
                [tool.pytest.ini_options]
                genome_max_nodes = "40"
            """,
            "wide.py": wide + "\n",
            "tests/test_wide.py": """
                import wide


                def test_wide():
                    assert sum(getattr(wide, f"f{i}")() for i in range(60)) == 1770


                def test_narrow():
                    assert wide.f1() + wide.f2() == 3
            """,
        },
    )
    doc = record(project)
    assert doc["run"]["config"]["bounds"]["max_nodes_per_phase"] == 40
    wide_test = test_genome(doc, "::test_wide")
    assert wide_test["outcome"] == "passed"
    assert wide_test["verified"] is False
    assert "call:truncated:nodes" in wide_test["unverified_reasons"]
    assert len(wide_test["phases"]["call"]["nodes"]) <= 40
    narrow = test_genome(doc, "::test_narrow")
    assert narrow["verified"] is True
    assert symbols_of(narrow["phases"]["call"]) == {
        "py:tests.test_wide.test_narrow",
        "py:wide.f1",
        "py:wide.f2",
    }


def test_node_bound_must_be_a_positive_integer(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        {
            "pyproject.toml": '[tool.pytest.ini_options]\ngenome_max_nodes = "lots"\n',
            "tests/test_x.py": "def test_x():\n    pass\n",
        },
    )
    proc = run_pytest(project, "--genome")
    assert proc.returncode == 4
    assert "genome_max_nodes" in proc.stderr


# -- switched off ----------------------------------------------------------------------------


def test_without_genome_nothing_is_recorded(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        {
            **PKG,
            "tests/test_off.py": """
                import sys


                def test_off():
                    from pkg.mod import f

                    assert f(1) == 0
                    assert "diffgenome" not in [sys.monitoring.get_tool(i) for i in range(6)]
                    assert "diffgenome.recording.session" not in sys.modules
                    assert "diffgenome.recording.collect.tracer" not in sys.modules
            """,
        },
    )
    proc = run_pytest(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert not (project / ".diffgenome").exists()
    assert diffgenome_notices(proc.stdout + proc.stderr) == []
