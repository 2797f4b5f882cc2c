"""How progress looks on standard error: a live line on a terminal, plain lines in a log.

The work reports its steps to :class:`~diffgenome.analysis.progress.Progress`; these are the
renderers it hands them to:

- :class:`LiveRenderer`, when standard error is a terminal: one line that rich rewrites a
  few times a second (the elapsed time moves while one slow test runs), with each finished
  step printed above it;
- :class:`LogRenderer` otherwise (a pipe, a file, a CI log): whole plain lines only -- no
  ``\\r`` and no escape sequence, which a log keeps as garbage -- at most one progress line
  every :data:`LOG_INTERVAL_S` seconds, so that a log says the work is alive without a line
  per test.

Both print each finished step's line as the model words it (its duration included). Progress
goes to standard error only (standard output may carry ``--json -``).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TextIO

from rich.console import Console, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from diffgenome.analysis.progress import PROG, Clock, Progress, Step, duration_text
from diffgenome.analysis.report.console import stream_isatty, wants_colour

#: At most one progress line this often in a log (seconds); finished steps always get theirs.
LOG_INTERVAL_S = 10.0
#: Sets that interval (seconds, a decimal number, 0 or more): tests want lines sooner.
INTERVAL_ENV = "DIFFGENOME_PROGRESS_INTERVAL"
#: How often the live line is redrawn on a terminal.
LIVE_REFRESH_PER_S = 4.0
#: The longest a log's heartbeat sleeps: a short interval must still be kept.
_HEARTBEAT_MAX_S = 1.0
_HEARTBEAT_MIN_S = 0.02


def _title_and_count(step: Step) -> str:
    counted = step.counted()
    return f"{step.title()}: {counted}" if counted else step.title()


def progress_line(steps: tuple[Step, ...], now: float) -> str:
    """A log's progress line: the steps under way in the order they began (an outer step
    first; recordings made side by side each with its count), and for how long the newest
    has run."""
    inner = steps[-1]
    counted = inner.counted()
    how_far = f"{counted}, " if counted else ""
    parts = [_title_and_count(step) for step in steps[:-1]]
    parts.append(f"{inner.title()}: {how_far}{duration_text(now - inner.started)} so far")
    return f"{PROG}: " + "; ".join(parts)


# -- a log: plain lines ------------------------------------------------------------------


class LogRenderer:
    """Whole plain lines for a pipe, a file or a CI log, throttled.

    A progress line is written when the work has said nothing for ``interval`` seconds (no
    line of any kind, no step begun); a heartbeat thread (``heartbeat``) checks that even
    while the work reports nothing, so that a slow test or a long load still shows in the
    log. ``clock`` is the time source, a parameter so the throttling can be tested with a
    clock a test moves by hand."""

    def __init__(
        self,
        stream: TextIO,
        interval: float = LOG_INTERVAL_S,
        clock: Clock = time.monotonic,
        *,
        heartbeat: bool = True,
    ) -> None:
        self._stream = stream
        self._interval = max(0.0, interval)
        self._clock = clock
        self._steps: tuple[Step, ...] = ()
        self._quiet_since = clock()
        self._lock = threading.Lock()
        self._heartbeat = heartbeat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def show(self, steps: tuple[Step, ...]) -> None:
        with self._lock:
            known = {step.serial for step in self._steps}
            current = {step.serial for step in steps}
            self._steps = steps
            if current - known:  # a step began: its first line waits a whole interval
                self._quiet_since = self._clock()
            elif current == known:  # one got further (a step that ends has its own last line)
                self._maybe_write()
        if steps and self._heartbeat and self._thread is None:
            self._thread = threading.Thread(
                target=self._beat, name="diffgenome-progress", daemon=True
            )
            self._thread.start()

    def line(self, text: str) -> None:
        with self._lock:
            self._write(text)

    def tick(self) -> None:
        """Write a progress line if one is due (the heartbeat calls this)."""
        with self._lock:
            self._maybe_write()

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        with self._lock:
            self._steps = ()

    def _maybe_write(self) -> None:
        if not self._steps:
            return
        now = self._clock()
        if now - self._quiet_since >= self._interval:
            self._write(progress_line(self._steps, now))

    def _write(self, text: str) -> None:
        # Nothing that a log would keep as garbage: one line, no carriage return, no escape.
        clean = "".join(ch for ch in text if ch.isprintable() or ch == "\t")
        self._stream.write(clean + "\n")
        self._stream.flush()
        self._quiet_since = self._clock()

    def _beat(self) -> None:
        period = min(_HEARTBEAT_MAX_S, max(_HEARTBEAT_MIN_S, self._interval / 2))
        while not self._stop.wait(period):
            with contextlib.suppress(Exception):  # a heartbeat never fails the work
                self.tick()


# -- a terminal: one live line -----------------------------------------------------------


class LiveRenderer:
    """A live line on a terminal (rich), rewritten a few times a second, with finished steps
    printed above it; nothing live between steps, so what the command prints afterwards on
    standard output never mixes with it."""

    def __init__(self, console: Console, clock: Clock = time.monotonic) -> None:
        self._console = console
        self._clock = clock
        self._steps: tuple[Step, ...] = ()
        self._live: _Live | None = None

    def show(self, steps: tuple[Step, ...]) -> None:
        began = bool(steps) and (not self._steps or steps[-1].serial != self._steps[-1].serial)
        self._steps = steps
        if steps and self._live is None:
            self._live = _Live(self._console, self._render)
            self._live.start()
        elif not steps and self._live is not None:
            live, self._live = self._live, None
            live.stop()
        elif began and self._live is not None:
            # A step that begins is shown at once, however short; how far it gets is left
            # to rich's own redraws.
            self._live.refresh()

    def line(self, text: str) -> None:
        self._console.print(Text(text), highlight=False, soft_wrap=True)

    def close(self) -> None:
        self._steps = ()
        live, self._live = self._live, None
        if live is not None:
            live.stop()

    def _render(self) -> RenderableType:
        steps = self._steps
        if not steps:
            return Text("")
        now = self._clock()
        inner = steps[-1]
        counts = [step.counted() for step in steps]
        elapsed = duration_text(now - inner.started)
        titles = [step.title() for step in steps]
        has_bar = inner.total is not None or inner.percent is not None
        # Everything but the titles keeps its width, however narrow the terminal: the
        # counts are what the line is for (before: two recordings side by side were one
        # cell, cut at the width with the first one's count). One column is left free, so
        # that the terminal never wraps the line.
        room = self._console.width - 1
        fixed = _fixed_width(counts, elapsed, bar=has_bar)
        if has_bar and fixed + sum(len(title) for title in _shortest(titles)) > room:
            has_bar = False  # the titles, shortened, before the bar
            fixed = _fixed_width(counts, elapsed, bar=False)
        titles = _fit(titles, max(room - fixed, _MIN_TITLE * len(titles)))
        grid = Table.grid(padding=(0, 1))
        title = Text(f"{PROG}: ")
        before = "".join(
            f"{text}: {count}; " if count else f"{text}; "
            for text, count in zip(titles[:-1], counts[:-1], strict=True)
        )
        title.append(before + titles[-1], style="bold")
        grid.add_column(no_wrap=True)
        cells: list[RenderableType] = [title]
        if has_bar:
            grid.add_column(width=_BAR, no_wrap=True)
            if inner.total is not None:
                bar = ProgressBar(total=max(inner.total, 1), completed=inner.done or 0, width=_BAR)
            else:
                bar = ProgressBar(total=100, completed=inner.percent or 0, width=_BAR)
            cells.append(bar)
        if counts[-1] is not None:
            grid.add_column(no_wrap=True)
            cells.append(Text(counts[-1], style="cyan"))
        grid.add_column(no_wrap=True)
        cells.append(Text(elapsed, style="dim"))
        grid.add_row(*cells)
        return grid


#: The live line's bar, and the least of a step's title that is kept however narrow.
_BAR = 20
_MIN_TITLE = 4


def _fixed_width(counts: list[str | None], elapsed: str, *, bar: bool) -> int:
    """The columns of the live line that are not titles: the prefix, each earlier step's
    count and separator, the bar, the last step's count and the time (cells one apart)."""
    width = len(PROG) + 2
    for count in counts[:-1]:
        width += (len(count) + 2 if count else 0) + 2  # ": N/M tests" and "; "
    width += (_BAR + 1) if bar else 0
    width += (len(counts[-1]) + 1) if counts[-1] else 0
    return width + 1 + len(elapsed)


#: How a title is made shorter, in turn, until the line fits: a commit's sha goes first (the
#: step's last line keeps it), then the verb (the bar and the count say it), then ``again``.
_SHORTER: tuple[Callable[[str], str], ...] = (
    lambda title: re.sub(r" \([0-9a-f]{12}\)", "", title),
    lambda title: title.split(" ", 1)[1] if " " in title else title,
    lambda title: title.replace(" again", ""),
)


def _shortest(titles: list[str]) -> list[str]:
    """``titles`` with all that :data:`_SHORTER` spares taken out."""
    for shorter in _SHORTER:
        titles = [shorter(title) for title in titles]
    return titles


def _fit(titles: list[str], room: int) -> list[str]:
    """``titles`` within ``room`` columns together: first without what the line can spare
    (:data:`_SHORTER`: ``base main~1 (1 of 2)`` still says which side and which round),
    then each longer than its share loses its middle."""
    for shorter in (None, *_SHORTER):
        if shorter is not None:
            titles = [shorter(title) for title in titles]
        if sum(len(title) for title in titles) <= room:
            return titles
    share = max(_MIN_TITLE, room // len(titles))
    out = []
    for title in titles:
        if len(title) <= share:
            out.append(title)
            continue
        head = (share - 1) // 2
        tail = share - 1 - head
        out.append(title[:head] + "\u2026" + (title[-tail:] if tail else ""))
    return out


class _Live:
    """rich's :class:`~rich.live.Live` as this renderer uses it: transient (the line goes when
    the step does), redrawn by rich's own thread. What other code writes to ``sys.stderr``
    meanwhile (a warning, ``HTML report written to``) is printed above the line instead of
    through it; standard output is left alone (it may be a pipe, and nothing of ours writes
    there during a step)."""

    def __init__(self, console: Console, render: Callable[[], RenderableType]) -> None:
        from rich.live import Live

        self._live = Live(
            console=console,
            transient=True,
            auto_refresh=True,
            refresh_per_second=LIVE_REFRESH_PER_S,
            redirect_stdout=False,
            redirect_stderr=True,
            get_renderable=render,
        )

    def start(self) -> None:
        self._live.start(refresh=True)

    def refresh(self) -> None:
        self._live.refresh()

    def stop(self) -> None:
        self._live.stop()


# -- choosing ----------------------------------------------------------------------------


def log_interval(environ: Mapping[str, str] | None = None) -> float:
    """:data:`LOG_INTERVAL_S`, or what :data:`INTERVAL_ENV` says (a bad value is ignored:
    progress must not be what stops a run)."""
    env = os.environ if environ is None else environ
    text = env.get(INTERVAL_ENV, "").strip()
    if text:
        with contextlib.suppress(ValueError):
            value = float(text)
            if math.isfinite(value) and value >= 0:
                return value
    return LOG_INTERVAL_S


@contextlib.contextmanager
def progress_on_stderr(quiet: bool) -> Iterator[Progress]:
    """Progress for a command on standard error (never standard output, which may hold
    ``--json -``): a live line on a terminal, plain lines in a log, nothing with ``quiet``.
    Closed on every way out, so that an error line never lands on a half-drawn live line."""
    progress = make_progress(quiet=quiet)
    try:
        yield progress
    finally:
        progress.close()


def make_progress(
    *,
    quiet: bool = False,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> Progress:
    """The reporter for this command: none with ``quiet``, a live line when ``stream``
    (standard error by default) is a terminal that can redraw a line, plain lines
    otherwise."""
    if quiet:
        return Progress()
    env = os.environ if environ is None else environ
    out = sys.stderr if stream is None else stream
    if stream_isatty(out) and env.get("TERM", "") not in ("dumb", "unknown"):
        colour = wants_colour(True, dict(env))
        console = Console(
            file=out,
            force_terminal=True,
            no_color=not colour,
            color_system="auto" if colour else None,
            highlight=False,
            markup=False,
            emoji=False,
        )
        return Progress(LiveRenderer(console))
    return Progress(LogRenderer(out, log_interval(env)))


__all__ = [
    "INTERVAL_ENV",
    "LOG_INTERVAL_S",
    "LiveRenderer",
    "LogRenderer",
    "log_interval",
    "make_progress",
    "progress_line",
]
