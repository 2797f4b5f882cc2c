"""Selective recording: which of base's tests a diff need not record again at head.

``diff --selective`` records at head only what the change can reach. A test is carried over
(not run at head; its base recording stands for it, ``unchanged`` with the reason
:data:`CARRIED`) only when every one of these holds, so that nothing is skipped on a guess:

- base is a whole, complete recording of a commit, read from the store, with code this
  repository has (its genome says what the test ran);
- every file that differs between the sides is a Python file the recording names as a module
  (``module_of``), parsed on both sides, and no ``conftest.py``: a data file, a
  configuration, a lock file, a dependency pin, a file outside the recorded code or one that
  cannot be parsed may reach any test, so then every test is recorded (:attr:`Plan.full`
  says why);
- the test is verified at base (nothing missing from its evidence);
- it does not reach the change (:func:`~diffgenome.analysis.diff.affected.affected_tests`:
  no call of changed code, no stand-in for it, no read of a name a changed body binds, and no
  value made once for many tests by code that reached it: a fixture of module or session
  scope, a module's import, diff/sharing.py);
- its file did not change (an edited test is recorded again, and so is every test of it).

A test added at head is not in base, so it is never carried: it runs. A carried id that head
no longer collects is not carried either: the recording says which ids it took out
(``--genome-carry``), and a base test neither recorded nor taken out is ``removed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from diffgenome.analysis.diff.affected import affected_tests
from diffgenome.analysis.diff.codechanges import CodeChangeInput
from diffgenome.analysis.diff.importers import ImportGraph
from diffgenome.protocol.vocab import IMPORT_TEST_ID

#: The reason a carried test's entry gives.
CARRIED = "not recorded at head: it does not reach the change (its base recording carried over)"


@dataclass(frozen=True, slots=True)
class Plan:
    """What head records: ``carried`` are base's tests it need not run; ``full`` says why
    every test is recorded instead (None: the plan holds)."""

    carried: tuple[str, ...] = ()
    full: str | None = None
    #: How many of base's tests were kept to be recorded, by why: ``reach`` (they reach the
    #: change), ``file`` (their file changed), ``incomplete`` (their evidence is incomplete).
    kept: tuple[tuple[str, int], ...] = ()

    def nothing_carried(self) -> str | None:
        """Why no test was carried where the plan held (a note: a selective diff that records
        every test is no cheaper, and should say why), None otherwise."""
        if self.full is not None or self.carried or not self.kept:
            return None
        words = {  # (one, several)
            "reach": ("reaches the change", "reach the change"),
            "file": (
                "is in a changed test file (an edited test file is recorded whole)",
                "are in a changed test file (an edited test file is recorded whole)",
            ),
            "incomplete": ("was not verified at base", "were not verified at base"),
        }
        parts = [f"{n} {words[why][n != 1]}" for why, n in self.kept if n]
        return "--selective carried no test: of base's tests, " + "; ".join(parts)


def plan(
    base: Mapping[str, Any],
    changed: Sequence[str],
    code: CodeChangeInput,
    module_of: Callable[[str], str | None],
    source_of: Callable[[str], str | None] | None = None,
    graph_of: Callable[[], ImportGraph] | None = None,
) -> Plan:
    """The tests of ``base`` (a genome document) that the change cannot reach. ``changed``:
    every path (from the repository's top) that differs between the sides, either name of a
    renamed one; ``code``: the code changes read from them; ``source_of(path)``: base's
    source of a file, where the scopes of fixtures are read (diff/sharing.py); ``graph_of()``:
    the imports of base's files, where the tests that can see what a module made while
    imported are read (diff/importers.py)."""
    run = base.get("run") or {}
    if not run.get("complete", False):
        return Plan(full="base's run is incomplete")
    for path in changed:
        name = path.rpartition("/")[2]
        if not path.endswith(".py"):
            return Plan(full=f"{path} changed (not Python code: a test may read it)")
        if name == "conftest.py":
            return Plan(full=f"{path} changed (a conftest reaches every test under it)")
        if module_of(path) is None and not _test_file(path):
            return Plan(full=f"{path} changed (outside the code the recording names)")
    if code.unparsed:
        return Plan(full=f"{code.unparsed[0]} could not be parsed")
    found = affected_tests(dict(base), code, module_of, source_of, graph_of)
    reached = {item.test for item in found}
    carried: list[str] = []
    kept = {"reach": 0, "file": 0, "incomplete": 0}
    for record in base.get("tests") or ():
        test_id = str(record.get("id"))
        if test_id == IMPORT_TEST_ID:
            continue
        if test_id in reached:
            kept["reach"] += 1
        elif not record.get("verified", False):
            kept["incomplete"] += 1
        elif _in_changed_file(test_id, changed):
            kept["file"] += 1
        else:
            carried.append(test_id)
    return Plan(carried=tuple(sorted(set(carried))), kept=tuple(kept.items()))


def _test_file(path: str) -> bool:
    name = path.rpartition("/")[2]
    return name.startswith("test_") or name.endswith("_test.py")


def _in_changed_file(test_id: str, changed: Sequence[str]) -> bool:
    """Whether the test's file is among the changed paths; its id is from pytest's rootdir
    and the paths from the repository's top, so a path that ends with it counts too."""
    file = test_id.split("::", 1)[0]
    return any(path == file or path.endswith("/" + file) for path in changed)


__all__ = ["CARRIED", "Plan", "plan"]
