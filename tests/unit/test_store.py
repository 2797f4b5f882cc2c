"""The embedded store: the writer and reader against real SQLite files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import genomes
import pytest

from diffgenome.analysis.models import GenomeDocument
from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.formats import GENOME_FORMATS_READ, STORE_FORMAT
from diffgenome.protocol.runs import REASON_INTERRUPTED
from diffgenome.store.addresses import phase_address
from diffgenome.store.compact import compact_phase, expand_phase
from diffgenome.store.key import KEY_FILE, key_fingerprint
from diffgenome.store.layout import DB_FILE, create_store
from diffgenome.store.reader import StoreReader, UnknownRunError
from diffgenome.store.retention import set_keep_runs
from diffgenome.store.writer import StoreWriter

COMMIT_A = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
COMMIT_B = "b1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


def make_run(
    run_id: str, commit: str | None = COMMIT_A, started: str = "2026-01-01T00:00:00Z"
) -> dict[str, object]:
    run = genomes.run(
        run_id,
        commit=commit,
        dirty=False,
        python="CPython 3.12.1",
        platform="linux-x86_64",
        started_at=started,
        config={"egress": "loopback", "recording_key": f"key-{commit}"},
        selection=["tests/", "-k", "not slow"],
        tool="diffgenome 0.1.0",
        collectors=[
            {"name": "symbols", "plane": "symbol", "fidelity": "complete", "notes": []},
            {"name": "egress", "plane": "os", "fidelity": "partial", "notes": ["no udp"]},
        ],
        recorder_extension={"kept": True},
    )
    # What the writer derives itself (completeness, the key's fingerprint) is not passed in.
    for derived in ("complete", "key_fingerprint"):
        del run[derived]
    return run


def make_test(test_id: str, outcome: str = "passed", calls: int = 1) -> dict[str, object]:
    nodes = [
        genomes.call(0, None, "py:pkg.mod.f", calls, args=[{"shape": "int", "digest": "d1"}]),
        genomes.os_event(1, 0, "connect", "example.com:443", "refused:egress-guard"),
    ]
    branches = [genomes.branch(0, "py:pkg.mod.f/if[0]", "x > 0", calls, 0)]
    return genomes.test_record(
        test_id,
        {"call": genomes.phase(nodes, branches), "setup": genomes.phase()},
        outcome,
        verified=outcome == "passed",
        unverified_reasons=[] if outcome == "passed" else ["thread outlived the test"],
        flaky_hint="extra fields survive",
    )


SYMBOLS = [
    {"id": "py:pkg.mod.f", "origin": "repo", "path": "pkg/mod.py", "line": 3, "kind": "function"},
    {"id": "py:pkg.mod", "origin": "repo", "path": "pkg/mod.py", "line": 1, "kind": "module"},
]


def record(
    store: Path,
    run_id: str,
    *,
    commit: str | None = COMMIT_A,
    started: str = "2026-01-01T00:00:00Z",
    tests: int = 3,
    complete: bool = True,
    key_file: str | None = None,
) -> None:
    with StoreWriter.open(str(store), key_file=key_file) as writer:
        writer.begin_run(make_run(run_id, commit, started))
        writer.join_run(run_id, "main")
        writer.add_symbols(run_id, SYMBOLS)
        writer.add_tests(run_id, "main", [make_test(f"tests/t.py::test_{i}") for i in range(tests)])
        writer.leave_run(run_id, "main", True, [])
        writer.finish_run(run_id, complete, [] if complete else ["crashed"], started)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / ".diffgenome"


def read(store: Path) -> Iterator[StoreReader]:
    reader = StoreReader.open(str(store))
    try:
        yield reader
    finally:
        reader.close()


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "; " in text, text
    return text


def damaged_read(store: Path, run_id: str = "run-1") -> str:
    """The one-line error a reader gives for ``run_id`` in a store a test has damaged."""
    with (
        contextlib.closing(StoreReader.open(str(store))) as reader,
        pytest.raises(StoreError) as caught,
    ):
        reader.document(run_id)
    return one_line(caught.value)


# -- round trip ---------------------------------------------------------------------------


def test_round_trip_gives_a_valid_genome_document(store: Path) -> None:
    record(store, "run-1", tests=0)
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(make_run("run-2"))
        writer.join_run("run-2", "main")
        writer.add_symbols("run-2", SYMBOLS)
        writer.add_tests("run-2", "main", [make_test("tests/t.py::test_b", "failed")])
        writer.add_tests("run-2", "main", [make_test("tests/t.py::test_a", calls=4)])
        writer.leave_run("run-2", "main", True, [])
        writer.finish_run("run-2", True, [], "2026-01-01T00:05:00Z")

    with StoreReader.open(str(store)) as reader:
        document = reader.document("run-2")
    model = GenomeDocument.model_validate(document)

    run = document["run"]
    assert isinstance(run, dict)
    assert run["complete"] is True and run["incomplete_reasons"] == []
    assert run["selection"] == ["tests/", "-k", "not slow"]
    assert run["finished_at"] == "2026-01-01T00:05:00Z"
    assert run["recorder_extension"] == {"kept": True}
    assert "collectors" not in run
    assert [c.name for c in model.collectors] == ["symbols", "egress"]
    assert [s.id for s in model.symbols] == ["py:pkg.mod", "py:pkg.mod.f"]
    assert [t.id for t in model.tests] == ["tests/t.py::test_a", "tests/t.py::test_b"]
    tests = document["tests"]
    assert isinstance(tests, list)
    assert tests[0] == make_test("tests/t.py::test_a", calls=4)
    assert tests[1]["verified"] is False
    assert tests[1]["unverified_reasons"] == ["thread outlived the test"]


def test_each_phase_is_stored_once_as_compressed_canonical_json_by_its_address(
    store: Path,
) -> None:
    record(store, "run-1", tests=3)
    conn = sqlite3.connect(store / DB_FILE)
    cells = [row[0] for row in conn.execute("SELECT phases FROM tests")]
    bodies = dict(conn.execute("SELECT hash, body FROM genomes").fetchall())
    (fingerprint,) = conn.execute("SELECT key_fingerprint FROM runs").fetchone()
    predicates = dict(conn.execute("SELECT site, predicate FROM sites").fetchall())
    conn.close()
    phases = make_test("x")["phases"]
    assert isinstance(phases, dict)
    # Three tests with the same two phases: two bodies, every test names the same two.
    assert len(bodies) == 2 and len(set(cells)) == 1
    refs = json.loads(cells[0])
    assert sorted(refs) == ["call", "setup"]
    # Store/4: the decision record leaves out its kind, symbol and predicate, which come back
    # from its site id, its node and the sites table.
    assert predicates == {"py:pkg.mod.f/if[0]": "x > 0"}
    for name, address in refs.items():
        text = zlib.decompress(bodies[address])
        assert text.decode() == json.dumps(
            compact_phase(phases[name], predicates), sort_keys=True, separators=(",", ":")
        )
        assert address == phase_address(text, GENOME_FORMATS_READ[0], fingerprint)
        stored = json.loads(text)
        for decision in stored["branches"]:
            assert not {"kind", "symbol", "predicate"} & set(decision)
        assert expand_phase(stored, predicates.get) is None
        assert stored == phases[name]
        assert all(list(decision) == sorted(decision) for decision in stored["branches"])


def test_a_site_another_writer_gave_another_predicate_keeps_its_own_in_the_body(
    store: Path,
) -> None:
    """Store/4: the sites table holds one predicate per site id, put in by whichever writer
    came first; a record whose predicate differs (other secret rules masked it, or two
    conditions share a site id) keeps its own, and reads back as it was recorded."""
    create_store(str(store))
    conn = sqlite3.connect(store / DB_FILE)
    conn.execute("INSERT INTO sites VALUES ('py:pkg.mod.f/if[0]', 'x > [masked]')")
    conn.commit()
    conn.close()
    record(store, "run-1", tests=2)
    conn = sqlite3.connect(store / DB_FILE)
    texts = [zlib.decompress(body) for (body,) in conn.execute("SELECT body FROM genomes")]
    conn.close()
    assert any(b'"predicate":"x > 0"' in text for text in texts)
    with contextlib.closing(StoreReader.open(str(store))) as reader:
        tests = reader.document("run-1")["tests"]
    assert tests[0]["phases"]["call"] == make_test("x")["phases"]["call"]  # type: ignore[index]


def test_a_body_whose_predicate_the_store_lost_is_a_damaged_record(store: Path) -> None:
    record(store, "run-1", tests=1)
    conn = sqlite3.connect(store / DB_FILE)
    conn.execute("DELETE FROM sites")
    conn.commit()
    conn.close()
    assert "predicate of site 'py:pkg.mod.f/if[0]' is not in the store" in damaged_read(store)


def test_two_stores_with_one_key_read_their_bodies_each_from_its_own_sites(
    tmp_path: Path,
) -> None:
    """The same compact bytes in two stores that share a digest key are put back from each
    store's own sites table: a process that read one store first must not hand its decoded
    bodies to the reader of the other."""
    key = tmp_path / "shared.key"
    key.write_bytes(b"k" * 32)
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        record(folder, "run-1", tests=1, key_file=str(key))
    conn = sqlite3.connect(second / DB_FILE)
    conn.execute("UPDATE sites SET predicate = 'x > limit'")
    conn.commit()
    conn.close()
    predicates = []
    for folder in (first, second):
        with contextlib.closing(StoreReader.open(str(folder))) as reader:
            [test] = reader.document("run-1")["tests"]
            predicates.append(test["phases"]["call"]["branches"][0]["predicate"])
    assert predicates == ["x > 0", "x > limit"]


def test_runs_that_recorded_the_same_phases_share_their_bodies(store: Path) -> None:
    record(store, "run-1", tests=50)
    for n in range(2, 6):
        record(store, f"run-{n}", tests=50)
    conn = sqlite3.connect(store / DB_FILE)
    (bodies,) = conn.execute("SELECT COUNT(*) FROM genomes").fetchone()
    conn.close()
    assert bodies == 2
    with contextlib.closing(StoreReader.open(str(store))) as reader:
        documents = [reader.document(f"run-{n}") for n in range(1, 6)]
    for document in documents[1:]:
        assert document["tests"] == documents[0]["tests"]


def test_a_batch_that_failed_to_store_does_not_count_its_bodies_as_stored(store: Path) -> None:
    """A writer names the bodies it already stored without offering them again: only a
    committed batch may teach it that, or a later test would name a body the store lacks."""
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(make_run("run-1"))
        writer.join_run("run-1", "main")
        # A record without an id fails its batch (a record with a value JSON cannot hold
        # costs only itself: test_text_roundtrip.py); the batch's first test is not kept.
        broken = {k: v for k, v in make_test("tests/t.py::test_broken").items() if k != "id"}
        with pytest.raises(StoreError):
            writer.add_tests("run-1", "main", [make_test("tests/t.py::test_first"), broken])
        writer.add_tests("run-1", "main", [make_test("tests/t.py::test_a")])
        writer.add_tests("run-1", "main", [make_test("tests/t.py::test_b")])
        writer.leave_run("run-1", "main", True, [])
        writer.finish_run("run-1", True, [], "2026-01-01T00:05:00Z")
    conn = sqlite3.connect(store / DB_FILE)
    (bodies,) = conn.execute("SELECT COUNT(*) FROM genomes").fetchone()
    sizes = {row[0] for row in conn.execute("SELECT phases_size FROM tests")}
    conn.close()
    assert bodies == 2
    assert len(sizes) == 1  # the test that only named the bodies counts their size too
    with contextlib.closing(StoreReader.open(str(store))) as reader:
        tests = reader.document("run-1")["tests"]
    assert isinstance(tests, list)
    assert [t["phases"] for t in tests] == [make_test("x")["phases"]] * 2


def test_a_body_whose_bytes_do_not_match_its_address_is_a_corrupt_record(store: Path) -> None:
    record(store, "run-1", tests=1)
    conn = sqlite3.connect(store / DB_FILE)
    ((address, body),) = [
        row
        for row in conn.execute("SELECT hash, body FROM genomes")
        if b"pkg" in zlib.decompress(row[1])
    ]
    forged = zlib.compress(zlib.decompress(body).replace(b"pkg", b"pkh"))
    conn.execute("UPDATE genomes SET body = ? WHERE hash = ?", (forged, address))
    conn.commit()
    conn.close()
    assert "do not match its address" in damaged_read(store)


def test_removing_runs_removes_the_bodies_only_they_used(store: Path) -> None:
    record(store, "run-1", tests=2)
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(make_run("run-2", started="2026-01-02T00:00:00Z"))
        writer.add_tests("run-2", "main", [make_test("tests/t.py::test_0", calls=7)])
        writer.finish_run("run-2", True, [], "2026-01-02T00:01:00Z")
    conn = sqlite3.connect(store / DB_FILE)
    (before,) = conn.execute("SELECT COUNT(*) FROM genomes").fetchone()
    conn.close()
    assert before == 3  # run-2's call phase differs (7 calls); the empty setup is shared
    with StoreWriter.open(str(store)) as writer:
        with writer._tx("set the cap") as conn:
            set_keep_runs(conn, 1)
        cap, removed, said = writer.apply_cap()
    assert (cap, removed, said) == (1, ["run-1"], ["run-1"])
    conn = sqlite3.connect(store / DB_FILE)
    (after,) = conn.execute("SELECT COUNT(*) FROM genomes").fetchone()
    conn.close()
    assert after == 2
    with contextlib.closing(StoreReader.open(str(store))) as reader:
        (test,) = reader.tests("run-2")
    assert test == make_test("tests/t.py::test_0", calls=7)


def test_a_store_1_file_is_read_as_it_is_and_upgraded_by_the_next_writer(store: Path) -> None:
    from store_v1 import as_store_v1  # here: subprocesses import this module without tests/

    record(store, "run-1", tests=3)
    with contextlib.closing(StoreReader.open(str(store))) as reader:
        expected = reader.document("run-1")
    as_store_v1(store)
    before = (store / DB_FILE).read_bytes()
    with contextlib.closing(StoreReader.open(str(store))) as reader:
        assert reader.document("run-1") == expected
        assert reader.runs()[0].size > 0
    assert (store / DB_FILE).read_bytes() == before  # readers never upgrade

    record(store, "run-2", tests=3)
    conn = sqlite3.connect(store / DB_FILE)
    (layout,) = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    cells = {row[0] for row in conn.execute("SELECT phases FROM tests")}
    (bodies,) = conn.execute("SELECT COUNT(*) FROM genomes").fetchone()
    conn.close()
    assert layout == STORE_FORMAT
    assert all(isinstance(cell, str) for cell in cells) and bodies == 2
    with contextlib.closing(StoreReader.open(str(store))) as reader:
        assert reader.document("run-1") == expected
        assert reader.document("run-2")["tests"] == expected["tests"]


def test_the_upgrade_keeps_a_damaged_test_row_for_the_reader_to_name(store: Path) -> None:
    from store_v1 import as_store_v1

    record(store, "run-1", tests=2)
    as_store_v1(store, damaged="tests/t.py::test_1")
    record(store, "run-2", tests=1)
    with contextlib.closing(StoreReader.open(str(store))) as reader:
        assert len(reader.tests("run-2")) == 1
        with pytest.raises(StoreError) as caught:
            reader.document("run-1")
    assert "tests/t.py::test_1" in one_line(caught.value)


def test_a_rerun_test_replaces_the_earlier_record(store: Path) -> None:
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(make_run("run-1"))
        writer.add_tests("run-1", "gw0", [make_test("tests/t.py::test_x", "failed")])
        writer.add_tests("run-1", "gw1", [make_test("tests/t.py::test_x", "passed")])
        writer.finish_run("run-1", True, [], "2026-01-01T00:01:00Z")
    with StoreReader.open(str(store)) as reader:
        tests = reader.tests("run-1")
    assert [(t["id"], t["outcome"]) for t in tests] == [("tests/t.py::test_x", "passed")]


def test_recording_key_finds_the_newest_complete_run(store: Path) -> None:
    record(store, "old", started="2026-01-01T00:00:00Z")
    record(store, "new", started="2026-01-02T00:00:00Z")
    record(store, "broken", started="2026-01-03T00:00:00Z", complete=False)
    with StoreReader.open(str(store)) as reader:
        assert reader.find_recording(f"key-{COMMIT_A}") == "new"
        assert reader.find_recording("key-unknown") is None
        assert [r.recording_key for r in reader.runs()] == [f"key-{COMMIT_A}"] * 3


# -- completeness ---------------------------------------------------------------------------


def test_runs_list_newest_first_with_counts(store: Path) -> None:
    record(store, "r-old", started="2026-01-01T00:00:00Z", tests=2)
    record(store, "r-new", commit=COMMIT_B, started="2026-02-01T00:00:00Z", tests=5)
    with StoreReader.open(str(store)) as reader:
        runs = reader.runs()
    assert [(r.id, r.tests, r.status, r.commit) for r in runs] == [
        ("r-new", 5, "complete", COMMIT_B),
        ("r-old", 2, "complete", COMMIT_A),
    ]


def test_a_run_whose_writer_died_reads_as_interrupted(store: Path) -> None:
    script = (
        "import sys, os\n"
        "from diffgenome.store.writer import StoreWriter\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from test_store import make_run, make_test\n"
        "w = StoreWriter.open(sys.argv[1])\n"
        "w.begin_run(make_run('dead'))\n"
        "w.join_run('dead', 'main')\n"
        "w.add_tests('dead', 'main', [make_test('tests/t.py::test_1')])\n"
        "os._exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(store), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with StoreReader.open(str(store)) as reader:
        (summary,) = reader.runs()
        run = reader.document("dead")["run"]
    assert summary.status == "incomplete" and not summary.complete
    assert summary.reasons[0] == REASON_INTERRUPTED
    assert "interrupted" in summary.reasons[0]
    assert "worker main did not finish" in summary.reasons
    assert isinstance(run, dict)
    assert run["complete"] is False
    assert run["incomplete_reasons"] == list(summary.reasons)


def test_a_run_still_being_written_is_never_read_as_complete(store: Path) -> None:
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(make_run("live"))
        writer.join_run("live", "main")
        writer.add_tests("live", "main", [make_test("tests/t.py::test_1")])
        with StoreReader.open(str(store)) as reader:
            (summary,) = reader.runs()
            run = reader.run("live")
        assert summary.status == "running"
        assert run["complete"] is False and run["incomplete_reasons"]
        GenomeDocument.model_validate(reader_document(store, "live"))


def reader_document(store: Path, run_id: str) -> dict[str, object]:
    with StoreReader.open(str(store)) as reader:
        return reader.document(run_id)


def test_a_worker_that_left_with_failure_makes_the_run_incomplete(store: Path) -> None:
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(make_run("x"))
        for worker in ("main", "gw0", "gw1"):
            writer.join_run("x", worker)
        writer.leave_run("x", "gw0", True, [])
        writer.leave_run("x", "gw1", False, ["collector crashed"])
        writer.leave_run("x", "main", True, [])
        writer.finish_run("x", True, [], "2026-01-01T00:01:00Z")
    with StoreReader.open(str(store)) as reader:
        (summary,) = reader.runs()
    assert summary.status == "incomplete"
    assert summary.reasons == ("worker gw1 failed: collector crashed",)


def test_a_worker_that_never_left_makes_the_run_incomplete(store: Path) -> None:
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(make_run("x"))
        writer.join_run("x", "main")
        writer.join_run("x", "gw0")
        writer.leave_run("x", "main", True, [])
        writer.finish_run("x", True, [], "2026-01-01T00:01:00Z")
    with StoreReader.open(str(store)) as reader:
        run = reader.run("x")
    assert run["complete"] is False
    assert run["incomplete_reasons"] == ["worker gw0 did not finish"]


def test_a_run_finished_as_incomplete_keeps_its_reasons(store: Path) -> None:
    record(store, "x", complete=False)
    with StoreReader.open(str(store)) as reader:
        (summary,) = reader.runs()
    assert (summary.status, summary.reasons) == ("incomplete", ("crashed",))


def test_a_finished_run_refuses_more_tests(store: Path) -> None:
    record(store, "x")
    with StoreWriter.open(str(store)) as writer, pytest.raises(StoreError) as caught:
        writer.add_tests("x", "main", [make_test("late")])
    assert "already finished" in one_line(caught.value)
    with StoreReader.open(str(store)) as reader:
        assert "late" not in reader.test_ids("x")


# -- concurrency ----------------------------------------------------------------------------

WRITER_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[4])
from diffgenome.store.writer import StoreWriter
from test_store import make_run, make_test
store, run_id, commit = sys.argv[1:4]
w = StoreWriter.open(store)
w.begin_run(make_run(run_id, commit))
w.join_run(run_id, "main")
for start in range(0, 200, 10):
    w.add_tests(run_id, "main", [make_test(f"tests/t.py::test_{i:03d}", calls=i + 1)
                                 for i in range(start, start + 10)])
w.leave_run(run_id, "main", True, [])
w.finish_run(run_id, True, [], "2026-01-01T00:01:00Z")
print(w.key_fingerprint)
w.close()
"""


def test_two_processes_write_one_new_store_at_once(store: Path) -> None:
    here = str(Path(__file__).parent)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER_SCRIPT, str(store), run_id, commit, here],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for run_id, commit in (("first", COMMIT_A), ("second", COMMIT_B))
    ]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    fingerprints = {out.strip() for out, _ in outputs}
    assert fingerprints == {key_fingerprint((store / KEY_FILE).read_bytes())}

    with StoreReader.open(str(store)) as reader:
        runs = {r.id: r for r in reader.runs()}
        assert {r: (s.status, s.tests) for r, s in runs.items()} == {
            "first": ("complete", 200),
            "second": ("complete", 200),
        }
        for run_id in runs:
            tests = reader.tests(run_id)
            assert [t["id"] for t in tests] == [f"tests/t.py::test_{i:03d}" for i in range(200)]
            assert tests == [
                make_test(f"tests/t.py::test_{i:03d}", calls=i + 1) for i in range(200)
            ]


# -- the digest key ---------------------------------------------------------------------------


def test_the_key_is_made_once_private_and_never_stored(store: Path, tmp_path: Path) -> None:
    record(store, "x")
    key_path = store / KEY_FILE
    key = key_path.read_bytes()
    assert len(key) == 32
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    with StoreWriter.open(str(store)) as writer:
        assert writer.key == key
    with StoreReader.open(str(store)) as reader:
        assert reader.key_fingerprint("x") == key_fingerprint(key)
        exported = json.dumps(reader.document("x")).encode()
    stored = b"".join(p.read_bytes() for p in store.iterdir() if p.name.startswith(DB_FILE))
    for haystack in (stored, exported):
        assert key not in haystack
        assert key.hex().encode() not in haystack


def test_a_key_file_is_used_instead_of_the_store_key(store: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "ci.key"
    key_file.write_bytes(b"k" * 20)
    with StoreWriter.open(str(store), key_file=str(key_file)) as writer:
        assert writer.key == b"k" * 20
        assert writer.key_fingerprint == key_fingerprint(b"k" * 20)
    assert not (store / KEY_FILE).exists()

    key_file.write_bytes(b"short")
    with pytest.raises(StoreError) as caught:
        StoreWriter.open(str(store), key_file=str(key_file))
    assert "too short" in one_line(caught.value)
    with pytest.raises(StoreError) as missing:
        StoreWriter.open(str(store), key_file=str(tmp_path / "nope.key"))
    one_line(missing.value)


# -- resolving run specs ----------------------------------------------------------------------


def test_resolve_by_id_prefix_latest_and_commit(store: Path) -> None:
    record(store, "4f00-aaaa", commit=COMMIT_A, started="2026-01-01T00:00:00Z")
    record(store, "4f00-bbbb", commit=COMMIT_A, started="2026-01-02T00:00:00Z")
    record(store, "9c11-cccc", commit=COMMIT_B, started="2026-01-03T00:00:00Z")
    record(store, "9c11-dddd", commit=None, started="2026-01-04T00:00:00Z", complete=False)
    with StoreReader.open(str(store)) as reader:
        assert reader.resolve("4f00-aaaa") == "4f00-aaaa"
        assert reader.resolve("4f00-b") == "4f00-bbbb"
        assert reader.resolve("latest") == "9c11-cccc"  # the newer run is incomplete
        assert reader.resolve(COMMIT_A) == "4f00-bbbb"  # newest run of that commit
        assert reader.resolve(COMMIT_B[:7]) == "9c11-cccc"
        with pytest.raises(StoreError) as ambiguous:
            reader.resolve("4f00")
        assert "ambiguous" in one_line(ambiguous.value)
        with pytest.raises(StoreError) as both:
            reader.resolve("9c11")
        one_line(both.value)
        with pytest.raises(UnknownRunError) as unknown:
            reader.resolve("ffff")
        one_line(unknown.value)


def test_latest_without_complete_runs_is_the_newest_run(store: Path) -> None:
    record(store, "a", started="2026-01-01T00:00:00Z", complete=False)
    record(store, "b", started="2026-01-02T00:00:00Z", complete=False)
    with StoreReader.open(str(store)) as reader:
        assert reader.resolve("latest") == "b"


# -- damage and refusal -------------------------------------------------------------------------


def test_a_corrupt_test_row_is_an_error_naming_run_and_test(store: Path) -> None:
    record(store, "run-9", tests=2)
    conn = sqlite3.connect(store / DB_FILE)
    with conn:
        conn.execute(
            "UPDATE tests SET phases = ? WHERE id = ?", (b"\x00garbage", "tests/t.py::test_1")
        )
    conn.close()
    with StoreReader.open(str(store)) as reader, pytest.raises(StoreError) as caught:
        reader.document("run-9")
    message = one_line(caught.value)
    assert "run-9" in message and "tests/t.py::test_1" in message


def damage(store: Path, how: str) -> None:
    db = store / DB_FILE
    if how == "truncated":
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 2 + 100])
    elif how == "truncated-at-a-page":
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 4096 // 2 * 4096])
    elif how == "random":
        db.write_bytes(os.urandom(8192))
    elif how == "future":
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE meta SET value = 'diffgenome-store/9' WHERE key = 'format'")
        conn.close()
    elif how == "foreign":
        db.unlink()
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("CREATE TABLE notes (x)")
        conn.close()
    elif how == "empty":
        db.write_bytes(b"")


@pytest.mark.parametrize(
    "how", ["truncated", "truncated-at-a-page", "random", "future", "foreign", "empty"]
)
def test_reader_refuses_damaged_stores_without_touching_them(store: Path, how: str) -> None:
    record(store, "x", tests=40)
    damage(store, how)
    before = (store / DB_FILE).read_bytes()
    with pytest.raises(StoreError) as caught:
        StoreReader.open(str(store)).document("x")
    one_line(caught.value)
    assert (store / DB_FILE).read_bytes() == before
    if how == "future":
        assert "diffgenome-store/9" in str(caught.value)


@pytest.mark.parametrize("how", ["truncated", "truncated-at-a-page", "random", "future", "foreign"])
def test_writer_refuses_damaged_stores_without_touching_them(store: Path, how: str) -> None:
    record(store, "x", tests=40)
    damage(store, how)
    before = (store / DB_FILE).read_bytes()
    with pytest.raises(StoreError) as caught:
        StoreWriter.open(str(store))
    one_line(caught.value)
    assert (store / DB_FILE).read_bytes() == before


def test_missing_and_empty_store_folders(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as missing:
        StoreReader.open(str(tmp_path / "nowhere"))
    assert "no diffgenome store" in one_line(missing.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError) as empty:
        StoreReader.open(str(tmp_path / "empty"))
    assert "genome.sqlite is missing" in one_line(empty.value)


def test_a_store_locked_beyond_the_timeout_is_an_error(store: Path) -> None:
    record(store, "x")
    holder = sqlite3.connect(store / DB_FILE, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreError) as caught:
            StoreReader.open(str(store), timeout=0.2).runs()
        assert "locked" in one_line(caught.value)
    finally:
        holder.close()
    with StoreReader.open(str(store)) as reader:
        assert [r.id for r in reader.runs()] == ["x"]


def test_store_format_is_recorded(store: Path) -> None:
    record(store, "x")
    conn = sqlite3.connect(store / DB_FILE)
    assert conn.execute("SELECT value FROM meta WHERE key='format'").fetchone() == (STORE_FORMAT,)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


def as_store_v2(store: Path) -> None:
    """Turn the store/3 file in ``store`` back into the store/2 layout: no manifest columns
    (every run then holds its own rows, as store/2 wrote them)."""
    conn = sqlite3.connect(store / DB_FILE, isolation_level=None)
    try:
        for column in ("tests_in", "tests_manifest", "symbols_in", "symbols_manifest"):
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        conn.execute("UPDATE meta SET value = 'diffgenome-store/2' WHERE key = 'format'")
    finally:
        conn.close()


def test_a_store_v2_is_read_as_it_is_and_upgraded_by_the_next_writer(store: Path) -> None:
    record(store, "a", started="2026-01-01T00:00:00Z")
    as_store_v2(store)
    with StoreReader.open(str(store)) as reader:
        assert [r.tests for r in reader.runs()] == [3]
        before = reader.document("a")
    conn = sqlite3.connect(store / DB_FILE)
    assert conn.execute("SELECT value FROM meta WHERE key='format'").fetchone() == (
        "diffgenome-store/2",
    )
    conn.close()
    # The next writer adds the columns; the old run keeps its rows, the new one names it.
    record(store, "b", started="2026-01-01T00:00:01Z")
    conn = sqlite3.connect(store / DB_FILE)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key='format'").fetchone() == (
            STORE_FORMAT,
        )
        holders = dict(conn.execute("SELECT id, tests_in FROM runs").fetchall())
        owners = {row[0] for row in conn.execute("SELECT DISTINCT run_id FROM tests")}
    finally:
        conn.close()
    # a's manifest was never summed up (it finished under store/2): b keeps its own rows.
    assert holders == {"a": None, "b": None}
    assert owners == {"a", "b"}
    record(store, "c", started="2026-01-01T00:00:02Z")
    with StoreReader.open(str(store)) as reader:
        assert [r.tests for r in reader.runs()] == [3, 3, 3]
        assert reader.document("c")["tests"] == before["tests"]
        assert reader.symbols("c") == reader.symbols("a")
    conn = sqlite3.connect(store / DB_FILE)
    try:
        assert conn.execute("SELECT tests_in, symbols_in FROM runs WHERE id = 'c'").fetchone() == (
            "b",
            "b",
        )
    finally:
        conn.close()


# -- permissions (root ignores them, so as root the checks run with capabilities dropped) -------


def unprivileged_prefix() -> list[str] | None:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"]


def run_unprivileged(args: list[str]) -> subprocess.CompletedProcess[str]:
    prefix = unprivileged_prefix()
    if prefix is None:
        pytest.skip("running as root without setpriv: permissions cannot be tested")
    return subprocess.run(
        [*prefix, sys.executable, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


@pytest.fixture
def shared_dir(tmp_path: Path) -> Iterator[Path]:
    try:
        yield tmp_path
    finally:
        for sub in tmp_path.rglob("*"):
            if sub.is_dir():
                sub.chmod(0o755)


WRITE_ONE = """
import sys
from diffgenome.store.writer import StoreWriter, StoreError
try:
    StoreWriter.open(sys.argv[1]).begin_run({"id": "y", "python": "p", "platform": "p"})
except StoreError as exc:
    print(exc)
    sys.exit(3)
"""


def test_writer_in_a_read_only_folder_fails_in_one_line(shared_dir: Path) -> None:
    store = shared_dir / "store"
    record(store, "x")
    for path in store.iterdir():
        path.chmod(0o644)
    before = (store / DB_FILE).read_bytes()
    store.chmod(0o555)
    done = run_unprivileged(["-c", WRITE_ONE, str(store)])
    assert done.returncode == 3, done.stderr
    assert len(done.stdout.strip().splitlines()) == 1 and "; " in done.stdout
    assert (store / DB_FILE).read_bytes() == before

    fresh = shared_dir / "fresh"
    fresh.mkdir(mode=0o555)
    fresh.chmod(0o555)
    done = run_unprivileged(["-c", WRITE_ONE, str(fresh)])
    assert done.returncode == 3, done.stderr
    assert "; " in done.stdout and not list(fresh.iterdir())


READ_RUNS = """
import sys
from diffgenome.store.reader import StoreReader, StoreError
try:
    print([r.id for r in StoreReader.open(sys.argv[1]).runs()])
except StoreError as exc:
    print(exc)
    sys.exit(3)
"""


def test_reader_reads_a_store_in_a_read_only_folder(shared_dir: Path) -> None:
    store = shared_dir / "store"
    record(store, "x")
    store.chmod(0o555)
    done = run_unprivileged(["-c", READ_RUNS, str(store)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "['x']"

    store.chmod(0o000)
    done = run_unprivileged(["-c", READ_RUNS, str(store)])
    assert done.returncode == 3
    assert "permission" in done.stdout.lower() and "; " in done.stdout


def test_a_run_that_shares_its_rows_gives_their_pages_back(store: Path) -> None:
    """The rows a finished run gives up for an earlier run's (store/manifests.py) were
    written while it recorded: their pages go back to the file system at once (incremental
    auto-vacuum), so ten recordings of one commit take about the room of one."""
    record(store, "a", tests=400, started="2026-01-01T00:00:00Z")
    conn = sqlite3.connect(store / DB_FILE)
    try:
        assert conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    finally:
        conn.close()
    for n in range(1, 4):
        record(store, f"r{n}", tests=400, started=f"2026-01-01T00:00:0{n}Z")
    conn = sqlite3.connect(store / DB_FILE)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
        grown = conn.execute("PRAGMA page_count").fetchone()[0] - pages
        holders = dict(conn.execute("SELECT id, tests_in FROM runs").fetchall())
    finally:
        conn.close()
    assert holders == {"a": None, "r1": "a", "r2": "a", "r3": "a"}
    # Three run rows (and an index entry each), not three copies of 400 test rows.
    assert grown <= 3, grown
    with StoreReader.open(str(store)) as reader:
        assert [r.tests for r in reader.runs()] == [400, 400, 400, 400]
