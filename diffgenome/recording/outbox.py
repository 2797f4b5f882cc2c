"""Finished tests on their way into the store: written by this process, or handed to a
writer process of their own (``--genome-writer``, recording/writer.py), and what is done when
either breaks.

Each test is written as soon as it finishes, so a session that dies without running its
hooks (``os._exit`` in a test, a segfault, SIGKILL) still leaves every finished test in the
store; a WAL commit without fsync costs far less than a test. A writer process that is lost
hands back what it did not acknowledge, and this process writes the rest; a store that breaks
mid-session (deleted, read-only, disk full) stops the recording, not the tests, and the run
says why it is incomplete where that can still be written.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from diffgenome.protocol.vocab import RUN_STORE_FAILED
from diffgenome.recording.collect import egress
from diffgenome.recording.notices import say, say_alone
from diffgenome.recording.run import Run
from diffgenome.store.layout import one_line
from diffgenome.store.writer import ForkedCopy, StoreError, StoreWriter
from diffgenome.store.writer_process import (
    WRITER_PROCESS,
    WriterLost,
    WriterProcess,
    start_writer,
    writer_name,
    writer_wanted,
)


class Outbox:
    """A session's finished tests and symbols, until the store has them."""

    def __init__(
        self,
        config: pytest.Config,
        store: StoreWriter,
        run: Run,
        worker: str,
        store_path: str,
        id_prefix: str,
        take_symbols: Callable[[], list[dict[str, object]]],
    ) -> None:
        """``take_symbols``: the symbols first seen since it was last called (the tracer's);
        ``id_prefix``: the rootdir's place in the repository, put before their paths."""
        self.config = config
        self.store = store
        self.run = run
        self.run_id = run.id
        self.worker = worker
        self.store_path = store_path
        self._id_prefix = id_prefix
        self._take_symbols = take_symbols
        # Tests finished but not yet in the store.
        self._pending: list[dict[str, Any]] = []
        #: Where finished tests go when a process of their own writes them; None: this
        #: process writes them.
        self._writer: WriterProcess | None = None
        #: The store failed: nothing more is written.
        self.broken = False
        self._failure: str | None = None
        self._failure_recorded = False

    def start_writer(self, mode: str, tests: int, workers: int | None) -> None:
        """A writer process of their own for the tests where ``mode`` asks for one, or where
        they are many enough to repay it (``--genome-writer``)."""
        if not writer_wanted(mode, tests, workers, _cores()):
            return
        try:
            with egress.unobserved():  # the recorder's own child: no test's spawn
                self._writer = start_writer(self.store, self.run_id, self.worker)
        except OSError as exc:
            # It may have joined the run before it failed: it wrote nothing, and leaves.
            with contextlib.suppress(Exception):
                self.store.leave_run(self.run_id, writer_name(self.worker), True, [])
            if mode == WRITER_PROCESS:
                say(
                    self.config,
                    f"no writer process could be started ({one_line(exc)}); this process "
                    "writes the tests itself",
                )

    def add(self, record: dict[str, Any]) -> None:
        """A finished test's record: written now (queued first, so that none is lost)."""
        self._pending.append(record)
        self.flush()

    def failed(self, exc: BaseException) -> None:
        """The store broke mid-session (deleted, read-only, disk full): tests go on, pytest
        says so once, and the run is finished as incomplete with the cause where that can
        still be written (a full disk often still takes it: see ``StoreWriter.make_room``),
        else it stays unfinished in the store, which reads as interrupted."""
        if isinstance(exc, ForkedCopy):
            if not self.broken:
                self.broken = True
                self._failure_recorded = True  # not this process's run to finish
                say_alone(self.config, str(exc))
            return
        writer, self._writer = self._writer, None
        if writer is not None:
            self._salvage(writer)
        if not self.broken:
            self.broken = True
            self._failure = f"{RUN_STORE_FAILED}: {one_line(exc)}"
            say(
                self.config,
                f"the store at {self.store_path} failed ({exc}); recording stopped, the run "
                "is incomplete",
            )
            self.record_failure()

    def _salvage(self, writer: WriterProcess) -> None:
        """The writer process met a store error: the tests it had not committed yet ran
        before whatever broke the store (a test that filled the disk), and as written by this
        process they would be there. Best effort, as this process would have written them:
        with the store's reserve given back, and nothing said when they do not fit."""
        with contextlib.suppress(Exception):
            writer.stop()
        with contextlib.suppress(Exception):
            self.store.make_room()
        with contextlib.suppress(Exception):
            writer.write_unacknowledged(self.store)

    def record_failure(self) -> None:
        """Best effort: the run says why it is incomplete (tried when the store fails and
        again when the session ends, by which time a test may have given space back)."""
        if self._failure is None or self._failure_recorded:
            return
        with contextlib.suppress(Exception):
            self.store.make_room()
        self._failure_recorded = self.run.abandon(self._failure)

    def flush(self) -> None:
        if self.broken:
            self._pending = []
            return
        try:
            self._write_pending()
        except (StoreError, sqlite3.Error, OSError) as exc:
            self._pending = []
            self.failed(exc)
        finally:
            self.say_notices()

    def say_notices(self) -> None:
        """What the writer saw happen to its descriptors (said once per kind of thing)."""
        notices = self.store.notices
        while notices:
            say(self.config, notices.pop(0))

    def _write_pending(self) -> None:
        prefix = self._id_prefix
        symbols = [
            {**info, "path": prefix + str(info["path"])} if prefix and info.get("path") else info
            for info in self._take_symbols()
        ]
        writer = self._writer
        if writer is not None:
            try:
                # A batch is queued (kept until acknowledged) before WriterLost can say the
                # writer is gone: what raised it is written again with the rest.
                if symbols:
                    writer.add_symbols(self.run_id, symbols)
                    symbols = []
                if self._pending:
                    pending, self._pending = self._pending, []
                    writer.add_tests(self.run_id, self.worker, pending)
                return
            except WriterLost as exc:
                self._writer_lost(writer, str(exc))
                symbols = []
        if symbols:
            self.store.add_symbols(self.run_id, symbols)
        if self._pending:
            self.store.add_tests(self.run_id, self.worker, self._pending)
            self._pending = []

    def _writer_lost(self, writer: WriterProcess, why: str) -> None:
        """The writer process cannot go on: this process writes what it did not acknowledge
        (tests and symbols are written by key: one written twice is the same row) and every
        later test itself."""
        self._writer = None
        writer.stop()
        writer.write_unacknowledged(self.store)
        # The writer did not leave the run itself: it did its part, this process the rest.
        self.store.leave_run(self.run_id, writer.name, True, [])
        say(
            self.config,
            f"the store's writer process stopped ({why}); this process writes the rest of "
            "the tests itself",
        )

    def finish_writer(self) -> None:
        """Wait for the writer process to commit what it was handed (before the run ends)."""
        writer = self._writer
        if writer is None:
            return
        self._writer = None
        try:
            writer.finish()
        except WriterLost as exc:
            self._writer_lost(writer, str(exc))


def _cores() -> int | None:
    """The cores this process may run on (None where that cannot be told)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()
