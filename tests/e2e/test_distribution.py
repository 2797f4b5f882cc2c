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
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from e2e.helpers import (
    ALL_PLUGINS,
    BASE_ARGS,
    PROJECTS,
    REPO,
    STORE,
    GitRepo,
    clean_env,
    diffgenome_notices,
)

# Fresh virtualenvs, doctor and pytest loading the recorder by itself: every plugin, as a user's.
pytestmark = ALL_PLUGINS

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


def test_doctor_says_what_records_and_exits_1_on_the_slow_core(tmp_path: Path) -> None:
    """``diffgenome doctor``: the core (asked of the recording side, as pytest imports it),
    the interpreter, the plugin's registration, the store and its key; exit 1 with the reason
    when the pure-Python core would record."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "test_a.py").write_text(TESTS["test_a.py"])
    command = [sys.executable, "-m", "diffgenome.analysis.cli", "doctor"]
    before = _sh(*command, cwd=project)
    assert before.returncode == 0, before.stdout + before.stderr
    lines = before.stdout.splitlines()
    assert lines[0] == "diffgenome doctor"
    fields = {line[2:14].strip(): line[15:] for line in lines[1:]}
    assert list(fields) == ["distribution", "interpreter", "core", "plugin", "store", "key"]
    assert fields["distribution"].startswith("pytest-diffgenome 0.1.0 in ")
    assert fields["interpreter"] == f"CPython {platform.python_version()} at {sys.executable}"
    assert re.fullmatch(r"compiled \(_accel\..+, from sources [0-9a-f]{12}\)", fields["core"])
    assert fields["plugin"] == "registered: pytest loads it by itself (pytest11 `diffgenome`)"
    assert fields["store"].startswith(f"{project / STORE}: not there yet")
    recorded = _sh(sys.executable, "-m", "pytest", *BASE_ARGS, "--genome", cwd=project)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr

    slow = _sh(*command, cwd=project, env={"DIFFGENOME_CORE": "python"})
    assert slow.returncode == 1, slow.stdout + slow.stderr
    fields = {line[2:14].strip(): line[15:] for line in slow.stdout.splitlines()[1:]}
    assert fields["core"] == "pure-Python, slower (the same genomes): DIFFGENOME_CORE=python"
    assert fields["store"] == f"{project / STORE}: 1 run"
    assert re.fullmatch(rf"hmac-sha256:[0-9a-f]{{16}} \({project / STORE / 'secret.key'}\)",
                        fields["key"])  # fmt: skip

    # --python as README writes it, relative to here: what a diff would record with there.
    relative = os.path.relpath(sys.executable, project)
    target = _sh(*command, "--python", relative, cwd=project)
    assert target.returncode == 0, target.stdout + target.stderr
    fields = {line[2:14].strip(): line[15:] for line in target.stdout.splitlines()[1:]}
    where = os.path.abspath(os.path.join(project, relative))
    assert fields["--python"] == (
        f"CPython {platform.python_version()} at {where} (pytest loads the plugin by itself)"
    )
    assert fields["its core"].startswith("compiled (_accel.")


# -- release artifacts, from a clean clone to a fresh virtualenv ----------------------------


def _sh(
    *args: str | Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
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
    assert " complete " in runs and " 9 " in runs, runs  # one run of the 9 tests (pytest's count)
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
    assert "9 tests:" in (html / "index.html").read_text()  # as pytest counts them
    assert diffed.stdout.startswith("diffgenome HEAD~1 ("), diffed.stdout
    assert "9 tests:" in diffed.stdout.splitlines()[0]
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


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel ``python -m build`` makes from a clean clone (what the release
    workflow builds from its checkout), once for the module."""
    pytest.importorskip("build", reason="`build` (the dev group) makes the release artifacts")
    if not (REPO / ".git").exists():
        pytest.skip("the release artifacts are built from a git clone; this tree is none")
    folder = tmp_path_factory.mktemp("artifacts")
    clone, dist = folder / "clone", folder / "dist"
    GitRepo(REPO).clone(clone)
    # Not from the repository: `python -m` would put its diffgenome on the path.
    _ok(_sh(sys.executable, "-m", "build", "--outdir", dist, clone, cwd=folder))
    [sdist] = dist.glob("pytest_diffgenome-*.tar.gz")
    [wheel] = dist.glob("pytest_diffgenome-*.whl")
    return sdist, wheel


@pytest.mark.slow
def test_sdist_and_wheel_from_a_clean_clone_install_record_and_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, artifacts: tuple[Path, Path]
) -> None:
    monkeypatch.chdir(tmp_path)  # not the repository: `python -m` would import its diffgenome
    sdist, wheel = artifacts
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
        sdist_bin,
        sdist_env,
        shop,
        "recording with the pure-Python core (not-built: this installation has no compiled "
        "core (pip leaves it out when no C compiler works at install time))",
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
    # The repair reinstalls from where pip installed ours (PEP 610): here the wheel's file.
    assert said.endswith(
        f"`pip uninstall diffgenome`, then `pip install --force-reinstall {wheel}`"
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
    assert "has no __init__.py" in said
    [repair] = re.findall(r"`(pip install [^`]*)`$", said)
    assert repair == f"pip install --force-reinstall {wheel}"
    # The command says the same in one line (it crashed on an ImportError while importing).
    refused = _sh(wheel_bin / "python", "-m", "diffgenome.analysis.cli", "runs", env=wheel_env)
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
    finding = said.removeprefix("diffgenome: recording is off for this session: ")
    assert refused.stderr.splitlines() == [f"diffgenome: error: {finding}"]

    # The repair the notices name, run as it is written (with this venv's pip).
    _ok(_sh(wheel_bin / "python", "-m", *shlex.split(repair), "--no-deps", env=wheel_env))
    repaired = _sh(*record, cwd=shop, env=wheel_env)
    assert diffgenome_notices(repaired.stdout + repaired.stderr) == []
    assert "diffgenome: recording with the compiled core" in repaired.stdout.splitlines()
    version = _ok(_sh(wheel_bin / "diffgenome", "--version", env=wheel_env))
    assert version == "pytest-diffgenome 0.1.0\n"


def _metadata(text: str) -> dict[str, list[str]]:
    """The header fields of a METADATA or PKG-INFO file, each with all its values."""
    fields: dict[str, list[str]] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        name, _, value = line.partition(": ")
        fields.setdefault(name, []).append(value)
    return fields


@pytest.mark.slow
def test_the_artifacts_carry_what_a_packager_checks(artifacts: tuple[Path, Path]) -> None:
    """The license in both, the C sources and tests only in the sdist, a stripped core that
    names its sources, and the metadata an index shows (classifiers, URLs, dependencies)."""
    sdist, wheel = artifacts
    license_text = (REPO / "LICENSE").read_text()
    assert license_text.startswith("MIT License\n")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = "pytest_diffgenome-0.1.0.dist-info"
        assert archive.read(f"{info}/licenses/LICENSE").decode() == license_text
        metadata = _metadata(archive.read(f"{info}/METADATA").decode())
        [core] = [n for n in names if n.startswith("diffgenome/recording/collect/_accel.")
                  and n.endswith((".so", ".pyd"))]  # fmt: skip
        core_bytes = archive.read(core)
    assert not [n for n in names if n.endswith((".c", ".h"))], "C sources in the wheel"
    assert not [n for n in names if n.startswith(("tests/", "docs/", "experiments/"))]
    assert "diffgenome/recording/collect/_accel.pyi" in names
    assert "diffgenome/py.typed" in names
    if sys.platform.startswith("linux"):
        # Stripped: no symbol table, no debug information (315 KB unstripped, 65 KB here).
        assert core_bytes.startswith(b"\x7fELF")
        assert b".symtab" not in core_bytes and b".debug_info" not in core_bytes
    # The core names the sources it was built from, as the analysis side computes it.
    from diffgenome.analysis.record.core import SOURCE_PREFIX, source_digest

    digest = source_digest(REPO / "diffgenome" / "recording" / "collect")
    assert SOURCE_PREFIX + (digest or "?").encode() in core_bytes

    assert metadata["Name"] == ["pytest-diffgenome"]
    assert metadata["License-Expression"] == ["MIT"]
    assert metadata["License-File"] == ["LICENSE"]
    assert metadata["Author"] == ["the diffgenome maintainers"]
    assert metadata["Requires-Python"] == [">=3.12"]
    classifiers = set(metadata["Classifier"])
    assert {
        "Framework :: Pytest",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Programming Language :: Python :: Implementation :: CPython",
        "Operating System :: POSIX :: Linux",
        "Operating System :: MacOS",
        "Operating System :: Microsoft :: Windows",
        "Typing :: Typed",
    } <= classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # PEP 639: the expression
    assert "Programming Language :: Python :: 3.14" not in classifiers  # not tested yet
    urls = dict(url.split(", ", 1) for url in metadata["Project-URL"])
    assert urls["Homepage"] == "https://pypi.org/project/pytest-diffgenome/"
    requires = metadata["Requires-Dist"]
    assert [r for r in requires if "extra ==" not in r] == [
        "pytest>=7.4",
        "pydantic>=2.5",
        "rich>=13",
    ]
    extras = {r.split(";")[0].split(">")[0].split("=")[0].strip() for r in requires if "extra" in r}
    assert {"hypothesis", "pytest-xdist", "jsonschema"} <= extras
    assert not extras & {"build", "cibuildwheel", "ruff", "mypy"}  # the dev group's
    assert metadata["Provides-Extra"] == ["test"]

    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
        pkg_info = _metadata(archive.extractfile(f"{sdist.name[:-7]}/PKG-INFO").read().decode())
    for needed in (
        "LICENSE",
        "CHANGELOG.md",
        "README.md",
        "setup.py",
        "MANIFEST.in",
        "Makefile",
        "docs/schema/diffgenome-genome-2.schema.json",
        "docs/schema/diffgenome-diff-3.schema.json",
        "diffgenome/recording/collect/_accel.c",
        "diffgenome/recording/collect/_accel.h",
        "diffgenome/recording/collect/_accel_values.c",
        "tests/conftest.py",
        "tests/unit/test_architecture.py",
        "tests/e2e/test_distribution.py",
        "tests/projects/shop/shop/pricing.py",
        "experiments/demo/shop_v2/shop/pricing.py",
        ".github/scripts/check_wheel.py",
    ):
        assert needed in members, needed
    assert not [m for m in members if m.endswith((".so", ".pyd", ".pyc"))]
    assert not [m for m in members if m.startswith(("experiments/results/", ".git/"))]
    assert pkg_info["License-Expression"] == ["MIT"]
    assert pkg_info["Classifier"] == metadata["Classifier"]


# The unit files that only exercise logic on values the tests make themselves (property,
# fuzz and CLI-matrix tests: a third of the unit layer's time). From the sdist they are
# collected, not run: the main suite runs them from the checkout on every Python.
_LOGIC_ONLY_UNIT_FILES = (
    "test_cli.py",
    "test_core_values.py",
    "test_diff_property.py",
    "test_pytest_output.py",
    "test_fuzz_readers.py",
    "test_values.py",
)


@pytest.mark.slow
def test_the_unit_tests_pass_from_the_unpacked_sdist(
    tmp_path: Path, artifacts: tuple[Path, Path]
) -> None:
    """What a distribution does with the sdist: unpack it, install it with its test extra
    (the compiled core built in place) and run its tests there. Every unit test is
    collected (each module, fixture and data file it imports is in the sdist); all but the
    logic-only files run (the end-to-end layer would take this machine most of an hour more)."""
    sdist, _ = artifacts
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    tree = tmp_path / sdist.name[: -len(".tar.gz")]
    bin_dir, env = _fresh_venv(tmp_path / "venv-tests")
    _ok(_sh(bin_dir / "python", "-m", "pip", "install", "-q", "-e", f"{tree}[test]", env=env))
    pytest = [bin_dir / "python", "-m", "pytest", "-q", "-p", "no:randomly"]
    collected = _sh(*pytest, "--collect-only", "tests/unit", cwd=tree, env=env, timeout=600)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-2000:]
    count = re.search(r"^(\d+) tests? collected", collected.stdout, re.M)
    assert count and int(count.group(1)) > 500, collected.stdout[-500:]
    for name in _LOGIC_ONLY_UNIT_FILES:
        assert (tree / "tests" / "unit" / name).is_file(), name
    ignored = [f"--ignore=tests/unit/{name}" for name in _LOGIC_ONLY_UNIT_FILES]
    # A few minutes on a loaded 2-core machine: the timeout only stops a hung run.
    done = _sh(*pytest, *ignored, "tests/unit", cwd=tree, env=env, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"^\d+ passed", done.stdout.splitlines()[-1]), done.stdout[-500:]
    assert " failed" not in done.stdout.splitlines()[-1]


def _other_python() -> str | None:
    """A CPython >= 3.12 of another minor version than this one (scripts/find-python)."""
    found = _sh("sh", REPO / "scripts" / "find-python", "--all")
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in found.stdout.split():
        version = _sh(python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
        if version.returncode == 0 and version.stdout.strip() != mine:
            return python
    return None


def _project_venv(folder: Path, python: str) -> tuple[Path, dict[str, str]]:
    """A virtualenv of ``python`` with pytest and nothing of diffgenome: the project's."""
    _ok(_sh(python, "-m", "venv", folder))
    bin_dir = folder / "bin"
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    _ok(_sh(bin_dir / "python", "-m", "pip", "install", "-q", "pytest", env=env))
    return bin_dir, env


def _diff_with(command: Path, shop: Path, python: Path, env: dict[str, str], store: Path
               ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``diffgenome diff`` of the shop's two commits, recorded with ``python``; the JSON
    report beside the store."""
    return _sh(command, "diff", "HEAD~1", "HEAD", "--python", python, "--store", store,
               "--json", f"{store}.json", "--", *PYTEST_ARGS, cwd=shop, env=env)  # fmt: skip


def _recorded_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("diffgenome: recorded ")]


@pytest.mark.slow
def test_an_isolated_install_records_another_python_s_project_and_says_with_which_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, artifacts: tuple[Path, Path]
) -> None:
    """pipx-style: the wheel in a virtualenv of its own on this Python, the project on
    another. The wheel carries no C sources and the target has no diffgenome, so nothing can
    give the copied recorder a core for that Python: both sides record with the pure-Python
    core, and the progress and the report say so, with the command that fixes it. Run as
    written, that command installs pytest-diffgenome (its sdist, built with the compiler
    there) into the project's environment; the next diff finds its core there (the same
    sources) and records both sides with the compiled core."""
    other = _other_python()
    if other is None:
        pytest.skip("needs a CPython >= 3.12 of another minor version (scripts/find-python)")
    monkeypatch.chdir(tmp_path)
    _, wheel = artifacts
    tool_bin, tool_env = _fresh_venv(tmp_path / "tool")
    _ok(_sh(tool_bin / "python", "-m", "pip", "install", "-q", wheel, env=tool_env))
    project_bin, _ = _project_venv(tmp_path / "project-venv", other)
    version = _ok(_sh(project_bin / "python", "-c", "import platform; "
                      "print(platform.python_version())")).strip()  # fmt: skip
    shop = _shop(tmp_path)
    env = {**tool_env, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    slow = _diff_with(tool_bin / "diffgenome", shop, project_bin / "python", env, tmp_path / "s1")
    assert slow.returncode == 1, slow.stdout + slow.stderr
    recorded = _recorded_lines(slow.stderr)
    assert len(recorded) >= 2, slow.stderr
    assert all("with the pure-Python core (other-interpreter)" in line for line in recorded)
    notes = [line for line in slow.stdout.splitlines() if line.startswith("note: ")]
    [note] = [line for line in notes if "pure-Python core" in line]
    assert note.startswith("note: base (HEAD~1, ")
    assert ") and head (HEAD, " in note  # one note: both sides have the same reason
    assert (
        "recorded with the pure-Python core (slower, the same genomes): other-interpreter: "
        f"this diffgenome's compiled core is built for CPython {platform.python_version()} "
        f"only, and none for CPython {version} from the same sources was found"
    ) in note
    [fix] = re.findall(r"`([^`]*)`$", note)
    sdist = wheel.parent / "pytest_diffgenome-0.1.0.tar.gz"
    assert fix == f"{project_bin / 'python'} -m pip install {sdist}"
    sides = json.loads((tmp_path / "s1.json").read_text())
    for side in (sides["base"], sides["head"]):
        assert side["core"] == "python"
        assert side["core_reason"].startswith("other-interpreter: ")
        assert side["core_reason"].endswith(f"`{fix}`")

    # The fix, as the note writes it.
    _ok(_sh(*shlex.split(fix), "-q", env=env))
    fast = _diff_with(tool_bin / "diffgenome", shop, project_bin / "python", env, tmp_path / "s2")
    assert fast.returncode == 1, fast.stdout + fast.stderr
    recorded = _recorded_lines(fast.stderr)
    assert len(recorded) >= 2 and all("with the compiled core in" in r for r in recorded)
    assert "pure-Python" not in fast.stdout + fast.stderr
    assert "diffgenome: built " not in fast.stderr  # found in that environment, not built


@pytest.mark.slow
def test_a_source_install_builds_the_core_for_another_python_once(tmp_path: Path) -> None:
    """This development install has the C sources: for a project on another Python, diff
    builds the core for it into the per-user cache (keyed by the sources' digest and the
    interpreter), records both sides with it, and the next diff takes it from the cache."""
    other = _other_python()
    if other is None:
        pytest.skip("needs a CPython >= 3.12 of another minor version (scripts/find-python)")
    project_bin, _ = _project_venv(tmp_path / "project-venv", other)
    shop = _shop(tmp_path)
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache), "COLUMNS": "200"}
    suffix = _ok(_sh(project_bin / "python", "-c", "import sysconfig; "
                     "print(sysconfig.get_config_var('EXT_SUFFIX'))")).strip()  # fmt: skip
    # This checkout's sources, less a core already built here for the other Python (CI
    # makes a virtualenv per Python in one tree: the second finds the first's core, rightly,
    # and builds nothing); the command runs from that copy.
    sources = tmp_path / "sources"
    shutil.copytree(
        REPO / "diffgenome",
        sources / "diffgenome",
        ignore=shutil.ignore_patterns("__pycache__", f"_accel{suffix}"),
    )
    diffgenome = tmp_path / "diffgenome"
    diffgenome.write_text(
        f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(sources))} exec "
        f'{shlex.quote(sys.executable)} -m diffgenome.analysis.cli "$@"\n'
    )
    diffgenome.chmod(0o755)

    first = _diff_with(diffgenome, shop, project_bin / "python", env, tmp_path / "s1")
    assert first.returncode == 1, first.stdout + first.stderr
    [built] = [line for line in first.stderr.splitlines() if line.startswith("diffgenome: built")]
    assert built.startswith("diffgenome: built the compiled core for CPython 3.1")
    [core] = cache.glob(f"diffgenome/cores/*/_accel{suffix}")
    assert f"into {core.parent} in " in built
    recorded = _recorded_lines(first.stderr)
    assert len(recorded) >= 2 and all("with the compiled core in" in r for r in recorded)
    assert "pure-Python" not in first.stdout

    again = _diff_with(diffgenome, shop, project_bin / "python", env, tmp_path / "s2")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "diffgenome: built" not in again.stderr  # the cache's
    recorded = _recorded_lines(again.stderr)
    assert len(recorded) >= 2 and all("with the compiled core in" in r for r in recorded)


def _readme_install_blocks() -> list[str]:
    """The ```sh blocks of README.md's "Install" section, in order."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("\n## Install\n") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"^```sh\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)


@pytest.mark.slow
def test_the_readme_install_commands_run_as_written(tmp_path: Path) -> None:
    """README.md's install commands, each block as one shell script, with `<this repository>`
    made a ``file://`` address of this repository: into the environment that runs a
    project's tests (straight from the repository, from a clone, from a wheel built from it;
    ``diffgenome doctor`` then says the compiled core and the plugin), then the isolated
    install diffing a project recorded with that project's own interpreter."""
    install, isolated = _readme_install_blocks()
    assert "<this repository>" in install
    home = tmp_path / "home"
    home.mkdir()
    bin_dir, env = _fresh_venv(tmp_path / "tests-venv")
    env = {**env, "HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    address = f"file://{REPO}"

    def sh(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        command = ["bash", "--noprofile", "--norc", "-eu", "-c", script]
        return _sh(*command, cwd=cwd, env=env)

    done = sh(install.replace("<this repository>", address), tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [built] = (tmp_path / "diffgenome" / "dist").glob("pytest_diffgenome-*.whl")
    assert built.name.startswith(f"pytest_diffgenome-0.1.0-{PY_TAG}-")
    doctor = done.stdout[done.stdout.index("diffgenome doctor\n") :]
    assert re.search(r"^  core +compiled \(_accel\.", doctor, re.MULTILINE), doctor
    assert re.search(r"^  plugin +registered: pytest loads it by itself", doctor, re.MULTILINE)
    assert f"in {bin_dir.parent}" in doctor  # the environment's own, not this checkout

    # The isolated install: its first command where the clone is, the diff in a project
    # (two commits, `main` and a branch) whose own virtualenv has pytest.
    first, second = isolated.strip().splitlines()
    shop = _shop(tmp_path)
    repo = GitRepo(shop)
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("branch", "-f", "main", "HEAD~1")
    _project_venv(shop / ".venv", sys.executable)
    done = sh(first, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (home / ".diffgenome" / "bin" / "diffgenome").is_file()
    diffed = sh(second, shop)
    assert diffed.returncode == 1, diffed.stdout[-3000:] + diffed.stderr[-3000:]  # it changed
    assert diffed.stdout.startswith("diffgenome main ("), diffed.stdout
    assert "9 tests:" in diffed.stdout.splitlines()[0]  # as pytest counts them
    recorded = _recorded_lines(diffed.stderr)
    assert len(recorded) >= 2 and all("with the compiled core in" in r for r in recorded)


# -- the binary wheel configuration ---------------------------------------------------------


@pytest.mark.parametrize(
    ("system", "archs", "expected"),
    [
        ("linux", "x86_64", "cp3{}-manylinux_x86_64 cp3{}-musllinux_x86_64"),
        ("linux", "aarch64", "cp3{}-manylinux_aarch64 cp3{}-musllinux_aarch64"),
        ("macos", None, "cp3{}-macosx_x86_64 cp3{}-macosx_arm64"),
        ("windows", None, "cp3{}-win_amd64"),
    ],
)
def test_cibuildwheel_builds_312_313_and_314_on_each_system(
    system: str, archs: str | None, expected: str
) -> None:
    """[tool.cibuildwheel] selects exactly CPython 3.12, 3.13 and 3.14 wheels (no
    free-threaded ones) for the runners of .github/workflows/wheels.yml (Linux x86_64 and
    aarch64, macOS, Windows)."""
    pytest.importorskip("cibuildwheel", reason="cibuildwheel (the test extra) reads the config")
    command = [sys.executable, "-m", "cibuildwheel", "--platform", system]
    command += ["--archs", archs] if archs else []
    done = _sh(*command, "--print-build-identifiers", REPO, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    wanted = {name.format(minor) for minor in (12, 13, 14) for name in expected.split()}
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
    # The tag check comes first in the publish job, before anything is uploaded.
    publish = workflow[workflow.index("\n  publish:\n") :]
    check = publish.index('run: python3 .github/scripts/check_tag.py "$GITHUB_REF_NAME"')
    assert check < publish.index("uses: pypa/gh-action-pypi-publish@")


@pytest.mark.parametrize(
    ("tag", "status", "said"),
    [
        ("v0.1.0", 0, "check_tag: ok: v0.1.0 is diffgenome 0.1.0"),
        ("refs/tags/v0.1.0", 0, "check_tag: ok: v0.1.0 is diffgenome 0.1.0"),
        ("v0.1.1", 1, "check_tag: FAILED: the tag v0.1.1 is not the version being published"),
        ("0.1.0", 1, "check_tag: FAILED: the tag 0.1.0 is not the version being published"),
        ("v0.1.0rc1", 1, "check_tag: FAILED: the tag v0.1.0rc1 is not the version"),
    ],
)
def test_the_publish_step_refuses_a_tag_that_is_not_the_version(
    tag: str, status: int, said: str
) -> None:
    """What the publish job runs first, run here with the tag it would be given."""
    done = _sh(sys.executable, REPO / ".github" / "scripts" / "check_tag.py", tag)
    assert done.returncode == status, done.stdout + done.stderr
    assert (done.stdout + done.stderr).startswith(said)
    version = _sh(sys.executable, "-c", "import diffgenome; print(diffgenome.__version__)")
    assert version.stdout.strip() == "0.1.0"  # the version the cases are written against
