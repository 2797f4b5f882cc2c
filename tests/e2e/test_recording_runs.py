"""End-to-end: whole runs -- egress policies, digest keys across stores, xdist against a serial
run, determinism, a session killed by ``os._exit``.
"""

from __future__ import annotations

import os
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    ALL_PLUGINS,
    export,
    make_project,
    one_node,
    os_events,
    parent_symbol,
    record,
    record_full,
    run_pytest,
    test_genome,
    test_summary,
    without_run,
)

# Thread work is included: it is attributed to its starter deterministically.
STABLE_SELECTION = ("tests/test_core.py", "tests/test_outcomes.py")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("lab"), {}, base="lab")


# -- egress policies -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "outcome"),
    [(None, "allowed"), ("loopback", "allowed"), ("block", "refused:egress-guard")],
)
def test_egress_policy_decides_a_loopback_connect(
    lab: Path, policy: str | None, outcome: str
) -> None:
    store = f".dg-egress-{policy}"
    args = ["--genome-store", store, "tests/test_net.py::test_closed_port"]
    if policy:
        args.append(f"--genome-egress={policy}")
    run_pytest(lab, "--genome", *args).check_returncode()
    doc = export(lab, store)
    assert doc["run"]["config"]["egress"] == (policy or "loopback")
    test = test_genome(doc, "::test_closed_port")
    assert test["outcome"] == "passed"
    phase = test["phases"]["call"]
    [connect] = os_events(phase)
    assert (connect["kind"], connect["target"], connect["outcome"]) == (
        "connect",
        "127.0.0.1:9",
        outcome,
    )
    assert parent_symbol(phase, connect) == "py:lab.net.try_raw"


# -- digest keys -----------------------------------------------------------------------------

KEYED = {
    "pkg/__init__.py": "",
    "pkg/vault.py": """
        def store(password, pin):
            return len(password) + pin
    """,
    "tests/test_vault.py": """
        from pkg.vault import store


        def test_store():
            assert store("correct horse", 1234) == 1247
    """,
}


def _vault_digests(doc: dict[str, Any]) -> tuple[str, str]:
    node = one_node(test_genome(doc, "::test_store")["phases"]["call"], "py:pkg.vault.store")
    [arg] = node["args"]
    [result] = node["results"]
    return arg["digest"], result["digest"]


@pytest.mark.slow
def test_digests_are_comparable_only_under_one_key(tmp_path: Path) -> None:
    key_a = tmp_path / "a.key"
    key_b = tmp_path / "b.key"
    key_a.write_bytes(os.urandom(32))
    key_b.write_bytes(os.urandom(32))
    first = make_project(tmp_path, KEYED, name="first")
    second = make_project(tmp_path, KEYED, name="second")

    one = record(first, f"--genome-key-file={key_a}")
    two = record(second, f"--genome-key-file={key_a}")
    other = record_full(
        first, f"--genome-key-file={key_b}", "--genome-store", ".dg-b", store=".dg-b"
    ).doc
    own = record_full(first, "--genome-store", ".dg-own", store=".dg-own").doc

    fingerprints = [d["run"]["key_fingerprint"] for d in (one, two, other, own)]
    assert all(f.startswith("hmac-sha256:") for f in fingerprints)
    assert fingerprints[0] == fingerprints[1]
    assert len(set(fingerprints[1:])) == 3

    assert _vault_digests(one) == _vault_digests(two)
    assert _vault_digests(one)[0] != _vault_digests(other)[0]
    assert _vault_digests(one)[1] != _vault_digests(other)[1]
    assert _vault_digests(own)[0] not in (_vault_digests(one)[0], _vault_digests(other)[0])
    # Shapes do not depend on the key.
    shape = one_node(test_genome(other, "::test_store")["phases"]["call"], "py:pkg.vault.store")
    assert shape["args"][0]["shape"] == "password=str, pin=int"


# -- xdist and determinism -------------------------------------------------------------------


def _record_stable(lab: Path, store: str, *args: str) -> dict[str, Any]:
    """The stable selection recorded into its own store, under the project's shared key so
    that digests are comparable between stores."""
    key = lab.parent / "shared.key"
    if not key.exists():
        key.write_bytes(os.urandom(32))
    return record_full(
        lab,
        f"--genome-key-file={key}",
        "--genome-store",
        store,
        *args,
        *STABLE_SELECTION,
        returncode=1,  # the outcome tests fail on purpose
        store=store,
    ).doc


@pytest.fixture(scope="module")
def serial(lab: Path) -> dict[str, Any]:
    return _record_stable(lab, ".dg-serial")


def test_recording_twice_gives_the_same_document(lab: Path, serial: dict[str, Any]) -> None:
    again = _record_stable(lab, ".dg-again")
    assert again["run"]["id"] != serial["run"]["id"]
    # What was recorded is the same (commit, selection, options); where it was stored is not
    # part of it (#13: --genome-store and the like are not the selection).
    assert again["run"]["config"]["recording_key"] == serial["run"]["config"]["recording_key"]
    assert without_run(again) == without_run(serial)


@pytest.mark.parametrize("loaded", ["named", pytest.param("by-itself", marks=ALL_PLUGINS)])
def test_xdist_records_the_same_genomes_as_a_serial_run(
    lab: Path, serial: dict[str, Any], loaded: str
) -> None:
    """xdist loaded by pytest itself (its entry point) and named (``PYTEST_PLUGINS``, with
    autoload off, as this suite's sessions run: e2e/helpers.py ``LEAN_PLUGINS``). Named, it
    is registered as ``xdist.plugin``; the controller took itself for a serial session and
    wrote every test again, empty and verified."""
    doc = _record_stable(lab, f".dg-xdist-{loaded}", "-n", "2")
    assert "-n" in doc["run"]["selection"] and "-n" not in serial["run"]["selection"]
    assert doc["run"]["complete"] is True, doc["run"]["incomplete_reasons"]
    assert doc["run"]["incomplete_reasons"] == []
    assert test_summary(doc) == test_summary(serial)
    assert without_run(doc) == without_run(serial)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_writer_process_stores_what_the_test_process_would(
    lab: Path, serial: dict[str, Any], xdist: tuple[str, ...]
) -> None:
    """``--genome-writer=process`` (store/writer_process.py): the same rows, written by a process
    of each recording process's own, which leaves the run ok once it committed them."""
    store = f".dg-writer-{len(xdist)}"
    doc = _record_stable(lab, store, "--genome-writer=process", *xdist)
    assert doc["run"]["complete"] is True, doc["run"]["incomplete_reasons"]
    assert without_run(doc) == without_run(serial)
    if not xdist:
        # Which process writes is no part of what was recorded: the run is reusable.
        assert doc["run"]["config"]["recording_key"] == serial["run"]["config"]["recording_key"]
    with sqlite3.connect(lab / store / "genome.sqlite") as conn:
        workers = dict(conn.execute("SELECT worker, ok FROM workers WHERE left_at IS NOT NULL"))
    recorders = ["gw0", "gw1"] if xdist else ["main"]
    assert workers == {
        **{name: 1 for name in recorders},
        **{f"{name}/writer": 1 for name in recorders},
    }
    # The writer process packs the bodies harder (WRITER_ZLIB_LEVEL): by address, the same
    # bytes once inflated, and together fewer of them than the test process stores.
    with sqlite3.connect(lab / ".dg-serial" / "genome.sqlite") as conn:
        inline = dict(conn.execute("SELECT hash, body FROM genomes"))
    with sqlite3.connect(lab / store / "genome.sqlite") as conn:
        packed = dict(conn.execute("SELECT hash, body FROM genomes"))
    common = inline.keys() & packed.keys()
    assert len(common) > 10, (len(inline), len(packed))
    assert all(zlib.decompress(packed[h]) == zlib.decompress(inline[h]) for h in common)
    assert sum(len(packed[h]) for h in common) < sum(len(inline[h]) for h in common)


# -- a session that dies ---------------------------------------------------------------------


def test_os_exit_leaves_an_incomplete_run_with_the_tests_before_it(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "def f(n):\n    return n + 1\n",
            "tests/test_dies.py": """
                import os

                from pkg.mod import f


                def test_first():
                    assert f(1) == 2


                def test_second():
                    assert f(2) == 3


                def test_dies():
                    f(3)
                    os._exit(1)


                def test_never():
                    f(4)
            """,
        },
    )
    proc = run_pytest(project, "--genome")
    assert proc.returncode == 1
    doc = export(project)
    assert doc["run"]["complete"] is False
    assert doc["run"]["incomplete_reasons"]
    ids = {t["id"] for t in doc["tests"]}
    assert {"tests/test_dies.py::test_first", "tests/test_dies.py::test_second"} <= ids
    assert "tests/test_dies.py::test_never" not in ids
    second = test_genome(doc, "::test_second")
    assert one_node(second["phases"]["call"], "py:pkg.mod.f")["count"] == 1


# -- a test that ran elsewhere ---------------------------------------------------------------

REPORTED_ONLY = """
    import pytest
    from _pytest.reports import TestReport


    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(item, nextitem):
        # As a distributing plugin's controller does: the test ran in another process, and
        # only its reports arrive here.
        if item.name != "test_run_elsewhere":
            return None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for when in ("setup", "call", "teardown"):
            report = TestReport(item.nodeid, item.location, {}, "passed", None, when, [])
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True
"""


def test_a_test_reported_without_its_phases_running_here_is_unverified(tmp_path: Path) -> None:
    """A test whose reports arrive without its phases running in this process (what the
    xdist controller did when it took itself for a serial session) is not a complete,
    empty record: it says that nothing of it was recorded."""
    project = make_project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "def f(n):\n    return n + 1\n",
            "conftest.py": REPORTED_ONLY,
            "tests/test_where.py": """
                from pkg.mod import f


                def test_run_here():
                    assert f(1) == 2


                def test_run_elsewhere():
                    assert f(2) == 3
            """,
        },
    )
    doc = record(project)
    here, elsewhere = test_genome(doc, "test_run_here"), test_genome(doc, "test_run_elsewhere")
    assert here["verified"] is True and set(here["phases"]) == {"setup", "call", "teardown"}
    assert elsewhere["phases"] == {}
    assert elsewhere["verified"] is False
    assert elsewhere["unverified_reasons"] == ["not-recorded:setup"]
