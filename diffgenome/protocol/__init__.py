"""The language-neutral protocol: what the recording and analysis sides share besides the
store (``diffgenome.store``, which stands on it): formats, vocabularies, naming.

Standard library only. Formats are named and versioned as ``<name>/<major>``; adding optional
fields keeps the major version, changing a field's meaning bumps it.
"""

from diffgenome.protocol.errors import UserError
from diffgenome.protocol.formats import (
    DIFF_FORMAT,
    GENOME_FORMAT,
    STORE_FORMAT,
    FormatError,
    check_format,
)

__all__ = [
    "DIFF_FORMAT",
    "GENOME_FORMAT",
    "STORE_FORMAT",
    "FormatError",
    "UserError",
    "check_format",
]
