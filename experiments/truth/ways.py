"""(c) An identical tree is silent in all four ways (#24's done-when), on release projects.

For each project of ``truth/releases.py`` (its newer release), in a repository of its own:

1. ``fresh``: the release commit ``A`` and an empty commit ``B`` (same tree),
   ``diff A B`` with an empty store: both sides recorded now.
2. ``reused``: the same ``diff A B`` again with that store (both sides reused), then an
   empty commit ``C`` and ``diff B C`` (``B`` reused, ``C`` recorded now).
3. ``worktree``: a comment line inserted in the middle of a project module (line numbers
   below it shift), ``diff HEAD WORKTREE`` with that store.
4. ``ignored``: a repository whose package imports a generated module git ignores (isodate:
   its own setuptools_scm ``version.py``, in its ``.gitignore`` and shipped in the sdist;
   other projects: a ``_version.py`` added to ``.gitignore`` and imported by the package's
   ``__init__``, committed as one change), present in the checkout only: ``diff A B`` fresh,
   then ``diff HEAD WORKTREE`` after the comment edit.
5. ``pytest run``: the user's own ``pytest --genome`` of commit ``C`` in the checkout (their
   environment and temp folder, ``PYTHONHASHSEED=0`` and the seeds the diff passes, as
   docs/diffing.md "Reuse" asks), into a store of its own; an empty commit ``D`` and
   ``diff C D``: base reused from that run, head recorded by the diff (confirmation then
   records both sides in one environment, #24.2).

Goal in every case: 0 ``changed``, exit status 0 (the default gate). The terminal's
``reusing run`` lines are counted to show which sides were reused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from bench.envs import REPO_ROOT, log

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
from truth.releases import Release, _unpack, by_name, sdist, venv

# The module that gets the comment-only edit (way 3), per project.
COMMENT_IN = {"boltons": "boltons/iterutils.py", "isodate": "src/isodate/isodates.py"}
# Way 4 where the project has no ignored generated module of its own: (module, package init).
SYNTHETIC_IGNORED = {"boltons": ("boltons/_version.py", "boltons/__init__.py")}


def _repo(release: Release, folder: Path, *, ignored: bool) -> Path:
    repo = folder / ("repo-ignored" if ignored else "repo")
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    exclude = "__pycache__/\n*.egg-info/\n.hypothesis/\n.pytest_cache/\n.coverage*\n.diffgenome/\n"
    (repo / ".git" / "info" / "exclude").write_text(exclude)
    _unpack(sdist(release.name, release.head), repo)
    if not ignored:
        for path in release.ignored_shipped:
            if (repo / path).exists():
                git(repo, "add", "-f", path)
    elif release.name in SYNTHETIC_IGNORED:
        module, init = SYNTHETIC_IGNORED[release.name]
        text = f"# generated at install (truth.py)\nversion = {release.head!r}\n"
        (repo / module).write_text(text)
        gitignore = repo / ".gitignore"
        old = gitignore.read_text() if gitignore.exists() else ""
        gitignore.write_text(old + ("" if old.endswith("\n") or not old else "\n") + module + "\n")
        package = module.rsplit("/", 1)[0].replace("/", ".")
        stem = module.rsplit("/", 1)[1].removesuffix(".py")
        with (repo / init).open("a") as out:
            out.write(f"\nfrom {package}.{stem} import version as __version__  # noqa\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{release.name} {release.head}")
    if ignored:
        shipped = [*release.ignored_shipped, *SYNTHETIC_IGNORED.get(release.name, ("",))[:1]]
        tracked = git(repo, "ls-files").splitlines()
        assert not any(p in tracked for p in shipped if p), "the generated module is tracked"
        assert any((repo / p).exists() for p in shipped if p), "no generated module"
    git(repo, "commit", "-q", "--allow-empty", "-m", "identical tree")
    return repo


def _comment_edit(repo: Path, module: str) -> None:
    """A comment line before the module's first top-level ``def``: code below shifts."""
    path = repo / module
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("def "))
    lines.insert(at, "# truth.py: a comment-only edit (#24 done-when, way 3)\n")
    path.write_text("".join(lines))


def _user_pytest_run(repo: Path, python: str, args: list[str], store: Path, out: Path) -> None:
    """``pytest --genome`` as a user runs it from the checkout: the tree's own code first on
    the path (as an editable install would have it), the recorder from this repository, the
    hash seed and the seeds the diff records with, the user's own temp folder."""
    source = repo / "src" if (repo / "src").is_dir() else repo
    has_hypothesis = subprocess.run([python, "-c", "import hypothesis"], capture_output=True)
    seeds = ["--genome-random-seed=0"]
    seeds += ["--hypothesis-seed=0"] if has_hypothesis.returncode == 0 else []
    user_tmp = out / "user-tmp"
    shutil.rmtree(user_tmp, ignore_errors=True)
    user_tmp.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    env.update(
        PYTHONHASHSEED="0",
        PYTHONPATH=os.pathsep.join([str(source), str(REPO_ROOT)]),
        TMPDIR=str(user_tmp),
        PWD=str(repo),
    )
    cmd = [python, "-m", "pytest", "--genome"]  # the entry point of this checkout's egg-info
    cmd += ["--genome-store", str(store), "-q", *seeds, *args]
    log(f"ways: $ (cd {repo} && {' '.join(cmd)})")
    done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    (out / "user-pytest.txt").parent.mkdir(parents=True, exist_ok=True)
    (out / "user-pytest.txt").write_text(done.stdout + done.stderr)
    log(f"ways: user's pytest --genome exit {done.returncode}: {done.stdout.strip()[-200:]}")


def _entry(way: str, done: Any, repo: Path) -> dict[str, Any]:
    text = done.terminal + done.stderr_tail
    entry: dict[str, Any] = {
        "way": way,
        "command": shown(done.command),
        "repo": str(repo),
        "exit_code": done.exit_code,
        "wall_s": round(done.wall_s, 1),
        "reused_sides": text.count("reusing run "),
    }
    if done.document is None:
        entry["error"] = done.stderr_tail
        return entry
    summary = summarise(done.document)
    entry["tests"] = summary["tests"]
    entry["statuses"] = summary["statuses"]
    entry["reported"] = [
        {
            "test": t["test"],
            "status": t["status"],
            "reasons": t["reasons"][:4],
            "kinds": dict(Counter(c["kind"] for c in t["changes"])),
            "changes": t["changes"][:4],
        }
        for t in summary["reported"]
    ]
    return entry


def _diff(
    ways: list[dict[str, Any]],
    label: str,
    python: str,
    args: list[str],
    repo: Path,
    base: str,
    head: str,
    out: Path,
    store: Path,
) -> None:
    log(f"ways: {label}")
    done = run_diff(repo, python, args, out, base=base, head=head, store=store)
    ways.append(_entry(label.split(" ", 1)[1], done, repo))


def _project(name: str, tag: str) -> dict[str, Any]:
    release = by_name(name)
    folder = HISTORY / "ways" / name
    plain = _repo(release, folder, ignored=False)
    python = str(venv(release, plain) / "bin" / "python")
    args = release.args()
    store = folder / "store"
    shutil.rmtree(store, ignore_errors=True)
    out = folder / (tag or "run")
    ways: list[dict[str, Any]] = []

    def diff(way: str, repo: Path, base: str, head: str, where: str, own: Path) -> None:
        _diff(ways, f"{name} {way}", python, args, repo, base, head, out / where, own)

    diff("1 fresh: A B", plain, "HEAD~1", "HEAD", "1-fresh", store)
    diff("2 reused: A B again", plain, "HEAD~1", "HEAD", "2-reused-both", store)
    git(plain, "commit", "-q", "--allow-empty", "-m", "identical tree again")
    diff("2 reused: B C (B reused)", plain, "HEAD~1", "HEAD", "2-reused-base", store)
    _comment_edit(plain, COMMENT_IN[name])
    diff("3 worktree: comment edit", plain, "HEAD", "WORKTREE", "3-worktree", store)
    git(plain, "checkout", "-q", "--", ".")
    store5 = folder / "store-pytest"
    shutil.rmtree(store5, ignore_errors=True)
    _user_pytest_run(plain, python, args, store5, out / "5-pytest-run")
    git(plain, "commit", "-q", "--allow-empty", "-m", "identical tree after the user's run")
    diff("5 pytest run: C D (C from pytest --genome)", plain, "HEAD~1", "HEAD", "5-pytest-run",
         store5)  # fmt: skip
    ignored = _repo(release, folder, ignored=True)
    store4 = folder / "store-ignored"
    shutil.rmtree(store4, ignore_errors=True)
    diff("4 ignored module: A B", ignored, "HEAD~1", "HEAD", "4-ignored", store4)
    _comment_edit(ignored, COMMENT_IN[name])
    diff(
        "4 ignored module: HEAD WORKTREE (comment edit)",
        ignored,
        "HEAD",
        "WORKTREE",
        "4-ignored-worktree",
        store4,
    )
    git(ignored, "checkout", "-q", "--", ".")
    entry = {
        "project": name,
        "release": release.head,
        "pytest_args": args,
        "diffgenome_commit": diffgenome_commit(),
        "ways": ways,
    }
    return entry


def run(names: list[str], *, tag: str = "") -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in names:
        entry = _project(name, tag)
        results[name] = entry
        merge_results("ways", tag, name, entry)
    write_markdown(tag)
    return results


def write_markdown(tag: str) -> None:
    path = results_path("ways", tag, "json")
    data = json.loads(path.read_text())
    out = ["# An identical tree, five ways: 0 changed and exit 0 expected", ""]
    out += [
        "| project | way | tests | sides reused | statuses | exit | diffgenome |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for name, e in data["projects"].items():
        for w in e["ways"]:
            st = ", ".join(f"{k} {n}" for k, n in w.get("statuses", {}).items()) or "error"
            out.append(
                f"| {name} {e['release']} | {w['way']} | {w.get('tests', '')} | "
                f"{w['reused_sides']} | {st} | {w['exit_code']} | `{e['diffgenome_commit']}` |"
            )
    out += ["", "Commands (from each repository):", ""]
    for name, e in data["projects"].items():
        for w in e["ways"]:
            out.append(f"- {name}, {w['way']}: `{w['command']}`")
    out += ["", "Tests other than unchanged:", ""]
    for name, e in data["projects"].items():
        for w in e["ways"]:
            for t in w.get("reported", []):
                reasons = "; ".join(t["reasons"][:2])
                kinds = ", ".join(sorted(t["kinds"]))
                out.append(f"- {name}, {w['way']}: `{t['test']}` {t['status']} {kinds} {reasons}")
    out.append("")
    results_path("ways", tag, "md").write_text("\n".join(out))
