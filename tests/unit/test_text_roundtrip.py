"""Any text a test hands the recorder survives record -> store -> read -> export -> diff (#50).

click's suite passes undecodable file names through ``surrogateescape``; one lone surrogate
in one effect once cost every test of the run. The property: whatever code points a string
field holds (lone surrogates, NUL, controls, very long text), the store keeps it, the reader
and the export give it back identical (a test id: with its lone surrogates written as their
escapes, docs/protocol.md "Text"), and the diff compares, renders and writes it.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import genomes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from diffgenome.analysis.cli import main
from diffgenome.analysis.delivery import diff_json
from diffgenome.analysis.diff import diff_documents
from diffgenome.analysis.report import render_markdown, render_terminal
from diffgenome.protocol.jsontext import canonical_json, escape_surrogates
from diffgenome.store.reader import StoreReader
from diffgenome.store.writer import StoreWriter

# Every code point, lone surrogates included (hypothesis leaves category Cs out by default).
ANY_TEXT = st.text(st.characters(exclude_categories=()), min_size=1, max_size=40)
TEXT = st.one_of(
    ANY_TEXT,
    st.sampled_from(["\udcff", "f\udcff.txt", "\ud800x\udfff", "nul\x00x", "\x1b[31mred"]),
    ANY_TEXT.map(lambda t: t * 500),  # long text
)


def record_of(text: str, digest: str = "d1") -> dict[str, Any]:
    """A test record carrying ``text`` in every string field a recorder fills from user code."""
    nodes = [
        genomes.call(
            0,
            None,
            "py:pkg.mod.f",
            args=[{"shape": f"name={text}", "digest": digest, "preview": text}],
            results=[{"shape": "str", "digest": "d2", "preview": text}],
        )
    ]
    branches = [genomes.branch(0, "py:pkg.mod.f/if[0]", f"x == {text!r}", 1, 0)]
    phases = {"call": genomes.phase(nodes, branches), "setup": genomes.phase()}
    return genomes.test_record(
        f"tests/test_x.py::test_a[{text}]",
        phases,
        verified=False,
        unverified_reasons=[f"call:untraced-subprocess:{text}"],
        effects=[
            {"type": "file", "phase": "call", "mode": "write", "path": f"<tmp>/{text}"},
            {"type": "output", "phase": "call", "stream": "stdout", "digest": "o1", "lines": 1},
            {
                "type": "log",
                "phase": "call",
                "logger": text,
                "level": "WARNING",
                "template": text,
                "template_digest": "t1",
                "args_digest": "a1",
                "count": 1,
            },
            {"type": "environ", "phase": "call", "change": "set", "name": text, "digest": "e1"},
        ],
        warnings=[
            {
                "category": f"pkg.{text}",
                "origin": f"<root>/{text}",
                "message": text,
                "message_digest": "m1",
                "count": 1,
            }
        ],
        recorder_note={text: text},
    )


def store_run(store: Path, run_id: str, record: dict[str, Any]) -> None:
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(
            genomes.run(run_id, config={"preview": True}, python="CPython 3.12.1")
            | {"selection": ["tests"]}
        )
        writer.join_run(run_id, "main")
        writer.add_tests(run_id, "main", [record])
        writer.leave_run(run_id, "main", True, [])
        writer.finish_run(run_id, True, [], "2026-01-01T00:00:00Z")


def as_stored(record: dict[str, Any]) -> dict[str, Any]:
    """What the store gives back: the record, its test id's lone surrogates escaped."""
    out = copy.deepcopy(record)
    out["id"] = escape_surrogates(out["id"])
    return out


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=TEXT)
def test_every_string_field_survives_record_store_read_export_and_diff(
    tmp_path_factory: Any, text: str
) -> None:
    folder = tmp_path_factory.mktemp("text")
    store = folder / ".diffgenome"
    record = record_of(text)
    store_run(store, "run-1", record)
    store_run(store, "run-2", record_of(text, digest="d9"))

    with StoreReader.open(str(store)) as reader:
        base, head = reader.document("run-1"), reader.document("run-2")
    (read,) = base["tests"]
    assert read == as_stored(record)
    # The store's own JSON is valid UTF-8 whatever the text held.
    canonical_json(read).encode("utf-8")

    exported = folder / "run.json"
    argv = ["export", "run-1", "--with-previews", "-o", str(exported), "--store", str(store)]
    assert main(argv) == 0
    assert json.loads(exported.read_text(encoding="utf-8"))["tests"][0] == as_stored(record)
    lines = folder / "run.jsonl"
    argv = ["export", "run-1", "--format", "jsonl", "--with-previews", "-o", str(lines)]
    assert main([*argv, "--store", str(store)]) == 0
    # JSON Lines end at "\n" only (str.splitlines would also split at U+0085 inside a string).
    (line,) = [json.loads(x) for x in lines.read_text(encoding="utf-8").split("\n") if x]
    assert {k: v for k, v in line.items() if k != "run_id"} == as_stored(record)

    same = diff_documents(base, base, base_rev="b", head_rev="h")
    assert {t.status for t in same.tests} == {"unverified"}  # its reason says so
    differs = diff_documents(base, head, base_rev="b", head_rev="h")
    written = json.loads(diff_json(differs))
    assert written == differs.model_dump(mode="json")
    assert [t["id"] for t in written["tests"]] == [escape_surrogates(record["id"])]
    out = io.StringIO()
    Console(file=out, width=200).print(render_terminal(differs))
    out.getvalue().encode("utf-8", "backslashreplace")
    render_markdown(differs).encode("utf-8", "backslashreplace")


def test_a_value_the_store_cannot_encode_costs_its_test_not_the_run(tmp_path: Path) -> None:
    store = tmp_path / ".diffgenome"
    good = genomes.test_record("tests/t.py::test_good", {"call": genomes.phase()})
    # An integer past Python's digit limit has no JSON text (ValueError on encoding).
    bad = genomes.test_record(
        "tests/t.py::test_bad", {"call": genomes.phase()}, recorder_note=10**5000
    )
    with StoreWriter.open(str(store)) as writer:
        writer.begin_run(genomes.run("run-1") | {"selection": []})
        writer.join_run("run-1", "main")
        writer.add_tests("run-1", "main", [good, bad])
        writer.leave_run("run-1", "main", True, [])
        assert writer.finish_run("run-1", True, [], "2026-01-01T00:00:00Z") == []
        assert writer.unstorable == 1
        assert writer.tally("run-1")[4] == 1
    with StoreReader.open(str(store)) as reader:
        document = reader.document("run-1")
    assert document["run"]["complete"] is True
    by_id = {t["id"]: t for t in document["tests"]}
    assert by_id["tests/t.py::test_good"] == {**good, "unverified_reasons": []}
    assert by_id["tests/t.py::test_bad"]["verified"] is False
    assert by_id["tests/t.py::test_bad"]["unverified_reasons"] == ["not-storable:ValueError"]
