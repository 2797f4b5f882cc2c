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

import base64
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

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


# -- a page to act on: the DevTools protocol over a pipe ----------------------------------


class Tab:
    """One page of a headless Chromium driven through the DevTools protocol over
    ``--remote-debugging-pipe`` (JSON messages separated by NUL bytes on file descriptors 3
    and 4): the standard library only, no network. :meth:`evaluate` runs JavaScript in the
    page as a user's script would and returns its value; :meth:`screenshot` is a PNG of what
    the page shows."""

    def __init__(self, proc: subprocess.Popen[bytes], send_fd: int, recv_fd: int) -> None:
        self._proc, self._send_fd, self._recv_fd = proc, send_fd, recv_fd
        self._buffer = b""
        self._next = 0
        self._session: str | None = None
        self.console: list[str] = []

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> Any:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if self._session is not None and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._send_fd, json.dumps(message).encode() + b"\0")
        answer = self._wait(lambda m: m.get("id") == self._next, timeout)
        assert "error" not in answer, (method, answer["error"])
        return answer.get("result", {})

    def _wait(self, wanted: Any, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message: dict[str, Any] = json.loads(raw)
                if message.get("method") == "Runtime.consoleAPICalled":
                    args = message["params"].get("args", [])
                    self.console.append(" ".join(str(a.get("value", "")) for a in args))
                if message.get("method") == "Runtime.exceptionThrown":
                    self.console.append(json.dumps(message["params"]["exceptionDetails"]))
                if wanted(message):
                    return message
            assert time.monotonic() < deadline, "no answer from the browser"
            chunk = os.read(self._recv_fd, 1 << 20)
            assert chunk, "the browser went away"
            self._buffer += chunk

    def open(self, page: Path, width: int, height: int) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.call("Page.navigate", {"url": page.resolve().as_uri()})
        self._wait(lambda m: m.get("method") == "Page.loadEventFired", 60)

    def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (awaited when it is a promise)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def settle(self) -> None:
        """Let the page handle what just happened (scroll and toggle events are queued):
        two animation frames."""
        self.evaluate(
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))"
        )

    def screenshot(self, out: Path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])
        out.write_bytes(data)
        return data


@contextmanager
def tab(page: Path, width: int = 1280, height: int = 900) -> Iterator[Tab]:
    """``page`` open in a headless Chromium of its own, ready for :meth:`Tab.evaluate`."""
    theirs_in, ours_out = os.pipe()  # what we send: the browser reads it on fd 3
    ours_in, theirs_out = os.pipe()  # what it answers on fd 4

    def descriptors() -> None:
        read, write = os.dup(theirs_in), os.dup(theirs_out)
        os.dup2(read, 3)
        os.dup2(write, 4)

    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        command = [
            arg for arg in _command("--remote-debugging-pipe", profile=profile) if arg != "--v=0"
        ]
        proc = subprocess.Popen(
            [*command, "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=descriptors,
            close_fds=False,
            env={**os.environ, "HOME": profile},
        )
        os.close(theirs_in)
        os.close(theirs_out)
        driven = Tab(proc, ours_out, ours_in)
        try:
            driven.open(page, width, height)
            yield driven
        finally:
            with suppress(AssertionError, OSError):
                driven.call("Browser.close", timeout=10)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            os.close(ours_out)
            os.close(ours_in)


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
