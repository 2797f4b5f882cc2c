"""(b) Release to release: two consecutive releases of a real project, diffed as two commits.

For each project below: both sdists from PyPI (``pip download --no-deps --no-binary :all:``),
unpacked into one git repository as two commits (HEAD~1 = the older release, HEAD = the
newer), a venv with the project's test dependencies (the newer release installed, which
brings its runtime dependencies; the recorded worktree's source root comes first on
``PYTHONPATH``, so each side runs its own code), and then, in the repository::

    python -m diffgenome.analysis.cli diff HEAD~1 HEAD --python VENV/bin/python \\
        --store S --json OUT --markdown OUT -- <pytest args>

Every test the diff reports (anything but ``unchanged``) is then classified by a person who
read the code change and the test's changes: ``real`` (a behaviour change the code change
explains) or ``noise`` (an artefact), with the rule that said so in ``truth/verdicts.py``.
Nothing is classified by default: a test no rule matches is ``unclassified``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.envs import DEFAULT_WORK, current_python, log

from truth.history import (
    HISTORY,
    diffgenome_commit,
    git,
    merge_results,
    results_path,
    run_diff,
    shown,
    summarise,
)
from truth.verdicts import classify


@dataclass(frozen=True)
class Release:
    name: str
    base: str  # the older release
    head: str  # the next one
    test_deps: tuple[str, ...] = ("pytest",)
    pytest_args: tuple[str, ...] = ()
    # node id prefix -> why it is left out
    deselect: dict[str, str] = field(default_factory=dict)
    paths: tuple[str, ...] = ()
    notes: str = ""
    # Files a build hook writes and the sdist lacks (path -> text, ``{version}`` filled in):
    # a wheel has them, so each commit gets them as its release would.
    generated: dict[str, str] = field(default_factory=dict)
    # Files the sdist ships that the project's .gitignore ignores (a setuptools_scm
    # ``version.py``): committed with ``git add -f`` where present, as the release has them.
    ignored_shipped: tuple[str, ...] = ()

    def args(self) -> list[str]:
        out = [*self.pytest_args]
        for node in self.deselect:
            out += ["--deselect", node]
        return out + list(self.paths)


# Small-to-medium pure-Python projects, not in the benchmark, whose sdists ship their tests
# and whose suites run offline in well under a minute.
RELEASES: tuple[Release, ...] = (
    Release(
        name="cachetools",
        base="8.0.1",
        head="8.0.2",
        notes="memoizing caches and decorators; src layout",
    ),
    Release(
        name="semver",
        base="3.1.1",
        head="3.1.2",
        # Its addopts need pytest-cov and collect the docs' doctests; the unit tests only.
        pytest_args=("-o", "addopts=--import-mode=importlib"),
        paths=("tests",),
        notes="semantic versions; src layout; tests/ only (not the docs' doctests)",
    ),
    Release(
        name="humanize",
        base="4.16.0",
        head="4.17.0",
        test_deps=("pytest", "freezegun"),
        deselect={"tests/test_benchmarks.py": "needs pytest-codspeed (benchmarks, not tests)"},
        notes="number/time formatting; src layout; freezegun",
        generated={
            "src/humanize/_version.py": "__version__ = version = {version!r}\n"
            "__version_tuple__ = version_tuple = {version_tuple!r}\n",
        },
    ),
    Release(
        name="toolz",
        base="1.1.0",
        head="1.2.0",
        notes="functional utilities; tests inside the package (toolz/tests)",
    ),
    Release(
        name="sqlparse",
        base="0.5.2",
        head="0.5.3",
        paths=("tests",),
        notes="SQL tokenizer and parser (recursive grouping); chosen in session 5, never "
        "seen before: 0.5.3 moves the RecursionError guard from Token.flatten to "
        "FilterStack.run",
    ),
    Release(
        name="tomlkit",
        base="0.15.1",
        head="0.15.2",
        notes="style-preserving TOML",
    ),
    Release(
        name="idna",
        base="3.9",
        head="3.10",
        paths=("tests",),
        notes="internationalised domain names (IDNA 2008, UTS 46); chosen in session 6, never "
        "seen before",
    ),
    Release(
        name="itsdangerous",
        base="2.1.2",
        head="2.2.0",
        test_deps=("pytest", "freezegun"),
        paths=("tests",),
        notes="signed tokens (HMAC signers, timed and URL-safe serializers); chosen in session "
        "7, never seen before",
    ),
    Release(
        name="boltons",
        base="24.0.0",
        head="24.1.0",
        # Its conftest's pytest_ignore_collect(path, config) is refused by pytest 9 (the
        # py.path argument was removed).
        test_deps=("pytest<9",),
        paths=("tests",),
        notes="pure-Python utilities (iterutils, funcutils, fileutils, cacheutils caches at "
        "module level); chosen in session 10, never seen before",
    ),
    Release(
        name="isodate",
        base="0.7.0",
        head="0.7.2",
        paths=("tests",),
        ignored_shipped=("src/isodate/version.py",),
        notes="ISO 8601 dates and durations; src layout; its setuptools_scm version.py is in "
        ".gitignore and imported by the package; 0.7.0 -> 0.7.2 changes only that file; "
        "chosen in session 10, never seen before",
    ),
)


def by_name(name: str) -> Release:
    for release in RELEASES:
        if release.name == name:
            return release
    known = ", ".join(r.name for r in RELEASES)
    raise KeyError(f"unknown release project {name!r}; known: {known}")


def sdist(name: str, version: str) -> Path:
    folder = DEFAULT_WORK / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    found = _find(folder, name, version)
    if found is None:
        log(f"downloading {name}=={version} (sdist)")
        pip = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check"]
        pip += ["--no-deps", "--no-binary", ":all:", f"{name}=={version}", "-d", str(folder)]
        subprocess.run(pip, check=True)
        found = _find(folder, name, version)
    if found is None:
        raise RuntimeError(f"pip download of {name}=={version} left no sdist in {folder}")
    return found


def _find(folder: Path, name: str, version: str) -> Path | None:
    stems = {name, name.replace("-", "_"), name.replace("-", ".")}
    for stem in sorted(stems):
        for suffix in (".tar.gz", ".zip"):
            if (folder / f"{stem}-{version}{suffix}").exists():
                return folder / f"{stem}-{version}{suffix}"
    return None


def _unpack(archive: Path, dest: Path) -> None:
    """The sdist's top folder's content into ``dest`` (which keeps only its ``.git``)."""
    for child in dest.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    staging = dest.parent / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    (top,) = [p for p in staging.iterdir() if p.is_dir()]
    for child in top.iterdir():
        child.rename(dest / child.name)
    shutil.rmtree(staging)
    if not _has_pytest_config(dest):  # stop pytest's config search at the project
        (dest / "pytest.ini").write_text("# written by truth.py: no pytest config\n[pytest]\n")


def _has_pytest_config(root: Path) -> bool:
    from bench.envs import _has_pytest_config as has

    return has(root)


def prepare(release: Release) -> Path:
    """The two-commit repository (rebuilt each time: it is cheap and must be exact)."""
    folder = HISTORY / "releases" / f"{release.name}-{release.base}-{release.head}"
    repo = folder / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    exclude = "__pycache__/\n*.egg-info/\n.hypothesis/\n.pytest_cache/\n.coverage*\n.diffgenome/\n"
    (repo / ".git" / "info" / "exclude").write_text(exclude)
    for version in (release.base, release.head):
        _unpack(sdist(release.name, version), repo)
        for path, text in release.generated.items():
            parts = tuple(int(p) if p.isdigit() else p for p in version.split("."))
            (repo / path).write_text(text.format(version=version, version_tuple=parts))
            git(repo, "add", "-f", path)  # a project ignores its generated files
        for path in release.ignored_shipped:
            if (repo / path).exists():
                git(repo, "add", "-f", path)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"{release.name} {version}")
    return repo


def venv(release: Release, repo: Path) -> Path:
    """A venv with the newer release installed (its runtime dependencies) and the tests'."""
    python = current_python()
    path = DEFAULT_WORK / "venvs" / f"release-{release.name}-{release.head}-py{python.minor}"
    marker = path / ".truth-installed"
    if marker.exists():
        return path
    log(f"building {path.name}")
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run([python.path, "-m", "venv", str(path)], check=True)
    source = repo.parent / "head-install"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir()
    _unpack(sdist(release.name, release.head), source)
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "-q"]
    pip += ["--disable-pip-version-check"]
    subprocess.run([*pip, str(source), *release.test_deps], check=True)
    shutil.rmtree(source)
    freeze = subprocess.run(
        [str(path / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        check=True,
        capture_output=True,
        text=True,
    )
    packages = {p["name"].lower(): p["version"] for p in json.loads(freeze.stdout)}
    marker.write_text(json.dumps(packages, indent=1, sort_keys=True))
    return path


def code_change(repo: Path) -> dict[str, Any]:
    stat = git(repo, "diff", "--stat=200", "HEAD~1", "HEAD")
    names = git(repo, "diff", "--name-status", "HEAD~1", "HEAD").splitlines()
    py = [line for line in names if line.endswith(".py")]
    return {"stat_last_line": stat.splitlines()[-1] if stat else "", "python_files": py}


def run(names: list[str], *, tag: str = "") -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in names:
        release = by_name(name)
        repo = prepare(release)
        env = venv(release, repo)
        out = repo.parent / (tag or "run")
        log(f"releases: {name} {release.base} -> {release.head}")
        done = run_diff(repo, str(env / "bin" / "python"), release.args(), out)
        packages = json.loads((env / ".truth-installed").read_text())
        entry: dict[str, Any] = {
            "project": name,
            "base": release.base,
            "head": release.head,
            "notes": release.notes,
            "deselected": release.deselect,
            "command": shown(done.command),
            "repo": str(repo),
            "exit_code": done.exit_code,
            "wall_s": round(done.wall_s, 1),
            "diffgenome_commit": diffgenome_commit(),
            "code_change": code_change(repo),
            "packages": {k: v for k, v in packages.items() if k not in ("pip", "setuptools")},
            "raw": str(out),
        }
        if done.document is None:
            entry["error"] = done.stderr_tail
        else:
            entry |= summarise(done.document)
            entry["control"] = control(repo, str(env / "bin" / "python"), release, out)
            entry["verdicts"] = classify(
                name, entry["reported"], entry["code_change"]["python_files"]
            )
            mark_control(entry)
        results[name] = entry
        merge_results("releases", tag, name, entry)
    write_markdown(tag)
    return results


def control(repo: Path, python: str, release: Release, out: Path) -> dict[str, Any]:
    """The newer release against a new commit of the same tree: what differs there is not
    the release's doing (clock, randomness, hash seed, addresses...)."""
    git(repo, "commit", "-q", "--allow-empty", "-m", f"{release.name} {release.head} again")
    try:
        done = run_diff(repo, python, release.args(), out.with_name(out.name + "-identical"))
    finally:
        git(repo, "reset", "-q", "--hard", "HEAD~1")
    if done.document is None:
        return {"error": done.stderr_tail, "exit_code": done.exit_code}
    summary = summarise(done.document)
    return {
        "command": shown(done.command).replace("'HEAD~1' HEAD", "HEAD HEAD+same-tree"),
        "exit_code": done.exit_code,
        "statuses": summary["statuses"],
        "tests": [t["test"] for t in summary["reported"]],
    }


def mark_control(entry: dict[str, Any]) -> None:
    quiet = set(entry.get("control", {}).get("tests", []))
    for test in entry["verdicts"]["tests"]:
        test["also_on_identical_tree"] = test["test"] in quiet


def reclassify(tag: str = "") -> None:
    """Apply truth/verdicts.py again to the saved summaries (after reading more code)."""
    path = results_path("releases", tag, "json")
    data = json.loads(path.read_text())
    for name, entry in data["projects"].items():
        if "reported" in entry:
            entry["verdicts"] = classify(
                name, entry["reported"], entry["code_change"]["python_files"]
            )
            mark_control(entry)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    write_markdown(tag)


def write_markdown(tag: str) -> None:
    path = results_path("releases", tag, "json")
    data = json.loads(path.read_text())
    out = ["# Release to release: `diffgenome diff HEAD~1 HEAD` on two consecutive sdists", ""]
    out += [
        "| project | releases | tests | non-unchanged | statuses | real | noise | unstable "
        "| unclassified | noise also on an identical tree | exit | same tree: non-unchanged (exit) "
        "| diffgenome |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for name, e in data["projects"].items():
        if "error" in e:
            out.append(
                f"| {name} | {e['base']} → {e['head']} | error | | | | | | {e['exit_code']} | |"
            )
            continue
        v = e["verdicts"]["counts"]
        st = ", ".join(f"{k} {n}" for k, n in e["statuses"].items())
        ctl = e.get("control", {})
        same = sum(
            1
            for t in e["verdicts"]["tests"]
            if t["verdict"] == "noise" and t.get("also_on_identical_tree")
        )
        ctl_text = f"{len(ctl.get('tests', []))} ({ctl.get('exit_code')})" if ctl else "-"
        out.append(
            f"| {name} | {e['base']} → {e['head']} | {e['tests']} | {len(e['reported'])} | "
            f"{st} | {v.get('real', 0)} | {v.get('noise', 0)} | {v.get('unstable', 0)} | "
            f"{v.get('unclassified', 0)} | "
            f"{same} | {e['exit_code']} | {ctl_text} | `{e['diffgenome_commit']}` |"
        )
    out += ["", "Commands (from the two-commit repository):", ""]
    for name, e in data["projects"].items():
        out.append(f"- {name}: `{e['command']}`")
    for name, e in data["projects"].items():
        out += ["", f"## {name} {e['base']} → {e['head']}", ""]
        out.append(
            f"Code change: {e['code_change']['stat_last_line']}; Python files: "
            f"{', '.join(e['code_change']['python_files']) or 'none'}."
        )
        if "error" in e:
            out += ["", "```", e["error"], "```"]
            continue
        v = e["verdicts"]
        out += ["", f"Noise by cause (tests): {v['noise_causes'] or 'none'}.", ""]
        out += [
            f"Real tests whose report also carries noise lines: {v['with_noise_entries']} "
            f"({v['noise_entry_causes'] or 'none'}); real tests whose report names the "
            f"wrong decision (ordinal ids): {v['mislabelled']}.",
            "",
        ]
        out += [
            "| test | status | verdict | cause | change kinds | also on an identical tree |",
            "|---|---|---|---|---|---|",
        ]
        for t in v["tests"]:
            out.append(
                f"| `{t['test']}` | {t['status']} | {t['verdict']} | {' + '.join(t['causes'])} | "
                f"{', '.join(t['kinds'])} | {'yes' if t.get('also_on_identical_tree') else ''} |"
            )
    out.append("")
    results_path("releases", tag, "md").write_text("\n".join(out))
