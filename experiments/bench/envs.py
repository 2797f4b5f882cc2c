"""Interpreters, pinned sdists and one virtualenv per (project, Python), built once and cached.

Layout under the work folder (``experiments/work/`` by default, gitignored)::

    sdists/NAME-VERSION.tar.gz         pip download --no-deps --no-binary :all: NAME==VERSION
    trees/NAME-VERSION/py3.X/          the unpacked sdist, one copy per Python (editable install)
    venvs/NAME-VERSION-py3.X/          the virtualenv; .bench-installed marks a finished build

The project is installed editable so that its code runs from the unpacked tree: an installed
copy would sit in site-packages, which both diffgenome and coverage.py leave out of scope, and
the comparison would measure nothing.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from bench.projects import Project

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_WORK = REPO_ROOT / "experiments" / "work"
MARKER = ".bench-installed"


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: str  # full, e.g. "3.12.1"

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])


def interpreter(path: str) -> Interpreter:
    out = subprocess.run(
        [path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Interpreter(path=path, version=out.stdout.strip())


def find_pythons() -> list[Interpreter]:
    """Every usable minor version, the way ``scripts/find-python --all`` finds them."""
    out = subprocess.run(
        ["sh", str(REPO_ROOT / "scripts" / "find-python"), "--all"],
        check=True,
        capture_output=True,
        text=True,
    )
    return [interpreter(line) for line in out.stdout.split() if line]


def current_python() -> Interpreter:
    return interpreter(sys.executable)


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def sdist(project: Project, work: Path) -> Path:
    folder = work / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    found = _find_sdist(project, folder)
    if found is not None:
        return found
    log(f"downloading {project.spec} (sdist)")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-binary",
            ":all:",
            project.spec,
            "-d",
            str(folder),
        ],
        check=True,
    )
    found = _find_sdist(project, folder)
    if found is None:
        raise RuntimeError(f"pip download of {project.spec} left no sdist in {folder}")
    return found


def _find_sdist(project: Project, folder: Path) -> Path | None:
    stems = {project.name, project.name.replace("-", "_"), project.name.replace("-", ".")}
    for stem in sorted(stems):
        for suffix in (".tar.gz", ".zip"):
            candidate = folder / f"{stem}-{project.version}{suffix}"
            if candidate.exists():
                return candidate
    return None


def tree(project: Project, python: Interpreter, work: Path) -> Path:
    """The unpacked sdist for one Python (its own copy: egg-info, caches, pyc stay apart)."""
    dest = work / "trees" / f"{project.name}-{project.version}" / f"py{python.minor}"
    if (dest / "src-root").is_dir():
        return _isolate_config(dest / "src-root")
    archive = sdist(project, work)
    staging = dest.with_name(dest.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    (top,) = [p for p in staging.iterdir() if p.is_dir()]
    top.rename(staging / "src-root")
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    _check_has_tests(dest / "src-root", project)
    return _isolate_config(dest / "src-root")


def _has_pytest_config(root: Path) -> bool:
    sections = {
        "pytest.ini": "",
        ".pytest.ini": "",
        "pyproject.toml": "[tool.pytest",
        "tox.ini": "[pytest]",
        "setup.cfg": "[tool:pytest]",
    }
    for name, marker in sections.items():
        path = root / name
        if path.is_file() and marker in path.read_text(errors="replace"):
            return True
    return False


def _isolate_config(root: Path) -> Path:
    """Stop pytest's upward config search at the project.

    A project without a pytest config of its own would otherwise pick up the nearest one above
    it -- under ``experiments/work/`` that is diffgenome's own pyproject.toml, which moves the
    rootdir (and so the recorder's scope) to this repository. An empty ``pytest.ini`` gives the
    project the rootdir it has in its own checkout.
    """
    if not _has_pytest_config(root):
        (root / "pytest.ini").write_text(
            "# written by the diffgenome benchmark: the project has no pytest config\n[pytest]\n"
        )
    _git_init(root)
    return root


def _git_init(root: Path) -> None:
    """Make the tree its own git repository, as a project's checkout is.

    Inside this repository's work tree the recorder would otherwise take diffgenome's own
    checkout for the project's repository (its commit, its top folder).
    """
    if (root / ".git").exists():
        return
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    exclude = "__pycache__/\n*.egg-info/\n.hypothesis/\n.pytest_cache/\n.coverage*\n.diffgenome/\n"
    (root / ".git" / "info" / "exclude").write_text(exclude)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "sdist"], cwd=root, check=True)


def _check_has_tests(root: Path, project: Project) -> None:
    tests = [p for p in root.rglob("test*.py") if "test" in p.parent.name or p.name != "test.py"]
    if not tests:
        raise RuntimeError(f"the sdist of {project.spec} ships no tests")


@dataclass(frozen=True)
class Env:
    project: Project
    python: Interpreter
    tree: Path
    venv: Path
    packages: dict[str, str]

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def exe(self) -> str:
        return str(self.bin / "python")


def ensure_env(project: Project, python: Interpreter, work: Path) -> Env:
    """The virtualenv for (project, python); built only when its marker is missing.

    Several processes may ask at once (tests under xdist): one builds, the others wait on a
    lock file instead of deleting the folder under it.
    """
    (work / "venvs").mkdir(parents=True, exist_ok=True)
    lock_path = work / "venvs" / f".{project.name}-py{python.minor}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_env_locked(project, python, work)


def _ensure_env_locked(project: Project, python: Interpreter, work: Path) -> Env:
    root = tree(project, python, work)
    venv = work / "venvs" / f"{project.name}-{project.version}-py{python.minor}"
    marker = venv / MARKER
    if not marker.exists():
        _build(project, python, root, venv)
        freeze = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
            check=True,
            capture_output=True,
            text=True,
        )
        packages = {p["name"].lower(): p["version"] for p in json.loads(freeze.stdout)}
        marker.write_text(json.dumps(packages, indent=1, sort_keys=True))
    packages = json.loads(marker.read_text())
    return Env(project=project, python=python, tree=root, venv=venv, packages=packages)


def _build(project: Project, python: Interpreter, root: Path, venv: Path) -> None:
    log(f"building {venv.name} (Python {python.version})")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python.path, "-m", "venv", str(venv)], check=True)
    target = str(root) + (f"[{','.join(project.extras)}]" if project.extras else "")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    pip += ["--disable-pip-version-check"]
    subprocess.run(
        [
            *pip,
            "-e",
            target,
            "-e",
            str(REPO_ROOT),
            "pytest",
            "coverage",
            *project.test_deps,
        ],
        check=True,
    )
