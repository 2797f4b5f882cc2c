"""The effects of two recordings of one test, compared: what each phase printed, logged,
warned, wrote and set (recording/effects.py; docs/diffing.md, "Effects").

Each kind of effect is a change kind of its own, per phase: ``output_changed``,
``log_changed``, ``warning_changed``, ``file_changed``, ``environ_changed``. Entries compare
as a multiset of what they record (digests, names, counts; a preview is for people and never
compared); a change carries the entries found on one side only (``base``, ``head``).

Evidence that is missing stays missing: a side without ``effects`` (a recorder before them,
``<import>``, a subtest) or whose output could not be seen (``effects_unrecorded``:
``output:capture-off`` under ``-s``, ``output:test-captures`` with ``capsys`` before effects
revision 4) has ``None``
for that kind, reported only where the other side has entries of it, never read as "none".
Warnings that escaped to pytest are compared by ``warnings_changed`` already (the test's
``warnings``); here only those the test caught itself (``pytest.warns``, ``catch_warnings``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Final

from diffgenome.analysis.models import ChangeKind
from diffgenome.protocol.vocab import (
    CAUGHT_WARNING_CHANGED,
    ENVIRON_CHANGED,
    FILE_CHANGED,
    LOG_CHANGED,
    OUTPUT_CHANGED,
)

#: The change kind of each effect type, in the order reports show them.
KIND_OF: Final[dict[str, ChangeKind]] = {
    "output": OUTPUT_CHANGED,
    "log": LOG_CHANGED,
    "warning": CAUGHT_WARNING_CHANGED,
    "file": FILE_CHANGED,
    "environ": ENVIRON_CHANGED,
}

# Kept for people, never compared.
_PREVIEWS: Final = frozenset({"template", "preview"})
_PHASE_ORDER: Final = {"setup": 0, "call": 1, "teardown": 2}

Side = dict[tuple[str, str], Counter[tuple[tuple[str, Any], ...]]]
#: The previews of one side's entries (``template``, ``preview``), by what they compare by.
Shown = dict[tuple[str, str, tuple[tuple[str, Any], ...]], dict[str, Any]]


def _shown(record: Mapping[str, Any], digests: bool) -> Shown:
    """What each entry kept for people (never compared), by its kind, phase and form."""
    out: Shown = {}
    for entry in record.get("effects") or ():
        if isinstance(entry, Mapping) and any(k in entry for k in _PREVIEWS):
            form = _form(entry, digests)
            kept = {k: entry[k] for k in _PREVIEWS if k in entry}
            out.setdefault((str(entry.get("type")), str(entry.get("phase")), form), kept)
    return out


def _form(entry: Mapping[str, Any], digests: bool) -> tuple[tuple[str, Any], ...]:
    return tuple(
        sorted(
            (str(k), v)
            for k, v in entry.items()
            if k not in _PREVIEWS
            and k not in ("type", "phase")
            and (digests or not str(k).endswith("digest"))
            and not isinstance(v, (list, dict))
        )
    )


def _side(record: Mapping[str, Any], digests: bool) -> tuple[Side, frozenset[str]] | None:
    """The entries by (type, phase), and the types this side could not see; None: no effects
    were recorded at all."""
    effects = record.get("effects")
    if not isinstance(effects, list):
        return None
    unseen = frozenset(
        str(reason).split(":", 1)[0] for reason in record.get("effects_unrecorded") or ()
    )
    out: Side = {}
    for entry in effects:
        if not isinstance(entry, Mapping):
            continue
        kind = entry.get("type")
        if kind not in KIND_OF or kind in unseen:
            continue
        if kind == "warning" and entry.get("escaped") is True:
            continue  # compared as the test's ``warnings`` (warnings_changed)
        form = _form(entry, digests)
        key = (str(kind), str(entry.get("phase")))
        out.setdefault(key, Counter())[form] += 1
    return out, unseen


def effect_forms(
    record: Mapping[str, Any], kind: str, phase: str | None, *, digests: bool
) -> Counter[tuple[tuple[str, Any], ...]] | None:
    """The entries of one effect kind (``file``) and phase of a test record, by what they
    compare by, counted; None where that record did not see the kind."""
    side = _side(record, digests)
    if side is None or kind in side[1]:
        return None
    return Counter(side[0].get((kind, str(phase)), Counter()))


def entry_form(entry: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """What an entry a change lists compares by (as :func:`effect_forms` counts it)."""
    return tuple(
        sorted(
            (str(k), v)
            for k, v in entry.items()
            if k not in ("type", "phase") and k not in _PREVIEWS
        )
    )


def _entries(
    forms: Counter[tuple[tuple[str, Any], ...]], kind: str, phase: str, shown: Shown | None = None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for form, times in sorted(forms.items(), key=lambda item: repr(item[0])):
        entry = {"type": kind, "phase": phase, **dict(form)}
        if shown:
            entry.update(shown.get((kind, phase, form), {}))  # for people: never compared
        out.extend(dict(entry) for _ in range(times))
    return out


def effects_diff(
    base: Mapping[str, Any], head: Mapping[str, Any], *, digests: bool = True
) -> list[tuple[ChangeKind, str, list[dict[str, Any]] | None, list[dict[str, Any]] | None]]:
    """``(kind, phase, base entries, head entries)`` for every kind and phase whose effects
    differ; the entries are those on one side only, ``None`` for a side that did not see
    that kind (reported only where the other side has some)."""
    if base.get("effects") == head.get("effects") and base.get("effects_unrecorded") == head.get(
        "effects_unrecorded"
    ):
        return []
    b, h = _side(base, digests), _side(head, digests)
    if b is None and h is None:
        return []
    b_shown, h_shown = _shown(base, digests), _shown(head, digests)
    keys: set[tuple[str, str]] = set()
    for side in (b, h):
        if side is not None:
            keys.update(side[0])
    out: list[tuple[ChangeKind, str, list[dict[str, Any]] | None, list[dict[str, Any]] | None]] = []
    empty: Counter[tuple[tuple[str, Any], ...]] = Counter()
    for kind, phase in sorted(
        keys, key=lambda k: (_PHASE_ORDER.get(k[1], 3), list(KIND_OF).index(k[0]))
    ):
        b_forms = None if b is None or kind in b[1] else b[0].get((kind, phase), empty)
        h_forms = None if h is None or kind in h[1] else h[0].get((kind, phase), empty)
        if b_forms is None or h_forms is None:
            known = b_forms if b_forms is not None else h_forms
            if known:  # the one side that saw this kind has some: disclosed, not guessed
                out.append(
                    (
                        KIND_OF[kind],
                        phase,
                        None if b_forms is None else _entries(b_forms, kind, phase, b_shown),
                        None if h_forms is None else _entries(h_forms, kind, phase, h_shown),
                    )
                )
            continue
        if b_forms == h_forms:
            continue
        out.append(
            (
                KIND_OF[kind],
                phase,
                _entries(b_forms - h_forms, kind, phase, b_shown),
                _entries(h_forms - b_forms, kind, phase, h_shown),
            )
        )
    return out


# -- text --------------------------------------------------------------------------------

_NOUN: Final = {
    OUTPUT_CHANGED: "output",
    LOG_CHANGED: "log records",
    CAUGHT_WARNING_CHANGED: "caught warnings",
    FILE_CHANGED: "files written",
    ENVIRON_CHANGED: "environment",
}


#: How a digest is written: `` #1a2b3c4d`` by default, a report's value label (`` (value A)``,
#: ``describe.ValueLabels``) in a report, so that an effect's digest reads as every other
#: digest of that report does and one text printed twice has one name.
Digest = Callable[[object], str]


def _short(digest: object) -> str:
    return f" #{digest[:8]}" if isinstance(digest, str) else " (no digest)"


def effect_text(entry: Mapping[str, Any], digest: Digest | None = None) -> str:
    """One effect entry for people: ``stdout #1a2b3c4d (3 lines)``,
    ``log app.core WARNING template #… args #…``, ``write <tmp>/…/out.txt #…``; with
    ``digest`` (a report's labels) each digest as that report names it."""
    shown = _short if digest is None else _labelled(digest)
    kind = entry.get("type")
    times = f" \u00d7{entry.get('count')}" if "count" in entry else ""
    if "bound" in entry:
        return f"more {kind} entries than kept (bound: {entry.get('bound')}){times}"
    if kind == "output":
        lines = entry.get("lines")
        cut = ", cut" if entry.get("cut") else ""
        noun = "line" if lines == 1 else "lines"
        preview = entry.get("preview")
        if isinstance(preview, str):  # --genome-preview: what was printed, as it reads
            return f"{entry.get('stream')} {preview!r} ({lines} {noun}{cut})"
        return f"{entry.get('stream')}{shown(entry.get('digest'))} ({lines} {noun}{cut})"
    if kind == "log":
        template = entry.get("template")
        said = f" {template!r}" if isinstance(template, str) else ""
        args = entry.get("args_digest")
        args_text = f" args{shown(args)}" if args is not None else ""
        return (
            f"{entry.get('logger')} {entry.get('level')}{said} template"
            f"{shown(entry.get('template_digest'))}{args_text}{times}"
        )
    if kind == "warning":
        return (
            f"{entry.get('category')}(message{shown(entry.get('message_digest'))}) from "
            f"{entry.get('origin')}{times}"
        )
    if kind == "file":
        state = entry.get("state")
        content = f" ({state})" if state else shown(entry.get("digest"))
        cut = " (first MiB)" if entry.get("cut") else ""
        return f"{entry.get('mode')} {entry.get('path')}{content}{cut}"
    if kind == "environ":
        value = "" if entry.get("change") == "unset" else f" ={shown(entry.get('digest'))}"
        return f"{entry.get('change')} {entry.get('name')}{value}"
    return repr(dict(entry))


def _labelled(digest: Digest) -> Digest:
    """A report's labels, but a missing digest still said (labels write nothing for it)."""
    return lambda value: digest(value) if isinstance(value, str) else " (no digest)"


def _listed(entries: object, digest: Digest | None) -> str:
    if entries is None:
        return "not recorded"
    if not isinstance(entries, list) or not entries:
        return "nothing"
    return "; ".join(effect_text(e, digest) for e in entries if isinstance(e, Mapping))


def describe_effect(
    kind: str, phase: str | None, base: object, head: object, digest: Digest | None = None
) -> str:
    """``[setup] output: stdout #1a2b… (2 lines) → stdout #9f8e… (2 lines)``; with a report's
    labels, ``stdout (value A) (2 lines) → stdout (value B) (2 lines)``."""
    where = f"[{phase}] " if phase not in (None, "call") else ""
    text = f"{_listed(base, digest)} \u2192 {_listed(head, digest)}"
    return f"{where}{_NOUN.get(kind, kind)}: {text}"
