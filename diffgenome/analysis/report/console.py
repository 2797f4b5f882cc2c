"""The console every report is printed to: what a terminal gets, and what a pipe gets.

A pipe (a file, ``| less``, ``| grep``, a CI log) gets every line whole: no wrapping at a
guessed width, no cell cut short with an ellipsis, so that test ids, run ids and paths can be
copied and searched. Colour goes to a terminal only; ``NO_COLOR`` (no-color.org) switches it
off anywhere and wins, ``FORCE_COLOR`` (force-color.org) switches it on in a pipe as well,
without changing the width rules above.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TextIO

from rich.console import Console, RenderableType
from rich.segment import Segment, Segments

# Wide enough that no line diffgenome prints is ever wrapped or cut.
PIPE_WIDTH = 1 << 20


def wants_colour(is_tty: bool, environ: dict[str, str] | None = None) -> bool:
    """Colour on a terminal, unless ``NO_COLOR``; in a pipe only with ``FORCE_COLOR``.

    Both count when set to anything but the empty string, as their conventions say."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    return is_tty


def stream_isatty(stream: object) -> bool:
    """``stream.isatty()``, False for a stream that has none or is closed."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


def make_console(stream: TextIO | None = None) -> Console:
    """A console for ``stream`` (standard output by default) following the rules above."""
    out = sys.stdout if stream is None else stream
    tty = stream_isatty(out)
    colour = wants_colour(tty)
    return Console(
        file=out,
        highlight=False,
        soft_wrap=not tty,
        width=None if tty else PIPE_WIDTH,
        force_terminal=colour,
        no_color=not colour,
        color_system=("auto" if tty else "standard") if colour else None,
        emoji=False,
        markup=False,
    )


# What a recorded name may hold that a terminal would act on rather than show: C0 and C1
# controls but the line feed and the tab, DEL, and the bidirectional overrides and isolates
# (text that reads in another order than it runs).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with what a terminal would act on written as its escape (``\\x1b``), as
    pytest shows an id's unprintable characters: a qualname, an exception type, a warning
    category or a logger name recorded from user code can hold anything."""
    return _CONTROL.sub(_escape, text) if not text.isprintable() else text


def _shown(console: Console, renderable: RenderableType) -> Segments:
    """``renderable`` rendered, each segment of text made :func:`printable` (the console's
    own control segments, its colours and cursor moves, stay as they are)."""
    return Segments(
        segment if segment.control else Segment(printable(segment.text), segment.style)
        for segment in console.render(renderable, console.options)
    )


def print_text(console: Console, text: str, style: str | None = None) -> None:
    """One line of text, :func:`printable`."""
    console.print(printable(text), style=style, markup=False, highlight=False)


def print_whole(console: Console, renderable: RenderableType) -> None:
    """Print ``renderable``, its text :func:`printable`; in a pipe without the padding tables
    leave at line ends, so that each line ends where its text does."""
    if console.is_terminal and stream_isatty(console.file):
        console.print(_shown(console, renderable))
        return
    with console.capture() as captured:
        console.print(_shown(console, renderable))
    text = "\n".join(line.rstrip() for line in captured.get().splitlines())
    console.file.write(text + "\n")
    console.file.flush()
