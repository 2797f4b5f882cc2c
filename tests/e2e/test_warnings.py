"""End-to-end: what a test warned is part of its genome (#10.7, found on a real release diff).

semver's next release added a ``DeprecationWarning`` on a new branch; the tests that took it
did everything else alike, so they read as ``touched``: a user-visible change reported as
"same behaviour". The warnings pytest catches per test are recorded and compared. Their
messages are keyed digests (#30: a message holds whatever the code put into it); a short
text is kept beside the digest only under ``--genome-preview``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from e2e.helpers import (
    DIFF_PYTEST_ARGS,
    cli_json,
    git_commit,
    make_project,
    record,
    test_genome,
    write_files,
)

DIGEST = re.compile(r"[0-9a-f]{32}")

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
    [warned] = change["head"]
    assert DIGEST.fullmatch(warned.pop("message_digest")), change
    assert warned == {
        "category": "DeprecationWarning",
        "origin": "<root>/tests/test_parse.py",
        "count": 1,
    }
    assert code == 1  # a changed test fails the default gate


REWORDED = {
    "pkg/parse.py": """
        import warnings


        def parse(text):
            if text.startswith("v"):
                warnings.warn("the 'v' prefix is deprecated", DeprecationWarning, stacklevel=2)
                text = text[1:]
            return tuple(int(part) for part in text.split("."))
    """,
}


def test_a_reworded_warning_is_a_changed_message(tmp_path: Path) -> None:
    """Only digests are stored, yet a message that says something else is a change, and the
    preview (asked for) shows both texts."""
    repo = tmp_path / "repo"
    write_files(repo, {**BASE, **HEAD})
    git_commit(repo)
    write_files(repo, REWORDED)
    preview = (*DIFF_PYTEST_ARGS, "--genome-preview")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE", pytest_args=preview)
    statuses = _statuses(document)
    assert statuses["tests/test_parse.py::test_prefixed"] == "changed", document["tests"]
    assert statuses["tests/test_parse.py::test_plain"] == "unchanged"
    [prefixed] = [t for t in document["tests"] if t["id"].endswith("test_prefixed")]
    [change] = [c for c in prefixed["changes"] if c["kind"] == "warnings_changed"]
    [was], [now] = change["base"], change["head"]
    assert was["message"] == "a 'v' prefix is deprecated"
    assert now["message"] == "the 'v' prefix is deprecated"
    assert was["message_digest"] != now["message_digest"]
    assert code == 1
    # Without the preview, the same change reads as a changed digest.
    code, plain = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE", "--rerecord")
    [prefixed] = [t for t in plain["tests"] if t["id"].endswith("test_prefixed")]
    assert prefixed["status"] == "changed"
    [change] = [c for c in prefixed["changes"] if c["kind"] == "warnings_changed"]
    assert all("message" not in w for w in change["base"] + change["head"]), change
    assert code == 1


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
    doc = record(project, "--genome-preview")
    assert doc["run"]["config"]["warnings"] == "pytest"
    assert doc["run"]["config"]["preview"] is True
    noisy = test_genome(doc, "::test_noisy")["warnings"]
    # "default" shows each distinct message once per location
    assert sorted((w["category"], w["message"], w["count"]) for w in noisy) == [
        ("UserWarning", "round 0", 1),
        ("UserWarning", "round 1", 1),
    ]
    assert all(w["origin"] == "<root>/pkg/__init__.py" for w in noisy)
    assert test_genome(doc, "::test_quiet")["warnings"] == []
    # what the test caught itself is the test's to judge, not a warning that escaped it
    assert test_genome(doc, "::test_caught_by_the_test")["warnings"] == []
    imported = test_genome(doc, "<import>")["warnings"]
    assert [(w["category"], w["message"]) for w in imported] == [("FutureWarning", "imported")]
    # Without the preview: the same warnings, the same digests (one store, one key), no text.
    plain = record(project)
    assert plain["run"]["config"]["preview"] is False
    digests = {w["message_digest"] for w in noisy}
    assert len(digests) == 2 and all(DIGEST.fullmatch(d) for d in digests)
    again = test_genome(plain, "::test_noisy")["warnings"]
    assert {w["message_digest"] for w in again} == digests
    assert all(set(w) == {"category", "origin", "message_digest", "count"} for w in again)


def test_without_pytests_warnings_plugin_nothing_is_claimed(tmp_path: Path) -> None:
    project = make_project(tmp_path, WARNS)
    doc = record(project, "-p", "no:warnings")
    assert doc["run"]["config"]["warnings"] == "not-captured"
    assert all("warnings" not in test for test in doc["tests"])


def test_warnings_are_recorded_by_xdist_workers(tmp_path: Path) -> None:
    project = make_project(tmp_path, WARNS)
    doc = record(project, "-n", "2", "--genome-preview")
    noisy = test_genome(doc, "::test_noisy")["warnings"]
    assert sorted(w["message"] for w in noisy) == ["round 0", "round 1"]
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
    shown = ("-W", "default::ResourceWarning", "--genome-preview")  # ignored by default
    first = test_genome(record(project, *shown), "::test_leaks_a_socket")["warnings"]
    [leak] = first
    assert leak["category"] == "ResourceWarning"
    assert leak["finalizing"] is True
    assert leak["message"].startswith("unclosed <socket.socket fd=N")
    assert not any(ch.isdigit() for ch in leak["message"]), leak
    # Another descriptor and port, the same digest: numbers are N before digesting.
    second = test_genome(record(project, *shown), "::test_leaks_a_socket")["warnings"]
    assert second == first
