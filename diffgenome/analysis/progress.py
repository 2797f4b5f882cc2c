"""How far long work is, as data: the steps under way, what each has done, and who shows it.

Recording a side can take minutes, and so can loading a big run, confirming or exporting.
Silence for that long reads as a hang, at a terminal and in a CI log alike (some CI systems
even stop a job that prints nothing for ten minutes). The work reports *what* it is doing to
:class:`Progress` -- steps that begin and end, tests done of how many -- and a
:class:`Renderer` decides how that looks (the two there are live in
:mod:`diffgenome.analysis.report.progress`), so the work never formats anything and the
renderings cannot drift apart in what they say. Every renderer ends a step that succeeds
with the same line, :func:`finished_line` (``diffgenome: recorded base HEAD~1 (a1b2c3d): 412
tests in 38.2 s``), so that a log says where the time went; a step that fails ends without
it: the error says what happened.

Nothing here draws: this module imports no rich, so the work that reports (recording the
sides, the pipeline, exporting) does not depend on how it is shown. Progress never fails the
work: every call into a renderer is guarded, and a renderer that raised once is dropped for
the rest of the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

PROG = "diffgenome"

Clock = Callable[[], float]


@dataclass(frozen=True)
class Step:
    """One piece of long work as data: what it is, since when, and how far it is.

    ``done``/``total`` count tests when they are known; ``percent`` is what is left when only
    a percentage is (pytest run with ``-q`` prints no collected count)."""

    doing: str  # "recording"
    did: str  # "recorded", for the step's last line
    subject: str  # "base HEAD~1 (a1b2c3d)": the side is part of what the step works on
    started: float
    done: int | None = None
    total: int | None = None
    percent: int | None = None
    #: Tells steps apart (two may begin at one clock reading).
    serial: int = 0

    def title(self) -> str:
        return f"{self.doing} {self.subject}".strip()

    def counted(self) -> str | None:
        """How far the step is, in tests when it can be said in tests."""
        if self.total is not None:
            return f"{min(self.done or 0, self.total)}/{self.total} tests"
        if self.done is not None:
            tests = f"{self.done} test{'' if self.done == 1 else 's'}"
            return tests if self.percent is None else f"{tests}, {self.percent}%"
        if self.percent is not None:
            return f"{self.percent}%"
        return None


def duration_text(seconds: float) -> str:
    """``38.2 s`` below a minute (a tenth is what tells two short steps apart), ``2 min 05
    s`` above it."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def finished_line(step: Step, result: str, now: float) -> str:
    """The step's last line: what was done to what, its result, and how long it took."""
    text = f"{step.did} {step.subject}".strip()
    if result:
        text = f"{text}: {result}" if step.subject else f"{text} {result}"
    return f"{PROG}: {text} in {duration_text(now - step.started)}"


class Renderer(Protocol):
    """How progress looks; :class:`Progress` calls it with what changed."""

    def show(self, steps: tuple[Step, ...]) -> None:
        """The steps under way changed (one began, ended, or got further); outer first."""

    def line(self, text: str) -> None:
        """A line to keep: a step's last line or a note."""

    def close(self) -> None:
        """Nothing more comes: leave the terminal (or log) as a line-based tool would."""


class StepHandle:
    """What the work holds while a step runs, to say how far it is and what it came to."""

    def __init__(self, progress: Progress, step: Step) -> None:
        self._progress = progress
        self.step = step
        self.result = ""

    def advance(
        self, *, done: int | None = None, total: int | None = None, percent: int | None = None
    ) -> None:
        """Tests done, of how many, or the percentage; None leaves a value as it was."""
        step = self.step
        moved = dataclasses.replace(
            step,
            done=step.done if done is None else done,
            total=step.total if total is None else total,
            percent=step.percent if percent is None else percent,
        )
        if moved != step:
            self._progress._replace(self, moved)


class Progress:
    """The one progress reporter: the steps under way, handed to a renderer (or to none,
    for ``--quiet`` and for code that runs without a person watching).

    Steps nest (a recording within a confirmation) and may run at once in threads (base and
    head confirmed side by side): each ends on its own, in whatever order. Calls never
    raise: a renderer that fails is dropped, and the work goes on."""

    def __init__(self, renderer: Renderer | None = None, clock: Clock = time.monotonic) -> None:
        self._renderer = renderer
        self._clock = clock
        self._handles: list[StepHandle] = []
        self._serial = 0
        self._lock = threading.Lock()

    @property
    def renderer(self) -> Renderer | None:
        """How this progress is shown (None: not at all)."""
        return self._renderer

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(handle.step for handle in self._handles)

    @contextlib.contextmanager
    def step(self, doing: str, did: str, subject: str = "") -> Iterator[StepHandle]:
        """A step from here to the end of the ``with``: its last line when it succeeds,
        none when it raises (the error is the last word then)."""
        with self._lock:
            self._serial += 1
            handle = StepHandle(self, Step(doing, did, subject, self._clock(), serial=self._serial))
            self._handles.append(handle)
            steps = self.steps
        self._render(lambda r: r.show(steps))
        ok = False
        try:
            yield handle
            ok = True
        finally:
            with self._lock:
                if handle in self._handles:
                    self._handles.remove(handle)
                steps = self.steps
            # The live line goes first, so that the step's last line is not followed by a
            # redraw of the step it ends.
            self._render(lambda r: r.show(steps))
            if ok:
                text = finished_line(handle.step, handle.result, self._clock())
                self._render(lambda r: r.line(text))

    def note(self, text: str) -> None:
        """A line to keep that is no step (``reusing run ...``)."""
        line = f"{PROG}: {text}"
        self._render(lambda r: r.line(line))

    def close(self) -> None:
        renderer, self._renderer = self._renderer, None
        if renderer is not None:
            with contextlib.suppress(Exception):
                renderer.close()

    def _replace(self, handle: StepHandle, step: Step) -> None:
        with self._lock:
            handle.step = step
            steps = self.steps
        self._render(lambda r: r.show(steps))

    def _render(self, call: Callable[[Renderer], None]) -> None:
        renderer = self._renderer
        if renderer is None:
            return
        try:
            call(renderer)
        except Exception:
            # Progress never fails the work: a renderer that broke (a closed standard error,
            # a terminal gone) is dropped rather than tried again on every test.
            self._renderer = None
            with contextlib.suppress(Exception):
                renderer.close()


__all__ = [
    "Clock",
    "Progress",
    "Renderer",
    "Step",
    "StepHandle",
    "duration_text",
    "finished_line",
]
