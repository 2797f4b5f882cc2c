"""End-to-end: what counts as project code when pytest is told to collect in the source root.

humanize 4.17 set ``testpaths = ["src", "tests"]`` (with ``--doctest-modules``): the source
root became a test root, every project function was named as test code
(``py:src.humanize.time.naturaltime``) and 737 of 926 tests read as changed against 4.16.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import make_project, record, symbol_table, test_genome

PROJECT = {
    "pytest.ini": """
        [pytest]
        testpaths = src tests
        addopts = --doctest-modules
    """,
    "src/pkg/__init__.py": "",
    "src/pkg/words.py": '''
        def shout(text):
            """Loudly.

            >>> shout("a")
            'A!'
            """
            return text.upper() + "!"
    ''',
    "tests/test_words.py": """
        from pkg.words import shout


        def test_shout():
            assert shout("b") == "B!"
    """,
}


def test_a_source_root_in_testpaths_stays_project_code(tmp_path: Path) -> None:
    project = make_project(tmp_path, PROJECT)
    doc = record(project, "--import-mode=importlib", env={"PYTHONPATH": str(project / "src")})
    symbols = symbol_table(doc)
    assert symbols["py:pkg.words.shout"]["origin"] == "repo"
    assert not any(s.startswith("py:src.") for s in symbols)
    call = test_genome(doc, "::test_shout")["phases"]["call"]
    assert "py:pkg.words.shout" in {n.get("symbol") for n in call["nodes"]}
    # the doctest is collected from the source root and runs the same function
    doctest = test_genome(doc, "words.py::pkg.words.shout")
    assert doctest["outcome"] == "passed"
