"""Reports of a ``diffgenome-diff/1`` document for people: a terminal view and a Markdown
pull-request comment. Both read only the document, so they render a saved diff as well."""

from __future__ import annotations

from diffgenome.analysis.report.markdown import render_markdown
from diffgenome.analysis.report.terminal import render_terminal

__all__ = ["render_markdown", "render_terminal"]
