"""Format names and the one rule every reader applies before anything else."""

from __future__ import annotations

from diffgenome.protocol.errors import UserError

GENOME_FORMAT = "diffgenome-genome/1"
DIFF_FORMAT = "diffgenome-diff/1"
STORE_FORMAT = "diffgenome-store/1"


class FormatError(UserError, ValueError):
    """A document or store of a format or major version this reader does not know.

    The message is one line that says what was found and what to do, because it is shown to
    the user as is.
    """


def split_format(value: object) -> tuple[str, int] | None:
    """``"diffgenome-genome/1"`` -> ``("diffgenome-genome", 1)``; None when malformed."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    name, _, major = value.partition("/")
    if not name or not major.isdigit():
        return None
    return name, int(major)


def check_format(value: object, expected: str) -> None:
    """Refuse anything but the expected format name at the expected major version."""
    want = split_format(expected)
    assert want is not None
    got = split_format(value)
    if got is None:
        raise FormatError(
            f"not a {want[0]} document (format field is {value!r}); expected {expected!r}"
        )
    if got[0] != want[0]:
        raise FormatError(f"this is a {got[0]!r} document, expected {want[0]!r}")
    if got[1] != want[1]:
        raise FormatError(
            f"unsupported version {got[0]}/{got[1]}: this diffgenome reads {expected}; "
            "upgrade diffgenome or re-record with this version"
        )
