"""What counts as the test selection of a recording, and where both sides find the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from diffgenome.protocol.selection import (
    case_indexed,
    find_store,
    path_words,
    pytest_node_id,
    recorded_selection,
)


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


def test_options_and_paths_are_one_selection_in_either_order() -> None:
    """A user's ``pytest --genome --genome-random-seed=0 tests`` records what ``diff``'s
    ``tests --genome-random-seed=0`` records: the same selection, so the run is reused."""
    diff_side = recorded_selection(["tests", "--genome-random-seed=0", "-x", "-k", "a or b"])
    user_side = recorded_selection(["--genome-random-seed=0", "-x", "tests", "-k", "a or b"])
    assert diff_side == user_side == ["--genome-random-seed=0", "-x", "-k", "a or b", "tests"]
    # Options keep their own order among themselves; paths theirs.
    assert recorded_selection(["b", "-x", "a", "--lf"]) == ["-x", "--lf", "b", "a"]
    assert recorded_selection(["-m", "slow", "t1", "t2"]) == ["-m", "slow", "t1", "t2"]


def test_an_option_that_may_take_the_next_argument_keeps_the_order() -> None:
    """``--foo a b`` and ``a --foo b`` differ when ``--foo`` takes a value: an option this
    module does not know keeps everything in the order given (two selections, never one)."""
    first = recorded_selection(["--foo", "a", "b"])
    second = recorded_selection(["a", "--foo", "b"])
    assert first == ["--foo", "a", "b"]
    assert second == ["a", "--foo", "b"]
    assert first != second


@pytest.mark.parametrize(
    ("test_id", "node"),
    [
        ("t.docopt::cases(3)", "t.docopt::cases(3)"),
        ("t.docopt::cases(3)#1", "t.docopt::cases(3)"),
        ("t.docopt::cases(3)#12 [row] (i=1)", "t.docopt::cases(3)"),
        ("t.py::test[a#1]", "t.py::test[a#1]"),  # a parameter's own text, not an index
        ("t.py::test[x]#2", "t.py::test[x]"),
        ("t.py::test[<secret:0123456789ab>]#1", "t.py::test"),
        ("t.py::test #1", "t.py::test"),  # a subtest labelled "#1"
    ],
)
def test_items_that_share_a_node_id_are_handed_to_pytest_by_it(test_id: str, node: str) -> None:
    """pytest knows ``cases(3)`` only, and selects every item of it: ``--genome-only``
    narrows them to the recorded ``cases(3)#1``."""
    assert pytest_node_id(test_id) == node


def test_an_index_is_read_only_at_the_end_of_the_node_id() -> None:
    assert case_indexed("t.docopt::cases(3)#1")
    assert case_indexed("t.docopt::cases(3)#1 [row]")
    assert not case_indexed("t.docopt::cases(3)")
    assert not case_indexed("t.py::test[a#1]")
    assert not case_indexed("t.py::test #1")
    assert not case_indexed("t.py::test#0")


def test_only_a_word_no_known_option_takes_is_a_test_path() -> None:
    assert path_words(["-p", "no:cacheprovider", "-o", "addopts=", "-q"]) == []
    assert path_words(["-kslow", "-Werror", "--tb=short", "-x", "--deselect", "a::b"]) == []
    assert path_words(["-o", "addopts=", "tests", "-x", "docs"]) == [2, 4]
    assert path_words(["tests/test_a.py::test_b"]) == [0]
    # An option this module does not know: what follows may be its value or a path.
    assert path_words(["--some-plugin-option", "value"]) is None
    assert path_words(["--some-plugin-option=value", "--other-flag"]) == []
    assert path_words(["-x", "--", "tests"]) == [2]
