"""How far a pytest session is, read from its terminal output as it arrives.

The recording runs pytest in a child process with the user's own arguments (they are the
test selection, so nothing may be added for the sake of progress), so the only word on how
far it is comes from what pytest prints. pytest flushes each test's letter as the test
ends, so the output is read in chunks, not lines, and a half-written line counts too.

What is read, from the most to the least trustworthy:

- the total: ``collected 412 items`` (``/ 10 deselected / 402 selected``: the selected
  count), or pytest-xdist's ``2 workers [412 items]``; ``-q`` prints neither;
- ``[ 3/412]`` at a line end (``console_output_style = count``): tests done, exactly;
- ``[ 45%]`` at a line end: pytest's ``done * 100 // total``, which bounds the count;
- the letters of a line (``tests/test_a.py ..F.s``) or a verbose line's word (``PASSED``):
  one per test, but a teardown error or a rerun adds a letter and a test's own output can
  look like letters, so this count is kept within what the last percentage allows.

A test that prints what looks like a progress line can mislead the count a little; it can
never take it past the total, and the step's last line counts the tests in the store.
"""

from __future__ import annotations

import math
import re

_COLLECTED = re.compile(r"\bcollected (\d+) items?\b(.*)$")
_SELECTED = re.compile(r"/ (\d+) selected\b")
_XDIST_ITEMS = re.compile(r"^\d+ workers? \[(\d+) items?\]")
_PERCENT = re.compile(r"\[\s*(\d{1,3})%\]\s*$")
#: pytest-xdist's verbose line: ``[gw0] [ 50%] PASSED tests/test_a.py::test_x``.
_XDIST_PERCENT = re.compile(r"^\[gw\d+\]\s*\[\s*(\d{1,3})%\]")
_COUNT = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*\]\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: One letter per test ends in these (``.`` passed, ``F`` failed, ``E`` error, ``s``
#: skipped, ``x``/``X`` xfail/xpass).
_OUTCOME_LETTERS = frozenset(".FEsxX")
#: Letters that stand on a progress line but are no test of their own: a rerun
#: (pytest-rerunfailures), subtests (``,``, ``u``, ``-``, ``y``).
_OTHER_LETTERS = frozenset("R,u-y")
#: The most of a half-written line that is kept: a progress line is as wide as pytest's
#: terminal, and a test that prints megabytes without a newline must not make every new
#: piece of output cost a copy of all of them.
_MAX_PARTIAL = 8192
#: A verbose line's word for a test that ended.
_OUTCOME_WORDS = frozenset({"PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"})


class PytestProgress:
    """Tests done and collected so far in one pytest session's output; feed it the output
    as it comes (:meth:`feed`), read :attr:`done`, :attr:`total` and :attr:`percent`."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.percent: int | None = None
        self._counted = 0  # letters of the lines that ended
        self._exact: int | None = None  # from a ``[ 3/412]``
        self._partial = ""  # the line being written
        self._finished = False  # 100% was printed: the count is the total

    @property
    def done(self) -> int | None:
        """The tests done, when any count is known at all."""
        if self._finished and self.total is not None:
            return self.total
        if self._exact is not None:
            return self._exact
        counted = self._counted + _letters(self._partial)
        if self.total is None:
            return counted if counted or self.percent is not None else None
        # The last percentage bounds the lines it ended (``_counted`` was kept within it
        # then), not the line being written after it: the letters of a file of 238 tests
        # count as they come, not once its line ends (before: stuck at 5/284 for the
        # whole file, then a jump to 243).
        low = math.ceil(self.percent * self.total / 100) if self.percent is not None else 0
        return max(low, min(self.total, counted))

    def feed(self, text: str) -> None:
        """Take the next chunk of output (any size, lines cut anywhere)."""
        if not text:
            return
        text = _ANSI.sub("", text.replace("\r\n", "\n"))
        *ended, partial = (self._partial + text).split("\n")
        self._partial = partial[-_MAX_PARTIAL:]
        for line in ended:
            self._line(line)

    def _line(self, line: str) -> None:
        if self._finished:
            return
        stripped = line.strip()
        found = _COLLECTED.search(stripped)
        if found is not None:
            selected = _SELECTED.search(found.group(2))
            self.total = int(selected.group(1) if selected else found.group(1))
            return
        found = _XDIST_ITEMS.match(stripped)
        if found is not None:
            self.total = int(found.group(1))
            return
        counted = _letters(stripped)
        self._counted += counted
        exact = _COUNT.search(stripped)
        if exact is not None:
            self._exact, total = int(exact.group(1)), int(exact.group(2))
            self.total = self.total or total
            self._finished = self._exact >= total
            return
        percent = _PERCENT.search(stripped) or _XDIST_PERCENT.match(stripped)
        if percent is not None:
            value = min(100, int(percent.group(1)))
            self.percent = value
            if value == 100:
                self._finished = True
            elif self.total is not None:
                # Letters are not exact (a teardown error adds one): what pytest computed
                # from its own count wins.
                low = math.ceil(value * self.total / 100)
                high = max(low, math.ceil((value + 1) * self.total / 100) - 1)
                self._counted = max(low, min(high, self._counted))


def _letters(line: str) -> int:
    """Tests that ended on this progress line (or the part of it written so far)."""
    line = _PERCENT.sub("", _COUNT.sub("", line)).strip()
    if not line or line.startswith("collecting"):  # ``-v``: ``collecting ... collected 3 items``
        return 0
    words = line.split()
    if any(word in _OUTCOME_WORDS for word in words) and "::" in line:
        return 1
    last = words[-1]
    if all(ch in _OUTCOME_LETTERS or ch in _OTHER_LETTERS for ch in last):
        return sum(1 for ch in last if ch in _OUTCOME_LETTERS)
    return 0


def pytest_error(output: str) -> str:
    """pytest's most telling line: the exception of the first failed import or collection,
    else its first error line, else its last line."""
    # A project's own ``--color=yes`` colours what pytest prints even into a pipe.
    output = _ANSI.sub("", output)
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for line in lines:
        text = line[1:].strip() if line.startswith("E ") else ""
        if text and (":" in text) and text.split(":", 1)[0].split(".")[-1][:1].isupper():
            name = text.split(":", 1)[0].split(".")[-1]
            if name.endswith(("Error", "Exception", "Exit", "Interrupt")):
                return text
    for line in lines:
        if line.startswith(("ERROR", "E ")) or "Error" in line:
            return (line[2:] if line.startswith("E ") else line).strip()
    return lines[-1].strip("= ") if lines else "no output"


__all__ = ["PytestProgress", "pytest_error"]
