"""What a test warned: the warnings pytest caught while the test ran, as part of its genome.

A new ``warnings.warn`` on a new branch is a change of behaviour a user sees (a deprecation,
a fallback), yet it leaves every call, value and decision of the genome as it was: without
this, such a test read as ``touched`` (same behaviour through changed code). The evidence
is taken from pytest's own warnings capture (``pytest_warning_recorded``), not from a hook
on ``warnings``: tests replace ``warnings.showwarning`` and ``catch_warnings`` freely, and
pytest is the one party that sees every warning that escapes the test.

Messages are stored as keyed digests, never as text (docs/protocol.md, ``warnings``).
Not seen here, and said so in docs/protocol.md: warnings the test catches itself
(``pytest.warns``, ``recwarn``, ``catch_warnings(record=True)``: those are recorded per phase
by recording/effects.py, with whether they escaped), warnings the project's filters ignore,
and everything under
``-p no:warnings`` (then the test record has no ``warnings`` field at all, which the differ
reads as "not recorded", never as "none").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from diffgenome.recording.collect import stable
from diffgenome.recording.collect.values import Digester

# Enough of a message for a person to recognise it (``--genome-preview`` only).
MAX_TEXT = 200
# Read this far for a preview: the secret rules run on it before it is cut.
_PREVIEW_READ = 4 * MAX_TEXT
_DIGEST_TAG = b"diffgenome-warning\0"
_TRAILING_RUN = re.compile(r"[^\s'\"()<>\[\]{},;]*$")
# What the interpreter says while finalizing something: which test shows it is timing.
_FINALIZING = frozenset(
    {
        "ResourceWarning",
        "pytest.PytestUnraisableExceptionWarning",
        "pytest.PytestUnhandledThreadExceptionWarning",
    }
)


def _category(category: object) -> str:
    module = getattr(category, "__module__", "") or ""
    name = getattr(category, "__qualname__", None) or getattr(category, "__name__", "?")
    return str(name) if module == "builtins" else f"{module}.{name}"


# ``unclosed <socket.socket fd=7, ... laddr=('127.0.0.1', 40123)>``: file descriptors and
# ports are the process's, not the code's. Only in ResourceWarning, where they are the rule.
_NUMBERS = re.compile(r"\d+")


def _said(message: object) -> str:
    try:
        return str(message)
    except Exception as exc:  # a warning whose __str__ fails is still a warning
        return f"<unprintable {type(message).__name__}: {type(exc).__name__}>"


def _text(said: str, category: str) -> str:
    """What the message digest is of: the message made stable, its run-specific numbers
    written ``N`` in a ResourceWarning."""
    text = stable.stable_text(said)
    if category == "ResourceWarning":
        text = _NUMBERS.sub("N", text)
    return text


def _finalizing(category: str, text: str) -> bool:
    return category in _FINALIZING or (category == "RuntimeWarning" and "was never awaited" in text)


class WarningsSeen:
    """The warnings of the test being recorded, counted by (category, origin, message).

    The message is kept as its keyed digest only (``message_digest``): a warning says
    whatever the code put into it (``f"token {token} expired"``), and no value may reach the
    store. Under ``--genome-preview`` a cut text with the secret rules applied
    (``collect/redact.py``) is kept beside it for people (``message``). The origin (a path
    made stable) passes through the same rules; the category is the warning's class.
    """

    __slots__ = ("_counts", "_digest", "_located", "_preview")

    def __init__(
        self,
        digester: Digester,
        clear: Callable[[str], str] | None = None,
        preview: bool = False,
        located: Callable[[str], str] | None = None,
    ) -> None:
        self._counts: dict[tuple[str, str, str], list[Any]] = {}
        self._digest = digester.digest
        # Made stable with the secret rules reading the text as it was too
        # (``Redactor.located``); without rules, only made stable.
        self._located = located or (
            (lambda text: clear(stable.stable_text(text))) if clear else stable.stable_text
        )
        self._preview = preview

    def add(self, warning_message: Any) -> None:
        """One caught ``warnings.WarningMessage``."""
        category = _category(getattr(warning_message, "category", None))
        origin = self._located(str(getattr(warning_message, "filename", "") or ""))
        said = _said(getattr(warning_message, "message", ""))
        text = _text(said, category)
        digest = self._digest(_DIGEST_TAG + text.encode("utf-8", "surrogatepass"))
        key = (category, origin, digest)
        seen = self._counts.get(key)
        if seen is None:
            if category == "ResourceWarning":
                said = _NUMBERS.sub("N", said)
            preview = self._preview_of(said) if self._preview else None
            seen = self._counts[key] = [0, _finalizing(category, text), preview]
        seen[0] += 1

    def _preview_of(self, text: str) -> str:
        """The start of the message, made stable with the secret rules applied (reading it
        as it was said, before any location was rewritten), then cut (so that a cut never
        leaves half a secret unmasked)."""
        read = text[:_PREVIEW_READ]
        shown = self._located(read)
        cut = len(text) > _PREVIEW_READ
        if cut:  # what was read may end in the first half of a secret: never shown
            shown = _TRAILING_RUN.sub("", shown)
        if cut or len(shown) > MAX_TEXT:
            shown = shown[:MAX_TEXT] + "\u2026"
        return shown

    def take(self) -> list[dict[str, Any]]:
        """The test's warnings in a fixed order, and a fresh start for the next test."""
        counts, self._counts = self._counts, {}
        out: list[dict[str, Any]] = []
        for (category, origin, digest), (count, finalizing, preview) in sorted(counts.items()):
            entry: dict[str, Any] = {
                "category": category,
                "origin": origin,
                "message_digest": digest,
                "count": count,
            }
            if finalizing:
                entry["finalizing"] = True
            if preview is not None:
                entry["message"] = preview
            out.append(entry)
        return out
