"""End-to-end: a reviewer's walk-through records each commit once (#25, "done when").

From the project folder of a monorepo (``top/proj`` on a feature branch one commit ahead of
``main``): record with ``pytest --genome`` (with the seeds ``diff`` records with, as README.md
says, so that it is reused), diff, ``show latest``, three more diffs with other report options,
prune. The store's cap is set small first (``prune --cap 6``), so that confirmation runs that
counted against it would push the reused recordings out, as they did with the default cap
after a few diffs (#25 point 2). Every diff after the first reuses both sides, and in the end
the store has recorded each commit once.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from e2e.helpers import ALL_PLUGINS, PY, clean_env, git_in, make_project, write_files

# The walk-through installs into a fresh virtualenv: its sessions find what is installed there.
pytestmark = [pytest.mark.slow, ALL_PLUGINS]

FILES = {
    "proj/pyproject.toml": """
        [tool.pytest.ini_options]
        testpaths = ["tests"]
    """,
    "proj/shopx/__init__.py": "",
    "proj/shopx/cart.py": """
        def total(items):
            return sum(price for _, price in items)


        def checkout(items):
            if not items:
                raise ValueError("empty cart")
            return {"total": total(items), "lines": len(items)}
    """,
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
    """,
    ".gitignore": "__pycache__/\n",
}


def run(
    proj: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=proj,
        env=clean_env({"TMPDIR": str(proj.parents[1]), "COLUMNS": "120", **(env or {})}),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def dg(proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(proj, PY, "-m", "diffgenome.analysis.cli", *args)


def rev(proj: Path, name: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", name], cwd=proj, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_walk_through_records_each_commit_once(tmp_path: Path) -> None:
    top = make_project(tmp_path, FILES, name="top")
    git_in(top, "branch", "-M", "main")
    git_in(top, "checkout", "-q", "-b", "feature")
    write_files(
        top,
        {
            "proj/shopx/cart.py": FILES["proj/shopx/cart.py"].replace(
                '"lines": len(items)', '"items": sum(1 for _ in items)'
            )
        },
    )
    git_in(top, "commit", "-qam", "count items")
    proj = top / "proj"
    main, head = rev(proj, "main"), rev(proj, "HEAD")

    # The user's own recording of the feature branch, reusable by diff (README.md).
    recorded = run(
        proj,
        *(PY, "-m", "pytest", "--genome", "--hypothesis-seed=0", "--genome-random-seed=0"),
        env={"PYTHONHASHSEED": "0"},
    )
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert dg(proj, "prune", "--cap", "6").returncode == 0

    first = dg(proj, "diff", "main", "HEAD")
    assert first.returncode == 1, first.stderr
    assert re.search(r"reusing run \S+ of HEAD \([0-9a-f]{12}, recorded by pytest\)", first.stderr)
    assert "recorded base main (" in first.stderr

    shown = dg(proj, "show", "latest", "tests/test_x.py::test_y")
    assert shown.returncode == 0, shown.stderr

    report = tmp_path / "report"
    for options in (
        ("--markdown", str(tmp_path / "comment.md"), "--markdown-link", "https://ci.example/1"),
        ("--json", "-"),
        ("--html", str(report), "--all"),
    ):
        again = dg(proj, "diff", "main", "HEAD", *options)
        assert again.returncode == 1, (options, again.stderr)
        assert again.stderr.count("diffgenome: reusing run ") == 2, (options, again.stderr)
        assert not re.search(r"recorded (base|head) \S+ \([0-9a-f]{12}\): ", again.stderr), (
            options,
            again.stderr,
        )
    assert (report / "index.html").is_file()
    assert "[the whole report](https://ci.example/1)" in (tmp_path / "comment.md").read_text()

    runs = json.loads(dg(proj, "runs", "--json", "-").stdout)
    recordings = [run for run in runs if run["origin"] != "confirmation"]
    assert sorted(run["commit"] for run in recordings) == sorted([main, head]), recordings
    assert {run["origin"] for run in recordings} == {"pytest", "diff"}

    pruned = dg(proj, "prune", "--keep-last", "1")
    assert pruned.returncode == 0, pruned.stderr
    left = json.loads(dg(proj, "runs", "--json", "-").stdout)
    assert [run["status"] for run in left] == ["complete"]
    assert left[0]["origin"] != "confirmation"
