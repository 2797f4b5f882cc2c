"""End-to-end: confirmation by default (#11.5).

After comparing, ``diffgenome diff`` records the tests that differ again, twice on each side,
and masks what differs between recordings of one commit: a test whose differences are all
noise (the clock, uuid4) is ``unstable`` and the default gate passes; a test with a real
change stays ``changed`` with its unstable parts listed apart. ``--no-confirm`` turns it off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    DIFF_PYTEST_ARGS,
    IMPORT_LEAVES_A_LIST,
    GitRepo,
    cli,
    cli_json,
    cli_json_said,
    record_full,
    write_files,
)

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/clock.py": """
        import time
        import uuid


        def stamp():
            return (time.time(), uuid.uuid4().hex)


        def double(x):
            return x * 2
    """,
    "tests/test_clock.py": """
        from pkg.clock import double, stamp


        def test_noise_only():
            assert stamp()


        def test_noise_and_change():
            assert stamp()
            assert double(2) in (4, 5)


        def test_quiet():
            assert double(1) in (2, 3)
    """,
}


def _diff(repo: Path, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", *extra)
    return code, document


def _unrelated(repo: Path) -> None:
    """A commit that adds a module nothing imports: the sides are then two programs, and
    what differs is confirmed (an identical tree is one program, whose differences are all
    unstable without confirming them: docs/diffing.md, "One program on both sides")."""
    write_files(repo, {"spare.py": "def spare():\n    return 1\n"})
    GitRepo(repo).commit_all("an unrelated module")


def _statuses(document: dict[str, Any]) -> dict[str, str]:
    return {t["id"].rpartition("::")[2]: t["status"] for t in document["tests"]}


def test_noise_where_no_changed_code_runs_is_confirmed_unstable(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    _unrelated(repo)
    unconfirmed_code, unconfirmed = _diff(repo, tmp_path, "--no-confirm")
    assert _statuses(unconfirmed)["test_noise_only"] == "changed"
    assert unconfirmed_code == 1
    assert unconfirmed["summary"]["confirmed"] == 0
    code, document = _diff(repo, tmp_path)
    statuses = _statuses(document)
    assert statuses["test_noise_only"] == "unstable"
    assert statuses["test_noise_and_change"] == "unstable"
    assert statuses["test_quiet"] == "unchanged"
    assert document["summary"]["confirmed"] == 2
    noisy = next(t for t in document["tests"] if t["id"].endswith("::test_noise_only"))
    assert any(r.startswith("unstable (base confirmation)") for r in noisy["reasons"])
    assert code == 0


def test_a_real_change_next_to_noise_stays_changed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    write_files(
        repo, {"pkg/clock.py": PROJECT["pkg/clock.py"].replace("return x * 2", "return x * 2 + 1")}
    )
    GitRepo(repo).commit_tracked("double is off by one")
    code, document = _diff(repo, tmp_path)
    statuses = _statuses(document)
    assert statuses["test_noise_and_change"] == "changed"
    assert statuses["test_quiet"] == "changed"
    assert statuses["test_noise_only"] == "unstable"
    changed = next(t for t in document["tests"] if t["id"].endswith("::test_noise_and_change"))
    symbols = {c["symbol"] for c in changed["changes"]}
    assert symbols == {"py:pkg.clock.double"}, changed["changes"]
    assert any("unstable" in r and "stamp" in r for r in changed["reasons"])
    assert code == 1


SPACED = {
    "pkg/__init__.py": "",
    "pkg/clock.py": """
        import time


        def stamp(name):
            return (name, time.time())
    """,
    "tests/test_spaced.py": """
        import pytest

        from pkg.clock import stamp


        @pytest.mark.parametrize("name", ['{"name": "x"}', "a b"])
        def test_noise_in_a_spaced_id(name):
            assert stamp(name)
    """,
}


def test_parametrize_ids_with_spaces_are_confirmed_not_cut(tmp_path: Path) -> None:
    """google-api-core's ``test_upload[{"name": "override"}-...]``: the id was cut at its first
    space as if it were a subtest's label, and pytest found no such test (exit 2)."""
    repo = tmp_path / "repo"
    write_files(repo, SPACED)
    GitRepo.init(repo).commit_all("initial")
    _unrelated(repo)
    code, document = _diff(repo, tmp_path)
    statuses = {t["id"]: t["status"] for t in document["tests"]}
    spaced = [s for t, s in statuses.items() if "test_noise_in_a_spaced_id[" in t]
    assert spaced == ["unstable", "unstable"], statuses
    assert document["summary"]["confirmed"] == 2
    assert code == 0


def test_a_path_among_the_pytest_arguments_does_not_widen_the_confirmation(
    tmp_path: Path,
) -> None:
    """sqlparse (``diff ... -- tests``): all 465 tests were recorded again, twice per side,
    to confirm the 3 that differed, because the user's path selected them all."""
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    _unrelated(repo)
    code, document = cli_json(
        repo, tmp_path, "diff", "HEAD~1", "HEAD", pytest_args=(*DIFF_PYTEST_ARGS, "tests")
    )
    assert _statuses(document)["test_noise_only"] == "unstable"
    assert document["summary"]["confirmed"] == 2
    runs = json.loads(cli(repo, "runs", "--json", "-").stdout)
    confirming = [run for run in runs if run["origin"] == "confirmation"]
    assert len(confirming) == 4
    # the two noisy tests (as pytest counts them: <import> is no test), not test_quiet
    assert {run["tests"] for run in confirming} == {2}, confirming
    assert code == 0


def test_a_recording_takes_the_run_id_diff_chose_and_keeps_it_from_its_tests(
    tmp_path: Path,
) -> None:
    """diff names each recording's run (confirmation records several at once); the id is
    taken out of the environment, so a pytest --genome that a test starts chooses its own."""
    project = tmp_path / "proj"
    write_files(
        project,
        {
            "pkg/__init__.py": "",
            "tests/test_env.py": """
                import os


                def test_the_id_is_not_passed_on():
                    assert "DIFFGENOME_RUN_ID" not in os.environ
            """,
        },
    )
    GitRepo.init(project).commit_all("initial")
    chosen = "20261201T000000-0123abcd"
    recording = record_full(project, env={"DIFFGENOME_RUN_ID": chosen})
    assert recording.doc["run"]["id"] == chosen
    assert recording.doc["tests"][-1]["outcome"] == "passed"


@pytest.mark.parametrize("words", [("-o", "addopts="), ("tests",), ("./tests/", "-x")])
def test_confirmation_collects_only_the_files_of_the_tests_that_differ(
    tmp_path: Path, words: tuple[str, ...]
) -> None:
    """``-- -o addopts=`` (a suite's own options switched off, as cookiecutter's needs) holds
    a word that is no option, ``-- tests`` a path all the tests lie under: before, every
    confirming recording of such a diff collected the whole suite to record the few tests
    that differed (cookiecutter: 6-8 s each for 9 tests). Now only their files are
    collected: the other test file is imported by the two first recordings alone."""
    imports = tmp_path / "imports.log"
    other = f"""
        with open({str(imports)!r}, "a") as log:
            log.write("imported\\n")


        def test_elsewhere():
            assert True
    """
    repo = tmp_path / "repo"
    write_files(repo, {**PROJECT, "tests/test_other.py": other})
    GitRepo.init(repo).commit_all("initial")
    _unrelated(repo)
    args = (*DIFF_PYTEST_ARGS, *words)
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", pytest_args=args)
    assert _statuses(document)["test_noise_only"] == "unstable"
    assert document["summary"]["confirmed"] == 2
    assert imports.read_text().splitlines() == ["imported"] * 2
    assert code == 0


def test_a_change_every_recording_shows_alike_is_confirmed_in_one_round(tmp_path: Path) -> None:
    """more-itertools' pull request: the one test that differed showed, in confirmation's
    first round, exactly what the first recordings of each side showed; the second round
    (two more recordings, 2 s each) could only have found noise that none of them showed,
    and can only ever turn a change into ``unstable``. It is not made, and a note says so.
    What the confirming selection moves is no doubt: ``setup_module`` runs in the setup of
    ``test_other`` in the first recordings and of ``test_double`` when it is confirmed alone
    (termcolor's pull request). Where the first round shows a difference otherwise, both
    rounds are made (the tests above: four confirming runs)."""
    repo = tmp_path / "repo"
    calc = "def double(x):\n    return x * 2\n"
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/calc.py": calc,
            "tests/test_calc.py": """
                from pkg.calc import double


                def setup_module():
                    return len("module")


                def test_other():
                    assert True


                def test_double():
                    assert double(2) in (4, 5)
            """,
        },
    )
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"pkg/calc.py": calc.replace("x * 2", "x * 2 + 1")})
    GitRepo(repo).commit_tracked("double is off by one")
    code, document, said = cli_json_said(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    statuses = _statuses(document)
    assert statuses["test_double"] == "changed"
    assert statuses["test_other"] == "unchanged"
    assert document["summary"]["confirmed"] == 1
    runs = json.loads(cli(repo, "runs", "--json", "-").stdout)
    confirming = [run for run in runs if run["origin"] == "confirmation"]
    assert len(confirming) == 2, confirming
    # The note goes beside the JSON document, on standard error.
    assert "note: confirmation recorded the 1 test that differs once more" in said
    assert code == 1


def test_a_test_reading_what_another_files_import_left_is_confirmed_in_context(
    tmp_path: Path,
) -> None:
    """``pkg/config.py`` appends ``net(100)`` to a list when ``tests/test_a_config.py``
    imports it; ``tests/test_z_reads.py`` only reads the list. A deeper discount makes the
    reader fail at head. Confirmation recorded the reader alone, where the list is empty:
    it failed alike on both sides, and its failure read as ``unstable`` (not reproduced),
    the diff passing. Where the narrowed recordings show a difference on neither side and
    nothing says the test varies, every test is recorded once more on each side."""
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/prices.py": "def net(amount):\n    return amount * 0.8\n",
            "pkg/registry.py": "NAMES = []\n",
            "pkg/config.py": """
                from pkg.prices import net
                from pkg.registry import NAMES

                NAMES.append(net(100))
            """,
            **IMPORT_LEAVES_A_LIST,
        },
    )
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"pkg/prices.py": "def net(amount):\n    return amount * 0.5\n"})
    GitRepo(repo).commit_tracked("a deeper discount")
    code, document, said = cli_json_said(repo, tmp_path, "diff", "HEAD~1", "HEAD", codes=(3,))
    [read] = [t for t in document["tests"] if t["id"].endswith("::test_reads_the_list")]
    assert read["status"] == "changed", read
    assert (read["outcome"]["base"], read["outcome"]["head"]) == ("passed", "failed"), read
    assert "confirmed 1 test whose change the narrowed recordings did not show" in said, said
    runs = json.loads(cli(repo, "runs", "--json", "-").stdout)
    whole = [r for r in runs if r["origin"] == "confirmation" and r["tests"] == 2]
    assert len(whole) == 2, runs
    assert code == 3
