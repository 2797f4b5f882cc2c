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
from diffgenome.protocol import identity
from diffgenome.protocol.formats import (
    EFFECTS,
    GENOME_FORMAT,
    NAMING,
    VALUES,
    effects_of,
    naming_of,
    values_of,
)
from diffgenome.protocol.runs import ENVIRONMENT_CONFIG_KEY, ORIGIN_CONFIRMATION, recording_key
from diffgenome.protocol.selection import recorded_selection
from diffgenome.protocol.vocab import REASON_FOREIGN_MODULE
from diffgenome.store.reader import RunSummary, StoreReader

ORIGIN_DIFF = "diff"

#: Why a diff's own run is not reused: its environment's fingerprint is not this diff's
#: (docs/diffing.md, "Reuse": every variable but the CI job's own, the folder, the ignored
#: files copied in, the distributions installed).
ANOTHER_ENVIRONMENT = (
    "it was recorded in another environment (another folder, variables or installed distributions)"
)


def reusable_run(
    reader: StoreReader,
    sha: str,
    selection: Sequence[str],
    repo: Repository | None,
    python: str,
    fingerprint: str | None,
    environment: str | None = None,
    refused: list[tuple[RunSummary, str]] | None = None,
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
    the CI ran it). ``refused``, when given, gets each newer run of ``sha`` that was looked
    at and passed over, with why: a user who ran ``pytest --genome`` to save the diff its
    recording can then be told what made it another recording."""
    here = os.path.join(repo.toplevel, repo.prefix) if repo else os.getcwd()
    top = repo.toplevel if repo else None
    chosen = recorded_selection(selection, here, top)
    seed = os.environ.get("PYTHONHASHSEED") or DIFF_HASH_SEED
    for summary in reader.runs():  # newest first
        if summary.commit != sha:
            continue
        why = _refusal(reader, summary, sha, chosen, python, fingerprint, environment, seed)
        if why is None:
            return summary
        if refused is not None:
            refused.append((summary, why))
    return None


def _refusal(
    reader: StoreReader,
    summary: RunSummary,
    sha: str,
    chosen: list[str],
    python: str,
    fingerprint: str | None,
    environment: str | None,
    seed: str,
) -> str | None:
    """Why ``summary`` cannot stand for this diff's recording of ``sha``, in the words a
    user can act on; None when it can."""
    if not summary.complete:
        return "it is incomplete"
    if summary.dirty is not False:
        return "it was recorded from a tree with uncommitted changes or untracked files"
    if summary.python != python:
        return f"it was recorded by Python {summary.python}, this diff records with {python}"
    if summary.tests < 1:  # an empty selection (<import> is not counted)
        return "it holds no test"
    if summary.recording_key is None:
        return "it has no recording key (an older recorder made it)"
    if summary.key_fingerprint != fingerprint:
        return "it was recorded with another digest key (--genome-key-file)"
    raw = reader.run(summary.id).get("config")
    config: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
    config.pop("recording_key", None)
    recorder = f"diffgenome {identity.version()}"
    if config.get("recorder") != recorder:
        return f"it was recorded by {config.get('recorder') or 'another recorder'}, not {recorder}"
    # The recorder's version does not change with every revision of what it records (an
    # editable install, a development build): a run of another revision would not be
    # comparable with this diff's other side.
    if config.get("genome_format") != GENOME_FORMAT:
        return f"it is a {config.get('genome_format')} recording, this diff records {GENOME_FORMAT}"
    if naming_of(config) != NAMING:
        return f"it names code by naming revision {naming_of(config)}, this diff by {NAMING}"
    if values_of(config) != VALUES:
        return f"it digests values by values revision {values_of(config)}, this diff by {VALUES}"
    if effects_of(config) != EFFECTS:
        return (
            f"it records effects by effects revision {effects_of(config)}, this diff by {EFFECTS}"
        )
    if config.get("carry"):
        return "it recorded only the tests a change reached (diff --selective)"
    if config.get("hash_seed") != seed:
        return (
            f"it was recorded with PYTHONHASHSEED {config.get('hash_seed') or 'unset'}, this "
            f"diff records with {seed}"
        )
    recorded_in = config.get(ENVIRONMENT_CONFIG_KEY)
    if recorded_in != environment and (
        recorded_in is not None or summary.origin in (ORIGIN_DIFF, ORIGIN_CONFIRMATION)
    ):
        return ANOTHER_ENVIRONMENT
    if recording_key(sha, False, summary.python, chosen, config) != summary.recording_key:
        if list(summary.selection) != chosen:
            return (
                f"its selection is `{' '.join(summary.selection) or '(default)'}`, this diff "
                f"records `{' '.join(chosen) or '(default)'}`"
            )
        return "its recording options differ from this diff's"
    if _recorded_elsewhere(reader, summary.id):
        return "a test imported project code from outside the recorded tree"
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
