"""The progress reporter and its plain rendering for logs.

Time is an input here: the reporter and the log renderer take a clock, and these tests pass
one they move by hand, so that what is throttled and what each line says is checked exactly
and never depends on how fast the machine is.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading

import pytest
from rich.console import Console

from diffgenome.analysis.progress import Progress, Step, duration_text
from diffgenome.analysis.report.progress import (
    INTERVAL_ENV,
    LOG_INTERVAL_S,
    LiveRenderer,
    LogRenderer,
    log_interval,
    make_progress,
)


class Clock:
    """A clock that stands still until the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def log_progress(interval: float = 10.0) -> tuple[Progress, io.StringIO, Clock]:
    clock, out = Clock(), io.StringIO()
    renderer = LogRenderer(out, interval, clock, heartbeat=False)
    return Progress(renderer, clock), out, clock


def lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


def test_a_quick_step_is_one_line_with_its_duration() -> None:
    progress, out, clock = log_progress()
    with progress.step("recording", "recorded", "base HEAD~1 (f921860f1ebf)") as step:
        step.advance(total=412)
        clock.advance(3.25)
        step.advance(done=412)
        step.result = "412 tests"
    assert lines(out) == ["diffgenome: recorded base HEAD~1 (f921860f1ebf): 412 tests in 3.2 s"]


def test_a_log_gets_at_most_one_progress_line_per_interval() -> None:
    progress, out, clock = log_progress(interval=10)
    with progress.step("recording", "recorded", "head HEAD (9492620c871e)") as step:
        step.advance(total=400)
        for done in range(1, 41):  # a test every second for 40 seconds
            clock.advance(1)
            step.advance(done=done)
        step.result = "400 tests"
    assert lines(out) == [
        "diffgenome: recording head HEAD (9492620c871e): 10/400 tests, 10.0 s so far",
        "diffgenome: recording head HEAD (9492620c871e): 20/400 tests, 20.0 s so far",
        "diffgenome: recording head HEAD (9492620c871e): 30/400 tests, 30.0 s so far",
        "diffgenome: recording head HEAD (9492620c871e): 40/400 tests, 40.0 s so far",
        "diffgenome: recorded head HEAD (9492620c871e): 400 tests in 40.0 s",
    ]


def test_the_interval_counts_from_the_last_line_of_any_kind() -> None:
    """A step that begins right after another ended waits a whole interval for its first
    progress line, and a note resets the wait as well."""
    progress, out, clock = log_progress(interval=5)
    with progress.step("loading", "loaded", "base") as step:
        clock.advance(4)
        step.result = "3 tests"
    with progress.step("diffing", "diffed") as step:
        clock.advance(4.5)
        step.advance(done=1)  # 4.5 s after the step began: nothing yet
        progress.note("reusing run r1")
        clock.advance(4.5)
        step.advance(done=2)  # 4.5 s after the note: still nothing
        clock.advance(0.5)
        step.advance(done=3)
        step.result = "3 tests"
    assert lines(out) == [
        "diffgenome: loaded base: 3 tests in 4.0 s",
        "diffgenome: reusing run r1",
        "diffgenome: diffing: 3 tests, 9.5 s so far",
        "diffgenome: diffed 3 tests in 9.5 s",
    ]


def test_the_heartbeat_writes_while_the_work_reports_nothing() -> None:
    """A slow test sends no output: the heartbeat's tick still says the work is alive."""
    clock, out = Clock(), io.StringIO()
    renderer = LogRenderer(out, 10, clock, heartbeat=False)
    progress = Progress(renderer, clock)
    with progress.step("recording", "recorded", "base") as step:
        step.advance(total=2, done=1)
        clock.advance(9)
        renderer.tick()
        assert lines(out) == []
        clock.advance(1)
        renderer.tick()
        renderer.tick()  # one line per interval, however often it ticks
        step.result = "2 tests"
    assert lines(out) == [
        "diffgenome: recording base: 1/2 tests, 10.0 s so far",
        "diffgenome: recorded base: 2 tests in 10.0 s",
    ]


def test_nested_steps_say_the_outer_step_too() -> None:
    progress, out, clock = log_progress(interval=1)
    with progress.step("confirming", "confirmed", "3 tests that differ") as outer:
        with progress.step("recording", "recorded", "base again (1 of 2)") as inner:
            clock.advance(1)
            inner.advance(total=3, done=2)
            inner.result = "3 tests"
        outer.result = "recorded them twice more on each side"
    assert lines(out) == [
        "diffgenome: confirming 3 tests that differ; recording base again (1 of 2): "
        "2/3 tests, 1.0 s so far",
        "diffgenome: recorded base again (1 of 2): 3 tests in 1.0 s",
        "diffgenome: confirmed 3 tests that differ: recorded them twice more on each side in 1.0 s",
    ]


def test_steps_side_by_side_each_say_how_far_they_are_and_end_in_any_order() -> None:
    """Base and head are confirmed at the same time: both steps are under way at once."""
    progress, out, clock = log_progress(interval=1)
    with progress.step("confirming", "confirmed", "3 tests that differ") as outer:
        with contextlib.ExitStack() as head_open:
            with progress.step("recording", "recorded", "base again") as base:
                head = head_open.enter_context(progress.step("recording", "recorded", "head again"))
                base.advance(total=3, done=1)
                clock.advance(1)
                head.advance(total=3, done=2)
                base.result = "3 tests"
            assert [step.subject for step in progress.steps] == [
                "3 tests that differ",
                "head again",
            ]
            clock.advance(1)
            head.result = "3 tests"
        outer.result = "done"
    assert lines(out) == [
        "diffgenome: confirming 3 tests that differ; recording base again: 1/3 tests; "
        "recording head again: 2/3 tests, 1.0 s so far",
        "diffgenome: recorded base again: 3 tests in 1.0 s",
        "diffgenome: recorded head again: 3 tests in 2.0 s",
        "diffgenome: confirmed 3 tests that differ: done in 2.0 s",
    ]


def test_steps_in_threads_write_whole_lines() -> None:
    out = io.StringIO()
    progress = Progress(LogRenderer(out, 0, heartbeat=False))
    start = threading.Barrier(4)

    def work(side: str) -> None:
        start.wait()
        with progress.step("recording", "recorded", side) as step:
            for done in range(1, 101):
                step.advance(total=100, done=done)
            step.result = "100 tests"

    threads = [threading.Thread(target=work, args=(f"side{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    written = lines(out)
    finished = [
        re.fullmatch(r"diffgenome: recorded side(\d): 100 tests in \S+ s", x) for x in written
    ]
    assert sorted(found.group(1) for found in finished if found) == ["0", "1", "2", "3"]
    under_way = r"diffgenome: (recording side\d(: \d+/100 tests)?(; |, ))+\S+ s so far"
    others = [x for x, found in zip(written, finished, strict=True) if not found]
    assert all(re.fullmatch(under_way, line) for line in others), others
    assert progress.steps == ()


def test_a_step_that_fails_has_no_last_line() -> None:
    """A recording that stopped with an error did not record: the error is the last word."""
    progress, out, clock = log_progress()
    with pytest.raises(RuntimeError), progress.step("recording", "recorded", "base"):
        clock.advance(2)
        raise RuntimeError("pytest stopped")
    assert progress.steps == ()
    assert lines(out) == []


def test_a_log_line_never_holds_a_control_character() -> None:
    progress, out, _ = log_progress(interval=0)
    with progress.step("loading", "loaded", "base \x1b[31mred\x1b[0m\rover") as step:
        step.advance(done=1)
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    assert text.count("\n") == len(lines(out)) == 2


def test_how_far_a_step_is_says_tests_when_it_can() -> None:
    step = Step("recording", "recorded", "base", 0.0)
    assert step.counted() is None
    assert Step("r", "r", "s", 0.0, done=45, total=412).counted() == "45/412 tests"
    assert Step("r", "r", "s", 0.0, done=500, total=412).counted() == "412/412 tests"
    assert Step("r", "r", "s", 0.0, total=412).counted() == "0/412 tests"
    assert Step("r", "r", "s", 0.0, percent=45).counted() == "45%"
    assert Step("r", "r", "s", 0.0, done=9, percent=45).counted() == "9 tests, 45%"
    assert Step("r", "r", "s", 0.0, done=9).counted() == "9 tests"
    assert Step("r", "r", "s", 0.0, done=1).counted() == "1 test"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0.0 s"),
        (0.04, "0.0 s"),
        (38.24, "38.2 s"),
        (59.94, "59.9 s"),
        (60, "1 min 00 s"),
        (125.7, "2 min 05 s"),
        (3725, "1 h 02 min"),
        (-1, "0.0 s"),
    ],
)
def test_durations_read_as_people_say_them(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


class Broken:
    """A renderer whose terminal went away: every call raises."""

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def show(self, steps: tuple[Step, ...]) -> None:
        self.calls += 1
        raise OSError("standard error is closed")

    def line(self, text: str) -> None:
        self.calls += 1
        raise OSError("standard error is closed")

    def close(self) -> None:
        self.closed = True
        raise OSError("standard error is closed")


def test_a_failing_renderer_never_fails_the_work_and_is_dropped() -> None:
    broken = Broken()
    progress = Progress(broken, Clock())
    with progress.step("recording", "recorded", "base") as step:
        step.advance(total=3)
        step.advance(done=1)
        step.result = "3 tests"
    progress.note("still here")
    progress.close()
    assert broken.calls == 1  # dropped after the first failure
    assert broken.closed


def test_quiet_progress_says_nothing() -> None:
    out = io.StringIO()
    progress = make_progress(quiet=True, stream=out, environ={})
    with progress.step("recording", "recorded", "base") as step:
        step.advance(total=3, done=3)
    progress.note("reusing run r1")
    progress.close()
    assert out.getvalue() == ""


def test_a_pipe_gets_the_log_rendering_with_the_interval_from_the_environment() -> None:
    out = io.StringIO()
    progress = make_progress(stream=out, environ={INTERVAL_ENV: "0"})
    try:
        with progress.step("loading", "loaded", "base") as step:
            step.advance(done=1)
    finally:
        progress.close()
    *during, last = lines(out)
    # With no interval every report is a line (and the heartbeat may add its own).
    assert any(
        re.fullmatch(r"diffgenome: loading base: 1 test, \d+\.\d s so far", x) for x in during
    )
    assert all(
        re.fullmatch(r"diffgenome: loading base: (1 test, )?\S+ s so far", x) for x in during
    )
    assert re.fullmatch(r"diffgenome: loaded base in \d+\.\d s", last)


@pytest.mark.parametrize(
    ("value", "interval"),
    [
        (None, LOG_INTERVAL_S),
        ("0", 0.0),
        ("0.25", 0.25),
        ("-1", LOG_INTERVAL_S),
        ("soon", LOG_INTERVAL_S),
        ("nan", LOG_INTERVAL_S),
        ("inf", LOG_INTERVAL_S),
    ],
)
def test_the_interval_comes_from_the_environment_when_it_is_sound(
    value: str | None, interval: float
) -> None:
    environ = {} if value is None else {INTERVAL_ENV: value}
    assert log_interval(environ) == interval


def test_a_terminal_gets_the_live_line_and_a_dumb_one_the_log() -> None:
    main, child = os.openpty()
    try:
        with open(child, "w", closefd=False) as terminal:
            live = make_progress(stream=terminal, environ={"TERM": "xterm"})
            dumb = make_progress(stream=terminal, environ={"TERM": "dumb"})
            assert isinstance(live.renderer, LiveRenderer)
            assert isinstance(dumb.renderer, LogRenderer)
            live.close()
            dumb.close()
    finally:
        os.close(main)
        os.close(child)


def test_the_live_line_shows_step_side_count_and_elapsed_time() -> None:
    clock = Clock()
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    renderer = LiveRenderer(console, clock)
    progress = Progress(renderer, clock)
    with progress.step("recording", "recorded", "base HEAD~1 (f921860f1ebf)") as step:
        step.advance(total=412, done=45)
        clock.advance(12)
        with console.capture() as captured:
            console.print(renderer._render())
        shown = captured.get()
        step.result = "412 tests"
    progress.close()
    assert "diffgenome: recording base HEAD~1 (f921860f1ebf)" in shown
    assert "45/412 tests" in shown and "12.0 s" in shown
    assert "diffgenome: recorded base HEAD~1 (f921860f1ebf): 412 tests in 12.0 s" in out.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_live_line_fits_the_width_and_keeps_every_count(width: int) -> None:
    """Two recordings side by side on a narrow terminal: the titles are shortened, never a
    count (#25 point 10: a confirmation line was cut at the width, losing its count)."""
    clock = Clock()
    console = Console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)
    renderer = LiveRenderer(console, clock)
    progress = Progress(renderer, clock)
    with (
        progress.step("confirming", "confirmed", "42 tests that differ"),
        progress.step("recording", "recorded", "base main~1 (f708a96631af) again (1 of 2)") as a,
    ):
        with progress.step("recording", "recorded", "head main (fa79e9cadda5) again (1 of 2)") as b:
            a.advance(total=42, done=17)
            b.advance(total=42, done=23)
            clock.advance(3)
            # Printed on a console of its own: the live one redraws meanwhile.
            other = Console(file=io.StringIO(), width=width, color_system=None)
            with other.capture() as captured:
                other.print(renderer._render())
            shown = captured.get()
            b.result = "42 tests"
        a.result = "42 tests"
    progress.close()
    [line] = shown.splitlines()
    assert len(line) < width, line
    assert "17/42 tests" in line and "23/42 tests" in line and "3.0 s" in line, line
    assert line.startswith("diffgenome: "), line
