"""The warnings that escaped a test (its record's ``warnings``) compared between base and
head: by category, origin and message (its keyed digest, or its text in older recordings),
counted; and whether the two sides kept their messages comparably at all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

WarningKey = tuple[str, str, str | None]
_DIGEST_STYLE = "digest"
_TEXT_STYLE = "text"


def _styles(warned: object) -> set[str]:
    """How a side kept its warning messages: as keyed digests, or as text (a recorder before
    2026-12-02)."""
    return {
        _DIGEST_STYLE if isinstance(item.get("message_digest"), str) else _TEXT_STYLE
        for item in (warned if isinstance(warned, list) else ())
        if isinstance(item, Mapping)
    }


def warning_messages_comparable(b: object, h: object) -> bool:
    """False when both sides warned and kept the messages differently, one as text and the
    other as digests: those messages cannot be compared (the test is unverified)."""
    styles_b, styles_h = _styles(b), _styles(h)
    return not styles_b or not styles_h or len(styles_b | styles_h) == 1


def _by_message(b: object, h: object, digests: bool) -> bool:
    """Whether messages can be compared, or only categories and origins."""
    styles = _styles(b) | _styles(h)
    if len(styles) > 1:
        return False
    return digests or _DIGEST_STYLE not in styles


def _warning_counts(warned: object, by_message: bool) -> dict[WarningKey, dict[str, Any]]:
    """Each (category, origin, message) with its count, as the entry a change lists; the
    message is its digest where the recorder kept one, else its text (older recordings)."""
    entries: dict[WarningKey, dict[str, Any]] = {}
    for item in warned if isinstance(warned, list) else ():
        if not isinstance(item, Mapping):
            continue
        category, origin = str(item.get("category")), str(item.get("origin"))
        digest, message = item.get("message_digest"), item.get("message")
        said: str | None = None
        if by_message:
            said = f"#{digest}" if isinstance(digest, str) else f"'{message}"
        key = (category, origin, said)
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = {"category": category, "origin": origin}
            if by_message:
                if isinstance(digest, str):
                    entry["message_digest"] = digest
                if message is not None:
                    entry["message"] = message
            entry["count"] = 0
        entry["count"] += int(item.get("count") or 0)
    return entries


def _warnings_out(
    entries: Mapping[WarningKey, dict[str, Any]], keys: Iterable[WarningKey]
) -> list[Any]:
    return [dict(entries[key]) for key in sorted(keys, key=_key_order)]


def _key_order(key: WarningKey) -> tuple[str, str, str]:
    return key[0], key[1], key[2] or ""


def warnings_diff(b: object, h: object, *, digests: bool = True) -> tuple[Any, Any] | None:
    """The warnings whose count differs, each side's count of them; None when equal.

    A side without a ``warnings`` field did not record them: that is reported only where the
    other side did warn (``null`` for the unknown side), never as "no warnings". Messages are
    compared by digest (by text in older recordings); where they cannot be (digests under
    different keys, or text on one side and digests on the other) only categories, origins
    and counts are, and the caller makes the test unverified.
    """
    if b == h:
        return None
    by_message = _by_message(b, h, digests)
    if b is None or h is None:
        known = h if b is None else b
        counts = _warning_counts(known, by_message)
        if not counts:
            return None
        out = _warnings_out(counts, counts)
        return (None, out) if b is None else (out, None)
    b_counts, h_counts = _warning_counts(b, by_message), _warning_counts(h, by_message)
    keys = {
        key
        for key in b_counts.keys() | h_counts.keys()
        if _warned_count(b_counts, key) != _warned_count(h_counts, key)
    }
    if not keys:
        return None
    return (
        _warnings_out(b_counts, (k for k in keys if _warned_count(b_counts, k))),
        _warnings_out(h_counts, (k for k in keys if _warned_count(h_counts, k))),
    )


def _warned_count(entries: Mapping[WarningKey, dict[str, Any]], key: WarningKey) -> int:
    entry = entries.get(key)
    return int(entry["count"]) if entry is not None else 0
