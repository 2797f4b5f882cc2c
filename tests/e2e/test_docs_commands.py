"""End-to-end: every command of README.md and docs/ci.md, run verbatim (#25, "done when").

The ```sh blocks of both files are read as written; each ``diffgenome`` and ``pytest`` line is
run by bash, in order, from a project that is a subfolder of its git repository (``top/proj``,
a monorepo, where the store is at the git top), with ``diffgenome`` and ``pytest`` on PATH as
an installed diffgenome puts them there. Only what cannot run here is skipped (installing,
cloning, building, ``make``); what a CI system does between the lines (upload a shard's store,
download it into ``shard-N/``) the test does, and says so. A command the docs gain is run by
this test without a change to it; one that fails fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.helpers import ALL_PLUGINS, PY, REPO, clean_env, git_in, make_project, write_files

# The documentation's commands as a user runs them: pytest finds every plugin by itself.
pytestmark = [pytest.mark.slow, ALL_PLUGINS]

#: Lines of the ```sh blocks that install or build, which this test does not run.
NOT_RUN = ("make ", "pip ", "pipx ", "git clone", "python -m build", "uv ", "python -m venv ~/")
# The isolated install's own lines are run as written by tests/e2e/test_distribution.py; here
# its diff runs with the diffgenome this test installed, from the subfolder.
ISOLATED = "~/.diffgenome/bin/"

CART = """
    def total(items):
        return sum(price for _, price in items)


    def checkout(items):
        if not items:
            raise ValueError("empty cart")
        return {"total": total(items), "lines": len(items)}
"""
FILES = {
    "proj/pyproject.toml": """
        [tool.pytest.ini_options]
        testpaths = ["tests"]
        pythonpath = ["."]
        markers = ["slow: a slow test"]
    """,
    "proj/shopx/__init__.py": "",
    "proj/shopx/cart.py": CART,
    "proj/tests/test_x.py": """
        from shopx import cart


        def test_y():
            assert cart.total([("a", 2), ("b", 3)]) == 5
    """,
    "proj/tests/test_checkout.py": """
        import pytest

        from shopx import cart


        def test_checkout():
            assert cart.checkout([("a", 2)])["total"] == 2


        def test_checkout_empty():
            with pytest.raises(ValueError):
                cart.checkout([])


        @pytest.mark.slow
        def test_total_of_many():
            assert cart.total([("x", 1)] * 100) == 100
    """,
    ".gitignore": "__pycache__/\n.venv/\n",
}
#: The feature branch: checkout reports the count of items, not of lines.
CART_FEATURE = CART.replace('"lines": len(items)', '"items": sum(1 for _ in items)')
#: Each shard's slice, as a CI matrix would give it (-k "$SLICE").
SLICES = {1: "test_y", 2: "test_checkout and not empty", 3: "empty or many"}


def sh_commands(doc: Path) -> list[str]:
    """The command lines of the ```sh blocks of ``doc``, comments removed, in order."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", doc.read_text(), re.MULTILINE | re.DOTALL)
    out = []
    for block in blocks:
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#") and not line.startswith(NOT_RUN):
                out.append(line)
    return out


def monorepo(tmp_path: Path) -> Path:
    """``top/proj`` on a feature branch one commit ahead of ``main``, with a virtual
    environment ``proj/.venv`` (its python a symlink, its packages this environment's)."""
    top = make_project(tmp_path, FILES, name="top")
    git_in(top, "branch", "-M", "main")
    git_in(top, "checkout", "-q", "-b", "feature")
    write_files(top, {"proj/shopx/cart.py": CART_FEATURE})
    git_in(top, "commit", "-qam", "count items")
    venv = top / "proj" / ".venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "outer.pth").write_text("".join(f"{path}\n" for path in sys.path if path))
    return top / "proj"


def installed(tmp_path: Path) -> dict[str, str]:
    """An environment with ``diffgenome`` and ``pytest`` on PATH, this checkout's, as
    ``pip install pytest-diffgenome`` would put them there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, module in (("diffgenome", "diffgenome.analysis.cli"), ("pytest", "pytest")):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(PY)} -m {module} "$@"\n')
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = clean_env({"TMPDIR": str(tmp_path), "COLUMNS": "120", "PYTHONHASHSEED": "0"})
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def bash(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def expected_status(command: str) -> int:
    """A diff of the feature branch finds the change (1); everything else succeeds."""
    return 1 if command.startswith("diffgenome diff ") else 0


def record_shard(proj: Path, env: dict[str, str], index: int, key: str) -> None:
    """What a CI job of the shard matrix does beyond the documented line: run in its own
    checkout (here: the store moved away after each job) and upload its store."""
    store = proj.parent / ".diffgenome"
    shard = bash(
        f"pytest --genome --genome-key-file={key} --genome-shard={index}/3 "
        f"-k {shlex.quote(SLICES[index])}",
        proj,
        env,
    )
    assert shard.returncode == 0, shard.stdout + shard.stderr
    shutil.move(store, proj / f"shard-{index}" / ".diffgenome")


def test_every_command_of_the_readme_runs_from_a_subfolder(tmp_path: Path) -> None:
    proj = monorepo(tmp_path)
    env = installed(tmp_path)
    commands = [c.removeprefix(ISOLATED) for c in sh_commands(REPO / "README.md")]
    assert any(
        c.startswith("diffgenome diff main HEAD --python .venv/bin/python") for c in commands
    )
    ran = []
    for command in commands:
        if command.startswith("diffgenome combine shard-1/.diffgenome"):
            # The shards' jobs ran elsewhere; their stores were downloaded here. The
            # documented shard line ran as job 2 (below), into the project's own store.
            saved = proj.parent / ".diffgenome"
            shutil.move(saved, tmp_path / "own-store")
            for index in (1, 2, 3):
                record_shard(proj, env, index, "ci.key")
            shutil.move(tmp_path / "own-store", saved)
        run_env = {**env, "SLICE": SLICES[2]}
        done = bash(command, proj, run_env)
        assert done.returncode == expected_status(command), (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (command, done.stderr)
        ran.append(command)
        if command.startswith("diffgenome show latest tests/test_x.py::test_y"):
            assert "py:shopx.cart.total" in done.stdout
        if command.startswith("diffgenome combine"):
            assert ": complete, 4 tests" in done.stdout, done.stdout
        if command.startswith("diffgenome diff main HEAD --test test_checkout"):
            assert "proj/tests/test_checkout.py::test_checkout  changed" in done.stdout
    assert (proj / "run.json").is_file() and (proj / "tests.jsonl").is_file()
    assert json.loads((proj / "diff.json").read_text())["summary"]["changed"] >= 1
    assert (proj / "comment.md").is_file() and (proj / "report" / "index.html").is_file()
    assert (proj / "combined" / "genome.sqlite").is_file()
    assert len(ran) >= 15, ran


def test_every_command_of_the_ci_guide_runs_from_a_subfolder(tmp_path: Path) -> None:
    """docs/ci.md's sharded recipe (its YAML recipes: tests/e2e/test_ci_recipes.py)."""
    proj = monorepo(tmp_path)
    env = installed(tmp_path)
    commands = sh_commands(REPO / "docs" / "ci.md")
    assert commands[0] == "diffgenome key new ci.key"
    for command in commands:
        if command.startswith("pytest --genome"):
            # The matrix: every job runs the line with its own SHARD and SLICE, and uploads
            # its store as the artifact shard-$SHARD.
            for index in (1, 2, 3):
                job = {**env, "KEY": "ci.key", "SHARD": str(index), "SLICE": SLICES[index]}
                done = bash(command, proj, job)
                assert done.returncode == 0, (command, done.stdout, done.stderr)
                shutil.move(proj.parent / ".diffgenome", proj / f"shard-{index}" / ".diffgenome")
            continue
        done = bash(command, proj, env)
        assert done.returncode == expected_status(command), (command, done.stdout, done.stderr)
        if command.startswith("diffgenome combine"):
            assert ": complete, 4 tests" in done.stdout, done.stdout
    document = json.loads((proj / "genome.json").read_text())
    assert document["run"]["complete"] is True
    assert len([t for t in document["tests"] if t["id"] != "<import>"]) == 4


def test_a_missing_key_file_says_how_to_make_one(tmp_path: Path) -> None:
    proj = monorepo(tmp_path)
    env = installed(tmp_path)
    refused = bash("pytest --genome --genome-key-file=ci.key", proj, env)
    assert refused.returncode == 4
    [line] = [x for x in refused.stderr.splitlines() if "diffgenome" in x]
    assert f"make one with `diffgenome key new {proj / 'ci.key'}`" in line, line
    made = bash("diffgenome key new ci.key", proj, env)
    assert made.returncode == 0, made.stderr
    assert stat.S_IMODE((proj / "ci.key").stat().st_mode) == 0o600
    assert len((proj / "ci.key").read_bytes()) == 32
    again = bash("diffgenome key new ci.key", proj, env)
    assert again.returncode == 2 and "never overwritten" in again.stderr
    assert bash("pytest --genome --genome-key-file=ci.key", proj, env).returncode == 0
