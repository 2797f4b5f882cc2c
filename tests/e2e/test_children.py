"""End-to-end: Python child processes are recorded into the test that started them (#11).

One real pytest session records a project whose tests start real children of every kind:
``sys.executable script.py``, ``python -m pkg``, a console script (a file in the tree whose
shebang names the interpreter, run directly), a copied environment, multiprocessing with
fork, spawn and forkserver, a plain ``os.fork``, a child that kills itself before it can
send its recording, one that never loads the hook (``python -S``) and one given a broken
hook configuration. The child's in-scope calls must be in the parent test's genome under the
node that started it; a child that could not be recorded stays disclosed; and the session
leaves neither its environment variable nor its ``.pth`` file behind.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    DIFF_PYTEST_ARGS,
    CountingServer,
    cli_json,
    git_commit,
    make_project,
    os_events,
    record_full,
    test_genome,
    write_files,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="fork and forkserver: Linux")

SITE = Path(sysconfig.get_path("purelib"))


FILES = {
    "pkg/__init__.py": "",
    "pkg/work.py": """
        def double(x):
            if x > 2:
                return x * 2
            return x


        def crash():
            import os
            import signal

            double(7)
            os.kill(os.getpid(), signal.SIGKILL)


        def leave():
            import os

            double(8)
            os._exit(0)
    """,
    "pkg/__main__.py": """
        from pkg.work import double

        double(5)
    """,
    "tools/run_work.py": """
        import os
        import sys

        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

        from pkg.work import crash, double, leave

        if sys.argv[1:] == ["crash"]:
            crash()
        if sys.argv[1:] == ["leave"]:
            leave()
        if sys.argv[1:] == ["slow"]:
            sys.stdin.read()  # until the parent closes it, in a later test
        double(1)
    """,
    "tools/run.sh": '#!/bin/sh\nexec "$1" "$2"\n',
    "conftest.py": """
        import json
        import os


        def pytest_unconfigure(config):
            # After the recorder closed: what it left in the environment.
            with open(os.path.join(str(config.rootpath), "env-after.json"), "w") as out:
                json.dump(
                    {"DIFFGENOME_CHILD": os.environ.get("DIFFGENOME_CHILD"), "pid": os.getpid()},
                    out,
                )
    """,
    "tests/test_children.py": """
        import multiprocessing
        import os

        import pytest
        import stat
        import subprocess
        import sys
        import sysconfig

        from pkg.work import double

        ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        SCRIPT = os.path.join(ROOT, "tools", "run_work.py")


        def run(argv, **kwargs):
            return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs)


        def test_script():
            run([sys.executable, SCRIPT])


        def test_module():
            run([sys.executable, "-m", "pkg"], cwd=ROOT)


        def test_console_script():
            # What a console script is: a file whose shebang names the environment's Python.
            tool = os.path.join(ROOT, "tools", "tool")
            with open(tool, "w") as out:
                out.write("#!" + sys.executable + "\\n")
                with open(SCRIPT) as source:
                    out.write(source.read())
            os.chmod(tool, os.stat(tool).st_mode | stat.S_IXUSR)
            run([tool])


        def test_python_under_another_program():
            shell = os.path.join(ROOT, "tools", "run.sh")
            os.chmod(shell, os.stat(shell).st_mode | stat.S_IXUSR)
            run([shell, sys.executable, SCRIPT])


        @pytest.fixture
        def child_env():
            return dict(os.environ, EXTRA="1")


        def first(env):
            run([sys.executable, SCRIPT], env=env)


        def second(env):
            run([sys.executable, "-m", "pkg"], cwd=ROOT, env=env)


        def test_one_environment_two_children(child_env):
            # Copied in setup, before the children: their arguments tell them apart.
            run([sys.executable, "-c", "pass"])
            first(child_env)
            second(child_env)


        def test_copied_environment():
            run([sys.executable, SCRIPT], env=dict(os.environ, EXTRA="1"))


        def _process(method):
            context = multiprocessing.get_context(method)
            process = context.Process(target=double, args=(3,))
            process.start()
            process.join()
            assert process.exitcode == 0


        def test_multiprocessing_fork():
            _process("fork")


        def test_multiprocessing_spawn():
            _process("spawn")


        def test_multiprocessing_forkserver():
            _process("forkserver")


        def test_plain_fork():
            pid = os.fork()
            if pid == 0:
                double(4)
                os._exit(0)
            assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


        def _fork_exec(program, argv):
            pid = os.fork()
            if pid == 0:
                os.execv(program, argv)
            assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


        def test_fork_then_exec_python():
            _fork_exec(sys.executable, [sys.executable, SCRIPT])


        def test_fork_then_exec_program():
            _fork_exec("/bin/sh", ["/bin/sh", "-c", "exit 0"])


        def test_spawnv():
            assert os.spawnv(os.P_WAIT, sys.executable, [sys.executable, SCRIPT]) == 0


        def test_crash():
            done = subprocess.run([sys.executable, SCRIPT, "crash"], check=False)
            assert done.returncode == -9


        def test_os_exit():
            run([sys.executable, SCRIPT, "leave"])


        def test_bare_environment():
            run([sys.executable, "-m", "pkg"], cwd=ROOT, env={"PATH": os.environ["PATH"]})


        def test_grandchild():
            code = "import subprocess, sys; subprocess.run([sys.executable, '-m', 'pkg'])"
            run([sys.executable, "-c", code], cwd=ROOT)


        def test_child_in_subtest(subtests):
            with subtests.test(kind="child"):
                run([sys.executable, SCRIPT])


        LATE = []


        def test_late_child():
            LATE.append(subprocess.Popen([sys.executable, SCRIPT, "slow"], stdin=subprocess.PIPE))


        def test_late_child_ends():
            LATE[0].communicate(b"")
            assert LATE[0].returncode == 0


        def test_no_site():
            run([sys.executable, "-S", "-c", "pass"])


        def test_broken_hook():
            # a folder that is not there: no session to record for (it ended, or never was);
            # the child runs unrecorded and says nothing, the parent discloses it
            env = dict(os.environ, DIFFGENOME_CHILD="diffgenome-child:1.1|/nonexistent/diffgenome")
            done = run([sys.executable, "-c", "print('ran')"], env=env)
            assert done.stdout == "ran\\n"
            assert done.stderr == "", done.stderr


        def test_hook_is_in_place():
            value = os.environ["DIFFGENOME_CHILD"]
            assert "|" in value
            site = sysconfig.get_path("purelib")
            assert [n for n in os.listdir(site) if n == f"zz-diffgenome-child-{os.getpid()}.pth"]
    """,
}


class Session:
    def __init__(self, doc: dict[str, Any], project: Path, output: str) -> None:
        self.doc = doc
        self.project = project
        self.output = output


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    project = make_project(tmp_path_factory.mktemp("children"), FILES)
    recording = record_full(project)
    return Session(recording.doc, project, recording.output)


def _call(session: Session, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    test = test_genome(session.doc, f"::{name}")
    assert test["outcome"] == "passed", test
    return test, test["phases"]["call"]


def _under(phase: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node below ``node``, depth first."""
    below: list[dict[str, Any]] = []
    parents = {node["id"]}
    for other in phase["nodes"]:
        if other["parent"] in parents:
            below.append(other)
            parents.add(other["id"])
    return below


def _recorded_child(session: Session, name: str, target: str) -> list[dict[str, Any]]:
    """The one subprocess event of the test, recorded, and the nodes of its child."""
    test, phase = _call(session, name)
    assert test["verified"] is True, test["unverified_reasons"]
    by_id = {n["id"]: n for n in phase["nodes"]}
    # The test's own spawn: its parent is a call of the test module (a grandchild's is not).
    [spawn] = [e for e in os_events(phase, "subprocess") if by_id[e["parent"]]["type"] == "call"]
    assert (spawn["target"], spawn["outcome"]) == (target, "recorded-child")
    assert by_id[spawn["parent"]]["symbol"].startswith("py:tests.test_children.")
    below = _under(phase, spawn)
    assert below, "the child's calls are under the node that started it"
    top = [n for n in below if n["parent"] == spawn["id"] and n["type"] == "call"]
    assert all(n["via"] == "process" for n in top)
    return below


def _symbols(nodes: list[dict[str, Any]]) -> set[str]:
    return {n["symbol"] for n in nodes if n["type"] == "call"}


def _branches_of(phase: dict[str, Any], nodes: list[dict[str, Any]]) -> dict[str, int]:
    ids = {n["id"] for n in nodes}
    return {
        b["site"].rpartition("/")[2]: b["outcomes"]["true"]
        for b in phase["branches"]
        if b["node"] in ids
    }


def test_a_script_run_by_sys_executable_is_recorded(session: Session) -> None:
    below = _recorded_child(session, "test_script", "python")
    assert {"py:tools.run_work", "py:pkg.work.double"} <= _symbols(below)
    _, phase = _call(session, "test_script")
    # double(1) took the false branch, in the child.
    double = next(n for n in below if n.get("symbol") == "py:pkg.work.double")
    [branch] = [b for b in phase["branches"] if b["node"] == double["id"]]
    assert branch["outcomes"] == {"true": 0, "false": 1}


def test_python_dash_m_is_recorded(session: Session) -> None:
    below = _recorded_child(session, "test_module", "python")
    assert {"py:pkg.__main__", "py:pkg.work.double"} <= _symbols(below)


def test_a_console_script_is_recorded(session: Session) -> None:
    below = _recorded_child(session, "test_console_script", "tool")
    assert "py:pkg.work.double" in _symbols(below)


def test_python_run_by_another_program_hangs_under_that_program(session: Session) -> None:
    test, phase = _call(session, "test_python_under_another_program")
    assert test["verified"] is True, test["unverified_reasons"]
    [program] = os_events(phase, "subprocess")
    assert program["outcome"] == "program" and program["target"].startswith("tools/run.sh@")
    assert "py:pkg.work.double" in _symbols(_under(phase, program))


def test_children_sharing_an_environment_are_told_apart(session: Session) -> None:
    test, phase = _call(session, "test_one_environment_two_children")
    assert test["verified"] is True, test["unverified_reasons"]
    by_id = {n["id"]: n for n in phase["nodes"]}
    spawns = {
        by_id[by_id[e["parent"]]["parent"]]["symbol"]: e for e in os_events(phase, "subprocess")
    }
    assert spawns.keys() == {
        "py:tests.test_children.first",
        "py:tests.test_children.second",
        "py:tests.test_children.test_one_environment_two_children",
    }
    first = _symbols(_under(phase, spawns["py:tests.test_children.first"]))
    second = _symbols(_under(phase, spawns["py:tests.test_children.second"]))
    assert "py:tools.run_work" in first and "py:pkg.__main__" not in first
    assert "py:pkg.__main__" in second and "py:tools.run_work" not in second
    assert all(e["outcome"] == "recorded-child" for e in spawns.values())


def test_a_child_given_a_copied_environment_is_recorded(session: Session) -> None:
    below = _recorded_child(session, "test_copied_environment", "python")
    assert "py:pkg.work.double" in _symbols(below)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_children_are_recorded(session: Session, method: str) -> None:
    below = _recorded_child(session, f"test_multiprocessing_{method}", "multiprocessing")
    [double] = [n for n in below if n.get("symbol") == "py:pkg.work.double"]
    assert double["count"] == 1 and double["exits"] == {"returned": 1}
    assert double["args"], "the child's arguments are summarised like the parent's"


def test_a_plain_fork_is_recorded(session: Session) -> None:
    below = _recorded_child(session, "test_plain_fork", "fork")
    assert "py:pkg.work.double" in _symbols(below)


def test_a_fork_that_becomes_python_is_recorded(session: Session) -> None:
    """``pty.fork`` + exec, pexpect's way: the fork sends what it did before the exec, and
    the Python it became sends the rest under the same token."""
    below = _recorded_child(session, "test_fork_then_exec_python", "fork")
    [exec_event] = [n for n in below if n["type"] == "os_event"]
    assert (exec_event["target"], exec_event["outcome"]) == ("python", "recorded-child")
    assert {"py:tools.run_work", "py:pkg.work.double"} <= _symbols(below)


def test_a_fork_that_becomes_another_program_is_recorded(session: Session) -> None:
    below = _recorded_child(session, "test_fork_then_exec_program", "fork")
    [exec_event] = [n for n in below if n["type"] == "os_event"]
    assert (exec_event["target"], exec_event["outcome"]) == ("sh", "program")


def test_os_spawnv_is_recorded(session: Session) -> None:
    below = _recorded_child(session, "test_spawnv", "python")
    assert "py:pkg.work.double" in _symbols(below)


def test_a_child_that_leaves_with_os_exit_is_recorded(session: Session) -> None:
    """``os._exit`` inside calls: they end with the process, and entries still add up."""
    below = _recorded_child(session, "test_os_exit", "python")
    exits = {n["symbol"]: n["exits"] for n in below if n["type"] == "call"}
    assert exits["py:pkg.work.leave"] == {"process-ended": 1}
    assert exits["py:tools.run_work"] == {"process-ended": 1}
    assert exits["py:pkg.work.double"] == {"returned": 1}


def test_a_child_that_dies_before_sending_stays_disclosed(session: Session) -> None:
    test, phase = _call(session, "test_crash")
    assert test["verified"] is False
    assert "call:child-unfinished:python" in test["unverified_reasons"]
    [spawn] = os_events(phase, "subprocess")
    assert spawn["outcome"] == "untraced-child"
    assert _under(phase, spawn) == []


def test_a_grandchild_is_recorded_under_the_child_that_started_it(session: Session) -> None:
    below = _recorded_child(session, "test_grandchild", "python")
    [grandchild] = [n for n in below if n["type"] == "os_event"]
    assert (grandchild["target"], grandchild["outcome"]) == ("python", "recorded-child")
    _, phase = _call(session, "test_grandchild")
    assert "py:pkg.work.double" in _symbols(_under(phase, grandchild))


def test_a_child_without_the_hook_stays_disclosed(session: Session) -> None:
    for name in ("test_no_site", "test_broken_hook", "test_bare_environment"):
        test, phase = _call(session, name)
        assert test["verified"] is False
        assert test["unverified_reasons"] == ["call:untraced-subprocess:python"], name
        [spawn] = os_events(phase, "subprocess")
        assert spawn["outcome"] == "untraced-child"


def test_a_child_still_running_when_its_phase_ends_is_disclosed(session: Session) -> None:
    test, phase = _call(session, "test_late_child")
    assert test["verified"] is False
    assert set(test["unverified_reasons"]) & {
        "call:child-unfinished:python",
        "call:untraced-subprocess:python",
    }
    [spawn] = os_events(phase, "subprocess")
    assert spawn["outcome"] == "untraced-child"
    # Its recording arrives during the next test: not that test's, and said once.
    test, phase = _call(session, "test_late_child_ends")
    assert test["verified"] is True, test["unverified_reasons"]
    assert os_events(phase) == []
    assert "1 Python child process(es) sent their recording after" in session.output


def test_a_child_of_a_subtest_stays_a_gap(session: Session) -> None:
    """A subtest's genome is written when its block ends, before its child's recording can
    be attached: the child stays disclosed on the test that holds the subtest."""
    test, _ = _call(session, "test_child_in_subtest")
    assert "call:untraced-subprocess:python" in test["unverified_reasons"]
    [subtest] = [t for t in session.doc["tests"] if "test_child_in_subtest " in t["id"]]
    [spawn] = os_events(subtest["phases"]["call"], "subprocess")
    assert spawn["outcome"] == "untraced-child"


def test_the_session_leaves_no_trace(session: Session) -> None:
    _call(session, "test_hook_is_in_place")
    after = json.loads((session.project / "env-after.json").read_text())
    assert after["DIFFGENOME_CHILD"] is None
    # Only this session's hook: other sessions may run beside it in the same environment.
    assert not (SITE / f"zz-diffgenome-child-{after['pid']}.pth").exists()


STABLE = [
    "test_script",
    "test_module",
    "test_console_script",
    "test_copied_environment",
    "test_multiprocessing_fork",
    "test_multiprocessing_spawn",
    "test_multiprocessing_forkserver",
    "test_plain_fork",
    "test_os_exit",
    "test_grandchild",
    "test_python_under_another_program",
    "test_one_environment_two_children",
    "test_fork_then_exec_python",
    "test_fork_then_exec_program",
    "test_spawnv",
]


@pytest.mark.parametrize("core", [None, "python"])
def test_children_are_recorded_the_same_every_time(session: Session, core: str | None) -> None:
    """Pids, finishing order, the capture folder and the core never reach the genome (the
    copied environment holds DIFFGENOME_CHILD, whose value is stable text)."""
    env = None if core is None else {"DIFFGENOME_CORE": core}
    again = record_full(session.project, env=env).doc
    # With another environment, a test that passes a copy of it as an argument differs.
    copies = {"test_copied_environment", "test_one_environment_two_children"}
    names = STABLE if env is None else [n for n in STABLE if n not in copies]
    for name in names:
        first = test_genome(session.doc, f"::{name}")
        second = test_genome(again, f"::{name}")
        assert json.dumps(first["phases"], sort_keys=True) == json.dumps(
            second["phases"], sort_keys=True
        ), name


@pytest.mark.slow  # records both sides, and again to confirm
def test_a_change_that_only_a_child_runs_is_reported(tmp_path: Path) -> None:
    """What the diff is for: the child's behaviour changed, the parent's did not."""
    repo = tmp_path / "repo"
    write_files(repo, FILES)
    git_commit(repo)
    changed = FILES["pkg/work.py"].replace("if x > 2:", "if x > 0:")
    write_files(repo, {"pkg/work.py": changed})
    pytest_args = (*DIFF_PYTEST_ARGS, "-k", "test_script")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE", pytest_args=pytest_args)
    assert code == 1
    [test] = [t for t in document["tests"] if t["id"].endswith("::test_script")]
    assert test["status"] == "changed", test
    changes = {(c["kind"], c["symbol"]) for c in test["changes"]}
    assert ("result_changed", "py:pkg.work.double") in changes, test["changes"]


def test_children_are_recorded_the_same_wherever_the_tree_is(tmp_path: Path) -> None:
    """Two checkouts at different paths, one digest key: byte-identical genomes."""
    key = tmp_path / "key"
    key.write_bytes(os.urandom(32))
    docs = []
    for n, where in enumerate((tmp_path / "a", tmp_path / "somewhere" / "else")):
        project = make_project(where, FILES, name="checkout")
        store = tmp_path / f"store-{n}"
        args = [f"--genome-key-file={key}", f"--genome-store={store}", "-k", " or ".join(STABLE)]
        docs.append(record_full(project, *args, store=store).doc)
    for name in STABLE:
        first = test_genome(docs[0], f"::{name}")
        second = test_genome(docs[1], f"::{name}")
        assert json.dumps(first["phases"], sort_keys=True) == json.dumps(
            second["phases"], sort_keys=True
        ), name


def test_children_are_recorded_under_xdist(tmp_path: Path) -> None:
    """Each worker records its own tests' children; the controller sets nothing."""
    project = make_project(tmp_path, FILES)
    doc = record_full(project, "-n", "2", "-k", "test_script or test_multiprocessing_spawn").doc
    for name, target in (
        ("test_script", "python"),
        ("test_multiprocessing_spawn", "multiprocessing"),
    ):
        test = test_genome(doc, f"::{name}")
        assert test["verified"] is True, test["unverified_reasons"]
        [spawn] = os_events(test["phases"]["call"], "subprocess")
        assert (spawn["target"], spawn["outcome"]) == (target, "recorded-child")
        assert "py:pkg.work.double" in _symbols(_under(test["phases"]["call"], spawn))
    after = json.loads((project / "env-after.json").read_text())
    assert after["DIFFGENOME_CHILD"] is None


# -- every kind of child runs under the session's egress policy (#30) -------------------------

DIALS = (
    "test_script",
    "test_module",
    "test_console_script",
    "test_python_under_another_program",
    "test_one_environment_two_children",
    "test_copied_environment",
    "test_multiprocessing_fork",
    "test_multiprocessing_spawn",
    "test_multiprocessing_forkserver",
    "test_plain_fork",
    "test_fork_then_exec_python",
    "test_spawnv",
    "test_os_exit",
    "test_grandchild",
)


def test_every_kind_of_child_runs_under_the_sessions_policy(tmp_path: Path) -> None:
    """Under block, the code every child runs (``double``) dials a listener on the harness's
    loopback: no connection arrives, whatever kind of Python child it is, and each refusal is
    recorded as refused in the child's part of the test's genome. (A child killed before it
    sends, and one still running when its phase ends, are refused too: they are counted.)"""
    dial = textwrap.indent(
        textwrap.dedent(
            """
            def dial():
                import os, socket

                port = os.environ.get("CHILD_DIAL")  # not in a bare environment
                try:
                    if port:
                        socket.create_connection(("127.0.0.1", int(port)), timeout=30).close()
                except PermissionError:
                    pass


            def double(x):
                dial()
            """
        ).lstrip("\n"),
        " " * 8,
    )
    work = FILES["pkg/work.py"].replace("        def double(x):\n", dial, 1)
    assert work != FILES["pkg/work.py"]
    project = make_project(tmp_path, {**FILES, "pkg/work.py": work})
    server = CountingServer()
    try:
        recording = record_full(
            project, "--genome-egress=block", env={"CHILD_DIAL": str(server.port)}
        )
    finally:
        accepted = server.stop()
    assert accepted == 0
    for name in DIALS:
        test, phase = _call(Session(recording.doc, project, recording.output), name)
        refused = [e for e in os_events(phase) if e["outcome"] == "refused:egress-guard"]
        assert {e["kind"] for e in refused} == {"dns"}, (name, os_events(phase))
        by_id = {n["id"]: n for n in phase["nodes"]}
        for event in refused:  # recorded in the child: under its call of pkg.work.dial
            assert by_id[event["parent"]]["symbol"] == "py:pkg.work.dial", name
        assert test["verified"] is True, (name, test["unverified_reasons"])
