"""End-to-end: a project whose warning filters are strict records like any other.

Two real failures started this file: with ``filterwarnings = error`` in a project's config,
``pytest --genome --genome-store PATH`` ended in INTERNALERROR at configure time (the
recorder's advice was a ``PytestWarning`` and the project's filter raised it), and recording
then stopped with "run ... is not in the store" (the run was never begun, yet the session's
end tried to leave it). The recorder now speaks in plain ``diffgenome:`` lines that no filter
can reach, and a recorder that cannot start lets the session run unrecorded.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from e2e.helpers import (
    ALL_PLUGINS,
    PY,
    clean_env,
    diffgenome_notices,
    export,
    make_project,
    record_full,
    run_pytest,
    test_genome,
)

# pytest-asyncio (in this test environment) warns at configure time when its loop scope is
# unset, which a strict filter would turn into an error of its own.
PLAIN_INI = """
    [pytest]
    asyncio_default_fixture_loop_scope = function
"""
STRICT_INI = (
    PLAIN_INI
    + """
    filterwarnings =
        error
"""
)

PKG = {
    "pkg/__init__.py": "",
    "pkg/mod.py": """
        def f(n):
            if n > 0:
                return n - 1
            return 0
    """,
    "tests/test_a.py": """
        from pkg.mod import f


        def test_one():
            assert f(2) == 1


        def test_two():
            assert f(0) == 0
    """,
}

# Every way a user makes warnings errors (or switches pytest's warnings plugin off), as
# (extra pytest arguments, extra environment, pytest.ini text).
STRICT_SETTINGS = {
    "ini-filterwarnings-error": ((), {}, STRICT_INI),
    "-W-error": (("-W", "error"), {}, PLAIN_INI),
    "PYTHONWARNINGS-error": ((), {"PYTHONWARNINGS": "error"}, PLAIN_INI),
    "no-warnings-plugin": (("-p", "no:warnings"), {}, PLAIN_INI),
}


def _project(tmp_path: Path, ini: str, extra: dict[str, str] | None = None) -> Path:
    files = dict(PKG)
    files["pytest.ini"] = ini
    files.update(extra or {})
    return make_project(tmp_path, files)


def test_the_two_reported_failures_of_a_filterwarnings_error_project(tmp_path: Path) -> None:
    """``--genome-store PATH`` as two arguments in a ``filterwarnings = error`` project: the
    advice is one plain line, every test runs and is recorded, and the run is complete."""
    project = _project(tmp_path, STRICT_INI)
    store = tmp_path / "store"
    proc = run_pytest(project, "--genome", "--genome-store", str(store), "-q")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "2 passed" in proc.stdout
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert "not in the store" not in output
    notices = diffgenome_notices(output)
    assert len(notices) == 1 and "--genome-store=PATH" in notices[0], output
    doc = export(project, store)
    assert doc["run"]["complete"] is True, doc["run"]
    assert {t["id"] for t in doc["tests"]} >= {
        "tests/test_a.py::test_one",
        "tests/test_a.py::test_two",
    }
    assert all(t["verified"] for t in doc["tests"]), [t["unverified_reasons"] for t in doc["tests"]]


@pytest.mark.parametrize("setting", sorted(STRICT_SETTINGS))
def test_what_the_recorder_says_is_never_a_warning(tmp_path: Path, setting: str) -> None:
    """The recorder has something to say (no tool id is free: a conftest took them all) under
    each strict setting: outcomes are those of the plain run, the notice is one line, no
    ``Warning`` appears, and the run is complete."""
    args, env, ini = STRICT_SETTINGS[setting]
    squatter = {
        "conftest.py": """
            import sys

            for tool_id in (2, 3, 4):
                sys.monitoring.use_tool_id(tool_id, f"squatter{tool_id}")
        """
    }
    project = _project(tmp_path, ini, squatter)
    plain = run_pytest(project, *args, "-q", env=env)
    recording = record_full(project, *args, "-q", env=env, returncode=plain.returncode)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert (
        plain.stdout.splitlines()[-1].split(" in ")[0]
        == (recording.proc.stdout.splitlines()[-1].split(" in ")[0])
    )
    notices = diffgenome_notices(recording.output)
    assert len(notices) == 1 and "tool id" in notices[0], recording.output
    assert "Warning" not in recording.output
    assert recording.doc["run"]["complete"] is True
    for test in recording.doc["tests"]:
        assert any(r.startswith("tool-id-unavailable") for r in test["unverified_reasons"])


@ALL_PLUGINS
def test_xdist_workers_are_heard_once_through_the_controller(tmp_path: Path) -> None:
    """Under ``-n 2`` each worker finds no tool id free; the user reads it once (a worker's
    terminal is never seen), and nothing is a warning even with ``filterwarnings = error``."""
    squatter = {
        "conftest.py": """
            import sys

            for tool_id in (2, 3, 4):
                sys.monitoring.use_tool_id(tool_id, f"squatter{tool_id}")
        """
    }
    project = _project(tmp_path, STRICT_INI, squatter)
    recording = record_full(project, "-n", "2", "-p", "xdist")
    notices = diffgenome_notices(recording.output)
    assert len(notices) == 1 and "tool id" in notices[0], recording.output
    assert "Warning" not in recording.output
    assert recording.doc["run"]["complete"] is True


def test_a_store_that_fails_mid_run_is_one_line_in_a_strict_project(tmp_path: Path) -> None:
    """A test reopens the store's database descriptors read-only and changes its digest key
    (so that the writer cannot open the store again): the next write fails, the user reads
    one line, the run reads as incomplete, and the session's outcome is the plain one (no
    INTERNALERROR from a warning the project's filter raised)."""
    project = _project(
        tmp_path,
        STRICT_INI,
        {
            "tests/test_b.py": """
                import os


                def test_breaks_the_store():
                    for fd in os.listdir("/proc/self/fd"):
                        try:
                            target = os.readlink(f"/proc/self/fd/{fd}")
                        except OSError:
                            continue
                        if ".diffgenome/genome.sqlite" in target:
                            os.dup2(os.open(target, os.O_RDONLY), int(fd))
                    # The writer opens the store again when its descriptors were taken; a
                    # new digest key makes that impossible, so the store fails for good.
                    with open(".diffgenome/secret.key", "wb") as key:
                        key.write(os.urandom(32))


                def test_after():
                    pass
            """
        },
    )
    proc = run_pytest(project, "--genome", "-q")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "4 passed" in proc.stdout
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert "Warning" not in output
    notices = diffgenome_notices(output)
    assert len(notices) == 1 and "the store at" in notices[0], output


def test_source_with_an_invalid_escape_is_mapped_under_error_filters(tmp_path: Path) -> None:
    """Naming code parses the project's source again. Python warned about the invalid escape
    when it compiled the module (here: ahead of time, so the import itself is quiet); the
    recorder's parse must neither raise that warning under ``-W error`` (the decision map of
    the module would be lost) nor show it a second time under default filters."""
    files = {
        "pkg/__init__.py": "",
        "pkg/mod.py": """
            import re


            def digits(text):
                if re.fullmatch("\\d+", text):
                    return True
                return False
        """,
        "tests/test_d.py": """
            from pkg.mod import digits


            def test_digits():
                assert digits("12")
                assert not digits("x")
        """,
    }
    files["pytest.ini"] = PLAIN_INI
    project = make_project(tmp_path, files)
    subprocess.run(
        [PY, "-W", "ignore", "-m", "compileall", "-q", str(project / "pkg")],
        check=True,
        env=clean_env({"PYTHONDONTWRITEBYTECODE": ""}),
    )
    strict = record_full(project, "-W", "error")
    test = test_genome(strict.doc, "::test_digits")
    assert test["verified"] is True, test["unverified_reasons"]
    sites = {b["site"]: b["outcomes"] for b in test["phases"]["call"]["branches"]}
    assert list(sites.values()) == [{"true": 1, "false": 1}], sites
    assert "SyntaxWarning" not in strict.output
    default = record_full(project, "-W", "default::SyntaxWarning")
    assert "SyntaxWarning" not in default.output, default.output


@ALL_PLUGINS
def test_the_recorder_is_not_rewritten_and_the_project_still_is(tmp_path: Path) -> None:
    """pytest rewrites the asserts of every module of a plugin's distribution; where bytecode
    is not kept (``diffgenome diff`` records with ``PYTHONDONTWRITEBYTECODE``) it parsed and
    compiled the recorder's modules anew in every session, 0.4 s each. They are imported
    past the rewriting hook, which is put back at once: the project's own asserts are still
    rewritten, and nothing of it is a warning under ``filterwarnings = error``."""
    tests = """
        import sys

        from _pytest.assertion.rewrite import AssertionRewritingHook


        def test_the_hook_is_back_and_the_recorder_was_not_rewritten():
            assert any(isinstance(f, AssertionRewritingHook) for f in sys.meta_path)
            session = sys.modules["diffgenome.recording.session"]
            assert not isinstance(session.__loader__, AssertionRewritingHook)


        def test_a_failing_assert_is_explained():
            seen = [1, 2]
            assert seen == [1, 3]
    """
    # This test environment installs diffgenome editable, whose files pytest does not mark;
    # an installed distribution has every module marked, as this marks the recorder's.
    conftest = """
        import pytest

        pytest.register_assert_rewrite("diffgenome.recording.session")
    """
    project = make_project(
        tmp_path, {"pytest.ini": STRICT_INI, "conftest.py": conftest, "tests/test_a.py": tests}
    )
    done = run_pytest(project, "--genome", "-q", env={"PYTHONDONTWRITEBYTECODE": "1"})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "At index 1 diff: 2 != 3" in out, out  # pytest's rewritten assert
    assert "Warning" not in out, out
