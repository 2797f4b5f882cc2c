"""What a test's code does to the world through the standard library, per phase: its effects.

Calls, values and decisions say how code computed; a CLI's printed text, a log line an
operator alerts on, a report file's bytes, a warning a test catches with ``pytest.warns`` and
an environment variable a configure step sets are what it *did*, and a change there leaves
every call as it was. Each phase of a test therefore gets a list of effect entries
(docs/protocol.md, ``effects``), compared by the differ as kinds of their own
(``output_changed``, ``log_changed``, ``warning_changed``, ``file_changed``,
``environ_changed``: docs/diffing.md).

What is seen, and how, so that the hot path stays untouched (nothing here runs per call):

- **output**: the text pytest captured of the phase (``TestReport.sections``), per stream;
  read once per phase from the report, after the text the test itself took through
  ``capsys``/``capfd`` (``CaptureFixture.readouterr``, wrapped for the session: what it
  returns never reaches the sections, and a print the test asserts on is the output a
  reviewer most wants to see move). Not seen: everything under ``-s``, said as
  ``effects_unrecorded``, never as "none" (and a test's own capture where that wrapper could
  not be put in place).
- **log**: records that reach the root logger while the phase runs (the handler pytest's own
  ``caplog`` uses sees the same), as logger, level, a digest of the template
  (``record.msg``) and a digest of its arguments, counted.
- **warnings**: every warning shown while the phase runs, through ``warnings._showwarnmsg``
  (which the interpreter calls for every warning that passes the filters, whoever catches
  it), with whether it escaped to pytest's capture or was caught by the test. Warnings an
  ``error`` or ``ignore`` filter turns away are not shown, so not seen.
- **files**: files opened for writing (an audit hook on ``open``: hooks cannot be removed,
  so the hook does nothing outside a phase and never raises), by path with locations
  replaced, and a digest of their content at the phase's end; bounded in count and bytes,
  and said where a bound cut.
- **environ**: ``os.environ`` at the phase's start against its end: names and value digests.

A subtest (pytest's ``subtests``) runs inside its test's call phase: its logs, warnings, files
and environment are its test's (said in the subtest's record as ``<kind>:in-test``), while
what it prints is in its own report's sections, so it is the subtest's own ``output``.

Every text is made location-independent (``stable.stable_text``) and passed through the
secret rules (``collect/redact.py``) before it is digested; nothing but digests, names and
counts is kept (a preview of log templates only under ``--genome-preview``).
"""

from __future__ import annotations

import _io
import contextlib
import hashlib
import logging
import os
import stat
import sys
import warnings
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

from diffgenome.recording import archives
from diffgenome.recording.collect import stable
from diffgenome.recording.collect.childhook import ENV as CHILD_ENV
from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.values import Digester, canonical

#: Files written in one phase that are followed; past it, one ``file`` entry says so.
MAX_FILES: Final = 64
#: Bytes of a written file that are digested; a longer file's digest covers these and says so.
MAX_FILE_BYTES: Final = 1 << 20
#: Log records kept per phase (counted by what they are; past it, said so).
MAX_RECORDS: Final = 4096
#: Characters of one output stream that are digested (beyond it the length is what counts).
MAX_OUTPUT: Final = 4 << 20
PREVIEW_CHARS: Final = 200

_TAG_OUTPUT: Final = b"diffgenome-output\0"
_TAG_TEMPLATE: Final = b"diffgenome-log-template\0"
_TAG_ARGS: Final = b"diffgenome-log-args\0"
_TAG_WARNING: Final = b"diffgenome-warning\0"
_TAG_FILE: Final = b"diffgenome-file\0"
_TAG_ARCHIVE: Final = b"diffgenome-archive\0"
_TAG_ENV: Final = b"diffgenome-environ\0"

#: Variables pytest and diffgenome themselves set per phase: not the code's doing.
_OWN_VARIABLES: Final = frozenset({b"PYTEST_CURRENT_TEST"})
_OWN_PREFIX: Final = b"DIFFGENOME_"
_PER_PHASE: Final = (b"PYTEST_CURRENT_TEST", CHILD_ENV.encode())
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_NOT_FILES: Final = ("/dev/", "/proc/", "/sys/")
# How far up the stack a write or a warning is looked for its project frame.
_MAX_DEPTH: Final = 64

# Files are read when a phase ends, while the test's patches are still in place (a fixture's
# ``mock.patch("builtins.open")`` is undone at teardown): the real functions, bound now.
_open = _io.open
#: Bytes of a file's start that say whether it is an archive (tar's magic is at 257).
_ARCHIVE_HEAD: Final = 512
_stat = os.stat
_sha256 = hashlib.sha256

#: The stream names of pytest's section titles (``Captured stdout call``).
STREAMS: Final = ("stdout", "stderr")
#: What a subtest's record says of the kinds its test's call phase holds (``output`` is its own).
IN_TEST: Final = ("environ:in-test", "file:in-test", "log:in-test", "warning:in-test")
#: Fixtures through which a test takes its output itself: pytest's sections then lack it.
OWN_CAPTURE: Final = frozenset({"capsys", "capfd", "capsysbinary", "capfdbinary"})

Entry = dict[str, Any]


class _State:
    """What the process-wide audit hook looks at: the sessions in a phase now (more than one
    when a test runs pytest in its own process, as ``pytester`` does: what the inner session
    writes is also the outer test's effect). A tuple, replaced whole: a thread may be reading
    it."""

    __slots__ = ("active",)

    def __init__(self) -> None:
        self.active: tuple[Effects, ...] = ()


# One per process: audit hooks stay for the process's life, and a pytester run inside a test
# session starts a second recorder that must not add a second hook.
_STATE: Final = _State()
_hook_installed: list[bool] = [False]


class _Reads:
    """The wrapper of ``CaptureFixture.readouterr`` (one per process, shared by nested
    sessions as the audit hook is): what it wrapped, and how many sessions use it."""

    __slots__ = ("original", "users", "wrapper")

    def __init__(self) -> None:
        self.original: Callable[..., Any] | None = None
        self.wrapper: Callable[..., Any] | None = None
        self.users = 0


_READS: Final = _Reads()


_getframe = sys._getframe
#: Modules that call ``readouterr`` for pytest itself (``subtests`` puts a block's capture into
#: its report's sections, where the subtest's output is read already).
_PYTEST_MODULES: Final = ("_pytest.", "pytest_subtests")


def _by_test(frame: FrameType | None) -> bool:
    """Whether ``readouterr``'s caller is the program's code rather than pytest's."""
    name = frame.f_globals.get("__name__") if frame is not None else None
    return not (isinstance(name, str) and name.startswith(_PYTEST_MODULES))


def _install_reads() -> bool:
    """Wrap ``CaptureFixture.readouterr`` so that the text a test takes from ``capsys`` or
    ``capfd`` is its phase's output too; False where pytest has no such method."""
    if _READS.users:
        _READS.users += 1
        return True
    try:
        from _pytest.capture import CaptureFixture
    except Exception:
        return False
    original = CaptureFixture.__dict__.get("readouterr")
    if not callable(original):
        return False

    def readouterr(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        active = _STATE.active
        if active and _by_test(_getframe(1)):
            # The innermost session in a phase took it (pytester runs one inside).
            effects = active[-1]
            try:
                effects.read_by_test(result)
            except Exception:
                effects.errors += 1
        return result

    readouterr.__wrapped__ = original  # type: ignore[attr-defined]
    readouterr.__doc__ = getattr(original, "__doc__", None)
    CaptureFixture.readouterr = readouterr  # type: ignore[method-assign]
    _READS.original, _READS.wrapper, _READS.users = original, readouterr, 1
    return True


def _uninstall_reads() -> None:
    """The last session to stop puts the method back (unless something wrapped it after
    us: taking ours out from under it would undo theirs too; ours then stays, idle)."""
    if _READS.users <= 0:
        return
    _READS.users -= 1
    if _READS.users:
        return
    try:
        from _pytest.capture import CaptureFixture
    except Exception:
        return
    if CaptureFixture.__dict__.get("readouterr") is _READS.wrapper:
        CaptureFixture.readouterr = _READS.original  # type: ignore[method-assign,assignment]
    _READS.original = _READS.wrapper = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook: a string compare for every other event, and never an exception."""
    if event != "open":
        return
    for effects in _STATE.active:
        try:
            effects.opened(args)
        except Exception:
            effects.errors += 1


class _LogTap(logging.Handler):
    """A handler on the root logger for the phase: it keeps what each record says."""

    def __init__(self, sink: Callable[[logging.LogRecord], None]) -> None:
        super().__init__(logging.NOTSET)
        self._sink = sink

    def handle(self, record: logging.LogRecord) -> bool:  # no lock, no filters: only read
        with contextlib.suppress(Exception):
            self._sink(record)
            self._last_resort(record)
        return True

    def _last_resort(self, record: logging.LogRecord) -> None:
        """What ``logging`` does with a record no handler takes (writes it to stderr through
        ``logging.lastResort``), done still: this handler must not make the program say less
        (pytest's own handlers are on the root during its phases; under ``-p no:logging``
        they are not)."""
        root = logging.getLogger()
        logger: logging.Logger | None = (
            root if record.name == root.name else logging.getLogger(record.name)
        )
        while logger is not None:
            if any(handler is not self for handler in logger.handlers):
                return
            if not logger.propagate:
                break
            logger = logger.parent
        last = logging.lastResort
        if last is not None and record.levelno >= last.level:
            last.handle(record)

    def emit(self, record: logging.LogRecord) -> None:  # pragma: no cover - handle() does it
        return None


def _text(value: object) -> str:
    try:
        return value if isinstance(value, str) else str(value)
    except Exception as exc:
        return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"


def _category(category: object) -> str:
    module = getattr(category, "__module__", "") or ""
    name = getattr(category, "__qualname__", None) or getattr(category, "__name__", "?")
    return str(name) if module == "builtins" else f"{module}.{name}"


class Effects:
    """The effects of the phases of the test being recorded (see the module docstring).

    ``begin_phase``/``end_phase`` bracket a phase; ``add_output`` takes the phase's report;
    ``take`` hands the test's entries over and starts afresh. Every method is safe to call
    from pytest hooks: faults are counted in ``errors`` (the test's unverified reason), never
    raised.
    """

    def __init__(
        self,
        digester: Digester,
        clear: Callable[[str], str],
        scope: Scope,
        symbol_of_code: Callable[[Any], str | None] | None = None,
        preview: bool = False,
        located: Callable[[str], str] | None = None,
    ) -> None:
        self._digest = digester.digest
        self._clear = clear
        # Text that names places: made stable, the secret rules reading it as it was too
        # (``Redactor.located``).
        self._located = located or (lambda text: clear(stable.stable_text(text)))
        self._scope = scope
        self._symbol_of_code = symbol_of_code
        self._preview = preview
        self.errors = 0
        self._tap = _LogTap(self._log)
        self._phase: str | None = None
        self._entries: list[Entry] = []
        self._unrecorded: set[str] = set()
        # Keyed by what the digests are made of, digested when the phase ends (_text_key).
        self._records: dict[tuple[str, str, bytes, tuple[bool, bytes] | str | None], list[Any]] = {}
        self._records_dropped = 0
        self._warnings: dict[tuple[str, str, bytes, bool], int] = {}
        self._files: dict[str, str] = {}
        self._files_dropped = 0
        self._environ: dict[bytes, bytes] = {}
        self._outer_impl: object = None
        self._outer_show: object = None
        self._original_showwarnmsg: Callable[[Any], Any] | None = None
        self._installed = False
        # What the test took from its own capture, per (phase, stream), and whether it can.
        self._reads: dict[tuple[str, str], list[str]] = {}
        self._reads_size = 0
        self._reads_seen = False

    # -- process-wide hooks --------------------------------------------------------------

    def install(self) -> None:
        """The warnings wrapper and (once per process) the audit hook."""
        if not _hook_installed[0]:
            sys.addaudithook(_audit)
            _hook_installed[0] = True
        original = getattr(warnings, "_showwarnmsg", None)
        if callable(original) and self._original_showwarnmsg is None:
            seen = self._warned

            def _showwarnmsg(msg: Any) -> Any:
                if self._phase is not None:
                    try:
                        seen(msg)
                    except Exception:
                        self.errors += 1
                return original(msg)

            self._original_showwarnmsg = original
            warnings._showwarnmsg = _showwarnmsg  # type: ignore[attr-defined]
        if not self._reads_seen:
            self._reads_seen = _install_reads()
        self._installed = True

    def uninstall(self) -> None:
        _STATE.active = tuple(e for e in _STATE.active if e is not self)
        original = self._original_showwarnmsg
        if original is not None:
            warnings._showwarnmsg = original  # type: ignore[attr-defined]
            self._original_showwarnmsg = None
        if self._reads_seen:
            _uninstall_reads()
            self._reads_seen = False
        self._installed = False

    # -- phases --------------------------------------------------------------------------

    def begin_phase(self, phase: str) -> None:
        if not self._installed:
            return
        self._phase = phase
        self._records = {}
        self._records_dropped = 0
        self._warnings = {}
        self._files = {}
        self._files_dropped = 0
        self._environ = _raw_environ()
        self._outer_impl = getattr(warnings, "_showwarnmsg_impl", None)
        self._outer_show = getattr(warnings, "showwarning", None)
        logging.getLogger().addHandler(self._tap)
        _STATE.active = (*_STATE.active, self)

    def end_phase(self) -> None:
        phase = self._phase
        if phase is None:
            return
        _STATE.active = tuple(e for e in _STATE.active if e is not self)
        self._phase = None
        try:
            logging.getLogger().removeHandler(self._tap)
        except Exception:
            self.errors += 1
        for step in (self._end_logs, self._end_warnings, self._end_files, self._end_environ):
            try:
                step(phase)
            except Exception:
                self.errors += 1

    def read_by_test(self, result: object) -> None:
        """What ``readouterr`` returned to the test in this phase (``out``, ``err``; bytes
        under ``capsysbinary``), kept to be its phase's output before the report's."""
        phase = self._phase
        if phase is None or self._reads_size > MAX_OUTPUT:
            return
        for stream in STREAMS:
            text = getattr(result, stream[3:], None)
            if isinstance(text, bytes):
                text = text.decode("utf-8", "surrogateescape")
            if isinstance(text, str) and text:
                self._reads.setdefault((phase, stream), []).append(text)
                self._reads_size += len(text)

    def add_output(self, phase: str, sections: object, own_capture: bool, capture: str) -> None:
        """The phase's captured text per stream: what the test took from its own capture,
        then its report's sections."""
        if not self._installed:
            return
        read = {stream: "".join(self._reads.get((phase, stream), ())) for stream in STREAMS}
        entries, unrecorded = self.output_entries(phase, sections, own_capture, capture, read)
        self._entries.extend(entries)
        self._unrecorded.update(unrecorded)

    def output_entries(
        self,
        phase: str,
        sections: object,
        own_capture: bool,
        capture: str,
        read: dict[str, str] | None = None,
    ) -> tuple[list[Entry], set[str]]:
        """The ``output`` entries of one report's sections (after ``read``, the text the
        test took itself), and what could not be seen; the state of the test being recorded
        is left alone (a subtest's report has its own sections: what its block printed is in
        them, not in its test's; what it took from ``capsys`` is its test's)."""
        if capture == "no":
            return [], {"output:capture-off"}
        unrecorded = {"output:test-captures"} if own_capture and not self._reads_seen else set()
        out: list[Entry] = []
        try:
            texts: dict[str, list[str]] = {}
            for stream, text in (read or {}).items():
                if text:
                    texts[stream] = [text]
            for title, content in sections if isinstance(sections, list) else ():
                parts = str(title).split(" ")
                if len(parts) == 3 and parts[0] == "Captured" and parts[2] == phase:
                    stream = parts[1]
                    if stream in STREAMS:  # "Captured log call" is read from records
                        texts.setdefault(stream, []).append(_text(content))
            for stream in STREAMS:
                text = "".join(texts.get(stream, ()))
                if not text:
                    continue
                entry: Entry = {
                    "type": "output",
                    "phase": phase,
                    "stream": stream,
                    "digest": self._text_digest(_TAG_OUTPUT, text[:MAX_OUTPUT]),
                    "lines": text.count("\n"),
                }
                if len(text) > MAX_OUTPUT:
                    entry["cut"] = True
                if self._preview:  # for people, never compared: the secret rules applied
                    entry["preview"] = self._preview_of(text)
                out.append(entry)
        except Exception:
            self.errors += 1
        return out, unrecorded

    def take(self) -> tuple[list[Entry], list[str]]:
        """The test's entries in a fixed order and what could not be seen; a fresh start."""
        entries, self._entries = self._entries, []
        unrecorded, self._unrecorded = sorted(self._unrecorded), set()
        self._reads, self._reads_size = {}, 0
        entries.sort(key=_order)
        return entries, unrecorded

    # -- text ----------------------------------------------------------------------------

    def _text_digest(self, tag: bytes, text: str) -> str:
        return self._digest(self._text_key(tag, text))

    def _text_key(self, tag: bytes, text: str) -> bytes:
        """What ``_text_digest`` digests. The hooks that run inside the program's own threads
        (a log record, a warning) keep this and digest it when the phase ends: an HMAC lets
        other threads run while it computes (OpenSSL is called without the GIL), and a
        background thread paused in the middle of its work let google-auth's test assert
        before its refresh thread finished (it failed under ``--genome`` on every run)."""
        clean = self._located(text)
        return tag + clean.encode("utf-8", "surrogatepass")

    def _preview_of(self, text: str) -> str:
        shown = self._located(text[: 4 * PREVIEW_CHARS])
        return shown if len(shown) <= PREVIEW_CHARS else shown[:PREVIEW_CHARS] + "\u2026"

    # -- logging -------------------------------------------------------------------------

    def _log(self, record: logging.LogRecord) -> None:
        if self._phase is None:
            return
        template = _text(record.msg)
        key = (
            _text(record.name),
            _text(record.levelname),
            self._text_key(_TAG_TEMPLATE, template),
            self._args_key(record.args),
        )
        seen = self._records.get(key)
        if seen is None:
            if len(self._records) >= MAX_RECORDS:
                self._records_dropped += 1
                return
            preview = self._preview_of(template) if self._preview else None
            seen = self._records[key] = [0, preview]
        seen[0] += 1

    def _args_key(self, args: object) -> tuple[bool, bytes] | str | None:
        """What the arguments' digest is made of (digested when the phase ends, as
        ``_text_key`` says why): their canonical form (``True``), else their repr made stable
        (``False``); None when there are none, a word when neither says anything reliable (a
        repr naming an address)."""
        if not args:
            return None
        form = canonical(args)
        if form is not None:
            return (True, form)
        try:
            text = stable.stable_text(repr(args))
        except Exception:
            return "unreadable"
        if " at 0x<address>" in text:
            return "unknown"
        return (False, self._text_key(_TAG_ARGS, text))

    def _args_digest(self, key: tuple[bool, bytes] | str | None) -> str | None:
        if key is None or isinstance(key, str):
            return key
        return self._digest(key[1])

    def _end_logs(self, phase: str) -> None:
        for (logger, level, template, args), (count, preview) in self._records.items():
            entry: Entry = {
                "type": "log",
                "phase": phase,
                "logger": self._clear(logger),
                "level": level,
                "template_digest": self._digest(template),
                "args_digest": self._args_digest(args),
                "count": count,
            }
            if preview is not None:
                entry["template"] = preview
            self._entries.append(entry)
        if self._records_dropped:
            self._entries.append(
                {"type": "log", "phase": phase, "bound": "records", "count": self._records_dropped}
            )

    # -- warnings ------------------------------------------------------------------------

    def _warned(self, msg: Any) -> None:
        if self._phase is None:
            return
        escaped = (
            getattr(warnings, "_showwarnmsg_impl", None) is self._outer_impl
            and getattr(warnings, "showwarning", None) is self._outer_show
        )
        category = _category(getattr(msg, "category", None))
        text = _text(getattr(msg, "message", ""))
        key = (category, self._origin(msg), self._text_key(_TAG_WARNING, text), escaped)
        self._warnings[key] = self._warnings.get(key, 0) + 1

    def _origin(self, msg: Any) -> str:
        """The symbol of the code the warning is attributed to (after ``stacklevel``), found
        on the stack by its file and line; the file with locations replaced where no frame
        matches (``warn_explicit``, a C caller). Never a line number."""
        filename = _text(getattr(msg, "filename", "") or "")
        lineno = getattr(msg, "lineno", None)
        frame: FrameType | None = sys._getframe(2)
        depth = 0
        while frame is not None and depth < _MAX_DEPTH:
            code = frame.f_code
            if code.co_filename == filename and frame.f_lineno == lineno:
                return self._symbol(code, filename)
            frame = frame.f_back
            depth += 1
        return self._located(filename)

    def _symbol(self, code: Any, filename: str) -> str:
        symbol_of = self._symbol_of_code
        if symbol_of is not None:
            symbol = symbol_of(code)
            if symbol is not None:
                return symbol
        placement = self._scope.place(filename)
        if placement is not None:
            return f"py:{placement.module}.{code.co_qualname}"
        return f"{self._located(filename)}:{code.co_qualname}"

    def _end_warnings(self, phase: str) -> None:
        for (category, origin, message, escaped), count in self._warnings.items():
            self._entries.append(
                {
                    "type": "warning",
                    "phase": phase,
                    "category": category,
                    "origin": origin,
                    "message_digest": self._digest(message),
                    "escaped": escaped,
                    "count": count,
                }
            )

    # -- files ---------------------------------------------------------------------------

    def opened(self, args: tuple[Any, ...]) -> None:
        """An ``open`` audit event (``path, mode, flags``): kept when it opens for writing."""
        if len(args) < 3:
            return
        path, mode, flags = args[0], args[1], args[2]
        if isinstance(mode, str):
            if not any(c in mode for c in "wax+"):
                return
        elif not (isinstance(flags, int) and flags & _WRITE_FLAGS):
            return
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return  # a file descriptor: opened before, by whoever opened it
        if path.endswith((".pyc", ".pyc.tmp")) or "/__pycache__/" in path:
            return  # the import system's bytecode cache
        path = os.path.abspath(path)  # now: the test may change folders before it ends
        files = self._files
        if path in files or not self._from_project(sys._getframe(2)):
            return
        if len(files) >= MAX_FILES:
            self._files_dropped += 1
            return
        files[path] = mode if isinstance(mode, str) else "flags"

    def _from_project(self, frame: FrameType | None) -> bool:
        """Whether the project's code (or its tests') is on the stack of this ``open``:
        pytest's own files (``tmp_path``'s lock, its cache) are no test's effect."""
        place = self._scope.place
        depth = 0
        while frame is not None and depth < _MAX_DEPTH:
            if place(frame.f_code.co_filename) is not None:
                return True
            frame = frame.f_back
            depth += 1
        return False

    def _end_files(self, phase: str) -> None:
        for full, mode in self._files.items():
            if full.startswith(_NOT_FILES):
                continue
            try:
                regular = stat.S_ISREG(_stat(full).st_mode)
            except FileNotFoundError:
                content: Entry = {"digest": None, "state": "removed"}
            except OSError:
                content = {"digest": None, "state": "unreadable"}
            else:
                if not regular:
                    continue  # a folder, a FIFO (reading would block), a device, a socket
                content = self._file_digest(full)
            entry: Entry = {
                "type": "file",
                "phase": phase,
                "path": self._located(full),
                "mode": "append" if "a" in mode else "write",
            }
            entry.update(content)
            self._entries.append(entry)
        if self._files_dropped:
            self._entries.append(
                {"type": "file", "phase": phase, "bound": "files", "count": self._files_dropped}
            )

    def _file_digest(self, path: str) -> Entry:
        """The digest of a file's content: an archive (gzip, zip, tar) by what it holds, its
        times left out (``archives.py``); any other file, and an archive that cannot be read
        within the bounds, by its bytes (text made location-independent), the first MiB."""
        try:
            with _open(path, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
                if archives.looks_like_archive(data[:_ARCHIVE_HEAD]):
                    whole = data + handle.read(archives.MAX_ARCHIVE_BYTES + 1 - len(data))
                    form = archives.content_form(whole, self._member)
                    if form is not None:
                        return {"digest": self._digest(_TAG_ARCHIVE + form)}
        except FileNotFoundError:
            return {"digest": None, "state": "removed"}
        except OSError:
            return {"digest": None, "state": "unreadable"}
        out: Entry = {}
        if len(data) > MAX_FILE_BYTES:
            data = data[:MAX_FILE_BYTES]
            out["cut"] = True
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            out["digest"] = self._digest(_TAG_FILE + data)
        else:  # text: made location-independent like any other text
            out["digest"] = self._text_digest(_TAG_FILE, text)
        return out

    def _member(self, data: bytes) -> bytes:
        """What stands for one member of an archive in its digest: its bytes, text made
        location-independent as a plain file's is (a text member of up to a MiB), hashed."""
        if len(data) <= MAX_FILE_BYTES:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                return b"t" + _sha256(self._text_key(_TAG_FILE, text)).digest()
        return b"b" + _sha256(data).digest()

    # -- environment ---------------------------------------------------------------------

    def _end_environ(self, phase: str) -> None:
        before, after = self._environ, _raw_environ()
        if before == after:
            return
        for name in sorted(set(before) | set(after)):
            if name in _OWN_VARIABLES or name.startswith(_OWN_PREFIX):
                continue
            was, now = before.get(name), after.get(name)
            if was == now:
                continue
            self._entries.append(
                {
                    "type": "environ",
                    "phase": phase,
                    "name": self._clear(os.fsdecode(name)),
                    "change": "set" if was is None else "unset" if now is None else "changed",
                    "digest": None
                    if now is None
                    else self._text_digest(_TAG_ENV, os.fsdecode(now)),
                }
            )


def _raw_environ() -> dict[bytes, bytes]:
    """The process environment as bytes, without decoding every variable, and without the
    two variables set at every phase (``PYTEST_CURRENT_TEST`` by pytest, inside the phase;
    ``DIFFGENOME_CHILD`` by the recorder): with them the two copies of every phase differed
    and were compared name by name, for changes that are never recorded (``_OWN_VARIABLES``,
    ``_OWN_PREFIX``)."""
    raw = getattr(os.environ, "_data", None)
    if isinstance(raw, dict):
        copy = dict(raw)
    else:
        copy = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    for name in _PER_PHASE:
        copy.pop(name, None)
    return copy


_PHASE_ORDER: Final = {"setup": 0, "call": 1, "teardown": 2}
_TYPE_ORDER: Final = {"output": 0, "log": 1, "warning": 2, "file": 3, "environ": 4}


def _order(entry: Entry) -> tuple[int, int, str]:
    return (
        _PHASE_ORDER.get(str(entry.get("phase")), 3),
        _TYPE_ORDER.get(str(entry.get("type")), 5),
        repr(sorted(entry.items())),
    )
