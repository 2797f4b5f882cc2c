"""End-to-end: property tests draw the same examples on both sides of a diff.

hypothesis draws new examples in every session, so an identical tree differed in the values,
counts and decisions of every property test (attrs: 22 tests `changed` on a new commit with
the same tree). ``diffgenome diff`` passes ``--hypothesis-seed=0`` where hypothesis' plugin
is there and the user chose no seed.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import ALL_PLUGINS, DIFF_PYTEST_ARGS, GitRepo, cli_json, export, write_files

# hypothesis' plugin, loaded by pytest itself, is what the diff seeds.
pytestmark = ALL_PLUGINS

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/num.py": """
        def bucket(x):
            if x > 1000:
                return "big"
            if x < -1000:
                return "small"
            return "mid"
    """,
    "tests/test_num.py": """
        from hypothesis import given, settings, strategies as st

        from pkg.num import bucket


        @settings(max_examples=30, database=None)
        @given(st.integers())
        def test_bucket(x):
            assert bucket(x) in ("big", "small", "mid")
    """,
}


def test_an_identical_tree_is_quiet_for_property_tests(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE", "--no-confirm")
    [test] = [t for t in document["tests"] if t["id"].endswith("::test_bucket")]
    assert test["status"] == "unchanged", test
    assert code == 0


def test_the_users_own_seed_wins(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    args = (*DIFF_PYTEST_ARGS, "--hypothesis-seed=7")
    _, document = cli_json(
        repo, tmp_path, "diff", "HEAD", "WORKTREE", "--no-confirm", pytest_args=args
    )
    [test] = [t for t in document["tests"] if t["id"].endswith("::test_bucket")]
    assert test["status"] == "unchanged", test
    for side in ("base", "head"):
        selection = export(repo, run=document[side]["run"])["run"]["selection"]
        assert "--hypothesis-seed=7" in selection, selection
        assert "--hypothesis-seed=0" not in selection, selection


def test_an_unseeded_diff_passes_seed_zero(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE", "--no-confirm")
    selection = export(repo, run=document["head"]["run"])["run"]["selection"]
    assert "--hypothesis-seed=0" in selection, selection


JITTER = {
    "pkg/__init__.py": "",
    "pkg/retry.py": """
        import random


        def delays(n):
            return [round(random.uniform(0, 1), 6) for _ in range(n)]


        def pick(keys):
            return random.choice(sorted(keys))
    """,
    "tests/test_retry.py": """
        from pkg.retry import delays, pick


        def test_jitter():
            assert len(delays(3)) == 3


        def test_eviction():
            assert pick({"a", "b", "c"}) in "abc"
    """,
}


def test_random_draws_are_the_same_on_both_sides(tmp_path: Path) -> None:
    """google-auth's retry jitter (47 tests on an identical tree) and cachetools' RRCache:
    ``diffgenome diff`` seeds ``random`` at every test phase (``--genome-random-seed=0``)."""
    repo = tmp_path / "repo"
    write_files(repo, JITTER)
    GitRepo.init(repo).commit_all("initial")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE", "--no-confirm")
    statuses = {t["id"].rpartition("::")[2]: t["status"] for t in document["tests"]}
    assert statuses["test_jitter"] == "unchanged", document["tests"]
    assert statuses["test_eviction"] == "unchanged", document["tests"]
    assert code == 0
    run = export(repo, run=document["head"]["run"])["run"]
    assert "--genome-random-seed=0" in run["selection"]
    assert run["config"]["random_seed"] == 0
