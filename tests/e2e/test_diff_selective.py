"""End-to-end: ``diff --selective`` records at head only what the change can reach (#48).

Base's tests that reach no changed code, in files that did not change, are carried over:
``unchanged`` with the reason that says so, counted on the first line. Everything else runs:
a test that reaches the change, a test whose file changed, a test added. And every test runs
when a change reaches what the genome cannot see (a data file, a conftest): said in a note.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    DIFF_PYTEST_ARGS,
    IMPORT_LEAVES_A_LIST,
    GitRepo,
    cli,
    cli_json,
    write_files,
)

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/prices.py": """
        def net(amount):
            return amount * 0.8
    """,
    "pkg/names.py": """
        def title(name):
            return name.title()
    """,
    "pkg/table.py": """
        import os

        HERE = os.path.dirname(__file__)


        def rows():
            with open(os.path.join(HERE, "table.txt")) as handle:
                return handle.read().split()
    """,
    "pkg/table.txt": "a b c\n",
    "tests/test_prices.py": """
        from pkg.prices import net


        def test_net():
            assert net(10) > 0
    """,
    "tests/test_names.py": """
        from pkg.names import title


        def test_title():
            assert title("ada") == "Ada"


        def test_title_twice():
            assert title(title("ada")) == "Ada"
    """,
    "tests/test_table.py": """
        from pkg.table import rows


        def test_rows():
            assert rows()
    """,
}


def _repo(tmp_path: Path, extra: dict[str, str] | None = None) -> GitRepo:
    """The project (with ``extra`` files) as a repository of one commit."""
    path = tmp_path / "repo"
    write_files(path, {**PROJECT, **(extra or {})})
    repo = GitRepo.init(path)
    repo.commit_all("initial")
    return repo


def _edit(repo: GitRepo, path: str, old: str, new: str) -> None:
    file = repo.path / path
    text = file.read_text()
    assert old in text, old
    file.write_text(text.replace(old, new))


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"].rpartition("::")[2]: t for t in document["tests"]}


def test_only_what_the_change_reaches_is_recorded_again(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _edit(repo, "pkg/prices.py", "amount * 0.8", "amount * 0.75")
    repo.commit_all("a discount")
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~1", "HEAD", "--selective")
    tests = _tests(document)
    assert tests["test_net"]["status"] == "changed", tests["test_net"]
    for name in ("test_title", "test_title_twice", "test_rows"):
        assert tests[name]["status"] == "unchanged", tests[name]
        assert tests[name]["reasons"] == [
            "not recorded at head: it does not reach the change (its base recording carried over)"
        ]
    assert document["summary"]["carried"] == 3
    assert code == 1
    # What head recorded: the one test the change reaches (and what imports did).
    runs = [line.split() for line in cli(repo.path, "runs").stdout.splitlines()[1:]]
    [head] = [run for run in runs if any(word.startswith("--genome-carry=") for word in run)]
    assert head[4] == "1" and head[7] == "diff", head  # tests, origin
    first = cli(repo.path, "diff", "HEAD~1", "HEAD", "--selective", "--no-preview").stdout
    assert "3 unchanged (3 of them not run: the change does not reach them)" in first, first


def test_an_edited_test_file_and_an_added_test_run_and_a_removed_one_is_removed(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    _edit(repo, "tests/test_names.py", "def test_title_twice():", "def test_title_thrice():")
    write_files(
        repo.path,
        {
            "tests/test_more.py": """
                from pkg.names import title


                def test_new():
                    assert title("x")
            """
        },
    )
    repo.commit_all("tests")
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~1", "HEAD", "--selective")
    tests = _tests(document)
    assert tests["test_title"]["status"] == "unchanged"
    assert tests["test_title"]["reasons"] == []  # its file changed: recorded again
    assert tests["test_title_twice"]["status"] == "removed"
    assert tests["test_title_thrice"]["status"] == "added"
    assert tests["test_new"]["status"] == "added"
    assert tests["test_net"]["reasons"] and tests["test_rows"]["reasons"]  # carried
    assert document["summary"]["carried"] == 2
    assert code == 1


def test_a_change_the_genome_cannot_see_records_every_test(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _edit(repo, "pkg/table.txt", "a b c", "a b")
    repo.commit_all("data")
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~1", "HEAD", "--selective")
    tests = _tests(document)
    assert tests["test_rows"]["status"] == "changed", tests["test_rows"]
    assert document["summary"]["carried"] == 0
    assert all(not t["reasons"] for t in document["tests"] if t["status"] == "unchanged")
    assert code == 1
    said = cli(repo.path, "diff", "HEAD~1", "HEAD", "--selective", "--no-preview")
    assert (
        "--selective recorded every test at head: pkg/table.txt changed (not Python code: a "
        "test may read it)"
    ) in said.stdout + said.stderr


def test_state_an_earlier_test_left_is_not_read_as_the_change(tmp_path: Path) -> None:
    """Head's first recording runs only the tests the change reaches: what a carried test
    left behind (a module's list it appends to) is missing there. A difference only that
    first recording shows is not the change; the confirming recordings, one selection on
    both sides, are the evidence (before: ``note results`` read as changed beside the real
    change)."""
    repo = _repo(
        tmp_path,
        {
            "pkg/seen.py": """
                SEEN = []


                def note(name):
                    SEEN.append(name)
                    return len(SEEN)
            """,
            "tests/test_a_first.py": """
                from pkg.seen import note


                def test_first():
                    assert note("first") >= 1
            """,
            "tests/test_b_second.py": """
                from pkg.prices import net
                from pkg.seen import note


                def test_second():
                    assert net(10) > 0
                    assert note("second") >= 1
            """,
        },
    )
    _edit(repo, "pkg/prices.py", "amount * 0.8", "amount * 0.75")
    repo.commit_all("a discount")
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~1", "HEAD", "--selective")
    tests = _tests(document)
    assert tests["test_first"]["reasons"], tests["test_first"]  # carried
    second = tests["test_second"]
    assert second["status"] == "changed", second
    symbols = {c.get("symbol") for c in second["changes"]}
    assert "py:pkg.prices.net" in symbols, second["changes"]
    assert "py:pkg.seen.note" not in symbols, second["changes"]
    assert any("with one selection" in reason for reason in second["reasons"]), second
    assert code == 1


def test_a_change_no_test_reaches_carries_every_test(tmp_path: Path) -> None:
    """Code no test runs: head runs no test at all (pytest says it ran none, exit status 5),
    and that is no error (before: "pytest collected no tests", exit 2)."""
    repo = _repo(tmp_path, {"pkg/unused.py": "def spare(n):\n    return n\n"})
    _edit(repo, "pkg/unused.py", "return n", "return n + 1")
    repo.commit_all("dead code")
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~1", "HEAD", "--selective")
    tests = _tests(document)
    assert {t["status"] for name, t in tests.items() if name != "<import>"} == {"unchanged"}
    assert document["summary"]["carried"] == 4
    assert code == 0


def test_a_selective_diff_that_carries_nothing_says_why(tmp_path: Path) -> None:
    """inflection keeps its tests in one file: a pull request that edits one test there
    records every test at head (an edited test file is recorded whole). The diff said
    nothing of it; it now says, beside the report, how many of base's tests it kept and why."""
    repo = _repo(tmp_path)
    _edit(repo, "pkg/prices.py", "amount * 0.8", "amount * 0.75")
    _edit(repo, "tests/test_names.py", 'title("ada") == "Ada"\n', 'title("ada") != "ada"\n')
    _edit(repo, "tests/test_table.py", "assert rows()", "assert rows() != []")
    repo.commit_all("one change, two tests edited")
    said = cli(repo.path, "diff", "HEAD~1", "HEAD", "--selective", "--no-preview")
    assert said.returncode == 1, said.stdout + said.stderr
    assert (
        "note: --selective carried no test: of base's tests, 3 reach the change; 1 is in a "
        "changed test file (an edited test file is recorded whole)"
    ) in said.stdout, said.stdout


def _changed_and_diffed(
    repo: GitRepo,
    tmp_path: Path,
    change: tuple[str, str, str],
    *pytest_words: str,
    codes: tuple[int, ...] = (0, 1),
) -> tuple[int, Any]:
    """``change`` (a file, a text in it, what it becomes) committed, diffed with
    ``--selective`` (``pytest_words`` after the usual arguments)."""
    _edit(repo, *change)
    repo.commit_all("the change")
    return cli_json(
        repo.path,
        tmp_path,
        "diff",
        "HEAD~1",
        "HEAD",
        "--selective",
        pytest_args=(*DIFF_PYTEST_ARGS, *pytest_words),
        codes=codes,
    )


def _failing_discount(repo: GitRepo, tmp_path: Path) -> tuple[int, Any]:
    """A deeper discount committed, diffed with ``--selective``: a test now fails (exit 3)."""
    return _changed_and_diffed(
        repo, tmp_path, ("pkg/prices.py", "amount * 0.8", "amount * 0.5"), codes=(3,)
    )


def test_a_module_fixture_that_reaches_the_change_reaches_every_test_of_its_module(
    tmp_path: Path,
) -> None:
    """A module fixture runs in the setup of the first test that asks for it; the next test
    gets its cached value and runs no changed code. It was carried over, ``unchanged``,
    while at head it fails. A function-scoped fixture runs for each test: a test of its
    file that does not ask for it is still carried."""
    repo = _repo(
        tmp_path,
        {
            "tests/test_fixture.py": """
                import pytest

                from pkg.prices import net


                @pytest.fixture(scope="module")
                def price():
                    return net(10)


                def test_first(price):
                    assert price > 0


                def test_second(price):
                    assert price > 7
            """,
            "tests/test_each.py": """
                import pytest

                from pkg.prices import net


                @pytest.fixture
                def discounted():
                    return net(10)


                def test_uses_it(discounted):
                    assert discounted > 0


                def test_does_not():
                    assert True
            """,
        },
    )
    code, document = _failing_discount(repo, tmp_path)
    tests = _tests(document)
    second = tests["test_second"]
    assert second["status"] == "changed", second
    assert (second["outcome"]["base"], second["outcome"]["head"]) == ("passed", "failed")
    assert tests["test_uses_it"]["status"] == "changed"
    for name in ("test_does_not", "test_title", "test_rows"):
        assert tests[name]["reasons"], tests[name]  # carried
    assert code == 3  # a test now fails
    listed = cli(repo.path, "affected", "HEAD~1", "HEAD").stdout
    assert "may use what a fixture or an import made with it for many tests" in listed, listed


def test_a_value_a_module_made_at_import_reaches_the_tests_that_import_it(
    tmp_path: Path,
) -> None:
    """``DEFAULT = net(100)`` in a module of the package runs when it is imported, under no
    test: a test that asserts on it was carried over, ``unchanged``, while at head it fails.
    Then every test was recorded; now the tests whose files import that module (directly,
    through another module, through a conftest's fixture) are, and the others are carried
    (packaging: a helper of its property tests built Versions at import, and not one of
    62,424 tests was carried)."""
    repo = _repo(
        tmp_path,
        {
            "pkg/config.py": """
                from pkg.prices import net

                DEFAULT = net(100)
            """,
            "tests/test_config.py": """
                from pkg import config


                def test_default():
                    assert config.DEFAULT > 70
            """,
            "tests/conftest.py": "",
            "tests/helpers.py": """
                from pkg.prices import net

                PRICE = net(10)
            """,
            "tests/more.py": """
                from helpers import PRICE

                DOUBLE = PRICE * 2
            """,
            "tests/test_helper_direct.py": """
                from helpers import PRICE


                def test_price():
                    assert PRICE > 7
            """,
            "tests/test_helper_through.py": """
                import more


                def test_double():
                    assert more.DOUBLE > 14
            """,
            "tests/sub/conftest.py": """
                import pytest

                from helpers import PRICE


                @pytest.fixture
                def price():
                    return PRICE
            """,
            "tests/sub/test_fixture_user.py": """
                def test_fixture(price):
                    assert price > 7
            """,
        },
    )
    code, document = _failing_discount(repo, tmp_path)
    tests = _tests(document)
    for name in ("test_default", "test_price", "test_double", "test_fixture"):
        seen = tests[name]
        assert (seen["outcome"]["base"], seen["outcome"]["head"]) == ("passed", "failed"), seen
    for name in ("test_title", "test_title_twice", "test_rows"):
        assert tests[name]["reasons"], tests[name]  # carried
    assert document["summary"]["carried"] == 3
    assert code == 3  # a test now fails


def test_a_test_module_whose_tests_are_deselected_shares_only_with_its_tests(
    tmp_path: Path,
) -> None:
    """packaging's property tests are deselected by its ``-m "not property"`` and imported
    all the same; one builds ``Version``s at import. No test id names its file, so it was
    read as a module of the package, whose import reaches every test: none of 62,424 was
    carried. It is a test module by its name: its own tests alone (none ran) use it."""
    repo = _repo(
        tmp_path,
        {
            "tests/test_slow.py": """
                import pytest

                from pkg.prices import net

                PRICE = net(10)


                @pytest.mark.parametrize("price", [PRICE])
                def test_slow_price(price):
                    assert price > 7
            """,
        },
    )
    code, document = _changed_and_diffed(
        repo, tmp_path, ("pkg/prices.py", "amount * 0.8", "amount * 0.75"), "-k", "not slow"
    )
    tests = _tests(document)
    assert not [name for name in tests if name.startswith("test_slow_price")]
    assert tests["test_net"]["status"] == "changed", tests["test_net"]
    assert document["summary"]["carried"] == 3, document["summary"]
    assert code == 1


_HANDED_ON = {
    "a bare call": """
        from pkg.prices import net
        from pkg.registry import NAMES

        NAMES.append(net(100))
    """,
    "a call that keeps it": """
        from pkg.prices import net
        from pkg.registry import remember

        DEFAULT = remember(net(100))
    """,
}


@pytest.mark.parametrize("how", sorted(_HANDED_ON))
def test_a_value_an_import_hands_to_another_module_reaches_every_test(
    tmp_path: Path, how: str
) -> None:
    """What a module makes at import can leave its namespace: a body that appends it to
    another module's list, a function it calls that keeps it there. A test that reads that
    list without importing the module sees it all the same (an earlier test imported it);
    such an import reaches every test."""
    repo = _repo(
        tmp_path,
        {
            "pkg/registry.py": """
                NAMES = []


                def remember(value):
                    NAMES.append(value)
                    return value
            """,
            "pkg/config.py": _HANDED_ON[how],
            **IMPORT_LEAVES_A_LIST,
        },
    )
    _, document = _failing_discount(repo, tmp_path)
    read = _tests(document)["test_reads_the_list"]
    assert (read["outcome"]["base"], read["outcome"]["head"]) == ("passed", "failed"), read
    assert document["summary"]["carried"] == 0


def test_a_test_that_reads_what_changed_code_left_in_a_module_is_recorded(
    tmp_path: Path,
) -> None:
    """``register`` (changed) appends to a module-level list; a later test only reads the
    list through ``names``, which did not change. Its genome runs no changed code, and it
    was carried over as ``unchanged`` while at head it fails; it reads a name the changed
    code changes in place, so it is recorded."""
    repo = _repo(
        tmp_path,
        {
            "pkg/registry.py": """
                NAMES = []


                def register(name):
                    NAMES.append(name.upper())


                def names():
                    return list(NAMES)
            """,
            "tests/test_registry.py": """
                from pkg.registry import names, register


                def test_register():
                    register("x")
                    assert names()


                def test_names():
                    assert names() == ["X"]
            """,
        },
    )
    code, document = _changed_and_diffed(
        repo, tmp_path, ("pkg/registry.py", "name.upper()", "name.lower()"), codes=(3,)
    )
    tests = _tests(document)
    read = tests["test_names"]
    assert (read["outcome"]["base"], read["outcome"]["head"]) == ("passed", "failed"), read
    for name in ("test_net", "test_title", "test_rows"):
        assert tests[name]["reasons"], tests[name]  # carried
    assert code == 3
    listed = cli(repo.path, "affected", "HEAD~1", "HEAD").stdout
    assert "1 test reads NAMES, which it changes in place:" in listed, listed
