"""What ``diffgenome diff`` writes and shows once the diff is made, and its exit status.

The last floor of a diff: the document and its notes come in, the reports of
:class:`~diffgenome.analysis.request.Reports` go out. Reports to files are a step of the
progress; what goes to standard output is written after the progress is closed, so that a
live line never mixes with it on one terminal. Rendering itself is
:mod:`diffgenome.analysis.report` (documents in, text out).
"""

from __future__ import annotations

import sys

from diffgenome.analysis.htmlreport import write_diff_html
from diffgenome.analysis.models import DiffDocument
from diffgenome.analysis.outfiles import write_output
from diffgenome.analysis.previews import diff_without_previews
from diffgenome.analysis.progress import PROG, Progress
from diffgenome.analysis.report import render_markdown, render_terminal
from diffgenome.analysis.report.common import now_failing, test_count
from diffgenome.analysis.report.console import make_console, print_text, print_whole
from diffgenome.analysis.report.markdown import MarkdownTooLong
from diffgenome.analysis.request import Reports
from diffgenome.protocol.errors import UserError
from diffgenome.protocol.jsontext import json_encoder
from diffgenome.protocol.vocab import (
    ARGS_CHANGED,
    RESULT_CHANGED,
    STATUS_CHANGED,
    STATUS_RESTRUCTURED,
    STATUS_UNVERIFIED,
)

# The diff document as pydantic writes it, lone surrogates as their JSON escapes
# (protocol/jsontext.py).
_indented_json = json_encoder(indent=2, ensure_ascii=False)

EXIT_OK = 0
#: What ``--fail-on`` names was found (also ``combine`` with a run left incomplete and
#: ``doctor`` with a problem).
EXIT_FOUND = 1
#: A test that did not fail in base fails in head.
EXIT_NOW_FAILING = 3


class DeliveryError(UserError):
    """A report cannot be made as asked (``--test`` matches nothing, Markdown too long)."""


#: Said under a terminal report that names values by label, recorded without previews.
LABEL_NOTE = (
    "values are named by label (value A): recorded with --preview (the default on a "
    "terminal outside CI) the report shows short values as text; they stay out of --json, "
    "--markdown and --html unless --with-previews"
)


def labels_values(diff: DiffDocument) -> bool:
    """Whether some change of the report names a value by label: one of arguments or
    results, none of whose entries carries a preview."""
    for test in diff.tests:
        for change in test.changes:
            if change.kind in (ARGS_CHANGED, RESULT_CHANGED):
                entries = [e for side in (change.base, change.head) for e in _entries(side)]
                if entries and not any(isinstance(e.get("preview"), str) for e in entries):
                    return True
    return False


def _entries(side: object) -> list[dict[str, object]]:
    if isinstance(side, dict):
        return [side]
    if isinstance(side, list):
        return [item for item in side if isinstance(item, dict)]
    return []


def diff_json(diff: DiffDocument) -> str:
    """The ``--json`` document: pydantic's text, or, where a string holds a lone surrogate
    that pydantic's encoder refuses, the same document with it escaped
    (protocol/jsontext.py)."""
    try:
        return diff.model_dump_json(indent=2) + "\n"
    except ValueError:
        return _indented_json(diff.model_dump(mode="json")) + "\n"


def deliver(diff: DiffDocument, notes: list[str], reports: Reports, progress: Progress) -> int:
    """Write and show ``diff`` as ``reports`` asks; closes ``progress`` before standard output
    is written. Returns the exit status (:func:`exit_status`)."""
    selection = reports.selection
    if selection.pattern is not None and not any(selection.selects(t.id) for t in diff.tests):
        raise DeliveryError(
            f"no test of the diff matches --test {selection.pattern!r} ({test_count(diff)} "
            "tests compared); give a part of a test id, or --all"
        )

    # What leaves the machine (files, standard output taken by a pipe) carries previews only
    # when asked for (docs/diffing.md, "Values a reviewer can read"); the terminal shows them.
    shared = diff if reports.with_previews else diff_without_previews(diff)

    def json_text() -> str:
        return diff_json(shared)

    def markdown_text() -> str:
        try:
            return render_markdown(
                shared,
                selection=selection,
                limit=reports.markdown_limit,
                link=reports.markdown_link,
                written=[p for p in (reports.html, reports.json) if p not in (None, "-")],
                notes=notes,
                source_url=reports.source_url,
                fail_on=reports.fail_on,
            )
        except MarkdownTooLong as exc:
            raise DeliveryError(f"--markdown-limit {reports.markdown_limit}: {exc}") from None

    files = [
        kind
        for kind, target in (("JSON", reports.json), ("Markdown", reports.markdown))
        if target not in (None, "-")
    ] + (["HTML"] if reports.html is not None else [])
    if files:
        what = f"the {_and(files)} report{'s' if len(files) > 1 else ''}"
        with progress.step("writing", "wrote", what):
            if reports.json not in (None, "-"):
                write_output(json_text(), reports.json, "--json")
            if reports.markdown not in (None, "-"):
                write_output(markdown_text(), reports.markdown, "--markdown")
            if reports.html is not None:
                write_diff_html(
                    shared,
                    reports.html,
                    reports.store,
                    reports.source_url,
                    previews=reports.with_previews,
                )
    progress.close()
    if reports.json == "-":
        write_output(json_text(), "-")
        if reports.markdown != "-":
            # The document goes to a pipe; what it cannot hold goes beside it, never away.
            for note in notes:
                sys.stderr.write(f"{PROG}: note: {note}\n")
    if reports.markdown == "-":
        write_output(markdown_text(), "-")
    if "-" not in (reports.json, reports.markdown):
        out = make_console()
        print_whole(out, render_terminal(diff, selection=selection, fail_on=reports.fail_on))
        for note in notes:
            print_text(out, f"note: {note}", style="dim")
        if not reports.previews and labels_values(diff):
            print_text(out, f"note: {LABEL_NOTE}", style="dim")
    return exit_status(diff, reports.fail_on)


def exit_status(diff: DiffDocument, fail_on: str) -> int:
    """0 nothing ``--fail-on`` names; 1 it was found; 3 a test that did not fail in base
    fails in head (worse than any other change; not with ``--fail-on never``)."""
    if fail_on != "never" and now_failing(diff):
        return EXIT_NOW_FAILING
    return EXIT_FOUND if found_for(diff, fail_on) else EXIT_OK


#: ``--fail-on seen``: the changes the tests see (docs/diffing.md, "Reach"), not a test
#: changed only inside the project with every result at the test equal.
FAIL_ON_SEEN = "seen"


def found_for(diff: DiffDocument, fail_on: str) -> bool:
    """Whether ``diff`` holds what ``--fail-on`` names (see docs/diffing.md)."""
    if fail_on == "never":
        return False
    if fail_on == "drift":
        return bool(diff.drift)
    if fail_on == "gaps":
        return any(change.gaps for change in diff.code_changes)
    s = diff.summary
    if fail_on == FAIL_ON_SEEN:
        if (
            s.added
            or s.removed
            or any(t.status == STATUS_CHANGED and t.reach != "internal" for t in diff.tests)
        ):
            return True
    elif s.changed or s.added or s.removed:
        return True
    if fail_on == STATUS_UNVERIFIED:
        return bool(s.unverified)
    if fail_on == STATUS_RESTRUCTURED and s.restructured:
        return True
    return any(t.status == STATUS_UNVERIFIED and t.may_hide_change for t in diff.tests)


def _and(words: list[str]) -> str:
    """``JSON``, ``JSON and HTML``, ``JSON, Markdown and HTML``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
