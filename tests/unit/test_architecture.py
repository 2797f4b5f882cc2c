"""docs/architecture.md's table of modules is the house as built: every module has its row,
every row names a module that is there, and no import climbs to a higher floor.

The table is read as people read it (one row per module: its path, its floor, its one job),
so a module added without a row, or an import that runs back up, fails here rather than
leaving the picture to drift from the code.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "diffgenome"
#: What counts as a module of the package: Python files and the compiled core's sources.
MODULE_SUFFIXES = (".py", ".c", ".h", ".pyi")
_ROW = re.compile(r"^\|\s*`(diffgenome/[^`]+)`\s*\|\s*(\d+)\s*\|\s*(.*?)\s*\|\s*$")


def _table() -> dict[str, tuple[int, str]]:
    """The rows of the table of modules: path -> (floor, one job)."""
    rows: dict[str, tuple[int, str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        found = _ROW.match(line)
        if found:
            path, floor, job = found.groups()
            assert path not in rows, f"{path} has two rows in docs/architecture.md"
            rows[path] = (int(floor), job)
    return rows


def _modules() -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix in MODULE_SUFFIXES and "__pycache__" not in path.parts
    )


def _target(name: str) -> str | None:
    """The file an imported module name is: ``pkg/mod.py``, else the package's
    ``__init__.py``; None for what is no file of the package (a compiled module)."""
    base = ROOT / Path(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return str(candidate.relative_to(ROOT))
    return None


def _imports(path: str) -> set[str]:
    """The package's files that ``path`` imports, anywhere in it (lazy imports included)."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            # ``from diffgenome.analysis import pipeline`` imports the module pipeline.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    files = {_target(name) for name in names if name.split(".")[0] == "diffgenome"}
    return {file for file in files if file is not None and file != path}


def test_every_module_has_its_row_and_every_row_its_module() -> None:
    rows = _table()
    modules = _modules()
    assert len(modules) > 50, "the package's modules were not found"
    missing = [path for path in modules if path not in rows]
    assert missing == [], f"add a row to docs/architecture.md's table of modules for {missing}"
    gone = sorted(set(rows) - set(modules))
    assert gone == [], f"docs/architecture.md names modules that are not there: {gone}"
    jobless = [path for path, (_, job) in rows.items() if len(job.split()) < 3]
    assert jobless == [], f"say the one job of {jobless}"


def test_no_import_climbs_to_a_higher_floor() -> None:
    """An import goes down the floors, or to a module of the same folder on the same floor."""
    rows = _table()
    climbs: list[str] = []
    checked = 0
    for path in _modules():
        if not path.endswith(".py") or path not in rows:
            continue
        floor = rows[path][0]
        for target in sorted(_imports(path)):
            checked += 1
            other = rows[target][0]
            same_room = Path(target).parent == Path(path).parent and other == floor
            if other >= floor and not same_room:
                climbs.append(f"{path} (floor {floor}) imports {target} (floor {other})")
    assert checked > 100, "the imports of the package were not read"
    assert climbs == [], "imports that run back up:\n" + "\n".join(climbs)


@pytest.mark.parametrize(
    ("path", "floor", "imports"),
    [
        ("diffgenome/analysis/record/documents.py", 3, "diffgenome/store/reader.py"),
        ("diffgenome/analysis/pipeline.py", 4, "diffgenome/analysis/record/sides.py"),
        ("diffgenome/analysis/cli.py", 7, "diffgenome/analysis/pipeline.py"),
    ],
)
def test_the_check_reads_real_rows_and_real_imports(path: str, floor: int, imports: str) -> None:
    """The two checks above see what they check: a known row with its floor, a known import."""
    assert _table()[path][0] == floor
    assert imports in _imports(path)
