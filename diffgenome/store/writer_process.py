"""The store's writer process: finished tests leave the test process through a pipe.

Encoding a finished test's phases as canonical JSON, compressing and addressing them and
committing them to SQLite took about a third of what ``--genome`` adds to a suite of tiny
tests, and a sixth of it on a parser's suite (#26.4, docs/performance.md). None of it needs
the test process: the records are finished data. So, once a session is big enough to repay a
second interpreter (``--genome-writer``), the test process starts one, hands it each finished
test as ``marshal`` bytes over a pipe (tens of microseconds) and goes on with the next test
while the other process, on another core, writes exactly what the test process would have
written (``StoreWriter.add_tests``, the same bytes in the same rows).

Crash safety is what it was: a test is in the pipe before the next one starts, and bytes in a
pipe outlive the process that wrote them (SIGKILL, ``os._exit``, a segfault); the writer
commits everything it can still read before it ends, and it runs in a session of its own, so
a signal to the test's process group does not reach it. The writer acknowledges each commit;
the test process keeps what is not acknowledged and, should the writer die or a test take the
pipe's descriptors, writes it itself (tests and symbols are written by key, so writing one
twice changes nothing) and goes on without it.

The writer is started with ``-S -E`` and only this package's folder on its path: no ``.pth``
hook, no ``sitecustomize``, no coverage or child-recording hook of the user's environment runs
in it. Both ends check before every read or write that their descriptor numbers still name
their pipe (a test may close every descriptor above 2): a number a test took is never written
to nor read from.
"""

from __future__ import annotations

import contextlib
import marshal
import select
import signal
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from os import close as _close
from os import fstat as _fstat
from os import getpid as _getpid
from os import getppid as _getppid
from os import pipe as _pipe
from os import read as _read
from os import set_blocking as _set_blocking
from os import write as _write
from os.path import abspath as _abspath
from os.path import dirname as _dirname
from typing import Any, Final

try:
    import fcntl as _fcntl
except ImportError:  # not on Windows (which has no writer process)
    _fcntl = None  # type: ignore[assignment]

from diffgenome.protocol.errors import StoreError
from diffgenome.store.layout import one_line
from diffgenome.store.writer import ForkedCopy, StoreWriter

#: ``--genome-writer`` / ini ``genome_writer``.
WRITER_AUTO: Final = "auto"
WRITER_PROCESS: Final = "process"
WRITER_INLINE: Final = "inline"
WRITER_MODES: Final = (WRITER_AUTO, WRITER_PROCESS, WRITER_INLINE)
#: Under ``auto``, a session that runs at least this many tests gets a writer process: below
#: it the interpreter's start (about 40 ms of CPU) costs more than the writes it takes over.
AUTO_MIN_TESTS: Final = 200

_HEADER: Final = struct.Struct("<I")
# Bound at import: a test that patches ``marshal`` cannot reach the pipe.
_dumps: Final[Callable[[Any], bytes]] = marshal.dumps
_loads: Final[Callable[[bytes], Any]] = marshal.loads
_sleep: Final = time.sleep
_monotonic: Final = time.monotonic
_TESTS: Final = "tests"
_SYMBOLS: Final = "symbols"
_END: Final = "end"
# How long the writer waits for the test process's next words before it looks whether that
# process still lives (a forked child of a test may hold the pipe open after it died).
_POLL_S: Final = 1.0
# How long the test process waits at the end of the session for the writer to commit what it
# was handed; past it, the test process writes the rest itself.
FINISH_TIMEOUT_S: Final = 300.0
#: How long the test process waits for the writer to open the store before the first test.
READY_TIMEOUT_S: Final = 60.0
_READ_CHUNK: Final = 1 << 20
# While tests come in quick succession, the writer sleeps this long between reads instead of
# waiting on the pipe: a write that wakes a waiting reader costs the test process tens of
# microseconds (a virtual machine's cross-core wake-up), a write into a pipe nobody waits on a
# few. One wake-up and one transaction then take every test handed over meanwhile. A read
# that finds nothing, or more than _GATHER_MAX_BYTES, goes back to waiting on the pipe.
_GATHER_S: Final = 0.005
_GATHER_MAX_BYTES: Final = 1 << 16
# What the pipe to the writer is asked to hold (Linux, best effort; 64 KiB otherwise): what
# a burst of tests hands over while the writer sleeps must fit without blocking the test.
_PIPE_BYTES: Final = 1 << 20
# The test process reads the writer's answers after a batch once this long has passed since
# it last did, or once this many batches wait for one.
_ACK_READ_S: Final = 0.002
_ACK_READ_BATCHES: Final = 64
#: zlib's level for the phase bodies the writer process stores: off the tests' path, it can
#: pack harder than the test process's level 3 (jinja2: 27 against 30 KB per test, measured
#: in docs/performance.md); a body reads back the same bytes at any level.
WRITER_ZLIB_LEVEL: Final = 9

# ``os._exit``: the writer's connection is never closed. Closing the last connection to a
# WAL database checkpoints it and deletes its ``-wal`` and ``-shm`` files, and a test that
# closed the test process's descriptors also dropped that process's locks, so the writer
# could take itself for the last one while the test process still holds the store open
# (docs/recording.md). Every transaction was committed: exiting is as safe as a crash.
_CHILD_MAIN: Final = (
    "import os, sys; sys.path.insert(0, sys.argv[1]); "
    "from diffgenome.store.writer_process import serve; os._exit(serve(sys.argv[2:]))"
)


class WriterLost(Exception):
    """The writer process cannot be used any more (it ended, or a test took a descriptor of
    its pipes); what it had not acknowledged is in :attr:`WriterProcess.unacknowledged`."""


class _Pipe:
    """One descriptor of a pipe, with the file it must name (a test may take the number)."""

    __slots__ = ("device", "fd", "inode")

    def __init__(self, fd: int) -> None:
        st = _fstat(fd)
        self.fd, self.device, self.inode = fd, st.st_dev, st.st_ino

    def intact(self) -> bool:
        try:
            st = _fstat(self.fd)
        except OSError:
            return False
        return stat.S_ISFIFO(st.st_mode) and st.st_ino == self.inode and st.st_dev == self.device


class WriterProcess:
    """The test process's end: hands batches over and keeps them until acknowledged."""

    def __init__(self, store: StoreWriter, run_id: str, worker: str) -> None:
        self._owner = _getpid()
        #: The name the writer process takes among the run's writers.
        self.name = writer_name(worker)
        to_child, from_parent = _pipe()
        to_parent, from_child = _pipe()
        package_parent = _dirname(_dirname(_dirname(_abspath(__file__))))
        try:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-S",
                    "-E",
                    "-c",
                    _CHILD_MAIN,
                    package_parent,
                    str(to_child),
                    str(from_child),
                    store.path,
                    store.key_file or "",
                    store.key_fingerprint,
                    str(self._owner),
                    run_id,
                    self.name,
                ],
                pass_fds=(to_child, from_child),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            for fd in (to_child, from_parent, to_parent, from_child):
                _close(fd)
            raise
        _close(to_child)
        _close(from_child)
        _grow_pipe(from_parent)
        self._out = _Pipe(from_parent)
        self._acks = _Pipe(to_parent)
        _set_blocking(to_parent, False)
        self._seq = 0
        self._read_at = 0.0  # when _send last read what the writer said
        self._said = b""
        #: ``(seq, kind, run_id, worker, payload)`` handed over and not yet acknowledged.
        self.unacknowledged: list[tuple[int, str, str, str, Any]] = []
        self._lost: str | None = None
        self._failed: str | None = None
        self._ready = False
        # Before the first test: a test may make the store unwritable for new connections
        # (open ones go on), and the writer's must be open before any test runs.
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while not self._ready:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OSError(
                        f"the writer process did not start within {READY_TIMEOUT_S:.0f} s"
                    )
                self._read_acks(wait=min(left, _POLL_S))
        except (WriterLost, StoreError) as exc:
            self.stop()
            raise OSError(str(exc)) from None

    # -- handing over ------------------------------------------------------------------

    def add_symbols(self, run_id: str, symbols: list[dict[str, object]]) -> None:
        self._send(_SYMBOLS, run_id, "", symbols)

    def add_tests(self, run_id: str, worker: str, tests: list[dict[str, object]]) -> None:
        self._send(_TESTS, run_id, worker, tests)

    def _send(self, kind: str, run_id: str, worker: str, payload: Sequence[object]) -> None:
        """Queue one batch and hand it over. Raises ForkedCopy or the store error the writer
        met before queueing it; WriterLost only once it is queued (among
        :attr:`unacknowledged`, which the caller writes itself)."""
        self._check_owner()
        if self._failed is not None:
            raise StoreError(self._failed)
        self._seq += 1
        self.unacknowledged.append((self._seq, kind, run_id, worker, payload))
        if self._lost is not None:
            raise WriterLost(self._lost)
        try:
            data = _dumps((self._seq, kind, run_id, worker, payload))
        except ValueError as exc:  # a value marshal does not take (a str subclass)
            self._lose(f"a record the pipe cannot carry ({one_line(exc)})")
        self._write(_HEADER.pack(len(data)) + data)
        # The writer answers once per gathered burst (_GATHER_S), so reading after every
        # batch mostly finds nothing: read when a few milliseconds have passed or many
        # batches wait, so that its acknowledgements and errors are still taken in within
        # milliseconds (what it did not acknowledge is kept, and written here if it fails).
        now = _monotonic()
        if now - self._read_at >= _ACK_READ_S or len(self.unacknowledged) >= _ACK_READ_BATCHES:
            self._read_at = now
            self._read_acks()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if not self._out.intact():
                self._lose("a test closed or replaced the descriptor of the writer's pipe")
            try:
                done = _write(self._out.fd, view)
            except InterruptedError:
                continue
            except OSError as exc:  # BrokenPipeError: the writer ended
                self._read_acks()
                self._lose(f"the writer process ended ({one_line(exc)})")
            view = view[done:]

    # -- what the writer says --------------------------------------------------------------

    def _read_acks(self, wait: float | None = None) -> bool:
        """Take in what the writer said; True when it said it is done. ``wait``: seconds to
        wait for its next words, once (None: take only what is there)."""
        if not self._acks.intact():
            self._lose("a test closed or replaced the descriptor of the writer's pipe")
        while True:
            if wait is not None:
                ready, _, _ = select.select([self._acks.fd], [], [], wait)
                if not ready:
                    return False
            try:
                chunk = _read(self._acks.fd, 65536)
            except BlockingIOError:
                return False
            except InterruptedError:
                continue
            if not chunk:
                if self._failed is not None:
                    raise StoreError(self._failed)
                self._lose("the writer process ended")
            wait = None  # waited once: now only what is there
            self._said += chunk
            *lines, self._said = self._said.split(b"\n")
            for line in lines:
                word, _, rest = line.decode("utf-8", "replace").partition(" ")
                if word == "ack":
                    upto = int(rest)
                    self.unacknowledged = [m for m in self.unacknowledged if m[0] > upto]
                elif word == "error":
                    self._failed = rest
                elif word == "ready":
                    self._ready = True
                elif word == "done":
                    return True
            if self._failed is not None:
                raise StoreError(self._failed)

    def write_unacknowledged(self, store: StoreWriter) -> None:
        """Write what the writer did not acknowledge through ``store``, in order (tests and
        symbols are written by key: one the writer did commit is the same row again); the
        first store error is raised and what follows it is dropped."""
        batches, self.unacknowledged = self.unacknowledged, []
        for _, kind, run_id, worker, payload in batches:
            if kind == _SYMBOLS:
                store.add_symbols(run_id, list(payload))
            else:
                store.add_tests(run_id, worker, list(payload))

    def _check_owner(self) -> None:
        pid = _getpid()
        if pid != self._owner:
            raise ForkedCopy.of(pid, self._owner)

    def _check(self) -> None:
        self._check_owner()
        if self._failed is not None:
            raise StoreError(self._failed)
        if self._lost is not None:
            raise WriterLost(self._lost)

    def _lose(self, why: str) -> Any:
        self._lost = why
        raise WriterLost(why)

    # -- the end ---------------------------------------------------------------------------

    def finish(self, timeout: float = FINISH_TIMEOUT_S) -> None:
        """Ask the writer to commit the rest and end, and wait for it. Raises
        :class:`WriterLost` (the caller writes :attr:`unacknowledged` itself) or the store
        error the writer met."""
        self._check()
        data = _dumps((self._seq + 1, _END, "", "", ()))
        self._write(_HEADER.pack(len(data)) + data)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                self._lose(f"the writer process did not finish within {timeout:.0f} s")
            if self._read_acks(wait=min(left, _POLL_S)):
                break
        self._reap(timeout=10.0)
        self._lost = "finished"

    def stop(self) -> None:
        """End the writer at once (recording stopped); what it did not commit is lost."""
        if self._lost is None:
            self._lost = "stopped"
        if self._process.poll() is None:
            with contextlib.suppress(OSError):
                self._process.kill()
        self._reap(timeout=10.0)

    def _reap(self, timeout: float) -> None:
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return
        # Only our own numbers are closed: one a test took stays the test's.
        for pipe in (self._out, self._acks):
            if pipe.intact():
                with contextlib.suppress(OSError):
                    _close(pipe.fd)
                pipe.inode = -1


def writer_wanted(mode: str, tests: int, workers: int | None, cores: int | None) -> bool:
    """Whether a session starts a writer process: always under ``process``, never under
    ``inline``; under ``auto``, for 200 tests or more, unless pytest-xdist already runs a
    worker on every core (``workers``: how many; None without xdist), where the writers would
    only take turns with the workers for the same cores."""
    if mode == WRITER_PROCESS:
        return True
    if mode == WRITER_INLINE or tests < AUTO_MIN_TESTS:
        return False
    return workers is None or cores is None or workers < cores


def writer_name(worker: str) -> str:
    """The writer process of ``worker`` (``main``, ``gw0``) among the run's writers: while it
    lives the run reads as running (it may still be committing a test process's last tests)."""
    return f"{worker}/writer"


def start_writer(store: StoreWriter, run_id: str, worker: str) -> WriterProcess:
    """A writer process for ``store`` (raises OSError where none can be started)."""
    if sys.platform == "win32" or not sys.executable:
        raise OSError("no writer process on this platform")
    return WriterProcess(store, run_id, worker)


# -- the writer process ------------------------------------------------------------------


def serve(argv: list[str]) -> int:
    """The writer process's main: read batches until told to end, commit each, acknowledge."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    read_fd, ack_fd = int(argv[0]), int(argv[1])
    path, key_file, fingerprint, parent = argv[2], argv[3] or None, argv[4], int(argv[5])
    run_id, name = argv[6], argv[7]
    inbox, out = _Pipe(read_fd), _Pipe(ack_fd)

    def say(line: str) -> None:
        if out.intact():
            data = (line.replace("\n", " ") + "\n").encode()
            while data:
                try:
                    data = data[_write(ack_fd, data) :]
                except InterruptedError:
                    continue
                except OSError:
                    return

    try:
        store = StoreWriter.open(path, key_file)
    except (StoreError, OSError) as exc:
        say(f"error {one_line(exc)}")
        return 2
    if store.key_fingerprint != fingerprint:
        say("error the store's digest key changed while the run was recorded; record again")
        return 2
    store.compress_level = WRITER_ZLIB_LEVEL
    buffer = b""
    ended = False
    gathering = False
    try:
        _set_blocking(read_fd, False)
        store.join_run(run_id, name)
        say("ready")
        while not ended:
            if gathering:
                _sleep(_GATHER_S)
            else:
                ready, _, _ = select.select([read_fd], [], [], _POLL_S)
                if not ready:
                    if _getppid() != parent:
                        break  # the test process is gone and nothing more is coming
                    continue
            if not inbox.intact():
                break
            try:
                chunk = _read(read_fd, _READ_CHUNK)
            except BlockingIOError:  # nothing came while it slept: wait on the pipe again
                gathering = False
                continue
            except InterruptedError:
                continue
            gathering = 0 < len(chunk) <= _GATHER_MAX_BYTES
            if not chunk:
                ended = True
            buffer += chunk
            messages, buffer = _frames(buffer)
            if not messages:
                continue
            last = _commit(store, messages)
            say(f"ack {last}")
            ended = ended or messages[-1][1] == _END
        # Whatever happened to the test process, what it handed over is committed.
        store.leave_run(run_id, name, True, [])
    except (StoreError, OSError, ValueError, EOFError) as exc:
        say(f"error {one_line(exc)}")
        return 2
    say("done")
    return 0


def _grow_pipe(fd: int) -> None:
    """Ask for a pipe of ``_PIPE_BYTES`` where the platform can say so (Linux); else, or
    refused, it stays as it is."""
    set_size = getattr(_fcntl, "F_SETPIPE_SZ", None) if _fcntl is not None else None
    if set_size is None:
        return
    with contextlib.suppress(OSError):
        _fcntl.fcntl(fd, set_size, _PIPE_BYTES)


def _frames(buffer: bytes) -> tuple[list[tuple[int, str, str, str, Any]], bytes]:
    """The whole messages at the head of ``buffer``, and what is left of it."""
    messages = []
    at = 0
    size = _HEADER.size
    while len(buffer) - at >= size:
        (length,) = _HEADER.unpack_from(buffer, at)
        if len(buffer) - at - size < length:
            break
        messages.append(_loads(buffer[at + size : at + size + length]))
        at += size + length
    return messages, buffer[at:]


def _commit(store: StoreWriter, messages: list[tuple[int, str, str, str, Any]]) -> int:
    """Write ``messages`` in order, the tests of consecutive batches in one transaction; the
    sequence number of the last."""
    tests: list[dict[str, object]] = []
    key: tuple[str, str] | None = None

    def flush() -> None:
        nonlocal tests
        if tests and key is not None:
            store.add_tests(key[0], key[1], tests)
        tests = []

    for _, kind, run_id, worker, payload in messages:
        if kind == _TESTS:
            if key != (run_id, worker):
                flush()
                key = (run_id, worker)
            tests.extend(payload)
        elif kind == _SYMBOLS:
            flush()
            store.add_symbols(run_id, list(payload))
    flush()
    return messages[-1][0]
