"""JSON text of the formats: every string stored whatever it holds.

Python strings taken from user code may hold lone surrogates: an undecodable byte of a file
name, an argument or an environment value comes through ``os.fsdecode`` as ``\\udc80`` ..
``\\udcff`` (PEP 383's ``surrogateescape``), and a test may build any code point it likes.
UTF-8 cannot encode them, so neither SQLite's text nor a UTF-8 file takes them as they are.
JSON can: a ``\\uXXXX`` escape names any code unit, and Python's ``json`` reads it back as the
identical string. The rule of every format and of the store (docs/protocol.md, "Text"):

* inside JSON, a lone surrogate is written as its escape, lower-case hex (what
  ``json.dumps`` with ``ensure_ascii=True`` writes), every other character as the encoder
  writes it: the text is valid UTF-8 and reads back identical;
* outside JSON (a test id in its own column, a line on a terminal) a lone surrogate is written
  as the same six characters, as pytest writes a parametrize id's undecodable bytes.

Standard library only: both sides write JSON through here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

# Any UTF-16 surrogate code point: in a str they are always lone (a pair is one code point).
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its ``\\uXXXX`` escape (the JSON escape
    inside JSON text; the same six characters in plain text); ``text`` itself when it holds
    none. ASCII text is answered without a scan."""
    if text.isascii():
        return text
    return _SURROGATE.sub(_escape, text)


def has_surrogates(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def json_encoder(**options: Any) -> Callable[[Any], str]:
    """``json.JSONEncoder(**options).encode`` whose text never holds a lone surrogate (see
    the module's rule), bound once: ``json.dumps`` with options builds an encoder per call,
    and a bound encoder is out of reach of tests that patch ``json``."""
    encode = json.JSONEncoder(**options).encode
    if options.get("ensure_ascii", True):
        return encode  # every non-ASCII character is escaped already

    def encode_text(value: Any) -> str:
        return escape_surrogates(encode(value))

    return encode_text


#: The store's JSON: keys sorted, no spaces, UTF-8 kept as it is, lone surrogates escaped.
canonical_json: Final = json_encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
