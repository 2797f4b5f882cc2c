"""(a) A new commit with an identical tree: ``diffgenome diff HEAD~1 HEAD`` must say 0 changed.

For each benchmark project: a clone of its unpacked sdist (``bench.envs``: one git commit
"sdist"), plus ``git commit --allow-empty``, so HEAD~1 and HEAD have the same tree and differ
only by their commit ids. ``diffgenome diff HEAD~1 HEAD`` then records each commit in its own
disposable worktree (two different absolute paths, two temp folders, two sessions) with the
project's venv (``--python``) and the default gate. Goal: 0 ``changed``, exit status 0.
Unverified tests are counted with their reasons by kind (the default gate fails on them).

``--quick`` uses the benchmark's quick selection where a project has one (more-itertools:
tests/test_recipes.py less three slow classes), else the whole suite.

``--reuse-worktree`` (#29) adds the two other identical-tree checks over the same store: the
same diff again (both sides reused from the store, nothing recorded), and ``diff HEAD
WORKTREE`` after a comment-only edit of one project module (HEAD reused, the working tree
recorded from its copy). Each must be as silent as the fresh diff.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bench.envs import log

from truth.common import env_for, project_args
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


def selection(name: str, quick: bool) -> tuple[list[str], str]:
    env = env_for(name)
    project = env.project
    if quick and project.quick_paths:
        args = [*project.pytest_args]
        for node in [*project.deselect, *project.quick_deselect]:
            args += ["--deselect", node]
        return args + list(project.quick_paths), "quick"
    return project_args(env), "full"


def prepare(name: str, repo: Path | None = None) -> Path:
    """A clone of the project's sdist commit with one more commit of the same tree, at
    ``repo`` (default: the identical-tree measurement's own folder)."""
    env = env_for(name)
    repo = repo or HISTORY / "identical" / name / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    repo.parent.mkdir(parents=True, exist_ok=True)
    git(repo.parent, "clone", "-q", str(env.tree), str(repo))
    exclude = (env.tree / ".git" / "info" / "exclude").read_text()
    (repo / ".git" / "info" / "exclude").write_text(exclude)
    git(repo, "commit", "-q", "--allow-empty", "-m", "identical tree")
    assert git(repo, "rev-parse", "HEAD~1^{tree}") == git(repo, "rev-parse", "HEAD^{tree}")
    return repo


# The project module a comment-only edit goes into (--reuse-worktree): the first line of the
# file, so every line below moves (identities carry no line numbers).
COMMENT_EDIT = {
    "cookiecutter": "cookiecutter/generate.py",
    "packaging": "src/packaging/utils.py",
    "more-itertools": "more_itertools/more.py",
    "attrs": "src/attr/_make.py",
    "sqlparse": "sqlparse/lexer.py",
    "jinja2": "src/jinja2/environment.py",
}


def run(
    projects: list[str],
    *,
    quick: bool,
    tag: str = "",
    reuse_worktree: bool = False,
    extra_args: list[str] | None = None,
    extra_env: dict[str, str] | None = None,
    diff_args: list[str] | None = None,
) -> dict[str, Any]:
    """``extra_args``/``extra_env`` are controls (e.g. ``--hypothesis-seed=0``,
    ``PYTHONHASHSEED=0``) that remove one known source of difference: run them under a tag."""
    results: dict[str, Any] = {}
    for name in projects:
        env = env_for(name)
        args, scope = selection(name, quick)
        args = [*args, *(extra_args or [])]
        repo = prepare(name)
        out = HISTORY / "identical" / name / (tag or "run")
        log(f"identical: {name} ({scope})")
        done = run_diff(repo, env.exe, args, out, extra_env=extra_env, diff_args=diff_args)
        entry: dict[str, Any] = {
            "project": f"{env.project.name} {env.project.version}",
            "python": env.python.version,
            "selection": scope,
            "command": shown(done.command, extra_env),
            "diff_args": diff_args or [],
            "exit_code": done.exit_code,
            "wall_s": round(done.wall_s, 1),
            "diffgenome_commit": diffgenome_commit(),
            "raw": str(out),
        }
        if done.document is None:
            entry["error"] = done.stderr_tail
        else:
            entry |= summarise(done.document)
            entry["causes"] = causes(entry)
            slim(entry)
            if reuse_worktree:
                entry["later"] = _later_checks(name, repo, env.exe, args, out, extra_env)
        results[name] = entry
        merge_results("identical", tag, name, entry)
    write_markdown(tag)
    return results


def _later_checks(
    name: str,
    repo: Path,
    python: str,
    args: list[str],
    out: Path,
    extra_env: dict[str, str] | None,
) -> dict[str, Any]:
    """The reused diff and ``HEAD WORKTREE`` after a comment-only edit, over the fresh diff's
    store: what each says (statuses, exit, the non-unchanged tests) and what it reused."""
    store = out / "store"
    found: dict[str, Any] = {}
    checks: list[tuple[str, str, str]] = [("reused", "HEAD~1", "HEAD")]
    checks.append(("worktree", "HEAD", "WORKTREE"))
    for check, base, head in checks:
        edited = repo / COMMENT_EDIT[name]
        original = edited.read_bytes()
        if check == "worktree":
            edited.write_bytes(b"# a comment-only edit (identical-tree check)\n" + original)
        try:
            log(f"identical: {name} {check} ({base} {head})")
            done = run_diff(
                repo,
                python,
                args,
                out / check,
                base=base,
                head=head,
                extra_env=extra_env,
                store=store,
            )
        finally:
            edited.write_bytes(original)
        entry: dict[str, Any] = {
            "command": shown(done.command, extra_env),
            "exit_code": done.exit_code,
            "wall_s": round(done.wall_s, 1),
            "edited": COMMENT_EDIT[name] if check == "worktree" else None,
            # diffgenome says what it reuses on stderr ("reusing run ... of HEAD").
            "reused_lines": [
                line.removeprefix("diffgenome: ")
                for line in (out / check / "stderr.txt").read_text().splitlines()
                if line.startswith("diffgenome: reusing")
            ][:4],
        }
        if done.document is None:
            entry["error"] = done.stderr_tail
        else:
            entry |= summarise(done.document)
            slim(entry)
        found[check] = entry
    return found


# Causes seen on identical trees beyond the stability ones (truth/report.py CAUSES).
EXTRA_CAUSES: tuple[tuple[str, str], ...] = (
    ("_encrypt_key_if_plaintext", "random: the key is encrypted with a random passphrase/salt"),
    ("_make_hash_script", "hash seed: attrs embeds hash(<generated file name str>) in the script"),
    ("more_itertools.recipes.random_", "random: the tests call the random_* recipes unseeded"),
)


def causes(entry: dict[str, Any]) -> dict[str, int]:
    """Changed tests per cause (a test once per cause), by changed symbol; attrs' hypothesis
    examples are not matched here: the two control runs measure them."""
    from truth.report import cause_of

    found: dict[str, int] = {}
    for test in entry.get("reported", []):
        if test["status"] != "changed":
            continue
        seen = set()
        for change in test["changes"]:
            where = change.get("symbol") or str(change.get("path", [""])[-1:])
            cause = next((c for needle, c in EXTRA_CAUSES if needle in where), None)
            seen.add(cause or cause_of(where))
        for cause in seen:
            found[cause] = found.get(cause, 0) + 1
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))


def slim(entry: dict[str, Any]) -> None:
    """Per test its kinds and changed symbols, not the values: attrs alone gave 2.9 MB."""
    from collections import Counter

    for test in entry.get("reported", []):
        if "changes" not in test:
            continue
        changes = test.pop("changes")
        test["kinds"] = dict(Counter(c["kind"] for c in changes))
        symbols = Counter(c.get("symbol") or "/".join(c.get("path", [])[-1:]) for c in changes)
        test["symbols"] = [s for s, _ in symbols.most_common(6)]
        test["reasons"] = test.get("reasons", [])[:6]


def write_markdown(tag: str) -> None:
    import json

    path = results_path("identical", tag, "json")
    data = json.loads(path.read_text())
    out = ["# Identical tree, new commit: `diffgenome diff HEAD~1 HEAD`", ""]
    out += [
        "Each project's sdist commit plus `git commit --allow-empty`; both recorded by the diff "
        "command in disposable worktrees with the project's venv (`--python`), default gate.",
        "",
        "| project | selection | tests | changed | unverified | other non-unchanged "
        "| exit | unverified reasons by kind | causes of `changed` (tests) | diffgenome |",
        "|---|---|---:|---:|---:|---|---:|---|---|---|",
    ]
    for name, e in data["projects"].items():
        if "error" in e:
            out.append(f"| {name} | {e['selection']} | error | | | | {e['exit_code']} | | | |")
            continue
        st = e["statuses"]
        other = ", ".join(
            f"{k} {v}" for k, v in st.items() if k not in ("changed", "unverified", "unchanged")
        )
        reasons = ", ".join(f"{k} {v}" for k, v in e["unverified_reasons_by_kind"].items())
        why = "; ".join(f"{k} ({v})" for k, v in e.get("causes", {}).items())
        out.append(
            f"| {e['project']} | {e['selection']} | {e['tests']} | {st.get('changed', 0)} | "
            f"{st.get('unverified', 0)} | {other or '-'} | {e['exit_code']} | {reasons or '-'} | "
            f"{why or '-'} | `{e['diffgenome_commit']}` |"
        )
    out += ["", "Commands (from the project's repo folder):", ""]
    for name, e in data["projects"].items():
        out.append(f"- {name}: `{e['command']}`")
    later = [(n, e["later"]) for n, e in data["projects"].items() if e.get("later")]
    if later:
        out += ["", "Reused and WORKTREE (comment-only edit) over the same store:", ""]
        out += ["| project | check | tests | statuses | exit | what it said of reuse |"]
        out += ["|---|---|---:|---|---:|---|"]
        for name, checks in later:
            for check, e in checks.items():
                st = ", ".join(f"{k} {v}" for k, v in e.get("statuses", {}).items())
                said = "; ".join(e.get("reused_lines", [])) or "-"
                out.append(
                    f"| {name} | {check} | {e.get('tests', 'error')} | {st} | "
                    f"{e['exit_code']} | {said} |"
                )
                reported = e.get("reported", [])
                for t in reported:
                    kinds = ", ".join(sorted(t.get("kinds", {})))
                    out.append(f"|  | `{t['test']}` | | {t['status']}: {kinds} | | |")
    out += ["", "Non-unchanged tests:", ""]
    for name, e in data["projects"].items():
        for t in e.get("reported", []):
            kinds = sorted(t.get("kinds", {}))
            reasons = "; ".join(t["reasons"][:3])
            out.append(f"- {name} `{t['test']}` {t['status']}: {', '.join(kinds)} {reasons}")
    out.append("")
    results_path("identical", tag, "md").write_text("\n".join(out))
