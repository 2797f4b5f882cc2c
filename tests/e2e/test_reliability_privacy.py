"""Issues #6 and #30, private values: secrets that a test hands to every channel the genome
has reach neither the store (database, WAL and shared-memory files, read while the session
runs and after it, zlib blobs inflated) nor the exported document (JSON and JSON Lines) nor
``diffgenome show`` (terminal and HTML) nor any report of ``diffgenome diff`` (terminal,
Markdown, JSON, HTML site); the digest key never leaves ``secret.key``
(``docs/reliability.md``, "Private values").

The channels: arguments, return values, object fields, module globals, exception messages
(caught, failing the test, raised in a thread), a failing assertion's message, a child's
command line; warning messages (escaped to pytest, and caught by the test); an unverified
reason naming a tool; OS-event targets (a program's name, a looked-up host name); stand-in
names, attribute paths and signatures; parametrized test ids and a subtest's label; secrets
in the environment (``API_TOKEN=sk-live-…``, a password that reads like words, one a fixture
sets with ``monkeypatch.setenv``).

tests/e2e/test_recording.py::test_raw_values_never_reach_the_document_nor_the_store proves the
argument path on the lab project; digests comparable only under one key are proven in
tests/e2e/test_recording_runs.py::test_digests_are_comparable_only_under_one_key.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import shutil
import sqlite3
import string
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    DIFF_PYTEST_ARGS,
    PY,
    STORE,
    clean_env,
    cli,
    export,
    git_in,
    make_project,
    one_node,
    os_events,
    record_full,
    test_genome,
    write_files,
)

VAULT = """
    import dataclasses
    import os
    import socket
    import subprocess
    import warnings

    TOKEN = None


    @dataclasses.dataclass
    class Account:  # a dataclass: its canonical form, hence its digest, covers the password
        user: str
        password: str

        def check(self, attempt):
            if attempt != self.password:
                raise {error}(f"wrong password {{attempt!r}}, expected {{self.password!r}}")
            return True


    def login(user, password, number):
        return Account(user, password), number


    def issue():
        return TOKEN


    def issue_through():
        return issue()


    def remember(token):
        global TOKEN
        TOKEN = token
        return len(token)


    def twice(number):
        return number * 2


    def warn_token(token):
        warnings.warn(f"token {verb} {{token}}", DeprecationWarning, stacklevel=2)


    def warn_environment():
        warnings.warn(f"calling with {{os.environ['API_TOKEN']}}", UserWarning)
        warnings.warn(f"db {{os.environ['DB_PASSWORD']}}", UserWarning)


    def fail_with_environment():
        raise RuntimeError(f"{{os.environ['API_TOKEN']}} / {{os.environ['DB_PASSWORD']}}")


    def run_program(path, *args):
        for _ in range({runs}):
            subprocess.run([path, *args], check=True)


    def look_up(*names):
        for name in names:
            try:
                socket.getaddrinfo(name, 443)
            except OSError:
                pass


    def call_stand_in(stand_in, value):
        return stand_in(value)


    def connect(host, api_key):
        return len(api_key) > 0


    def label(text):
        return text.upper()
"""

TESTS = """
    import os
    import stat
    import subprocess
    import sys
    import threading
    import warnings
    from unittest import mock

    import pytest

    from pkg import vault

    PASSWORD = {password!r}
    TOKEN = {token!r}
    NUMBER = {number}
    ATTRIBUTE = {attribute!r}
    SHORT = {short!r}
    PHRASE = {phrase!r}


    def test_arguments_and_results():
        account, number = vault.login("alice", PASSWORD, NUMBER)
        assert number == NUMBER and vault.twice(NUMBER) == 2 * NUMBER


    def test_object_fields():
        account = vault.Account("alice", PASSWORD)
        assert account.check(PASSWORD)


    def test_module_globals_and_returns():
        vault.remember(TOKEN)
        assert vault.issue() == TOKEN


    def test_exception_messages():
        account = vault.Account("alice", PASSWORD)
        with pytest.raises(Exception):
            account.check(TOKEN)
        with pytest.raises(RuntimeError):
            vault.fail_with_environment()


    def test_failing_assertion_message():
        assert vault.issue() == PASSWORD, f"token {{TOKEN}} for {{NUMBER}}"


    def test_exception_in_a_thread():
        def work():
            raise ValueError(f"thread saw {{TOKEN}} and {{os.environ['API_TOKEN']}}")

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()


    def test_child_command_line():
        subprocess.run([sys.executable, "-c", "pass", PASSWORD, TOKEN, str(NUMBER)], check=True)


    def test_values_a_reviewer_reads():
        # Words in a secret-named parameter, and in a variable whose name says nothing: a
        # preview withholds both (the parameter's name, the environment), no rule masks them.
        assert vault.connect("db.internal", PHRASE)
        assert vault.label(os.environ["SERVICE_LABEL"])
        assert vault.twice(NUMBER) and vault.twice(21)


    def test_warnings_that_escape():
        vault.warn_token(TOKEN)
        warnings.warn(f"password {{PASSWORD}} for {{NUMBER}}", UserWarning)
        vault.warn_environment()


    def test_warnings_the_test_catches():
        with pytest.warns(UserWarning):
            warnings.warn(f"caught {{TOKEN}} {{PASSWORD}}", UserWarning)


    @pytest.fixture
    def service_secret(monkeypatch):
        monkeypatch.setenv("SERVICE_SECRET", {service!r})
        return os.environ["SERVICE_SECRET"]


    def test_program_named_by_secrets(tmp_path, service_secret):
        for name in (TOKEN, service_secret):
            program = tmp_path / name
            program.write_text("#!/bin/sh\\nexit 0\\n")
            program.chmod(program.stat().st_mode | stat.S_IEXEC)
            vault.run_program(str(program), PASSWORD)


    def test_host_names_from_secrets():
        vault.look_up(TOKEN + ".invalid", os.environ["API_TOKEN"] + ".invalid"{more_names})


    def test_stand_in_names_and_paths(monkeypatch):
        named = mock.Mock(name=TOKEN)
        vault.call_stand_in(named, PASSWORD)
        getattr(named, ATTRIBUTE)(TOKEN){other_path}
        with mock.patch.object(vault, "issue", name=TOKEN) as patched:
            patched.configure_mock(**{{ATTRIBUTE: 1}})
            vault.issue_through()

        def fake_issue(key=SHORT):
            return key

        monkeypatch.setattr(vault, "issue", fake_issue)
        assert vault.issue_through() == SHORT


    @pytest.mark.parametrize(
        "value",
        [TOKEN, os.environ.get("DB_PASSWORD", "unset"), mock.Mock(name=TOKEN)],
    )
    def test_parametrized(value):
        vault.twice({param_use})


    @pytest.mark.parametrize("value", [1], ids=[f"named-{{TOKEN}}"])
    def test_parametrized_with_ids(value):
        vault.twice(value{id_use})


    def test_subtests(subtests):
        with subtests.test(msg=f"for {{TOKEN}}", secret=os.environ["API_TOKEN"]):
            vault.twice({sub_use})


    def test_tool_named_by_a_token():
        # Takes diffgenome's sys.monitoring tool id under a secret's name: every later test
        # is unverified with a reason that names the tool (recording stops there).
        monitoring = sys.monitoring
        ours = next(i for i in range(6) if monitoring.get_tool(i) == "diffgenome")
        monitoring.free_tool_id(ours)
        monitoring.use_tool_id(ours, TOKEN)


    def test_zz_copy_the_live_store():
        live = os.environ.get("LIVE_COPY")
        if not live:
            return  # recorded by diffgenome diff: its store is elsewhere
        store = os.path.join(os.path.dirname(__file__), "..", ".diffgenome")
        os.makedirs(live)
        for name in os.listdir(store):
            with open(os.path.join(store, name), "rb") as src:
                with open(os.path.join(live, name), "wb") as dst:
                    dst.write(src.read())
"""

# What head changes (a second commit, for diffgenome diff): every channel shows up in the
# reports as a change of the test that carries it.
BASE_SHAPE = {
    "error": "ValueError",
    "verb": "is",
    "runs": 1,
    "more_names": "",
    "other_path": "",
    "param_use": "1",
    "id_use": "",
    "sub_use": "1",
}
HEAD_SHAPE = {
    "error": "TypeError",
    "verb": "was",
    "runs": 2,
    "more_names": ', "second-" + TOKEN + ".invalid"',
    "other_path": ".again(SHORT)",
    "param_use": "2",
    "id_use": " + 1",
    "sub_use": "2",
}
# Python's default filters hide DeprecationWarning outside __main__; the helpers ignore them.
SHOW_WARNINGS = ("-W", "always::DeprecationWarning", "-W", "always::UserWarning")


def _letters(n: int) -> str:
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(n))


@dataclass
class Lab:
    project: Path
    live: Path
    head: Path
    doc: dict[str, Any]
    secrets: dict[str, str]
    number: int
    env: dict[str, str]


def _files(shape: dict[str, object], values: dict[str, object]) -> dict[str, str]:
    return {
        "pkg/__init__.py": "",
        "pkg/vault.py": VAULT.format(**shape),
        "tests/test_vault.py": TESTS.format(**shape, **values),
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    root = tmp_path_factory.mktemp("privacy")
    found = {
        # Its random part reads as generated text whatever the draw: "a1b" and "c2d" around it.
        "password": "Pa55-a1b" + secrets.token_hex(8) + "c2d-w0rd!",
        "token": "tok_" + secrets.token_hex(16),
        "attribute": "sk_live_" + secrets.token_hex(12),
        "short": "sk_live_" + secrets.token_hex(8),  # short enough for a shown default
        # In the environment only, never in the source:
        "api token": "sk-live-" + secrets.token_urlsafe(18).replace("_", "x").replace("-", "y"),
        # Reads like words (no digits, one case): only its variable's name says it is secret.
        "db password": f"{_letters(7)} {_letters(6)} {_letters(8)}",
        "service secret": f"{_letters(9)} {_letters(9)}",
        # Read like words, and only a preview's own rules withhold them (#23.5): a
        # secret-named parameter's value, and an environment value under a plain name.
        "phrase": f"{_letters(6)} {_letters(7)}",
        "plain environment value": f"{_letters(8)} {_letters(5)}",
    }
    number = int("7" + "".join(str(secrets.randbelow(10)) for _ in range(24)))
    values = {
        "password": found["password"],
        "token": found["token"],
        "number": number,
        "attribute": found["attribute"],
        "short": found["short"],
        "service": found["service secret"],
        "phrase": found["phrase"],
    }
    project = make_project(root, _files(BASE_SHAPE, values))
    head = root / "head-files"
    write_files(head, _files(HEAD_SHAPE, values))
    env = {
        "API_TOKEN": found["api token"],
        "DB_PASSWORD": found["db password"],
        "SERVICE_LABEL": found["plain environment value"],
    }
    # The test file holds most values as literals; it is the user's source, not the recording.
    live = root / "live-copy"
    recording = record_full(
        project, "-q", *SHOW_WARNINGS, env={**env, "LIVE_COPY": str(live)}, returncode=1
    )
    assert "1 failed" in recording.proc.stdout, recording.output
    return Lab(project, live, head, recording.doc, found, number, env)


def needles(lab: Lab) -> dict[str, bytes]:
    """The private values in the encodings a store or document could hold them in."""
    found: dict[str, bytes] = {}
    for name, text in lab.secrets.items():
        raw = text.encode()
        found[name] = raw
        found[name + "/utf-16"] = text.encode("utf-16-le")
        found[name + "/hex"] = raw.hex().encode()
        found[name + "/base64"] = base64.b64encode(raw).rstrip(b"=")
    # The random part alone, wherever a prefix or suffix was cut off.
    found["token/random"] = lab.secrets["token"][4:].encode()
    found["api token/random"] = lab.secrets["api token"][8:].encode()
    found["plain environment value/upper"] = lab.secrets["plain environment value"].upper().encode()
    number = lab.number
    found["number"] = str(number).encode()
    found["number/hex"] = f"{number:x}".encode()
    size = (number.bit_length() + 7) // 8
    found["number/le"] = number.to_bytes(size, "little")
    found["number/be"] = number.to_bytes(size, "big")
    return found


def assert_no_needle(lab: Lab, hay: dict[str, bytes]) -> None:
    """Every needle in every haystack: all leaks are named at once (which value, where)."""
    leaks = {
        what: found
        for what, needle in needles(lab).items()
        if (found := [name for name, blob in hay.items() if needle in blob])
    }
    assert leaks == {}, "\n".join(f"{what} found in {where}" for what, where in leaks.items())


def store_haystacks(folder: Path) -> dict[str, bytes]:
    """Every file of a store folder raw, and every database cell (zlib blobs inflated)."""
    hay = {f"{folder.name}/{p.name}": p.read_bytes() for p in folder.iterdir() if p.is_file()}
    db = folder / "genome.sqlite"
    if db.exists():
        copy = folder.parent / (folder.name + "-query")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(folder, copy)
        conn = sqlite3.connect(copy / "genome.sqlite")
        try:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                rows = conn.execute(f'SELECT * FROM "{table}"')
                columns = [column[0] for column in rows.description]
                for i, row in enumerate(rows):
                    for column, cell in zip(columns, row, strict=True):
                        where = f"{folder.name}:{table}[{i}].{column}"
                        if isinstance(cell, bytes):
                            hay[where] = cell
                            with contextlib.suppress(zlib.error):
                                hay[where + ":inflated"] = zlib.decompress(cell)
                        elif cell is not None:
                            hay[where] = str(cell).encode()
        finally:
            conn.close()
    return hay


def folder_haystacks(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def cli_output(project: Path, *args: str) -> str:
    done = cli(project, *args, columns=400)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _test(doc: dict[str, Any], start: str) -> dict[str, Any]:
    """The one test whose id, after ``tests/test_vault.py::``, starts with ``start``."""
    found = [t for t in doc["tests"] if t["id"].startswith("tests/test_vault.py::" + start)]
    assert len(found) == 1, [t["id"] for t in doc["tests"]]
    return found[0]


def test_every_path_was_recorded(lab: Lab) -> None:
    """The values did flow where the other tests look for them (else absence proves nothing)."""
    phase = test_genome(lab.doc, "::test_arguments_and_results")["phases"]["call"]
    login = one_node(phase, "py:pkg.vault.login")
    assert login["args"][0]["shape"] == "user=str, password=str, number=int"
    assert login["args"][0]["digest"] and login["results"][0]["digest"]
    check = one_node(
        test_genome(lab.doc, "::test_object_fields")["phases"]["call"], "py:pkg.vault.Account.check"
    )
    assert {"target": "self.password", "when": "entry", "bucket": "nonempty"} in check["state"]
    issue = one_node(
        test_genome(lab.doc, "::test_module_globals_and_returns")["phases"]["call"],
        "py:pkg.vault.issue",
    )
    assert issue["state"] and issue["results"][0]["digest"]
    raised = one_node(
        test_genome(lab.doc, "::test_exception_messages")["phases"]["call"],
        "py:pkg.vault.Account.check",
    )
    assert raised["exits"] == {"raised:py:builtins.ValueError": 1}
    assert test_genome(lab.doc, "::test_failing_assertion_message")["outcome"] == "failed"
    assert lab.live.is_dir() and (lab.live / "genome.sqlite-wal").stat().st_size > 0
    # Positive control: the needles are found where the values really are, in the source.
    source = (lab.project / "tests" / "test_vault.py").read_bytes()
    in_source = ("password", "token", "number", "attribute", "short", "phrase")
    assert all(needles(lab)[what] in source for what in in_source)
    assert needles(lab)["service secret"] in source  # handed to monkeypatch.setenv


def test_every_text_channel_was_recorded(lab: Lab) -> None:
    """Each channel of #30 holds something of the test's, masked or digested: warnings that
    escaped, a thread's exception, the program and host names, stand-ins, parametrized ids,
    a subtest, the tool's name in a reason."""
    doc = lab.doc
    escaped = _test(doc, "test_warnings_that_escape")["warnings"]
    kinds = sorted((w["category"], w["count"]) for w in escaped)
    assert kinds == [("DeprecationWarning", 1)] + [("UserWarning", 1)] * 3, escaped
    assert all(len(w["message_digest"]) == 32 and "message" not in w for w in escaped)
    assert _test(doc, "test_warnings_the_test_catches")["warnings"] == []
    thread = _test(doc, "test_exception_in_a_thread")
    assert [w["category"] for w in thread["warnings"]] == [
        "pytest.PytestUnhandledThreadExceptionWarning"
    ]
    programs = os_events(_test(doc, "test_program_named_by_secrets")["phases"]["call"])
    assert sorted(e["kind"] for e in programs) == ["subprocess", "subprocess"]
    assert all(e["target"].startswith("<secret:") for e in programs), programs
    hosts = os_events(_test(doc, "test_host_names_from_secrets")["phases"]["call"], "dns")
    assert sorted(e["target"].split(">")[1] for e in hosts) == [".invalid:443"] * 2, hosts
    stand_ins = [
        n
        for n in _test(doc, "test_stand_in_names_and_paths")["phases"]["call"]["nodes"]
        if n["type"] == "substitution"
    ]
    paths = {n["path"] for n in stand_ins}
    assert any(p.startswith("<secret:") for p in paths), paths
    seams = [n["seam"] for n in stand_ins if n.get("seam") and n["seam"]["stand_in"]]
    assert any("key='<secret:" in s["stand_in"] for s in seams), seams
    params = [t["id"] for t in doc["tests"] if "::test_parametrized[" in t["id"]]
    assert len(params) == 3
    assert sum("<secret:" in i for i in params) == 2, params  # the Mock is "value2"
    [named] = [t["id"] for t in doc["tests"] if "::test_parametrized_with_ids[" in t["id"]]
    # A run of token characters is masked whole: ``named-tok_…`` is one.
    assert named.startswith("tests/test_vault.py::test_parametrized_with_ids[<secret:"), named
    [sub] = [
        t["id"] for t in doc["tests"] if t["id"].startswith("tests/test_vault.py::test_subtests ")
    ]
    assert sub.count("<secret:") == 2, sub
    taken = [r for r in _test(doc, "test_tool_named_by_a_token")["unverified_reasons"]]
    assert "call:monitoring-disturbed:tool-id-taken:<secret:" in " ".join(taken), taken
    later = _test(doc, "test_zz_copy_the_live_store")["unverified_reasons"]
    assert any(r.startswith("call:monitoring-disturbed:tool-id-taken:<secret:") for r in later)
    assert doc["run"]["config"]["preview"] is False


def test_no_private_value_in_the_store_during_or_after_the_session(lab: Lab) -> None:
    hay = {**store_haystacks(lab.project / STORE), **store_haystacks(lab.live)}
    assert any(name.endswith("-wal") for name in hay), sorted(hay)
    assert any(name.endswith("-shm") for name in hay), sorted(hay)
    assert any(name.endswith(":inflated") for name in hay)
    assert any(":tests[" in name and name.endswith(".extra") for name in hay)
    assert_no_needle(lab, hay)


def test_no_private_value_in_the_export_nor_in_show(lab: Lab, tmp_path: Path) -> None:
    jsonl = cli_output(lab.project, "export", "latest", "--format", "jsonl")
    texts = {
        "export": json.dumps(lab.doc, ensure_ascii=False).encode(),
        "export (as written)": cli_output(lab.project, "export", "latest").encode(),
        "export --format jsonl": jsonl.encode(),
        "show": cli_output(lab.project, "show", "latest").encode(),
    }
    assert len(jsonl.splitlines()) == len(lab.doc["tests"])
    for test in lab.doc["tests"]:
        if test["id"] != "<import>":
            texts[f"show {test['id']}"] = cli_output(
                lab.project, "show", "latest", test["id"]
            ).encode()
    site = tmp_path / "show-site"
    cli_output(lab.project, "show", "latest", "--html", str(site))
    pages = folder_haystacks(site)
    assert len(pages) > len(lab.doc["tests"])  # an index, assets, a page per test
    texts.update({f"show --html {name}": blob for name, blob in pages.items()})
    assert_no_needle(lab, texts)
    # Positive control: what is masked is shown masked.
    assert b"<secret:" in texts["show"] or any(b"&lt;secret:" in b for b in pages.values())


def test_the_key_never_appears_in_the_export_nor_the_database(lab: Lab) -> None:
    key = (lab.project / STORE / "secret.key").read_bytes()
    exported = json.dumps(lab.doc).encode()
    databases = [
        blob
        for folder in (lab.project / STORE, lab.live)
        for name, blob in store_haystacks(folder).items()
        if "secret.key" not in name
    ]
    forms = [key, key.hex().encode(), base64.b64encode(key).rstrip(b"=")]
    for form in forms:
        assert form not in exported
        assert not any(form in blob for blob in databases)
    assert lab.doc["run"]["key_fingerprint"].startswith("hmac-sha256:")


def test_the_preview_masks_secrets_and_shows_the_rest(lab: Lab, tmp_path: Path) -> None:
    """``--genome-preview`` keeps a short text of each warning: the secret rules mask the
    token, the password, the long number and the environment's secrets in it."""
    store = tmp_path / "preview-store"
    record_full(
        lab.project,
        "-q",
        *SHOW_WARNINGS,
        "--genome-preview",
        f"--genome-store={store}",
        env=lab.env,
        returncode=1,
        store=store,
    )
    doc = export(lab.project, store)
    assert doc["run"]["config"]["preview"] is True
    said = sorted(w["message"] for w in _test(doc, "test_warnings_that_escape")["warnings"])
    assert len(said) == 4, said
    assert said[0].startswith("calling with <secret:"), said
    assert said[1].startswith("db <secret:"), said
    assert said[2].startswith("password <secret:") and " for <secret:" in said[2], said
    assert said[3].startswith("token is <secret:"), said
    thread = _test(doc, "test_exception_in_a_thread")["warnings"][0]["message"]
    assert thread.startswith("Exception in thread") and thread.endswith("\u2026"), thread
    # Values: shown where small and harmless, masked where a rule calls them secret,
    # withheld for a secret-named parameter and a value from the environment.
    phase = _test(doc, "test_values_a_reviewer_reads")["phases"]["call"]
    shown = {
        node["symbol"]: sorted(e.get("preview", "-") for e in node["args"] + node["results"])
        for node in phase["nodes"]
        if node["type"] == "call"
    }
    assert shown["py:pkg.vault.connect"] == ["-", "True"], shown
    assert shown["py:pkg.vault.label"] == ["-", "-"], shown
    twice = shown["py:pkg.vault.twice"]
    assert "number=21" in twice and "42" in twice, twice
    assert any(p.startswith("number=<secret:") for p in twice), twice  # 25 digits: masked
    login = one_node(
        _test(doc, "test_arguments_and_results")["phases"]["call"], "py:pkg.vault.login"
    )
    assert "preview" not in login["args"][0]  # a password parameter: no preview at all
    hay = store_haystacks(store)
    hay["export --with-previews"] = json.dumps(doc, ensure_ascii=False).encode()
    plain = cli_output(lab.project, "export", doc["run"]["id"], "--store", str(store))
    assert '"preview":' not in plain.replace('"preview":true', "")
    hay["export"] = plain.encode()
    assert_no_needle(lab, hay)


@pytest.mark.parametrize("preview", [(), ("--genome-preview",)], ids=["digests", "previews"])
def test_no_private_value_in_any_report_of_a_diff(
    lab: Lab, tmp_path: Path, preview: tuple[str, ...]
) -> None:
    """``diffgenome diff`` of the lab against a commit that changes what each channel carries
    (the warning's words, the exception type, programs run twice, another host name, another
    stand-in path, what each parametrized case does): the terminal report, the Markdown, the
    JSON, the HTML site, standard error and the store hold no secret, and show the changes;
    also with ``--genome-preview``, where the reports show values a reviewer can read."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(lab.project), str(repo)], check=True)
    for path in lab.head.rglob("*.py"):
        (repo / path.relative_to(lab.head)).write_text(path.read_text())
    git_in(repo, "commit", "-qam", "head: every channel says something else")
    json_out, markdown, site = tmp_path / "diff.json", tmp_path / "diff.md", tmp_path / "site"
    done = subprocess.run(
        [
            *(PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD", "--all"),
            *("--json", str(json_out), "--markdown", str(markdown), "--html", str(site)),
            *("--", *DIFF_PYTEST_ARGS, *SHOW_WARNINGS, *preview),
        ],
        cwd=repo,
        env=clean_env({**lab.env, "TMPDIR": str(tmp_path), "COLUMNS": "400"}),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    hay = {
        "stdout": done.stdout.encode(),
        "stderr": done.stderr.encode(),
        "--json": json_out.read_bytes(),
        "--markdown": markdown.read_bytes(),
        **{f"--html {name}": blob for name, blob in folder_haystacks(site).items()},
        **store_haystacks(repo / STORE),
    }
    assert any(name.startswith("--html ") and name.endswith(".html") for name in hay)
    assert_no_needle(lab, hay)
    document = json.loads(json_out.read_text())
    statuses = {t["id"]: t["status"] for t in document["tests"]}
    # Positive control: the channels are in the reports, as changes of masked ids.
    assert statuses[_test(document, "test_warnings_that_escape")["id"]] == "changed"
    warned = next(
        c
        for c in _test(document, "test_warnings_that_escape")["changes"]
        if c["kind"] == "warnings_changed"
    )
    assert "message changed" in done.stdout
    assert all("message_digest" in w for w in warned["base"] + warned["head"]), warned
    masked = [i for i in statuses if "<secret:" in i]
    assert len(masked) >= 4, statuses
    assert all(statuses[i] == "changed" for i in masked if "::test_parametrized[" in i), statuses
    assert any(
        c["kind"] in ("egress_added", "stand_in_added", "call_count_changed")
        for t in document["tests"]
        for c in t["changes"]
    )
    assert "tool-id-taken:<secret:" in json_out.read_text()
    if preview:  # the parametrized case twice(1) -> twice(2): its values, readable
        assert "number=1 \u2192 number=2" in done.stdout, done.stdout
        assert "results: 2 \u2192 4" in done.stdout
    assert "<secret:" in done.stdout and "<secret:" in markdown.read_text()
