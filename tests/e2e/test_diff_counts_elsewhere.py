"""End-to-end: counts that vary with timing at another call path are unstable (#24).

boltons' ``test_socketutils_netstring`` runs ``BufferedSocket.recv_until`` in a client and in
its server thread; how many reads a loopback socket needs depends on the kernel, so the
decision ``if not nxt`` counted ``false 1013`` on one side and ``false 1011`` on the other at
the client's path, while confirmation saw the same site's counts vary at the server's path
only: the field-exact mask did not cover it and the test was ``changed`` on an identical
tree. A difference of counts only (the same outcomes reached on both sides) at a site whose
counts varied in the test's confirmation, at any path, is ``unstable`` with a reason that
says so, in a test that runs no changed code; a site whose counts did not vary, another
outcome, or a test that runs changed code stays ``changed``.

No timing here: a counter file outside the tree, read and extended by every recording of the
test, makes the thread's loop go round once more in each recording (so its counts differ
between the two confirming recordings of a side), and a data file in the tree makes the main
path's loop go round once more on head than on base (the same in every recording of a side,
so it is reproduced when both sides are recorded again): variance seen at one path, the
difference at another, as in boltons.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import GitRepo, cli_json, write_files

POLL = """
def ready(flag):
    return flag


def wait_ready(poll):
    while True:
        if ready(poll()):
            return True


def settle(poll):
    while True:
        if ready(poll()):
            return True
"""
# wait_ready consumes one flag before it starts (a code change of the shared site).
POLL_SKIPS = POLL.replace(
    "def wait_ready(poll):\n    while True:", "def wait_ready(poll):\n    poll()\n    while True:"
)
TESTS = '''
import threading
from pathlib import Path

from pkg.poll import settle, wait_ready

COUNTER = {counter!r}
DATA = Path(__file__).resolve().parents[1] / "data.txt"


def _recordings():
    """How many recordings of this test ran before this one (a file outside the tree)."""
    with open(COUNTER, "a+") as f:
        f.seek(0)
        n = len(f.read())
        f.write("x")
    return n


def _flags(falses):
    return iter([False] * falses + [True]).__next__


def test_shared():
    # The thread's rounds grow with every recording; the main path's follow the data, whose
    # length is handed to no recorded call: as an argument it would be a value that every
    # recording of a side shows alike, a change that holds beside the thread's (#51).
    worker = threading.Thread(target=wait_ready, args=(_flags(2 + _recordings()),))
    worker.start()
    worker.join()
    falses = len(DATA.read_text().split())
    assert wait_ready(iter([False] * falses + [True]).__next__)


def test_plain():
    # The same data, at a site whose counts never vary.
    assert settle(_flags(len(DATA.read_text().split())))
'''


def _repo(tmp_path: Path) -> GitRepo:
    repo = tmp_path / "repo"
    tests = TESTS.format(counter=str(tmp_path / "recordings.txt"))
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/poll.py": POLL,
            "tests/test_poll.py": tests,
            "data.txt": "a b c\n",
        },
    )
    git = GitRepo.init(repo)
    git.commit_all("a loop reached from a thread and from the main path")
    return git


def _test(document: dict[str, Any], name: str) -> dict[str, Any]:
    (test,) = [t for t in document["tests"] if t["id"].endswith("::" + name)]
    return test


def _sites(test: dict[str, Any]) -> set[str]:
    return {str(c.get("site") or c.get("symbol")) for c in test["changes"]}


def test_counts_that_varied_at_another_path_are_unstable(tmp_path: Path) -> None:
    git = _repo(tmp_path)
    write_files(git.path, {"data.txt": "a b c d\n"})  # one more round on the main path
    git.commit_all("more data")
    code, document = cli_json(git.path, tmp_path, "diff", "HEAD~1", "HEAD")
    shared = _test(document, "test_shared")
    assert shared["status"] == "unstable", shared
    said = [r for r in shared["reasons"] if "at another path" in r]
    assert any(
        r.startswith("unstable (counts of this site varied in ")
        and "confirmation at another path): py:pkg.poll.wait_ready/if[" in r
        and "true 1 / false 3 → true 1 / false 4" in r
        for r in said
    ), shared["reasons"]
    assert any(r.startswith("unstable (counts of this call varied in ") for r in said), said
    # The same data at a site whose counts never varied: a change.
    plain = _test(document, "test_plain")
    assert plain["status"] == "changed", plain
    assert any("settle" in site for site in _sites(plain)), plain["changes"]
    assert code == 1


def test_a_code_change_of_counts_at_that_site_stays_changed(tmp_path: Path) -> None:
    git = _repo(tmp_path)
    write_files(git.path, {"pkg/poll.py": POLL_SKIPS})  # one round fewer on every path
    git.commit_all("wait_ready skips a flag")
    code, document = cli_json(git.path, tmp_path, "diff", "HEAD~1", "HEAD")
    shared = _test(document, "test_shared")
    # It runs the changed code: its counts may be what the change changed.
    assert shared["status"] == "changed", shared
    assert any("wait_ready" in site for site in _sites(shared)), shared["changes"]
    assert not [r for r in shared["reasons"] if "at another path" in r], shared["reasons"]
    assert _test(document, "test_plain")["status"] == "unchanged"
    assert code == 1
