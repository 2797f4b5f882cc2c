"""The pipe to the store's writer process (store/writer_process.py): big enough for what a
burst of tests hands over while the writer gathers them."""

from __future__ import annotations

import os

import pytest

from diffgenome.store import writer_process

fcntl = pytest.importorskip("fcntl")


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="no pipe sizes here (Linux)")
def test_the_pipe_to_the_writer_is_grown_where_the_platform_allows() -> None:
    read_fd, write_fd = os.pipe()
    try:
        before = fcntl.fcntl(write_fd, fcntl.F_GETPIPE_SZ)
        writer_process._grow_pipe(write_fd)
        after = fcntl.fcntl(write_fd, fcntl.F_GETPIPE_SZ)
        # Refused (a lowered /proc/sys/fs/pipe-max-size) leaves it as it was, never smaller.
        assert after == writer_process._PIPE_BYTES or after == before
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_a_pipe_that_cannot_be_grown_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_process, "_fcntl", None)
    read_fd, write_fd = os.pipe()
    try:
        writer_process._grow_pipe(write_fd)  # nothing to ask: no error
    finally:
        os.close(read_fd)
        os.close(write_fd)
