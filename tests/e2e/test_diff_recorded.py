"""The differ on real recordings: small projects in two versions, each recorded by a real
``pytest --genome`` subprocess with a shared digest key, exported with the CLI, then diffed.

Each test of this module checks one situation; the example project puts every change kind in
its own example test, so one base and one head recording serve them all.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from diffgenome.analysis.diff import (
    DIGESTS_NOT_COMPARABLE,
    code_changes_from_sources,
    describe,
    diff_documents,
)
from diffgenome.analysis.models import DiffDocument, GenomeDocument
from diffgenome.analysis.models import TestDiff as DiffOfTest
from e2e.helpers import DIFF_SCHEMA, export, run_pytest
from e2e.helpers import make_project as make_git_project

TESTS = """
import pytest
from calc import core


def test_unchanged():
    assert core.stable_fn(2) == 4


def test_outcome():
    assert core.outcome_fn(1) == "pos"


def test_call_added():
    assert core.added_fn(1) == 1


def test_call_removed():
    assert core.removed_fn(2) == 4


def test_call_count():
    assert len(core.count_fn(3)) >= 3


def test_exit():
    with pytest.raises(Exception):
        core.exit_fn(1)


def test_result():
    assert core.result_fn(1) > 0


def test_args():
    assert core.args_fn(1) == 0


def test_branch():
    assert core.branch_fn(0) in (0, 1)


def test_egress_added():
    core.egress_added_fn()


def test_egress_removed():
    core.egress_removed_fn()


def test_state():
    assert core.Box().read() >= 0
"""

BASE = """
import socket

LIMIT = 10


def stable_fn(x):
    return x * 2


def outcome_fn(x):
    return "pos"


def audit(x):
    return x


def added_fn(x):
    return x


def legacy(x):
    return x * 2


def removed_fn(x):
    return legacy(x)


def each(i):
    return i


def count_fn(n):
    return [each(i) for i in range(n)]


def exit_fn(x):
    raise ValueError(x)


def result_fn(x):
    return x + 1


def args_inner(y):
    return 0


def args_fn(x):
    return args_inner(x * 2)


def branch_fn(x):
    if x > 0:
        return 1
    return 0


def connect():
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=0.2).close()
    except OSError:
        pass


def egress_added_fn():
    return None


def egress_removed_fn():
    connect()


class Box:
    def __init__(self):
        self.value = 0

    def read(self):
        return 1 if self.value else 0
"""

# Every example test's function changes in its own way; ``legacy`` is deleted, ``untested``
# added, ``stable_fn`` untouched.
HEAD = (
    BASE.replace('return "pos"', 'return "neg"')
    .replace("def added_fn(x):\n    return x", "def added_fn(x):\n    audit(x)\n    return x")
    .replace("def legacy(x):\n    return x * 2\n\n\n", "")
    .replace("return legacy(x)", "return x * 2")
    .replace("range(n)", "range(n + 1)")
    .replace("raise ValueError(x)", "raise TypeError(x)")
    .replace("return x + 1", "return x + 2")
    .replace("args_inner(x * 2)", "args_inner(x * 3)")
    .replace("if x > 0:", "if x >= 0:")
    .replace("def egress_added_fn():\n    return None", "def egress_added_fn():\n    connect()")
    .replace("def egress_removed_fn():\n    connect()", "def egress_removed_fn():\n    return None")
    .replace("self.value = 0", "self.value = 7")
    + "\n\ndef untested(x):\n    return -x\n"
)

# Only refactoring: functions moved, comments and a docstring added, locals renamed.
REFACTOR = '''
"""The calculator (now with a docstring)."""
import socket

LIMIT = 10


class Box:
    def __init__(self):
        self.value = 0  # starts empty

    def read(self):
        return 1 if self.value else 0


def branch_fn(x):
    # a comment
    if x > 0:
        return 1
    return 0


def outcome_fn(x):
    return "pos"


def stable_fn(x):
    doubled = x * 2
    return doubled


def audit(x):
    return x


def added_fn(x):
    return x


def legacy(x):
    return x * 2


def removed_fn(x):
    return legacy(x)


def each(i):
    return i


def count_fn(n):
    return [each(number) for number in range(n)]


def exit_fn(x):
    raise ValueError(x)


def result_fn(x):
    """Add one."""
    return x + 1


def args_inner(y):
    return 0


def args_fn(x):
    return args_inner(x * 2)


def connect():
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=0.2).close()
    except OSError:
        pass


def egress_removed_fn():
    connect()


def egress_added_fn():
    return None
'''


PROJECT = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "calc/__init__.py": "",
}


def make_project(root: Path, files: Mapping[str, str]) -> Path:
    return make_git_project(root.parent, {**PROJECT, **files}, name=root.name)


def record(project: Path, store: Path, key: Path) -> dict[str, Any]:
    """One real recording of ``project``, read back as the exported document."""
    # "--opt=value": a separate path argument would move pytest's rootdir
    done = run_pytest(
        project, "--genome", "-q", f"--genome-store={store}", f"--genome-key-file={key}"
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return export(project, store)


def validated(diff: DiffDocument) -> DiffDocument:
    """Every produced diff must be valid against the published ``diff`` schema."""
    jsonschema.validate(json.loads(diff.model_dump_json()), DIFF_SCHEMA)
    return diff


def by_id(diff: DiffDocument) -> dict[str, DiffOfTest]:
    return {test.id: test for test in diff.tests}


def tid(name: str) -> str:
    return f"tests/test_core.py::{name}"


def kinds(test: DiffOfTest) -> set[str]:
    return {change.kind for change in test.changes}


class Recorded:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.key = root / "key"
        self.key.write_bytes(os.urandom(64))
        self.other_key = root / "other-key"
        self.other_key.write_bytes(os.urandom(64))
        self.base_dir = make_project(
            root / "base", {"calc/core.py": BASE, "tests/test_core.py": TESTS}
        )
        self.head_dir = make_project(
            root / "head", {"calc/core.py": HEAD, "tests/test_core.py": TESTS}
        )
        self.base = record(self.base_dir, root / "store-base", self.key)
        self.head = record(self.head_dir, root / "store-head", self.key)

    @functools.cached_property
    def refactor(self) -> dict[str, Any]:
        project = make_project(
            self.root / "refactor", {"calc/core.py": REFACTOR, "tests/test_core.py": TESTS}
        )
        return record(project, self.root / "store-refactor", self.key)

    @functools.cached_property
    def head_other_key(self) -> dict[str, Any]:
        return record(self.head_dir, self.root / "store-other-key", self.other_key)

    @functools.cached_property
    def diff(self) -> DiffDocument:
        return validated(diff_documents(self.base, self.head, base_rev="base", head_rev="head"))


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return Recorded(tmp_path_factory.mktemp("diff-recorded"))


def test_a_refactor_leaves_every_test_unchanged(rec: Recorded) -> None:
    diff = validated(diff_documents(rec.base, rec.refactor, base_rev="base", head_rev="refactor"))
    assert diff.summary.tests == len(rec.base["tests"]) > 10
    assert {test.status for test in diff.tests} == {"unchanged"}, [
        (test.id, test.changes) for test in diff.tests if test.status != "unchanged"
    ]
    assert diff.summary.unchanged == diff.summary.tests


def test_an_untouched_function_is_unchanged_next_to_changes(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_unchanged")]
    assert test.status == "unchanged" and test.changes == [] and test.reasons == []


def test_a_test_that_now_fails_is_an_outcome_change(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_outcome")]
    assert test.status == "changed"
    assert (test.outcome.base, test.outcome.head) == ("passed", "failed")
    (outcome,) = [c for c in test.changes if c.kind == "outcome_changed"]
    assert (outcome.base, outcome.head) == ("passed", "failed")
    result = [c for c in test.changes if c.kind == "result_changed"]
    assert "py:calc.core.outcome_fn" in {c.symbol for c in result}


def test_a_new_call_is_call_added_at_its_node(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_call_added")]
    (added,) = [c for c in test.changes if c.kind == "call_added"]
    assert added.symbol == "py:calc.core.audit"
    assert added.path == [
        "py:tests.test_core.test_call_added",
        "py:calc.core.added_fn",
        "py:calc.core.audit",
    ]
    assert added.phase == "call" and added.base is None
    assert added.head == {"count": 1, "exits": {"returned": 1}}
    assert kinds(test) == {"call_added"}


def test_a_call_no_longer_made_is_call_removed(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_call_removed")]
    assert kinds(test) == {"call_removed"}
    (removed,) = test.changes
    assert removed.symbol == "py:calc.core.legacy" and removed.path[-2] == "py:calc.core.removed_fn"


def test_a_loop_that_runs_more_often_is_a_count_change(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_call_count")]
    counts = [c for c in test.changes if c.kind == "call_count_changed"]
    assert [(c.symbol, c.base, c.head) for c in counts] == [("py:calc.core.each", 3, 4)]


def test_a_different_exception_is_an_exit_change(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_exit")]
    (exit_change,) = [c for c in test.changes if c.kind == "exit_changed"]
    assert exit_change.symbol == "py:calc.core.exit_fn"
    assert exit_change.base == {"raised:py:builtins.ValueError": 1}
    assert exit_change.head == {"raised:py:builtins.TypeError": 1}
    assert test.outcome.head == "passed"


def test_a_different_return_value_is_a_result_change(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_result")]
    assert kinds(test) == {"result_changed"}
    (result,) = test.changes
    assert result.symbol == "py:calc.core.result_fn"
    assert [v["shape"] for v in result.base] == ["int"] == [v["shape"] for v in result.head]
    assert result.base[0]["digest"] != result.head[0]["digest"]


def test_different_arguments_are_an_args_change(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_args")]
    assert kinds(test) == {"args_changed"}
    (args,) = test.changes
    assert args.symbol == "py:calc.core.args_inner"
    assert args.base[0]["shape"] == "y=int" and args.base[0]["digest"] != args.head[0]["digest"]


def test_a_changed_condition_is_the_old_decision_gone_and_the_new_one_taken(
    rec: Recorded,
) -> None:
    """Decisions are known by what they test: ``x > 0`` became ``x >= 0``, so the old one is no
    longer reached and the new one is taken; the counts of one are never shown under the
    other's text. The result that changed with it is a change of its own."""
    test = by_id(rec.diff)[tid("test_branch")]
    branches = {c.predicate: c for c in test.changes if c.kind == "branch_changed"}
    assert set(branches) == {"x > 0", "x >= 0"}
    old, new = branches["x > 0"], branches["x >= 0"]
    assert old.base == {"true": 0, "false": 1} and old.head is None
    assert new.base is None and new.head == {"true": 1, "false": 0}
    assert old.site != new.site
    assert old.site.startswith("py:calc.core.branch_fn/if[")
    assert new.site.startswith("py:calc.core.branch_fn/if[")
    assert test.status == "changed"
    assert any(c.kind == "result_changed" for c in test.changes)


def test_a_new_connection_is_egress_added(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_egress_added")]
    added = {c.path[-1] for c in test.changes if c.kind == "egress_added"}
    assert "os[connect 127.0.0.1:9]" in added
    # the call that makes it is reported once, as a new subtree
    assert [c.symbol for c in test.changes if c.kind == "call_added"] == ["py:calc.core.connect"]


def test_a_connection_no_longer_made_is_egress_removed(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_egress_removed")]
    removed = [c for c in test.changes if c.kind == "egress_removed"]
    assert "os[connect 127.0.0.1:9]" in {c.path[-1] for c in removed}
    assert all(c.base["outcome"] == "allowed" for c in removed)


def test_a_field_holding_another_kind_of_value_is_a_state_change(rec: Recorded) -> None:
    test = by_id(rec.diff)[tid("test_state")]
    (state,) = [c for c in test.changes if c.kind == "state_changed"]
    assert state.symbol == "py:calc.core.Box.read"
    assert {"when": "entry", "target": "self.value", "bucket": "zero"} in state.base
    assert {"when": "entry", "target": "self.value", "bucket": "pos"} in state.head


def test_summary_counts_the_statuses(rec: Recorded) -> None:
    diff = rec.diff
    statuses = [test.status for test in diff.tests]
    assert diff.summary.tests == len(statuses)
    assert diff.summary.changed == statuses.count("changed") == 11
    assert diff.summary.unchanged == statuses.count("unchanged") >= 2  # test_unchanged, <import>
    assert (diff.base.rev, diff.head.rev) == ("base", "head")
    assert diff.base.commit == rec.base["run"]["commit"] != diff.head.commit
    assert diff.base.run == rec.base["run"]["id"]


def test_different_keys_compare_shapes_only_and_never_say_unchanged(rec: Recorded) -> None:
    head = rec.head_other_key
    assert head["run"]["key_fingerprint"] != rec.base["run"]["key_fingerprint"]
    diff = validated(diff_documents(rec.base, head, base_rev="base", head_rev="head"))
    tests = by_id(diff)
    assert "unchanged" not in {test.status for test in diff.tests}
    assert all(DIGESTS_NOT_COMPARABLE in t.reasons for t in diff.tests if t.status == "unverified")
    # Same shape, other digest: a value change that cannot be judged is not reported...
    assert tests[tid("test_result")].changes == []
    assert tests[tid("test_result")].status == "unverified"
    # ...while what needs no digest still is.
    assert "outcome_changed" in kinds(tests[tid("test_outcome")])
    assert "exit_changed" in kinds(tests[tid("test_exit")])


def test_an_incomplete_run_makes_every_test_unverified(rec: Recorded) -> None:
    """The head document is edited to say its session was interrupted (the recorder writes
    such runs when a session crashes, which a test cannot cause reliably)."""
    head = copy.deepcopy(rec.refactor)
    head["run"]["complete"] = False
    head["run"]["incomplete_reasons"] = ["interrupted"]
    del head["tests"][-1]
    diff = validated(diff_documents(rec.base, head, base_rev="base", head_rev="head"))
    assert {test.status for test in diff.tests} == {"unverified"}
    missing = [t for t in diff.tests if t.outcome.head is None]
    assert len(missing) == 1 and "whose run is incomplete" in missing[0].reasons[0]
    assert all(
        "head run incomplete: interrupted" in t.reasons for t in diff.tests if t.outcome.head
    )


def test_code_changes_name_symbols_tests_and_gaps(rec: Recorded) -> None:
    code = code_changes_from_sources(
        {"calc/core.py": BASE}, {"calc/core.py": HEAD}, lambda path: "calc.core"
    )
    diff = validated(
        diff_documents(rec.base, rec.head, base_rev="b", head_rev="h", code_changes=code)
    )
    entries = {entry.symbol: entry for entry in diff.code_changes}
    assert entries["py:calc.core.legacy"].change == "removed"
    assert entries["py:calc.core.legacy"].tests_base == [tid("test_call_removed")]
    assert entries["py:calc.core.legacy"].tests_head == []
    assert entries["py:calc.core.untested"].change == "added"
    assert entries["py:calc.core.untested"].gaps == ["not executed by any test"]
    assert "py:calc.core.stable_fn" not in entries
    branch = entries["py:calc.core.branch_fn"]
    assert branch.change == "modified" and branch.tests_head == [tid("test_branch")]
    sites = {site["predicate"]: site for site in branch.sites}
    # One decision, its condition edited: paired by the mapping, its counts side by side.
    assert set(sites) == {"x >= 0"}
    assert sites["x >= 0"]["change"] == "modified" and sites["x >= 0"]["was"] == "x > 0"
    assert sites["x >= 0"]["base"] == {"true": 0, "false": 1}
    assert sites["x >= 0"]["head"] == {"true": 1, "false": 0}
    assert branch.gaps == [f"decision outcome never observed: {sites['x >= 0']['site']} false"]


# --- repeats and unverified tests ------------------------------------------------------------

FLAKY_TESTS = """
import pathlib

from calc import core

COUNTER = pathlib.Path(__file__).parent / "counter.txt"


def test_clock():
    assert core.now() > 0


def test_alternating():
    assert core.alternate(COUNTER) >= 0


def test_steady():
    assert core.steady(1) == 2


def test_clock_and_real_change():
    assert core.now() > 0
    assert core.drifting(1) > 0


def test_child():
    core.child()
    assert core.drifting(2) > 0
"""

FLAKY = """
import subprocess
import sys
import time


def now():
    return time.time_ns()


def note(n):
    return n


def alternate(path):
    n = int(path.read_text()) + 1 if path.exists() else 0
    path.write_text(str(n))
    if n % 2:
        note(n)
    return 0


def steady(x):
    return x + 1


def drifting(x):
    return x


def child():
    # Without site (-S) the child never loads the recorder's hook: an unrecorded child.
    subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)
"""


class RecordedRepeats:
    """Base recorded twice and head twice, each pair from one commit."""

    def __init__(self, root: Path) -> None:
        key = root / "key"
        key.write_bytes(os.urandom(64))
        base = make_project(
            root / "base", {"calc/core.py": FLAKY, "tests/test_core.py": FLAKY_TESTS}
        )
        head = make_project(
            root / "head",
            {
                "calc/core.py": FLAKY.replace("    return x\n", "    return x + 1\n"),
                "tests/test_core.py": FLAKY_TESTS,
            },
        )
        self.base = [record(base, root / "store-base", key) for _ in range(2)]
        self.head = [record(head, root / "store-head", key) for _ in range(2)]
        self.diff = validated(
            diff_documents(
                self.base[0],
                self.head[0],
                base_rev="base",
                head_rev="head",
                base_repeats=self.base[1:],
                head_repeats=self.head[1:],
            )
        )


@pytest.fixture(scope="module")
def repeats(tmp_path_factory: pytest.TempPathFactory) -> RecordedRepeats:
    return RecordedRepeats(tmp_path_factory.mktemp("diff-repeats"))


@pytest.mark.slow  # records four times (the repeats fixture)
def test_a_value_that_differs_between_repeats_is_unstable_not_a_change(
    repeats: RecordedRepeats,
) -> None:
    test = by_id(repeats.diff)[tid("test_clock")]
    assert test.status == "unstable" and test.changes == []
    assert any(
        reason.startswith("unstable (base repeats): py:calc.core.now results")
        for reason in test.reasons
    ), test.reasons
    # Without the repeats the same difference would be reported as a change.
    alone = diff_documents(repeats.base[0], repeats.head[0], base_rev="b", head_rev="h")
    assert "result_changed" in kinds(by_id(alone)[tid("test_clock")])


@pytest.mark.slow  # records four times (the repeats fixture)
def test_a_call_made_on_every_other_run_is_unstable(repeats: RecordedRepeats) -> None:
    test = by_id(repeats.diff)[tid("test_alternating")]
    assert test.status == "unstable" and test.changes == []
    assert any("py:calc.core.note" in reason for reason in test.reasons), test.reasons


@pytest.mark.slow  # records four times (the repeats fixture)
def test_a_stable_test_next_to_unstable_ones_is_unchanged(repeats: RecordedRepeats) -> None:
    test = by_id(repeats.diff)[tid("test_steady")]
    assert test.status == "unchanged" and test.reasons == []


@pytest.mark.slow  # records four times (the repeats fixture)
def test_a_real_change_is_reported_apart_from_unstable_items(repeats: RecordedRepeats) -> None:
    test = by_id(repeats.diff)[tid("test_clock_and_real_change")]
    assert test.status == "changed"
    assert [(c.kind, c.symbol) for c in test.changes] == [
        ("result_changed", "py:calc.core.drifting")
    ]
    assert any(reason.startswith("unstable") for reason in test.reasons)


@pytest.mark.slow  # records four times (the repeats fixture)
def test_an_unverified_test_is_never_unchanged_and_keeps_its_changes(
    repeats: RecordedRepeats,
) -> None:
    test = by_id(repeats.diff)[tid("test_child")]
    assert test.status == "unverified"
    assert "base: call:untraced-subprocess:python" in test.reasons
    assert "head: call:untraced-subprocess:python" in test.reasons
    assert [(c.kind, c.symbol) for c in test.changes] == [
        ("result_changed", "py:calc.core.drifting")
    ]
    # Even diffed against itself, with nothing changed, it is not "unchanged".
    same = diff_documents(repeats.base[0], repeats.base[0], base_rev="b", head_rev="b")
    assert by_id(same)[tid("test_child")].status == "unverified"
    assert same.summary.unverified == 1


# --- stand-ins and drift ---------------------------------------------------------------------
# The recorder does not record substitution nodes yet, so these tests add them to the recorded
# documents (as `mock.patch("calc.core.<target>")` would produce them) and check that the
# edited documents are still valid genome documents.


def with_stand_in(
    document: dict[str, Any], test_name: str, target: str, **fields: Any
) -> dict[str, Any]:
    document = copy.deepcopy(document)
    test = next(t for t in document["tests"] if t["id"] == tid(test_name))
    nodes = test["phases"]["call"]["nodes"]
    root = next(n for n in nodes if n["parent"] is None and n["symbol"].endswith(test_name))
    node = {
        "id": len(nodes),
        "parent": root["id"],
        "type": "substitution",
        "mechanism": "mock_object",
        "substitute": "unittest.mock.MagicMock",
        "claimed_target": target,
        "relation": "patch-target",
        "path": "()",
        "count": 1,
        "args": [],
        "exits": {"returned": 1},
        "signature_mismatch": False,
    }
    node.update(fields)
    nodes.append(node)
    GenomeDocument.model_validate(document)
    return document


def test_stand_ins_added_removed_and_changed(rec: Recorded) -> None:
    base = with_stand_in(rec.base, "test_unchanged", "py:calc.core.outcome_fn")
    base = with_stand_in(base, "test_unchanged", "py:calc.core.exit_fn", count=1)
    head = with_stand_in(rec.base, "test_unchanged", "py:calc.core.added_fn")
    head = with_stand_in(
        head,
        "test_unchanged",
        "py:calc.core.exit_fn",
        count=2,
        exits={"returned": 2},
        signature_mismatch=True,
    )
    diff = validated(diff_documents(base, head, base_rev="b", head_rev="h"))
    test = by_id(diff)[tid("test_unchanged")]
    assert test.status == "changed"
    found = {(c.kind, c.symbol): c for c in test.changes}
    assert set(found) == {
        ("stand_in_removed", "py:calc.core.outcome_fn"),
        ("stand_in_added", "py:calc.core.added_fn"),
        ("stand_in_changed", "py:calc.core.exit_fn"),
    }
    changed = found[("stand_in_changed", "py:calc.core.exit_fn")]
    assert changed.base == {"count": 1, "signature_mismatch": False}
    assert changed.head == {"count": 2, "signature_mismatch": True}
    assert changed.path[-1] == "stand-in[mock_object py:calc.core.exit_fn ()]"


def test_a_stand_in_for_code_that_behaves_differently_elsewhere_drifted(rec: Recorded) -> None:
    base = with_stand_in(rec.base, "test_unchanged", "py:calc.core.result_fn")
    head = with_stand_in(rec.head, "test_unchanged", "py:calc.core.result_fn")
    diff = validated(diff_documents(base, head, base_rev="b", head_rev="h"))
    (drift,) = diff.drift
    assert drift.claimed_target == "py:calc.core.result_fn"
    assert drift.tests == [tid("test_unchanged")]
    assert drift.evidence == [
        f"behaviour: {tid('test_result')} runs the real code: "
        + describe(next(c for c in by_id(diff)[tid("test_result")].changes))
    ]
    # The test with the stand-in itself saw nothing change: that is what drift warns about.
    assert by_id(diff)[tid("test_unchanged")].status == "unchanged"


def test_a_stand_in_for_changed_code_drifted(rec: Recorded) -> None:
    base = with_stand_in(rec.base, "test_unchanged", "py:calc.core.removed_fn")
    base = with_stand_in(base, "test_unchanged", "py:calc.core.stable_fn")
    head = with_stand_in(rec.head, "test_unchanged", "py:calc.core.removed_fn")
    head = with_stand_in(head, "test_unchanged", "py:calc.core.stable_fn")
    code = code_changes_from_sources(
        {"calc/core.py": BASE}, {"calc/core.py": HEAD}, lambda path: "calc.core"
    )
    diff = validated(diff_documents(base, head, base_rev="b", head_rev="h", code_changes=code))
    assert [d.claimed_target for d in diff.drift] == ["py:calc.core.removed_fn"]
    # The one test that runs removed_fn for real behaves the same: the code line says so,
    # for the reviewer to weigh a change no test saw against one a test did.
    assert diff.drift[0].evidence == [
        "code: py:calc.core.removed_fn modified; the 1 test that runs it behaves the same "
        "(restructured)",
        "code: py:calc.core.legacy removed (called by the real py:calc.core.removed_fn at base)"
        "; the 1 test that runs it behaves the same (restructured)",
    ]


def test_code_reached_only_through_a_stand_in_is_a_gap(rec: Recorded) -> None:
    head = with_stand_in(rec.head, "test_unchanged", "py:calc.core.untested")
    code = code_changes_from_sources(
        {"calc/core.py": BASE}, {"calc/core.py": HEAD}, lambda path: "calc.core"
    )
    diff = validated(diff_documents(rec.base, head, base_rev="b", head_rev="h", code_changes=code))
    (entry,) = [e for e in diff.code_changes if e.symbol == "py:calc.core.untested"]
    assert entry.gaps == ["reached only through a stand-in"]
