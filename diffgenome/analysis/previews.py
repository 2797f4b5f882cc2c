"""Previews (``--genome-preview``) taken out of what leaves the machine.

A preview is a value as a reviewer reads it (``'---'``), masked by the secret rules; it is
kept in the local store and shown on a terminal. An export, a JSON, Markdown or HTML report
is data to pass on (a pull-request comment, a CI artifact), and what a reviewer reads locally
need not travel with it: these functions make the copies that do not carry them, unless the
user asked for them (docs/diffing.md, "Values a reviewer can read").
"""

from __future__ import annotations

from typing import Any

from diffgenome.analysis.diff.causes import signature
from diffgenome.analysis.models import DiffDocument


def without_previews(test: dict[str, Any]) -> dict[str, Any]:
    """A test record without the previews ``--genome-preview`` kept (the ``preview`` of
    value entries, the ``message`` of a warning that has its digest, the ``template`` of a
    log effect), changed in place."""
    phases = test.get("phases")
    if isinstance(phases, dict):
        for phase in phases.values():
            for node in phase.get("nodes", ()) if isinstance(phase, dict) else ():
                for field in ("args", "results"):
                    for entry in node.get(field) or ():
                        if isinstance(entry, dict):
                            entry.pop("preview", None)
    for warning in test.get("warnings") or ():
        if isinstance(warning, dict) and isinstance(warning.get("message_digest"), str):
            warning.pop("message", None)
    for effect in test.get("effects") or ():
        if isinstance(effect, dict) and isinstance(effect.get("template_digest"), str):
            effect.pop("template", None)  # a log template's preview
        if isinstance(effect, dict):
            effect.pop("preview", None)  # what a phase printed
    return test


def _stripped(value: Any) -> Any:
    if isinstance(value, list):
        return [_stripped(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: _stripped(item) for key, item in value.items() if key != "preview"}
    if isinstance(out.get("message_digest"), str):
        out.pop("message", None)
    if isinstance(out.get("template_digest"), str):
        out.pop("template", None)
    return out


def diff_without_previews(diff: DiffDocument) -> DiffDocument:
    """``diff`` with every preview taken out of its changes (their values read by label),
    and each cause said as its changes are without them."""
    if not any(change.base or change.head for test in diff.tests for change in test.changes):
        return diff
    copy = diff.model_copy(deep=True)
    said: dict[str, str] = {}
    for test in copy.tests:
        for change in test.changes:
            before = signature(change)
            change.base = _stripped(change.base)
            change.head = _stripped(change.head)
            said.setdefault(before, signature(change))
    for cause in copy.causes:
        cause.summary = said.get(cause.summary, cause.summary)
    return copy
