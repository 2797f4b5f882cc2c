"""End-to-end: what a reviewer reads (#25 points 5, 6, 7, 11, 12, 13).

One monorepo (``top/proj``, two commits of a small table formatter, as tabulate's
``_pipe_segment_with_colons`` was where the issue was found), worked on from the project's
folder ``top/proj``: real ``pytest --genome`` sessions, real diffs, the store at the git top.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from e2e.helpers import (
    DURATION,
    PY,
    clean_env,
    default_sigint,
    git_in,
    interrupt_when,
    make_project,
    split_progress,
    write_files,
)

pytestmark = pytest.mark.slow

CORE = """
    def segment(align, width):
        if align == "right":
            return "-" * (width - 1) + ":"
        return "-" * width


    def pipe(rows):
        return ["|" + "|".join(row) + "|" for row in rows]


    def pipe_headerless(rows):
        return pipe(rows)[1:]


    def plain(rows):
        return [" ".join(row) for row in rows]
"""
# A centred column gets colons on both sides (a decision no test takes), and pipes get
# spaces (a result every pipe test sees).
HEAD_CORE = CORE.replace(
    '    if align == "right":',
    '    if align == "center":\n'
    '            return ":" + "-" * (width - 2) + ":"\n'
    '        if align == "right":',
).replace('"|" + "|".join(row) + "|"', '"| " + " | ".join(row) + " |"')
FILES = {
    "proj/pyproject.toml": """
        [tool.pytest.ini_options]
        testpaths = ["tests"]
    """,
    "proj/tab/__init__.py": "",
    "proj/tab/core.py": CORE,
    "proj/tests/test_output.py": """
        from tab import core


        def test_pipe():
            assert core.pipe([["a", "b"]])


        def test_pipe_headerless():
            assert core.pipe_headerless([["h"], ["a"]]) is not None


        def test_segment():
            assert core.segment("right", 3).endswith(":")
            assert core.segment("left", 3) == "---"


        def test_plain():
            assert core.plain([["a"]]) == ["a"]
    """,
    ".gitignore": "__pycache__/\n",
}
PYTEST = ("--", "-p", "no:randomly", "-p", "no:hypothesispytest")


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = make_project(tmp_path_factory.mktemp("reports"), FILES, name="top")
    write_files(top, {"proj/tab/core.py": HEAD_CORE})
    git_in(top, "add", "-A")
    git_in(top, "commit", "-qm", "centred columns, spaced pipes")
    return top / "proj"


def run(
    where: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=where,
        env=clean_env({"COLUMNS": "200", "TMPDIR": str(where.parents[1]), **(env or {})}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def dg(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(where, PY, "-m", "diffgenome.analysis.cli", *args)


def blocks(report: str) -> list[str]:
    """The test ids of a terminal report's blocks."""
    return [line.split()[0] for line in report.splitlines() if re.match(r"  (proj/)?tests/", line)]


# -- 6. --test with a node id -----------------------------------------------------------------


def test_a_node_id_selects_exactly_that_test(proj: Path) -> None:
    for pattern in ("tests/test_output.py::test_pipe", "proj/tests/test_output.py::test_pipe"):
        done = dg(proj, "diff", "HEAD~1", "HEAD", "--no-confirm", "--test", pattern, *PYTEST)
        assert done.returncode == 1, done.stderr
        assert blocks(done.stdout) == ["proj/tests/test_output.py::test_pipe"], done.stdout
    # A part of an id is still a part: both pipe tests.
    part = dg(proj, "diff", "HEAD~1", "HEAD", "--no-confirm", "--test", "test_pipe", *PYTEST)
    assert sorted(blocks(part.stdout)) == [
        "proj/tests/test_output.py::test_pipe",
        "proj/tests/test_output.py::test_pipe_headerless",
    ]


# -- 7. one count everywhere ------------------------------------------------------------------


def test_one_test_count_everywhere_and_an_empty_selection_said(proj: Path) -> None:
    recorded = run(proj, PY, "-m", "pytest", "--genome", "-p", "no:randomly")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "4 passed" in recorded.stdout
    [line] = [x for x in recorded.stdout.splitlines() if x.startswith("diffgenome: run ")]
    assert " recorded 4 tests into " in line
    run_id = line.split()[2]
    listed = dg(proj, "runs").stdout.splitlines()
    [row] = [x for x in listed if x.startswith(run_id)]
    assert re.search(r"  complete +4 ", row), row
    assert json.loads(dg(proj, "runs", "--json", "-").stdout)[0]["tests"] == 4
    shown = dg(proj, "show", run_id)
    assert shown.stdout.splitlines()[-1] == "4 tests and the <import> record"
    lines = proj.parents[1] / "tests.jsonl"  # outside the checkout: the tree stays clean
    exported = dg(proj, "export", run_id, "--format", "jsonl", "-o", str(lines))
    assert exported.returncode == 0, exported.stderr
    assert "exported run" in exported.stderr
    assert ": 4 tests and the <import> record, JSON Lines of " in exported.stderr
    assert len(lines.read_text().splitlines()) == 5  # and <import>
    diffed = dg(proj, "diff", "HEAD~1", "HEAD", "--no-confirm", *PYTEST)
    assert diffed.returncode == 1, diffed.stderr
    assert re.search(r": 4 tests: \d+ changed", diffed.stdout.splitlines()[0]), diffed.stdout
    progress, _ = split_progress(diffed.stderr)
    assert any(re.fullmatch(r"diffgenome: diffed 4 tests in .*", x) for x in progress), progress
    # An empty selection is said as such, and counts no test.
    empty = run(proj, PY, "-m", "pytest", "--genome", "-k", "no_such_test")
    assert empty.returncode == 5
    [said] = [x for x in empty.stdout.splitlines() if x.startswith("diffgenome: run ")]
    assert said.endswith(": the selection is empty"), said
    assert json.loads(dg(proj, "runs", "--json", "-").stdout)[0]["tests"] == 0


# -- 9. Ctrl-C says what happened -------------------------------------------------------------


def test_ctrl_c_says_in_one_line_what_happened(tmp_path: Path) -> None:
    started = tmp_path / "started"
    files = {
        "app/__init__.py": "",
        "tests/test_slow.py": f"""
            import pathlib
            import time


            def test_fast():
                pass


            def test_slow():
                pathlib.Path({str(started)!r}).write_text("yes")
                time.sleep(120)
        """,
    }
    repo = make_project(tmp_path, files)
    write_files(repo, {"README": "docs\n"})
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-qm", "docs")
    proc = subprocess.Popen(
        [PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD", "--", "-p", "no:randomly"],
        cwd=repo,
        env=clean_env({"TMPDIR": str(tmp_path)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    _, err = interrupt_when(proc, started.exists, "the recording never started", poll_s=0.1)
    assert proc.returncode == 130, err
    _, other = split_progress(err)
    assert len(other) == 1, err  # one line, and nothing else but progress
    [line] = other
    runs = json.loads(dg(repo, "runs", "--json", "-").stdout)
    assert [run["status"] for run in runs] == ["incomplete"]
    assert line == (
        "diffgenome: interrupted; the worktrees, temp folders and test processes are removed; "
        f"run {runs[0]['id']} (base HEAD~1 ({runs[0]['commit'][:12]})) is stored as incomplete"
    ), line
    assert err.splitlines()[-1] == line


# -- 13. uncommitted edits and a diff of HEAD -------------------------------------------------


def test_uncommitted_edits_get_one_hint_pointing_to_worktree(proj: Path) -> None:
    core = proj / "tab" / "core.py"
    committed = core.read_text()
    core.write_text(committed + "\n\ndef extra():\n    return 1\n")
    try:
        done = dg(proj, "diff", "HEAD~1", "HEAD", "--no-confirm", *PYTEST)
    finally:
        core.write_text(committed)
    assert done.returncode == 1, done.stderr
    hints = [line for line in done.stdout.splitlines() if "WORKTREE" in line]
    assert hints == [
        "note: 1 file of the working tree has uncommitted changes, which HEAD leaves out, as "
        "git does; `diffgenome diff HEAD~1 WORKTREE` compares them too"
    ], done.stdout
    clean = dg(proj, "diff", "HEAD~1", "HEAD", "--no-confirm", *PYTEST)
    assert "WORKTREE" not in clean.stdout + clean.stderr
    # A reviewer's exported reports are untracked files, not uncommitted changes.
    (proj / "report").mkdir()
    (proj / "report" / "index.html").write_text("<html></html>\n")
    (proj / "diff.json").write_text("{}\n")
    try:
        done = dg(proj, "diff", "HEAD~1", "HEAD", "--no-confirm", *PYTEST)
    finally:
        (proj / "diff.json").unlink()
        (proj / "report" / "index.html").unlink()
        (proj / "report").rmdir()
    hints = [line for line in done.stdout.splitlines() if "WORKTREE" in line]
    assert hints == [
        "note: the working tree has 2 untracked files, which HEAD leaves out, as git does; "
        "`diffgenome diff HEAD~1 WORKTREE` compares them too"
    ], done.stdout


# -- 11. affected for machines ----------------------------------------------------------------


def test_affected_ids_feed_pytest_and_the_listing_is_by_symbol(proj: Path, tmp_path: Path) -> None:
    shims = tmp_path / "bin"
    shims.mkdir()
    for name, module in (("diffgenome", "diffgenome.analysis.cli"), ("pytest", "pytest")):
        (shims / name).write_text(f'#!/bin/sh\nexec {PY} -m {module} "$@"\n')
        (shims / name).chmod(0o755)
    env = {"PATH": f"{shims}:/usr/bin:/bin"}
    ids = run(proj, "diffgenome", "affected", "HEAD~1", "HEAD", "--ids", "-q", env=env)
    assert ids.returncode == 0, ids.stderr
    assert ids.stdout.splitlines() == [
        "tests/test_output.py::test_pipe",
        "tests/test_output.py::test_pipe_headerless",
        "tests/test_output.py::test_segment",
    ]
    selected = run(
        proj,
        "bash",
        "-c",
        "diffgenome affected HEAD~1 HEAD --ids -q > affected.txt && "
        "pytest -p no:randomly @affected.txt",
        env=env,
    )
    (proj / "affected.txt").unlink()
    assert selected.returncode == 0, selected.stdout + selected.stderr
    assert "3 passed" in selected.stdout
    listing = dg(proj, "affected", "HEAD~1", "HEAD", "-q")
    lines = listing.stdout.splitlines()
    assert lines[0] == "diffgenome affected HEAD~1 → HEAD: 3 of 4 tests reach changed code"
    assert "py:tab.core.pipe (modified): 2 tests" in lines
    assert "py:tab.core.segment (modified): 1 test" in lines
    # Each test once under each symbol it reaches, its paths and decisions summed up.
    assert lines.count("    proj/tests/test_output.py::test_pipe  (passed)") == 1
    assert any(line.startswith("  decision py:tab.core.segment/if[") for line in lines), lines


# -- 12. the Markdown comment -----------------------------------------------------------------


def test_a_small_comment_is_open_short_and_linked(proj: Path) -> None:
    shas = [
        subprocess.run(
            ["git", "rev-parse", rev], cwd=proj, capture_output=True, text=True, check=True
        ).stdout.strip()
        for rev in ("HEAD~1", "HEAD")
    ]
    link = "https://ci.example/runs/7"
    done = dg(proj, "diff", *shas, "--markdown", "-", "--markdown-link", link, *PYTEST)
    assert done.returncode == 1, done.stderr
    text = done.stdout
    lines = text.splitlines()
    # The heading names both commits short, as git does; the link is there uncut.
    assert lines[0] == f"### diffgenome: `{shas[0][:12]}` → `{shas[1][:12]}`"
    assert shas[0][:13] not in text and shas[1][:13] not in text
    assert f"[the whole report]({link}): every test, both call trees, the JSON." in lines
    assert "Cut to fit" not in text
    # Reaching the changed code is said once per section, never on every block.
    assert "#### Changed (2, all reaching the changed code)" in lines
    assert "reaches the changed code" not in text
    # A small comment: a block of several lines is open, a block of one line is that line.
    blocks = [line for line in lines if line.startswith(("<details", "changed · "))]
    [headerless] = [line for line in blocks if "test_pipe_headerless" in line]
    assert headerless.startswith("<details open><summary>changed · <code>proj/tests/"), lines
    pipe = [line for line in blocks if "tests/test_output.py::test_pipe<" in line]
    assert pipe == [
        "changed · <code>proj/tests/test_output.py::test_pipe</code> · 1 change: "
        "`py:tab.core.pipe results: list[str] (value A) → list[str] (value B)`"
    ], lines
    assert "<details>" not in text


# -- 10. progress: steady counts, lines that fit ----------------------------------------------


def steady_project(tmp_path: Path) -> Path:
    """A short test file, then a long one; head changes what three slow tests see."""
    files = {
        "app/__init__.py": "",
        "app/core.py": "def value():\n    return 1\n",
        "tests/test_a.py": "def test_first():\n    pass\n",
        "tests/test_b.py": """
            import time

            import pytest

            from app import core


            @pytest.mark.parametrize("i", range(30))
            def test_many(i):
                time.sleep(0.02)  # pytest's letters come one by one


            @pytest.mark.parametrize("i", range(3))
            def test_slow(i):
                time.sleep(1)  # the confirmations of both sides overlap
                assert core.value()
        """,
    }
    repo = make_project(tmp_path, files)
    write_files(repo, {"app/core.py": "def value():\n    return 2\n"})
    git_in(repo, "commit", "-qam", "two")
    return repo


def test_progress_counts_are_steady_and_live_lines_fit_the_width(tmp_path: Path) -> None:
    repo = steady_project(tmp_path)
    args = ("diff", "HEAD~1", "HEAD", "--json", "-")
    pytest_args = ("--", "-p", "no:randomly")
    # A log with a line whenever something moves: the count of the long file's tests goes up
    # one by one, not from 1 to 31 once its line ends.
    logged = run(
        repo,
        PY,
        "-m",
        "diffgenome.analysis.cli",
        *args,
        "--no-confirm",
        *pytest_args,
        env={"DIFFGENOME_PROGRESS_INTERVAL": "0"},
    )
    assert logged.returncode == 1, logged.stderr
    counts = {
        int(m.group(1))
        for m in re.finditer(
            r"recording base HEAD~1 \([0-9a-f]{12}\): (\d+)/34 tests", logged.stderr
        )
    }
    assert len(counts & set(range(2, 31))) >= 10, sorted(counts)
    # A terminal 72 columns wide: every frame of the live line fits, and while base and head
    # are confirmed side by side both counts are on it.
    raw = pty_stderr(
        repo, PY, "-m", "diffgenome.analysis.cli", *args, *pytest_args, env={"COLUMNS": "72"}
    )
    frames = [CONTROL.sub("", piece) for piece in re.split(r"[\r\n]", raw.decode(errors="replace"))]
    # The steps' last lines and the notes stay above the live line, whole (a terminal may
    # wrap them); the live line is every other frame.
    done_lines = re.compile(rf"diffgenome: (?:.* in {DURATION}|reusing run .*|note: .*)")
    live = [frame for frame in frames if frame.strip() and not done_lines.fullmatch(frame)]
    assert live and max(len(frame) for frame in live) <= 72, max(live, key=len)
    assert any(len(re.findall(r"\d+/3 tests", frame)) == 2 for frame in live), live


CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def pty_stderr(where: Path, *args: str, env: dict[str, str]) -> bytes:
    """What a command writes to standard error when that is a terminal, read as it comes."""
    import os
    import threading

    main, child = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: every writer has closed its end
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run(
            args,
            cwd=where,
            env=clean_env({"TERM": "xterm-256color", "TMPDIR": str(where.parent), **env}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=child,
            timeout=300,
            check=False,
        )
    finally:
        os.close(child)
        reader.join(timeout=60)
        os.close(main)
    assert done.returncode == 1, done.stdout[-2000:]
    return b"".join(chunks)


# -- 5. places a reviewer can find ------------------------------------------------------------


def test_a_gap_names_its_predicate_and_place_and_links_it(proj: Path, tmp_path: Path) -> None:
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=proj, capture_output=True, text=True, check=True
    ).stdout.strip()
    url = "https://git.example/tab/blob/{commit}/{path}#L{line}"
    site = tmp_path / "site"
    done = dg(
        proj,
        *("diff", "HEAD~1", "HEAD", "--no-confirm", "--source-url", url, "--html", str(site)),
        *("--markdown", str(tmp_path / "comment.md"), "--json", str(tmp_path / "diff.json")),
        *PYTEST,
    )
    assert done.returncode == 1, done.stderr
    # Head's `if align == "center":` is line 2 of proj/tab/core.py; its true side ran in no test.
    [line] = [x for x in done.stdout.splitlines() if "decision outcome never observed" in x]
    assert re.fullmatch(
        r"    decision outcome never observed: py:tab\.core\.segment/if\[[0-9a-f]{10}\] "
        r"`align == .center.` true  proj/tab/core\.py:2",
        line,
    ), line
    link = f"https://git.example/tab/blob/{head}/proj/tab/core.py#L2"
    comment = (tmp_path / "comment.md").read_text()
    assert f"true`` at [proj/tab/core\\.py\\:2]({link})" in comment, comment
    index = (site / "index.html").read_text()
    assert f'<a href="{link}"><code>proj/tab/core.py:2</code></a>' in index
    assert re.search(r"<code>align == (&#x27;|&quot;)center(&#x27;|&quot;)</code> true", index)
    # The place is for people: the identity of the site holds no line.
    document = json.loads((tmp_path / "diff.json").read_text())
    [segment] = [c for c in document["code_changes"] if c["symbol"] == "py:tab.core.segment"]
    assert (segment["path"], segment["line"]) == ("proj/tab/core.py", 1)
    [center] = [s for s in segment["sites"] if "center" in s["predicate"]]
    assert center["line"] == 2 and re.fullmatch(
        r"py:tab\.core\.segment/if\[[0-9a-f]{10}\]", center["site"]
    )


def _committed(repo: Path, files: dict[str, str]) -> None:
    """``files`` written into ``repo`` and committed as its first commit, ``base``."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git_in(repo, "init", "-q")
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-qm", "base")


def test_affected_ids_with_a_space_reach_pytest_whole(tmp_path: Path) -> None:
    """A parametrized id with a space in it (python-dotenv has eleven): through pytest's
    argument file, as the README writes it, each line is one argument; ``pytest $(…)``
    would split it into words that name no test."""
    repo = tmp_path / "top"
    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": "def words(text):\n    return text.split()\n",
        "tests/test_core.py": (
            "import pytest\n\nfrom pkg.core import words\n\n\n"
            '@pytest.mark.parametrize("text", ["a b", "c"])\n'
            "def test_words(text):\n    assert words(text)\n"
        ),
    }
    _committed(repo, files)
    done = run(repo, PY, "-m", "pytest", "-q", "-p", "no:randomly", "--genome")
    assert done.returncode == 0, done.stdout + done.stderr
    core = repo / "pkg" / "core.py"
    core.write_text(core.read_text().replace("text.split()", "text.split(' ')"))
    git_in(repo, "commit", "-qam", "split on spaces only")
    ids = dg(repo, "affected", "HEAD~1", "HEAD", "--ids", "-q")
    assert ids.stdout.splitlines() == [
        "tests/test_core.py::test_words[a b]",
        "tests/test_core.py::test_words[c]",
    ], ids.stderr
    (repo / "affected.txt").write_text(ids.stdout)
    selected = run(repo, PY, "-m", "pytest", "-p", "no:randomly", "@affected.txt")
    assert selected.returncode == 0, selected.stdout + selected.stderr
    assert "2 passed" in selected.stdout.splitlines()[-1]
    split = run(repo, "bash", "-c", f"{PY} -m pytest -p no:randomly $(cat affected.txt)")
    assert split.returncode == 4, split.stdout + split.stderr  # "a" and "b]" are no tests


def test_affected_ids_from_a_folder_beside_the_tests_name_them_from_there(
    tmp_path: Path,
) -> None:
    """Run from the package's folder (inflection's tests are above it), the ids were written
    from the top, and ``pytest @affected.txt`` there found no such file; they are written
    as pytest takes them where it runs: ``../tests/test_core.py::…``."""
    repo = tmp_path / "top"
    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": "def words(text):\n    return text.split()\n",
        "tests/test_core.py": (
            "from pkg.core import words\n\n\ndef test_words():\n    assert words('a b')\n"
        ),
        "pytest.ini": "[pytest]\npythonpath = .\n",
    }
    _committed(repo, files)
    core = repo / "pkg" / "core.py"
    core.write_text(core.read_text().replace("text.split()", "text.split(' ')"))
    git_in(repo, "commit", "-qam", "split on spaces only")
    below = repo / "pkg"
    ids = dg(below, "affected", "HEAD~1", "HEAD", "--ids", "-q", "--", "-p", "no:randomly", "..")
    assert ids.stdout.splitlines() == ["../tests/test_core.py::test_words"], ids.stderr
    (below / "affected.txt").write_text(ids.stdout)
    selected = run(below, PY, "-m", "pytest", "-p", "no:randomly", "@affected.txt")
    assert "1 passed" in selected.stdout.splitlines()[-1], selected.stdout + selected.stderr
