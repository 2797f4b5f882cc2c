"""The digest key of a store: made once, beside the database and never inside it, so that
racing processes all read the same key, and named only by a fingerprint that reveals
nothing about it (digests compare only where the fingerprints match)."""

from __future__ import annotations

import hashlib
import hmac
from contextlib import suppress
from os import O_CREAT, O_EXCL, O_WRONLY
from os import close as _close
from os import fsync as _fsync
from os import getpid as _getpid
from os import link as _link
from os import lstat as _lstat
from os import open as _open
from os import unlink as _unlink
from os import urandom as _urandom
from os import write as _write
from stat import S_ISLNK
from time import sleep as _sleep
from typing import Final

from diffgenome.protocol.errors import StoreError
from diffgenome.protocol.fileio import read_file
from diffgenome.store.paths import store_file

KEY_FILE: Final = "secret.key"


KEY_BYTES: Final = 32


KEY_MIN_BYTES: Final = 16


def key_fingerprint(key: bytes) -> str:
    """A name for the key that reveals nothing about it: digests compare only when these match."""
    mac = hmac.new(key, b"diffgenome key fingerprint", hashlib.sha256).hexdigest()
    return "hmac-sha256:" + mac[:16]


def load_key(path: str, given: bool) -> bytes:
    try:
        key = read_file(path)
    except FileNotFoundError:
        if not given:
            raise
        raise StoreError(
            f"the key file {path} does not exist; make one with `diffgenome key new {path}` "
            f"(or pass an existing key file of at least {KEY_MIN_BYTES} random bytes)"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read the digest key {path}: {exc.strerror or exc}; "
            "fix its permissions or pass another key file"
        ) from None
    if len(key) < KEY_MIN_BYTES:
        hint = "pass a longer key file" if given else "delete it so that a new key is made"
        raise StoreError(
            f"digest key {path} is too short ({len(key)} bytes, need at least "
            f"{KEY_MIN_BYTES}); {hint}"
        )
    return key


def _create_key(path: str) -> None:
    """Create the key so that racing processes all end up reading the same one.

    The bytes are written under a private temporary name first and then hard-linked into
    place; ``link`` fails if the name exists, so the first complete key wins and nobody ever
    reads a half-written file. Where hard links are unsupported, an exclusive create of the
    final name still lets only one process write it.
    """
    key = _urandom(KEY_BYTES)
    tmp = f"{path}.{_getpid()}.{_urandom(4).hex()}.tmp"
    fd = _open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    try:
        try:
            _write(fd, key)
            _fsync(fd)
        finally:
            _close(fd)
        try:
            _link(tmp, path)
        except FileExistsError:
            return
        except OSError:
            _create_in_place(path, key)
    finally:
        with suppress(OSError):
            _unlink(tmp)


def new_key_file(path: str) -> None:
    """Write a new digest key to ``path`` (``diffgenome key new``): :data:`KEY_BYTES` random
    bytes, readable by the owner only; an existing file is never overwritten (its digests
    would no longer compare with anything recorded under it)."""
    key = _urandom(KEY_BYTES)
    try:
        fd = _open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    except FileExistsError:
        raise StoreError(
            f"{path} exists; a key file is never overwritten (what was recorded with it would "
            "no longer compare): choose another FILE, or remove this one first"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot write {path}: {exc.strerror or exc}; choose another FILE"
        ) from None
    try:
        _write(fd, key)
        _fsync(fd)
    finally:
        _close(fd)


def _create_in_place(path: str, key: bytes) -> None:
    try:
        fd = _open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        _write(fd, key)
        _fsync(fd)
    finally:
        _close(fd)


def store_key(folder: str) -> bytes:
    path = store_file(folder, KEY_FILE)
    with suppress(OSError):
        if S_ISLNK(_lstat(path).st_mode):
            # Its key would be whatever file the link names, used silently.
            raise StoreError(
                f"{path} is a symbolic link; a store reads its key only from a file of its "
                "own: remove the link, or pass a shared key with --genome-key-file"
            )
    try:
        return load_key(path, given=False)
    except FileNotFoundError:
        pass
    try:
        _create_key(path)
    except OSError as exc:
        raise StoreError(
            f"cannot create the digest key in {folder}: {exc.strerror or exc}; "
            "make the store folder writable or pass a key file"
        ) from None
    # Only the no-hard-link fallback can expose a key still being written: give it a moment.
    for attempt in range(20):
        try:
            return load_key(path, given=False)
        except FileNotFoundError:
            raise StoreError(
                f"digest key {path} vanished right after it was created; "
                "check what else is cleaning the store folder"
            ) from None
        except StoreError:
            if attempt == 19:
                raise
            _sleep(0.05)
    raise AssertionError("unreachable")
