"""End-to-end: ``diffgenome diff RUN RUN`` of two stored runs whose code this repository does
not have leaves unread the genomes both runs hold byte for byte alike (equal content
addresses, no stand-ins), and answers exactly as a diff of the same runs exported to files,
which reads every genome."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from diffgenome.store.reader import StoreReader
from e2e.helpers import (
    DIFF_PYTEST_ARGS,
    PY,
    STORE,
    GitRepo,
    clean_env,
    cli,
    export,
    make_project,
    record_full,
    write_files,
)

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        def shout(text):
            return text.upper()


        def greet(name):
            return "hi " + shout(name)


        def twice(n):
            if n > 0:
                return 2 * n
            return 0
    """,
    "tests/test_core.py": """
        from pkg import core


        def test_shout():
            assert core.shout("a").startswith("A")


        def test_greet_with_a_fake_shout(monkeypatch):
            monkeypatch.setattr(core, "shout", lambda text: text)
            assert core.greet("x") == "hi x"


        def test_twice():
            assert core.twice(2) == 4
    """,
}

CHANGED = {
    "pkg/core.py": """
        def shout(text):
            return text.upper() + "!"


        def greet(name):
            return "hi " + shout(name)


        def twice(n):
            if n > 0:
                return 2 * n
            return 0
    """,
}


def _diff(where: Path, *args: str) -> dict[str, Any]:
    done = cli(where, "diff", *args, "--json", "diff.json", "--fail-on", "never")
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads((where / "diff.json").read_text())
    return result


def test_stored_runs_compare_alike_genomes_by_address_and_answer_as_files_do(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path, FILES)
    base = record_full(project).doc
    write_files(project, CHANGED)
    GitRepo.init(project).commit_all("initial")
    head = record_full(project).doc
    a, b = base["run"]["id"], head["run"]["id"]

    # Elsewhere, without the repository: the code changes cannot be analysed.
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(project / STORE, elsewhere / STORE)
    with StoreReader.open(str(elsewhere / STORE)) as reader:
        same = reader.same_genomes(a, b)
    # The fake's test holds a stand-in (read for mock drift); shout's test changed.
    assert same == {"<import>", "tests/test_core.py::test_twice"}, same

    stored = _diff(elsewhere, a, b, "--store", STORE)
    (elsewhere / "a.json").write_text(json.dumps(export(project, run=a)))
    (elsewhere / "b.json").write_text(json.dumps(export(project, run=b)))
    files = _diff(elsewhere, "a.json", "b.json")

    status = {t["id"]: t["status"] for t in stored["tests"]}
    assert status == {
        "<import>": "unchanged",
        "tests/test_core.py::test_shout": "changed",
        "tests/test_core.py::test_greet_with_a_fake_shout": "unchanged",
        "tests/test_core.py::test_twice": "unchanged",
    }
    (drift,) = stored["drift"]
    assert drift["claimed_target"] == "py:pkg.core.shout"
    assert drift["tests"] == ["tests/test_core.py::test_greet_with_a_fake_shout"]
    assert any(e.startswith("behaviour: tests/test_core.py::test_shout") for e in drift["evidence"])
    # Everything but the names of the sides is what the files, read in full, give.
    assert stored["tests"] == files["tests"]
    assert stored["drift"] == files["drift"]
    assert stored["summary"] == files["summary"]


MORE = {
    "pkg/extra.py": """
        def add(a, b):
            return a + b
    """,
    "tests/test_extra.py": """
        from pkg.extra import add


        def test_add():
            assert add(1, 2) == 3
    """,
}

# shout's result changes; twice changes only where test_twice does not go.
CHANGED_UNREACHED = {
    "pkg/core.py": CHANGED["pkg/core.py"].replace("return 0\n", "return None\n"),
}


def test_with_code_changes_alike_genomes_are_read_when_they_name_changed_code(
    tmp_path: Path,
) -> None:
    """In the repository both commits are in, the code changes are analysed: a test whose
    genome is the same in both runs is still read when it ran changed code (the code change
    lists it), and left unread otherwise; the answer is what the exported files give."""
    project = make_project(tmp_path, {**FILES, **MORE})
    a = record_full(project).doc["run"]["id"]
    write_files(project, CHANGED_UNREACHED)
    GitRepo.init(project).commit_all("initial")
    b = record_full(project).doc["run"]["id"]
    twice, add = "tests/test_core.py::test_twice", "tests/test_extra.py::test_add"

    with StoreReader.open(str(project / STORE)) as reader:
        same = reader.same_genomes(a, b)
        named = reader.mentioning(a, same, {"py:pkg.core.shout", "py:pkg.core.twice"})
        also = reader.mentioning(
            a, same, {f"py:pkg.core.f{n}" for n in range(9)} | {"py:pkg.core.twice"}
        )
    assert {twice, add} <= same, same
    assert twice in named and add not in named, named
    assert also == named  # many strings are looked for in one pass: the same answer

    done = cli(project, "diff", a, b, "--json", "diff.json", "--fail-on", "never")
    assert done.returncode == 0, done.stdout + done.stderr
    unread = len(same - named)
    assert f"({unread} the same genome in both runs: not read)" in done.stderr, done.stderr
    stored = json.loads((project / "diff.json").read_text())
    (project / "a.json").write_text(json.dumps(export(project, run=a)))
    (project / "b.json").write_text(json.dumps(export(project, run=b)))
    files = _diff(project, "a.json", "b.json")

    (entry,) = [e for e in stored["code_changes"] if e["symbol"] == "py:pkg.core.twice"]
    assert entry["tests_base"] == entry["tests_head"] == [twice]
    assert {t["id"]: t["status"] for t in stored["tests"]}[add] == "unchanged"
    assert stored["tests"] == files["tests"]
    assert stored["code_changes"] == files["code_changes"]
    assert stored["drift"] == files["drift"]
    assert stored["summary"] == files["summary"]


def _diff_same_tree(repo: Path, tmp_path: Path, variables: dict[str, str]) -> str:
    """``diff HEAD~1 HEAD`` of a same-tree commit under ``variables``; what it says (the
    progress on stderr, then the report and its notes)."""
    command = [PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD"]
    done = subprocess.run(
        [*command, "--no-confirm", "--", *DIFF_PYTEST_ARGS],
        cwd=repo,
        env=clean_env({"TMPDIR": str(tmp_path), **variables}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr + done.stdout


def test_how_the_shell_started_diffgenome_is_no_other_environment(tmp_path: Path) -> None:
    """The shell sets ``_`` to the command it runs (``time diffgenome``, ``make``) and
    ``SHLVL`` to how deep it nests: before, each was part of the recording's environment,
    and a diff started another way reused no stored run (base recorded again)."""
    repo = make_project(tmp_path, FILES)
    GitRepo(repo).commit_empty("same tree")
    _diff_same_tree(repo, tmp_path, {"_": "/usr/bin/time", "SHLVL": "1", "OLDPWD": "/"})
    again = _diff_same_tree(repo, tmp_path, {"_": "/usr/bin/make", "SHLVL": "3", "OLDPWD": "/tmp"})
    assert "reusing run" in again and "of HEAD~1" in again, again
    assert "recording base" not in again, again


def test_a_ci_jobs_own_variables_are_no_other_environment(tmp_path: Path) -> None:
    """GitHub Actions and GitLab CI give every job its own ids, commit and step files: before,
    they were part of the recording's environment, so a store cached from an earlier job
    (docs/ci.md) was never reused and every job recorded base again, without a word. Another
    variable of the project's is another environment still, and the diff now says why it
    records again."""
    repo = make_project(tmp_path, FILES)
    GitRepo(repo).commit_empty("same tree")
    first_job = {"CI": "true", "GITHUB_RUN_ID": "101", "GITHUB_SHA": "a1", "CI_JOB_ID": "7"}
    _diff_same_tree(repo, tmp_path, {**first_job, "GITHUB_OUTPUT": "/tmp/a/set_output"})
    next_job = {"CI": "true", "GITHUB_RUN_ID": "102", "GITHUB_SHA": "b2", "CI_JOB_ID": "8"}
    again = _diff_same_tree(repo, tmp_path, {**next_job, "GITHUB_OUTPUT": "/tmp/b/set_output"})
    assert "reusing run" in again and "of HEAD~1" in again, again
    assert "recording base" not in again, again
    other = _diff_same_tree(repo, tmp_path, {**next_job, "APP_MODE": "fast"})
    assert "recorded base" in other, other
    assert "was not reused: it was recorded in another environment" in other, other
