"""End-to-end: mock drift is about stand-ins that existed before the change (#24.5).

Drift says a stand-in still answers like the real code used to. A stand-in in a test that
exists on head only was written against the new code: it cannot have drifted, and listing it
sent a reviewer to read a test that is fine.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import GitRepo, cli_json, write_files

NET = """
def fetch(url):
    return {"status": 200, "url": url}


def parse(text):
    return text.strip()


def report(url):
    return fetch(url)["status"]
"""
OLD_TEST = """
from unittest import mock

from pkg import net


def test_old_mocked():
    with mock.patch("pkg.net.fetch", autospec=True) as fetch:
        fetch.return_value = {"status": 201}
        assert net.report("http://example.invalid") == 201
"""
NEW_TESTS = """

def test_new_mocked():
    with mock.patch("pkg.net.fetch", autospec=True) as fetch:
        fetch.return_value = {"status": 204}
        assert net.report("http://example.invalid") == 204


def test_new_parse_mocked(monkeypatch):
    monkeypatch.setattr(net, "parse", lambda text: "x")
    assert net.parse(" y ") == "x"
"""


def test_a_stand_in_in_a_test_new_at_head_is_not_drift(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, {"pkg/__init__.py": "", "pkg/net.py": NET, "tests/test_net.py": OLD_TEST})
    GitRepo.init(repo).commit_all("initial")
    changed = NET.replace('"status": 200', '"status": 200, "cached": False').replace(
        "text.strip()", "text.strip().lower()"
    )
    write_files(repo, {"pkg/net.py": changed, "tests/test_net.py": OLD_TEST + NEW_TESTS})
    GitRepo(repo).commit_tracked("fetch and parse changed; two tests with stand-ins added")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    drift = {d["claimed_target"]: d for d in document["drift"]}
    # the stand-in that existed at base, for code that changed, drifted...
    assert drift["py:pkg.net.fetch"]["tests"] == ["tests/test_net.py::test_old_mocked"]
    assert any("py:pkg.net.fetch modified" in e for e in drift["py:pkg.net.fetch"]["evidence"])
    # ... the ones written with the new code did not
    assert "py:pkg.net.parse" not in drift, drift
    assert code == 1  # tests were added


SVC = """
class Svc:
    def _exec(self, x):
        return x + 1

    def handle(self, x):
        return self._exec(x) * 2
"""
SVC_TESTS = """
from unittest import mock

from pkg.svc import Svc


def test_real():
    assert Svc().handle(1) == 4


def test_mocked():
    with mock.patch.object(Svc, "handle", return_value=0):
        assert Svc().handle(1) == 0
"""


def test_a_helper_renamed_as_it_was_is_no_drift_of_a_mock_of_its_caller(tmp_path: Path) -> None:
    """voluptuous' ``_exec`` renamed ``_execute``: the mock of a validator that calls it was
    listed as drifted (the helper "removed", its caller "modified"), on a pure refactor."""
    repo = tmp_path / "repo"
    write_files(repo, {"pkg/__init__.py": "", "pkg/svc.py": SVC, "tests/test_svc.py": SVC_TESTS})
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"pkg/svc.py": SVC.replace("_exec", "_execute")})
    GitRepo(repo).commit_tracked("rename _exec")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert document["drift"] == [], document["drift"]
    statuses = {t["id"]: t["status"] for t in document["tests"]}
    assert statuses["tests/test_svc.py::test_real"] == "restructured", statuses
    assert code == 0
    # The helper edited as well: the mock of its caller drifted.
    write_files(repo, {"pkg/svc.py": SVC.replace("_exec", "_execute").replace("+ 1", "+ 2")})
    GitRepo(repo).commit_tracked("and change it")
    # test_real now fails (exit 3); test_mocked passes on, its mock answering as before.
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~2", "HEAD", codes=(3,))
    [drift] = document["drift"]
    assert drift["claimed_target"] == "py:pkg.svc.Svc.handle"
    assert drift["tests"] == ["tests/test_svc.py::test_mocked"]
    # Paired with its old self (renamed and edited): one changed helper under the real code.
    assert any("py:pkg.svc.Svc._execute modified" in e for e in drift["evidence"]), drift


def test_drift_says_when_every_test_of_the_real_code_behaves_the_same(tmp_path: Path) -> None:
    """itsdangerous: an extraction in ``unsign`` listed every mock of ``unsign`` as drifted,
    "code: unsign modified", with nothing to tell a refactor from a change. The code line
    now says that the tests running the real code all behave the same."""
    repo = tmp_path / "repo"
    write_files(repo, {"pkg/__init__.py": "", "pkg/svc.py": SVC, "tests/test_svc.py": SVC_TESTS})
    GitRepo.init(repo).commit_all("initial")
    extracted = SVC.replace(
        "        return self._exec(x) * 2\n",
        "        return self._double(self._exec(x))\n\n"
        "    def _double(self, y):\n        return y * 2\n",
    )
    write_files(repo, {"pkg/svc.py": extracted})
    GitRepo(repo).commit_tracked("extract _double")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert code == 0
    [drift] = document["drift"]
    assert drift["evidence"] == [
        "code: py:pkg.svc.Svc.handle modified; the 1 test that runs it behaves the same "
        "(restructured)"
    ]
