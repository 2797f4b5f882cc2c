"""A real headless Chromium, driven through its command line with the standard library only.

``chromium --headless --dump-dom`` loads a page, runs its scripts and prints the DOM as they
left it; ``--enable-logging=stderr --v=0`` prints every console message (errors, CSP
violations, failed loads) as an ``INFO:CONSOLE`` line; ``--screenshot`` writes a PNG, which
:func:`png_pixels` decodes with zlib and struct. Every host name resolves to nothing, so a
page that tried the network would fail visibly instead of fetching.

No browser on a developer machine skips the browser tests with the reason; in CI (``CI`` set
to ``true``) a missing browser fails them, so CI can never pass without running them.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CONSOLE = re.compile(r":CONSOLE(?:\(\d+\)|:\d+)\]\s*(.*)")


def chromium() -> str:
    """The browser binary: ``$CHROMIUM`` or the first of :data:`NAMES` on PATH."""
    wanted = os.environ.get("CHROMIUM")
    found = shutil.which(wanted) if wanted else None
    for name in () if found else NAMES:
        found = shutil.which(name)
        if found:
            break
    if found:
        return found
    why = "no Chromium on PATH (install Debian's package: apt-get install chromium)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why}; CI must run the browser tests")
    pytest.skip(why)


@dataclass
class Loaded:
    dom: str
    console: list[str]
    stderr: str


def _command(*args: str, profile: str) -> list[str]:
    return [
        chromium(),
        "--headless",
        "--no-sandbox",  # CI containers and root: the page is our own local file
        "--disable-gpu",
        "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        done = subprocess.run(
            _command(*args, profile=profile),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "HOME": profile},
        )
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def console_messages(stderr: str) -> list[str]:
    return [match.group(1) for match in map(_CONSOLE.search, stderr.splitlines()) if match]


def load(page: Path, fragment: str = "") -> Loaded:
    """``page`` loaded and its scripts run: the resulting DOM and its console messages."""
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    done = _run("--dump-dom", url)
    return Loaded(done.stdout, console_messages(done.stderr), done.stderr)


def screenshot(page: Path, out: Path, width: int = 1280, height: int = 900) -> bytes:
    url = page.resolve().as_uri()
    _run("--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={out}", url)
    return out.read_bytes()


# -- reading what the browser left ---------------------------------------------------------


@dataclass
class Row:
    status: str
    hidden: bool
    text: str
    cells: list[str]

    @property
    def id(self) -> str:
        """The text of the first cell: the test id."""
        return self.cells[0] if self.cells else ""


class _Rows(HTMLParser):
    """The rows of ``table#tests`` as the DOM dump has them (after the scripts ran)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self.attrs: dict[str, str] = {}
        self._in_table = False
        self._row: Row | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "body":
            self.attrs = found
        if tag == "table" and found.get("id") == "tests":
            self._in_table = True
        if self._in_table and tag == "tr" and "data-status" in found:
            self._row = Row(found["data-status"], "hidden" in found, "", [])
            self.rows.append(self._row)
        if self._row is not None and tag == "td":
            self._row.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        if tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row is not None:
            self._row.text += data
            if self._row.cells:
                self._row.cells[-1] += data


def rows(dom: str) -> tuple[list[Row], dict[str, str]]:
    """The test rows of an index and the ``<body>`` attributes (report.js writes there)."""
    parser = _Rows()
    parser.feed(dom)
    return parser.rows, parser.attrs


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    out: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        out.append(bytes(line))
        previous = line
    return width, height, out
