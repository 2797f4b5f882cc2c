"""The pipe to the store's writer process (store/writer_process.py): big enough for what a
burst of tests hands over while the writer gathers them."""

from __future__ import annotations

import os
from typing import Any

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


def _handing_end(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int, int]:
    """The test process's end of a writer, its pipes made here (no process behind them)."""
    to_writer_r, to_writer_w = os.pipe()
    acks_r, acks_w = os.pipe()
    os.set_blocking(acks_r, False)
    end: Any = writer_process.WriterProcess.__new__(writer_process.WriterProcess)
    end._owner = os.getpid()
    end._out = writer_process._Pipe(to_writer_w)
    end._acks = writer_process._Pipe(acks_r)
    end._seq = 0
    end._read_at = 0.0
    end._said = b""
    end.unacknowledged = []
    end._lost = None
    end._failed = None
    monkeypatch.setattr(writer_process, "_monotonic", lambda: 100.0)
    return end, to_writer_r, acks_w


def test_the_writers_answers_are_read_once_time_passed_or_batches_piled_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    end, to_writer_r, acks_w = _handing_end(monkeypatch)
    try:
        end.add_tests("run", "main", [{"id": "t0"}])  # the first: read (nothing said yet)
        os.write(acks_w, b"ack 1\n")
        end.add_tests("run", "main", [{"id": "t1"}])  # the same instant: not read yet
        assert [m[0] for m in end.unacknowledged] == [1, 2]
        monkeypatch.setattr(writer_process, "_monotonic", lambda: 100.0 + 0.01)
        end.add_tests("run", "main", [{"id": "t2"}])  # time passed: read
        assert [m[0] for m in end.unacknowledged] == [2, 3]
        os.write(acks_w, b"error the disk is full\n")
        for n in range(writer_process._ACK_READ_BATCHES - 3):  # same instant, piling up
            end.add_tests("run", "main", [{"id": f"u{n}"}])
        assert end._failed is None
        with pytest.raises(writer_process.StoreError, match="the disk is full"):
            end.add_tests("run", "main", [{"id": "last"}])  # this many waiting: read
        assert len(end.unacknowledged) == writer_process._ACK_READ_BATCHES
    finally:
        for fd in (to_writer_r, acks_w, end._out.fd, end._acks.fd):
            os.close(fd)
