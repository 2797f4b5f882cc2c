"""End-to-end: a gap names only code whose evidence the recorder would have collected (#10.4).

Decisions in test code (asserts, ifs in tests and fixtures) are not recorded, so a new test's
asserts must not be reported as "decision outcome never observed"; a new decision in project
code that no test takes both ways still is.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import GitRepo, cli_json, write_files

BASE = {
    "pkg/__init__.py": "",
    "pkg/calc.py": """
        def clamp(x):
            return x
    """,
    "tests/test_calc.py": """
        from pkg.calc import clamp


        def test_clamp():
            assert clamp(1) == 1
    """,
}
HEAD = {
    "pkg/calc.py": """
        def clamp(x):
            if x > 10:
                return 10
            return x
    """,
    "tests/test_more.py": """
        from pkg.calc import clamp


        def test_small_values():
            for x in (1, 2, 3):
                if x:
                    assert clamp(x) == x
            assert clamp(0) == 0
    """,
}


def test_new_asserts_in_tests_are_no_gaps_but_project_decisions_are(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, BASE)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, HEAD)
    _code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    by_symbol = {entry["symbol"]: entry for entry in document["code_changes"]}
    new_test = by_symbol["py:tests.test_more.test_small_values"]
    assert new_test["change"] == "added"
    assert new_test["tests_head"] == ["tests/test_more.py::test_small_values"]
    assert new_test["gaps"] == []
    clamp = by_symbol["py:pkg.calc.clamp"]
    assert clamp["change"] == "modified"
    assert len(clamp["gaps"]) == 1 and clamp["gaps"][0].endswith(" true"), clamp["gaps"]


CONFTEST_BASE = {
    "pkg/__init__.py": "",
    "pkg/settings.py": """
        import sys

        LIMIT = 3 if sys.maxsize > 1 else 2
    """,
    "pkg/calc.py": """
        def clamp(x):
            return x
    """,
    "tests/conftest.py": """
        import pkg.settings  # imported while pytest starts up, before recording
    """,
    "tests/test_calc.py": """
        from pkg.calc import clamp
        from pkg import settings


        def test_clamp():
            assert clamp(settings.LIMIT) >= 3
    """,
}


def test_module_code_run_before_recording_is_disclosed_not_called_unexecuted(
    tmp_path: Path,
) -> None:
    """A module a conftest.py imports runs before the recorder starts: its body did run, so
    "not executed by any test" would be false; ``<import>`` says which bodies it did not see."""
    repo = tmp_path / "repo"
    write_files(repo, CONFTEST_BASE)
    GitRepo.init(repo).commit_all("initial")
    write_files(
        repo,
        {
            "pkg/settings.py": """
                import sys

                LIMIT = 4 if sys.maxsize > 1 else 2
            """
        },
    )
    _, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE", codes=(0, 1))
    [settings] = [c for c in document["code_changes"] if c["symbol"] == "py:pkg.settings"]
    assert settings["gaps"][0].startswith("ran before recording started"), settings
    assert not any("not executed" in gap for gap in settings["gaps"])
    [imports] = [t for t in document["tests"] if t["id"] == "<import>"]
    assert imports["status"] == "unverified"
    # pkg and pkg.settings, on both sides alike: nothing that could hide a change
    assert "head: imported-before-recording:2" in imports["reasons"], imports
    assert "base: imported-before-recording:2" in imports["reasons"], imports
    assert imports["may_hide_change"] is False


def test_an_overload_stub_is_never_a_gap(tmp_path: Path) -> None:
    """``@typing.overload`` stubs never run: listing them as "not executed by any test" (seen
    on pathspec 0.11.2 → 0.12.1: two stubs of ``GitIgnoreSpec.from_lines``) is a false gap."""
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/m.py": "def f(x):\n    return x\n",
            "tests/test_m.py": "from pkg.m import f\n\n\ndef test_f():\n    assert f(1) == 1\n",
        },
    )
    GitRepo.init(repo).commit_all("initial")
    write_files(
        repo,
        {
            "pkg/m.py": """
                from typing import overload


                @overload
                def f(x: int) -> int: ...
                @overload
                def f(x: str) -> str: ...
                def f(x):
                    return x
            """
        },
    )
    _, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    entries = {entry["symbol"]: entry for entry in document["code_changes"]}
    stubs = [symbol for symbol in entries if "[overload]" in symbol]
    assert stubs, entries  # the stubs are code changes ...
    for symbol in stubs:
        assert entries[symbol]["gaps"] == [], entries[symbol]  # ... never gaps


def test_test_helpers_and_project_asserts_are_no_gaps(tmp_path: Path) -> None:
    """#24.8: gaps are about project code. A changed helper under the tests folder that no
    test calls is test code (its file holds no recorded symbol, so only the recordings' test
    roots say so); an ``assert`` in project code that held is no untaken branch, its failing
    outcome is a bug, not a path to test."""
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/calc.py": "def half(x):\n    return x // 2\n",
            "tests/__init__.py": "",
            "tests/helpers.py": "def unused(x):\n    return x\n",
            "tests/test_calc.py": """
                from pkg.calc import half


                def test_half():
                    assert half(4) == 2
            """,
        },
    )
    GitRepo.init(repo).commit_all("initial")
    write_files(
        repo,
        {
            "pkg/calc.py": """
                def half(x):
                    assert x >= 0
                    if x > 100:
                        return 50
                    return x // 2
            """,
            "tests/helpers.py": "def unused(x):\n    if x:\n        return x\n    return 0\n",
        },
    )
    _, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    entries = {entry["symbol"]: entry for entry in document["code_changes"]}
    assert entries["py:tests.helpers.unused"]["gaps"] == [], entries["py:tests.helpers.unused"]
    half = entries["py:pkg.calc.half"]
    # the ``if`` never taken true is a gap; the assert that always held is not
    assert len(half["gaps"]) == 1 and half["gaps"][0].endswith(" true"), half["gaps"]
    assert "/if[" in half["gaps"][0]
