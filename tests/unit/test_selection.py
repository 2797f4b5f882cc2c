"""What counts as the test selection of a recording, and where both sides find the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from diffgenome.protocol.selection import find_store, recorded_selection


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["-q"],
        ["-qq", "-v", "-vv", "--verbose", "--quiet"],
        ["--tb=short", "-rA", "-p", "no:cacheprovider"],
        ["--tb", "long", "-r", "fE", "--color=yes", "--no-header"],
        ["--genome", "--genome-store=/tmp/x", "--genome-key-file", "/tmp/k"],
        ["-p", "diffgenome.recording.plugin", "-pno:cacheprovider", "--durations", "5"],
    ],
)
def test_output_only_options_are_not_the_selection(args: list[str]) -> None:
    assert recorded_selection(args) == []


def test_what_chooses_or_changes_the_tests_is_kept_in_order() -> None:
    args = ["-k", "-q", "-m", "slow", "-W", "error", "-x", "-p", "xdist", "tests/unit", "-v"]
    # ``-k -q`` is the expression "-q", not the quiet flag.
    assert recorded_selection(args) == [
        "-k",
        "-q",
        "-m",
        "slow",
        "-W",
        "error",
        "-x",
        "-p",
        "xdist",
        "tests/unit",
    ]


def test_test_paths_are_written_from_the_top(tmp_path: Path) -> None:
    (tmp_path / "proj" / "tests").mkdir(parents=True)
    (tmp_path / "proj" / "tests" / "test_a.py").write_text("")
    here = str(tmp_path / "proj")
    from_proj = recorded_selection(["tests/test_a.py::test_x", "-q"], here, str(tmp_path))
    from_tests = recorded_selection(["test_a.py::test_x"], here + "/tests", str(tmp_path))
    assert from_proj == from_tests == ["proj/tests/test_a.py::test_x"]
    # Not a path here: kept as given.
    assert recorded_selection(["nothing/here.py"], here, str(tmp_path)) == ["nothing/here.py"]


def test_the_store_is_the_nearest_one_up_to_the_git_top(tmp_path: Path) -> None:
    top = tmp_path / "repo"
    deep = top / "proj" / "tests"
    deep.mkdir(parents=True)
    assert find_store(str(deep), str(top)) == str(top / ".diffgenome")
    (top / "proj" / ".diffgenome").mkdir()
    assert find_store(str(deep), str(top)) == str(top / "proj" / ".diffgenome")
    assert find_store(str(top), str(top)) == str(top / ".diffgenome")
    # Above the git top nothing is looked at; outside git only the folder itself.
    (tmp_path / ".diffgenome").mkdir()
    assert find_store(str(deep), str(top)) == str(top / "proj" / ".diffgenome")
    assert find_store(str(top / "proj" / "tests"), None) == str(deep / ".diffgenome")
