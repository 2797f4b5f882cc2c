"""End-to-end: other programs are evidence, not gaps (#11.2).

A child process that runs another program than Python (``git``, a shell script) is an
``os_event`` with the program's identity and outcome ``program``; the test stays verified. A
program file inside the recorded tree is known by its path and a digest of its content, so a
changed script is a change. A Python child (``sys.executable``, a script whose shebang names
Python) is recorded into the test (tests/e2e/test_children.py has every kind of child, and
the ones that stay gaps).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from e2e.helpers import (
    GitRepo,
    cli_json,
    make_project,
    os_events,
    record,
    test_genome,
    write_files,
)

FILES = {
    "pkg/__init__.py": "",
    "pkg/run.py": """
        import subprocess
        import sys


        def run(*argv):
            return subprocess.run(list(argv), check=True, capture_output=True).returncode


        def python_child():
            return run(sys.executable, "-c", "pass")
    """,
    "hooks/pre.sh": "#!/bin/sh\nexit 0\n",
    "hooks/tool.py": "#!/usr/bin/env python3\nprint('hi')\n",
    "tests/test_run.py": """
        import os
        import stat

        from pkg.run import python_child, run

        HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


        def executable(name):
            path = os.path.join(HERE, "hooks", name)
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
            return path


        def test_git():
            assert run("git", "--version") == 0


        def test_script_in_the_tree():
            assert run(executable("pre.sh")) == 0


        def test_shell_given_a_script():
            assert run("sh", os.path.join(HERE, "hooks", "pre.sh")) == 0


        def test_python_script():
            assert run(executable("tool.py")) == 0


        def test_python_child():
            assert python_child() == 0
    """,
}


def _spawn(doc: dict[str, Any], test: str) -> tuple[dict[str, Any], dict[str, Any]]:
    genome = test_genome(doc, test)
    [spawn] = os_events(genome["phases"]["call"], "subprocess")
    return genome, spawn


def test_other_programs_are_evidence_and_python_children_are_recorded(tmp_path: Path) -> None:
    project = make_project(tmp_path, FILES)
    # ``#!/usr/bin/env python3`` finds this environment's Python, as in an activated venv.
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    doc = record(project, env={"PATH": path})
    genome, spawn = _spawn(doc, "::test_git")
    assert genome["verified"] is True, genome["unverified_reasons"]
    assert (spawn["target"], spawn["outcome"]) == ("git", "program")
    genome, spawn = _spawn(doc, "::test_script_in_the_tree")
    assert genome["verified"] is True, genome["unverified_reasons"]
    assert spawn["target"].startswith("hooks/pre.sh@") and spawn["outcome"] == "program"
    genome, shell = _spawn(doc, "::test_shell_given_a_script")
    assert genome["verified"] is True
    assert shell["target"] == "sh " + spawn["target"]
    for test, target in (("::test_python_script", "tool.py"), ("::test_python_child", "python")):
        genome, child = _spawn(doc, test)
        assert (child["target"], child["outcome"]) == (target, "recorded-child")
        assert genome["verified"] is True, genome["unverified_reasons"]


def test_a_changed_script_in_the_tree_is_a_change(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, FILES)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"hooks/pre.sh": "#!/bin/sh\necho changed >/dev/null\nexit 0\n"})
    code, document = cli_json(
        repo,
        tmp_path,
        "diff",
        "HEAD",
        "WORKTREE",
        pytest_args=("-p", "no:cacheprovider", "-p", "no:randomly", "-k", "script_in"),
    )
    assert code == 1
    [test] = [t for t in document["tests"] if t["id"].endswith("::test_script_in_the_tree")]
    assert test["status"] == "changed"
    kinds = {c["kind"] for c in test["changes"]}
    assert kinds == {"egress_added", "egress_removed"}, test["changes"]
