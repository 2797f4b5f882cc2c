"""End-to-end: a difference that comes from state other tests left says so (#24.6).

A module-level cache warmed by an earlier test makes a later, unchanged test take the
other branch and skip the computation. Neither the test nor the code it runs changed and
the call that reads the cache gets the same arguments: only the cache's state at that
call's entry differs. The test stays ``changed`` (its path did change, and the state may
have been left by changed code another test ran), with the reason ``cross-test-state``
saying where the difference comes from. A real change in the same test, or a change of the
cache's own initial value, gets no such reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import DIFF_PYTEST_ARGS, GitRepo, cli, cli_json, write_files

CACHE = """
_CACHE = {}


def compute(key):
    return key.upper()


def lookup(key):
    if key in _CACHE:
        return _CACHE[key]
    value = compute(key)
    _CACHE[key] = value
    return value
"""
TEST_LOOKUP = """
from pkg import cache


def test_lookup():
    assert cache.lookup("a") == "A"
"""
# Added before test_lookup: it runs first and leaves the cache warm.
TEST_WARM = """
from pkg import cache


def test_warm():
    assert cache.lookup("a") == "A"
"""


def _repo(tmp_path: Path) -> GitRepo:
    repo = tmp_path / "repo"
    files = {"pkg/__init__.py": "", "pkg/cache.py": CACHE, "tests/test_lookup.py": TEST_LOOKUP}
    write_files(repo, files)
    git = GitRepo.init(repo)
    git.commit_all("a cache and a test of it")
    return git


def _test(document: dict[str, Any], name: str) -> dict[str, Any]:
    (test,) = [t for t in document["tests"] if t["id"].endswith("::" + name)]
    return test


def _carried(test: dict[str, Any]) -> list[str]:
    return [r for r in test["reasons"] if r.startswith("cross-test-state:")]


def _warmed(tmp_path: Path) -> GitRepo:
    git = _repo(tmp_path)
    write_files(git.path, {"tests/test_a_warm.py": TEST_WARM})  # collected before test_lookup
    git.commit_all("a test that runs before test_lookup")
    return git


def _says_cross_test_state(test: dict[str, Any]) -> None:
    (reason,) = _carried(test)
    assert "global:_CACHE empty → one at entry of py:pkg.cache.lookup" in reason, reason
    assert "-p no:randomly" in reason, reason


def test_a_cache_warmed_by_a_new_earlier_test_is_cross_test_state(tmp_path: Path) -> None:
    """Unconfirmed: the test is ``changed`` (and fails the gate) with the reason."""
    git = _warmed(tmp_path)
    code, document = cli_json(git.path, tmp_path, "diff", "HEAD~1", "HEAD", "--no-confirm")
    lookup = _test(document, "test_lookup")
    assert lookup["status"] == "changed", lookup
    kinds = {c["kind"] for c in lookup["changes"]}
    assert {"state_changed", "branch_changed", "call_removed"} <= kinds, kinds
    _says_cross_test_state(lookup)
    assert _test(document, "test_warm")["status"] == "added"
    assert code == 1
    shown = cli(git.path, "diff", "HEAD~1", "HEAD", "--no-confirm", "--", *DIFF_PYTEST_ARGS)
    assert "cross-test-state: global:_CACHE empty → one" in shown.stdout, shown.stdout


def test_confirmed_alone_the_warmed_test_is_unstable_and_says_why(tmp_path: Path) -> None:
    """Confirmed (the default): recorded again alone, the test does the same on both sides,
    so it is ``unstable`` as before, and the reason now names the state, not chance."""
    git = _warmed(tmp_path)
    _, document = cli_json(git.path, tmp_path, "diff", "HEAD~1", "HEAD")
    lookup = _test(document, "test_lookup")
    assert lookup["status"] == "unstable", lookup
    _says_cross_test_state(lookup)


def test_a_real_change_in_the_same_test_stays_plain_changed(tmp_path: Path) -> None:
    git = _repo(tmp_path)
    write_files(
        git.path,
        {
            "tests/test_a_warm.py": TEST_WARM,
            "pkg/cache.py": CACHE.replace("return value\n", "return value.strip()\n"),
        },
    )
    git.commit_all("a test before test_lookup, and lookup changed")
    code, document = cli_json(git.path, tmp_path, "diff", "HEAD~1", "HEAD")
    lookup = _test(document, "test_lookup")
    assert lookup["status"] == "changed", lookup
    assert _carried(lookup) == [], lookup["reasons"]
    assert code == 1


def test_a_changed_initial_value_of_the_cache_is_no_cross_test_state(tmp_path: Path) -> None:
    git = _repo(tmp_path)
    write_files(git.path, {"pkg/cache.py": CACHE.replace("_CACHE = {}", '_CACHE = {"a": "A"}')})
    git.commit_all("the cache starts with an entry")
    code, document = cli_json(git.path, tmp_path, "diff", "HEAD~1", "HEAD")
    lookup = _test(document, "test_lookup")
    assert lookup["status"] == "changed", lookup
    assert "state_changed" in {c["kind"] for c in lookup["changes"]}
    assert _carried(lookup) == [], lookup["reasons"]
    assert code == 1
