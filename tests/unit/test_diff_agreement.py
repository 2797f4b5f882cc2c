"""Instability per field, and inside a field per member (#51.2), on synthesized recordings:
what every recording of base shows alike and every recording of head shows alike stays a
change beside what varies; what any recording of a side disagrees on stays unstable."""

from __future__ import annotations

from typing import Any

import genomes
from genomes import call

from diffgenome.analysis import models
from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.diff.verdict import FILE_DIGESTS_NOT_COMPARABLE
from diffgenome.analysis.models import GenomeDocument


def _file(name: str, digest: str) -> dict[str, Any]:
    return {
        "type": "file",
        "phase": "call",
        "path": f"<tmp>/{name}",
        "mode": "write",
        "digest": digest,
    }


def document(
    *,
    results: tuple[str, ...] = (),
    files: dict[str, str] | None = None,
    effects_revision: int = 3,
) -> dict[str, Any]:
    nodes = [
        call(0, None, "t"),
        call(
            1,
            0,
            "py:pkg.render",
            len(results) or 1,
            results=[{"shape": "str", "digest": digest} for digest in results],
        ),
    ]
    record = genomes.test_record("t.py::test", {"call": genomes.phase(nodes)})
    record["effects"] = [_file(name, digest) for name, digest in (files or {}).items()]
    doc = genomes.document([record], genomes.run("r", config={"effects": effects_revision}))
    GenomeDocument.model_validate(doc)
    return doc


def _diff(
    base: dict[str, Any],
    head: dict[str, Any],
    base_again: list[dict[str, Any]],
    head_again: list[dict[str, Any]],
) -> models.TestDiff:
    diff = diff_documents(
        base,
        head,
        base_rev="b",
        head_rev="h",
        base_confirmation=base_again,
        head_confirmation=head_again,
    )
    (test,) = diff.tests
    return test


def test_a_file_that_held_is_a_change_beside_one_stamped_with_the_time() -> None:
    def files(stamp: str, report: str) -> dict[str, Any]:
        return document(files={"stamp.txt": stamp, "report.txt": report})

    test = _diff(
        files("s0", "R1"),
        files("s1", "R2"),
        [files("s2", "R1"), files("s3", "R1")],
        [files("s4", "R2"), files("s5", "R2")],
    )
    assert test.status == "changed"
    [change] = test.changes
    assert change.kind == "file_changed"
    assert change.base == [_file("report.txt", "R1")]
    assert change.head == [_file("report.txt", "R2")]
    assert any(r.startswith("unstable (base confirmation)") and "stamp" in r for r in test.reasons)


def test_a_member_any_recording_of_a_side_disagrees_on_stays_unstable() -> None:
    def files(stamp: str, report: str) -> dict[str, Any]:
        return document(files={"stamp.txt": stamp, "report.txt": report})

    # One confirming recording of head wrote the base's report: not a change that held.
    test = _diff(
        files("s0", "R1"),
        files("s1", "R2"),
        [files("s2", "R1"), files("s3", "R1")],
        [files("s4", "R2"), files("s5", "R1")],
    )
    assert (test.status, test.changes) == ("unstable", [])


def test_a_value_that_held_is_a_change_beside_one_drawn_anew() -> None:
    test = _diff(
        document(results=("n0", "info")),
        document(results=("n1", "debug")),
        [document(results=("n2", "info")), document(results=("n3", "info"))],
        [document(results=("n4", "debug")), document(results=("n5", "debug"))],
    )
    assert test.status == "changed"
    [change] = test.changes
    assert (change.kind, change.base, change.head) == (
        "result_changed",
        [{"shape": "str", "digest": "info"}],
        [{"shape": "str", "digest": "debug"}],
    )


def test_a_side_recorded_once_proves_nothing_held() -> None:
    """A value drawn anew by each recording is in its one recording of head and in none of
    base's: with no second recording of head, that would read as held."""
    test = _diff(
        document(results=("n0",)),
        document(results=("n1",)),
        [document(results=("n2",)), document(results=("n3",))],
        [],
    )
    assert (test.status, test.changes) == ("unstable", [])


def test_files_digested_by_bytes_and_by_content_are_not_compared_as_equal_or_changed() -> None:
    old = document(files={"demo.tar.gz": "bytes"}, effects_revision=2)
    new = document(files={"demo.tar.gz": "content"})
    diff = diff_documents(old, new, base_rev="b", head_rev="h")
    (test,) = diff.tests
    assert test.status == "unverified" and test.may_hide_change
    assert FILE_DIGESTS_NOT_COMPARABLE in test.reasons
    # Both by content: a plain change.
    (test,) = diff_documents(
        document(files={"demo.tar.gz": "a"}), new, base_rev="b", head_rev="h"
    ).tests
    assert test.status == "changed"
    # A plain file has one digest under both revisions: equal is equal.
    (test,) = diff_documents(
        document(files={"demo.tar.gz": "content"}, effects_revision=2),
        new,
        base_rev="b",
        head_rev="h",
    ).tests
    assert test.status == "unchanged"
