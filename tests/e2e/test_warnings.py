"""End-to-end: what a test warned is part of its genome (#10.7, found on a real release diff).

semver's next release added a ``DeprecationWarning`` on a new branch; the tests that took it
did everything else alike, so they read as ``touched``: a user-visible change reported as
"same behaviour". The warnings pytest catches per test are recorded and compared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import cli_json, git_commit, make_project, record, test_genome, write_files

BASE = {
    "pkg/__init__.py": "",
    "pkg/parse.py": """
        import warnings


        def parse(text):
            if text.startswith("v"):
                text = text[1:]
            return tuple(int(part) for part in text.split("."))
    """,
    "tests/test_parse.py": """
        from pkg.parse import parse


        def test_prefixed():
            assert parse("v1.2") == (1, 2)


        def test_plain():
            assert parse("1.2") == (1, 2)
    """,
}
HEAD = {
    "pkg/parse.py": """
        import warnings


        def parse(text):
            if text.startswith("v"):
                warnings.warn("a 'v' prefix is deprecated", DeprecationWarning, stacklevel=2)
                text = text[1:]
            return tuple(int(part) for part in text.split("."))
    """,
}


def _statuses(document: dict[str, Any]) -> dict[str, str]:
    return {t["id"]: t["status"] for t in document["tests"]}


def test_a_new_warning_on_a_new_branch_is_a_change_not_touched(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, BASE)
    git_commit(repo)
    write_files(repo, HEAD)
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    statuses = _statuses(document)
    assert statuses["tests/test_parse.py::test_prefixed"] == "changed", document["tests"]
    assert statuses["tests/test_parse.py::test_plain"] in ("unchanged", "touched")
    [prefixed] = [t for t in document["tests"] if t["id"].endswith("test_prefixed")]
    [change] = [c for c in prefixed["changes"] if c["kind"] == "warnings_changed"]
    assert change["base"] == []
    assert change["head"] == [
        {
            "category": "DeprecationWarning",
            "origin": "<root>/tests/test_parse.py",
            "message": "a 'v' prefix is deprecated",
            "count": 1,
        }
    ]
    assert code == 1  # a changed test fails the default gate


WARNS = {
    "pkg/__init__.py": """
        import warnings

        warnings.warn("imported", FutureWarning)


        def noisy(n):
            for i in range(n):
                warnings.warn(f"round {i % 2}", UserWarning)
            return n
    """,
    "tests/test_noisy.py": """
        import pytest
        import pkg


        def test_noisy():
            assert pkg.noisy(3) == 3


        def test_quiet():
            assert pkg.noisy(0) == 0


        def test_caught_by_the_test():
            with pytest.warns(UserWarning):
                pkg.noisy(1)
    """,
}


def test_each_test_gets_its_own_warnings_and_import_gets_collections(tmp_path: Path) -> None:
    project = make_project(tmp_path, WARNS)
    doc = record(project)
    assert doc["run"]["config"]["warnings"] == "pytest"
    noisy = test_genome(doc, "::test_noisy")["warnings"]
    # "default" shows each distinct message once per location
    assert [(w["category"], w["message"], w["count"]) for w in noisy] == [
        ("UserWarning", "round 0", 1),
        ("UserWarning", "round 1", 1),
    ]
    assert all(w["origin"] == "<root>/pkg/__init__.py" for w in noisy)
    assert test_genome(doc, "::test_quiet")["warnings"] == []
    # what the test caught itself is the test's to judge, not a warning that escaped it
    assert test_genome(doc, "::test_caught_by_the_test")["warnings"] == []
    imported = test_genome(doc, "<import>")["warnings"]
    assert [(w["category"], w["message"]) for w in imported] == [("FutureWarning", "imported")]


def test_without_pytests_warnings_plugin_nothing_is_claimed(tmp_path: Path) -> None:
    project = make_project(tmp_path, WARNS)
    doc = record(project, "-p", "no:warnings")
    assert doc["run"]["config"]["warnings"] == "not-captured"
    assert all("warnings" not in test for test in doc["tests"])


def test_warnings_are_recorded_by_xdist_workers(tmp_path: Path) -> None:
    project = make_project(tmp_path, WARNS)
    doc = record(project, "-n", "2")
    noisy = test_genome(doc, "::test_noisy")["warnings"]
    assert [w["message"] for w in noisy] == ["round 0", "round 1"]
    assert test_genome(doc, "::test_quiet")["warnings"] == []


LEAK = {
    "pkg/__init__.py": "",
    "tests/test_leak.py": """
        import gc
        import socket


        def test_leaks_a_socket():
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            del s
            gc.collect()
    """,
}


def test_resource_warnings_do_not_carry_descriptors_or_ports(tmp_path: Path) -> None:
    project = make_project(tmp_path, LEAK)
    shown = ("-W", "default::ResourceWarning")  # ignored by Python's default filters
    first = test_genome(record(project, *shown), "::test_leaks_a_socket")["warnings"]
    [leak] = first
    assert leak["category"] == "ResourceWarning"
    assert leak["message"].startswith("unclosed <socket.socket fd=N")
    assert not any(ch.isdigit() for ch in leak["message"]), leak
    second = test_genome(record(project, *shown), "::test_leaks_a_socket")["warnings"]
    assert second == first
