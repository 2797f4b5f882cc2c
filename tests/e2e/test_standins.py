"""Stand-ins end to end: each mock kind and its claim, fakes, stubs, monkeypatch, patch.dict.

Runs the example project tests/projects/mocks under `pytest --genome` in a subprocess and reads
the exported genome. Claims must come from facts (spec, the patcher's saved original, the
attribute a monkeypatch replaced, a shadowed class attribute, an overridden method), never
from names: the duck-typed fake and the spec-less MagicMock must claim nothing.
"""

from __future__ import annotations

import json
import unittest.mock
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from e2e.helpers import Recording, make_project, record_full, run_pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "diffgenome-genome-2.schema.json").read_text())
T = "tests/test_mocks.py::"


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    project = make_project(tmp_path_factory.mktemp("standins"), {}, base="mocks")
    return record_full(project, "-rA")


@pytest.fixture(scope="module")
def recorded(recording: Recording) -> dict[str, Any]:
    return recording.doc


def _stand_ins(document: dict[str, Any], test_id: str) -> list[dict[str, Any]]:
    test = next(t for t in document["tests"] if t["id"] == test_id)
    return [n for n in test["phases"]["call"]["nodes"] if n["type"] == "substitution"]


def _claims(document: dict[str, Any], test_id: str) -> set[tuple[str, str | None, str, str]]:
    return {
        (n["mechanism"], n["claimed_target"], n["relation"], n["path"])
        for n in _stand_ins(document, test_id)
    }


def test_export_validates_and_every_test_is_verified(recorded: dict[str, Any]) -> None:
    jsonschema.validate(recorded, SCHEMA)
    unverified = {t["id"]: t["unverified_reasons"] for t in recorded["tests"] if not t["verified"]}
    assert unverified == {}


@pytest.mark.parametrize(
    ("test", "claim"),
    [
        ("test_patch_decorator_function", ("mock_object", "py:app.net.fetch", "patch-target", "")),
        ("test_patch_object_decorator", ("mock_object", "py:app.net.fetch", "patch-target", "")),
        ("test_mocker", ("mock_object", "py:app.net.fetch", "patch-target", "")),
        ("test_patch_multiple", ("mock_object", "py:app.net.fetch", "patch-target", "")),
        (
            "TestClassDecorator::test_method",
            ("mock_object", "py:app.net.fetch", "patch-target", ""),
        ),
        ("test_autospec_instance", ("mock_object", "py:app.net.Client.get", "spec", "")),
        ("test_autospec_function", ("mock_object", "py:app.net.fetch", "patch-target", "")),
        ("test_spec_mock", ("mock_object", "py:app.net.Client.get", "spec", "get")),
        ("test_async_mock", ("mock_object", "py:app.net.AsyncClient.get", "spec", "get")),
        (
            "test_instance_attribute_method",
            ("mock_object", "py:app.net.Service.ping", "instance-attribute", ""),
        ),
        ("test_patch_dict", ("interposition", "py:app.net.CONFIG", "patch-target", "")),
        ("test_monkeypatch", ("stub", "py:app.net.fetch", "monkeypatch", "")),
        ("test_fake_subclass", ("fake", "py:app.net.Client.get", "override", "")),
        ("test_duck_fake", ("fake", None, "none", "")),
    ],
)
def test_each_stand_in_claims_what_the_facts_say(
    recorded: dict[str, Any], test: str, claim: tuple[str, str | None, str, str]
) -> None:
    assert claim in _claims(recorded, T + test)


def test_autospec_class_claims_the_class_and_its_methods(recorded: dict[str, Any]) -> None:
    claims = _claims(recorded, T + "test_autospec_class")
    assert ("mock_object", "py:app.net.Client", "patch-target", "") in claims
    assert ("mock_object", "py:app.net.Client.get", "spec", "") in claims


def test_spec_less_mock_claims_nothing(recorded: dict[str, Any]) -> None:
    nodes = _stand_ins(recorded, T + "test_magicmock_no_spec")
    assert nodes
    assert all(n["claimed_target"] is None and n["relation"] == "none" for n in nodes)
    assert any(n["path"] == "get" and n["count"] == 2 for n in nodes)


def test_stand_in_hangs_under_the_in_scope_caller(recorded: dict[str, Any]) -> None:
    test = next(t for t in recorded["tests"] if t["id"] == T + "test_autospec_instance")
    nodes = {n["id"]: n for n in test["phases"]["call"]["nodes"]}
    stand_in = next(n for n in nodes.values() if n["type"] == "substitution")
    assert nodes[stand_in["parent"]]["symbol"] == "py:app.net.use_client"
    assert stand_in["count"] == 2
    assert stand_in["exits"] == {"returned": 2}
    assert len(stand_in["args"]) == 2  # "a" and "b": two distinct argument values


def test_side_effect_code_hangs_under_the_stand_in(recorded: dict[str, Any]) -> None:
    test = next(
        t for t in recorded["tests"] if t["id"] == T + "test_side_effect_runs_under_stand_in"
    )
    nodes = {n["id"]: n for n in test["phases"]["call"]["nodes"]}
    fetch = next(n for n in nodes.values() if n.get("symbol") == "py:app.net.fetch")
    fake_get = nodes[fetch["parent"]]
    assert fake_get["symbol"].endswith("fake_get")
    assert nodes[fake_get["parent"]]["type"] == "substitution"
    assert nodes[fake_get["parent"]]["claimed_target"] == "py:app.net.Client.get"


def test_signature_mismatch_marks_calls_the_real_target_would_reject(
    recorded: dict[str, Any],
) -> None:
    nodes = _stand_ins(recorded, T + "test_patch_start_stop_spec_less_mismatch")
    by_parent_symbol = {n["signature_mismatch"] for n in nodes}
    assert by_parent_symbol == {True, False}
    for test in ("test_patch_decorator_function", "test_mocker", "test_monkeypatch"):
        assert not any(n["signature_mismatch"] for n in _stand_ins(recorded, T + test))


def test_outcomes_are_the_same_without_genome(recording: Recording, tmp_path: Path) -> None:
    plain = run_pytest(make_project(tmp_path, {}, base="mocks"), "-rA")
    assert plain.returncode == 0
    passed = sorted(line for line in plain.stdout.splitlines() if line.startswith("PASSED"))
    recorded_passed = sorted(
        line for line in recording.proc.stdout.splitlines() if line.startswith("PASSED")
    )
    assert passed == recorded_passed and len(passed) == 20


def test_hooks_are_restored_and_identity_preserved(pytester: pytest.Pytester) -> None:
    """In-process session: afterwards every hooked attribute is the original object again."""
    before = {
        "call": unittest.mock.CallableMixin.__dict__["_mock_call"],
        "spec": unittest.mock.NonCallableMock.__dict__["_mock_add_spec"],
        "enter": unittest.mock._patch.__dict__["__enter__"],
        "dict": unittest.mock._patch_dict.__dict__["_patch_dict"],
        "patch": unittest.mock.patch,
        "patch.object": unittest.mock.patch.object,
    }
    import _pytest.capture
    import _pytest.monkeypatch

    setattr_before = _pytest.monkeypatch.MonkeyPatch.__dict__["setattr"]
    readouterr_before = _pytest.capture.CaptureFixture.__dict__["readouterr"]
    pytester.makepyfile(
        test_x="""
        from unittest import mock
        from _pytest.capture import CaptureFixture
        def test_x(monkeypatch, capsys):
            assert mock.CallableMixin.__dict__["_mock_call"].__name__ == "_mock_call"
            assert hasattr(mock.CallableMixin.__dict__["_mock_call"], "__wrapped__")
            with mock.patch("os.getcwd", return_value="/"):
                pass
            assert hasattr(CaptureFixture.__dict__["readouterr"], "__wrapped__")
            print("seen")
            assert capsys.readouterr().out == "seen\\n"
        """
    )
    result = pytester.runpytest_inprocess("--genome", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    after = {
        "call": unittest.mock.CallableMixin.__dict__["_mock_call"],
        "spec": unittest.mock.NonCallableMock.__dict__["_mock_add_spec"],
        "enter": unittest.mock._patch.__dict__["__enter__"],
        "dict": unittest.mock._patch_dict.__dict__["_patch_dict"],
        "patch": unittest.mock.patch,
        "patch.object": unittest.mock.patch.object,
    }
    assert after == before
    assert _pytest.monkeypatch.MonkeyPatch.__dict__["setattr"] is setattr_before
    assert _pytest.capture.CaptureFixture.__dict__["readouterr"] is readouterr_before
