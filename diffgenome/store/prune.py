"""What ``diffgenome prune`` removes: every run no keep rule keeps (or, with a cap, those
beyond it), never a run still being recorded or one a diff under way holds; the cap set for
the recordings to come, and the space given back.

The CLI reads the rules from its arguments (dates as UTC text, revisions as recorded
commits) and says what went; the policy and the removal, in one transaction that a dry run
rolls back, are the store's.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.runs import STATUS_RUNNING
from diffgenome.store.layout import OpenedStore, one_line, open_store
from diffgenome.store.reader import RunSummary, is_recording
from diffgenome.store.retention import (
    compact,
    delete_runs,
    live_holds,
    runs_over_cap,
    set_keep_runs,
)


@dataclass(frozen=True)
class KeepRules:
    """The runs ``prune`` keeps: a run any rule keeps stays."""

    #: ``--keep-last``: the N newest complete recordings.
    last: int | None = None
    #: ``--keep-commit``: the runs of these recorded commits.
    commits: Collection[str] = ()
    #: ``--keep-since``: the runs started at or after this UTC text (``%Y-%m-%dT%H:%M:%SZ``).
    since: str | None = None

    def given(self) -> bool:
        """Whether any rule was given (without one, only a cap removes runs)."""
        return self.last is not None or bool(self.commits) or self.since is not None

    def kept(self, runs: Sequence[RunSummary]) -> set[str]:
        """The ids of the runs the rules keep (``runs`` newest first); every run when no rule
        is given."""
        if not self.given():
            return {run.id for run in runs}
        kept: set[str] = set()
        if self.last is not None:
            # The newest complete recordings: an interrupted run or a diff's confirmation
            # of a few tests is not what "the last N runs" are kept for.
            recordings = [run for run in runs if run.complete and is_recording(run)]
            kept.update(run.id for run in recordings[: self.last])
        kept.update(run.id for run in runs if run.commit is not None and run.commit in self.commits)
        if self.since is not None:
            since = self.since
            kept.update(run.id for run in runs if run.started_at >= since)
        return kept


def prune(
    store_dir: str,
    runs: Sequence[RunSummary],
    rules: KeepRules,
    cap: int | None,
    dry_run: bool,
) -> list[RunSummary]:
    """Remove from the store in ``store_dir`` the runs of ``runs`` (its runs, newest first)
    that ``rules`` do not keep and, with a ``cap`` (0: none), those beyond it, and set the
    cap; a ``dry_run`` asks the writer too (which runs a diff under way holds, what the cap
    would take) and rolls back. The runs that go (or would), newest first."""
    kept = rules.kept(runs)
    opened = _open_for_pruning(store_dir)
    conn = opened.conn
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if cap:
                kept -= set(runs_over_cap(conn, cap))
            # A run still being recorded, or one a diff under way uses, is never removed.
            held = live_holds(conn)
            gone = [
                run
                for run in runs
                if run.id not in kept and run.status != STATUS_RUNNING and run.id not in held
            ]
            if cap is not None:
                set_keep_runs(conn, cap)
            delete_runs(conn, [run.id for run in gone])
            conn.execute("ROLLBACK" if dry_run else "COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if gone and not dry_run:
            with contextlib.suppress(sqlite3.Error):  # busy: the space comes back later
                compact(conn)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot prune the store {store_dir}: {one_line(exc)}") from None
    finally:
        conn.close()
    return gone


def _open_for_pruning(store_dir: str) -> OpenedStore:
    try:
        return open_store(store_dir)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot prune the store {store_dir}: {one_line(exc)}") from None
