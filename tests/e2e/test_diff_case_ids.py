"""End-to-end: parametrized cases whose ids move between recordings of one commit.

marshmallow builds some case ids from the clock (``[11:29:00 2026-12-05]``): every diff of
any pull request listed those cases as removed and added, and ``--fail-on changed`` failed on
an unchanged suite. A function with cases on base only *and* on head only is confirmed like a
test that differs (every case of it recorded twice more on each side); when its case ids
differ between two recordings of one commit, its one-sided cases are ``unstable``, with a
reason that says so. Cases renamed by the commit itself keep their ids between recordings,
and stay removed and added.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import GitRepo, cli, make_project, write_files

pytestmark = pytest.mark.slow

FILES = {
    "shop/__init__.py": "",
    "shop/price.py": """
        def net(amount):
            return amount * 0.8
    """,
    "tests/test_price.py": """
        import datetime

        import pytest

        from shop.price import net

        STAMP = datetime.datetime.now().strftime("%H:%M:%S.%f")


        @pytest.mark.parametrize("label", [STAMP + " a", STAMP + " b"])
        def test_labelled(label):
            assert label and net(10) == 8


        @pytest.mark.parametrize("amount", [10, 20], ids=["ten", "twenty"])
        def test_named(amount):
            assert net(amount) < amount
    """,
}


def diff(project: Path) -> tuple[int, dict[str, Any], str]:
    done = cli(project, "diff", "HEAD~1", "HEAD", "--json", "-", timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def test_case_ids_from_the_clock_are_unstable_not_added_and_removed(tmp_path: Path) -> None:
    project = make_project(tmp_path, FILES)
    # The head commit replaces the cases of test_named (new values under new ids: nothing
    # to pair them by) and touches nothing test_labelled runs.
    write_files(
        project,
        {
            "tests/test_price.py": FILES["tests/test_price.py"].replace(
                '[10, 20], ids=["ten", "twenty"]', '[30, 40], ids=["small", "large"]'
            )
        },
    )
    GitRepo(project).commit_all("other cases for test_named")
    code, document, stderr = diff(project)
    statuses = {test["id"]: test for test in document["tests"]}
    labelled = {i: t for i, t in statuses.items() if "test_labelled[" in i}
    # Two cases recorded on each side, each under an id of its own recording's clock.
    assert len(labelled) == 4, sorted(statuses)
    for test in labelled.values():
        assert test["status"] == "unstable", test
        assert any(
            "the case ids of tests/test_price.py::test_labelled differ between two "
            "recordings of one commit" in reason
            for reason in test["reasons"]
        ), test["reasons"]
    named = {i: t["status"] for i, t in statuses.items() if "test_named[" in i}
    assert named == {
        "tests/test_price.py::test_named[ten]": "removed",
        "tests/test_price.py::test_named[twenty]": "removed",
        "tests/test_price.py::test_named[small]": "added",
        "tests/test_price.py::test_named[large]": "added",
    }
    assert "the cases of 2 functions whose case ids moved" in stderr, stderr
    # The gate fails for the renamed cases only (an added test counts), not the clock's.
    assert code == 1
    assert document["summary"]["unstable"] == 4
    assert document["summary"]["added"] == 2 and document["summary"]["removed"] == 2
