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
  preview. A value made from one otherwise (reversed, encoded) is not recognised;
- what the secret rules mask in the text that remains (``'<secret:3fa1b2c3d4e5>'``);
- anything else: containers, objects, bytes, longer text.

The preview is made when the phase is exported, from the canonical forms the digests are
made of (values.py reads them back), so the compiled core and the Python callbacks record
the same previews without doing anything at event time, and a recorded child process's
values get them as the parent's do. Previews are never compared: the digest is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Final

from diffgenome.recording.collect import stable, values
from diffgenome.recording.collect.contract import ARG_CANON_SEPARATOR, ARG_SHAPE_SEPARATOR
from diffgenome.recording.collect.redact import SECRET_NAME

MAX_PREVIEW: Final = 40
#: Environment values shorter than this are in every environment and say nothing.
MIN_ENV_VALUE: Final = 3
#: A value that holds an environment value this long is withheld too (the secret rules'
#: length for the values of secret-named variables).
MIN_ENV_PART: Final = 6
_environ: Final = os.environ
_SEPARATOR: Final = ARG_CANON_SEPARATOR[0]


def _secret_name(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


class ValuePreviews:
    """The previews of one session: the secret rules (``clear``) and the values of its
    environment."""

    __slots__ = ("_clear", "_env", "_parts", "_raw", "_seen")

    def __init__(self, clear: Callable[[str], str]) -> None:
        self._clear = clear
        self._env: frozenset[str] = frozenset()
        self._parts: re.Pattern[str] | None = None
        self._raw: set[str] = set()
        self._seen: object = None
        self.note_environment()

    def note_environment(self) -> None:
        """Take the environment's values as they are now (at the end of every phase: a
        fixture's ``monkeypatch.setenv`` is still in force); never raises. A value once seen
        stays withheld for the rest of the session."""
        try:
            raw = getattr(_environ, "_data", None)
            if isinstance(raw, dict):
                if raw == self._seen:
                    return
                self._seen = dict(raw)
            new = {v for v in list(_environ.values()) if len(v) >= MIN_ENV_VALUE} - self._raw
            if not new:
                return
            self._raw |= new
            # Equal also as a str is digested (``$HOME`` is ``<home>``); held only as it is.
            # In any case: ``value.title()`` is still the value.
            self._env = (
                self._env
                | {v.casefold() for v in new}
                | {stable.stable_text(v).casefold() for v in new}
            )
            parts = sorted((v for v in self._raw if len(v) >= MIN_ENV_PART), key=lambda v: -len(v))
            self._parts = (
                re.compile("|".join(map(re.escape, parts)), re.IGNORECASE) if parts else None
            )
        except Exception:
            return

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
        try:
            value = values.scalar_of(form)
        except values.FormError:
            return None
        if value is None or type(value) is bool:
            return repr(value)
        text = value if type(value) is str else repr(value)
        if len(text) > MAX_PREVIEW or text.casefold() in self._env:
            return None
        parts = self._parts
        if parts is not None and parts.search(text) is not None:
            return None
        # The form holds the text made stable: the rules read it with its locations written
        # back (``$HOME=/root`` made ``postgresql://root:pw@db`` read ``postgresql:/<home>:…``).
        masked = self._clear(stable.unstable_text(text))
        return repr(masked) if type(value) is str else masked

    def result_of(self, symbol: str) -> Callable[[str, bytes], str | None] | None:
        """What ``BoundedValues.export`` calls for each result of ``symbol``'s calls (None:
        the function's name looks secret, no result of it is shown)."""
        if _secret_name(symbol.rpartition(".")[2]):
            return None
        return self._result

    def _result(self, shape: str, form: bytes) -> str | None:
        return self._scalar(form)


__all__ = ["MAX_PREVIEW", "ValuePreviews"]
