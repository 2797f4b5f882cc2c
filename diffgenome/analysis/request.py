"""What ``diffgenome diff`` (and ``affected``) was asked: read once from the arguments and
checked before any work.

A diff can record for minutes, so every mistake the arguments alone show -- two reports on
standard output, an output folder that does not exist, a limit too small -- is found here,
first. Where the user stands in git and where the store is are asked here, once. What comes
out is a :class:`DiffRequest`: the pipeline's :class:`~diffgenome.analysis.record.sides.Options`
and the :class:`Reports` that :mod:`~diffgenome.analysis.delivery` writes and shows once the
diff is made. Nothing after this module sees ``argparse``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from diffgenome.analysis.outfiles import check_folder, check_output
from diffgenome.analysis.record.git import Place, place_of
from diffgenome.analysis.record.sides import Options
from diffgenome.analysis.report.common import Selection
from diffgenome.analysis.report.markdown import DEFAULT_MARKDOWN_LIMIT, MIN_MARKDOWN_LIMIT
from diffgenome.protocol.errors import UserError
from diffgenome.protocol.selection import command_store
from diffgenome.protocol.vocab import STATUS_CHANGED

#: The recorder's option that keeps previews (recording/plugin.py).
PREVIEW_OPTION = "--genome-preview"


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


class RequestError(UserError):
    """Arguments that cannot work together, found before any work."""


@dataclass(frozen=True)
class Reports:
    """What the command writes and shows once the diff is made: files (None: not asked;
    ``-``: standard output), which tests the reports show, and what makes the exit status 1."""

    selection: Selection
    #: The store the diff used: the HTML report reads the tests' call trees from it.
    store: str
    fail_on: str = STATUS_CHANGED
    json: str | None = None
    markdown: str | None = None
    markdown_limit: int = DEFAULT_MARKDOWN_LIMIT
    markdown_link: str | None = None
    html: str | None = None
    source_url: str | None = None
    #: Whether the JSON, Markdown and HTML reports keep the previews the recordings took
    #: (the terminal always shows them): asked for with ``--with-previews``, or by recording
    #: with ``-- --genome-preview`` explicitly.
    with_previews: bool = False
    #: Whether the recordings took previews (for the note that says how to read values).
    previews: bool = False


@dataclass(frozen=True)
class DiffRequest:
    """The whole request: what the pipeline does (its progress set by the command, which
    owns standard error), what is reported, where the user stands in git, and ``quiet``."""

    options: Options
    reports: Reports
    place: Place
    quiet: bool = False


def read_request(args: argparse.Namespace) -> DiffRequest:
    """The request of ``diff`` or ``affected`` (whose parser lacks the report options),
    or a :class:`~diffgenome.protocol.errors.UserError` saying what is wrong and what to do."""
    json_to = args.json
    markdown_to = getattr(args, "markdown", None)
    html_to = getattr(args, "html", None)
    repeat = getattr(args, "repeat", 1)
    markdown_limit = getattr(args, "markdown_limit", DEFAULT_MARKDOWN_LIMIT)
    if json_to == "-" and markdown_to == "-":
        raise RequestError("--json - and --markdown - both want standard output; give one a FILE")
    if repeat < 1:
        raise RequestError(f"--repeat must be at least 1, not {repeat}")
    if markdown_limit < MIN_MARKDOWN_LIMIT:
        raise RequestError(
            f"--markdown-limit must be at least {MIN_MARKDOWN_LIMIT}, not {markdown_limit}"
        )
    where = args.repo or os.getcwd()
    place = place_of(where)
    store = command_store(args.store, where, place.toplevel or None)
    if html_to is not None:
        check_folder(html_to, "--html")
    check_output(json_to, "--json")
    check_output(markdown_to, "--markdown")
    pytest_args = tuple(args.pytest_args)
    asked = PREVIEW_OPTION in pytest_args
    preview = getattr(args, "preview", False)
    if preview is None:
        # Readable values where nothing leaves the machine: a person at a terminal, not CI.
        preview = _isatty(sys.stdout) and not os.environ.get("CI") and json_to != "-"
    if preview and not asked:
        pytest_args = (*pytest_args, PREVIEW_OPTION)
    options = Options(
        base=args.base,
        head=args.head,
        store=store,
        repo=args.repo,
        python=args.python,
        pytest_args=pytest_args,
        repeat=repeat,
        rerecord=args.rerecord,
        confirm=getattr(args, "confirm", True),
        selective=getattr(args, "selective", False),
    )
    reports = Reports(
        selection=Selection(
            pattern=getattr(args, "test", None),
            everything=getattr(args, "everything", False),
            prefix=place.prefix,
        ),
        store=store,
        fail_on=getattr(args, "fail_on", STATUS_CHANGED),
        json=json_to,
        markdown=markdown_to,
        markdown_limit=markdown_limit,
        markdown_link=getattr(args, "markdown_link", None),
        html=html_to,
        source_url=getattr(args, "source_url", None),
        with_previews=bool(getattr(args, "with_previews", False)) or asked,
        previews=bool(preview) or asked,
    )
    return DiffRequest(options, reports, place, quiet=bool(getattr(args, "quiet", False)))
