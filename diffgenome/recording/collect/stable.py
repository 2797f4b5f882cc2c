"""Text made stable before it is digested or disclosed: a genome must not depend on where the
tree is checked out, where its tools live, or what random names a run picked.

``diffgenome diff`` records base and head in two disposable worktrees; a fixture that builds a
path from ``__file__`` hands every function a string that differs between them although the
code does the same. So, inside digested strings and in the disclosures that quote paths or
program names, these are rewritten:

- **locations** (``configure``): the recorded tree's root (``<root>``), pytest's ``--basetemp``
  (``<basetemp>``), the interpreter (``<python>``), ``sys.prefix``/``sys.exec_prefix``/
  ``sys.base_prefix`` (``<prefix>``, ``<exec_prefix>``, ``<base_prefix>``), the temporary folder
  (``<tmp>``), the user's home (``<home>``) and the diffgenome package's own folder
  (``<diffgenome>``), each also by its real path; the longest first,
  so a virtualenv inside the tree is ``<prefix>`` and a worktree under ``/tmp`` is ``<root>``. A
  location matches only as a whole path (``/work/proj`` never rewrites ``/work/project2``);
- pytest's per-session temporary folders (``/pytest-of-USER/pytest-17/``, under xdist
  ``.../pytest-17/popen-gw1/``), numbered per session and worker;
- names made by ``tempfile`` in this process, with any prefix, suffix or folder: the random
  part is ``<random>`` (``tmp<random>``, ``build-<random>.txt``). The recorder learns each name
  as ``tempfile`` makes it (``track_tempfile_names``); a default-named ``tmp`` + 8 characters
  is rewritten even when it was made elsewhere (a child process, before recording began);
- object addresses in default reprs (``<function f at 0x7f3a...>``) and the ``id='...'`` of
  a unittest.mock repr: memory layout, not behaviour.

Each rewrite keeps the rest of the text, so a different path or function still differs.
Every rewritten text holds one of ``markers()`` (cheap substrings: the locations themselves,
``pytest-of-``, ``/tmp``, `` at 0x``, `` id='``) or a name ``tempfile`` made; other text is
digested as it is. The compiled core checks the same markers, and a bitmap of the names'
hashes, before it hands a string to Python, which keeps the two cores byte-identical.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import Any, Final

FIXED_MARKERS: Final = ("pytest-of-", "/tmp", " at 0x", " id='", "diffgenome-child:")
# The value of ``DIFFGENOME_CHILD`` (collect/children.py): a per-run token and folder that a
# test copying ``os.environ`` into a value would otherwise digest.
_CHILD_VALUE: Final = re.compile(r"diffgenome-child:[0-9.]*\|?[^\s'\",}]*")
_CHILD_VALUE_STABLE: Final = "diffgenome-child:<token>"
_PYTEST_TMP: Final = re.compile(r"/pytest-of-[^/\s]+/pytest-\d+(?:/popen-gw\d+)?")
_PYTEST_TMP_STABLE: Final = "/pytest-of-<user>/pytest-<n>"
_TEMPFILE_NAME: Final = re.compile(r"(?<=/)tmp[a-z0-9_]{8}(?=[/.'\"\s>]|$)")
_TEMPFILE_STABLE: Final = "tmp<random>"
_RANDOM_STABLE: Final = "<random>"
# Every position where an 8-character tempfile name could start (overlapping, so that a name
# right after a prefix of the same alphabet is found).
_CANDIDATE: Final = re.compile(r"(?=([a-z0-9_]{8}))")
_ADDRESS: Final = re.compile(r" at 0x[0-9a-fA-F]+")
_ADDRESS_STABLE: Final = " at 0x<address>"
_MOCK_ID: Final = re.compile(r"(<[A-Za-z_]*Mock\b[^<>]*?) id='\d+'")
_MOCK_ID_STABLE: Final = r"\1 id='<id>'"
# Names of the random part ``tempfile`` makes; past this many, later names are left as they
# are (more noise, never less evidence).
MAX_TEMPFILE_NAMES: Final = 1 << 16

# The ``diffgenome`` package's folder (this file is diffgenome/recording/collect/stable.py).
_DIFFGENOME_DIR: Final = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)

_markers: tuple[str, ...] = FIXED_MARKERS
_location_roots: tuple[str, ...] = ()
_location_re: re.Pattern[str] | None = None
_location_labels: dict[str, str] = {}
# Each label with the path it was first given for, and the pattern of the labels: what
# ``unstable_text`` writes back.
_label_paths: dict[str, str] = {}
_label_re: re.Pattern[str] | None = None
_tempfile_names: set[str] = set()
# One bit per window hash of a known name (``name_hash``); the compiled core slides the same
# hash over a short string and hands it to Python only where a bit is set.
TEMPFILE_NAME_LENGTH: Final = 8
NAME_HASH_BASE: Final = 31
NAME_HASH_BITS: Final = 16
TEMPFILE_NAME_BITS: Final = bytearray(1 << (NAME_HASH_BITS - 3))
_NAME_HASH_MASK: Final = (1 << NAME_HASH_BITS) - 1


def name_hash(name: str) -> int:
    """The polynomial hash of a name (base NAME_HASH_BASE, modulo 2**NAME_HASH_BITS), which
    the compiled core rolls over every window of a string (it is handed all three numbers)."""
    h = 0
    for char in name:
        h = (h * NAME_HASH_BASE + ord(char)) & _NAME_HASH_MASK
    return h


def tempfile_names() -> set[str]:
    """The names learned so far (shared with the compiled core, which reads its size)."""
    return _tempfile_names


def learn_tempfile_name(name: str) -> None:
    if len(_tempfile_names) < MAX_TEMPFILE_NAMES and len(name) == TEMPFILE_NAME_LENGTH:
        slot = name_hash(name)
        TEMPFILE_NAME_BITS[slot >> 3] |= 1 << (slot & 7)
        _tempfile_names.add(name)


def markers() -> tuple[str, ...]:
    """Substrings one of which every text that ``stable_text`` would rewrite contains."""
    return _markers


def locations_of_this_process(
    rootdir: str, basetemp: str | None, home: str | None
) -> list[tuple[str, str]]:
    """The ``(path, label)`` pairs for ``configure`` in a recording process."""
    import tempfile

    pairs = [
        (rootdir, "<root>"),
        # A default basetemp (``pytest-of-USER/pytest-N``) is made stable by its pattern; an
        # xdist worker's is the controller's plus ``popen-gwN``, so each worker's own folder
        # and the serial run's one folder read alike.
        (basetemp if basetemp and "pytest-of-" not in basetemp else "", "<basetemp>"),
        (sys.executable, "<python>"),
        (sys.prefix, "<prefix>"),
        (sys.exec_prefix, "<exec_prefix>"),
        (sys.base_prefix, "<base_prefix>"),
        (sys.base_exec_prefix, "<base_prefix>"),
        (tempfile.gettempdir(), "<tmp>"),
        (home or "", "<home>"),
        # diffgenome itself: ``diffgenome diff`` runs the recorder from a copy in its
        # disposable workspace, and a warning said while a callback ran names this file.
        (_DIFFGENOME_DIR, "<diffgenome>"),
    ]
    return [(path, label) for path, label in pairs if path]


def configure(locations: Iterable[tuple[str, str]]) -> None:
    """Set the locations made stable (each path also by its real path); the first label given
    for a path wins. Called once before recording starts, never at event time."""
    global _markers, _location_roots, _location_re, _location_labels, _label_paths, _label_re
    labels: dict[str, str] = {}
    label_paths: dict[str, str] = {}
    for path, label in locations:
        if len(path.rstrip("/")) > 2 and path.startswith("/"):
            label_paths.setdefault(label, path.rstrip("/"))
        for variant in (path, os.path.realpath(path)):
            variant = variant.rstrip("/")
            # "/" or a one-letter folder would rewrite every path: not a location.
            if len(variant) > 2 and variant.startswith("/") and variant not in labels:
                labels[variant] = label
    roots = tuple(sorted(labels, key=len, reverse=True))
    _label_paths = label_paths
    _label_re = (
        re.compile("|".join(re.escape(label) for label in label_paths)) if label_paths else None
    )
    _location_labels = labels
    _location_roots = roots
    _location_re = (
        re.compile(r"(?<![\w.\-])(" + "|".join(re.escape(r) for r in roots) + r")(?![\w.\-])")
        if roots
        else None
    )
    _markers = FIXED_MARKERS + tuple(r for r in roots if not any(m in r for m in FIXED_MARKERS))


def unstable_text(text: str) -> str:
    """``text`` with each location label written back as the path it stands for (the first
    given for that label): the text the secret rules read where only the stable form is at
    hand (a value's canonical form), so that a rewrite never hides a secret's context
    (``postgresql://root:pw@db`` with ``$HOME=/root`` reads ``postgresql:/<home>:pw@db``)."""
    pattern = _label_re
    if pattern is None or "<" not in text:
        return text
    return pattern.sub(_label_path, text)


def _label_path(match: re.Match[str]) -> str:
    return _label_paths[match.group()]


def _location_label(match: re.Match[str]) -> str:
    return _location_labels[match.group(1)]


def _random_names(text: str) -> str:
    names = _tempfile_names
    spans: list[tuple[int, int]] = []
    end = -1
    for match in _CANDIDATE.finditer(text):
        start = match.start()
        if start >= end and match.group(1) in names:
            end = start + 8
            spans.append((start, end))
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, stop in spans:
        parts.append(text[last:start])
        parts.append(_RANDOM_STABLE)
        last = stop
    parts.append(text[last:])
    return "".join(parts)


def stable_text(text: str) -> str:
    """``text`` with run- and location-specific parts replaced (see the module docstring)."""
    for marker in _markers:
        if marker in text:
            break
    else:
        return _random_names(text) if _tempfile_names else text
    if "diffgenome-child:" in text:
        text = _CHILD_VALUE.sub(_CHILD_VALUE_STABLE, text)
    if _location_re is not None:
        text = _location_re.sub(_location_label, text)
    if _tempfile_names:
        text = _random_names(text)
    if "pytest-of-" in text:
        text = _PYTEST_TMP.sub(_PYTEST_TMP_STABLE, text)
    if "/tmp" in text:
        text = _TEMPFILE_NAME.sub(_TEMPFILE_STABLE, text)
    if " at 0x" in text:
        text = _ADDRESS.sub(_ADDRESS_STABLE, text)
    if " id='" in text:
        text = _MOCK_ID.sub(_MOCK_ID_STABLE, text)
    return text


def stable_program(name: str) -> str:
    """A program's name as disclosed in a subprocess event: a temporary script's random name
    is stable even without its folder (only Python sees these, so no marker is needed)."""
    if _tempfile_names:
        name = _random_names(name)
    name = _TEMPFILE_NAME.sub(_TEMPFILE_STABLE, "/" + name)[1:]
    return stable_text(name)


class TempfileNames:
    """Learns the random part of every name ``tempfile`` makes while installed.

    ``tempfile`` draws names from one ``_RandomNameSequence``; wrapping its class's
    ``__next__`` sees every name (``mkdtemp``, ``mkstemp``, ``NamedTemporaryFile``,
    ``TemporaryDirectory``, with any prefix, suffix or folder) without changing any. Restored
    by ``uninstall``.
    """

    def __init__(self) -> None:
        self._cls: Any = None
        self._original: Any = None

    def install(self) -> None:
        import tempfile

        cls: Any = getattr(tempfile, "_RandomNameSequence", None)
        original: Any = getattr(cls, "__next__", None) if cls is not None else None
        if cls is None or original is None:
            return  # another Python's tempfile: default names are still made stable
        learn = learn_tempfile_name

        def __next__(sequence: Any) -> Any:
            name = original(sequence)
            if type(name) is str:
                learn(name)
            return name

        cls.__next__ = __next__
        self._cls, self._original = cls, original

    def uninstall(self) -> None:
        if self._cls is not None:
            self._cls.__next__ = self._original
            self._cls = self._original = None
