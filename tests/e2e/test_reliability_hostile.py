"""Issue #45, do no harm, part three: tried as a hostile project and a hostile local user would
on a shared machine (docs/reliability.md, "Hostile users and projects").

- the workspace of a diff is private: a folder another user made in advance at a name the
  diff would compute is never used, and no code runs from a path another user can write;
- a password in a preview survives no rewrite of locations (``HOME=/root`` once turned
  ``postgresql://root:…@`` into ``postgresql:/<home>:…@``, where the URL rule did not find it);
- a changed test whose id the secret rules masked is confirmed by its real id;
- a test that switches off diffgenome's local events makes the tests after it unverified;
- control characters in recorded names reach no terminal raw; the store is private and its
  files are never written through a symbolic link.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from e2e.helpers import (
    DIFF_PYTEST_ARGS,
    PY,
    STORE,
    CountingServer,
    GitRepo,
    clean_env,
    cli,
    cli_json,
    record_full,
    run_pytest,
    test_genome,
    write_files,
)
from e2e.test_reliability_privacy import folder_haystacks, store_haystacks

PASSWORD = "Tr0ub4dor&3"

DSN_PROJECT = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/db.py": """
        import warnings


        def dsn(user):
            return f"postgresql://{user}:Tr0ub4dor&3@db/app"


        def connect(user, home):
            url = dsn(user)
            warnings.warn(f"connecting to {url} from {home}", UserWarning)
            return url
    """,
    "tests/test_db.py": """
        import os

        from pkg.db import connect, dsn


        def _user():
            return os.path.basename(os.environ["HOME"].rstrip("/")) or "root"


        def test_dsn():
            assert dsn(_user()).startswith("postgresql://")


        def test_connect():
            home = os.environ["HOME"]
            assert connect(_user(), f"https://ci:Tr0ub4dor&3@h{home}").endswith("/app")
    """,
}


def _no_password(hay: dict[str, bytes]) -> None:
    leaks = [where for where, blob in hay.items() if PASSWORD.encode() in blob]
    assert leaks == [], leaks


@pytest.mark.parametrize("home", ["/root", "/home/runner", "/github/home", "/db"])
def test_a_password_in_a_preview_is_masked_under_every_home(tmp_path: Path, home: str) -> None:
    project = tmp_path / "project"
    write_files(project, DSN_PROJECT)
    recorded = record_full(project, "--genome-preview", "-W", "always", env={"HOME": home})
    doc = recorded.doc
    # ``dsn`` is a secret name (its results get no preview); ``connect`` returns the URL.
    shown = [
        entry.get("preview", "")
        for node in test_genome(doc, "::test_connect")["phases"]["call"]["nodes"]
        if node.get("symbol") == "py:pkg.db.connect"
        for entry in node["results"]
    ]
    assert len(shown) == 1 and shown[0].startswith("'postgresql:"), shown
    assert "<secret:" in shown[0], shown
    warned = test_genome(doc, "::test_connect")["warnings"]
    assert warned and all("<secret:" in w["message"] for w in warned), warned
    hay = store_haystacks(project / STORE)
    hay["export --with-previews"] = json.dumps(doc, ensure_ascii=False).encode()
    _no_password(hay)


def test_a_password_in_a_preview_reaches_no_report_of_a_diff_when_home_is_root(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    write_files(repo, DSN_PROJECT)
    git = GitRepo.init(repo)
    git.commit_all("base")
    db = repo / "pkg" / "db.py"
    db.write_text(db.read_text().replace("@db/app", "@db2/app"))
    git.commit_tracked("another host")
    json_out, markdown, site = tmp_path / "diff.json", tmp_path / "diff.md", tmp_path / "site"
    done = subprocess.run(
        [
            *(PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD", "--all"),
            *("--json", str(json_out), "--markdown", str(markdown), "--html", str(site)),
            *("--", *DIFF_PYTEST_ARGS, "--genome-preview", "-W", "always"),
        ],
        cwd=repo,
        env=clean_env({"HOME": "/root", "TMPDIR": str(tmp_path), "COLUMNS": "400"}),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "<secret:" in done.stdout  # the changed value is there, masked
    hay = {
        "stdout": done.stdout.encode(),
        "stderr": done.stderr.encode(),
        "--json": json_out.read_bytes(),
        "--markdown": markdown.read_bytes(),
        **{f"--html {name}": blob for name, blob in folder_haystacks(site).items()},
        **store_haystacks(repo / STORE),
    }
    run = json.loads(json_out.read_text())["head"]["run"]
    exported = cli(repo, "export", run, "--with-previews")
    assert exported.returncode == 0, exported.stderr
    hay["export --with-previews"] = exported.stdout.encode()
    _no_password(hay)


# -- the workspace of a diff -----------------------------------------------------------------

OTHER_UID = 4242

PROBE_PROJECT = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "def answer():\n    return 42\n",
    "tests/test_probe.py": """
        import json
        import os

        from pkg import answer


        def test_where_the_code_runs():
            # Every folder from this file up to the temp folder: whose, and who may write.
            seen, path = [], os.path.dirname(os.path.abspath(__file__))
            top = os.environ["SHARED_TMP"]
            while path.startswith(top + os.sep):
                status = os.lstat(path)
                seen.append([path, status.st_uid, status.st_mode & 0o777])
                path = os.path.dirname(path)
            with open(os.environ["PROBE"], "a") as probe:
                probe.write(json.dumps(seen) + "\\n")
            assert answer() == 42
    """,
}


def _as_other_user(*command: str) -> None:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("a second local user needs root and setpriv")
    ids = (f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups")
    subprocess.run([setpriv, *ids, "--", *command], check=True)


def test_a_workspace_another_user_made_in_advance_is_never_used(tmp_path: Path) -> None:
    """Another local user computes the names a diff would work in (the old
    ``diffgenome-<hash of the store>-<slot>`` and today's private parent) and makes them in
    advance, writable by all, with a recorder of their own inside. The diff uses none of
    them: its code runs in folders of its own user that no one else may enter."""
    shared = Path(tempfile.mkdtemp(prefix="shared-tmp-", dir="/tmp"))
    try:
        shared.chmod(0o1777)  # a temp folder as /tmp is
        repo = tmp_path / "repo"
        write_files(repo, PROBE_PROJECT)
        GitRepo.init(repo).commit_all("base")
        GitRepo(repo).commit_empty("the same tree")
        store = os.path.realpath(repo / STORE)
        key = hashlib.sha256(store.encode()).hexdigest()[:12]
        planted = [shared / f"diffgenome-{os.geteuid()}", shared / f"diffgenome-{key}-0"]
        for folder in planted:
            payload = folder / "recorder" / "diffgenome"
            _as_other_user("mkdir", "-p", "-m", "0777", str(payload))
            _as_other_user("chmod", "0777", str(folder))
        probe = tmp_path / "probe.jsonl"
        done = subprocess.run(
            [PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD"],
            cwd=repo,
            env=clean_env({"TMPDIR": str(shared), "SHARED_TMP": str(shared), "PROBE": str(probe)}),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        seen = [json.loads(line) for line in probe.read_text().splitlines()]
        assert len(seen) >= 2, done.stderr  # base and head (and confirmations)
        for folders in seen:
            assert folders, "the tests ran outside the temp folder"
            for path, uid, _mode in folders:
                assert uid == os.geteuid(), (path, uid)
                assert not any(path.startswith(str(p) + os.sep) for p in planted), path
            # The workspace's top folder is private; what is under it is not reachable.
            assert folders[-1][2] == 0o700, folders
        for folder in planted:  # what the other user made is untouched
            assert sorted(p.name for p in folder.iterdir()) == ["recorder"]
            assert os.stat(folder).st_uid == OTHER_UID
    finally:
        shutil.rmtree(shared, ignore_errors=True)


# -- a masked test id ------------------------------------------------------------------------

TOKEN_PROJECT = {
    "pkg/__init__.py": "def size(token):\n    return len(token)\n",
    "tests/test_token.py": """
        import pytest

        from pkg import size


        @pytest.mark.parametrize("token", ["sk_live_4eC39HqLyjWDarjtT1zdp7dc", "plain"])
        def test_token(token):
            assert size(token) > 0
    """,
}


def test_a_changed_test_with_a_masked_id_is_confirmed_by_its_real_id(tmp_path: Path) -> None:
    """The secret rules mask the parameter in the id (``test_token[<secret:…>]``); a change
    both cases show is confirmed, the masked one selected by its function and narrowed by
    its recorded id, never handed to pytest as a node id it cannot know."""
    repo = tmp_path / "repo"
    write_files(repo, TOKEN_PROJECT)
    git = GitRepo.init(repo)
    git.commit_all("base")
    write_files(repo, {"pkg/__init__.py": "def size(token):\n    return len(token) + 1\n"})
    git.commit_tracked("one more")
    # No argument pytest could read as a path: confirmation then names the tests to pytest.
    options = ("-pno:cacheprovider", "-pno:randomly")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", pytest_args=options)
    assert code == 1
    statuses = {t["id"]: t["status"] for t in document["tests"]}
    masked = [i for i in statuses if "<secret:" in i]
    assert len(masked) == 1 and "sk_live" not in json.dumps(document), statuses
    assert statuses[masked[0]] == "changed"
    assert statuses["tests/test_token.py::test_token[plain]"] == "changed"
    affected = cli(repo, "affected", "HEAD~1", "HEAD", "--ids")
    assert affected.returncode == 0, affected.stderr
    assert affected.stdout.splitlines() == [
        "tests/test_token.py::test_token",
        "tests/test_token.py::test_token[plain]",
    ]


# -- a test that blinds the recorder ---------------------------------------------------------

BLIND_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/mod.py": "def half(n):\n    return n // 2\n",
    "tests/test_blind.py": """
        import sys

        from pkg.mod import half

        mon = sys.monitoring


        def test_a_blinds_the_recorder():
            assert half(4) == 2  # armed by its first call
            tool = next(i for i in range(6) if mon.get_tool(i) == "diffgenome")
            mon.set_local_events(tool, half.__code__, 0)


        def test_b_uses_it():
            assert half(4) == 2
    """,
}


def test_a_test_that_switches_off_the_recorders_local_events_hides_no_change(
    tmp_path: Path,
) -> None:
    """The first test switches off diffgenome's local events of ``half``; the second one's
    result goes int -> float in head. Once it read ``unchanged`` (the returns of ``half``
    were no longer seen); now the first test is unverified and the second one changed."""
    repo = tmp_path / "repo"
    write_files(repo, BLIND_PROJECT)
    git = GitRepo.init(repo)
    git.commit_all("base")
    write_files(repo, {"pkg/mod.py": "def half(n):\n    return n / 2\n"})
    git.commit_tracked("true division")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert code == 1
    tests = {t["id"].rpartition("::")[2]: t for t in document["tests"]}
    assert tests["test_b_uses_it"]["status"] == "changed", tests["test_b_uses_it"]
    blinding = tests["test_a_blinds_the_recorder"]
    assert any("local-events-changed" in r for r in blinding["reasons"]), blinding


# -- leaving the namespace of isolate --------------------------------------------------------

ESCAPE_PROJECT = {
    "tests/test_escape.py": """
        import os
        import shutil
        import socket
        import subprocess
        import sys

        PORT = int(os.environ["HOST_PORT"])
        CONNECT = (
            "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 5)"
        )


        def test_nsenter_into_the_parents_namespace():
            net = f"/proc/{os.getppid()}/ns/net"
            done = subprocess.run(
                [shutil.which("nsenter"), f"--net={net}", sys.executable, "-c", CONNECT, str(PORT)],
                capture_output=True,
            )
            assert done.returncode != 0


        def test_setns_into_the_parents_namespace():
            try:
                fd = os.open(f"/proc/{os.getppid()}/ns/net", os.O_RDONLY)
                os.setns(fd, os.CLONE_NEWNET)
            except OSError:
                pass
            try:
                socket.create_connection(("127.0.0.1", PORT), 5).close()
            except OSError:
                return
            raise AssertionError("reached the host's loopback")
    """,
}


def test_root_cannot_leave_the_namespace_of_isolate(tmp_path: Path) -> None:
    """As root, ``isolate`` once kept CAP_SYS_ADMIN: ``nsenter --net=/proc/$PPID/ns/net``
    and ``os.setns`` took a test back into the host's namespace, and three connections were
    accepted there. The capabilities that allow that are given up, from the bounding set
    too (``nsenter`` is exec'd by root)."""
    if os.geteuid() != 0 or shutil.which("nsenter") is None:
        pytest.skip("the escape needs root and nsenter")
    project = tmp_path / "project"
    write_files(project, ESCAPE_PROJECT)
    host = CountingServer()
    try:
        done = run_pytest(
            project, "--genome", "--genome-egress=isolate", env={"HOST_PORT": str(host.port)}
        )
    finally:
        accepted = host.stop()
    if "could not" in done.stdout and "egress isolate" in done.stdout:
        pytest.skip("no network namespace here: " + done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert accepted == 0
    assert "the session runs in a network namespace of its own" in done.stdout


# -- control characters in recorded names ----------------------------------------------------

ESC_PROJECT = {
    "pkg/__init__.py": """
        import logging
        import warnings

        Bad = type("Bad\\x1b[2J\\x1b[31m", (Exception,), {})
        Loud = type("Loud\\x1b]0;owned\\x07", (UserWarning,), {})
        log = logging.getLogger("log\\x1b[31m\\u202e")


        def go(n):
            warnings.warn("hi", Loud)
            log.warning("x %s", n)
            if n > 1:
                raise Bad("boom")
            return n
    """,
    "tests/test_go.py": """
        import pytest

        from pkg import go


        def test_go():
            with pytest.raises(Exception):
                go(2)
    """,
}


def test_control_characters_in_recorded_names_reach_no_terminal_raw(tmp_path: Path) -> None:
    """An exception type, a warning category and a logger name holding escape sequences
    (clear the screen, set the window title) and a bidirectional override: ``diff`` and
    ``show`` write them escaped (``\\x1b``), as pytest writes an id's unprintable
    characters."""
    repo = tmp_path / "repo"
    write_files(repo, ESC_PROJECT)
    git = GitRepo.init(repo)
    git.commit_all("base")
    init = repo / "pkg" / "__init__.py"
    init.write_text(init.read_text().replace('raise Bad("boom")', 'raise ValueError("boom")'))
    git.commit_tracked("another exception")
    diffed = cli(repo, "diff", "HEAD~1", "HEAD", "--all")
    assert diffed.returncode == 1, diffed.stderr
    shown = cli(repo, "show", "latest", "tests/test_go.py::test_go")
    assert shown.returncode == 0, shown.stderr
    for output in (diffed.stdout, shown.stdout):
        assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output
    assert "py:pkg.Bad\\x1b[2J\\x1b[31m" in diffed.stdout
    assert "Loud\\x1b]0;owned" in shown.stdout, shown.stdout  # rich drops the bell itself
    assert "log\\x1b[31m\\u202e" in shown.stdout, shown.stdout


# -- the store's files -----------------------------------------------------------------------


def test_the_store_is_private_and_never_written_through_a_link(tmp_path: Path) -> None:
    """Made under umask 022, the store folder is 0700 and its database 0600 (it holds test
    ids, paths and the digest key); a link in place of the database or the key (to an empty
    file, a missing one, another store's key) is refused with one line, nothing written
    through it."""
    project = tmp_path / "project"
    write_files(project, PROBE_PROJECT)
    env = {"SHARED_TMP": str(tmp_path / "none"), "PROBE": str(tmp_path / "probe")}
    old = os.umask(0o022)
    try:
        record_full(project, env=env)
    finally:
        os.umask(old)
    store = project / STORE
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    for name in ("genome.sqlite", "secret.key"):
        assert stat.S_IMODE((store / name).stat().st_mode) == 0o600, name
    for name, target in (("genome.sqlite", "missing"), ("secret.key", "their.key")):
        shutil.rmtree(store)
        store.mkdir(mode=0o700)
        victim = tmp_path / target
        if target == "their.key":
            victim.write_bytes(b"k" * 32)
        (store / name).symlink_to(victim)
        done = run_pytest(project, "--genome", env=env)
        assert done.returncode != 0
        output = (done.stdout + done.stderr).splitlines()
        said = [line for line in output if "symbolic link" in line]
        assert len(said) == 1 and "remove the link" in said[0], done.stdout + done.stderr
        assert (store / name).is_symlink()
        if target == "their.key":
            assert victim.read_bytes() == b"k" * 32
        else:
            assert not victim.exists()
