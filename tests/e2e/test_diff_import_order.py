"""End-to-end: a module that now imports another one first is import order, not behaviour.

humanize 4.11.0, a pull request read as a reviewer (session 11): the fix made
``humanize/filesize.py`` import ``_format_not_finite`` from ``humanize.number``. The package
imports ``filesize`` first, so ``number`` (and ``i18n``, which ``number`` imports) was now
first imported under ``filesize`` instead of under the package: the same modules ran once each,
doing the same, and ``<import>`` was ``changed`` (``call added: py:humanize.number under
py:humanize.filesize``, two ``call removed``), failing the gate. A module imported for the
first time, or no longer, stays a change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import cli_json, git_in, make_project

PACKAGE = {
    "sizes/__init__.py": """
        from sizes.files import size
        from sizes.words import word
        from sizes.numbers import number
    """,
    "sizes/files.py": """
        def size(n):
            if n < 1000:
                return f"{n} B"
            return f"{n // 1000} kB"
    """,
    "sizes/words.py": """
        def word(n):
            return "many" if n > 3 else "few"
    """,
    "sizes/numbers.py": """
        from sizes import words


        def number(n):
            return f"{n} ({words.word(n)})"
    """,
    "sizes/extra.py": """
        UNITS = ("B", "kB")
    """,
    "tests/test_sizes.py": """
        from sizes import number, size


        def test_small():
            assert size(10) == "10 B"


        def test_large():
            assert size(2000) == "2 kB"


        def test_number():
            assert number(5) == "5 (many)"
    """,
}

# The fix: a negative size is named through ``numbers``, which ``files`` now imports first.
FIX = (
    "def size(n):\n",
    "from sizes.numbers import number\n\n\ndef size(n):\n    if n < 0:\n"
    '        return "minus " + number(-n)\n',
)
# The same fix that also imports a module nothing imported before.
FIX_AND_NEW_IMPORT = (
    "def size(n):\n",
    "from sizes.numbers import number\nfrom sizes import extra\n\n\ndef size(n):\n"
    '    if n < 0:\n        return "minus " + number(-n)\n',
)


def _import(document: dict[str, Any]) -> dict[str, Any]:
    [record] = [test for test in document["tests"] if test["id"] == "<import>"]
    return record


def _branch(repo: Path, name: str, edit: tuple[str, str]) -> None:
    git_in(repo, "checkout", "-q", "-b", name, "main")
    path = repo / "sizes" / "files.py"
    text = path.read_text()
    assert text.count(edit[0]) == 1
    path.write_text(text.replace(edit[0], edit[1]))
    git_in(repo, "commit", "-qam", name)


def test_a_module_first_imported_by_another_module_is_import_order(tmp_path: Path) -> None:
    repo = make_project(tmp_path, PACKAGE, name="sizes")
    git_in(repo, "branch", "-M", "main")
    _branch(repo, "fix", FIX)
    _branch(repo, "fix-and-new-import", FIX_AND_NEW_IMPORT)

    code, document = cli_json(repo, tmp_path, "diff", "main", "fix")
    record = _import(document)
    assert record["status"] == "restructured", record
    assert record["changes"] == [], record
    # ``words`` moved with ``numbers``: one line, led by the changed module.
    assert record["structure"] == [
        "import order: `sizes.numbers` first imported by `sizes.files` (was `sizes`);"
        " 1 other module moved with it"
    ], record
    assert [cause["summary"] for cause in document["causes"]] == [record["structure"][0]], document[
        "causes"
    ]
    statuses = {t["id"].rpartition("::")[2]: t["status"] for t in document["tests"]}
    assert statuses["test_number"] == "unchanged", document["tests"]
    assert code == 0, document["summary"]

    # A module imported for the first time is behaviour: it stays a change.
    code, document = cli_json(repo, tmp_path, "diff", "main", "fix-and-new-import")
    record = _import(document)
    assert record["status"] == "changed", record
    added = [c for c in record["changes"] if c["kind"] == "call_added"]
    assert [c["symbol"] for c in added] == ["py:sizes.extra"], record
    assert code == 1
