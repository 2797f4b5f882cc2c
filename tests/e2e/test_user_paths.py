"""End-to-end: every path the user types is read from where the user is (#25 point 1).

A monorepo (``top/proj``, two commits) worked on from a subfolder of the project
(``top/proj/tests``), as a reviewer would: ``--python`` names a symlink to an interpreter (a
virtual environment's ``python`` is one) by a relative path, and so do ``--store``, ``--repo``,
``--json``, ``--markdown``, ``--html``, ``-o``, ``combine``'s inputs and ``pytest --genome
--genome-key-file``. Each must be read from the current folder, as git and pytest read their
paths, whatever folder the recording runs in (a disposable worktree) or a conftest moves to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.helpers import (
    PY,
    clean_env,
    git_in,
    make_project,
    run_pytest,
    write_files,
)

pytestmark = pytest.mark.slow

SHOP = {
    "proj/pyproject.toml": """
        [tool.pytest.ini_options]
        testpaths = ["tests"]
    """,
    "proj/shop/__init__.py": "",
    "proj/shop/pricing.py": """
        def price(amount):
            if amount > 100:
                return amount - 5
            return amount
    """,
    "proj/tests/test_pricing.py": """
        from shop import pricing


        def test_price():
            assert pricing.price(200) > 0


        def test_small():
            assert pricing.price(5) == 5
    """,
    ".gitignore": "__pycache__/\n.venv/\n",
}


def run_here(
    where: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=where,
        env=clean_env({"TMPDIR": str(where.parents[2]), **(env or {})}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def diffgenome(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_here(where, PY, "-m", "diffgenome.analysis.cli", *args)


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    top = make_project(tmp_path, SHOP, name="top")
    write_files(top, {"proj/shop/pricing.py": SHOP["proj/shop/pricing.py"].replace("5", "7")})
    git_in(top, "add", "-A")
    git_in(top, "commit", "-qm", "change")
    # A virtual environment of the project, whose ``bin/python`` is a symlink to the base
    # interpreter (resolved, it would be an interpreter without pytest); its packages are
    # this environment's, through a .pth file.
    venv = top / "proj" / ".venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True)
    assert (venv / "bin" / "python").is_symlink()
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "outer.pth").write_text("".join(f"{path}\n" for path in sys.path if path))
    return top


def test_every_path_of_diff_is_read_from_the_current_folder(monorepo: Path) -> None:
    here = monorepo / "proj" / "tests"
    (here / "out").mkdir()
    done = diffgenome(
        here,
        *("diff", "HEAD~1", "HEAD", "--no-confirm", "-q"),
        *("--python", "../.venv/bin/python", "--repo", ".."),
        *("--store", "../../stores/s", "--json", "out/diff.json", "--markdown", "comment.md"),
        *("--html", "site"),
        *("--", "-p", "no:randomly"),
    )
    assert done.returncode == 1, done.stderr
    assert (monorepo / "stores" / "s" / "genome.sqlite").is_file()
    document = json.loads((here / "out" / "diff.json").read_text())
    assert document["summary"]["changed"] == 1
    assert (here / "comment.md").read_text().startswith("### diffgenome")
    assert (here / "site" / "index.html").is_file()
    # The run the diff recorded names the interpreter as given, symlink and all.
    store = ("--store", "../../stores/s")
    shown = diffgenome(here, "show", "latest", *store, "--html", "shown")
    assert shown.returncode == 0, shown.stderr
    assert (here / "shown" / "index.html").is_file()
    listed = diffgenome(here, "runs", *store, "--json", "runs.json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads((here / "runs.json").read_text())) == 2
    exported = diffgenome(here, "export", "latest", *store, "-o", "run.json")
    assert exported.returncode == 0, exported.stderr
    run_id = json.loads((here / "run.json").read_text())["run"]["id"]
    combined = diffgenome(here, "combine", "run.json", "-o", "../../combined", "--expect", "1")
    assert combined.returncode == 0, combined.stderr
    assert (monorepo / "combined" / "genome.sqlite").is_file()
    assert run_id not in combined.stdout  # a new run of its own


def test_a_relative_key_file_is_read_from_where_pytest_was_started(monorepo: Path) -> None:
    """A conftest that moves to another folder (some projects chdir to their data) does not
    change which key file ``--genome-key-file=../ci.key`` names."""
    proj = monorepo / "proj"
    write_files(
        proj,
        {"conftest.py": "import os\n\nos.chdir(os.path.dirname(os.path.dirname(__file__)))\n"},
    )
    key = proj / "ci.key"
    key.write_bytes(os.urandom(32))
    here = proj / "tests"
    done = run_pytest(here, "--genome", "--genome-key-file=../ci.key", "--genome-store=../s")
    assert done.returncode == 0, done.stdout + done.stderr
    exported = diffgenome(here, "export", "latest", "--store", "../s")
    fingerprint = json.loads(exported.stdout)["run"]["key_fingerprint"]
    from diffgenome.store.key import key_fingerprint

    assert fingerprint == key_fingerprint(key.read_bytes())


def test_a_project_installed_editable_is_diffed_from_its_tests_folder(tmp_path: Path) -> None:
    """The most common set-up: the project at the repository's top, installed editable into
    its virtual environment (a ``.pth`` line naming the checkout, as setuptools writes), the
    reviewer in ``tests/``. Each side must import its own revision's modules: with the folder
    the user stands in first on ``PYTHONPATH``, the install won and every test was
    ``unverified`` (``foreign-module:shop=<checkout>``)."""
    files = {name.removeprefix("proj/"): text for name, text in SHOP.items()}
    top = make_project(tmp_path, files, name="top")
    write_files(top, {"shop/pricing.py": files["shop/pricing.py"].replace("5", "7")})
    git_in(top, "add", "-A")
    git_in(top, "commit", "-qm", "change")
    venv = top / ".venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "outer.pth").write_text("".join(f"{path}\n" for path in sys.path if path))
    (site / "__editable__.shop.pth").write_text(f"{top}\n")
    here = top / "tests"
    done = diffgenome(
        here,
        *("diff", "HEAD~1", "HEAD", "--no-confirm", "--json", "diff.json"),
        *("--python", "../.venv/bin/python", "--", "-p", "no:randomly"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "foreign-module" not in done.stdout, done.stdout
    summary = json.loads((here / "diff.json").read_text())["summary"]
    assert summary["changed"] == 1 and summary["unverified"] == 0, summary


def test_a_folder_without_tests_is_named_as_the_cause(monorepo: Path) -> None:
    """From a package's folder pytest collects nothing (``testpaths`` counts only from the
    rootdir), and neither does the diff, which records from where the user stands: the one
    line says so and what to do, where it said only "check the pytest arguments"."""
    here = monorepo / "proj" / "shop"
    done = diffgenome(here, "diff", "HEAD~1", "HEAD", "--python", "../.venv/bin/python")
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = [line for line in done.stderr.splitlines() if "error:" in line]
    assert "started in proj/shop/ as from here" in line, line
    assert "run diffgenome from the folder you run pytest from" in line, line
    assert "Traceback" not in done.stderr
    # The empty recording is not kept: it was a complete run of HEAD~1 that `latest` named.
    listed = diffgenome(here, "runs", "--json", "-")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [], listed.stdout
