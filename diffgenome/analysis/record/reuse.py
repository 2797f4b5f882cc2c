"""Reuse: the stored run that can stand for a new recording of a revision.

A revision's recording depends on its commit, the test selection, the configuration, the
interpreter version, the store's digest key, the hash seed and the recorder's version; the
recorder hashes all of them into the run's recording key. A stored run of the same commit
whose key this diff would compute again is what a new recording would be: ``diff`` reuses
it (``--rerecord`` records anyway), whether ``pytest --genome`` or an earlier diff made it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from diffgenome.analysis.record.git import Repository
from diffgenome.analysis.record.interpreter import DIFF_HASH_SEED
from diffgenome.analysis.store import RunSummary, StoreReader
from diffgenome.protocol import identity
from diffgenome.protocol.runs import ENVIRONMENT_CONFIG_KEY, ORIGIN_CONFIRMATION, recording_key
from diffgenome.protocol.selection import recorded_selection
from diffgenome.protocol.vocab import REASON_FOREIGN_MODULE

ORIGIN_DIFF = "diff"


def reusable_run(
    reader: StoreReader,
    sha: str,
    selection: Sequence[str],
    repo: Repository | None,
    python: str,
    fingerprint: str | None,
    environment: str | None = None,
) -> RunSummary | None:
    """The newest complete run of ``sha`` that recorded what this diff would record:
    a clean tree, this interpreter version, the same key, hash seed and recorder, and
    the same test selection whatever output-only options it was given (``-q``, ``--tb``,
    ...; see :func:`diffgenome.protocol.selection.recorded_selection`), whether
    ``pytest --genome`` or an earlier diff made it. ``python``: the target interpreter's
    version; ``fingerprint``: the store key's, which this diff's recordings use;
    ``environment``: the fingerprint of the environment this diff would record in (a run a
    diff made is reused only where it is the same; a run of ``pytest --genome``, or one
    combined from its shards, has none and is reused as before, recorded where the user or
    the CI ran it)."""
    here = os.path.join(repo.toplevel, repo.prefix) if repo else os.getcwd()
    top = repo.toplevel if repo else None
    chosen = recorded_selection(selection, here, top)
    seed = os.environ.get("PYTHONHASHSEED") or DIFF_HASH_SEED
    for summary in reader.runs():  # newest first
        if (
            summary.commit != sha
            or not summary.complete
            or summary.dirty is not False
            or summary.python != python
            or summary.tests < 1  # an empty selection (<import> is not counted)
            or summary.recording_key is None
            or summary.key_fingerprint != fingerprint
        ):
            continue
        raw = reader.run(summary.id).get("config")
        config: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
        config.pop("recording_key", None)
        if config.get("recorder") != f"diffgenome {identity.version()}":
            continue
        if config.get("hash_seed") != seed:
            continue
        recorded_in = config.get(ENVIRONMENT_CONFIG_KEY)
        if recorded_in != environment and (
            recorded_in is not None or summary.origin in (ORIGIN_DIFF, ORIGIN_CONFIRMATION)
        ):
            continue
        key = recording_key(sha, False, summary.python, chosen, config)
        if key == summary.recording_key and not _recorded_elsewhere(reader, summary.id):
            return summary
    return None


def _recorded_elsewhere(reader: StoreReader, run_id: str) -> bool:
    """Whether a test of the run imported project code from outside the recorded tree
    (``foreign-module``): the run stands for another tree than its commit's, so a new
    recording must replace it (an older diffgenome, or another environment, made it)."""
    prefix = REASON_FOREIGN_MODULE + ":"
    return any(
        reason.startswith(prefix)
        for test in reader.test_summaries(run_id)
        for reason in test.unverified_reasons
    )


__all__ = ["reusable_run"]
