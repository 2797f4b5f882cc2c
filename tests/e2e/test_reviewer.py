"""End-to-end: the reviewer's experience (#13) over real pytest sessions and real git
repositories -- reports by test, output that survives pipes, pytest's summary line, reuse and
the run list, the store found from a subfolder, and pruning.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from e2e.helpers import (
    ALL_PLUGINS,
    BASE_ARGS,
    PY,
    STORE,
    GitRepo,
    clean_env,
    cli,
    make_project,
    run_pytest,
    split_progress,
    write_files,
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LONG = "test_" + "a_really_long_name_that_a_terminal_would_wrap_" * 4 + "end"

PRICING = {
    "pricing/__init__.py": "",
    "pricing/core.py": """
        import json
        import pathlib

        DATA = pathlib.Path(__file__).with_name("labels.json")


        def price(amount):
            if amount > 100:
                return amount - 5
            return amount


        def label():
            return json.loads(DATA.read_text())["label"]


        def same():
            return 1
    """,
    "pricing/labels.json": '{"label": "old"}\n',
    "tests/test_core.py": f"""
        from pricing import core


        def test_price():
            assert core.price(200) > 0


        def test_label():
            assert core.label()


        def test_same():
            assert core.same() == 1


        def {LONG}():
            assert core.label()
    """,
}


def cli_run(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI with stdout and stderr as pipes (never a terminal), a narrow COLUMNS."""
    return subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", *args],
        cwd=project,
        env=clean_env({"COLUMNS": "40", "TMPDIR": str(project.parent), **(env or {})}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def commit_all(project: Path, message: str) -> None:
    GitRepo(project).commit_all(message)


@pytest.fixture(scope="module")
def pricing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two commits: the code of ``price`` changed (``test_price`` reaches it), and a data
    file (no code) that changes what ``test_label`` and the long-named test see."""
    project = make_project(tmp_path_factory.mktemp("reviewer"), PRICING)
    write_files(
        project,
        {
            "pricing/labels.json": '{"label": "new"}\n',
            "pricing/core.py": PRICING["pricing/core.py"].replace("amount - 5", "amount - 7"),
        },
    )
    commit_all(project, "change")
    # One run in the store whatever test comes first.
    assert run_pytest(project, "--genome", "-q").returncode == 0
    return project


DIFF = ("diff", "HEAD~1", "HEAD", "--no-confirm")
PYTEST = ("--", "-p", "no:randomly")


# -- 1. reports by test, ranked ---------------------------------------------------------------


def test_the_report_is_one_block_per_test_reaching_tests_first(pricing: Path) -> None:
    done = cli_run(pricing, *DIFF, *PYTEST)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("diffgenome HEAD~1 (")
    assert re.search(r": \d+ tests: 3 changed, \d+ unchanged$", lines[0]), lines[0]
    blocks = [line.split()[0] for line in lines if line.startswith("  tests/")]
    assert blocks[0] == "tests/test_core.py::test_price"
    assert set(blocks[1:]) == {"tests/test_core.py::test_label", f"tests/test_core.py::{LONG}"}
    heading = lines.index("to review (3 tests, 1 reaches the changed code)")
    assert heading < lines.index(
        next(x for x in lines if x.startswith("  tests/test_core.py::test_price"))
    )
    # Values by label: the same digest has the same name across the report.
    assert "py:pricing.core.price results: int (value A) → int (value B)" in done.stdout
    [old_new] = {
        m.group(0)
        for m in re.finditer(
            r"py:pricing.core.label results: str \(value \w+\) → str \(value \w+\)", done.stdout
        )
    }
    assert old_new == "py:pricing.core.label results: str (value C) → str (value D)"
    assert "test_same" not in done.stdout
    assert "#" not in done.stdout


def test_test_and_all_select_what_the_report_shows(pricing: Path) -> None:
    one = cli_run(pricing, *DIFF, "--test", "test_label", *PYTEST)
    assert one.returncode == 1, one.stderr
    assert "::test_label  changed" in one.stdout
    assert "test_price" not in one.stdout and LONG not in one.stdout
    everything = cli_run(pricing, *DIFF, "--all", *PYTEST)
    assert "tests/test_core.py::test_same  unchanged" in everything.stdout
    markdown = cli_run(pricing, *DIFF, "--markdown", "-", "--test", "test_price", *PYTEST)
    assert "#### Changed (1, all reaching the changed code)" in markdown.stdout
    assert (
        "\nchanged · <code>tests/test_core.py::test_price</code> · 1 change: "
        "`py:pricing.core.price results: int (value A) → int (value B)`\n"
    ) in markdown.stdout
    none = cli_run(pricing, *DIFF, "--test", "no_such_test", *PYTEST)
    assert none.returncode == 2
    # One error line, after the progress of the diff it looked into.
    _, other = split_progress(none.stderr)
    assert other == none.stderr.splitlines()[-1:], none.stderr
    assert other[0].startswith("diffgenome: error: no test of the diff matches")
    assert "Traceback" not in none.stderr


# -- 2. output that survives pipes --------------------------------------------------------------


def test_piped_output_is_whole_and_plain_unless_forced(pricing: Path) -> None:
    done = cli_run(pricing, *DIFF, *PYTEST)
    # The long id stays on one line, whole, at COLUMNS=40; no colour in a pipe.
    assert any(
        line.startswith(f"  tests/test_core.py::{LONG}  changed")
        for line in done.stdout.splitlines()
    )
    assert not ANSI.search(done.stdout)
    runs = cli_run(pricing, "runs")
    assert not ANSI.search(runs.stdout)
    for line in runs.stdout.splitlines()[1:]:
        assert re.match(r"^\d{8}T\d{6}-[0-9a-f]{8}  ", line), line  # whole run ids
        assert line == line.rstrip()
    forced = cli_run(pricing, "runs", env={"FORCE_COLOR": "1"})
    assert ANSI.search(forced.stdout)
    assert ANSI.sub("", forced.stdout).splitlines()[1:] == runs.stdout.splitlines()[1:]
    both = cli_run(pricing, "runs", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert not ANSI.search(both.stdout)


def on_a_terminal(
    project: Path,
    *args: str,
    env: dict[str, str] | None = None,
    stream: str = "stdout",
    codes: tuple[int, ...] = (0,),
) -> str:
    """What the CLI writes to ``stream`` when that is a terminal (a pseudo-terminal)."""
    main, child = os.openpty()
    try:
        done = subprocess.run(
            [PY, "-m", "diffgenome.analysis.cli", *args],
            cwd=project,
            env=clean_env(
                {
                    "TERM": "xterm-256color",
                    "COLUMNS": "300",
                    "TMPDIR": str(project.parent),
                    **(env or {}),
                }
            ),
            stdin=subprocess.DEVNULL,
            stdout=child if stream == "stdout" else subprocess.PIPE,
            stderr=child if stream == "stderr" else subprocess.PIPE,
            timeout=300,
            check=False,
        )
        os.close(child)
        child = -1
        assert done.returncode in codes, (done.stdout, done.stderr)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
        if child != -1:
            os.close(child)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_unless_no_color(pricing: Path) -> None:
    env = {"NO_COLOR": "", "FORCE_COLOR": ""}  # set but empty: as if unset
    shown = on_a_terminal(pricing, "runs", env=env)
    assert ANSI.search(shown)
    # On a terminal the list ends with the store's total and where it is.
    last = ANSI.sub("", shown).strip().splitlines()[-1]
    assert re.fullmatch(
        rf"\d+ runs?, [\d.]+ k?B of recordings \([\d.]+ [kM]?B on disk\) in {pricing / STORE}", last
    ), last
    assert not ANSI.search(on_a_terminal(pricing, "runs", env={"NO_COLOR": "1"}))


def test_json_to_standard_output_is_machine_only(pricing: Path) -> None:
    done = cli_run(pricing, *DIFF, "--json", "-", *PYTEST)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)  # nothing but the document
    assert document["summary"]["changed"] == 3
    assert not ANSI.search(done.stdout)


# -- 4. pytest's terminal summary ----------------------------------------------------------------


def test_pytest_ends_with_one_line_naming_run_store_and_unverified(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        {
            "tests/test_child.py": """
                import subprocess
                import sys


                def test_child():
                    # -S: no site, so no recording hook: a child that stays unrecorded
                    subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)


                def test_plain():
                    assert True
            """
        },
    )
    done = run_pytest(project, "--genome", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    ours = [line for line in done.stdout.splitlines() if line.startswith("diffgenome: run ")]
    assert len(ours) == 1
    run_id = json.loads(cli(project, "export", "latest").stdout)["run"]["id"]
    store = os.path.join(project, STORE)
    assert ours[0] == (
        f"diffgenome: run {run_id} recorded 2 tests into {store}; "
        "1 unverified (most: call:untraced-subprocess:python, 1)"
    )


# -- 5. reuse, the run list, and the store from a subfolder ----------------------------------


@ALL_PLUGINS
def test_a_pytest_recording_is_reused_whatever_its_output_options(tmp_path: Path) -> None:
    """A monorepo: the pytest project is ``proj/``; pytest there writes the store at the git
    top, where ``diffgenome`` finds it from the top and from ``proj/``, and ``diff`` reuses
    that recording although it was made with -q, -v, --tb and no cacheprovider."""
    top = make_project(tmp_path, {f"proj/{name}": text for name, text in PRICING.items()})
    write_files(top, {".gitignore": "__pycache__/\n"})
    commit_all(top, "ignore caches")
    proj = top / "proj"
    seed = {"PYTHONHASHSEED": "0"}  # as diff records: a recording under a random seed is not
    # diff seeds ``random`` too (hypothesis' seed is off with its plugin in `same` below)
    done = run_pytest(
        proj, "--genome", "-q", "-v", "--tb=short", "-rA", "--genome-random-seed=0", env=seed
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (proj / STORE).exists() and (top / STORE).is_dir()
    for where in (top, proj):
        listed = cli_run(where, "runs")
        assert listed.returncode == 0, listed.stderr
        assert len(listed.stdout.splitlines()) == 2  # the header and the one run
    pytest_run = json.loads(cli_run(top, "export", "latest").stdout)["run"]
    assert pytest_run["origin"] == "pytest"
    write_files(proj, {"pricing/labels.json": '{"label": "newer"}\n'})
    commit_all(top, "data")
    # The selection run_pytest gave, less its -p no:cacheprovider (output only).
    same = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-W", "ignore::DeprecationWarning")
    # On a terminal, diff says what it reuses and what it records (standard error).
    said = on_a_terminal(proj, "diff", "HEAD~1", "HEAD", "--", *same, stream="stderr", codes=(1,))
    shown = CONTROL.sub("", said)
    assert f"diffgenome: reusing run {pytest_run['id']} of HEAD~1" in shown
    assert "recorded by pytest)" in shown
    # The head is recorded under a live line, which ends in the step's last line.
    assert "diffgenome: recording head HEAD (" in shown
    recorded = r"diffgenome: recorded head HEAD \([0-9a-f]{12}\): \d+ tests with the \w+ core in "
    assert re.search(recorded, shown)
    # test_label and the long-named test changed.
    # Deterministic changes: the first round of confirmation showed them as first recorded.
    assert "diffgenome: confirmed 2 tests that differ: recorded them once more" in shown
    diff = cli_run(proj, "diff", "HEAD~1", "HEAD", "--json", "-", "--", *same)
    assert diff.returncode == 1, diff.stderr
    document = json.loads(diff.stdout)
    assert document["base"]["run"] == pytest_run["id"]  # reused, not recorded again
    # runs --json: every field, the whole selection (the confirmation's node ids); the
    # confirmation runs of the last diff stay until the next recording.
    listed = json.loads(cli_run(top, "runs", "--json", "-").stdout)
    confirming = [run for run in listed if run["origin"] == "confirmation"]
    assert confirming and all(any("::" in arg for arg in run["selection"]) for run in confirming)
    # A different selection is another recording.
    narrow = cli_run(proj, *DIFF, "--json", "-", "--", "-k", "test_label")
    assert json.loads(narrow.stdout)["base"]["run"] != pytest_run["id"]
    runs = cli_run(top, "runs").stdout.splitlines()
    header = runs[0].split()
    assert header[-3:] == ["origin", "python", "selection"] and "size" in header
    row = re.compile(
        r"^\S+  \S+  \S+  complete +\d+ +[\d.]+ k?B  (pytest|diff|confirmation) +"
        r"CPython \S+  (.+)$"
    )
    found = [row.match(line) for line in runs[1:]]
    assert all(found), runs
    # The confirmations of the diffs before went with the last diff's end (#25.2).
    assert {m.group(1) for m in found if m} == {"pytest", "diff"}
    selections = {m.group(2) for m in found if m}
    # -q -v --tb=short -rA and -p no:cacheprovider are not the selection; the rest is (with
    # the seeds diff adds after it).
    assert f"{' '.join(same)} --genome-random-seed=0" in selections
    assert "-k test_label --hypothesis-seed=0 --genome-random-seed=0" in selections
    listed = json.loads(cli_run(top, "runs", "--json", "-").stdout)
    assert [run["id"] for run in listed] == [line.split()[0] for line in runs[1:]]


# -- 6. prune and the cap ------------------------------------------------------------------------


def run_ids(project: Path) -> list[str]:
    return [line.split()[0] for line in cli_run(project, "runs").stdout.splitlines()[1:]]


def test_prune_keeps_what_it_is_told_and_dry_run_removes_nothing(tmp_path: Path) -> None:
    project = make_project(tmp_path, PRICING)
    for _ in range(3):
        assert run_pytest(project, "--genome", "-q").returncode == 0
    first_commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True, check=True
    ).stdout.strip()
    write_files(project, {"pricing/labels.json": '{"label": "x"}\n'})
    commit_all(project, "data")
    assert run_pytest(project, "--genome", "-q").returncode == 0
    before = run_ids(project)  # newest first
    assert len(before) == 4
    db = project / STORE / "genome.sqlite"

    dry = cli_run(project, "prune", "--keep-last", "1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[-1].startswith("would remove 3 of 4 runs")
    assert run_ids(project) == before

    kept = cli_run(project, "prune", "--keep-last", "1", "--keep-commit", first_commit[:10])
    assert kept.returncode == 0, kept.stderr
    assert run_ids(project) == before  # every run is kept by one rule or the other
    size = db.stat().st_size
    pruned = cli_run(project, "prune", "--keep-commit", "HEAD")
    assert pruned.stdout.splitlines()[-1].startswith("removed 3 of 4 runs")
    assert run_ids(project) == before[:1]
    assert db.stat().st_size < size  # the file gives the space back
    future = cli_run(project, "prune", "--keep-since", "2999-01-01")
    assert run_ids(project) == [] and future.returncode == 0
    bad = cli_run(project, "prune", "--keep-since", "yesterday")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    nothing = cli_run(project, "prune")
    assert nothing.returncode == 2 and "say what to keep" in nothing.stderr


def test_the_store_cap_removes_the_oldest_runs_and_says_so(tmp_path: Path) -> None:
    project = make_project(tmp_path, PRICING)
    assert run_pytest(project, "--genome", "-q").returncode == 0
    capped = cli_run(project, "prune", "--cap", "2")
    assert capped.returncode == 0, capped.stderr
    assert "keeps the 2 newest runs from now on" in capped.stdout
    assert run_pytest(project, "--genome", "-q").returncode == 0
    oldest = run_ids(project)[-1]
    third = run_pytest(project, "--genome", "-q")
    assert third.returncode == 0
    [notice] = [line for line in third.stdout.splitlines() if "older run" in line]
    assert notice.startswith(f"diffgenome: removed 1 older run ({oldest}): the store keeps its 2")
    assert len(run_ids(project)) == 2 and oldest not in run_ids(project)
    # A diff's recordings obey the cap too; what they remove comes back as a note.
    write_files(project, {"pricing/labels.json": '{"label": "capped"}\n'})
    commit_all(project, "data")
    diffed = cli_run(project, *DIFF, *PYTEST)
    assert diffed.returncode == 1, diffed.stderr
    notes = [line for line in diffed.stdout.splitlines() if line.startswith("note: removed ")]
    assert notes and all("the store keeps its 2 newest runs" in note for note in notes), notes
    assert len(run_ids(project)) == 2
    with sqlite3.connect(project / STORE / "genome.sqlite") as conn:
        assert conn.execute(
            "SELECT COUNT(*) FROM tests WHERE run_id = ?", (oldest,)
        ).fetchone() == (0,)


def test_a_run_that_recorded_another_tree_is_never_reused(tmp_path: Path) -> None:
    """A recording whose tests imported the project from outside the recorded tree
    (``foreign-module``: another copy first on the path, as an older diffgenome's worktree
    recordings from ``tests/`` of an editable install did) stands for that other tree, not
    its commit: ``diff`` records the commit again instead of reusing it (it did reuse it,
    and every test stayed ``unverified``)."""
    import shutil

    project = make_project(tmp_path, PRICING)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(project / "pricing", elsewhere / "pricing")
    # PYTHONSAFEPATH: ``python -m pytest`` does not put the checkout first on the path.
    seed = {"PYTHONHASHSEED": "0", "PYTHONPATH": str(elsewhere), "PYTHONSAFEPATH": "1"}
    done = run_pytest(project, "--genome", "-q", "--genome-random-seed=0", env=seed)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "foreign-module:pricing" in done.stdout, done.stdout
    stale = json.loads(cli(project, "export", "latest").stdout)["run"]["id"]
    diffed = _diff_passing_over(project, stale)
    assert "unverified" not in diffed.stdout.splitlines()[0], diffed.stdout
    assert (
        f"run {stale} of {_sha(project, 'HEAD~1')[:12]} (recorded by pytest) was not reused: a "
        "test imported project code from outside the recorded tree"
    ) in diffed.stdout, diffed.stdout


def _diff_passing_over(project: Path, run_id: str) -> subprocess.CompletedProcess[str]:
    """A new commit on top of the recorded one, then ``diff HEAD~1 HEAD`` with the recorded
    selection: it must record the base again rather than reuse ``run_id``."""
    write_files(project, {"pricing/labels.json": '{"label": "newer"}\n'})
    commit_all(project, "data")
    same = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-W", "ignore::DeprecationWarning")
    diffed = cli(project, "diff", "HEAD~1", "HEAD", "--no-confirm", "--", *same)
    assert diffed.returncode == 1, diffed.stdout + diffed.stderr
    assert f"reusing run {run_id}" not in diffed.stderr, diffed.stderr
    assert "recorded base HEAD~1" in diffed.stderr, diffed.stderr
    return diffed


def _sha(project: Path, rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", rev], cwd=project, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_pytest_run_the_diff_passes_over_is_named_with_why(tmp_path: Path) -> None:
    """The README's recipe for a reusable ``pytest --genome`` (``PYTHONHASHSEED=0`` and
    ``--genome-random-seed=0``, from a clean tree) is reused; a run made without the seed, or
    beside an untracked file (an exported report), is another recording, and the diff says
    which of them it passed over and why instead of recording again in silence."""
    project = make_project(tmp_path, PRICING)
    with (project / "pricing" / "core.py").open("a") as code:
        code.write("\n# edited\n")
    commit_all(project, "comment")
    head = _sha(project, "HEAD")[:12]
    seed = {"PYTHONHASHSEED": "0"}
    diff = ("diff", "HEAD~1", "HEAD", "--no-confirm", "--", *BASE_ARGS)

    # Without --genome-random-seed=0: another selection.
    run = run_pytest(project, "--genome", "-q", env=seed)
    assert run.returncode == 0, run.stdout + run.stderr
    unseeded = json.loads(cli(project, "export", "latest").stdout)["run"]["id"]
    done = cli(project, *diff, "--rerecord")
    assert f"reusing run {unseeded}" not in done.stderr, done.stderr
    # --rerecord passes every run over on purpose: nothing to explain.
    assert "was not reused" not in done.stdout, done.stdout
    shutil.rmtree(project / STORE)
    run = run_pytest(project, "--genome", "-q", env=seed)
    unseeded = json.loads(cli(project, "export", "latest").stdout)["run"]["id"]
    done = cli(project, *diff)
    assert f"reusing run {unseeded}" not in done.stderr, done.stderr
    assert f"run {unseeded} of {head} (recorded by pytest) was not reused: its selection is" in (
        done.stdout
    ), done.stdout

    # Seeded, but beside an untracked file: not a clean tree.
    shutil.rmtree(project / STORE)
    (project / "run.json").write_text("{}")
    run = run_pytest(project, "--genome", "-q", "--genome-random-seed=0", env=seed)
    dirty = json.loads(cli(project, "export", "latest").stdout)["run"]["id"]
    done = cli(project, *diff)
    assert (
        f"run {dirty} of {head} (recorded by pytest) was not reused: it was recorded from a "
        "tree with uncommitted changes or untracked files"
    ) in done.stdout, done.stdout

    # The README's recipe from a clean tree: reused, and nothing to explain.
    (project / "run.json").unlink()
    shutil.rmtree(project / STORE)
    run = run_pytest(project, "--genome", "-q", "--genome-random-seed=0", env=seed)
    assert run.returncode == 0, run.stdout + run.stderr
    theirs = json.loads(cli(project, "export", "latest").stdout)["run"]["id"]
    done = cli(project, *diff)
    assert f"reusing run {theirs} of HEAD ({head}, recorded by pytest)" in done.stderr, done.stderr
    assert "was not reused" not in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("revision", "older", "why"),
    [
        ("values", 3, "digests values by values revision 3, this diff by"),
        # Effects revision 3 digests an archive by what it holds (#51): a run of 2 digested
        # its bytes, and its written files would all read as changed.
        ("effects", 2, "records effects by effects revision 2, this diff by"),
    ],
)
def test_a_run_of_another_revision_is_recorded_again_not_refused(
    tmp_path: Path, revision: str, older: int, why: str
) -> None:
    """A recorder whose version string stays while what it records changes (an editable
    install: values revision 4 came with no release) made the diff reuse a run of the old
    revision beside a new recording, then refuse the pair in one line ("base digests its
    values by values revision 4 and head by 3"). Such a run is another recording: passed over
    with why, and the commit recorded again."""
    project = make_project(tmp_path, PRICING)
    seed = {"PYTHONHASHSEED": "0"}
    done = run_pytest(project, "--genome", "-q", "--genome-random-seed=0", env=seed)
    assert done.returncode == 0, done.stdout + done.stderr
    old = json.loads(cli(project, "export", "latest").stdout)["run"]["id"]
    with sqlite3.connect(project / STORE / "genome.sqlite") as conn:
        (raw,) = conn.execute("SELECT config FROM runs WHERE id = ?", (old,)).fetchone()
        config = json.loads(raw)
        assert config[revision] > older
        config[revision] = older
        conn.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config), old))
    diffed = _diff_passing_over(project, old)
    assert why in diffed.stdout, diffed.stdout


def test_an_added_test_shows_what_it_mocks_and_a_removed_one_what_it_mocked(
    tmp_path: Path,
) -> None:
    """A pull request that adds a test with a mock: the reviewer's first screen names the real
    code the new test replaces (before, the block said only "added passed"); one that deletes
    such a test says what its stand-in stood in for."""
    project = make_project(
        tmp_path,
        {
            **PRICING,
            "tests/test_old.py": """
                from unittest import mock

                from pricing import core


                def test_old_mock():
                    with mock.patch.object(core, "same", return_value=2):
                        assert core.same() == 2
            """,
        },
    )
    (project / "tests" / "test_old.py").unlink()
    write_files(
        project,
        {
            "tests/test_new.py": """
                from unittest import mock

                from pricing import core


                def read_label():
                    return core.label()


                def test_label_mocked():
                    with mock.patch("pricing.core.label", return_value="x"):
                        assert core.label() == "x"
                        assert read_label() == "x"  # the same stand-in, from another place
            """
        },
    )
    commit_all(project, "a test with a mock replaces another")
    done = cli_run(project, *DIFF, "--json", "-", "--fail-on", "never", *PYTEST)
    assert done.returncode == 0, done.stderr
    tests = {t["id"]: t for t in json.loads(done.stdout)["tests"]}
    added = tests["tests/test_new.py::test_label_mocked"]
    assert added["status"] == "added"
    assert [(c["kind"], c["symbol"]) for c in added["changes"]] == [
        ("stand_in_added", "py:pricing.core.label")
    ]
    assert added["changes"][0]["head"]["mechanism"] == "mock_object"
    removed = tests["tests/test_old.py::test_old_mock"]
    assert removed["status"] == "removed"
    assert [(c["kind"], c["symbol"]) for c in removed["changes"]] == [
        ("stand_in_removed", "py:pricing.core.same")
    ]
    # A test without a stand-in has no change to list.
    assert tests["tests/test_core.py::test_price"]["changes"] == []
    screen = cli_run(project, *DIFF, "--fail-on", "never", *PYTEST)
    assert screen.returncode == 0, screen.stderr
    lines = screen.stdout.splitlines()
    [at] = [n for n, line in enumerate(lines) if line.strip().startswith("tests/test_new.py")]
    assert "added" in lines[at]
    assert "stand-in added" in lines[at + 1] and "py:pricing.core.label" in lines[at + 1]
