"""The published formats: schema files match the models, readers refuse what they don't know."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import jsonschema
import pytest
from pydantic import BaseModel

from diffgenome.analysis import models
from diffgenome.analysis.models import GenomeDocument
from diffgenome.analysis.schema import SCHEMAS, schema_filename, schema_for, schema_text
from diffgenome.protocol import vocab
from diffgenome.protocol.formats import (
    DIFF_FORMAT,
    GENOME_FORMAT,
    GENOME_FORMATS_READ,
    VALUES,
    FormatError,
    check_comparable,
    check_format,
    check_genome_format,
    genome_format_of,
    values_of,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("literal", "words"),
    [
        (models.SymbolOrigin, vocab.SYMBOL_ORIGINS),
        (models.Outcome, vocab.TEST_OUTCOMES),
        (models.Phase, vocab.PHASES),
        (models.Plane, vocab.PLANES),
        (models.Fidelity, vocab.FIDELITIES),
        (models.Mechanism, vocab.MECHANISMS),
        (models.Relation, vocab.RELATIONS),
        (models.DecisionKind, vocab.DECISION_KINDS),
        (models.TestStatus, vocab.TEST_STATUSES),
        (models.ChangeKind, vocab.CHANGE_KINDS),
        (models.CodeChangeKind, vocab.CODE_CHANGE_KINDS),
    ],
)
def test_every_literal_of_the_models_is_its_vocabulary(
    literal: Any, words: tuple[str, ...]
) -> None:
    assert get_args(literal) == words


@pytest.mark.parametrize(
    ("model", "name", "words"),
    [
        (models.TestDiff, "status", vocab.TEST_STATUSES),
        (models.Change, "kind", vocab.CHANGE_KINDS),
        (models.CodeChange, "change", vocab.CODE_CHANGE_KINDS),
        (models.CauseGroup, "change", vocab.CODE_CHANGE_KINDS),
        (models.StateFact, "when", vocab.STATE_MOMENTS),
    ],
)
def test_the_diff_models_say_statuses_and_change_kinds_by_their_vocabulary(
    model: type[BaseModel], name: str, words: tuple[str, ...]
) -> None:
    """The diff's status and change-kind fields are typed by the Literals checked above,
    so a word added to vocab and not to a model (or the other way round) fails here."""
    annotation = model.model_fields[name].annotation
    if get_origin(annotation) is not Literal:  # optional: the Literal or None
        (annotation,) = (arg for arg in get_args(annotation) if arg is not type(None))
    assert get_origin(annotation) is Literal and get_args(annotation) == words


def test_the_diff_summary_counts_every_status() -> None:
    # Besides the statuses: how many tests, how many confirmed, and the changed tests by
    # reach (``seen``, ``internal``: docs/diffing.md, "Reach"), and the unchanged ones
    # ``--selective`` did not run at head (``carried``).
    others = ("tests", "confirmed", "seen", "internal", "carried")
    counted = [name for name in models.DiffSummary.model_fields if name not in others]
    assert tuple(counted) == vocab.TEST_STATUSES


def test_the_models_formats_are_the_protocols() -> None:
    assert get_args(models.GenomeDocument.model_fields["format"].annotation) == GENOME_FORMATS_READ
    assert models.GenomeDocument.model_fields["format"].default == GENOME_FORMAT
    assert get_args(models.DiffDocument.model_fields["format"].annotation) == (DIFF_FORMAT,)
    assert models.DiffDocument.model_fields["format"].default == DIFF_FORMAT


def test_the_node_types_of_the_models_are_the_vocabulary() -> None:
    node_types = tuple(
        get_args(node.model_fields["type"].annotation)[0]
        for node in (models.CallNode, models.SubstitutionNode, models.OsEventNode)
    )
    assert node_types == vocab.NODE_TYPES


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_committed_schema_matches_models(name: str) -> None:
    committed = (ROOT / "docs" / "schema" / schema_filename(name)).read_text()
    assert committed == schema_text(name), (
        f"docs/schema/{schema_filename(name)} drifted from the models: run `make schema`"
    )


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_cli_prints_the_committed_schema(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "diffgenome.analysis.cli", "schema", name],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (ROOT / "docs" / "schema" / schema_filename(name)).read_text()


def _protocol_example() -> dict[str, object]:
    text = (ROOT / "docs" / "protocol.md").read_text()
    match = re.search(r"<!-- example:genome -->\s*```json\n(.*?)```", text, re.S)
    assert match, "docs/protocol.md lost its marked genome example"
    document: dict[str, object] = json.loads(match.group(1))
    return document


def test_protocol_doc_example_validates_against_printed_schema() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "diffgenome.analysis.cli", "schema", "genome"],
        capture_output=True,
        text=True,
        check=True,
    )
    schema = json.loads(done.stdout)
    example = _protocol_example()
    jsonschema.validate(example, schema)
    GenomeDocument.model_validate(example)


def test_schema_rejects_a_broken_document() -> None:
    """The schema check above can fail: a node without its type is refused."""
    example = _protocol_example()
    broken = json.loads(json.dumps(example))
    tests = broken["tests"]
    assert isinstance(tests, list)
    del tests[0]["phases"]["call"]["nodes"][0]["type"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema_for("genome"))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("diffgenome-genome/3", "unsupported version diffgenome-genome/3"),
        ("diffgenome-diff/1", "this is a 'diffgenome-diff' document"),
        ("nonsense", "not a diffgenome-genome document"),
        (None, "not a diffgenome-genome document"),
        ("diffgenome-genome/x", "not a diffgenome-genome document"),
    ],
)
def test_readers_refuse_unknown_formats_in_one_line(value: object, message: str) -> None:
    with pytest.raises(FormatError) as caught:
        check_format(value, GENOME_FORMAT)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_known_format_is_accepted() -> None:
    check_format(GENOME_FORMAT, GENOME_FORMAT)


def test_genome_1_is_still_read_but_never_compared_with_genome_2() -> None:
    check_genome_format("diffgenome-genome/1")
    check_genome_format("diffgenome-genome/2")
    with pytest.raises(FormatError):
        check_genome_format("diffgenome-genome/3")
    check_comparable("diffgenome-genome/1", "diffgenome-genome/1")
    with pytest.raises(FormatError) as caught:
        check_comparable("diffgenome-genome/1", "diffgenome-genome/2")
    message = str(caught.value)
    assert "record both again" in message and "\n" not in message


def test_runs_of_two_values_revisions_are_never_compared() -> None:
    """Values revision 2 gave standard-library values digests where 1 had null: a run of
    each would differ on every such value."""
    assert values_of({}) == 1
    assert values_of({"values": 7}) == VALUES == 7
    assert values_of({"values": True}) == 1
    check_comparable(GENOME_FORMAT, GENOME_FORMAT, base_values=1, head_values=1)
    with pytest.raises(FormatError) as caught:
        check_comparable(GENOME_FORMAT, GENOME_FORMAT, base_values=1, head_values=VALUES)
    message = str(caught.value)
    assert "values revision 1" in message and "record both again" in message
    assert "\n" not in message


def test_a_run_that_does_not_name_its_format_is_genome_1() -> None:
    assert genome_format_of({}) == "diffgenome-genome/1"
    assert genome_format_of({"genome_format": "diffgenome-genome/2"}) == GENOME_FORMAT


def test_the_protocol_doc_lists_every_unverified_reason_word() -> None:
    """Readers match on the word; a word the recorder writes and the doc does not explain is a
    reason no one else can read."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    table = text.split("<!-- unverified-reasons -->")[1].split("<!-- /unverified-reasons -->")[0]
    listed = re.findall(r"^\s*\| `([a-z-]+)` \|", table, flags=re.M)
    assert listed == list(vocab.UNVERIFIED_REASONS)


def test_every_run_reason_word_is_in_the_protocol_doc() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `incomplete_reasons` |"))
    assert re.findall(r"`([a-z-]+)`", row) == list(vocab.RUN_REASONS)
