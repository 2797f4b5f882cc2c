"""What a test warned: the warnings pytest caught while the test ran, as part of its genome.

A new ``warnings.warn`` on a new branch is a change of behaviour a user sees (a deprecation,
a fallback), yet it leaves every call, value and decision of the genome as it was: without
this, such a test read as ``touched`` (same behaviour through changed code). The evidence
is taken from pytest's own warnings capture (``pytest_warning_recorded``), not from a hook
on ``warnings``: tests replace ``warnings.showwarning`` and ``catch_warnings`` freely, and
pytest is the one party that sees every warning that escapes the test.

Not seen, and said so in docs/protocol.md: warnings the test catches itself
(``pytest.warns``, ``recwarn``, ``catch_warnings(record=True)``; the test's own assertions
judge those), warnings the project's filters ignore, and everything under
``-p no:warnings`` (then the test record has no ``warnings`` field at all, which the differ
reads as "not recorded", never as "none").
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from diffgenome.recording.collect import stable

# Enough of a message for a person to recognise it; a longer one is cut and ends with a
# digest of the whole, so a change past the cut is still a difference.
MAX_TEXT = 200
_DIGEST_CHARS = 12


def _category(category: object) -> str:
    module = getattr(category, "__module__", "") or ""
    name = getattr(category, "__qualname__", None) or getattr(category, "__name__", "?")
    return str(name) if module == "builtins" else f"{module}.{name}"


# ``unclosed <socket.socket fd=7, ... laddr=('127.0.0.1', 40123)>``: file descriptors and
# ports are the process's, not the code's. Only in ResourceWarning, where they are the rule.
_NUMBERS = re.compile(r"\d+")


def _text(message: object, category: str) -> str:
    try:
        text = str(message)
    except Exception as exc:  # a warning whose __str__ fails is still a warning
        text = f"<unprintable {type(message).__name__}: {type(exc).__name__}>"
    text = stable.stable_text(text)
    if category == "ResourceWarning":
        text = _NUMBERS.sub("N", text)
    if len(text) <= MAX_TEXT:
        return text
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return f"{text[:MAX_TEXT]}…[{digest[:_DIGEST_CHARS]}]"


class WarningsSeen:
    """The warnings of the test being recorded, counted by (category, origin, text)."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str, str], int] = {}

    def add(self, warning_message: Any) -> None:
        """One caught ``warnings.WarningMessage``."""
        category = _category(getattr(warning_message, "category", None))
        key = (
            category,
            stable.stable_text(str(getattr(warning_message, "filename", "") or "")),
            _text(getattr(warning_message, "message", ""), category),
        )
        self._counts[key] = self._counts.get(key, 0) + 1

    def take(self) -> list[dict[str, Any]]:
        """The test's warnings in a fixed order, and a fresh start for the next test."""
        counts, self._counts = self._counts, {}
        return [
            {"category": category, "origin": origin, "message": text, "count": count}
            for (category, origin, text), count in sorted(counts.items())
        ]
