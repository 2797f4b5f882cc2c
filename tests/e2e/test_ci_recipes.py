"""End-to-end: the CI recipes of docs/ci.md, run locally (#13 point 8).

The GitHub Actions workflow and the GitLab CI job are taken from docs/ci.md as written, and
their shell commands run in a real git repository with two commits, so that the documented
recipe cannot drift from the command it calls: an option renamed, an output the upload step
names but the diff step does not write, a gate that does not return diffgenome's status.

GitHub expressions (``${{ github.sha }}``, ...) and GitLab's predefined variables are replaced
with that repository's real commits and harmless placeholders; ``GITHUB_OUTPUT`` is a file, as
on a runner, and the gate step exits with what the diff step wrote there. Installing
(``pip install``) runs as written in the slow variant of each test, into a fresh virtualenv,
with the repository's address made a ``file://`` one of this checkout; the fast variant puts
this checkout's ``diffgenome`` on the path instead. Posting the comment (``gh pr comment``,
``curl``: that needs a forge and a token) is **not** run; the test checks instead that the
posting step posts the file the diff step wrote.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import venv
from pathlib import Path
from typing import Any

import pytest

from diffgenome.analysis.report.markdown import (
    DEFAULT_MARKDOWN_LIMIT,
    GITHUB_COMMENT_LIMIT,
    comment_length,
)
from e2e.helpers import ALL_PLUGINS, PY, REPO, GitRepo, clean_env, make_project, write_files

# The CI recipes install into fresh virtualenvs: their sessions find what is installed there.
pytestmark = ALL_PLUGINS

DOC = REPO / "docs" / "ci.md"

CALC = {
    # Installable, as the recipes' `pip install -e .` needs.
    "pyproject.toml": """
        [project]
        name = "calc"
        version = "0"

        [tool.setuptools]
        packages = ["calc"]
    """,
    "calc/__init__.py": "",
    "calc/core.py": """
        def sign(x):
            if x >= 0:
                return "pos"
            return "neg"


        def double(x):
            return x * 2
    """,
    "tests/test_core.py": """
        from calc import core


        def test_sign_of_zero():
            assert core.sign(0) in ("pos", "zero")


        def test_double():
            assert core.double(2) == 4
    """,
}

# Zero gets a case of its own.
CORE_HEAD = """
    def sign(x):
        if x == 0:
            return "zero"
        if x > 0:
            return "pos"
        return "neg"


    def double(x):
        return x * 2
"""


# -- a reader for the YAML of the recipes -----------------------------------------------------


class _Yaml:
    """The block subset of YAML the recipes use: mappings, sequences (of scalars or of
    mappings), plain and quoted scalars and ``|`` block scalars; comment lines are skipped
    outside block scalars. PyYAML is not a dependency of this project, and the recipes must
    stay this simple anyway to be copied by hand; anything else fails loudly here."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.i = 0

    @staticmethod
    def _indent(line: str) -> int:
        return len(line) - len(line.lstrip(" "))

    def _skip(self) -> None:
        while self.i < len(self.lines) and (
            not self.lines[self.i].strip() or self.lines[self.i].lstrip().startswith("#")
        ):
            self.i += 1

    def _peek(self) -> str | None:
        self._skip()
        return self.lines[self.i] if self.i < len(self.lines) else None

    def document(self) -> Any:
        line = self._peek()
        assert line is not None, "an empty YAML document"
        out = self._node(self._indent(line))
        assert self._peek() is None, f"unparsed YAML from: {self._peek()!r}"
        return out

    def _node(self, indent: int) -> Any:
        line = self._peek()
        assert line is not None
        return self._sequence(indent) if line.lstrip().startswith("- ") else self._mapping(indent)

    def _mapping(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while (line := self._peek()) is not None and self._indent(line) == indent:
            if line.lstrip().startswith("- "):
                break
            key, colon, rest = line.strip().partition(":")
            assert colon and (not rest or rest.startswith(" ")), f"not a mapping entry: {line!r}"
            assert key not in out, f"key {key!r} given twice"
            self.i += 1
            out[key] = self._value(rest.strip(), indent)
        assert line is None or self._indent(line) < indent or line.lstrip().startswith("- "), (
            f"unexpected indentation: {line!r}"
        )
        return out

    def _value(self, rest: str, indent: int) -> Any:
        if rest == "|":
            return self._block(indent)
        assert not rest.startswith((">", "[", "{", "&", "*", "!")), f"unsupported: {rest!r}"
        if rest:
            return _scalar(rest)
        line = self._peek()
        if line is None:
            return None
        deeper = self._indent(line)
        if deeper > indent or (deeper == indent and line.lstrip().startswith("- ")):
            return self._node(deeper)
        return None

    def _sequence(self, indent: int) -> list[Any]:
        out: list[Any] = []
        while (line := self._peek()) is not None and self._indent(line) == indent:
            if not line.lstrip().startswith("- "):
                break
            item = line.lstrip()[2:]
            if item == "|":
                self.i += 1
                out.append(self._block(indent))
            elif re.match(r"[\w.-]+:( |$)", item):  # "- key: value" opens a mapping
                self.lines[self.i] = " " * (indent + 2) + item
                out.append(self._mapping(indent + 2))
            else:
                self.i += 1
                out.append(_scalar(item))
        return out

    def _block(self, indent: int) -> str:
        """A ``|`` block scalar: the lines indented deeper than its key, that indentation off."""
        lines: list[str] = []
        own: int | None = None
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and self._indent(line) <= indent:
                break
            if line.strip():
                own = self._indent(line) if own is None else own
                lines.append(line[own:])
            else:
                lines.append("")
            self.i += 1
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines) + "\n"


def _scalar(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def parse_yaml(text: str) -> Any:
    return _Yaml(text).document()


def recipe(first_line: str) -> Any:
    """The ```yaml block of docs/ci.md that starts with ``first_line``, parsed."""
    blocks = re.findall(r"^```yaml\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL)
    found = [block for block in blocks if block.startswith(first_line + "\n")]
    assert len(found) == 1, f"docs/ci.md has {len(found)} yaml blocks starting {first_line!r}"
    return parse_yaml(found[0])


def test_the_yaml_reader_reads_what_the_recipes_use() -> None:
    """The reader of this test, checked on its own: nesting, sequences of both kinds, block
    scalars with their blank lines, quoting, and a loud failure on what it does not read."""
    text = (
        "# a comment\n"
        "a:\n"
        "  b: 'x: y'\n"
        "  steps:\n"
        "    - uses: u@v1\n"
        "      with:\n"
        "        n: 0\n"
        "    - run: |\n"
        "        one \\\n"
        "          two\n"
        "\n"
        "        three\n"
        "  list:\n"
        "  - plain item\n"
        "  - |\n"
        "    block item\n"
        'c: "q"\n'
    )
    assert parse_yaml(text) == {
        "a": {
            "b": "x: y",
            "steps": [{"uses": "u@v1", "with": {"n": "0"}}, {"run": "one \\\n  two\n\nthree\n"}],
            "list": ["plain item", "block item\n"],
        },
        "c": "q",
    }
    with pytest.raises(AssertionError, match="unsupported"):
        parse_yaml("a: [1, 2]\n")
    with pytest.raises(AssertionError, match=r"indentation|unparsed"):
        parse_yaml("a:\n  b: 1\n   c: 2\n")


# -- running the recipes ----------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with two commits: zero is no longer positive, so ``test_sign_of_zero``
    changes (it passes on both sides, through another exit of ``sign``), and ``test_double``
    does not. The project is ``proj/``, a subfolder of the repository (a monorepo, whose job
    runs its steps there: #25). Returns the project's folder, the base commit and the head
    commit."""
    repo = make_project(tmp_path, {f"proj/{name}": text for name, text in CALC.items()})
    base = GitRepo(repo).rev()
    write_files(repo, {"proj/calc/core.py": CORE_HEAD})
    return repo / "proj", base, GitRepo(repo).commit_all("zero")


#: What the recipes write for the address diffgenome is installed from (docs/ci.md).
THIS_REPOSITORY = "<this repository>"


def _installing(folder: Path) -> dict[str, str]:
    """A fresh virtualenv first on the path, in which the recipe's own install step will put
    the project and diffgenome (``python`` and ``diffgenome`` are then the job's)."""
    venv.create(folder, with_pip=True, symlinks=True)
    env = clean_env()
    env["PATH"] = f"{folder / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(folder)
    env["TMPDIR"] = str(folder.parent)
    return env


def _install_script(script: str) -> str:
    """The recipe's install command with the repository's address made this checkout's."""
    assert f'"git+{THIS_REPOSITORY}"' in script, script
    return script.replace(THIS_REPOSITORY, f"file://{REPO}")


def _diffgenome_on_path(folder: Path) -> dict[str, str]:
    """An environment whose ``diffgenome`` is this checkout's, run by this interpreter (what
    ``pip install pytest-diffgenome`` gives a CI job)."""
    folder.mkdir()
    shim = folder / "diffgenome"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(PY)} -m diffgenome.analysis.cli "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = clean_env()
    env["PATH"] = f"{folder}{os.pathsep}{env.get('PATH', '')}"
    env["TMPDIR"] = str(folder.parent)
    return env


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A script as GitHub's default shell runs it (``bash -eo pipefail``)."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _check_comment(comment: Path, base: str, head: str) -> str:
    assert comment.is_file(), "the diff step wrote no comment"
    text = comment.read_text()
    assert comment_length(text) <= DEFAULT_MARKDOWN_LIMIT < GITHUB_COMMENT_LIMIT
    # The real head commit was compared, named short as git names it.
    assert text.splitlines()[0] == f"### diffgenome: `{base[:12]}` → `{head[:12]}`"
    # One block per changed test: open (a small comment), or one line.
    assert re.search(
        r"^(<details open><summary>)?changed · <code>proj/tests/test_core.py::test_sign_of_zero"
        r"</code>",
        text,
        re.MULTILINE,
    ), text
    assert text.count("<details") == text.count("</details>")
    assert len(re.findall(r"^(?:<details open><summary>)?changed · ", text, re.M)) == 1
    assert "test_double" not in text  # unchanged
    return text


@pytest.mark.parametrize("install", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_the_github_workflow_runs_and_its_gate_fails_on_a_change(
    project: tuple[Path, str, str], tmp_path: Path, install: bool
) -> None:
    """The `run:` steps of .github/workflows/diffgenome.yml in docs/ci.md, in order, with the
    expressions of a pull_request event substituted; the post is not run. ``install``: the
    install step runs as written, into a fresh virtualenv; else it is skipped and this
    checkout's ``diffgenome`` is on the path."""
    repo, base, head = project
    workflow = recipe("# .github/workflows/diffgenome.yml")
    assert "pull_request" in workflow["on"]
    assert workflow["permissions"]["pull-requests"] == "write"
    [job] = workflow["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == "0"  # both commits and their history
    assert any(s.get("uses", "").startswith("actions/setup-python@") for s in steps)
    assert steps[-1]["name"] == "Gate"  # the gate's status comes last

    env = _installing(tmp_path / "venv") if install else _diffgenome_on_path(tmp_path / "bin")
    output = tmp_path / "github_output"
    output.write_text("")
    env["GITHUB_OUTPUT"] = str(output)
    values = {
        "github.event.pull_request.base.sha": base,
        "github.sha": head,
        "github.server_url": "https://github.example",
        "github.repository": "owner/calc",
        "github.run_id": "1234",
    }

    def substitute(script: str) -> str:
        def one(match: re.Match[str]) -> str:
            expression = match.group(1)
            if expression.startswith("steps.diff.outputs."):
                outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
                return outputs[expression.removeprefix("steps.diff.outputs.")]
            assert expression in values, f"an expression the test does not know: {expression}"
            return values[expression]

        return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", one, script)

    ran: list[str] = []
    gate: subprocess.CompletedProcess[str] | None = None
    post: dict[str, Any] | None = None
    for step in steps:
        script = step.get("run")
        if script is None:
            continue
        if "pip install" in script:
            command = _install_script(script)  # diffgenome from its repository
            if install:
                done = _bash(command, repo, env)
                assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
                ran.append(step["name"])
            continue
        if "gh pr comment" in script:
            post = step
            continue
        done = _bash(substitute(script), repo, env)
        ran.append(step.get("name", script))
        if step.get("name") == "Gate":
            gate = done
        else:
            assert done.returncode == 0, done.stderr  # `set +e`: the step itself succeeds
    installed = ["Install the project, its test dependencies and diffgenome"] if install else []
    assert ran == [*installed, "Record base and head and compare them", "Gate"]
    if install:  # the job's own diffgenome recorded, from this repository
        where = _bash("command -v diffgenome", repo, env).stdout.strip()
        assert where == str(tmp_path / "venv" / "bin" / "diffgenome")

    # The verdict: a test changed, so diffgenome exited 1, and the gate fails the job with it.
    assert "status=1\n" in output.read_text()
    assert gate is not None and gate.returncode == 1

    text = _check_comment(repo / "comment.md", base, head)
    # Changed code no test exercised is linked to its line in the repository's web view.
    assert f"](https://github.example/owner/calc/blob/{head}/proj/calc/core.py#L" in text, text
    # Not cut, and linked all the same: the whole report is the run's artifacts.
    assert "Cut to fit" not in text
    assert (
        "[the whole report](https://github.example/owner/calc/actions/runs/1234): every test, "
        "both call trees, the JSON."
    ) in text.splitlines()
    # What the upload step uploads is what the diff step wrote.
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"
    paths = upload["with"]["path"].split()
    assert paths == ["html/", "diff.json"]
    assert (repo / "html" / "index.html").is_file()
    diff = json.loads((repo / "diff.json").read_text())
    assert diff["summary"]["changed"] == 1 and diff["head"]["commit"] == head
    # The post step posts that comment, and only when there is one (exit 2 writes none).
    assert post is not None
    assert "hashFiles('comment.md') != ''" in post["if"] and "always()" in post["if"]
    assert "--edit-last --body-file comment.md" in post["run"]
    assert post["run"].endswith('|| gh pr comment "$PR" --body-file comment.md')


@pytest.mark.parametrize("install", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_the_gitlab_job_runs_and_exits_with_the_gate_s_status(
    project: tuple[Path, str, str], tmp_path: Path, install: bool
) -> None:
    """The `script:` of the .gitlab-ci.yml job in docs/ci.md as one shell script, with the
    merge-request variables set; the note (curl) is not posted. ``install`` as for GitHub."""
    repo, base, head = project
    config = recipe("# .gitlab-ci.yml")
    job = config["diffgenome"]
    assert "merge_request_event" in job["rules"][0]["if"]
    assert job["variables"]["GIT_DEPTH"] == "0"
    script: list[str] = job["script"]
    post = [line for line in script if "curl" in line]
    assert len(post) == 1 and '"body@comment.md"' in post[0] and "[ -f comment.md ]" in post[0]
    run = [line for line in script if "curl" not in line]
    if install:
        run = [_install_script(line) if "pip install" in line else line for line in run]
        env = _installing(tmp_path / "venv")
    else:
        run = [line for line in run if "pip install" not in line]
        env = _diffgenome_on_path(tmp_path / "bin")
    env.update(
        CI_MERGE_REQUEST_DIFF_BASE_SHA=base,
        CI_COMMIT_SHA=head,
        CI_JOB_URL="https://gitlab.example/calc/-/jobs/1",
        CI_PROJECT_URL="https://gitlab.example/calc",
    )
    done = _bash("\n".join(run), repo, env)
    assert done.returncode == 1, done.stderr  # `exit $status`: the change fails the job
    text = _check_comment(repo / "comment.md", base, head)
    assert "[the whole report](https://gitlab.example/calc/-/jobs/1/artifacts/browse)" in text
    assert f"](https://gitlab.example/calc/-/blob/{head}/proj/calc/core.py#L" in text, text
    for path in job["artifacts"]["paths"]:
        assert (repo / path).exists(), path
    assert job["artifacts"]["when"] == "always"
