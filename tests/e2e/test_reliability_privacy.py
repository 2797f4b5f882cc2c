"""Issue #6, private values: a password, a token and a long number that a test passes through
arguments, return values, object fields, module globals, exception messages, a failing
assertion and a child's command line reach neither the store (database, WAL and shared-memory
files, read while the session runs and after it, zlib blobs inflated) nor the exported document
nor ``diffgenome show``; the digest key never leaves ``secret.key`` (``docs/reliability.md``).

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
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import STORE, cli, make_project, one_node, record_full, test_genome

VAULT = """
    import dataclasses

    TOKEN = None


    @dataclasses.dataclass
    class Account:  # a dataclass: its canonical form, hence its digest, covers the password
        user: str
        password: str

        def check(self, attempt):
            if attempt != self.password:
                raise ValueError(f"wrong password {attempt!r}, expected {self.password!r}")
            return True


    def login(user, password, number):
        return Account(user, password), number


    def issue():
        return TOKEN


    def remember(token):
        global TOKEN
        TOKEN = token
        return len(token)


    def twice(number):
        return number * 2
"""

TESTS = """
    import os
    import subprocess
    import sys

    import pytest

    from pkg import vault

    PASSWORD = {password!r}
    TOKEN = {token!r}
    NUMBER = {number}


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
        with pytest.raises(ValueError):
            account.check(TOKEN)


    def test_failing_assertion_message():
        assert vault.issue() == PASSWORD, f"token {{TOKEN}} for {{NUMBER}}"


    def test_child_command_line():
        subprocess.run([sys.executable, "-c", "pass", PASSWORD, TOKEN, str(NUMBER)], check=True)


    def test_zz_copy_the_live_store():
        store = os.path.join(os.path.dirname(__file__), "..", ".diffgenome")
        live = os.environ["LIVE_COPY"]
        os.makedirs(live)
        for name in os.listdir(store):
            with open(os.path.join(store, name), "rb") as src:
                with open(os.path.join(live, name), "wb") as dst:
                    dst.write(src.read())
"""


@dataclass
class Lab:
    project: Path
    live: Path
    doc: dict[str, Any]
    password: str
    token: str
    number: int


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    root = tmp_path_factory.mktemp("privacy")
    password = "Pa55-" + secrets.token_hex(8) + "-w0rd!"
    token = "tok_" + secrets.token_hex(16)
    number = int("7" + "".join(str(secrets.randbelow(10)) for _ in range(24)))
    project = make_project(
        root,
        {
            "pkg/__init__.py": "",
            "pkg/vault.py": VAULT,
            "tests/test_vault.py": TESTS.format(password=password, token=token, number=number),
        },
    )
    # The test file holds the values as literals; it is the user's source, not the recording.
    live = root / "live-copy"
    recording = record_full(project, "-q", env={"LIVE_COPY": str(live)}, returncode=1)
    assert "1 failed" in recording.proc.stdout, recording.output
    return Lab(project, live, recording.doc, password, token, number)


def needles(lab: Lab) -> dict[str, bytes]:
    """The private values in the encodings a store or document could hold them in."""
    found: dict[str, bytes] = {}
    for name, text in (("password", lab.password), ("token", lab.token)):
        raw = text.encode()
        found[name] = raw
        found[name + "/utf-16"] = text.encode("utf-16-le")
        found[name + "/hex"] = raw.hex().encode()
        found[name + "/base64"] = base64.b64encode(raw).rstrip(b"=")
    number = lab.number
    found["number"] = str(number).encode()
    found["number/hex"] = f"{number:x}".encode()
    size = (number.bit_length() + 7) // 8
    found["number/le"] = number.to_bytes(size, "little")
    found["number/be"] = number.to_bytes(size, "big")
    return found


def store_haystacks(folder: Path) -> dict[str, bytes]:
    """Every file of a store folder raw, and every database cell (zlib blobs inflated)."""
    hay = {f"{folder.name}/{p.name}": p.read_bytes() for p in folder.iterdir() if p.is_file()}
    db = folder / "genome.sqlite"
    if db.exists():
        copy = folder.parent / (folder.name + "-query")
        shutil.copytree(folder, copy, dirs_exist_ok=True)
        conn = sqlite3.connect(copy / "genome.sqlite")
        try:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                for i, row in enumerate(conn.execute(f'SELECT * FROM "{table}"')):
                    for j, cell in enumerate(row):
                        where = f"{folder.name}:{table}[{i}][{j}]"
                        if isinstance(cell, bytes):
                            hay[where] = cell
                            with contextlib.suppress(zlib.error):
                                hay[where + ":inflated"] = zlib.decompress(cell)
                        elif cell is not None:
                            hay[where] = str(cell).encode()
        finally:
            conn.close()
    return hay


def cli_output(project: Path, *args: str) -> str:
    done = cli(project, *args, columns=400)
    assert done.returncode == 0, done.stderr
    return done.stdout


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
    assert all(needles(lab)[what] in source for what in ("password", "token", "number"))


def test_no_private_value_in_the_store_during_or_after_the_session(lab: Lab) -> None:
    hay = {**store_haystacks(lab.project / STORE), **store_haystacks(lab.live)}
    assert any(name.endswith("-wal") for name in hay), sorted(hay)
    assert any(name.endswith("-shm") for name in hay), sorted(hay)
    assert any(name.endswith(":inflated") for name in hay)
    for what, needle in needles(lab).items():
        leaks = [name for name, blob in hay.items() if needle in blob]
        assert leaks == [], f"{what} found in {leaks}"


def test_no_private_value_in_the_export_nor_in_show(lab: Lab) -> None:
    texts = {
        "export": json.dumps(lab.doc).encode(),
        "show": cli_output(lab.project, "show", "latest").encode(),
    }
    for test in lab.doc["tests"]:
        if test["id"] != "<import>":
            texts[f"show {test['id']}"] = cli_output(
                lab.project, "show", "latest", test["id"]
            ).encode()
    for what, needle in needles(lab).items():
        for name, text in texts.items():
            assert needle not in text, f"{what} found in {name}"


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
