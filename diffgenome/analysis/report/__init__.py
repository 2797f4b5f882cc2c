"""Everything diffgenome shows people, kept apart from loading and from the differ's data.

``terminal`` and ``markdown`` render a ``diffgenome-diff`` document (a terminal view and a
pull-request comment; both read only the document, so they render a saved diff as well),
``runs`` the store's runs, tests and genomes, ``affected`` the list of ``diffgenome affected``.
"""

from __future__ import annotations

from diffgenome.analysis.report.affected import render_affected, render_ids
from diffgenome.analysis.report.markdown import render_markdown
from diffgenome.analysis.report.terminal import render_terminal

__all__ = ["render_affected", "render_ids", "render_markdown", "render_terminal"]
