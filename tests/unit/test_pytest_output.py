"""How far a pytest session is, read from its output: real pytest sessions in every output
style, fed in the pieces a pipe delivers them in, and in any other cut."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from diffgenome.analysis.record.pytest_output import PytestProgress

SUITE = """
import pytest


@pytest.mark.parametrize("i", range(7))
def test_many(i):
    assert i >= 0


def test_fails():
    assert False


@pytest.mark.skip(reason="not here")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known")
def test_known():
    assert False
"""

OTHER = """
def test_one():
    print("...")  # output that looks like progress, shown with -s


def test_two():
    pass
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    (root / "test_a.py").write_text(textwrap.dedent(SUITE))
    (root / "test_b.py").write_text(textwrap.dedent(OTHER))
    return root


def session(root: Path, *args: str) -> list[bytes]:
    """The output of a real pytest session as the pieces a pipe delivered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE_"))}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-p",
            "no:hypothesispytest",
            *args,
        ],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    pieces = list(iter(lambda: os.read(proc.stdout.fileno(), 65536), b""))  # type: ignore[union-attr]
    proc.wait(timeout=120)
    proc.stdout.close()
    assert proc.returncode == 1, b"".join(pieces).decode()  # test_fails fails
    return pieces


def follow(pieces: list[bytes]) -> tuple[PytestProgress, list[tuple[int | None, int | None]]]:
    seen = PytestProgress()
    states = []
    for piece in pieces:
        seen.feed(piece.decode())
        states.append((seen.done, seen.total))
    return seen, states


@pytest.mark.parametrize(
    ("args", "total"),
    [
        ((), 12),
        (("-v",), 12),
        (("-s",), 12),
        (("-o", "console_output_style=count"), 12),
        (("-o", "console_output_style=classic"), 12),
        (("-k", "many or fails"), 8),  # collected 12 items / 4 deselected / 8 selected
        (("-n", "2"), 12),
        (("-n", "2", "-v"), 12),
    ],
)
def test_a_session_ends_with_every_selected_test_done(
    suite: Path, args: tuple[str, ...], total: int
) -> None:
    seen, states = follow(session(suite, *args))
    assert (seen.done, seen.total) == (total, total)
    dones = [done for done, _ in states if done is not None]
    assert dones == sorted(dones), dones  # never goes back
    assert all(done <= total for done in dones)


def test_quiet_gives_no_total_but_counts_and_the_percentage(suite: Path) -> None:
    seen, _ = follow(session(suite, "-q"))
    assert seen.total is None
    assert seen.percent == 100
    assert seen.done == 12


def test_the_pieces_may_be_cut_anywhere(suite: Path) -> None:
    whole = b"".join(session(suite)).decode()
    expected = PytestProgress()
    expected.feed(whole)
    for size in (1, 2, 7, 64):
        seen = PytestProgress()
        for start in range(0, len(whole), size):
            seen.feed(whole[start : start + size])
        assert (seen.done, seen.total, seen.percent) == (
            expected.done,
            expected.total,
            expected.percent,
        )


def test_a_half_written_line_counts_its_letters() -> None:
    seen = PytestProgress()
    seen.feed("collected 412 items\n\ntests/test_a.py ")
    assert (seen.done, seen.total) == (0, 412)
    seen.feed("..F")
    assert seen.done == 3
    seen.feed("s")
    assert seen.done == 4


def test_the_percentage_bounds_a_count_that_letters_got_wrong() -> None:
    """A teardown error adds an ``E`` to a test that already had its ``.``; pytest's own
    percentage (done * 100 // total) keeps the count honest."""
    seen = PytestProgress()
    seen.feed("collected 200 items\n\n")
    seen.feed("tests/test_a.py ..E..E..E..E " + " " * 40 + "[  4%]\n")  # 12 letters, 8 tests
    assert seen.done == 9  # 4% of 200 is 8 or 9 tests done; 12 is impossible
    seen.feed("tests/test_b.py .")
    assert seen.done == 10  # one more test after the 4%: the line being written counts


def test_a_long_file_counts_as_its_letters_come() -> None:
    """The percentage at the end of a short file's line does not hold back the letters of
    the long file after it (#25 point 10: 5/284 for ten seconds, then 243/286)."""
    seen = PytestProgress()
    seen.feed("collected 284 items\n\ntest/test_api.py ..... " + " " * 40 + "[  1%]\n")
    assert seen.done == 5
    seen.feed("test/test_output.py ")
    counts = []
    for _ in range(238):
        seen.feed(".")
        counts.append(seen.done)
    assert counts == list(range(6, 244))
    seen.feed(" " * 10 + "[ 85%]\n")
    assert seen.done == 243


def test_what_is_no_progress_is_not_counted() -> None:
    seen = PytestProgress()
    seen.feed(
        "============================= test session starts ==========\n"
        "platform linux -- Python 3.12.1, pytest-9.2.0, pluggy-1.7.0\n"
        "rootdir: /tmp/x\n"
        "collected 3 items / 1 error\n"
        "\n"
        "==================================== ERRORS ====\n"
    )
    assert (seen.done, seen.total) == (0, 3)


def test_colour_is_read_through() -> None:
    seen = PytestProgress()
    seen.feed("\x1b[1mcollected 2 items\x1b[0m\n\ntest_a.py \x1b[32m.\x1b[0m\x1b[32m.\x1b[0m")
    seen.feed("\x1b[32m                  [100%]\x1b[0m\n")
    assert (seen.done, seen.total, seen.percent) == (2, 2, 100)


def test_a_test_that_prints_a_lot_without_a_newline_does_not_stop_the_count() -> None:
    seen = PytestProgress()
    seen.feed("collected 3 items\n\ntests/test_a.py ")
    for _ in range(200):
        seen.feed("hello " * 100)  # a test's own output, with -s
    seen.feed(".")
    assert (seen.done, seen.total) == (1, 3)
    seen.feed(".\n")
    seen.feed("tests/test_b.py .")
    assert seen.done == 3
