"""The seam check end to end: each way of patching a method, each way of calling it.

The example project tests/projects/seams patches ``Store.put`` and friends on the class, on an
instance, through a string target, with and without autospec, with monkeypatched lambdas,
overriding subclasses and functions stored on instances, and calls them through an instance,
through the class, as static and class methods. It is recorded by real ``pytest --genome``
sessions with both cores (their genomes must be identical), and what each stand-in's seam
says is checked against what the real method would have done with the same call.

A second commit changes the real ``Store.put`` signature without touching the stand-ins:
``diffgenome diff`` must report the changed seams and name the stand-ins that drifted.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from e2e.helpers import (
    BASE_ARGS,
    PY,
    GitRepo,
    Recording,
    clean_env,
    make_project,
    record_full,
)

T = "tests/test_seams.py::"
PUT = "py:app.store.Store.put"


@pytest.fixture(scope="module")
def both_cores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Recording]:
    project = make_project(tmp_path_factory.mktemp("seams"), {}, base="seams")
    key = project.parent / "key"
    key.write_bytes(os.urandom(32))
    recordings: dict[str, Recording] = {}
    for core in ("c", "python"):
        store = f".dg-{core}"
        recordings[core] = record_full(
            project,
            f"--genome-key-file={key}",
            f"--genome-store={store}",
            "-rA",
            env={"DIFFGENOME_CORE": core},
            store=store,
        )
    return recordings


@pytest.fixture(scope="module")
def recorded(both_cores: dict[str, Recording]) -> dict[str, Any]:
    return both_cores["c"].doc


def _stand_ins(document: dict[str, Any], test: str) -> list[dict[str, Any]]:
    found = next(t for t in document["tests"] if t["id"] == T + test)
    return [n for n in found["phases"]["call"]["nodes"] if n["type"] == "substitution"]


def _seam_of(document: dict[str, Any], test: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one stand-in of ``test`` that claims a target, and its seam."""
    (node,) = [n for n in _stand_ins(document, test) if n["claimed_target"]]
    assert "seam" in node, node
    return node, node["seam"]


def _genomes(recording: Recording) -> str:
    return json.dumps({k: v for k, v in recording.doc.items() if k != "run"}, sort_keys=True)


def test_both_cores_record_identical_seams(both_cores: dict[str, Recording]) -> None:
    assert "pure-Python core" in both_cores["python"].output
    assert '"seam"' in _genomes(both_cores["c"])
    assert _genomes(both_cores["c"]) == _genomes(both_cores["python"])


def test_every_test_passed_verified(recorded: dict[str, Any]) -> None:
    assert {t["outcome"] for t in recorded["tests"]} == {"passed"}
    assert {t["id"]: t["unverified_reasons"] for t in recorded["tests"] if not t["verified"]} == {}
    assert len([t for t in recorded["tests"] if t["id"].startswith(T)]) == 30


# (test, mechanism, relation, readings, mismatch): the expectation is what the real method
# would have done with the same call. "ambiguous": the first argument is a Store, so a call
# through the class fits as well as one through an instance.
MOCKS = [
    ("test_class_patch_instance_call", "patch-target", ["instance"], False),
    ("test_class_patch_instance_call_rejected", "patch-target", ["instance"], True),
    ("test_class_patch_class_call", "patch-target", ["ambiguous"], False),
    ("test_class_patch_class_call_rejected", "patch-target", ["ambiguous"], True),
    ("test_string_patch_instance_call", "patch-target", ["instance"], False),
    ("test_string_patch_instance_call_rejected", "patch-target", ["instance"], True),
    ("test_mocker_patch_object", "patch-target", ["instance"], False),
    ("test_subclass_patch_inherited_method", "patch-target", ["instance"], False),
    ("test_keyword_only_argument", "patch-target", ["instance"], False),
    ("test_ambiguous_first_argument_of_the_class", "patch-target", ["ambiguous"], False),
    ("test_instance_patch", "patch-target", ["instance"], False),
    ("test_instance_patch_rejected", "patch-target", ["instance"], True),
    ("test_instance_autospec", "patch-target", ["instance"], False),
]


@pytest.mark.parametrize(("test", "relation", "readings", "mismatch"), MOCKS)
def test_a_mock_of_a_method_is_read_the_way_it_was_called(
    recorded: dict[str, Any], test: str, relation: str, readings: list[str], mismatch: bool
) -> None:
    node, seam = _seam_of(recorded, test)
    assert (node["mechanism"], node["relation"]) == ("mock_object", relation)
    assert seam["readings"] == readings
    assert seam["stand_in"] is None
    assert node["signature_mismatch"] is mismatch
    assert any(p.startswith("call: ") for p in seam["problems"]) is mismatch


def test_the_rejected_call_says_why(recorded: dict[str, Any]) -> None:
    _, seam = _seam_of(recorded, "test_class_patch_instance_call_rejected")
    assert seam == {
        "target": "(self, key, value)",
        "stand_in": None,
        "readings": ["instance"],
        "problems": ["call: too many positional arguments"],
    }


@pytest.mark.parametrize(
    ("test", "target", "reading"),
    [
        ("test_staticmethod_patch", "py:app.store.Store.norm", "static"),
        ("test_classmethod_patch", "py:app.store.Store.build", "classmethod"),
        ("test_autospec_instance_and_class_call", PUT, "method"),
    ],
)
def test_static_class_and_autospecced_methods_fit_through_instance_and_class(
    recorded: dict[str, Any], test: str, target: str, reading: str
) -> None:
    nodes = [n for n in _stand_ins(recorded, test) if n["claimed_target"] == target]
    assert len(nodes) == 2  # one under the instance caller, one under the class caller
    for node in nodes:
        assert node["seam"]["readings"] == [reading]
        assert node["signature_mismatch"] is False


# (test, mechanism, relation, stand-in signature, readings, problems)
FUNCTIONS = [
    ("test_monkeypatch_lambda_fits", "stub", "monkeypatch", "(self, key, value)", "method", []),
    (
        "test_monkeypatch_lambda_drifted",
        "stub",
        "monkeypatch",
        "(self, key)",
        "method",
        ["call: missing a required argument: 'value'", "missing parameter value"],
    ),
    (
        "test_monkeypatch_inherited_method",
        "stub",
        "monkeypatch",
        "(self, key)",
        "method",
        ["call: missing a required argument: 'value'", "missing parameter value"],
    ),
    ("test_monkeypatch_on_instance", "stub", "monkeypatch", "(key, value)", "instance", []),
    ("test_override_fits", "fake", "override", "(self, key, value)", "method", []),
    (
        "test_override_drifted",
        "fake",
        "override",
        "(self, key)",
        "method",
        ["call: missing a required argument: 'value'", "missing parameter value"],
    ),
    (
        "test_instance_attribute_function_fits",
        "stub",
        "instance-attribute",
        "(key, value)",
        "instance",
        [],
    ),
    (
        "test_instance_attribute_function_drifted",
        "stub",
        "instance-attribute",
        "(key)",
        "instance",
        ["call: missing a required argument: 'value'", "missing parameter value"],
    ),
    ("test_monkeypatch_staticmethod_with_function", "stub", "monkeypatch", "(key)", "class", []),
    # A catch-all is not faulted for taking the parameters; its calls are checked.
    ("test_override_catch_all_fits", "fake", "override", "(self, *args, **kwargs)", "method", []),
    (
        "test_override_catch_all_called_wrongly",
        "fake",
        "override",
        "(self, *args, **kwargs)",
        "method",
        ["call: too many positional arguments"],
    ),
    # A test class's bound method already holds its own self: left out of its signature.
    (
        "TestBoundFake::test_bound_method_fits",
        "stub",
        "monkeypatch",
        "(key, value)",
        "instance",
        [],
    ),
]


@pytest.mark.parametrize(
    ("test", "mechanism", "relation", "stand_in", "reading", "problems"), FUNCTIONS
)
def test_stubs_and_fakes_are_checked_against_the_real_signature(
    recorded: dict[str, Any],
    test: str,
    mechanism: str,
    relation: str,
    stand_in: str,
    reading: str,
    problems: list[str],
) -> None:
    node, seam = _seam_of(recorded, test)
    assert (node["mechanism"], node["relation"]) == (mechanism, relation)
    assert node["claimed_target"] in (PUT, "py:app.store.Store.norm")
    assert seam["stand_in"] == stand_in
    assert seam["readings"] == [reading]
    assert seam["problems"] == problems
    assert node["signature_mismatch"] is bool(problems)


def test_a_stub_with_a_changed_default_is_a_mismatch(recorded: dict[str, Any]) -> None:
    node, seam = _seam_of(recorded, "test_monkeypatch_default_drifted")
    assert seam["target"] == "(url, timeout=5)" and seam["stand_in"] == "(url, timeout=10)"
    assert seam["problems"] == [
        "default of timeout differs: 5 in the real target, 10 in the stand-in"
    ]
    assert node["signature_mismatch"] is True


def test_a_catch_all_stub_is_checked_call_by_call(recorded: dict[str, Any]) -> None:
    node, seam = _seam_of(recorded, "test_monkeypatch_catch_all_called_wrongly")
    assert seam["stand_in"] == "(*args, **kwargs)"
    assert seam["problems"] == ["call: too many positional arguments"]
    assert node["signature_mismatch"] is True


def test_the_recorder_says_nothing_as_a_warning(both_cores: dict[str, Recording]) -> None:
    """The project sets filterwarnings=error (every test passed above), and nothing of the
    seam check reaches the output either."""
    for recording in both_cores.values():
        assert "Warning: diffgenome" not in recording.output
        assert "signature" not in recording.output


# -- a changed seam in a diff --------------------------------------------------------------

PUT_V1 = """    def put(self, key, value):
        return f"real:{key}={value}"
"""
PUT_V2 = """    def put(self, key, value, ttl):
        return f"real:{key}={value}/{ttl}"
"""


@pytest.fixture(scope="module")
def seam_diff(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    repo = make_project(tmp_path_factory.mktemp("seamdiff"), {}, base="seams")
    source = repo / "app" / "store.py"
    text = source.read_text()
    assert PUT_V1 in text
    source.write_text(text.replace(PUT_V1, PUT_V2))
    GitRepo(repo).commit_tracked("put takes a ttl")
    command = [PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD", "--json", "-"]
    done = subprocess.run(
        [*command, "--fail-on", "never", "--", *BASE_ARGS],
        cwd=repo,
        env=clean_env({"COLUMNS": "200"}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def _changes(diff: dict[str, Any], test: str) -> list[dict[str, Any]]:
    found = next(t for t in diff["tests"] if t["id"] == T + test)
    return list(found["changes"])


def test_a_changed_real_signature_changes_the_seam_of_a_mock(seam_diff: dict[str, Any]) -> None:
    (change,) = [
        c for c in _changes(seam_diff, "test_class_patch_instance_call") if c["symbol"] == PUT
    ]
    assert change["kind"] == "stand_in_changed"
    assert change["base"]["signature_mismatch"] is False
    assert change["head"]["signature_mismatch"] is True
    assert change["base"]["seam"]["target"] == "(self, key, value)"
    assert change["head"]["seam"]["target"] == "(self, key, value, ttl)"
    assert change["head"]["seam"]["problems"] == ["call: missing a required argument: 'ttl'"]


def test_a_fake_that_fitted_no_longer_fits(seam_diff: dict[str, Any]) -> None:
    (change,) = [
        c for c in _changes(seam_diff, "test_monkeypatch_lambda_fits") if c["symbol"] == PUT
    ]
    assert change["base"] == {
        "signature_mismatch": False,
        "seam": {
            "target": "(self, key, value)",
            "stand_in": "(self, key, value)",
            "readings": ["method"],
            "problems": [],
        },
    }
    assert change["head"]["signature_mismatch"] is True
    assert "missing parameter ttl" in change["head"]["seam"]["problems"]


def test_drift_names_the_stand_ins_whose_signature_stayed(seam_diff: dict[str, Any]) -> None:
    (drift,) = [d for d in seam_diff["drift"] if d["claimed_target"] == PUT]
    signature = [e for e in drift["evidence"] if e.startswith("signature: ")]
    change = "(self, key, value) \u2192 (self, key, value, ttl)"
    assert (
        f"signature: {PUT} {change}; stand-in unittest.mock.MagicMock unchanged "
        "(a mock: accepts any call)" in signature
    )
    assert (
        f"signature: {PUT} {change}; stand-in py:tests.test_seams.FittingStore.put unchanged "
        "(still (self, key, value))"
    ) in signature
    # Other targets kept their signatures: no signature evidence for them.
    others = [d for d in seam_diff["drift"] if d["claimed_target"] != PUT]
    assert not any(e.startswith("signature: ") for d in others for e in d["evidence"])
