"""End-to-end: one real ``pytest --genome`` session over tests/projects/lab, read back through
``diffgenome export`` and checked behaviour by behaviour.

The project is recorded once per module (the session takes about a second); every test below
reads the same document.
"""

from __future__ import annotations

import contextlib
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    Recording,
    all_phase_symbols,
    branches_by_site,
    make_project,
    node_path,
    nodes_by_symbol,
    one_node,
    os_events,
    parent_symbol,
    record_full,
    symbol_table,
    symbols_of,
    test_genome,
)

SECRET_TEXT = "hunter2-secret-XYZ"
SECRET_NUMBER = "987654321987654321"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Recording]:
    project = make_project(tmp_path_factory.mktemp("lab"), {}, base="lab")
    # Some tests of the project fail or error on purpose (outcomes), hence exit code 1.
    return project, record_full(project, returncode=1)


@pytest.fixture(scope="module")
def doc(lab: tuple[Path, Recording]) -> dict[str, Any]:
    return lab[1].doc


def call(doc: dict[str, Any], test: str) -> dict[str, Any]:
    phase: dict[str, Any] = test_genome(doc, test)["phases"]["call"]
    return phase


# -- the run ---------------------------------------------------------------------------------


def test_run_is_complete_and_describes_the_session(doc: dict[str, Any]) -> None:
    run = doc["run"]
    assert run["complete"] is True
    assert run["incomplete_reasons"] == []
    assert run["dirty"] is False
    assert run["commit"] and len(run["commit"]) == 40
    assert run["key_fingerprint"].startswith("hmac-sha256:")
    assert run["config"]["egress"] == "loopback"
    assert run["config"]["bounds"]["max_nodes_per_phase"] == 20000
    assert {c["name"] for c in doc["collectors"]} == {"py-sys-monitoring", "py-egress-guard"}


# -- scope (flat layout) ---------------------------------------------------------------------


def test_flat_layout_names_repo_and_test_code(doc: dict[str, Any]) -> None:
    symbols = symbol_table(doc)
    assert doc["run"]["config"]["source_roots"] == ["."]
    assert doc["run"]["config"]["test_roots"] == ["tests/"]
    leaf = symbols["py:lab.calls.leaf"]
    assert (leaf["origin"], leaf["path"], leaf["kind"]) == ("repo", "lab/calls.py", "function")
    assert symbols["py:lab"]["kind"] == "module"
    assert symbols["py:lab"]["path"] == "lab/__init__.py"
    test = symbols["py:tests.test_core.test_loop"]
    assert (test["origin"], test["path"]) == ("test", "tests/test_core.py")
    assert symbols["py:tests.test_core.resource"]["origin"] == "test"


def test_stdlib_and_site_packages_are_not_recorded(doc: dict[str, Any]) -> None:
    phase = call(doc, "::test_stdlib_not_recorded")
    encode = one_node(phase, "py:lab.calls.encode")
    # json.dumps ran below encode, but it is not project code: encode is a leaf.
    assert [n for n in phase["nodes"] if n["parent"] == encode["id"]] == []
    recorded = all_phase_symbols(doc)
    for prefix in ("py:json", "py:_pytest", "py:pytest", "py:pluggy", "py:asyncio", "py:anyio"):
        assert not any(s.startswith(prefix) for s in recorded), prefix
    in_scope = {s["id"] for s in doc["symbols"] if s["origin"] in ("repo", "test")}
    assert in_scope and all(s.startswith(("py:lab", "py:tests.")) for s in in_scope)


def test_virtualenv_inside_the_project_is_out_of_scope(doc: dict[str, Any]) -> None:
    phase = call(doc, "::test_venv_not_recorded")
    assert symbols_of(phase) == {"py:tests.test_core.test_venv_not_recorded"}
    assert not any("venvmod" in s["id"] or "myenv" in str(s["path"]) for s in doc["symbols"])


# -- calling-context tree --------------------------------------------------------------------


def test_a_loop_is_one_node_with_its_count(doc: dict[str, Any]) -> None:
    phase = call(doc, "::test_loop")
    leaf = one_node(phase, "py:lab.calls.leaf")
    assert leaf["count"] == 100000
    assert leaf["exits"] == {"returned": 100000}
    assert parent_symbol(phase, leaf) == "py:lab.calls.loop"
    assert len(phase["nodes"]) == 3


def test_distinct_call_paths_are_distinct_nodes(doc: dict[str, Any]) -> None:
    phase = call(doc, "::test_paths")
    leaves = nodes_by_symbol(phase)["py:lab.calls.leaf"]
    assert sorted(node_path(phase, n)[1] for n in leaves) == [
        "py:lab.calls.via_a",
        "py:lab.calls.via_b",
    ]
    assert [n["count"] for n in leaves] == [1, 1]
    # Node ids follow a deterministic pre-order: children sorted by identity.
    assert [n.get("symbol") for n in phase["nodes"]] == [
        "py:tests.test_core.test_paths",
        "py:lab.calls.via_a",
        "py:lab.calls.leaf",
        "py:lab.calls.via_b",
        "py:lab.calls.leaf",
    ]


def test_exits_are_counted_by_kind(doc: dict[str, Any]) -> None:
    fail = one_node(call(doc, "::test_exits"), "py:lab.calls.fail")
    assert fail["count"] == 2
    assert fail["exits"] == {"returned": 1, "raised:py:builtins.ValueError": 1}
    failing_test = test_genome(doc, "test_outcomes.py::test_fails")["phases"]["call"]
    top = one_node(failing_test, "py:tests.test_outcomes.test_fails")
    assert top["exits"] == {"raised:py:builtins.AssertionError": 1}


def test_args_and_results_have_shapes_and_digests(doc: dict[str, Any]) -> None:
    secret = one_node(call(doc, "::test_secret"), "py:lab.calls.secret")
    [arg] = secret["args"]
    assert arg["shape"] == "password=str, number=int"
    assert len(arg["digest"]) == 32 and int(arg["digest"], 16) >= 0
    [result] = secret["results"]
    assert result["shape"] == "int"


def test_identical_values_share_a_digest_within_a_run(doc: dict[str, Any]) -> None:
    secret = one_node(call(doc, "::test_same_twice"), "py:lab.calls.secret")
    assert secret["count"] == 3
    # ("abc", 1) twice and ("abd", 1) once: two distinct argument digests, one shape.
    assert len(secret["args"]) == 2
    assert {a["shape"] for a in secret["args"]} == {"password=str, number=int"}
    # Both calls return 4, so one result.
    assert len(secret["results"]) == 1


def test_raw_values_never_reach_the_document_nor_the_store(lab: tuple[Path, Recording]) -> None:
    project, recording = lab
    text = str(recording.doc)
    assert SECRET_TEXT not in text and SECRET_NUMBER not in text
    blobs = _store_bytes(project / ".diffgenome")
    assert blobs, "the store holds no data"
    for blob in blobs:
        assert SECRET_TEXT.encode() not in blob
        assert SECRET_NUMBER.encode() not in blob
        assert int(SECRET_NUMBER).to_bytes(8, "little") not in blob


def _store_bytes(store: Path) -> list[bytes]:
    """Every file of the store raw, plus every cell of the database inflated where zlib'ed."""
    blobs = [p.read_bytes() for p in store.rglob("*") if p.is_file()]
    db_files = [
        p for p in store.iterdir() if p.is_file() and p.read_bytes()[:15] == b"SQLite format 3"
    ]
    for db in db_files:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    for cell in row:
                        if isinstance(cell, bytes):
                            blobs.append(cell)
                            with contextlib.suppress(zlib.error):
                                blobs.append(zlib.decompress(cell))
                        elif cell is not None:
                            blobs.append(str(cell).encode())
        finally:
            conn.close()
    assert db_files, "no SQLite database in the store"
    return blobs


# -- naming under patching -------------------------------------------------------------------


def test_symbols_stay_correct_when_os_path_and_open_are_patched(doc: dict[str, Any]) -> None:
    test = test_genome(doc, "::test_patched_naming")
    assert test["verified"] is True, test["unverified_reasons"]
    phase = test["phases"]["call"]
    top = "py:tests.test_core.test_patched_naming"
    # The module was first imported (and its source first read) while both were patched.
    for symbol in ("py:lab.late", "py:lab.late.build", "py:lab.late.read"):
        assert parent_symbol(phase, one_node(phase, symbol)) == top
    symbols = symbol_table(doc)
    assert symbols["py:lab.late.build"]["path"] == "lab/late.py"
    assert symbols["py:lab.late.read"]["kind"] == "function"
    [branch] = phase["branches"]
    assert branch["predicate"] == "name"
    assert branch["site"].startswith("py:lab.late.build/if[")
    assert branch["outcomes"] == {"true": 1, "false": 0}
    read = one_node(phase, "py:lab.late.read")
    assert read["exits"] == {"returned": 1}


# -- decisions -------------------------------------------------------------------------------


def test_decision_outcomes_are_counted_per_site(doc: dict[str, Any]) -> None:
    phase = call(doc, "::test_decisions")
    sites = branches_by_site(phase)
    # (symbol, kind, predicate) -> outcomes; ids are digests of what each decision tests
    by_text = {
        (b["site"].partition("/")[0], b["kind"], b["predicate"]): sites[b["site"]]
        for b in phase["branches"]
    }
    assert len(by_text) == len(sites)
    d = "py:lab.decisions."
    assert by_text[(d + "classify", "if", "n < 0")] == {"true": 1, "false": 3}
    assert by_text[(d + "classify", "if", "n == 0")] == {"true": 1, "false": 2}  # elif
    assert by_text[(d + "countdown", "while", "n > 0")] == {"true": 3, "false": 1}
    parity = [v for (s, k, _), v in by_text.items() if s == d + "parity" and k == "ifexp"]
    assert parity == [{"true": 3, "false": 2}]
    evens = [v for (s, k, _), v in by_text.items() if s == d + "evens"]
    assert evens == [{"true": 3, "false": 2}]
    command = {p: v for (s, k, p), v in by_text.items() if s == d + "command"}
    assert command["'go'"] == {"true": 2, "false": 2}
    assert command["'stop'"] == {"true": 1, "false": 1}
    checked = [v for (s, k, _), v in by_text.items() if s == d + "checked"]
    assert checked == [{"true": 2, "false": 1}]


def test_decisions_hang_on_their_node_with_predicate(doc: dict[str, Any]) -> None:
    phase = call(doc, "::test_decisions")
    classify = one_node(phase, "py:lab.decisions.classify")
    mine = [b for b in phase["branches"] if b["node"] == classify["id"]]
    # in the order of their ids, which are digests: the set is what is recorded
    assert sorted((b["kind"], b["predicate"]) for b in mine) == [("if", "n < 0"), ("if", "n == 0")]
    assert all(b["site"].startswith("py:lab.decisions.classify/if[") for b in mine)
    checked = one_node(phase, "py:lab.decisions.checked")
    assert checked["exits"] == {"returned": 2, "raised:py:builtins.AssertionError": 1}


# -- threads and generators ------------------------------------------------------------------


def test_thread_work_hangs_under_the_starting_function(doc: dict[str, Any]) -> None:
    test = test_genome(doc, "::test_thread_work")
    phase = test["phases"]["call"]
    work = one_node(phase, "py:lab.flow.work")
    path = node_path(phase, work)
    [lambda_] = [s for s in path if "<lambda>" in s]
    assert lambda_.startswith("py:lab.flow.spawn.<locals>.<lambda>[")
    assert path == [
        "py:tests.test_core.test_thread_work",
        "py:lab.flow.spawn",
        lambda_,
        "py:lab.flow.work",
    ]
    assert one_node(phase, lambda_)["via"] == "thread"
    assert test["verified"] is True, test["unverified_reasons"]


def test_thread_outliving_its_test_is_disclosed_not_a_gap(doc: dict[str, Any]) -> None:
    """What such a thread does later is recorded in the phase it does it in (as work of an
    earlier thread); between phases it is no test's work: the test stays verified."""
    outlived = test_genome(doc, "::test_thread_outlives")
    assert outlived["verified"] is True, outlived["unverified_reasons"]
    assert outlived["disclosed"] == ["call:thread-outlived-phase"]
    # The next test ends that thread but leaks another one: as many threads as before, yet
    # one of them is new.
    swapped = test_genome(doc, "::test_thread_swapped")
    assert swapped["disclosed"] == ["call:thread-outlived-phase"]
    # The last one only ends a thread.
    released = test_genome(doc, "::test_thread_released")
    assert released["verified"] is True
    assert "disclosed" not in released


def test_generator_is_attributed_to_its_consumer(doc: dict[str, Any]) -> None:
    phase = call(doc, "::test_generator_consumer")
    by_parent = {parent_symbol(phase, n): n for n in nodes_by_symbol(phase)["py:lab.flow.numbers"]}
    # make() primes it once; consume() drives the rest (two more values, then the end).
    assert by_parent["py:lab.flow.make"]["count"] == 1
    assert by_parent["py:lab.flow.make"]["exits"] == {"yielded": 1}
    assert by_parent["py:lab.flow.consume"]["count"] == 3
    assert by_parent["py:lab.flow.consume"]["exits"] == {"yielded": 2, "returned": 1}
    assert set(by_parent) == {"py:lab.flow.make", "py:lab.flow.consume"}


# -- phases and test kinds -------------------------------------------------------------------


def test_fixture_code_lands_in_setup_and_teardown(doc: dict[str, Any]) -> None:
    phases = test_genome(doc, "::test_fixture_phases")["phases"]
    setup, body, teardown = phases["setup"], phases["call"], phases["teardown"]
    fixture = "py:tests.test_core.resource"
    assert one_node(setup, fixture)["exits"] == {"yielded": 1}
    assert node_path(setup, one_node(setup, "py:lab.calls.leaf")) == [fixture, "py:lab.calls.leaf"]
    assert one_node(teardown, fixture)["exits"] == {"returned": 1}
    assert node_path(teardown, one_node(teardown, "py:lab.calls.leaf")) == [
        fixture,
        "py:lab.calls.via_a",
        "py:lab.calls.leaf",
    ]
    assert symbols_of(body) == {
        "py:tests.test_core.test_fixture_phases",
        "py:lab.calls.via_b",
        "py:lab.calls.leaf",
    }
    assert fixture not in symbols_of(body)


def test_parametrized_tests_have_their_own_ids(doc: dict[str, Any]) -> None:
    for param in ("1", "2"):
        test = test_genome(doc, f"tests/test_core.py::test_param[{param}]")
        assert test["outcome"] == "passed"
        leaf = one_node(test["phases"]["call"], "py:lab.calls.leaf")
        assert parent_symbol(test["phases"]["call"], leaf) == "py:tests.test_core.test_param"
    first = one_node(call(doc, "test_param[1]"), "py:lab.calls.leaf")["args"]
    second = one_node(call(doc, "test_param[2]"), "py:lab.calls.leaf")["args"]
    assert first != second


def test_unittest_testcase_is_recorded(doc: dict[str, Any]) -> None:
    phase = call(doc, "tests/test_core.py::TestLegacy::test_method")
    leaf = one_node(phase, "py:lab.calls.leaf")
    assert parent_symbol(phase, leaf) == "py:tests.test_core.TestLegacy.test_method"


@pytest.mark.parametrize("name", ["test_asyncio", "test_anyio"])
def test_async_tests_record_their_coroutines(doc: dict[str, Any], name: str) -> None:
    test = test_genome(doc, f"::{name}")
    assert test["outcome"] == "passed" and test["verified"] is True
    phase = test["phases"]["call"]
    coroutine = one_node(phase, f"py:tests.test_core.{name}")
    assert coroutine["parent"] is None
    fetch = one_node(phase, "py:lab.aio.fetch")
    assert parent_symbol(phase, fetch) == f"py:tests.test_core.{name}"
    # Started once and resumed once after ``await asyncio.sleep(0)``.
    assert fetch["count"] == 2
    assert fetch["exits"] == {"yielded": 1, "returned": 1}


def test_anyio_backend_fixture_is_setup(doc: dict[str, Any]) -> None:
    setup = test_genome(doc, "::test_anyio")["phases"]["setup"]
    assert "py:tests.test_core.anyio_backend" in symbols_of(setup)


def test_subtests_are_tests_of_their_own(doc: dict[str, Any]) -> None:
    """pytest's built-in ``subtests``: each subtest has its own id, outcome and genome.

    Calls made inside a ``with subtests.test(...)`` block belong to that subtest; the parent
    test keeps what ran outside the blocks and fails when one subtest failed.
    """
    test_ids = [t["id"] for t in doc["tests"] if "test_subtests" in t["id"]]
    base = "tests/test_outcomes.py::test_subtests"
    assert sorted(test_ids) == [base, f"{base} (i=0)", f"{base} (i=1)", f"{base} (i=2)"]
    assert test_genome(doc, base)["outcome"] == "failed"
    parent_symbols = symbols_of(test_genome(doc, base)["phases"]["call"])
    assert "py:lab.calls.leaf" not in parent_symbols
    outcomes = {}
    for i in range(3):
        sub = next(t for t in doc["tests"] if t["id"] == f"{base} (i={i})")
        outcomes[i] = sub["outcome"]
        assert sub["verified"], sub["unverified_reasons"]
        leaf = one_node(sub["phases"]["call"], "py:lab.calls.leaf")
        assert leaf["count"] == 1 and leaf["parent"] is None
    assert outcomes == {0: "passed", 1: "failed", 2: "passed"}  # leaf(1) == 2


def test_import_pseudo_test_holds_module_level_code(doc: dict[str, Any]) -> None:
    test = test_genome(doc, "<import>")
    assert test["id"] == "<import>"
    assert test["outcome"] == "passed"
    phase = test["phases"]["call"]
    tops = {n["symbol"] for n in phase["nodes"] if n["parent"] is None}
    assert {"py:tests.test_core", "py:tests.test_net", "py:tests.test_outcomes"} <= tops
    for module in ("py:lab", "py:lab.calls", "py:lab.decisions", "py:lab.flow"):
        assert parent_symbol(phase, one_node(phase, module)) == "py:tests.test_core"
    # MODULE_CONSTANT = calls.leaf(0) runs at import of the test module.
    leaf = one_node(phase, "py:lab.calls.leaf")
    assert parent_symbol(phase, leaf) == "py:tests.test_core"
    # lab.late is imported by a test, not at collection.
    assert "py:lab.late" not in symbols_of(phase)


# -- outcomes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "outcome"),
    [
        ("test_passes", "passed"),
        ("test_fails", "failed"),
        ("test_skips", "skipped"),
        ("test_skip_mark", "skipped"),
        ("test_xfails", "xfailed"),
        ("test_xpasses", "xpassed"),
        ("test_errors", "error"),
        ("test_teardown_errors", "error"),
    ],
)
def test_outcomes_map_to_the_genome(doc: dict[str, Any], name: str, outcome: str) -> None:
    test = test_genome(doc, f"tests/test_outcomes.py::{name}")
    assert test["outcome"] == outcome
    assert test["verified"] is True, test["unverified_reasons"]


def test_a_failing_fixture_is_recorded_in_setup(doc: dict[str, Any]) -> None:
    phases = test_genome(doc, "::test_errors")["phases"]
    fixture = one_node(phases["setup"], "py:tests.test_outcomes.broken")
    assert fixture["exits"] == {"raised:py:builtins.RuntimeError": 1}
    assert "py:tests.test_outcomes.test_errors" not in all_phase_symbols(
        {"tests": [{"phases": phases}]}
    )


# -- egress (policy loopback) ----------------------------------------------------------------


def test_loopback_connect_is_allowed_and_recorded_under_the_caller(doc: dict[str, Any]) -> None:
    test = test_genome(doc, "::test_loopback_connect")
    assert test["outcome"] == "passed" and test["verified"] is True
    phase = test["phases"]["call"]
    [connect] = os_events(phase, "connect")
    assert connect["outcome"] == "allowed"
    # the listener's port is the kernel's choice (bind to port 0): the run's, not the code's
    assert connect["target"] == "127.0.0.1:<ephemeral>"
    assert connect["count"] == 1
    assert parent_symbol(phase, connect) == "py:lab.net.try_ping"
    # The listener's bind happened in the fixture, i.e. in setup.
    [bind] = os_events(test["phases"]["setup"], "bind")
    assert bind["outcome"] == "allowed"
    assert parent_symbol(test["phases"]["setup"], bind) == "py:tests.test_net.listener"


def test_non_loopback_name_is_refused_before_the_resolver(doc: dict[str, Any]) -> None:
    test = test_genome(doc, "::test_dns_refused")
    assert test["outcome"] == "passed"  # the test expects the PermissionError subclass
    phase = test["phases"]["call"]
    [dns] = os_events(phase, "dns")
    assert (dns["target"], dns["outcome"]) == ("nothing.invalid:80", "refused:egress-guard")
    assert parent_symbol(phase, dns) == "py:lab.net.resolve"
    resolve = one_node(phase, "py:lab.net.resolve")
    [exit_kind] = resolve["exits"]
    assert exit_kind.startswith("raised:py:") and exit_kind.endswith("EgressRefused")


def test_a_python_subprocess_is_recorded_and_the_test_stays_verified(
    doc: dict[str, Any],
) -> None:
    """``python -c pass`` runs nothing in scope: recorded, with nothing under it."""
    test = test_genome(doc, "::test_subprocess")
    assert test["outcome"] == "passed"
    phase = test["phases"]["call"]
    [spawn] = os_events(phase, "subprocess")
    assert spawn["outcome"] == "recorded-child"
    assert parent_symbol(phase, spawn) == "py:lab.net.run_child"
    assert test["verified"] is True, test["unverified_reasons"]
    assert [n for n in phase["nodes"] if n["parent"] == spawn["id"]] == []


def test_only_nothing_is_unverified(doc: dict[str, Any]) -> None:
    """The child process is recorded (#11.1) and outliving threads are disclosed (#11.3)."""
    unverified = {t["id"].rpartition("::")[2] for t in doc["tests"] if not t["verified"]}
    assert unverified == set()
