"""A file of the store folder named without ``os.path``: the writer calls this inside the
user's test process, where tests patch it."""

from __future__ import annotations

from os import sep as _sep


def store_file(folder: str, name: str) -> str:
    """A file of the store folder, joined as a plain string: the writer runs where tests patch
    ``os.path``."""
    return folder if not folder else folder.rstrip(_sep) + _sep + name
