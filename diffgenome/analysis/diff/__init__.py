"""The differ: how each test's behaviour changed between two recordings.

Entry points: :func:`diff_documents` (two genome documents -> a ``diffgenome-diff``
:class:`~diffgenome.analysis.models.DiffDocument`) and :func:`code_changes_from_sources`
(two versions of the changed files -> the :class:`CodeChangeInput` it accepts).

Pure comparison: everything here works on documents and source texts it is given. Getting
them (git, worktrees, recording in a subprocess) is :mod:`diffgenome.analysis.record`'s.
"""

from __future__ import annotations

from diffgenome.analysis.diff.codechanges import (
    CodeChangeInput,
    SiteChange,
    SymbolChange,
    code_changes_from_sources,
)
from diffgenome.analysis.diff.describe import describe
from diffgenome.analysis.diff.document import diff_documents
from diffgenome.analysis.diff.verdict import DIGESTS_NOT_COMPARABLE
from diffgenome.protocol.vocab import CHANGE_KINDS

__all__ = [
    "CHANGE_KINDS",
    "DIGESTS_NOT_COMPARABLE",
    "CodeChangeInput",
    "SiteChange",
    "SymbolChange",
    "code_changes_from_sources",
    "describe",
    "diff_documents",
]
