"""``diffgenome combine``: one run from the shards of a suite recorded on several machines.

Each CI job records a slice of the suite (``-k``, a test path, pytest-split) with ``pytest
--genome --genome-shard I/N`` (or pytest-split's ``--group I --splits N``, read by the
recorder) into a store of its own. ``combine`` reads one run from each input -- a store (its
newest run, or its newest of ``--commit``) or an exported ``diffgenome-genome`` document --,
checks that they are shards of one recording (the same commit, interpreter, digest key and
recording options, one run per shard), and writes a new run to the output store whose tests
are the union of the shards' tests.

The combined run is ``complete`` only when every shard 1..N is there and complete; a
missing shard, or an incomplete one, makes it ``incomplete`` with a reason that names the
shard, so that a diff against it reports the absent tests as ``unverified``, never as
``removed``. A test recorded by more than one shard (``<import>`` always is: every shard
collects) is kept once when the recordings agree; when they differ the lowest shard's is
kept, marked unverified (``shards-disagree:1/3,2/3``). Input stores are only read.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from diffgenome.analysis.validate import validated_genome
from diffgenome.protocol.errors import UserError
from diffgenome.protocol.formats import FormatError, check_genome_format, genome_format_of
from diffgenome.protocol.runs import (
    SHARD_CONFIG_KEY,
    STATUS_COMPLETE,
    STATUS_INCOMPLETE,
    STATUS_RUNNING,
    new_run_id,
    recording_key,
    shard_of,
)
from diffgenome.protocol.selection import recorded_selection
from diffgenome.protocol.vocab import (
    IMPORT_TEST_ID,
    REASON_SHARDS_DISAGREE,
)
from diffgenome.store.compact import confirm_predicates, tests_predicates
from diffgenome.store.key import KEY_FILE, key_fingerprint
from diffgenome.store.layout import DB_FILE, open_store, sql_error
from diffgenome.store.reader import StoreReader, stored_phases
from diffgenome.store.rows import (
    NO_OWNER,
    insert_run,
    insert_symbols,
    insert_tests,
    join_worker,
    leave_worker,
    test_phases,
)

# Options that only say which slice a shard ran: left out of the combined run's selection,
# which then reads like the serial run's (``--genome-shard``; pytest-split's).
SHARD_OPTIONS = ("--genome-shard", "--group", "--splits")
# Same encoding as the recorder's writer: the store's text and blobs read back alike.
_MIN_COMMIT_PREFIX = 4


class CombineError(UserError):
    """Shards that cannot be combined, or an input that cannot be read; one line."""


@dataclass
class Part:
    """One input: the run it contributes and where it came from."""

    source: str
    document: dict[str, Any]
    shard: tuple[int, int] | None

    @property
    def run(self) -> dict[str, Any]:
        run: dict[str, Any] = self.document["run"]
        return run

    @property
    def name(self) -> str:
        label = f"shard {self.shard[0]}/{self.shard[1]}" if self.shard else "run"
        return f"{label} ({self.source}, run {self.run.get('id')})"


@dataclass
class Combined:
    """What ``combine`` wrote: the new run, its status, and the reasons for that status."""

    run_id: str
    store: str
    complete: bool
    reasons: list[str]
    tests: int
    shards: int
    expected: int
    commit: str | None
    #: Facts the user should know that change nothing about the run (the store's key).
    notes: list[str]


# -- reading the inputs ----------------------------------------------------------------------


def load_part(source: str, commit: str | None) -> Part:
    """The run ``source`` contributes: a genome document's, or a store's newest (of ``commit``)."""
    if os.path.isfile(source) and not _is_database(source):
        document = _read_document(source)
        run_commit = document["run"].get("commit")
        if commit is not None and not _same_commit(run_commit, commit):
            raise CombineError(
                f"{source} records commit {str(run_commit)[:12]}, not {commit[:12]}; "
                "pass the shards of one commit"
            )
    else:
        document = _read_store(source, commit)
    return Part(source, document, _shard_of(document["run"]))


def _is_database(path: str) -> bool:
    if os.path.basename(path) == DB_FILE:
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


#: What a shard whose document is not valid needs, and what it is not.
_RECORD_AGAIN = "record that shard again"
_NOUN = "genome document"


def _read_document(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, UnicodeDecodeError) as exc:
        raise CombineError(
            f"cannot read {path}: {exc}; pass a readable store or genome file"
        ) from None
    except ValueError as exc:
        raise CombineError(
            f"{path} is neither a store nor JSON ({' '.join(str(exc).split())}); "
            "pass a store folder or a file written by `diffgenome export`"
        ) from None
    except RecursionError:
        raise CombineError(
            f"{path} is nested too deeply to be a genome document; "
            "pass a store folder or a file written by `diffgenome export`"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("run"), dict):
        raise CombineError(f"{path} is not a genome document; pass a `diffgenome export` file")
    try:
        check_genome_format(data.get("format"))
    except FormatError as exc:
        raise CombineError(f"{path}: {exc}") from None
    return validated_genome(data, path, CombineError, again=_RECORD_AGAIN, noun=_NOUN)


def _read_store(path: str, commit: str | None) -> dict[str, Any]:
    with StoreReader.open(path) as reader:
        runs = reader.runs()  # newest first
        if commit is not None:
            runs = [r for r in runs if _same_commit(r.commit, commit)]
        if not runs:
            which = f" of commit {commit[:12]}" if commit is not None else ""
            raise CombineError(
                f"the store {path} has no run{which}; pass the store each shard recorded into"
            )
        newest = runs[0]
        if newest.status == STATUS_RUNNING:
            raise CombineError(
                f"run {newest.id} in {path} is still being recorded; combine when its "
                "pytest session has ended"
            )
        document = reader.document(newest.id)
    what = f"run {newest.id} in {path}"
    return validated_genome(
        document, what, CombineError, again=_RECORD_AGAIN, noun=_NOUN, trusted=stored_phases
    )


def _same_commit(recorded: object, wanted: str) -> bool:
    return isinstance(recorded, str) and recorded.lower().startswith(wanted.lower())


def _shard_of(run: dict[str, Any]) -> tuple[int, int] | None:
    return shard_of(run.get("config"))


# -- checking that the parts are shards of one recording ---------------------------------


def check_parts(parts: Sequence[Part], expect: int | None) -> int:
    """The number of shards the suite was split into; a one-line CombineError when the parts
    are not shards of one recording."""
    labelled = [p for p in parts if p.shard is not None]
    if labelled and len(labelled) != len(parts):
        bare = next(p for p in parts if p.shard is None)
        raise CombineError(
            f"{bare.name} carries no shard label while {labelled[0].name} does; record every "
            "shard with --genome-shard I/N (or pytest-split's --group/--splits)"
        )
    if not labelled:
        if expect is None:
            raise CombineError(
                f"{parts[0].name} carries no shard label; record each shard with "
                "--genome-shard I/N (or pytest-split's --group/--splits), or pass --expect N"
            )
        if len(parts) > expect:
            raise CombineError(
                f"{len(parts)} runs given but --expect {expect}; pass one run per shard"
            )
        count = expect
    else:
        counts = {p.shard[1] for p in labelled if p.shard is not None}
        if len(counts) > 1:
            a = parts[0]
            b = next(p for p in parts if _count(p) != _count(a))
            raise CombineError(
                f"{a.name} and {b.name} split the suite differently; combine shards of one split"
            )
        (count,) = counts
        if expect is not None and expect != count:
            raise CombineError(
                f"--expect {expect}, but the shards say the suite was split into {count}; "
                "leave --expect out or correct it"
            )
        seen: dict[int, Part] = {}
        for part in parts:
            assert part.shard is not None
            if part.shard[0] in seen:
                raise CombineError(
                    f"shard {part.shard[0]}/{count} is given twice ({seen[part.shard[0]].source} "
                    f"and {part.source}); pass one run per shard"
                )
            seen[part.shard[0]] = part
    ids: dict[str, Part] = {}
    for part in parts:
        run_id = str(part.run.get("id"))
        if run_id in ids:
            raise CombineError(
                f"run {run_id} is given twice ({ids[run_id].source} and {part.source}); "
                "pass one run per shard"
            )
        ids[run_id] = part
    _check_same(parts)
    return count


def _check_same(parts: Sequence[Part]) -> None:
    first = parts[0]

    def differing(what: str, value: Any, advice: str) -> None:
        for part in parts[1:]:
            if value(part) != value(first):
                raise CombineError(
                    f"{part.name} {what} {_show(value(part))}, {first.name} {_show(value(first))}; "
                    f"{advice}"
                )

    differing(
        "was recorded at commit", lambda p: p.run.get("commit"), "combine the shards of one commit"
    )
    differing(
        "was recorded with uncommitted changes:",
        lambda p: p.run.get("dirty"),
        "record every shard from the same clean checkout",
    )
    differing(
        "was recorded by",
        lambda p: p.run.get("python"),
        "record every shard with the same interpreter version",
    )
    differing(
        "has the digest key",
        lambda p: p.run.get("key_fingerprint"),
        "digests of different keys are not comparable: record every shard with the same "
        "--genome-key-file",
    )
    if first.run.get("key_fingerprint") is None:
        raise CombineError(
            f"{first.name} names no digest key; record the shards with --genome-key-file"
        )
    differing(
        "is",
        lambda p: p.document.get("format"),
        "record every shard with the same diffgenome",
    )
    differing(
        "was recorded on",
        lambda p: str(p.run.get("platform") or "").split("-")[0],
        "record every shard on the same operating system",
    )
    base = _options(first)
    for part in parts[1:]:
        options = _options(part)
        if options != base:
            key = sorted(k for k in set(base) | set(options) if base.get(k) != options.get(k))[0]
            raise CombineError(
                f"{part.name} has the recording option {key} = {_show(options.get(key))}, "
                f"{first.name} {_show(base.get(key))}; record every shard with the same "
                "options and diffgenome version"
            )


def _options(part: Part) -> dict[str, Any]:
    config = part.run.get("config")
    options = dict(config) if isinstance(config, dict) else {}
    options.pop(SHARD_CONFIG_KEY, None)
    options.pop("recording_key", None)
    options["<collectors>"] = part.document.get("collectors")
    return options


def _count(part: Part) -> int | None:
    return part.shard[1] if part.shard else None


def _show(value: object) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


# -- merging ---------------------------------------------------------------------------------


def strip_shard_options(selection: Sequence[str]) -> list[str]:
    """The pytest arguments without those that only chose the slice (SHARD_OPTIONS)."""
    out: list[str] = []
    skip = False
    for arg in selection:
        if skip:
            skip = False
            continue
        if arg in SHARD_OPTIONS:
            skip = True
            continue
        if any(arg.startswith(option + "=") for option in SHARD_OPTIONS):
            continue
        out.append(arg)
    return out


def _label(part: Part) -> str:
    return f"{part.shard[0]}/{part.shard[1]}" if part.shard else str(part.run.get("id"))


@dataclass
class Merged:
    """The combined document (its run without an id yet), why it is incomplete, and which
    shard each test's record came from."""

    document: dict[str, Any]
    reasons: list[str]
    shard_of_test: dict[str, str]


def merge(parts: Sequence[Part], count: int) -> Merged:
    """The shards' union: tests by id (duplicates resolved as the module says), symbols by
    id (the lowest shard's), the run described by what the shards share."""
    ordered = sorted(parts, key=lambda p: (p.shard or (0, 0), str(p.run.get("id"))))
    first = ordered[0]
    reasons: list[str] = []
    if first.shard is not None:
        present = {p.shard[0] for p in ordered if p.shard is not None}
        for index in range(1, count + 1):
            if index not in present:
                reasons.append(f"shard {index}/{count} missing: no run of it was combined")
    elif len(ordered) < count:
        reasons.append(
            f"{count - len(ordered)} of {count} shards missing: {len(ordered)} runs combined, "
            f"--expect {count}"
        )
    for part in ordered:
        if not part.run.get("complete", True):
            why = "; ".join(str(r) for r in part.run.get("incomplete_reasons") or ()) or "no reason"
            reasons.append(f"shard {_label(part)} incomplete: {why}")

    tests: dict[str, dict[str, Any]] = {}
    recorded_by: dict[str, list[str]] = {}
    differ: set[str] = set()
    for part in ordered:
        for test in part.document.get("tests") or ():
            test_id = str(test["id"])
            recorded_by.setdefault(test_id, []).append(_label(part))
            if test_id not in tests:
                tests[test_id] = dict(test)
            elif test != tests[test_id]:
                differ.add(test_id)
    for test_id in sorted(differ):
        test = tests[test_id]
        test["verified"] = False
        test["unverified_reasons"] = [
            *test.get("unverified_reasons", ()),
            f"{REASON_SHARDS_DISAGREE}:" + ",".join(recorded_by[test_id]),
        ]
    symbols: dict[str, dict[str, Any]] = {}
    for part in ordered:
        for symbol in part.document.get("symbols") or ():
            symbols.setdefault(str(symbol["id"]), symbol)

    run = _combined_run(ordered, count, reasons)
    document = {
        "format": first.document.get("format"),
        "run": run,
        "collectors": first.document.get("collectors") or [],
        "symbols": [symbols[k] for k in sorted(symbols)],
        "tests": [tests[k] for k in sorted(tests)],
    }
    return Merged(document, reasons, {k: recorded_by[k][0] for k in tests})


def _combined_run(ordered: Sequence[Part], count: int, reasons: list[str]) -> dict[str, Any]:
    first = ordered[0].run
    config = dict(first.get("config") or {})
    config.pop(SHARD_CONFIG_KEY, None)
    config.pop("recording_key", None)
    selections = [strip_shard_options(p.run.get("selection") or []) for p in ordered]
    same = all(s == selections[0] for s in selections)
    selection = selections[0] if same else []
    # What a recording key hashes (output options gone, paths from the git top): each
    # shard's recorded selection, less its slice.
    recorded = [
        strip_shard_options(p.run.get("recorded_selection") or recorded_selection(s))
        for p, s in zip(ordered, selections, strict=True)
    ]
    same = same and all(r == recorded[0] for r in recorded)
    if same:
        # The key a serial run of the same selection and options has: `diffgenome diff`
        # can reuse the combined run where it would reuse that one.
        config["recording_key"] = recording_key(
            first.get("commit"),
            first.get("dirty"),
            str(first.get("python")),
            recorded[0],
            config,
        )
    finished = [p.run.get("finished_at") for p in ordered]
    extra: dict[str, Any] = {"recorded_selection": recorded[0]} if same else {}
    return {
        **extra,
        "commit": first.get("commit"),
        "dirty": first.get("dirty"),
        "python": first.get("python"),
        "platform": first.get("platform"),
        "started_at": min(str(p.run.get("started_at")) for p in ordered),
        "finished_at": None if None in finished else max(str(f) for f in finished),
        "complete": not reasons,
        "incomplete_reasons": reasons,
        "config": config,
        "selection": selection,
        "key_fingerprint": first.get("key_fingerprint"),
        "tool": first.get("tool"),
        "shards": {
            "count": count,
            "parts": [
                {
                    "index": p.shard[0] if p.shard else None,
                    "run": p.run.get("id"),
                    "complete": bool(p.run.get("complete", True)),
                    "incomplete_reasons": list(p.run.get("incomplete_reasons") or ()),
                    "tests": len(p.document.get("tests") or ()),
                    "platform": p.run.get("platform"),
                    "selection": list(p.run.get("selection") or ()),
                }
                for p in ordered
            ],
        },
    }


# -- writing ---------------------------------------------------------------------------------


def _folder_of(path: str) -> str:
    path = os.path.abspath(path)
    if os.path.basename(path) == DB_FILE and not os.path.isdir(path):
        path = os.path.dirname(path)
    return os.path.realpath(path)


def write_combined(output: str, merged: Merged, shards: Sequence[Part]) -> tuple[str, str]:
    """Add the combined run to the store ``output`` (created if needed) in one transaction;
    the run's id and the fingerprint of the store's own key."""
    run_id = new_run_id()
    opened = open_store(output)
    conn = opened.conn
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            _insert(conn, run_id, merged, shards)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise sql_error(exc, "write the combined run", opened.db_path) from None
    finally:
        conn.close()
    return run_id, key_fingerprint(opened.key)


def _insert(conn: sqlite3.Connection, run_id: str, merged: Merged, shards: Sequence[Part]) -> None:
    document = merged.document
    run = document["run"]
    insert_run(
        conn,
        run_id,
        run,
        status=STATUS_COMPLETE if run["complete"] else STATUS_INCOMPLETE,
        collectors=document["collectors"],
        key_fingerprint=run.get("key_fingerprint"),
        reasons=run["incomplete_reasons"],
        finished_at=run.get("finished_at"),
    )
    for part in shards:
        worker = f"shard {_label(part)}"
        started = part.run.get("started_at")
        join_worker(conn, run_id, worker, joined_at=started, owner=NO_OWNER)
        leave_worker(
            conn,
            run_id,
            worker,
            left_at=part.run.get("finished_at") or started,
            ok=bool(part.run.get("complete", True)),
            reasons=list(part.run.get("incomplete_reasons") or ()),
            owner=NO_OWNER,
        )
    insert_symbols(conn, run_id, document["symbols"])
    worker_of = merged.shard_of_test
    # Addressed as a reader will check them: under the run row's config and fingerprint.
    genome_format = genome_format_of(run["config"])
    fingerprint = run.get("key_fingerprint")
    # Stored compact, as the recorder stores them (store/4, store/compact.py).
    predicates = confirm_predicates(conn, tests_predicates(document["tests"]), {})
    insert_tests(
        conn,
        run_id,
        [
            (
                f"shard {worker_of[test['id']]}",
                test,
                test_phases(test, genome_format, fingerprint, predicates=predicates),
            )
            for test in document["tests"]
        ],
    )


def combine(
    sources: Sequence[str], output: str, *, commit: str | None = None, expect: int | None = None
) -> Combined:
    """Combine the shards ``sources`` into a new run of the store ``output``."""
    if expect is not None and expect < 1:
        raise CombineError(f"--expect must be at least 1, not {expect}")
    out_folder = _folder_of(output)
    for source in sources:
        if os.path.exists(source) and _folder_of(source) == out_folder:
            raise CombineError(
                f"the output store {output} is also an input; write the combined run to "
                "another store (-o), input stores are never changed"
            )
    if commit is not None and len(commit) < _MIN_COMMIT_PREFIX:
        raise CombineError(f"--commit {commit!r} is too short; give at least 4 characters")
    parts = [load_part(source, commit) for source in sources]
    count = check_parts(parts, expect)
    merged = merge(parts, count)
    run_id, store_key = write_combined(output, merged, parts)
    document, reasons = merged.document, merged.reasons
    notes: list[str] = []
    if store_key != document["run"].get("key_fingerprint"):
        notes.append(
            f"the store {output} has a digest key of its own ({store_key}), not the shards' "
            f"({document['run'].get('key_fingerprint')}): what `diffgenome diff` records into "
            "it will not compare digests with this run; copy the shards' key file to "
            f"{os.path.join(output, KEY_FILE)} before recording there"
        )
    has_import = any(t["id"] == IMPORT_TEST_ID for t in document["tests"])
    return Combined(
        run_id=run_id,
        store=output,
        complete=not reasons,
        reasons=reasons,
        tests=len(document["tests"]) - int(has_import),
        shards=len(parts),
        expected=count,
        commit=document["run"].get("commit"),
        notes=notes,
    )
