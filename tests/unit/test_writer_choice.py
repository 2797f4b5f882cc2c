"""When a session starts a writer process (store/writer_process.py, ``--genome-writer``)."""

from __future__ import annotations

import pytest

from diffgenome.store.writer_process import AUTO_MIN_TESTS, writer_wanted


@pytest.mark.parametrize(
    ("mode", "tests", "workers", "cores", "wanted"),
    [
        ("process", 1, None, 2, True),
        ("process", 10_000, 8, 2, True),
        ("inline", 10_000, None, 8, False),
        ("auto", AUTO_MIN_TESTS - 1, None, 8, False),
        ("auto", AUTO_MIN_TESTS, None, 8, True),
        ("auto", AUTO_MIN_TESTS, None, None, True),
        # xdist with a core to spare: the writers take it.
        ("auto", 5_000, 1, 2, True),
        ("auto", 5_000, 3, 4, True),
        # A worker on every core already: the writers would only take turns with them.
        ("auto", 5_000, 2, 2, False),
        ("auto", 5_000, 4, 2, False),
    ],
)
def test_who_writes(
    mode: str, tests: int, workers: int | None, cores: int | None, wanted: bool
) -> None:
    assert writer_wanted(mode, tests, workers, cores) is wanted
