"""The one kind of error a user can act on, whichever part of diffgenome finds it.

Standard library only. Every such error carries a message of one line, ``<what is wrong>;
<what to do>``, meant to be shown as is: the CLI prints any of them the same way (one line,
exit status 2) in one place, so a new kind of user error needs no handling of its own.
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix (an argument, a file, a store, a repository); never a bug."""


class StoreError(UserError):
    """The store cannot be used; the message is one line: what is wrong, then what to do."""
