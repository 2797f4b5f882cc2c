"""End-to-end: tests that share a node id are each recorded, and a diff sees each (#46).

A custom collector may yield several items under one name (docopt-ng's conftest.py reads
``testcases.docopt`` and names every case of one usage text alike): pytest runs them all,
and the recorder once kept only the last of them, so that 94 of docopt-ng's 614 tests were
never recorded and a regression confined to one of them was reported as nothing. Each is
now recorded under its node id, the second and later in collection order with an index
(``<node id>#1``), and says how many share that id (docs/recording.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from e2e.helpers import GitRepo, cli_json, record_full, write_files

CONFTEST = """
    import pytest

    from pkg.calc import shout


    def pytest_collect_file(file_path, parent):
        if file_path.suffix == ".cases":
            return CasesFile.from_parent(parent, path=file_path)


    class CasesFile(pytest.File):
        def collect(self):
            for line in self.path.read_text().splitlines():
                name, _, word = line.partition(": ")
                yield CaseItem.from_parent(self, name=name, word=word)


    class CaseItem(pytest.Item):
        def __init__(self, *, word, **kwargs):
            super().__init__(**kwargs)
            self.word = word

        def runtest(self):
            assert shout(self.word)
"""

PROJECT = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/calc.py": """
        def shout(word):
            if word == "beta":
                return word.upper()
            return word + "!"
    """,
    "tests/conftest.py": CONFTEST,
    # Three cases named alike, then one of its own.
    "tests/words.cases": "greet: alpha\ngreet: beta\ngreet: gamma\nother: delta\n",
}

GREET = "tests/words.cases::greet"
IDS = [GREET, f"{GREET}#1", f"{GREET}#2", "tests/words.cases::other"]


def _tests(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in doc["tests"] if t["id"] != "<import>"}


def _counts(output: str) -> tuple[int, int]:
    """What the recorder's closing line says it recorded, and what pytest says passed."""
    recorded = re.search(r"recorded (\d+) tests? into", output)
    passed = re.search(r"(\d+) passed", output)
    assert recorded is not None and passed is not None, output
    return int(recorded.group(1)), int(passed.group(1))


def _words(test: dict[str, Any]) -> list[str]:
    """The previewed arguments ``shout`` was called with in the test's call phase."""
    nodes = test["phases"]["call"]["nodes"]
    return [
        str(arg.get("preview"))
        for node in nodes
        if node.get("symbol") == "py:pkg.calc.shout"
        for arg in node.get("args") or ()
    ]


def test_every_case_sharing_a_node_id_is_recorded_apart(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write_files(project, PROJECT)
    GitRepo.init(project).commit_all("initial")
    recording = record_full(project, "--genome-preview")
    tests = _tests(recording.doc)
    assert sorted(tests) == IDS
    recorded, passed = _counts(recording.output)
    assert recorded == passed == 4
    assert "3 tests share a node id with others, each recorded apart" in recording.output
    # Collection order decides the index: the beta case is the second of the three.
    assert _words(tests[f"{GREET}#1"]) == ["word='beta'"]
    assert _words(tests[GREET]) == ["word='alpha'"]
    # Each case says that its identity is a place among cases named alike.
    for test_id in IDS[:3]:
        assert tests[test_id]["verified"], tests[test_id]["unverified_reasons"]
        assert tests[test_id]["disclosed"] == ["shared-node-id:3"]
    assert "disclosed" not in tests["tests/words.cases::other"]

    # Under xdist every worker collects alike, whichever runs which case.
    distributed = record_full(project, "--genome-preview", "-n", "2")
    spread = _tests(distributed.doc)
    assert sorted(spread) == IDS
    assert _counts(distributed.output) == (4, 4)
    assert _words(spread[f"{GREET}#1"]) == ["word='beta'"]

    # ``--genome-only`` (what confirmation hands the recorder) selects a case by its index.
    only = tmp_path / "only.txt"
    only.write_text(f"{GREET}#2\n")
    narrowed = _tests(record_full(project, "--genome-preview", f"--genome-only={only}").doc)
    assert list(narrowed) == [f"{GREET}#2"]
    assert _words(narrowed[f"{GREET}#2"]) == ["word='gamma'"]


def test_a_change_confined_to_one_case_of_a_shared_node_id_is_reported(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    write_files(
        repo,
        {
            "pkg/calc.py": """
                def shout(word):
                    if word == "beta":
                        return word.title()
                    return word + "!"
            """
        },
    )
    GitRepo(repo).commit_all("beta is no longer shouted")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    statuses = {t["id"]: t["status"] for t in document["tests"] if t["id"] != "<import>"}
    assert statuses == {
        GREET: "unchanged",
        f"{GREET}#1": "changed",
        f"{GREET}#2": "unchanged",
        "tests/words.cases::other": "unchanged",
    }
    # Confirmation recorded the changed case again by its indexed id, on both sides.
    assert document["summary"]["confirmed"] == 1
    assert code == 1


def test_subtests_labelled_alike_are_recorded_apart(tmp_path: Path) -> None:
    """``subtests.test(msg="row")`` in a loop: each block is a subtest of its own, the later
    ones in the order they ran ``<test id> [row]#1``."""
    project = tmp_path / "proj"
    write_files(
        project,
        {
            **{name: text for name, text in PROJECT.items() if not name.startswith("tests/")},
            "tests/test_rows.py": """
                from pkg.calc import shout


                def test_rows(subtests):
                    for word in ("alpha", "beta", "gamma"):
                        with subtests.test(msg="row"):
                            assert shout(word)
            """,
        },
    )
    GitRepo.init(project).commit_all("initial")
    tests = _tests(record_full(project, "--genome-preview").doc)
    row = "tests/test_rows.py::test_rows [row]"
    assert sorted(tests) == ["tests/test_rows.py::test_rows", row, f"{row}#1", f"{row}#2"]
    assert [_words(tests[test_id]) for test_id in (row, f"{row}#1", f"{row}#2")] == [
        ["word='alpha'"],
        ["word='beta'"],
        ["word='gamma'"],
    ]
