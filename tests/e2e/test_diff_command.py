"""End-to-end: ``diffgenome diff`` and ``affected`` over generated git repositories.

Real git, real worktrees, real ``pytest --genome`` subprocesses: every test runs the command
as a user would (``python -m diffgenome.analysis.cli``) and checks its exit status, its JSON
(validated against ``diffgenome schema diff``) and what it leaves behind. One repository with
three commits serves most situations, so its recordings are made once per module and reused
through the store.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
import venv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from diffgenome.protocol.formats import NAMING
from e2e.helpers import (
    ALL_PLUGINS,
    BASE_ARGS,
    GitRepo,
    clean_env,
    default_sigint,
    git_in,
    interrupt_when,
    make_project,
    split_progress,
    write_files,
)

PY = sys.executable

CORE_V1 = """
def add(a, b):
    return a + b


def scale(values, factor):
    out = []
    for v in values:
        out.append(v * factor)
    return out


def sign(x):
    if x >= 0:
        return "pos"
    return "neg"


def legacy(x):
    return x * 2


def old_name(x):
    return x + 1
"""

# Refactor only: functions moved, comments added, locals renamed.
CORE_V2 = """
def sign(x):
    # Zero counts as positive.
    if x >= 0:
        return "pos"
    return "neg"


def add(a, b):
    return a + b  # plain addition


def scale(values, factor):
    result = []
    for value in values:
        result.append(value * factor)
    return result


def old_name(x):
    return x + 1


def legacy(x):
    return x * 2
"""

# Behaviour: sign(0) is "zero" now; legacy is deleted, old_name renamed to new_name.
CORE_V3 = """
def sign(x):
    if x > 0:
        return "pos"
    if x == 0:
        return "zero"
    return "neg"


def add(a, b):
    return a + b  # plain addition


def scale(values, factor):
    result = []
    for value in values:
        result.append(value * factor)
    return result


def new_name(x):
    return x + 1
"""

NET_V1 = """
def fetch(url):
    return {"url": url, "status": 200}


def report(url):
    return fetch(url)["status"]
"""

NET_V3 = """
def fetch(url, timeout=5):
    return {"url": url, "status": 200, "timeout": timeout}


def report(url):
    return fetch(url)["status"]
"""

CALC_TESTS = """
from unittest import mock

from calc import core, net


def test_add():
    assert core.add(1, 2) == 3


def test_scale():
    assert core.scale([1, 2], 3) == [3, 6]


def test_sign():
    assert core.sign(0) in ("pos", "zero")


def test_legacy():
    f = getattr(core, "legacy", None)
    assert f is None or f(1) == 2


def test_named():
    f = getattr(core, "old_name", None) or core.new_name
    assert f(1) == 2


def test_report_with_mocked_fetch():
    with mock.patch("calc.net.fetch", autospec=True) as fetch:
        fetch.return_value = {"status": 201}
        assert net.report("http://example.invalid") == 201
"""


# -- helpers ---------------------------------------------------------------------------------


def git(repo: Path, *args: str, check: bool = True) -> str:
    return GitRepo(repo).git(*args, check=check)


def commit(repo: Path, files: Mapping[str, str], message: str) -> str:
    write_files(repo, files)
    return GitRepo(repo).commit_all(message)


def new_repo(root: Path, *versions: Mapping[str, str]) -> Path:
    GitRepo.init(root)
    for n, files in enumerate(versions, 1):
        commit(root, files, f"version {n}")
    return root


def diffgenome(
    *args: str,
    cwd: Path,
    tmpdir: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    extra = dict(env or {})
    if tmpdir is not None:
        extra["TMPDIR"] = str(tmpdir)
    return subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", *args],
        cwd=cwd,
        env=clean_env(extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def diff_json(
    repo: Path, base: str, head: str, *options: str, pytest_args: Sequence[str] = BASE_ARGS
) -> tuple[int, dict[str, Any]]:
    done = diffgenome("diff", base, head, "--json", "-", *options, "--", *pytest_args, cwd=repo)
    assert done.returncode in (0, 1), done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    jsonschema.validate(document, diff_schema())
    return done.returncode, document


@functools.cache
def diff_schema() -> dict[str, Any]:
    done = subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", "schema", "diff"],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
    )
    schema: dict[str, Any] = json.loads(done.stdout)
    return schema


def statuses(document: Mapping[str, Any]) -> dict[str, str]:
    return {t["id"]: t["status"] for t in document["tests"]}


def test_of(document: Mapping[str, Any], suffix: str) -> dict[str, Any]:
    [found] = [t for t in document["tests"] if t["id"].endswith(suffix)]
    return dict(found)


test_of.__test__ = False  # type: ignore[attr-defined]


def change_kinds(test: Mapping[str, Any]) -> set[str]:
    return {change["kind"] for change in test["changes"]}


def code_changes(document: Mapping[str, Any]) -> dict[str, str]:
    return {c["symbol"]: c["change"] for c in document["code_changes"]}


def run_count(store: Path) -> int:
    done = subprocess.run(
        [
            PY,
            "-c",
            "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("
            "'SELECT COUNT(*) FROM runs').fetchone()[0])",
            str(store / "genome.sqlite"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def checkout_state(repo: Path) -> tuple[str, ...]:
    """Everything of the user's checkout that a diff must leave as it was."""
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "-q", "HEAD", check=False),
        git(repo, "diff", "--cached"),
        git(repo, "diff"),
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        git(repo, "stash", "list"),
    )


def worktrees(repo: Path) -> list[str]:
    return [
        line.split(" ", 1)[1]
        for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


def processes_in(folder: Path) -> list[int]:
    """Processes whose working folder lies in ``folder`` (recorders left running)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd.startswith(str(folder)):
            found.append(int(entry))
    return found


def assert_one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    """One error line, last, and nothing else but the progress of the steps that finished
    before it (a log shows them: a base recorded before the head failed)."""
    assert done.returncode == 2, done.stdout + done.stderr
    _, lines = split_progress(done.stderr)
    assert len(lines) == 1, done.stderr
    assert done.stderr.splitlines()[-1] == lines[0], done.stderr
    assert lines[0].startswith("diffgenome: error: "), lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def assert_clean(repo: Path, tmpdir: Path, before: tuple[str, ...]) -> None:
    assert worktrees(repo) == [str(repo)]
    assert os.listdir(tmpdir) == []
    assert processes_in(tmpdir) == []
    assert checkout_state(repo) == before


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """calc in three commits: HEAD~2 the original, HEAD~1 a refactor, HEAD a behaviour change
    with a deleted and a renamed function and a changed function a test mocks."""
    base = {
        "calc/__init__.py": "",
        "calc/core.py": CORE_V1,
        "calc/net.py": NET_V1,
        "tests/test_core.py": CALC_TESTS,
        "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    }
    return new_repo(
        tmp_path_factory.mktemp("calc") / "calc",
        base,
        {"calc/core.py": CORE_V2},
        {"calc/core.py": CORE_V3, "calc/net.py": NET_V3},
    )


@pytest.fixture(scope="module")
def behaviour(calc: Path) -> tuple[int, dict[str, Any]]:
    return diff_json(calc, "HEAD~1", "HEAD")


# -- what the diff says -----------------------------------------------------------------------


def test_a_refactor_only_commit_is_unchanged_and_exits_zero(calc: Path) -> None:
    code, document = diff_json(calc, "HEAD~2", "HEAD~1")
    assert code == 0
    assert set(statuses(document).values()) == {"unchanged"}
    assert document["summary"]["unchanged"] == document["summary"]["tests"] > 5
    # Renamed locals are no code change (docs/diffing.md, "Code changes").
    assert code_changes(document) == {}


def test_a_behaviour_change_exits_one_with_its_change_kinds(
    behaviour: tuple[int, dict[str, Any]],
) -> None:
    code, document = behaviour
    assert code == 1
    sign = test_of(document, "::test_sign")
    assert sign["status"] == "changed"
    assert {"result_changed", "branch_changed"} <= change_kinds(sign)
    assert test_of(document, "::test_add")["status"] == "unchanged"
    assert document["base"]["rev"] == "HEAD~1" and document["head"]["rev"] == "HEAD"


def test_deleted_and_renamed_functions_are_code_changes(
    behaviour: tuple[int, dict[str, Any]],
) -> None:
    changes = code_changes(behaviour[1])
    assert changes["py:calc.core.legacy"] == "removed"
    # Renamed as it was: paired with its old self (docs/diffing.md, "Identity by mapping").
    assert "py:calc.core.old_name" not in changes
    assert changes["py:calc.core.new_name"] == "modified"
    [renamed] = [c for c in behaviour[1]["code_changes"] if c["symbol"] == "py:calc.core.new_name"]
    assert renamed["renamed_from"] == "py:calc.core.old_name"
    assert changes["py:calc.core.sign"] == "modified"
    assert "py:calc.core.add" not in changes  # only a comment


def test_a_mock_of_changed_code_drifts(behaviour: tuple[int, dict[str, Any]]) -> None:
    [drift] = [d for d in behaviour[1]["drift"] if d["claimed_target"] == "py:calc.net.fetch"]
    assert drift["tests"] == ["tests/test_core.py::test_report_with_mocked_fetch"]
    assert any("py:calc.net.fetch modified" in e for e in drift["evidence"])


@pytest.mark.parametrize(
    ("fail_on", "expected"), [("never", 0), ("drift", 1), ("gaps", 1), ("changed", 1)]
)
def test_fail_on_picks_what_fails(calc: Path, fail_on: str, expected: int) -> None:
    done = diffgenome("diff", "HEAD~1", "HEAD", "--fail-on", fail_on, "--", *BASE_ARGS, cwd=calc)
    assert done.returncode == expected, done.stderr
    assert "test_sign" in done.stdout  # the terminal report


def test_markdown_report_is_written(calc: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    done = diffgenome("diff", "HEAD~1", "HEAD", "--markdown", str(out), "--", *BASE_ARGS, cwd=calc)
    assert done.returncode == 1, done.stderr
    assert "test_sign" in out.read_text()


def test_affected_lists_tests_reaching_changed_code_with_paths(calc: Path) -> None:
    done = diffgenome("affected", "HEAD~1", "HEAD", "--json", "-", "--", *BASE_ARGS, cwd=calc)
    assert done.returncode == 0, done.stderr
    found = {item["test"]: item for item in json.loads(done.stdout)}
    assert set(found) == {
        "tests/test_core.py::test_sign",
        "tests/test_core.py::test_legacy",
        "tests/test_core.py::test_named",
        "tests/test_core.py::test_report_with_mocked_fetch",
    }
    [sign] = found["tests/test_core.py::test_sign"]["reasons"]
    assert (sign["symbol"], sign["change"], sign["via"]) == (
        "py:calc.core.sign",
        "modified",
        "call",
    )
    assert sign["path"] == ["py:tests.test_core.test_sign", "py:calc.core.sign"]
    sites = {site["predicate"]: site for site in sign["sites"]}
    # ``x >= 0`` became ``x > 0`` and ``x == 0``: the mapping pairs the old decision with
    # ``x > 0`` (the same ``if``, its condition edited; as seen at base), ``x == 0`` is new
    # (not reached on the base path)
    assert sites["x > 0"]["change"] == "modified" and sites["x > 0"]["was"] == "x >= 0"
    assert sites["x > 0"]["observed"] == {"true": 1, "false": 0}
    assert sites["x == 0"]["change"] == "added" and sites["x == 0"]["observed"] is None
    [mocked] = found["tests/test_core.py::test_report_with_mocked_fetch"]["reasons"]
    assert (mocked["symbol"], mocked["via"]) == ("py:calc.net.fetch", "stand-in")


def test_a_run_id_and_a_genome_file_are_sides_without_code_changes(
    calc: Path, tmp_path: Path
) -> None:
    diff_json(calc, "HEAD~1", "HEAD")  # both recorded (or reused)
    runs = diffgenome("export", "HEAD", "-o", str(tmp_path / "head.json"), cwd=calc)
    assert runs.returncode == 0, runs.stderr
    genome = json.loads((tmp_path / "head.json").read_text())
    genome["run"]["commit"] = None
    (tmp_path / "head.json").write_text(json.dumps(genome))
    base_run = json.loads(diffgenome("export", "HEAD~1", cwd=calc).stdout)["run"]["id"]
    done = diffgenome("diff", base_run[:20], str(tmp_path / "head.json"), cwd=calc)
    assert done.returncode == 1, done.stderr
    assert "test_sign" in done.stdout
    assert "names no commit: code changes are not analysed" in done.stdout


# -- recording and reuse ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_recorded_revision_is_reused_unless_rerecord(calc: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = ("diff", "HEAD~2", "HEAD~1", f"--store={store}", "--json", "-", "--", *BASE_ARGS)
    first = diffgenome(*args, cwd=calc)
    assert first.returncode == 0, first.stderr
    assert run_count(store) == 2
    second = diffgenome(*args, cwd=calc)
    assert second.returncode == 0, second.stderr
    assert run_count(store) == 2
    assert json.loads(second.stdout)["base"] == json.loads(first.stdout)["base"]
    third = diffgenome(*args[:4], "--rerecord", *args[4:], cwd=calc)
    assert third.returncode == 0, third.stderr
    assert run_count(store) == 4
    assert json.loads(third.stdout)["base"]["run"] != json.loads(first.stdout)["base"]["run"]
    # Another test selection is another recording.
    fourth = diffgenome(*args, "-k", "sign", cwd=calc)
    assert fourth.returncode == 0, fourth.stderr
    assert run_count(store) == 6
    assert json.loads(fourth.stdout)["summary"]["tests"] == 2  # test_sign and <import>


def test_worktree_sees_uncommitted_and_untracked_changes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    repo = new_repo(
        tmp_path_factory.mktemp("wt") / "repo",
        {
            "calc/__init__.py": "",
            "calc/core.py": CORE_V1,
            "tests/test_core.py": "from calc import core\n\n\ndef test_sign():\n"
            "    assert core.sign(0)\n",
        },
    )
    write_files(
        repo,
        {
            "calc/core.py": CORE_V1.replace(
                'return "pos"', "from calc.extra import label\n        return label()"
            ),
            "calc/extra.py": 'def label():\n    return "positive"\n',
        },
    )
    before = checkout_state(repo)
    code, document = diff_json(repo, "HEAD", "WORKTREE")
    assert code == 1
    sign = test_of(document, "::test_sign")
    assert sign["status"] == "changed"
    assert "result_changed" in change_kinds(sign)
    # The new function's call is named as structure, and what changed is its caller's result.
    assert sign["structure"] == [
        "new `calc.extra`, called by `calc.core.sign`",  # the new module's body, imported there
        "new `calc.extra.label`, called by `calc.core.sign`",
    ]
    changes = code_changes(document)
    assert changes["py:calc.core.sign"] == "modified"
    assert changes["py:calc.extra.label"] == "added"
    assert document["head"]["rev"] == "WORKTREE"
    assert checkout_state(repo) == before  # no cache, bytecode or store shows up in git


@pytest.mark.slow
def test_an_unstable_test_is_marked_with_repeat(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("flaky")
    counter = root / "counter"
    flaky = """
    import os


    def tick():
        path = os.environ["FLAKY_COUNTER"]
        n = int(open(path).read()) + 1 if os.path.exists(path) else 1
        with open(path, "w") as handle:
            handle.write(str(n))
        return n % 2
    """
    files = {
        "app/__init__.py": "",
        "app/flaky.py": flaky,
        "app/steady.py": "def one():\n    return 1\n",
        "tests/test_app.py": "from app import flaky, steady\n\n\ndef test_flaky():\n"
        "    assert flaky.tick() in (0, 1)\n\n\ndef test_steady():\n    assert steady.one()\n",
    }
    repo = new_repo(root / "repo", files, {"README": "docs only\n"})
    done = diffgenome(
        "diff",
        "HEAD~1",
        "HEAD",
        "--repeat",
        "2",
        "--json",
        "-",
        "--",
        *BASE_ARGS,
        cwd=repo,
        env={"FLAKY_COUNTER": str(counter)},
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert test_of(document, "::test_flaky")["status"] == "unstable"
    assert test_of(document, "::test_steady")["status"] == "unchanged"
    assert int(counter.read_text()) == 4  # two sides, two recordings each


# -- target interpreters ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def target_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One virtualenv with pytest and without diffgenome, shared by the tests below."""
    folder = tmp_path_factory.mktemp("target") / "venv"
    venv.EnvBuilder(with_pip=True).create(folder)
    python = folder / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "pytest"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr
    probe = subprocess.run(
        [str(python), "-c", "import diffgenome"],
        capture_output=True,
        env=clean_env(),
        check=False,
        cwd=folder,
    )
    assert probe.returncode != 0  # really without diffgenome
    return python


@ALL_PLUGINS
@pytest.mark.slow
def test_a_target_venv_without_diffgenome_records(
    calc: Path, target_venv: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    code, document = diff_json(
        calc, "HEAD~1", "HEAD", f"--python={target_venv}", f"--store={store}"
    )
    assert code == 1
    assert test_of(document, "::test_sign")["status"] == "changed"
    assert test_of(document, "::test_add")["status"] == "unchanged"
    # one recording per side, then the differing tests once more on each (confirmation; a
    # second round only where the first shows them otherwise than first recorded)
    assert document["summary"]["confirmed"] >= 1
    assert run_count(store) == 2 + 2


def _editable_project(root: Path, layout: str) -> Path:
    package = f"ed{layout}"
    where = f"src/{package}" if layout == "src" else package
    module = f"{where}/mod.py"
    pyproject = textwrap.dedent(
        f"""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{package}"
        version = "0"

        [tool.setuptools]
        packages = ["{package}"]
        """
    )
    if layout == "src":
        pyproject += '\n[tool.setuptools.package-dir]\n"" = "src"\n'
    tests = f"from {package} import mod\n\n\ndef test_value():\n    assert mod.value() > 0\n"
    return new_repo(
        root / package,
        {
            "pyproject.toml": pyproject,
            f"{where}/__init__.py": "",
            module: "def value():\n    return 1\n",
            "tests/test_mod.py": tests,
        },
        {module: "def value():\n    return 2\n"},
    )


@ALL_PLUGINS
@pytest.mark.slow
@pytest.mark.parametrize("layout", ["src", "flat"])
def test_an_editable_install_of_the_checkout_does_not_hide_the_revision(
    target_venv: Path, tmp_path: Path, layout: str
) -> None:
    project = _editable_project(tmp_path, layout)
    done = subprocess.run(
        [str(target_venv), "-m", "pip", "install", "-q", "-e", str(project)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr
    try:
        code, document = diff_json(project, "HEAD~1", "HEAD", f"--python={target_venv}")
    finally:
        subprocess.run(
            [str(target_venv), "-m", "pip", "uninstall", "-q", "-y", f"ed{layout}"],
            capture_output=True,
            check=False,
            env=clean_env(),
        )
    assert code == 1
    test = test_of(document, "::test_value")
    assert test["status"] == "changed", test
    assert "result_changed" in change_kinds(test)
    assert not any("foreign-module" in reason for reason in test["reasons"])


# -- errors: one line, exit 2, nothing left behind ---------------------------------------------


@pytest.fixture
def tmpdir_for_cli(tmp_path: Path) -> Path:
    folder = tmp_path / "cli-tmp"
    folder.mkdir()
    return folder


def test_an_unknown_revision_is_one_line(calc: Path, tmpdir_for_cli: Path) -> None:
    before = checkout_state(calc)
    done = diffgenome("diff", "no-such-rev", "HEAD", cwd=calc, tmpdir=tmpdir_for_cli)
    assert_one_line_error(done, "'no-such-rev'", "not a git revision")
    assert_clean(calc, tmpdir_for_cli, before)


def test_main_for_master_is_one_line_that_names_the_branch_there(
    tmp_path: Path, tmpdir_for_cli: Path
) -> None:
    """A repository has ``main`` or ``master``; asked for the other, the error said "check the
    name" and nothing more (humanize's default branch is ``master``: a reviewer typed
    ``main``). It now names the branch this repository has, and a tag spelt alike."""
    repo = make_project(tmp_path, {"tests/test_one.py": "def test_one():\n    assert True\n"})
    git_in(repo, "branch", "-M", "master")
    git_in(repo, "tag", "release-1.0")
    done = diffgenome("diff", "main", "HEAD", cwd=repo, tmpdir=tmpdir_for_cli)
    assert_one_line_error(done, "'main'", "not a git revision", "did you mean master?")
    done = diffgenome("diff", "release-1.1", "HEAD", cwd=repo, tmpdir=tmpdir_for_cli)
    assert_one_line_error(done, "'release-1.1'", "did you mean release-1.0?")
    done = diffgenome("diff", "no-such-rev", "HEAD", cwd=repo, tmpdir=tmpdir_for_cli)
    assert "did you mean" not in assert_one_line_error(done, "'no-such-rev'")
    assert os.listdir(tmpdir_for_cli) == []


def test_outside_a_git_repository_is_one_line(tmp_path: Path, tmpdir_for_cli: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = diffgenome("diff", "HEAD~1", "HEAD", cwd=plain, tmpdir=tmpdir_for_cli)
    assert_one_line_error(done, "not in a git repository")
    done = diffgenome("diff", "HEAD~1", "HEAD", f"--repo={plain}", cwd=tmp_path)
    assert_one_line_error(done, "not in a git repository")
    assert os.listdir(tmpdir_for_cli) == []


def test_a_repository_another_user_owns_is_named_as_such(calc: Path, tmpdir_for_cli: Path) -> None:
    """git refuses a repository another user owns (a CI checkout made under another uid):
    the error said "not in a git repository", which sends the user to the wrong fix. git's
    own knob makes it refuse here as it would there."""
    different = {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}
    done = diffgenome("diff", "HEAD~1", "HEAD", cwd=calc, tmpdir=tmpdir_for_cli, env=different)
    assert_one_line_error(done, "git refuses the repository at", "safe.directory")
    assert "not in a git repository" not in done.stderr
    assert os.listdir(tmpdir_for_cli) == []


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", ("is not JSON",)),
        ('{"format": "diffgenome-genome/9"}', ("unsupported",)),
        ('{"format": "diffgenome-genome/1", "run": 3}', ("not a valid", "run")),
        # 200,000 levels: json.load raised RecursionError, a traceback and exit 1.
        (
            '{"format": "diffgenome-genome/2", "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
            ("nested too deeply",),
        ),
        # A reader that coerced read "yes" as true: strict types at the boundary.
        (
            '{"format": "diffgenome-genome/2", "run": {"id": "r1", "commit": null, "dirty": null,'
            ' "python": "CPython 3.12.1", "platform": "x", "started_at": "2026-01-01T00:00:00Z",'
            ' "config": {}, "complete": "yes"}, "symbols": [], "tests": []}',
            ("not a valid", "run.complete", "boolean"),
        ),
    ],
    ids=["not-json", "future-version", "run-not-an-object", "nested-200000-deep", "complete-yes"],
)
def test_corrupt_or_unsupported_input_is_one_line(
    calc: Path, tmp_path: Path, tmpdir_for_cli: Path, content: str, words: tuple[str, ...]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    done = diffgenome("diff", str(bad), str(bad), cwd=calc, tmpdir=tmpdir_for_cli)
    assert_one_line_error(done, *words)
    assert os.listdir(tmpdir_for_cli) == []


def test_a_shallow_clone_missing_base_says_fetch_more(
    calc: Path, tmp_path: Path, tmpdir_for_cli: Path
) -> None:
    shallow = tmp_path / "shallow"
    GitRepo(calc).clone(shallow, "--depth", "1")
    done = diffgenome("diff", "HEAD~1", "HEAD", cwd=shallow, tmpdir=tmpdir_for_cli)
    assert_one_line_error(done, "shallow", "fetch more history")
    assert worktrees(shallow) == [str(shallow)]


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        ({"calc/core.py": "def add(a, b:\n    return a + b\n"}, ("SyntaxError",)),
        ({"calc/core.py": "import no_such_dependency_xyz\n"}, ("no_such_dependency_xyz",)),
    ],
    ids=["syntax-error", "missing-dependency"],
)
def test_tests_that_cannot_import_are_one_line_naming_the_revision(
    tmp_path: Path, tmpdir_for_cli: Path, broken: dict[str, str], words: tuple[str, ...]
) -> None:
    repo = new_repo(
        tmp_path / "repo",
        {
            "calc/__init__.py": "",
            "calc/core.py": "def add(a, b):\n    return a + b\n",
            "tests/test_core.py": "from calc import core\n\n\ndef test_add():\n"
            "    assert core.add(1, 2) == 3\n",
        },
        broken,
    )
    before = checkout_state(repo)
    done = diffgenome("diff", "HEAD~1", "HEAD", "--", *BASE_ARGS, cwd=repo, tmpdir=tmpdir_for_cli)
    line = assert_one_line_error(done, "HEAD", "could not run", *words)
    assert "unchanged" not in line
    assert_clean(repo, tmpdir_for_cli, before)


def test_no_tests_is_one_line(calc: Path, tmpdir_for_cli: Path) -> None:
    done = diffgenome(
        "diff",
        "HEAD~1",
        "HEAD",
        "--",
        *BASE_ARGS,
        "-k",
        "nothing_matches_this",
        cwd=calc,
        tmpdir=tmpdir_for_cli,
    )
    assert_one_line_error(done, "no tests", "HEAD~1")
    assert os.listdir(tmpdir_for_cli) == []


def test_a_missing_target_interpreter_is_one_line(calc: Path, tmpdir_for_cli: Path) -> None:
    done = diffgenome(
        "diff",
        "HEAD~1",
        "HEAD",
        "--rerecord",
        "--python=/no/such/python",
        cwd=calc,
        tmpdir=tmpdir_for_cli,
    )
    assert_one_line_error(done, "/no/such/python", "--python")
    assert os.listdir(tmpdir_for_cli) == []


# -- hygiene ------------------------------------------------------------------------------------


def test_a_successful_diff_leaves_nothing_behind(calc: Path, tmpdir_for_cli: Path) -> None:
    before = checkout_state(calc)
    done = diffgenome(
        "diff", "HEAD~2", "HEAD", "--rerecord", "--", *BASE_ARGS, cwd=calc, tmpdir=tmpdir_for_cli
    )
    assert done.returncode == 1, done.stderr
    assert_clean(calc, tmpdir_for_cli, before)


def test_a_failed_diff_after_recording_base_leaves_nothing_behind(
    calc: Path, tmpdir_for_cli: Path
) -> None:
    before = checkout_state(calc)
    done = diffgenome(
        "diff",
        "HEAD~2",
        "no-such-head",
        "--rerecord",
        "--",
        *BASE_ARGS,
        cwd=calc,
        tmpdir=tmpdir_for_cli,
    )
    assert_one_line_error(done, "'no-such-head'")
    assert_clean(calc, tmpdir_for_cli, before)


def test_an_interrupted_diff_leaves_nothing_behind(tmp_path: Path, tmpdir_for_cli: Path) -> None:
    started = tmp_path / "started"
    slow_test = f"""
    import pathlib
    import time


    def test_slow(tmp_path):
        (tmp_path / "scratch").write_text("pytest's temp folders go with the workspace")
        pathlib.Path({str(started)!r}).write_text("yes")
        time.sleep(120)
    """
    repo = new_repo(
        tmp_path / "repo",
        {"app/__init__.py": "", "tests/test_slow.py": slow_test},
        {"README": "docs\n"},
    )
    before = checkout_state(repo)
    proc = subprocess.Popen(
        [PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD", "--", *BASE_ARGS],
        cwd=repo,
        env=clean_env({"TMPDIR": str(tmpdir_for_cli)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    out, err = interrupt_when(
        proc,
        lambda: len(worktrees(repo)) > 1 and started.exists(),
        "the recording never started",
        poll_s=0.1,
    )
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    assert_clean(repo, tmpdir_for_cli, before)


def test_nothing_after_double_dash_for_other_commands(calc: Path) -> None:
    done = diffgenome("runs", "--", "-k", "x", cwd=calc)
    assert_one_line_error(done, "no arguments after --")


def test_the_demo_prints_a_real_diff() -> None:
    demo = Path(__file__).resolve().parents[2] / "experiments" / "demo.py"
    done = subprocess.run(
        [PY, str(demo)], capture_output=True, text=True, timeout=600, check=False, env=clean_env()
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for text in (
        "to review (",
        "tests/test_pricing.py::test_line_total_rejects_zero  changed  passed",
        "py:shop.pricing.discount results: float (value A) → float (value B)",
        "structure: `shop.pricing.round_money` extracted from `shop.pricing.total`",
        "raised:py:shop.pricing.InvalidQuantity",
        "mock drift",
        "py:shop.payment.Gateway.charge",
    ):
        assert text in done.stdout, text


def test_a_genome_1_file_is_read_but_not_compared_with_genome_2(calc: Path, tmp_path: Path) -> None:
    """/1 documents name decisions by their order, /2 by what they test: comparing the two
    would pair different decisions, so the CLI says in one line to record again."""
    diff_json(calc, "HEAD~1", "HEAD")  # both recorded (or reused)
    done = diffgenome("export", "HEAD", "-o", str(tmp_path / "head.json"), cwd=calc)
    assert done.returncode == 0, done.stderr
    head = json.loads((tmp_path / "head.json").read_text())
    assert head["format"] == "diffgenome-genome/2"
    old = dict(head, format="diffgenome-genome/1")
    (tmp_path / "old.json").write_text(json.dumps(old))
    same = diffgenome("diff", str(tmp_path / "old.json"), str(tmp_path / "old.json"), cwd=calc)
    assert same.returncode == 0, same.stderr  # a /1 document is still read
    mixed = diffgenome("diff", str(tmp_path / "old.json"), str(tmp_path / "head.json"), cwd=calc)
    assert mixed.returncode == 2
    _, lines = split_progress(mixed.stderr)  # both files were loaded first
    assert len(lines) == 1 and "record both again" in lines[0], mixed.stderr
    assert "Traceback" not in mixed.stderr
    # A /2 recording from before lambdas were named by content (no ``naming`` in its config)
    # names them by order: compared with a current one, it would pair different lambdas.
    assert head["run"]["config"]["naming"] == NAMING
    config = {k: v for k, v in head["run"]["config"].items() if k != "naming"}
    ordinal = dict(head, run=dict(head["run"], config=config))
    (tmp_path / "ordinal.json").write_text(json.dumps(ordinal))
    renamed = diffgenome(
        "diff", str(tmp_path / "ordinal.json"), str(tmp_path / "head.json"), cwd=calc
    )
    assert renamed.returncode == 2
    _, lines = split_progress(renamed.stderr)
    assert len(lines) == 1 and "naming revision 1" in lines[0], renamed.stderr
