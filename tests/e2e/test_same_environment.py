"""An identical tree is silent in all four ways a diff can meet one (issue #24): two commits
with fresh sides, with reused sides, ``HEAD`` against ``WORKTREE`` after a comment edit, and a
project that imports a module git ignores.

The example project does what a CLI library's tests do: it passes a copy of ``os.environ`` to
the code under test (so ``PYTHONPATH``, ``TMPDIR`` and every other variable the recording runs
with reach a digested value) and echoes paths under the temp folder. Before both sides ran in
one environment, such tests were ``changed`` on an identical tree (17 of a CLI library's).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    ALL_PLUGINS,
    DIFF_PYTEST_ARGS,
    PY,
    GitRepo,
    clean_env,
    make_project,
    run_pytest,
    write_files,
)

# The user's own pytest --genome, as they run it: every plugin, hypothesis' seed too.
pytestmark = ALL_PLUGINS

ENVCLI = {
    "src/envcli/__init__.py": "",
    "src/envcli/core.py": '''
        import os
        import tempfile


        def make_env(overrides):
            """The environment a command would run with: the caller's, overridden."""
            env = {"LANG": "C"}
            env.update(overrides)
            return sorted(env.items())


        def scratch(name):
            # a file in the temp folder, as a prompt's default would name it
            return os.path.join(tempfile.gettempdir(), name)


        def prompt(default):
            return f"Path [{default}]: "
    ''',
    "tests/test_core.py": """
        import os

        from envcli import core


        def test_env_of_the_caller():
            assert core.make_env(dict(os.environ))


        def test_scratch_file():
            assert core.prompt(core.scratch("out.txt")).endswith(": ")


        def test_prompt_under_tmp_path(tmp_path):
            assert core.prompt(str(tmp_path / "f.txt")).startswith("Path")
    """,
    ".gitignore": "__pycache__/\n.diffgenome/\n",
}


#: What a diff adds to the selection so that both sides draw the same random numbers.
SAME_DRAWS = ("--hypothesis-seed=0", "--genome-random-seed=0")


def diff(repo: Path, tmp: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """``diffgenome diff ARGS --json -`` as a user runs it (the temp folder under ``tmp``,
    the same in every invocation of a test, as a user's is)."""
    command = [PY, "-m", "diffgenome.analysis.cli", "diff", *args, "--json", "-"]
    done = subprocess.run(
        [*command, "--", *DIFF_PYTEST_ARGS],
        cwd=repo,
        # run from the checkout, as a shell does it (PWD names the checkout)
        env=clean_env({"TMPDIR": str(tmp), "PWD": str(repo)}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def _users_pytest_run(repo: Path, tmp_path: Path, *output: str) -> None:
    """The user's own ``pytest --genome`` in their checkout: their temp folder, the tree's
    code on the path, the selection and seeds a diff records with (the recording key reads
    them), and output-only options such as ``-q`` that are not the selection."""
    user_tmp = tmp_path / "user-tmp"
    user_tmp.mkdir()
    done = subprocess.run(
        [PY, "-m", "pytest", "--genome", *output, *DIFF_PYTEST_ARGS, *SAME_DRAWS],
        cwd=repo,
        env=clean_env(
            {"PYTHONHASHSEED": "0", "PYTHONPATH": "src", "TMPDIR": str(user_tmp), "PWD": str(repo)}
        ),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def changed(document: dict[str, Any]) -> list[str]:
    return [test["id"] for test in document["tests"] if test["status"] != "unchanged"]


def _project(tmp_path: Path) -> tuple[Path, GitRepo, Path]:
    repo = make_project(tmp_path, ENVCLI)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return repo, GitRepo(repo), tmp


def test_two_commits_with_identical_trees_recorded_fresh(tmp_path: Path) -> None:
    repo, git, tmp = _project(tmp_path)
    git.commit_empty("docs only")
    code, document, err = diff(repo, tmp, "HEAD~1", "HEAD", "--rerecord")
    assert changed(document) == [], err
    assert document["summary"]["changed"] == 0 and code == 0


def test_two_commits_with_identical_trees_reused_from_earlier_invocations(
    tmp_path: Path,
) -> None:
    """Each side recorded by another invocation (the first diff's head is the second's base;
    the third diff reuses both): what they carry is what a fresh recording would."""
    repo, git, tmp = _project(tmp_path)
    git.commit_empty("one")
    first = diff(repo, tmp, "HEAD~1", "HEAD")
    assert first[0] == 0 and changed(first[1]) == [], first[2]
    git.commit_empty("two")
    code, document, err = diff(repo, tmp, "HEAD~1", "HEAD")
    assert "reusing run" in err  # HEAD~1 was the first diff's head
    assert changed(document) == [], err
    assert code == 0
    code, document, err = diff(repo, tmp, "HEAD~2", "HEAD")
    assert err.count("reusing run") == 2, err
    assert changed(document) == [] and code == 0, err


def test_head_against_worktree_after_a_comment_edit(tmp_path: Path) -> None:
    repo, _git, tmp = _project(tmp_path)
    core = repo / "src" / "envcli" / "core.py"
    core.write_text(core.read_text().replace("# a file in", "#  a file  in"))
    code, document, err = diff(repo, tmp, "HEAD", "WORKTREE")
    assert changed(document) == [], err
    assert document["summary"]["changed"] == 0 and code == 0
    # The user's checkout is as it was: the edit is still uncommitted, nothing was added.
    status = GitRepo(repo).git("status", "--porcelain", "--untracked-files=all")
    assert status == " M src/envcli/core.py\n"


def test_an_ignored_generated_module_the_code_imports(tmp_path: Path) -> None:
    """``src/envcli/version.py`` is written at install and ignored by git: it exists in the
    user's checkout only, and both sides record over it."""
    repo, git, tmp = _project(tmp_path)
    write_files(
        repo,
        {
            ".gitignore": "__pycache__/\n.diffgenome/\nsrc/envcli/version.py\n",
            "src/envcli/__init__.py": "from envcli.version import VERSION\n",
            "tests/test_version.py": """
                import envcli


                def test_version():
                    assert envcli.VERSION == "1.0"
            """,
        },
    )
    git.commit_all("version from the install")
    write_files(repo, {"src/envcli/version.py": 'VERSION = "1.0"\n'})
    assert run_pytest(repo, "-q", env={"PYTHONPATH": "src"}).returncode == 0  # as the user runs it
    git.commit_empty("docs only")
    code, document, err = diff(repo, tmp, "HEAD~1", "HEAD")
    assert changed(document) == [], err
    assert code == 0
    core = repo / "src" / "envcli" / "core.py"
    core.write_text(core.read_text().replace("# a file in", "#  a file  in"))
    done = subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD", "WORKTREE", "--", *DIFF_PYTEST_ARGS],
        cwd=repo,
        env=clean_env({"TMPDIR": str(tmp), "PWD": str(repo), "COLUMNS": "300"}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Said: what was copied from the checkout into both sides.
    assert (
        "note: 1 file git ignores was copied from the checkout into every side recorded "
        "here, as the project may import it: src/envcli/version.py"
    ) in done.stdout


def test_a_base_that_does_not_ignore_the_copied_file_is_still_reused(tmp_path: Path) -> None:
    """The checkout ignores a generated file that the base's ``.gitignore`` does not (a
    project that adopted a generated version file after the base): the copy the diff puts in
    the base's worktree is no change of that tree, so the base's run is not dirty and the
    next diff reuses it, as it reuses the head's."""
    repo, git, tmp = _project(tmp_path)
    write_files(
        repo,
        {
            "src/envcli/__init__.py": "",
            "tests/test_version.py": """
                def test_version():
                    pass
            """,
        },
    )
    git.commit_all("before the generated version file")
    write_files(
        repo,
        {
            ".gitignore": "__pycache__/\n.diffgenome/\nsrc/envcli/version.py\n",
            "src/envcli/__init__.py": "from envcli.version import VERSION\n",
        },
    )
    git.commit_all("a version file written at install, ignored")
    write_files(repo, {"src/envcli/version.py": 'VERSION = "1.0"\n'})
    code, _, err = diff(repo, tmp, "HEAD~1", "HEAD")
    assert code in (0, 1) and "reusing run" not in err, err
    _, _, err = diff(repo, tmp, "HEAD~1", "HEAD")
    assert err.count("reusing run") == 2, err
    listed = subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", "runs", "--json", "-"],
        cwd=repo,
        env=clean_env({"PWD": str(repo)}),
        capture_output=True,
        text=True,
        check=True,
    )
    assert {run["dirty"] for run in json.loads(listed.stdout)} == {False}


def test_worktree_copy_has_the_untracked_folders_and_not_the_deleted_files(
    tmp_path: Path,
) -> None:
    """WORKTREE is recorded from a copy: a new untracked package the edited code imports is
    in it, a tracked file the user deleted is not, and an untracked virtual environment is
    left out of it; the user's checkout keeps all three."""
    repo, git, tmp = _project(tmp_path)
    write_files(repo, {"tests/test_gone.py": "def test_gone():\n    pass\n"})
    git.commit_all("a test to delete")
    (repo / "tests" / "test_gone.py").unlink()
    write_files(
        repo,
        {
            "src/envcli/extra/__init__.py": "def suffix():\n    return ':'\n",
            "venv/pyvenv.cfg": "home = /usr/bin\n",
            "venv/lib/site.py": "raise SystemExit('never imported')\n",
        },
    )
    core = repo / "src" / "envcli" / "core.py"
    core.write_text(
        core.read_text().replace(
            'return f"Path [{default}]: "',
            'from envcli.extra import suffix\n\n    return f"Path [{default}]{suffix()} "',
        )
    )
    code, document, err = diff(repo, tmp, "HEAD", "WORKTREE")
    assert code == 1, err
    tests = {test["id"]: test for test in document["tests"]}
    assert tests["tests/test_gone.py::test_gone"]["status"] == "removed"
    # The new package was imported (in head only): a new call, the same result.
    prompt = tests["tests/test_core.py::test_prompt_under_tmp_path"]
    assert prompt["outcome"] == {"base": "passed", "head": "passed"}
    assert prompt["status"] == "restructured", prompt
    assert (repo / "venv" / "lib" / "site.py").exists()
    assert not (repo / "tests" / "test_gone.py").exists()


#: Edits of ``make_env``, which the environment-carrying test runs: the overrides merged in
#: the literal (other code, the same behaviour; a renamed local is no code change at all), and
#: a default added (another result); a local renamed (no code change: the environments are
#: still named as the cause).
EDITS = {
    "refactor": (
        ('env = {"LANG": "C"}\n    env.update(overrides)', 'env = {"LANG": "C", **overrides}'),
    ),
    "behaviour": (('{"LANG": "C"}', '{"LANG": "C", "ENVCLI_COLOR": "never"}'),),
    "rename": (
        ("env = {", "environment = {"),
        ("env.update(", "environment.update("),
        ("sorted(env.items())", "sorted(environment.items())"),
    ),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_pytest_run_reused_beside_a_fresh_side(tmp_path: Path, edit: str) -> None:
    """The base is the user's own ``pytest --genome`` run (their environment, their temp
    folder); the head is recorded by the diff. The first comparison differs by the
    environment's values wherever a test copies it; confirmation records both sides again
    in one environment, at one path, and what it does not reproduce is not a change (a
    refactor was ``changed`` before: #24, a reused run carries its own run's paths), while a
    changed result is reproduced and stays ``changed``."""
    repo, git, tmp = _project(tmp_path)
    _users_pytest_run(repo, tmp_path)
    core = repo / "src" / "envcli" / "core.py"
    text = core.read_text()
    for old, new in EDITS[edit]:
        assert old in text
        text = text.replace(old, new)
    core.write_text(text)
    git.commit_all(edit)
    code, document, err = diff(repo, tmp, "HEAD~1", "HEAD")
    assert "reusing run" in err, err  # the base is the user's run
    statuses = {test["id"]: test["status"] for test in document["tests"]}
    carrying = "tests/test_core.py::test_env_of_the_caller"
    if edit in ("refactor", "rename"):
        assert document["summary"]["changed"] == 0 and code == 0, err
        # its environment's values differed, and confirmation in one environment did not
        # reproduce them: unstable, with the reason, never unchanged
        assert statuses[carrying] == "unstable", statuses
        reasons = next(t["reasons"] for t in document["tests"] if t["id"] == carrying)
        assert any("recorded again in one environment" in reason for reason in reasons), reasons
    else:
        assert statuses[carrying] == "changed" and code == 1, (statuses, err)


#: What a user's checkout holds and a fresh one does not, and what tests read of their run:
#: a test that reads the command line (a profile echoing ``sys.argv``), a collection hook
#: that runs once per folder entry (the user's ignored ``tests/scratch/`` is one more), and a
#: test that passes only beside a file git ignores (boltons' ``test_iter_find_files`` walks
#: its checkout).
CHECKOUT_READERS = {
    "src/envcli/profile.py": """
        def describe(argv):
            return " ".join(argv)
    """,
    "tests/conftest.py": """
        def pytest_ignore_collect(collection_path, config):
            return None
    """,
    "tests/test_profile.py": """
        import sys
        from pathlib import Path

        from envcli import profile


        def test_command_line():
            assert profile.describe(sys.argv)


        def test_beside_the_scratch_notes():
            assert (Path(__file__).parent / "scratch" / "notes.txt").exists()
    """,
    ".gitignore": "__pycache__/\n.diffgenome/\ntests/scratch/\n",
}


def test_a_pytest_run_of_a_lived_in_checkout_is_confirmed_in_one_environment(
    tmp_path: Path,
) -> None:
    """The user's ``pytest --genome`` ran in their checkout: a longer command line, an
    ignored folder more, a file the fresh checkout lacks (a test passes there only). Beside
    it the diff records head fresh, after a pure refactor. Confirmation in one place gives
    both sides the same command line (its list file is named by what it lists), collects
    what the first recordings collected (so ``<import>`` is confirmed too), and a test that
    fails in the diff's environment on both sides is unstable, not a test that now fails:
    before, exit 3 (``1 test now fails``), ``<import>`` and the command line ``changed``."""
    repo = make_project(tmp_path, {**ENVCLI, **CHECKOUT_READERS})
    git, tmp = GitRepo(repo), tmp_path / "tmp"
    tmp.mkdir()
    scratch = repo / "tests" / "scratch"
    scratch.mkdir()
    (scratch / "notes.txt").write_text("the user's own notes, ignored by git\n")
    _users_pytest_run(repo, tmp_path, "-q")
    core = repo / "src" / "envcli" / "core.py"
    text = core.read_text()
    for old, new in EDITS["refactor"]:
        text = text.replace(old, new)
    core.write_text(text)
    git.commit_all("refactor")
    code, document, err = diff(repo, tmp, "HEAD~1", "HEAD")
    assert "reusing run" in err, err  # the base is the user's run
    statuses = {test["id"]: test["status"] for test in document["tests"]}
    assert document["summary"]["changed"] == 0 and code == 0, (statuses, err)
    reasons = {test["id"]: test["reasons"] for test in document["tests"]}
    lost = "tests/test_profile.py::test_beside_the_scratch_notes"
    assert statuses[lost] == "unstable", statuses
    assert any("outcome passed → failed" in reason for reason in reasons[lost]), reasons[lost]
    assert statuses["tests/test_profile.py::test_command_line"] in ("unstable", "unchanged")
    assert statuses["<import>"] in ("unstable", "unchanged"), reasons["<import>"]
