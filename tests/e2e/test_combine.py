"""End-to-end: a suite recorded in shards (as CI matrix jobs do) and ``diffgenome combine``.

Every shard is a real ``pytest --genome`` session in its own store, as on its own CI
machine; the serial run is the same suite in one session. The combined run must diff as
``unchanged`` against the serial run, a missing shard must make it incomplete, and shards
that are not one recording must be refused in one line without touching any store.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    PY,
    GitRepo,
    clean_env,
    cli,
    cli_json,
    export,
    make_project,
    run_pytest,
)

# Three slices of the shop suite, chosen with -k as a CI matrix would.
SLICES = {
    1: "payment",
    2: "discount_tiers",
    3: "not payment and not discount_tiers",
}
# The tests of slice 2: absent when its shard is.
SLICE_2 = {
    "tests/test_pricing.py::test_discount_tiers[50]",
    "tests/test_pricing.py::test_discount_tiers[500]",
    "tests/test_pricing.py::test_discount_tiers[5000]",
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shop project recorded serially (store ``serial``) and in three shards (stores
    ``shard1``..``shard3``, the second under xdist), all with one key file."""
    tmp = tmp_path_factory.mktemp("combine")
    project = make_project(tmp, {}, base="shop")
    key = tmp / "ci.key"
    key.write_bytes(bytes(range(32)))
    stores = tmp / "stores"
    common = ("--genome", f"--genome-key-file={key}")
    done = run_pytest(project, *common, f"--genome-store={stores / 'serial'}")
    assert done.returncode == 0, done.stdout + done.stderr
    for index, expr in SLICES.items():
        # A job may run its slice under xdist: the shard is still one run.
        xdist = ("-n", "2") if index == 2 else ()
        done = run_pytest(
            project,
            *common,
            *xdist,
            f"--genome-store={stores / f'shard{index}'}",
            f"--genome-shard={index}/3",
            "-k",
            expr,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return {"project": project, "key": key, "stores": stores, "tmp": tmp}


def combine(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(project, "combine", *args)


def digests(folder: Path) -> dict[str, str]:
    """What the store's database, key and .gitignore hold, to prove that nothing changed
    them (SQLite's reader may leave an empty WAL and its index beside the database)."""
    wal = folder / "genome.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def diff_runs(project: Path, tmp: Path, store: Path, base: str, head: str) -> dict[str, Any]:
    _, diff = cli_json(
        project,
        tmp,
        "diff",
        base,
        head,
        "--store",
        str(store),
        "--no-confirm",
        "--fail-on",
        "never",
    )
    assert isinstance(diff, dict)
    return diff


def statuses(diff: dict[str, Any]) -> dict[str, str]:
    return {t["id"]: t["status"] for t in diff["tests"]}


def test_three_shards_combine_into_a_run_that_diffs_unchanged_against_the_serial_run(
    suite: dict[str, Any], tmp_path: Path
) -> None:
    project, stores = suite["project"], suite["stores"]
    out = tmp_path / "combined"
    inputs = [str(stores / f"shard{i}") for i in (3, 1, 2)]  # the order given does not matter
    before = {s: digests(Path(s)) for s in inputs}
    done = combine(project, *inputs, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "3 of 3 shards" in done.stdout and ": complete, 9 tests" in done.stdout
    # A new store makes a key of its own; recordings into it would not compare with the run.
    [note] = done.stderr.splitlines()
    assert note.startswith("diffgenome: note: the store") and "secret.key" in note
    assert {s: digests(Path(s)) for s in inputs} == before  # inputs are only read

    serial = export(project, stores / "serial")
    combined = export(project, out)
    assert combined["run"]["complete"] is True
    assert combined["run"]["incomplete_reasons"] == []
    assert combined["run"]["commit"] == serial["run"]["commit"]
    assert combined["run"]["key_fingerprint"] == serial["run"]["key_fingerprint"]
    assert "shard" not in combined["run"]["config"]
    assert [p["index"] for p in combined["run"]["shards"]["parts"]] == [1, 2, 3]
    assert [t["id"] for t in combined["tests"]] == [t["id"] for t in serial["tests"]]
    assert all(t["verified"] for t in combined["tests"]), combined["tests"]

    # The exported combined run, diffed as a document, and the stored run, diffed by id.
    exported = tmp_path / "combined.json"
    exported.write_text(json.dumps(combined))
    serial_file = tmp_path / "serial.json"
    serial_file.write_text(json.dumps(serial))
    _, by_file = cli_json(
        project, tmp_path, "diff", str(serial_file), str(exported), "--no-confirm"
    )
    assert set(statuses(by_file).values()) == {"unchanged"}, by_file["tests"]

    # Stored runs diffed by id: the combined run added to (a copy of) the serial store.
    both = tmp_path / "both"
    shutil.copytree(stores / "serial", both)
    done = combine(project, *inputs, "-o", str(both))
    assert done.returncode == 0, done.stderr
    combined_id = export(project, both, "latest")["run"]["id"]
    assert combined_id != serial["run"]["id"]
    diff = diff_runs(project, tmp_path, both, serial["run"]["id"], combined_id)
    assert diff["summary"]["unchanged"] == 10, diff["tests"]
    assert set(statuses(diff).values()) == {"unchanged"}
    # Stored as the recorder stores them (store/4): the combined run's phases are the serial
    # run's bodies, compact, not new full ones.
    with sqlite3.connect(f"file:{both / 'genome.sqlite'}?mode=ro", uri=True) as conn:
        cells = dict(conn.execute("SELECT run_id, group_concat(phases) FROM tests GROUP BY run_id"))
        bodies = [zlib.decompress(body) for (body,) in conn.execute("SELECT body FROM genomes")]
    assert any(b'"branches":[{' in body for body in bodies)
    assert not any(b'"predicate"' in body for body in bodies)
    assert set(json.loads(f"[{cells[combined_id]}]")[0].values()) <= {
        a for cell in json.loads(f"[{cells[serial['run']['id']]}]") for a in cell.values()
    }


def test_a_missing_shard_makes_the_combined_run_incomplete_not_smaller(
    suite: dict[str, Any], tmp_path: Path
) -> None:
    project, stores = suite["project"], suite["stores"]
    out = tmp_path / "combined"
    done = combine(project, str(stores / "shard1"), str(stores / "shard3"), "-o", str(out))
    assert done.returncode == 1, done.stderr
    assert "2 of 3 shards" in done.stdout and "incomplete" in done.stdout
    incomplete = [line for line in done.stderr.splitlines() if "incomplete:" in line]
    assert incomplete == ["diffgenome: incomplete: shard 2/3 missing: no run of it was combined"]
    combined = export(project, out)
    assert combined["run"]["complete"] is False
    assert combined["run"]["incomplete_reasons"] == ["shard 2/3 missing: no run of it was combined"]
    assert SLICE_2.isdisjoint(t["id"] for t in combined["tests"])

    serial = tmp_path / "serial.json"
    serial.write_text(json.dumps(export(project, stores / "serial")))
    head = tmp_path / "combined.json"
    head.write_text(json.dumps(combined))
    code, diff = cli_json(project, tmp_path, "diff", str(serial), str(head), "--no-confirm")
    assert code == 1
    assert diff["summary"]["removed"] == 0
    assert diff["summary"]["unchanged"] == 0  # an incomplete run is never read as unchanged
    by_id = {t["id"]: t for t in diff["tests"]}
    for test_id in SLICE_2:
        assert by_id[test_id]["status"] == "unverified"
        assert any("whose run is incomplete" in r for r in by_id[test_id]["reasons"])


# -- shards that are not one recording --------------------------------------------------------


@pytest.fixture(scope="module")
def strays(suite: dict[str, Any]) -> dict[str, Path]:
    """Runs that look like shard 2 but are not of the suite's recording: another key, another
    commit, another egress policy, no shard label; each in a store of its own."""
    project, key, tmp = suite["project"], suite["key"], suite["tmp"]
    out = tmp / "strays"
    expr = SLICES[2]
    labelled = ("--genome-shard=2/3", "-k", expr)
    sessions: dict[str, tuple[Path, tuple[str, ...]]] = {
        "other-key": (project, ("--genome", *labelled)),
        "other-options": (
            project,
            ("--genome", f"--genome-key-file={key}", "--genome-egress=block", *labelled),
        ),
        "no-label": (project, ("--genome", f"--genome-key-file={key}", "-k", expr)),
    }
    later = tmp / "later"
    GitRepo(project).clone(later)
    (later / "shop" / "extra.py").write_text("VALUE = 1\n")
    GitRepo(later).commit_all("another commit")
    sessions["other-commit"] = (later, ("--genome", f"--genome-key-file={key}", *labelled))
    stores: dict[str, Path] = {}
    for name, (where, args) in sessions.items():
        stores[name] = out / name
        done = run_pytest(where, *args, f"--genome-store={stores[name]}")
        assert done.returncode == 0, done.stdout + done.stderr
    return stores


def edited_shard(project: Path, store: Path, tmp: Path, edit: str) -> Path:
    """Shard 2 exported to a file and changed as ``edit`` says, as a document input."""
    doc = export(project, store)
    if edit == "python":
        doc["run"]["python"] = "CPython 3.99.0"
    elif edit == "split":
        doc["run"]["config"]["shard"] = {"index": 2, "count": 4}
    path = tmp / f"shard2-{edit}.json"
    path.write_text(json.dumps(doc))
    return path


REFUSALS = {
    "other-key": "the same --genome-key-file",
    "other-commit": "combine the shards of one commit",
    "other-options": "recording option egress",
    "no-label": "carries no shard label",
    "python": "record every shard with the same interpreter version",
    "split": "split the suite differently",
    "twice": "shard 1/3 is given twice",
    "output-is-input": "is also an input",
    "missing": "no diffgenome store at",
    "corrupt": "is not an SQLite database",
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_shards_that_are_not_one_recording_are_refused_in_one_line(
    suite: dict[str, Any], strays: dict[str, Path], tmp_path: Path, case: str
) -> None:
    project, stores = suite["project"], suite["stores"]
    shard = {i: stores / f"shard{i}" for i in (1, 2, 3)}
    out = tmp_path / "combined"
    second: Path = shard[2]
    if case in strays:
        second = strays[case]
    elif case in ("python", "split"):
        second = edited_shard(project, shard[2], tmp_path, case)
    elif case == "twice":
        second = shard[1]
    elif case == "output-is-input":
        out = shard[2]
    elif case == "missing":
        second = tmp_path / "no-such-store"
    elif case == "corrupt":
        second = tmp_path / "corrupt"
        second.mkdir()
        (second / "genome.sqlite").write_bytes(b"not a database at all" * 20)
    inputs = [shard[1], second, shard[3]]
    before = {p: digests(p) for p in inputs if p.is_dir()}
    done = combine(project, *map(str, inputs), "-o", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("diffgenome: error: "), done.stderr
    assert REFUSALS[case] in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert {p: digests(p) for p in inputs if p.is_dir()} == before
    if case != "output-is-input":
        assert not out.exists()  # nothing written, not even an empty store


def test_unlabelled_shards_need_expect_and_count_against_it(
    suite: dict[str, Any], strays: dict[str, Path], tmp_path: Path
) -> None:
    project = suite["project"]
    out = tmp_path / "combined"
    done = combine(project, str(strays["no-label"]), "--expect", "2", "-o", str(out))
    assert done.returncode == 1, done.stderr
    run = export(project, out)["run"]
    assert run["complete"] is False
    assert run["incomplete_reasons"] == ["1 of 2 shards missing: 1 runs combined, --expect 2"]


def test_a_test_recorded_differently_by_two_shards_is_kept_once_and_unverified(
    suite: dict[str, Any], tmp_path: Path
) -> None:
    """Overlapping slices: shard 2 also ran shard 1's tests, and one of them came out
    otherwise. The lowest shard's recording is kept, marked unverified; an equal one is
    kept once, verified."""
    project, stores = suite["project"], suite["stores"]
    doc = export(project, stores / "shard1")
    doc["run"]["id"] = "overlap-2"
    doc["run"]["config"]["shard"] = {"index": 2, "count": 3}
    changed = "tests/test_payment.py::test_checkout_empty_cart"
    for test in doc["tests"]:
        if test["id"] == changed:
            test["outcome"] = "failed"
    overlap = tmp_path / "overlap.json"
    overlap.write_text(json.dumps(doc))
    out = tmp_path / "combined"
    inputs = (stores / "shard1", overlap, stores / "shard3")
    done = combine(project, *map(str, inputs), "-o", str(out))
    assert done.returncode == 0, done.stderr
    tests = {t["id"]: t for t in export(project, out)["tests"]}
    assert tests[changed]["outcome"] == "passed"
    assert tests[changed]["verified"] is False
    assert tests[changed]["unverified_reasons"] == ["shards-disagree:1/3,2/3"]
    same = "tests/test_payment.py::test_checkout_with_mocked_gateway"
    assert tests[same]["verified"] is True


# -- pytest-split's labels, and reuse by `diffgenome diff` --------------------------------------

# What pytest-split does, in little: ``--splits N --group I`` keeps every N-th collected test.
# Loaded as an installed plugin would be (``-p``, from outside the project), so that its code
# is not the project's and is not recorded.
SPLITTER = """
def pytest_addoption(parser):
    parser.addoption("--splits", type=int, default=None)
    parser.addoption("--group", type=int, default=None)


def pytest_collection_modifyitems(config, items):
    splits, group = config.getoption("splits"), config.getoption("group")
    if not splits:
        return
    keep = [item for i, item in enumerate(items) if i % splits == group - 1]
    config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = keep
"""


def test_pytest_split_shards_combine_into_the_run_diff_would_record_and_reuse(
    tmp_path: Path,
) -> None:
    """Each CI job runs what `diffgenome diff` would run, plus pytest-split's --splits 3
    --group I, into a store at the same path on its own machine. The shards carry pytest-split's
    label without --genome-shard, and their combination, added to the diff's store, has the
    recording key of the serial recording: `diffgenome diff HEAD HEAD` reuses it instead of
    recording the suite again."""
    project = make_project(tmp_path, {}, base="shop")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "splitter.py").write_text(SPLITTER)
    env = {"PYTHONPATH": str(plugins), "PYTHONHASHSEED": "0"}
    store = tmp_path / "store"
    store.mkdir()
    (store / "secret.key").write_bytes(bytes(range(32, 64)))
    user_args = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "splitter")
    selection = [
        "--genome",
        f"--genome-store={store}",
        f"--genome-key-file={store / 'secret.key'}",
        "-p",
        "no:cacheprovider",
        *user_args,
        "--genome-random-seed=0",  # diff's seed, after the user's arguments
    ]
    shards = []
    for index in (1, 2, 3):
        done = subprocess.run(
            [PY, "-m", "pytest", *selection, "--splits", "3", "--group", str(index)],
            cwd=project,
            env=clean_env(env),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        # The job's machine goes away with its store; its store is what the CI keeps.
        shard = tmp_path / f"shard{index}"
        shard.mkdir()
        for db in store.glob("genome.sqlite*"):
            db.rename(shard / db.name)
        assert export(project, shard)["run"]["config"]["shard"] == {"index": index, "count": 3}
        shards.append(str(shard))

    done = combine(project, *shards, "-o", str(store))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the store's key is the shards' key: nothing to note
    combined = export(project, store)["run"]
    assert combined["selection"] == selection
    assert combined["complete"] is True

    diff = subprocess.run(
        [
            PY,
            "-m",
            "diffgenome.analysis.cli",
            "diff",
            "HEAD",
            "HEAD",
            "--store",
            str(store),
            *("--json", "-", "--", *user_args),
        ],
        cwd=project,
        env=clean_env({**env, "TMPDIR": str(tmp_path)}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert diff.returncode == 0, diff.stderr
    result = json.loads(diff.stdout)
    assert result["summary"]["unchanged"] == 10, result["tests"]
    with sqlite3.connect(f"file:{store / 'genome.sqlite'}?mode=ro", uri=True) as conn:
        (runs,) = conn.execute("SELECT COUNT(*) FROM runs").fetchone()
    assert runs == 1  # reused: nothing was recorded again


@pytest.mark.parametrize("value", ["0/3", "4/3", "two/3", "3"])
def test_an_unusable_shard_label_is_a_usage_error(suite: dict[str, Any], value: str) -> None:
    done = run_pytest(suite["project"], "--genome", f"--genome-shard={value}", "-k", "payment")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "--genome-shard must be I/N" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_shard_whose_session_died_makes_the_combined_run_incomplete(
    suite: dict[str, Any], tmp_path: Path
) -> None:
    """Shard 3's process ends after its first test (``os._exit`` from a plugin, as a
    killed CI job would): its run is incomplete, and so is the combination."""
    project, stores, key = suite["project"], suite["stores"], suite["key"]
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "dying.py").write_text(
        "import os\n\n\ndef pytest_runtest_logfinish(nodeid, location):\n    os._exit(3)\n"
    )
    dead = tmp_path / "shard3-dead"
    done = run_pytest(
        project,
        "--genome",
        f"--genome-key-file={key}",
        f"--genome-store={dead}",
        "--genome-shard=3/3",
        "-k",
        SLICES[3],
        "-p",
        "dying",
        env={"PYTHONPATH": str(plugins)},
    )
    assert done.returncode == 3, done.stdout + done.stderr
    out = tmp_path / "combined"
    inputs = (stores / "shard1", stores / "shard2", dead)
    done = combine(project, *map(str, inputs), "-o", str(out))
    assert done.returncode == 1, done.stderr
    run = export(project, out)["run"]
    assert run["complete"] is False
    [reason] = run["incomplete_reasons"]
    assert reason.startswith("shard 3/3 incomplete: interrupted"), reason
    parts = {p["index"]: p for p in run["shards"]["parts"]}
    assert parts[3]["complete"] is False and parts[1]["complete"] is True


def test_shards_sliced_by_test_path_leave_import_unverified(
    suite: dict[str, Any], tmp_path: Path
) -> None:
    """Slices by test file collect different modules, so each shard's ``<import>`` is only
    part of the serial one (and import order moves code between them): it is kept from the
    lowest shard and unverified, never passed off as the whole; every real test is whole."""
    project, key = suite["project"], suite["key"]
    files = {1: "tests/test_payment.py", 2: "tests/test_pricing.py"}
    inputs = []
    for index, path in files.items():
        store = tmp_path / f"shard{index}"
        done = run_pytest(
            project,
            "--genome",
            f"--genome-key-file={key}",
            f"--genome-store={store}",
            f"--genome-shard={index}/2",
            path,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        inputs.append(str(store))
    out = tmp_path / "combined"
    done = combine(project, *inputs, "-o", str(out))
    assert done.returncode == 0, done.stderr
    tests = {t["id"]: t for t in export(project, out)["tests"]}
    assert tests["<import>"]["verified"] is False
    assert tests["<import>"]["unverified_reasons"] == ["shards-disagree:1/2,2/2"]
    assert len(tests) == 10
    assert all(t["verified"] for test_id, t in tests.items() if test_id != "<import>")


def test_commit_picks_each_stores_run_of_that_commit(suite: dict[str, Any], tmp_path: Path) -> None:
    project, stores = suite["project"], suite["stores"]
    inputs = [str(stores / f"shard{i}") for i in (1, 2, 3)]
    done = combine(project, *inputs, "--commit", "HEAD", "-o", str(tmp_path / "ok"))
    assert done.returncode == 0, done.stderr
    head = GitRepo(project).rev()
    assert export(project, tmp_path / "ok")["run"]["commit"] == head

    done = combine(project, *inputs, "--commit", "0123abcd", "-o", str(tmp_path / "none"))
    assert done.returncode == 2
    assert done.stderr.startswith("diffgenome: error: the store ")
    assert "has no run of commit 0123abcd" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "none").exists()
