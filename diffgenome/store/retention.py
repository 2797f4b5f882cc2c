"""Which runs a store keeps: its cap, the runs a diff under way holds, the removal of the
rest and giving their space back. The recorder applies the cap when a run finishes, and
``diffgenome diff`` and ``prune`` apply it too; all of them call these functions."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from os import getpid as _getpid
from os import uname as _uname
from typing import Final

from diffgenome.protocol.runs import (
    ORIGIN_CONFIRMATION,
    STATUS_COMPLETE,
    STATUS_INCOMPLETE,
    STATUS_RUNNING,
    process_alive,
    process_token,
)
from diffgenome.store.addresses import drop_unreferenced_genomes
from diffgenome.store.manifests import hand_down

#: How many runs a store keeps unless told otherwise: the oldest beyond it are removed when a
#: recording finishes (and said so). ``diffgenome prune --cap N`` changes it; 0 keeps all.
DEFAULT_KEEP_RUNS: Final = 20


META_KEEP_RUNS: Final = "keep_runs"


#: SQLite's incremental auto-vacuum: free pages can be given back to the file system in the
#: middle of a store's life (:func:`release_free_pages`), not only by a whole ``VACUUM``.
AUTO_VACUUM: Final = "INCREMENTAL"


def release_free_pages(conn: sqlite3.Connection) -> None:
    """Give the store's free pages back to the file system (the caller's transaction; a
    store made before incremental auto-vacuum has none to give: a no-op there)."""
    conn.execute("PRAGMA incremental_vacuum").fetchall()  # one page per step: step them all


def keep_runs(conn: sqlite3.Connection) -> int:
    """The store's cap on runs (``meta.keep_runs``, else :data:`DEFAULT_KEEP_RUNS`); 0: none."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEEP_RUNS,)).fetchone()
    try:
        value = int(row[0]) if row is not None else DEFAULT_KEEP_RUNS
    except (TypeError, ValueError):
        return DEFAULT_KEEP_RUNS
    return max(value, 0)


def set_keep_runs(conn: sqlite3.Connection, cap: int) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (META_KEEP_RUNS, str(cap))
    )


def runs_over_cap(conn: sqlite3.Connection, cap: int, protected: Iterable[str] = ()) -> list[str]:
    """Ids of the runs the store's cap removes, newest first (the oldest last).

    - A confirmation run (``origin`` confirmation) belongs to the diff it confirms: it does
      not count against the cap, stays while that diff lives, and goes, first, once the diff
      is over.
    - Of the other runs, those beyond the ``cap`` newest go, except a run still being
      recorded, a run a live diff holds (or ``protected``: the runs the diff that applies
      the cap used), and the newest complete run of each commit recorded from a clean tree
      (what ``diff`` reuses for that commit): the cap removes older, repeated, interrupted
      and uncommitted recordings; ``diffgenome prune`` removes the rest when asked.

    ``cap`` 0 keeps every run."""
    if cap <= 0:
        return []
    held = live_holds(conn) | set(protected)
    rows = conn.execute(
        "SELECT id, status, commit_sha, dirty, extra, owner_pid, owner_host, owner_token"
        " FROM runs ORDER BY started_at DESC, rowid DESC"
    ).fetchall()
    out: list[str] = []
    counted = 0
    stands_for: set[str] = set()  # commits whose newest complete clean run was seen
    for run_id, status, commit, dirty, extra, *owner in rows:
        if status == STATUS_RUNNING and not _still_running(conn, run_id, owner):
            status = STATUS_INCOMPLETE  # its writers are gone: an interrupted run
        confirmation = _origin(extra) == ORIGIN_CONFIRMATION
        newest_of_commit = (
            not confirmation
            and status == STATUS_COMPLETE
            and commit is not None
            and not dirty
            and commit not in stands_for
        )
        if newest_of_commit:
            stands_for.add(commit)
        if status == STATUS_RUNNING or run_id in held:
            counted += not confirmation
            continue
        if confirmation:
            out.append(str(run_id))
            continue
        counted += 1
        if counted > cap and not newest_of_commit:
            out.append(str(run_id))
    return out


def _still_running(conn: sqlite3.Connection, run_id: object, owner: list[object]) -> bool:
    """Whether a run marked running has a writer that may still write (the process that
    began it, or a worker that has not left it)."""
    if process_alive(*owner):
        return True
    return any(
        process_alive(pid, host, token)
        for pid, host, token in conn.execute(
            "SELECT pid, host, token FROM workers WHERE run_id = ? AND left_at IS NULL",
            (run_id,),
        )
    )


def _origin(extra: object) -> str | None:
    try:
        value = json.loads(extra) if isinstance(extra, str) else None
    except ValueError:
        return None
    origin = value.get("origin") if isinstance(value, dict) else None
    return origin if isinstance(origin, str) else None


def live_holds(conn: sqlite3.Connection) -> set[str]:
    """The runs held by a diff whose process still lives."""
    held: set[str] = set()
    for run_id, pid, host, token in conn.execute("SELECT run_id, pid, host, token FROM holds"):
        if process_alive(pid, host, token):
            held.add(str(run_id))
    return held


def hold_runs(conn: sqlite3.Connection, holder: str, run_ids: Iterable[str]) -> None:
    """``holder`` (a diff, this process) uses ``run_ids``: no cap removes them while it
    lives."""
    pid = _getpid()
    host, token = _uname().nodename, process_token(pid)
    conn.executemany(
        "INSERT OR REPLACE INTO holds (holder, run_id, pid, host, token) VALUES (?, ?, ?, ?, ?)",
        [(holder, run_id, pid, host, token) for run_id in run_ids],
    )


def release_holds(conn: sqlite3.Connection, holder: str) -> None:
    """``holder`` is over; holds of processes that are gone are dropped too."""
    conn.execute("DELETE FROM holds WHERE holder = ?", (holder,))
    gone = [
        (str(other), str(run_id))
        for other, run_id, pid, host, token in conn.execute(
            "SELECT holder, run_id, pid, host, token FROM holds"
        )
        if not process_alive(pid, host, token)
    ]
    conn.executemany("DELETE FROM holds WHERE holder = ? AND run_id = ?", gone)


def said_removals(conn: sqlite3.Connection, run_ids: list[str]) -> list[str]:
    """The runs among ``run_ids`` (before they are deleted) that a notice of the cap names:
    not the confirmation runs of diffs that are over, which were that diff's own evidence and
    went when it had reported (said after every diff, that line was mostly noise)."""
    out = []
    for run_id in run_ids:
        row = conn.execute("SELECT extra FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None or _origin(row[0]) != ORIGIN_CONFIRMATION:
            out.append(run_id)
    return out


def cap_notice(cap: int, removed: list[str]) -> str:
    """What is said when the cap removed runs (by the recorder, or as a diff's note)."""
    which = removed[0] if len(removed) == 1 else f"{removed[-1]} to {removed[0]}"
    return (
        f"removed {len(removed)} older run{'s' if len(removed) != 1 else ''} ({which}): the "
        f"store keeps its {cap} newest runs and the newest complete run of each commit; "
        "`diffgenome prune --cap N` changes that (0: keep all)"
    )


def delete_runs(conn: sqlite3.Connection, run_ids: list[str]) -> None:
    """Remove runs with their tests, symbols and workers (the caller holds a transaction);
    rows a removed run holds for a run that stays pass to that run first."""
    hand_down(conn, run_ids)
    for run_id in run_ids:
        for table, column in (
            ("tests", "run_id"),
            ("symbols", "run_id"),
            ("workers", "run_id"),
            ("holds", "run_id"),
            ("runs", "id"),
        ):
            conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (run_id,))
    if run_ids:
        drop_unreferenced_genomes(conn)


def compact(conn: sqlite3.Connection, *, at_least: float = 0.0) -> bool:
    """Give the space of removed runs back to the file system (the store file shrinks);
    only when at least the fraction ``at_least`` of the file is free (a ``VACUUM`` rewrites
    the whole file). True when it ran."""
    if at_least > 0:
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        if not pages or free / pages < at_least:
            return False
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute(f"PRAGMA auto_vacuum = {AUTO_VACUUM}")  # an older store takes it here
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return True
