"""Small scalar values a reviewer can read (``--genome-preview``), beside their digests.

``py:tabulate._dashes results: str (value P) -> str (value Q)`` says *that* a value changed;
``'---' -> '==='`` says what changed. Under ``--genome-preview`` a value entry of a call
(``args``, ``results``) whose every value is a small scalar keeps a preview: ``None``,
``True``, an int or float or complex number written in at most 40 characters, a str of at
most 40 characters as Python writes it (``'---'``), the arguments as ``width=3, fill='-'``.

What a preview never shows (docs/recording.md, "Value previews"):

- a value of a parameter whose name the environment rule of the secret rules calls secret
  (``*TOKEN*``, ``*KEY*``, ``*PASSW*``, ``*AUTH*``, ...: ``api_key``, ``password``, and also
  ``author``, ``monkey``: the rule withholds rather than guess), nor a result of a function
  whose name it calls secret (``get_token``): that entry has no preview;
- a value equal to the value of an environment variable (three characters or more: ``0``,
  ``1`` and ``on`` are in every environment and hold no secret), or holding one of six
  characters or more (a token with a prefix, a doubled password), in any case, as the
  environment is when the session starts and at the end of every phase: that entry has no
  preview. A value made from one otherwise (reversed, encoded) is not recognised. Not the
  two variables set anew at every phase, pytest's ``PYTEST_CURRENT_TEST`` (the running test's
  id) and diffgenome's ``DIFFGENOME_CHILD`` (its own token and folder): they hold no secret,
  and taken as values they grew without end, each phase adding one (#47);
- what the secret rules mask in the text that remains (``'<secret:3fa1b2c3d4e5>'``);
- anything else: containers, objects, bytes, longer text.

The preview is made when the phase is exported, from the canonical forms the digests are
made of (values.py reads them back), so the compiled core and the Python callbacks record
the same previews without doing anything at event time, and a recorded child process's
values get them as the parent's do. Previews are never compared: the digest is.

What it costs: at the end of every phase the raw environment is compared with the one last
read (a copy of a dict, a microsecond), without the two per-phase variables; only when that
changed is the environment decoded and its new values added. Those that can be held in a
previewed text (6 to 40 characters) go into patterns compiled in runs of doubling size, so
that a suite whose fixture sets a new value in every test (``monkeypatch.setenv("HOME",
str(tmp_path))``) compiles each value about log2(N) times rather than once a phase. Until
#47 the per-phase variables were values too: a pattern of every test id seen so far was
compiled at every phase and searched in every scalar (cookiecutter's suite, 383 tests: 16 s
to 519 s, 0.8 GB).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Final

from diffgenome.recording.collect import stable, values
from diffgenome.recording.collect.contract import ARG_CANON_SEPARATOR, ARG_SHAPE_SEPARATOR
from diffgenome.recording.collect.redact import PER_PHASE_KEYS, PER_PHASE_VARIABLES, SECRET_NAME

MAX_PREVIEW: Final = 40
#: An exception's preview: its class and its arguments (a message is longer than a value).
MAX_EXCEPTION_PREVIEW: Final = 100
#: Environment values shorter than this are in every environment and say nothing.
MIN_ENV_VALUE: Final = 3
#: A value that holds an environment value this long is withheld too (the secret rules'
#: length for the values of secret-named variables).
MIN_ENV_PART: Final = 6
_environ: Final = os.environ
_compile: Final = re.compile
_escape: Final = re.escape
_IGNORECASE: Final = re.IGNORECASE
_SEPARATOR: Final = ARG_CANON_SEPARATOR[0]


def _secret_name(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


class ValuePreviews:
    """The previews of one session: the secret rules (``clear``) and the values of its
    environment."""

    __slots__ = ("_clear", "_env", "_parts", "_raw", "_seen", "compiled", "rebuilds", "scans")

    def __init__(self, clear: Callable[[str], str]) -> None:
        self._clear = clear
        self._env: set[str] = set()
        # Patterns of the values a previewed text may hold, each with the values it was
        # compiled from, in runs of doubling size (a newer run is never the larger).
        self._parts: list[tuple[list[str], re.Pattern[str]]] = []
        self._raw: set[str] = set()
        self._seen: object = None
        #: How often the environment's values were read, patterns compiled, and values
        #: compiled into them (a phase whose environment did not change adds to none).
        self.scans = 0
        self.rebuilds = 0
        self.compiled = 0
        self.note_environment()

    def note_environment(self) -> None:
        """Take the environment's values as they are now (at the end of every phase: a
        fixture's ``monkeypatch.setenv`` is still in force); never raises. A value once seen
        stays withheld for the rest of the session. The variables set at every phase
        (``PYTEST_CURRENT_TEST``, ``DIFFGENOME_CHILD``) are left out, of the comparison and
        of the values: with them every phase read, and compiled, everything again."""
        try:
            raw = getattr(_environ, "_data", None)
            if isinstance(raw, dict):
                seen = dict(raw)
                for key in PER_PHASE_KEYS:
                    seen.pop(key, None)
                if seen == self._seen:
                    return
                self._seen = seen
            self.scans += 1
            new = {
                value
                for name, value in list(_environ.items())
                if len(value) >= MIN_ENV_VALUE and name not in PER_PHASE_VARIABLES
            } - self._raw
            if not new:
                return
            self._raw |= new
            # Equal also as a str is digested (``$HOME`` is ``<home>``); held only as it is.
            # In any case: ``value.title()`` is still the value.
            self._env.update(v.casefold() for v in new)
            self._env.update(stable.stable_text(v).casefold() for v in new)
            # A previewed text has at most MAX_EXCEPTION_PREVIEW characters: a longer value
            # (``PATH``) is never inside one.
            self._add_parts(
                sorted(v for v in new if MIN_ENV_PART <= len(v) <= MAX_EXCEPTION_PREVIEW)
            )
        except Exception:
            return

    def _add_parts(self, parts: list[str]) -> None:
        """Compile ``parts`` into a pattern of their own, merged with the newer patterns no
        larger than it (a binary counter): each value is compiled again only when its run
        doubles, and a text is searched by a logarithmic number of patterns."""
        if not parts:
            return
        runs = self._parts
        while runs and len(runs[-1][0]) <= len(parts):
            parts = runs.pop()[0] + parts
        runs.append((parts, _compile("|".join(map(_escape, parts)), _IGNORECASE)))
        self.rebuilds += 1
        self.compiled += len(parts)

    def args(self, shape: str, form: bytes) -> str | None:
        """``name=value, ...`` of an arguments entry whose every value can be shown."""
        labels = shape.split(ARG_SHAPE_SEPARATOR)
        shown: list[str] = []
        at = 0
        for index, label in enumerate(labels):
            name, equals, _ = label.partition("=")
            if not equals or not name or _secret_name(name):
                return None
            end = values.form_end(form, at)
            text = self._scalar(form[at:end])
            if text is None:
                return None
            shown.append(f"{name}={text}")
            last = index == len(labels) - 1
            if last != (end == len(form)) or (not last and form[end] != _SEPARATOR):
                return None  # the shape and the forms do not tell the same arguments
            at = end + 1
        return ", ".join(shown) if shown else None

    def _scalar(self, form: bytes) -> str | None:
        if form[:1] == b"x":
            return self._exception(form)
        try:
            value = values.scalar_of(form)
        except values.FormError:
            return None
        return self._shown(value, MAX_PREVIEW)

    def _shown(self, value: object, limit: int) -> str | None:
        """A scalar as a reviewer reads it, or None where a rule withholds it."""
        if value is None or type(value) is bool:
            return repr(value)
        text = value if type(value) is str else repr(value)
        if len(text) > limit:
            return None
        # The form holds the text made stable (``/tmp/x`` reads ``<tmp>/x``): the rules and
        # the environment's values are read against it with its locations written back too,
        # so a value under a known location (``HOME=/tmp/pytest-7/test_0``) is still found
        # (``$HOME=/root`` made ``postgresql://root:pw@db`` read ``postgresql:/<home>:…``).
        raw = stable.unstable_text(text)
        for seen in {text, raw}:
            if seen.casefold() in self._env:
                return None
            for _, parts in self._parts:
                if parts.search(seen) is not None:
                    return None
        masked = self._clear(raw)
        return repr(masked) if type(value) is str else masked

    def _exception(self, form: bytes) -> str | None:
        """An exception whose arguments are all small scalars, as Python writes its
        construction: ``ValueError("'1.0.x' is not a valid SemVer string")``, each argument
        under the same rules as a value (an argument that cannot be shown hides it all)."""
        try:
            name, args = values.exception_of(form)
        except values.FormError:
            return None
        shown = []
        for arg in args:
            text = self._shown(arg, MAX_EXCEPTION_PREVIEW)
            if text is None:
                return None
            shown.append(text)
        text = f"{name.rpartition('.')[2]}({', '.join(shown)})"
        return text if len(text) <= MAX_EXCEPTION_PREVIEW else None

    def result_of(self, symbol: str) -> Callable[[str, bytes], str | None] | None:
        """What ``BoundedValues.export`` calls for each result of ``symbol``'s calls (None:
        the function's name looks secret, no result of it is shown)."""
        if _secret_name(symbol.rpartition(".")[2]):
            return None
        return self._result

    def _result(self, shape: str, form: bytes) -> str | None:
        return self._scalar(form)


__all__ = ["MAX_PREVIEW", "ValuePreviews"]
