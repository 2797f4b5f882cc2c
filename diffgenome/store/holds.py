"""The store as one diff uses it: the one reader, the writer opened once before the first
recording, the runs the diff holds while it runs, the store's cap at its end, and what
Ctrl-C leaves in it.

A diff reads the store through one :class:`~diffgenome.store.reader.StoreHandle`. Before
anything records into the store, the writer opens it (creating it and its digest key, or
upgrading its layout): both sides then pass that key, so their digests compare. Every run
the diff uses is held (``store.retention.hold_runs``), so that no recording removes it
meanwhile; the recordings leave the cap to the diff, which applies it once
(:meth:`StoreUse.finish`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from typing import Self

from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.runs import new_run_id
from diffgenome.store.key import key_fingerprint
from diffgenome.store.layout import OpenedStore, one_line, open_store
from diffgenome.store.reader import StoreHandle
from diffgenome.store.retention import (
    cap_notice,
    compact,
    delete_runs,
    hold_runs,
    keep_runs,
    release_holds,
    runs_over_cap,
    said_removals,
)


class StoreUse:
    """One diff's use of the store at ``path`` (decided once by the command)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        #: The one reader of the store for the whole diff (:meth:`close` closes it).
        self.handle = StoreHandle(self.path)
        #: This diff, as the holder of the runs it uses: no recording removes them while it
        #: runs, and its recordings leave the store's cap to it (:meth:`finish`).
        self.holder = new_run_id()
        #: The fingerprint of the store's digest key, once the writer opened it.
        self.key_fingerprint: str | None = None
        self._writer: OpenedStore | None = None
        self._writer_lock = threading.Lock()
        #: The runs the sides are (recorded, reused or named), which the cap keeps.
        self.used: set[str] = set()
        self._confirmations: set[str] = set()
        #: Every recording this diff started, by run id: what it records (for Ctrl-C's word).
        self.started: dict[str, str] = {}

    def open_writer(self) -> str:
        """Create the store (and its digest key) before anything records into it, once; the
        store's path."""
        if self.key_fingerprint is None:
            # The writer may create the store or upgrade its layout: a reader opened before
            # (a side that is a stored run) reads it anew, and is closed before the writer
            # reads the file's header (closing that descriptor would drop the reader's locks).
            self.handle.forget()
            opened = open_store(self.path)
            with self._writer_lock:
                self._writer = opened
            self.key_fingerprint = key_fingerprint(opened.key)
            self.handle.forget(writing=True)
        return self.path

    def hold(self, run_id: str, *, used: bool = True) -> None:
        """This diff uses ``run_id`` (a side when ``used``, else a confirmation): the cap of
        any recording made meanwhile keeps it."""
        if used:
            self.used.add(run_id)
        else:
            self._confirmations.add(run_id)
        with self._writer_lock:
            if self._writer is None:
                return
            try:
                hold_runs(self._writer.conn, self.holder, [run_id])
            except sqlite3.Error as exc:
                raise StoreError(
                    f"cannot write to the store {self.path}: {one_line(exc)}; check that it "
                    "is writable"
                ) from None

    def begin(self, run_id: str, subject: str, *, used: bool = True) -> None:
        """A recording of ``subject`` into ``run_id`` starts: held, and named for Ctrl-C."""
        self.started[run_id] = subject
        self.hold(run_id, used=used)

    def discard(self, run_id: str) -> None:
        """Remove ``run_id``, a recording of this diff that holds nothing (pytest collected no
        test): kept, it was a complete run of its commit, so ``latest`` named it and the cap
        kept it as that commit's newest. Best effort: the diff is failing with its own error."""
        self.used.discard(run_id)
        self._confirmations.discard(run_id)
        self.started.pop(run_id, None)
        with self._writer_lock:
            if self._writer is None:
                return
            conn = self._writer.conn
            with contextlib.suppress(sqlite3.Error), _transaction(conn):
                delete_runs(conn, [run_id])
        self.handle.forget()

    def finish(self, notes: list[str]) -> None:
        """Apply the store's cap once, at the end of a diff that recorded into the store (its
        recordings leave that to it): the confirmation runs of diffs that are over go first,
        then runs beyond the cap, never a run this diff used, one another diff under way
        holds, nor the newest complete run of a commit. What goes is a note."""
        with self._writer_lock:
            writer = self._writer
            if writer is None:
                return
            conn = writer.conn
            try:
                with _transaction(conn):
                    cap = keep_runs(conn)
                    removed = runs_over_cap(conn, cap, self.used | self._confirmations)
                    said = said_removals(conn, removed)
                    delete_runs(conn, removed)
                    release_holds(conn, self.holder)
                if removed:
                    with contextlib.suppress(sqlite3.Error):  # busy: the space comes back later
                        compact(conn, at_least=0.25)
            except sqlite3.Error as exc:
                notes.append(f"the store's cap could not be applied ({one_line(exc)})")
                return
        if said:
            notes.append(cap_notice(cap, said))
        self.handle.forget()

    def interruption(self) -> str:
        """The one line Ctrl-C ends this diff with, once its worktrees, temp folders and
        children are gone: which of its recordings the store keeps as incomplete."""
        said = "interrupted; the worktrees, temp folders and test processes are removed"
        incomplete: list[str] = []
        with contextlib.suppress(StoreError, sqlite3.Error):
            with self.handle.reader() as reader:
                present = {run.id: run for run in reader.runs()}
            for run_id, subject in self.started.items():
                run = present.get(run_id)
                if run is not None and not run.complete:
                    incomplete.append(f"{run_id} ({subject})")
        if incomplete:
            runs = ", ".join(incomplete)
            one = len(incomplete) == 1
            said += (
                f"; run{'' if one else 's'} {runs} {'is' if one else 'are'} stored as incomplete"
            )
        elif self.started:
            said += "; every recording it made is complete"
        return said

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store's reader and let go of the runs this diff held."""
        self.handle.close()
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(sqlite3.Error):
                release_holds(writer.conn, self.holder)
            writer.conn.close()


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction: committed when the block ends, rolled back when
    it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


__all__ = ["StoreUse"]
