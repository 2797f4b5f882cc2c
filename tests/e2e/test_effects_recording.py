"""End-to-end: what the recorder keeps of a phase's effects (#29), and what it says it could
not see. Real pytest sessions over a small project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import make_project, record, record_full, test_genome

FILES = {
    "pkg/__init__.py": "",
    "pkg/tool.py": """
        import logging
        import os
        import warnings

        log = logging.getLogger("pkg.tool")


        def run(folder, token):
            print("wrote", folder, "with", token)
            log.info("run %s", token)
            warnings.warn("escaping", UserWarning)
            for n in range(70):
                with open(os.path.join(folder, f"f{n}.txt"), "w") as out:
                    out.write("x")
            os.environ["PKG_LAST"] = token
            del os.environ["PKG_GONE"]
    """,
    "pkg/extra.py": "VALUE = 1\n",
    "tests/conftest.py": """
        import pytest


        @pytest.fixture(autouse=True)
        def environment(monkeypatch):
            monkeypatch.setenv("PKG_GONE", "1")
            monkeypatch.setenv("PKG_LAST", "none")
    """,
    "tests/test_tool.py": """
        import logging
        import sys

        from pkg import tool


        def test_run(tmp_path, caplog):
            caplog.set_level(logging.INFO)
            tool.run(str(tmp_path), "t0k3n")


        def test_own_capture(capsys):
            print("mine")
            assert capsys.readouterr().out == "mine\\n"


        def test_nothing():
            import pkg.extra  # writes its bytecode: never a file effect

            assert pkg.extra.VALUE
    """,
}


def _effects(doc: dict[str, Any], name: str, kind: str) -> list[dict[str, Any]]:
    test = test_genome(doc, name)
    return [e for e in test["effects"] if e["type"] == kind]


def test_effects_of_a_phase_bounded_and_location_independent(tmp_path: Path) -> None:
    project = make_project(tmp_path, FILES)
    doc = record(project, "-p", "no:randomly", env={"PYTHONDONTWRITEBYTECODE": ""})
    [out] = _effects(doc, "::test_run", "output")
    assert (out["phase"], out["stream"], out["lines"]) == ("call", "stdout", 1)
    [log] = _effects(doc, "::test_run", "log")
    assert (log["logger"], log["level"], log["count"]) == ("pkg.tool", "INFO", 1)
    assert log["template_digest"] != log["args_digest"]
    [warned] = _effects(doc, "::test_run", "warning")
    assert warned["escaped"] is True  # it reached pytest's capture: also in "warnings"
    assert warned["origin"] == "py:pkg.tool.run"
    files = _effects(doc, "::test_run", "file")
    kept = [f for f in files if "bound" not in f]
    assert len(kept) == 64 and all(f["phase"] == "call" for f in kept)
    assert [f for f in files if "bound" in f] == [
        {"type": "file", "phase": "call", "bound": "files", "count": 6}
    ]
    assert all(f["path"].startswith("<tmp>/pytest-of-<user>/pytest-<n>/") for f in kept), kept
    environ = {(e["phase"], e["name"]): e["change"] for e in _effects(doc, "::test_run", "environ")}
    # The fixture's setenv (setup), the code's (call), monkeypatch putting them back (teardown);
    # never PYTEST_CURRENT_TEST, which pytest sets in every phase.
    assert environ == {
        ("setup", "PKG_GONE"): "set",
        ("setup", "PKG_LAST"): "set",
        ("call", "PKG_LAST"): "changed",
        ("call", "PKG_GONE"): "unset",
        ("teardown", "PKG_LAST"): "unset",
    }
    assert "effects_unrecorded" not in test_genome(doc, "::test_run")
    # A test that takes its output itself: what readouterr() handed it is its output (#47;
    # before, nothing of it was seen and ``output:test-captures`` said so).
    own = test_genome(doc, "::test_own_capture")
    assert "effects_unrecorded" not in own
    [printed] = [e for e in own["effects"] if e["type"] == "output"]
    assert (printed["phase"], printed["stream"], printed["lines"]) == ("call", "stdout", 1)
    nothing = test_genome(doc, "::test_nothing")["effects"]
    assert {e["type"] for e in nothing} == {"environ"}  # the autouse fixture's, no file


def test_output_under_dash_s_is_said_not_seen(tmp_path: Path) -> None:
    project = make_project(tmp_path, FILES)
    doc = record(project, "-p", "no:randomly", "-s")
    test = test_genome(doc, "::test_run")
    assert test["effects_unrecorded"] == ["output:capture-off"]
    assert [e for e in test["effects"] if e["type"] == "output"] == []
    assert _effects(doc, "::test_run", "log")  # the other kinds are still seen


def test_the_log_reader_never_makes_the_program_say_less(tmp_path: Path) -> None:
    """Under ``-p no:logging`` no handler is on the root: ``logging`` writes a warning to
    stderr itself (its last resort). The recorder's reader must not take that away."""
    project = make_project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/loud.py": """
                import logging


                def careful():
                    logging.getLogger("pkg.loud").warning("careful")
            """,
            "tests/test_loud.py": """
                from pkg.loud import careful


                def test_careful():
                    careful()
                    assert False, "fail, so that pytest shows what was captured"
            """,
        },
    )
    recording = record_full(project, "-p", "no:logging", "-p", "no:randomly", returncode=1)
    assert "Captured stderr call" in recording.proc.stdout, recording.proc.stdout
    test = test_genome(recording.doc, "::test_careful")
    streams = [e["stream"] for e in test["effects"] if e["type"] == "output"]
    assert streams == ["stderr"]
    [log] = [e for e in test["effects"] if e["type"] == "log"]
    assert (log["logger"], log["level"]) == ("pkg.loud", "WARNING")


def test_a_warning_or_log_in_a_thread_takes_no_digest_in_that_thread(tmp_path: Path) -> None:
    """google-auth's ``test_nonblocking_refresh_stale_credentials`` starts a refresh thread
    and looks at its result at once. The recorder digested that thread's deprecation warning
    in the thread, and an HMAC lets other threads run (OpenSSL is called without the GIL): the
    test looked before the refresh, and failed under ``--genome`` on every run (0 of 3
    plain). Whether another thread runs at such a moment depends on the machine, so the test
    here looks at the cause: a profile function in the thread sees every C call made there,
    the recorder's own included, and no HMAC may be among them."""
    project = make_project(
        tmp_path,
        {
            "tests/test_thread.py": """
                import logging
                import threading
                import warnings


                def test_the_thread_only_warns_and_logs():
                    seen = []

                    def profile(frame, event, arg):
                        if event == "c_call":
                            seen.append(getattr(arg, "__name__", "?"))

                    def work():
                        warnings.warn("old api", UserWarning)
                        logging.getLogger("work").warning("refreshed %s", 1)

                    threading.setprofile(profile)
                    try:
                        thread = threading.Thread(target=work)
                        thread.start()
                        thread.join()
                    finally:
                        threading.setprofile(None)
                    assert "warn" in seen  # the profile did see the thread's calls
                    assert not [name for name in seen if "hmac" in name], seen
            """
        },
    )
    recording = record_full(project, "-p", "no:randomly")
    [test] = [t for t in recording.doc["tests"] if t["id"].endswith("logs")]
    assert test["outcome"] == "passed"
    # The thread's log record and its warning are recorded all the same.
    assert [entry["logger"] for entry in test["effects"] if entry["type"] == "log"] == ["work"]
    [warned] = [entry for entry in test["effects"] if entry["type"] == "warning"]
    assert warned["category"] == "UserWarning"
    assert warned["origin"].endswith("test_the_thread_only_warns_and_logs.<locals>.work")
