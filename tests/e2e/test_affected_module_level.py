"""End-to-end: ``affected`` for a change to module-level code (#10.6).

A constant, a version string or an import changed at module level must select only the tests
that read a name the changed statement binds (or run the statement itself), each with the name
as its reason; a changed statement with effects no name tells (a call) still selects every
test that ran code of the module.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from e2e.helpers import BASE_ARGS, GitRepo, cli_json, write_files

BASE = {
    "pkg/__init__.py": "",
    "pkg/config.py": """
        import json

        VERSION = "1.0"
        LIMIT = 10


        def version():
            return VERSION


        def limit_of(n):
            return min(n, LIMIT)


        def dump(value):
            return json.dumps(value)
    """,
    "pkg/use.py": """
        from pkg.config import LIMIT


        def over(n):
            return n > LIMIT
    """,
    "tests/test_config.py": """
        from pkg.config import dump, limit_of, version
        from pkg.use import over


        def test_version():
            assert version() == "1.0"


        def test_limit():
            assert limit_of(50) == 10


        def test_dump():
            assert dump(1) == "1"


        def test_over():
            assert over(11)
    """,
}


CONFIG = textwrap.dedent(BASE["pkg/config.py"])


def _affected(tmp_path: Path, head: dict[str, str]) -> dict[str, Any]:
    repo = tmp_path / "repo"
    write_files(repo, BASE)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, head)
    GitRepo(repo).commit_tracked("change")
    _code, found = cli_json(
        repo, tmp_path, "affected", "HEAD~1", "HEAD", pytest_args=BASE_ARGS, codes=(0,)
    )
    return {item["test"]: item for item in found}


def test_a_changed_constant_selects_its_readers_only(tmp_path: Path) -> None:
    found = _affected(tmp_path, {"pkg/config.py": CONFIG.replace("LIMIT = 10", "LIMIT = 20")})
    assert set(found) == {"tests/test_config.py::test_limit", "tests/test_config.py::test_over"}
    for item in found.values():
        [reason] = item["reasons"]
        assert (reason["symbol"], reason["via"], reason["names"]) == (
            "py:pkg.config",
            "reads",
            ["LIMIT"],
        )


def test_a_changed_import_selects_the_code_that_uses_it(tmp_path: Path) -> None:
    head = CONFIG.replace("import json\n", "import json as json\nimport os\n")
    found = _affected(tmp_path, {"pkg/config.py": head})
    assert set(found) == {"tests/test_config.py::test_dump"}, json.dumps(found, indent=1)


def test_a_changed_statement_with_effects_selects_every_user_of_the_module(
    tmp_path: Path,
) -> None:
    head = CONFIG.replace('VERSION = "1.0"\n', 'VERSION = "1.0"\nprint("hi")\n')
    found = _affected(tmp_path, {"pkg/config.py": head})
    assert {
        "tests/test_config.py::test_version",
        "tests/test_config.py::test_limit",
        "tests/test_config.py::test_dump",
    } <= set(found)
    assert all(
        any(r["via"] == "module" for r in item["reasons"])
        for test, item in found.items()
        if test != "tests/test_config.py::test_over"
    )
