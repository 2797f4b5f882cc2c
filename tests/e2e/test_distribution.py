"""Distribution (#17): this project is ``pytest-diffgenome``; another project on PyPI is
called ``diffgenome`` and installs an import package (and command) of the same name.

The fast tests lay out a site folder as pip leaves it when both are installed there (our
package with the other's ``__init__.py`` over it, or without one after the other was
uninstalled, or intact beside the other's ``*.dist-info``) and check that the plugin and the
CLI say so in one line with what to do. The slow test builds the sdist and the wheel from a
clean clone, installs each into a fresh virtualenv, records and diffs the example project
with it (compiled core from the wheel, pure-Python core from the sdist without a compiler),
then installs a stand-in for the other project over it with pip, and back.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from e2e.helpers import BASE_ARGS, PROJECTS, REPO, STORE, GitRepo, clean_env, diffgenome_notices

PY_TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
PYTEST_ARGS = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "no:cacheprovider")
OTHER_INIT = '"""diffgenome: runtime evidence for code changes."""\n\n__version__ = "0.1.11"\n'
OTHER_MAIN = "def main():\n    print('the other diffgenome')\n    return 0\n"
TESTS = {"test_a.py": "def test_one():\n    assert 1 + 1 == 2\n"}


# -- a site folder as pip leaves it ---------------------------------------------------------


def _other_dist_info(site: Path, files: list[str]) -> None:
    """The ``*.dist-info`` pip writes for the other project (no top_level.txt: RECORD tells)."""
    info = site / "diffgenome-0.1.11.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: diffgenome\nVersion: 0.1.11\n")
    (info / "RECORD").write_text("".join(f"{name},,\n" for name in files))


def _site(tmp_path: Path, init: str | None, other_installed: bool) -> Path:
    """Our package in a site folder, its ``__init__.py`` replaced by ``init`` (None: gone)."""
    site = tmp_path / "site"
    shutil.copytree(
        REPO / "diffgenome",
        site / "diffgenome",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"),
    )
    if init is None:
        (site / "diffgenome" / "__init__.py").unlink()
    elif init != "ours":
        (site / "diffgenome" / "__init__.py").write_text(init)
    if other_installed:
        _other_dist_info(site, ["diffgenome/__init__.py", "diffgenome/__main__.py"])
    return site


def _run(site: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``args`` run with this interpreter, the site folder first on its path and no plugin
    autoloaded (the development install's entry point must not stand in for the folder's)."""
    env = clean_env({"PYTHONPATH": str(site), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    return subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _record(site: Path, project: Path) -> subprocess.CompletedProcess[str]:
    return _run(
        site, project, "-m", "pytest", *BASE_ARGS, "-p", "diffgenome.recording.plugin", "--genome"
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    for name, text in TESTS.items():
        (folder / name).write_text(text)
    return folder


def test_other_projects_init_over_ours_stops_recording_in_one_line(
    tmp_path: Path, project: Path
) -> None:
    """pip installed the other project after ours: its ``__init__.py`` replaced ours (and its
    ``diffgenome`` command ours). Recording would run under the other's version: it is off,
    said once, naming the other distribution and the two commands that repair it."""
    site = _site(tmp_path, OTHER_INIT, other_installed=True)
    done = _record(site, project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    notices = diffgenome_notices(done.stdout + done.stderr)
    assert notices == [
        "diffgenome: recording is off for this session: the `diffgenome` package imported from "
        f"{site / 'diffgenome'} is not pytest-diffgenome's: its __init__.py is diffgenome "
        "0.1.11, another project's, installed over ours under the same import name; "
        "`pip uninstall diffgenome`, then `pip install --force-reinstall pytest-diffgenome`"
    ]
    assert "recording with" not in done.stdout  # no recorder, no header
    assert not (project / STORE).exists()
    assert "Warning" not in done.stdout + done.stderr


def test_the_cli_refuses_to_run_under_another_projects_init(tmp_path: Path, project: Path) -> None:
    site = _site(tmp_path, OTHER_INIT, other_installed=True)
    done = _run(site, project, "-m", "diffgenome.analysis.cli", "runs")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "diffgenome: error: the `diffgenome` package imported from "
        f"{site / 'diffgenome'} is not pytest-diffgenome's: its __init__.py is diffgenome "
        "0.1.11, another project's"
    )
    assert lines[0].endswith("`pip install --force-reinstall pytest-diffgenome`")


def test_an_unknown_init_is_still_told_apart(tmp_path: Path, project: Path) -> None:
    """No metadata names the owner (files copied by hand): the marker alone tells."""
    site = _site(tmp_path, OTHER_INIT, other_installed=False)
    notices = diffgenome_notices(_record(site, project).stdout)
    assert notices == [
        "diffgenome: recording is off for this session: the `diffgenome` package imported from "
        f"{site / 'diffgenome'} is not pytest-diffgenome's: its __init__.py is another "
        "project's, installed over ours under the same import name; "
        "`pip install --force-reinstall pytest-diffgenome`"
    ]


def test_a_missing_init_is_said_before_the_recorder_fails_to_import(
    tmp_path: Path, project: Path
) -> None:
    """``pip uninstall diffgenome`` (the other project) removed the ``__init__.py`` both
    claimed: ``diffgenome`` became a namespace package, and the recorder's import of its
    version would fail with an INTERNALERROR."""
    site = _site(tmp_path, None, other_installed=False)
    done = _record(site, project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert diffgenome_notices(done.stdout) == [
        "diffgenome: recording is off for this session: the `diffgenome` package in "
        f"{site / 'diffgenome'} has no __init__.py (uninstalling another project that shares "
        "the name removes it); `pip install --force-reinstall pytest-diffgenome`"
    ]


def test_the_cli_says_a_missing_init_in_one_line(tmp_path: Path, project: Path) -> None:
    """The same layout, the command: one line and exit 2, never an ImportError of a module
    that reads the version from the missing ``__init__.py`` while the CLI is imported."""
    site = _site(tmp_path, None, other_installed=False)
    done = _run(site, project, "-m", "diffgenome.analysis.cli", "runs")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.splitlines() == [
        "diffgenome: error: the `diffgenome` package in "
        f"{site / 'diffgenome'} has no __init__.py (uninstalling another project that shares "
        "the name removes it); `pip install --force-reinstall pytest-diffgenome`"
    ]


def test_ours_installed_over_the_other_records_and_says_the_risk(
    tmp_path: Path, project: Path
) -> None:
    """Ours was installed last: everything is ours and recording goes on, but the next
    install or uninstall of the other project breaks it, so that is said once."""
    site = _site(tmp_path, "ours", other_installed=True)
    done = _record(site, project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "diffgenome: recording with" in done.stdout
    assert diffgenome_notices(done.stdout) == [
        f"diffgenome: diffgenome 0.1.11 (another project) also installs the `diffgenome` "
        f"package in {site}; whichever is installed last replaces the other's "
        "`diffgenome/__init__.py` and `diffgenome` command: `pip uninstall diffgenome`, then "
        "`pip install --force-reinstall pytest-diffgenome`"
    ]
    assert (project / STORE).is_dir()


def test_our_package_alone_says_nothing(tmp_path: Path, project: Path) -> None:
    site = _site(tmp_path, "ours", other_installed=False)
    done = _record(site, project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert diffgenome_notices(done.stdout + done.stderr) == []
    version = _run(site, project, "-m", "diffgenome.analysis.cli", "--version")
    assert (version.returncode, version.stdout, version.stderr) == (
        0,
        "pytest-diffgenome 0.1.0\n",
        "",
    )


# -- release artifacts, from a clean clone to a fresh virtualenv ----------------------------


def _sh(
    *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _shop(tmp_path: Path) -> Path:
    """The example project in two commits, as ``make demo`` builds it."""
    project = tmp_path / "shop"
    ignore = shutil.ignore_patterns("__pycache__", ".diffgenome", ".pytest_cache")
    shutil.copytree(PROJECTS / "shop", project, ignore=ignore)
    repo = GitRepo.init(project)
    repo.commit_all("shop")
    shutil.copytree(
        REPO / "experiments" / "demo" / "shop_v2", project, ignore=ignore, dirs_exist_ok=True
    )
    repo.commit_all("shop v2")
    return project


def _fresh_venv(folder: Path) -> tuple[Path, dict[str, str]]:
    """A new virtualenv (no system packages) and the environment that runs its commands."""
    venv.create(folder, with_pip=True, symlinks=os.name != "nt")
    bin_dir = folder / ("Scripts" if os.name == "nt" else "bin")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(folder)}
    env["COLUMNS"] = "200"
    return bin_dir, env


def _records_and_diffs(bin_dir: Path, env: dict[str, str], shop: Path, core: str) -> None:
    """``pytest --genome`` records the shop with ``core``; ``diffgenome diff`` compares its
    two commits (exit 1: behaviour changed) with the installed command."""
    store = shop.parent / f"store-{bin_dir.parent.name}"
    html = shop.parent / f"html-{bin_dir.parent.name}"
    recorded = _sh(
        bin_dir / "python",
        "-m",
        "pytest",
        *PYTEST_ARGS,
        "--genome",
        f"--genome-store={store}",
        cwd=shop,
        env=env,
    )
    assert recorded.returncode in (0, 1), recorded.stdout + recorded.stderr
    assert f"diffgenome: {core}" in recorded.stdout.splitlines()
    assert diffgenome_notices(recorded.stdout + recorded.stderr) == []
    runs = _ok(_sh(bin_dir / "diffgenome", "runs", "--store", store, cwd=shop, env=env))
    assert " complete " in runs and " 10 " in runs, runs  # one run of the 10 tests
    diffed = _sh(
        bin_dir / "diffgenome",
        "diff",
        "HEAD~1",
        "HEAD",
        "--store",
        shop / "diffs",
        "--html",
        html,
        "--",
        *PYTEST_ARGS,
        cwd=shop,
        env=env,
    )
    assert diffed.returncode == 1, diffed.stdout + diffed.stderr
    # The HTML report's assets are package data: the installed command finds them.
    assert (html / "assets" / "report.js").read_text().startswith("// diffgenome HTML report")
    assert "10 tests:" in (html / "index.html").read_text()
    assert diffed.stdout.startswith("diffgenome HEAD~1 ("), diffed.stdout
    assert "10 tests:" in diffed.stdout.splitlines()[0]
    assert "mock drift" in diffed.stdout


def _other_wheel(folder: Path) -> Path:
    """A stand-in for the other project's wheel: ``diffgenome/__init__.py`` and a
    ``diffgenome`` command of its own, as on PyPI (without the rest of its code)."""
    files = {
        "diffgenome/__init__.py": OTHER_INIT,
        "diffgenome/__main__.py": OTHER_MAIN,
        "diffgenome-0.1.11.dist-info/METADATA": (
            "Metadata-Version: 2.4\nName: diffgenome\nVersion: 0.1.11\n"
        ),
        "diffgenome-0.1.11.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        "diffgenome-0.1.11.dist-info/entry_points.txt": (
            "[console_scripts]\ndiffgenome = diffgenome.__main__:main\n"
        ),
    }
    record = ""
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record += f"{name},sha256={digest.decode()},{len(text.encode())}\n"
    record += "diffgenome-0.1.11.dist-info/RECORD,,\n"
    path = folder / "diffgenome-0.1.11-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in {**files, "diffgenome-0.1.11.dist-info/RECORD": record}.items():
            wheel.writestr(name, text)
    return path


@pytest.mark.slow
def test_sdist_and_wheel_from_a_clean_clone_install_record_and_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("build", reason="`build` (the test extra) makes the release artifacts")
    monkeypatch.chdir(tmp_path)  # not the repository: `python -m` would import its diffgenome
    clone, dist = tmp_path / "clone", tmp_path / "dist"
    GitRepo(REPO).clone(clone)
    _ok(_sh(sys.executable, "-m", "build", "--outdir", dist, clone))
    [sdist] = dist.glob("pytest_diffgenome-*.tar.gz")
    [wheel] = dist.glob("pytest_diffgenome-*.whl")
    # The wheel carries the compiled core for this interpreter, so it is tagged for it.
    assert wheel.name.startswith(f"pytest_diffgenome-0.1.0-{PY_TAG}-{PY_TAG}-")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert any(
        n.startswith("diffgenome/recording/collect/_accel.")
        for n in names
        if n.endswith((".so", ".pyd"))
    )
    assert "diffgenome/protocol/identity.py" in names
    assert "diffgenome/analysis/report/static/report.js" in names
    assert "diffgenome/analysis/report/static/style.css" in names
    shop = _shop(tmp_path)

    # The wheel: the compiled core.
    wheel_bin, wheel_env = _fresh_venv(tmp_path / "venv-wheel")
    _ok(_sh(wheel_bin / "python", "-m", "pip", "install", "-q", wheel, env=wheel_env))
    version = _ok(_sh(wheel_bin / "diffgenome", "--version", env=wheel_env))
    assert version == "pytest-diffgenome 0.1.0\n"
    _records_and_diffs(wheel_bin, wheel_env, shop, "recording with the compiled core")

    # What cibuildwheel runs on every wheel it builds, run on this one.
    checked = _sh(
        wheel_bin / "python", REPO / ".github" / "scripts" / "check_wheel.py", env=wheel_env
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("check_wheel: ok: pytest-diffgenome 0.1.0 in ")
    assert "venv-wheel" in checked.stdout

    # The sdist where no C compiler works: the optional extension is skipped, the pure-Python
    # core records. No pip cache, so no wheel built earlier with a compiler is reused.
    sdist_bin, sdist_env = _fresh_venv(tmp_path / "venv-sdist")
    installed = _sh(
        sdist_bin / "python",
        "-m",
        "pip",
        "install",
        "-q",
        "--no-cache-dir",
        sdist,
        env={**sdist_env, "CC": "/bin/false"},
    )
    _ok(installed)
    where = "import diffgenome; print(diffgenome.__path__[0])"
    site = Path(_ok(_sh(sdist_bin / "python", "-c", where, env=sdist_env)).strip())
    assert not list(site.rglob("_accel.*.so")) and not list(site.rglob("_accel.*.pyd"))
    _records_and_diffs(
        sdist_bin, sdist_env, shop, "recording with the pure-Python core (not-built)"
    )

    # The other project installed over ours by pip, then uninstalled, then ours reinstalled.
    pip = (wheel_bin / "python", "-m", "pip")
    record = (
        wheel_bin / "python",
        "-m",
        "pytest",
        *PYTEST_ARGS,
        "--genome",
        f"--genome-store={tmp_path / 's'}",
    )
    _ok(_sh(*pip, "install", "-q", "--no-deps", _other_wheel(tmp_path), env=wheel_env))
    over = _sh(*record, cwd=shop, env=wheel_env)
    [said] = diffgenome_notices(over.stdout + over.stderr)
    assert said.startswith(
        "diffgenome: recording is off for this session: the `diffgenome` package imported from "
    )
    assert "its __init__.py is diffgenome 0.1.11, another project's" in said
    assert said.endswith(
        "`pip uninstall diffgenome`, then `pip install --force-reinstall pytest-diffgenome`"
    )
    # What the plugin warns about: the command is the other project's now.
    other = _ok(_sh(wheel_bin / "diffgenome", "runs", env=wheel_env))
    assert other == "the other diffgenome\n"
    refused = _sh(wheel_bin / "python", "-m", "diffgenome.analysis.cli", "runs", env=wheel_env)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert refused.stderr.startswith("diffgenome: error: the `diffgenome` package imported")

    _ok(_sh(*pip, "uninstall", "-q", "-y", "diffgenome", env=wheel_env))
    gone = _sh(*record, cwd=shop, env=wheel_env)
    assert "INTERNALERROR" not in gone.stdout + gone.stderr
    [said] = diffgenome_notices(gone.stdout + gone.stderr)
    assert "has no __init__.py" in said and said.endswith(
        "`pip install --force-reinstall pytest-diffgenome`"
    )

    # The repair the notices name works (here from the built wheel rather than the index).
    _ok(_sh(*pip, "install", "-q", "--no-deps", "--force-reinstall", wheel, env=wheel_env))
    repaired = _sh(*record, cwd=shop, env=wheel_env)
    assert diffgenome_notices(repaired.stdout + repaired.stderr) == []
    assert "diffgenome: recording with the compiled core" in repaired.stdout.splitlines()
    version = _ok(_sh(wheel_bin / "diffgenome", "--version", env=wheel_env))
    assert version == "pytest-diffgenome 0.1.0\n"


# -- the binary wheel configuration ---------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "archs", "expected"),
    [
        ("linux", "x86_64", "cp3{}-manylinux_x86_64 cp3{}-musllinux_x86_64"),
        ("linux", "aarch64", "cp3{}-manylinux_aarch64 cp3{}-musllinux_aarch64"),
        ("macos", None, "cp3{}-macosx_x86_64 cp3{}-macosx_arm64"),
        ("windows", None, "cp3{}-win_amd64"),
    ],
)
def test_cibuildwheel_builds_312_and_313_on_each_system(
    platform: str, archs: str | None, expected: str
) -> None:
    """[tool.cibuildwheel] selects exactly CPython 3.12 and 3.13 wheels for the runners of
    .github/workflows/wheels.yml (Linux x86_64 and aarch64, macOS, Windows)."""
    pytest.importorskip("cibuildwheel", reason="cibuildwheel (the test extra) reads the config")
    command = [sys.executable, "-m", "cibuildwheel", "--platform", platform]
    command += ["--archs", archs] if archs else []
    done = _sh(*command, "--print-build-identifiers", REPO, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    wanted = {name.format(minor) for minor in (12, 13) for name in expected.split()}
    assert set(done.stdout.split()) == wanted


def test_the_workflow_builds_with_the_configuration_it_names() -> None:
    """The workflow runs cibuildwheel on each of its runners, with the check the config names,
    and publishes under the distribution name."""
    workflow = (REPO / ".github" / "workflows" / "wheels.yml").read_text()
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert config["project"]["name"] == "pytest-diffgenome"
    assert config["tool"]["cibuildwheel"]["test-command"] == (
        "python {project}/.github/scripts/check_wheel.py"
    )
    assert (REPO / ".github" / "scripts" / "check_wheel.py").is_file()
    for runner in ("ubuntu-latest", "ubuntu-24.04-arm", "macos-14", "windows-latest"):
        assert runner in workflow
    assert "uses: pypa/cibuildwheel@v" in workflow
    assert "https://pypi.org/project/pytest-diffgenome/" in workflow
