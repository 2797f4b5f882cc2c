"""Issue #6, faults during recording: a session that dies or is interrupted keeps the genomes of
the tests that finished, and its run is never read as complete (``docs/reliability.md``).

Each test drives a real ``pytest --genome`` session in a subprocess over a generated project
and reads the store back through the real ``diffgenome`` CLI. ``os._exit`` in a test and a
test deleting the store are proven in test_recording_runs.py and test_faults.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    PY,
    clean_env,
    cli,
    diffgenome_notices,
    export,
    interrupt_when,
    make_project,
    one_node,
    run_pytest,
    start_pytest,
    test_genome,
    unprivileged,
)

MOD = {"pkg/__init__.py": "", "pkg/mod.py": "def f(n):\n    return n + 1\n"}


def _project(tmp_path: Path, body: str) -> Path:
    return make_project(tmp_path, {**MOD, "tests/test_x.py": body})


# Who writes finished tests (store/writer_process.py): the faults below must leave the same store
# whether the test process writes them itself or hands them to its writer process.
WRITERS = pytest.mark.parametrize("writer", ["inline", "process"])


def settled(project: Path, **kwargs: Any) -> dict[str, Any]:
    """The export once no writer of the run is alive: a writer process outlives a killed test
    process by the milliseconds it takes to commit what it was handed, and the run reads as
    running meanwhile (docs/recording.md, "The writer process")."""
    deadline = time.monotonic() + 30
    while True:
        doc = export(project, **kwargs)
        reasons = doc["run"].get("incomplete_reasons") or []
        if not any(str(r).startswith("running") for r in reasons) or time.monotonic() > deadline:
            return doc
        time.sleep(0.1)


def assert_incomplete_with_first_test(project: Path, *reason_parts: str) -> dict[str, Any]:
    """The run is incomplete with a reason, through export, show and runs; test_first kept."""
    doc = settled(project)
    run = doc["run"]
    assert run["complete"] is False
    assert run["incomplete_reasons"], "an incomplete run must say why"
    joined = " ".join(run["incomplete_reasons"])
    for part in reason_parts:
        assert part in joined, run["incomplete_reasons"]
    first = test_genome(doc, "::test_first")
    assert first["outcome"] == "passed" and first["verified"] is True
    assert one_node(first["phases"]["call"], "py:pkg.mod.f")["count"] == 1
    shown = cli(project, "show", "latest")
    assert shown.returncode == 0, shown.stderr
    assert "incomplete" in shown.stdout
    runs = cli(project, "runs")
    assert runs.returncode == 0, runs.stderr
    [row] = [line.split() for line in runs.stdout.splitlines() if run["id"] in line]
    assert "incomplete" in row and "complete" not in row
    return doc


def _ids(doc: dict[str, Any]) -> set[str]:
    return {t["id"].rpartition("::")[2] for t in doc["tests"]}


# -- a test that kills its own process -------------------------------------------------------


@WRITERS
@pytest.mark.parametrize("signame", ["SIGKILL", "SIGTERM"])
def test_a_test_killing_its_process_leaves_an_incomplete_run(
    tmp_path: Path, signame: str, writer: str
) -> None:
    project = _project(
        tmp_path,
        f"""
        import os
        import signal

        from pkg.mod import f


        def test_first():
            assert f(1) == 2


        def test_dies():
            f(2)
            os.kill(os.getpid(), signal.{signame})


        def test_never():
            f(3)
        """,
    )
    proc = run_pytest(project, "--genome", "-q", f"--genome-writer={writer}")
    assert proc.returncode == -getattr(signal, signame), proc.stdout + proc.stderr
    doc = assert_incomplete_with_first_test(project, "interrupted")
    assert "test_dies" not in _ids(doc) and "test_never" not in _ids(doc)


# -- Ctrl-C in the middle of a session --------------------------------------------------------


@WRITERS
def test_ctrl_c_mid_session_marks_the_run_interrupted(tmp_path: Path, writer: str) -> None:
    ready = tmp_path / "blocked"
    project = _project(
        tmp_path,
        f"""
        import pathlib
        import time

        from pkg.mod import f


        def test_first():
            assert f(1) == 2


        def test_blocks():
            f(2)
            pathlib.Path({str(ready)!r}).write_text("waiting for SIGINT")
            while True:
                time.sleep(0.05)


        def test_never():
            f(3)
        """,
    )
    proc = start_pytest(project, "--genome", "-q", f"--genome-writer={writer}", interruptible=True)
    output, _ = interrupt_when(
        proc, ready.exists, "the session never reached test_blocks", poll_s=0.02
    )
    assert proc.returncode == 2, output  # pytest's INTERRUPTED
    assert "KeyboardInterrupt" in output and "INTERNALERROR" not in output
    doc = assert_incomplete_with_first_test(project, "interrupted")
    # Said by the recorder itself at session end, not inferred from a dead writer.
    assert doc["run"]["incomplete_reasons"][0] == "interrupted"
    assert "test_blocks" not in _ids(doc) and "test_never" not in _ids(doc)


# -- a crash inside a fixture -----------------------------------------------------------------


def test_a_fixture_crashing_the_process_leaves_an_incomplete_run(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        """
        import faulthandler

        import pytest

        from pkg.mod import f


        @pytest.fixture
        def crashes():
            f(2)
            faulthandler._sigsegv()  # a crashing C extension, as far as the process can tell
            yield


        def test_first():
            assert f(1) == 2


        def test_uses_the_fixture(crashes):
            pass


        def test_never():
            f(3)
        """,
    )
    proc = run_pytest(project, "--genome", "-q", "-p", "no:faulthandler")
    assert proc.returncode == -signal.SIGSEGV, proc.stdout + proc.stderr
    doc = assert_incomplete_with_first_test(project, "interrupted")
    assert "test_uses_the_fixture" not in _ids(doc) and "test_never" not in _ids(doc)


def test_a_fixture_raising_is_an_error_in_a_complete_run(tmp_path: Path) -> None:
    """An exception in a fixture is an ordinary test error, not a fault of the session."""
    project = _project(
        tmp_path,
        """
        import pytest

        from pkg.mod import f


        @pytest.fixture
        def broken():
            f(2)
            raise RuntimeError("fixture failed")


        def test_first():
            assert f(1) == 2


        def test_uses_the_fixture(broken):
            pass


        def test_after():
            assert f(3) == 4
        """,
    )
    proc = run_pytest(project, "--genome", "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = export(project)
    assert doc["run"]["complete"] is True
    assert test_genome(doc, "::test_uses_the_fixture")["outcome"] == "error"
    assert test_genome(doc, "::test_after")["outcome"] == "passed"


# -- the store folder made read-only by a test ------------------------------------------------


@WRITERS
def test_a_test_making_the_store_read_only_does_not_break_the_session(
    tmp_path: Path, writer: str
) -> None:
    project = _project(
        tmp_path,
        """
        import os
        import pathlib

        from pkg.mod import f

        STORE = pathlib.Path(__file__).parents[1] / ".diffgenome"


        def test_first():
            assert f(1) == 2


        def test_freezes_the_store():
            for path in STORE.iterdir():
                path.chmod(0o444)
            STORE.chmod(0o555)


        def test_after():
            assert f(3) == 4
        """,
    )
    prefix = unprivileged()
    try:
        proc = run_pytest(project, "--genome", "-q", f"--genome-writer={writer}", prefix=prefix)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output
        assert "3 passed" in proc.stdout
        assert "INTERNALERROR" not in output and "Traceback" not in output
        # The reader works on the frozen store (as the unprivileged user too).
        read = subprocess.run(
            [*prefix, PY, "-m", "diffgenome.analysis.cli", "export", "latest"],
            cwd=project,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        for path in [project / ".diffgenome", *(project / ".diffgenome").iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert read.returncode == 0, read.stderr
    doc = export(project)
    assert doc == json.loads(read.stdout)
    run = doc["run"]
    ids = _ids(doc)
    assert "test_first" in ids and "test_freezes_the_store" in ids
    # Open handles may keep writing after the chmod (then the run is whole), or the store
    # refuses (then diffgenome said so once and the run is incomplete): never a half-truth.
    if run["complete"]:
        assert ids == {"<import>", "test_first", "test_freezes_the_store", "test_after"}
        assert "diffgenome: the store" not in output
    else:
        assert run["incomplete_reasons"]
        assert output.count("diffgenome: the store") == 1


# -- a test that closes, reuses or replaces the recorder's file descriptors (#30.1) ----------

DESCRIPTOR_TESTS = """
import os

from pkg.mod import f

FOLDER = os.environ["USER_FILES"]
KEPT = []


def _own_file(name, content):
    fd = os.open(os.path.join(FOLDER, name), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, content)
    KEPT.append((fd, name, content))


def test_first():
    assert f(1) == 2


def test_closes_every_descriptor_then_opens_its_own_files():
    os.closerange(3, 4096)
    # The freed numbers come back to the test, the store's among them.
    for i in range(16):
        _own_file(f"closed-{i}.dat", b"user data %d\\n" % i * 64)
    assert f(2) == 3


def test_puts_its_own_files_over_the_store_descriptors():
    taken = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if "/.diffgenome/" in target:
            fd = int(name)
            content = b"replaced %d\\n" % fd * 64
            mine = os.open(os.path.join(FOLDER, f"dup-{fd}.dat"), os.O_RDWR | os.O_CREAT, 0o644)
            os.write(mine, content)
            os.dup2(mine, fd)
            os.close(mine)
            KEPT.append((fd, f"dup-{fd}.dat", content))
            taken += 1
    # The database, its -wal and its -shm when recording; none in the plain session.
    assert taken == int(os.environ["STORE_DESCRIPTORS"]), taken
    assert f(3) == 4


def test_its_files_hold_what_it_wrote():
    for fd, name, content in KEPT:
        os.lseek(fd, 0, os.SEEK_SET)
        assert os.read(fd, len(content) + 4096) == content, name
    assert f(4) == 5
"""


@WRITERS
def test_a_test_taking_the_store_descriptors_keeps_its_files_and_the_run(
    tmp_path: Path, writer: str
) -> None:
    """``os.closerange`` then the test's own files on the freed numbers, and ``dup2`` of its
    files over the store's: SQLite wrote pages and WAL frames into them (and lost the run)
    before the writer checked its descriptors. Now every user file holds exactly what its test
    wrote, the outcomes are the plain session's, and the run is complete with every test."""
    project = _project(tmp_path, DESCRIPTOR_TESTS)
    outcomes = {}
    for mode in ("plain", "genome"):
        files = tmp_path / f"user-files-{mode}"
        files.mkdir()
        # -s: a test that closes every descriptor closes pytest's own capture files too.
        args = ["-s", "-v", "--genome", f"--genome-writer={writer}"]
        if mode == "plain":
            args = ["-s", "-v"]
        held = "3" if mode == "genome" else "0"
        env = {"USER_FILES": str(files), "STORE_DESCRIPTORS": held}
        result = run_pytest(project, *args, env=env)
        ran = re.findall(r"::(\w+) (PASSED|FAILED|ERROR)", result.stdout)
        outcomes[mode] = (result.returncode, sorted(ran))
        for path in files.iterdir():
            data = path.read_bytes()
            stem = path.stem
            if stem.startswith("closed-"):
                expected = b"user data %d\n" % int(stem.split("-")[1]) * 64
            else:
                expected = b"replaced %d\n" % int(stem.split("-")[1]) * 64
            assert data == expected, f"{mode}: {path.name} holds {len(data)} bytes not its own"
        written = sorted(p.name for p in files.iterdir())
        assert len(written) == 16 + int(held), (written, result.stdout[-3000:])
        if mode == "genome":
            notices = diffgenome_notices(result.stdout + result.stderr)
            taken = [n for n in notices if "file descriptors of the store" in n]
            assert len(taken) == 2, notices
            assert all("nothing was written through them" in n for n in taken), notices
            # The writer process's pipe went with the closed numbers: this process wrote the
            # rest itself, and said so once.
            lost = [n for n in notices if "writer process stopped" in n]
            assert len(lost) == (writer == "process"), notices
            assert len(notices) == len(taken) + len(lost), notices
    assert outcomes["plain"] == outcomes["genome"]
    assert outcomes["genome"][0] == 0 and len(outcomes["genome"][1]) == 4
    doc = export(project)
    assert doc["run"]["complete"] is True, doc["run"]
    assert _ids(doc) >= {
        "test_first",
        "test_closes_every_descriptor_then_opens_its_own_files",
        "test_puts_its_own_files_over_the_store_descriptors",
        "test_its_files_hold_what_it_wrote",
    }
    for test in doc["tests"]:
        assert test["outcome"] == "passed", test["id"]
    last = test_genome(doc, "::test_its_files_hold_what_it_wrote")
    assert one_node(last["phases"]["call"], "py:pkg.mod.f")["count"] == 1


# -- the disk holding the store fills up (#30.5) ---------------------------------------------

FILLING_TESTS = """
import os

from pkg.mod import f


def test_first():
    assert f(1) == 2


def test_fills_the_disk():
    # Unbuffered: a buffered file keeps the bytes a failed write left over and raises again
    # when closed, whenever the free space is not a whole number of chunks.
    out = os.open(os.environ["FILLER"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for _ in range(256):  # 16 MB at most: the disk is a 2 MB tmpfs
            os.write(out, b"x" * 65536)
    except OSError:
        pass  # the disk is full, and stays full to the end of the session
    finally:
        os.close(out)


def test_after_the_disk_is_full():
    assert f(2) == 3
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A 2 MB tmpfs, mounted for the test (root only; CI runs as root)."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        size = os.statvfs(mount)
        assert size.f_blocks * size.f_frsize <= 4 << 20, "not the small disk"
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@WRITERS
def test_a_full_disk_is_named_as_the_cause(tmp_path: Path, small_disk: Path, writer: str) -> None:
    """The notice named SQLite's ``cannot rollback - no transaction is active`` (a ROLLBACK
    after SQLite had rolled back by itself) and the run read as ``interrupted``; now both say
    the disk holding the store is full, and the tests before it are kept."""
    project = _project(tmp_path, FILLING_TESTS)
    store = small_disk / "store"
    # Both sessions fill the small disk only (never the disk the tests run on).
    filler = small_disk / "filler"
    plain = run_pytest(project, "-q", env={"FILLER": str(filler)})
    assert filler.stat().st_size > 1 << 20
    filler.unlink()
    result = run_pytest(
        project,
        "-q",
        "--genome",
        f"--genome-store={store}",
        f"--genome-writer={writer}",
        env={"FILLER": str(filler)},
    )
    assert (plain.returncode, result.returncode) == (0, 0), result.stdout + result.stderr
    notices = diffgenome_notices(result.stdout + result.stderr)
    assert len(notices) == 1, notices
    assert f"the disk holding {store} is full" in notices[0], notices
    assert "rollback" not in notices[0], notices
    doc = export(project, store=store)
    run = doc["run"]
    assert run["complete"] is False
    first = run["incomplete_reasons"][0]
    assert first.startswith("store-failed: ") and f"the disk holding {store} is full" in first
    assert not any("interrupted" in reason for reason in run["incomplete_reasons"]), run
    assert "test_first" in _ids(doc)


# -- one truth: the closing line, the store and every process agree (#30.5) -----------------


def _closing_line(output: str) -> str:
    # Found anywhere in a line, not only at its start: where a test's forked copy goes on
    # with the session, the copy's own progress dots share the pipe and can precede it.
    mark = "diffgenome: run "
    [line] = [line[line.index(mark) :] for line in output.splitlines() if mark in line]
    return line


def test_a_crashed_xdist_worker_makes_the_closing_line_say_incomplete(tmp_path: Path) -> None:
    """The closing line said ``none unverified`` and nothing more while the store read the
    run as incomplete (a worker that crashed never left it)."""
    project = _project(
        tmp_path,
        """
        import os

        from pkg.mod import f


        def test_first():
            assert f(1) == 2


        def test_crashes_its_worker():
            os._exit(3)


        def test_last():
            assert f(2) == 3
        """,
    )
    result = run_pytest(project, "-q", "-n", "2", "--genome")
    assert result.returncode == 1, result.stdout + result.stderr  # the crashed test fails
    line = _closing_line(result.stdout + result.stderr)
    run = export(project)["run"]
    assert run["complete"] is False
    [crashed] = [r for r in run["incomplete_reasons"] if "did not finish" in r]
    assert line.endswith(f"; the run is incomplete ({crashed})"), (line, run)


@WRITERS
def test_a_forked_copy_of_the_session_writes_nothing_into_the_store(
    tmp_path: Path, writer: str
) -> None:
    """A test forks and the copy returns into pytest, running the rest of the session: the
    copy wrote into the store through the connection it inherited and finished the run
    itself, while the recording process could not. Now the copy says one line and writes
    nothing; the recording process alone finishes the run, and its closing line is the
    store's truth."""
    project = _project(
        tmp_path,
        """
        import os

        from pkg.mod import f


        def test_first():
            assert f(1) == 2


        def test_forks_and_both_go_on():
            if os.fork() == 0:
                assert f(10) == 11
                return  # the copy goes on with the session
            assert f(2) == 3


        def test_last():
            assert f(3) == 4
        """,
    )
    result = run_pytest(
        project, "-q", "-p", "no:faulthandler", "--genome", f"--genome-writer={writer}"
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    copies = [n for n in diffgenome_notices(output) if "made by os.fork() in a test" in n]
    assert len(copies) == 1 and "records nothing" in copies[0], output
    # Whole, on standard error: through the reporter the copy's line reached the shared pipe
    # in two writes and the recording process's closing line once landed inside it.
    assert [n for n in result.stderr.splitlines() if "made by os.fork() in a test" in n] == [
        copies[0]
    ], result.stderr
    line = _closing_line(output)
    assert "incomplete" not in line, line
    doc = export(project)
    assert doc["run"]["complete"] is True, doc["run"]
    assert sorted(_ids(doc)) == [
        "<import>",
        "test_first",
        "test_forks_and_both_go_on",
        "test_last",
    ]
    forked = test_genome(doc, "::test_forks_and_both_go_on")
    assert forked["verified"] is False
    assert any(":fork" in reason for reason in forked["unverified_reasons"]), forked
    assert test_genome(doc, "::test_last")["verified"] is True
