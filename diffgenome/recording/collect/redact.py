"""Text the genome keeps in clear, with what looks like a secret replaced by a keyed digest.

Values never reach the store (values.py digests them), but some text has to be kept for
people to read a report: test ids (pytest writes parameter values into them), the targets
of OS events (host names, program names), a stand-in's attribute path and signatures,
unverified reasons that name a program or a tool. A secret can end up in any of them
(``test_login[sk_live_...]``, a host label, a tool name), so each passes through
:meth:`Redactor.text` on its way out: every part that one of the rules below calls secret
becomes ``<secret:0123456789ab>``, the first 48 bits of HMAC-SHA256 of that part under the
store's key. Equal text under one key stays equal (two recordings of a test still pair by
id), different text stays different, and nothing of the part can be read back.

The rules (docs/protocol.md, "Text kept in clear"), found on the whole text, overlapping
finds merged:

- the value of an environment variable whose name looks secret (``*TOKEN*``, ``*SECRET*``,
  ``*PASSW*``, ``*KEY*``, ``*CREDENTIAL*``, ``*AUTH*``, ... ; ``PWD`` and ``OLDPWD`` are
  folders), six characters or more, seen at the start of the session or at the end of any
  test phase (a ``monkeypatch.setenv`` in a fixture); a single lower-case word is left
  alone unless the name says nothing but secret (``SESSION_ENGINE=database`` is a setting,
  ``API_TOKEN=opensesame`` is not);
- well-known token forms: ``sk_live_…``/``pk_test_…``, ``sk-…``, GitHub (``ghp_…``,
  ``github_pat_…``), GitLab (``glpat-…``), Slack (``xoxb-…``), AWS key ids, Google API keys,
  npm, PyPI and Hugging Face tokens, JWTs, UUIDs (API keys of some services), PEM private keys;
- the value after a name that ends in a secret word and ``=`` or ``:`` (``password=…``,
  ``"api_key": "…"``), after ``Bearer``/``Basic``/``Token``, and the password of a URL
  (``scheme://user:password@host``), three characters or more; placeholders
  (``${PASSWORD}``) are no values;
- a run of ``[A-Za-z0-9+/=_~-]`` (masked whole) one of whose stretches of 12 or more letters
  and digits mixes letters and digits like random text does (at least two of each and four
  changes between them: hex, base64, generated tokens), or mixes cases so (16 letters or
  more, a change of case every four characters, lower-case stretches shorter than words,
  capitals in twos), and a run of 13 or more digits (card and account numbers; not in test
  ids, see :meth:`Redactor.test_id`).

These are heuristics: a secret that reads like a word (``hunter2`` in no variable) passes.
What must never be stored is not kept as text at all: values are digested, warning
messages are digested (warned.py). The rules only decide what of the text that *is* kept
for people is shown.

Runs in the user's test process: standard library only, bound at import, never raises.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Final

from diffgenome.recording.collect import stable
from diffgenome.recording.collect.childhook import ENV as CHILD_ENV
from diffgenome.recording.collect.values import Digester

MARK_HEX: Final = 12
_TAG: Final = b"diffgenome-secret\0"
_environ: Final = os.environ
#: The variables set at every phase: pytest's own, and the one that tells a child process its
#: phase (``childhook.ENV``). Neither name is a secret's, so neither ever gives a secret.
PER_PHASE_VARIABLES: Final = ("PYTEST_CURRENT_TEST", CHILD_ENV)
#: The same under the raw mapping's keys (bytes on POSIX, str on Windows).
PER_PHASE_KEYS: Final = tuple(key for name in PER_PHASE_VARIABLES for key in (name.encode(), name))

#: Names of environment variables whose values are taken for secrets.
SECRET_NAME: Final = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|PWD|KEY|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|"
    r"SIGNATURE|SALT|DSN|(?:^|_)PAT(?:$|_)",
    re.IGNORECASE,
)
# Of those, the names that say nothing else: any value of them is masked, even a word.
_SURELY_SECRET: Final = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY", re.IGNORECASE
)
_NOT_SECRET_NAMES: Final = frozenset({"PWD", "OLDPWD"})
MIN_ENV_VALUE: Final = 6
MAX_ENV_VALUE: Final = 4096
MAX_ENV_VALUES: Final = 256

_TOKENS: Final = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"(?:sk|pk|rk)[-_](?:live|test|prod)[-_][A-Za-z0-9]{8,}"
    r"|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{16,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|AIza[A-Za-z0-9_-]{30,}"
    r"|(?:npm|hf)_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]+)?"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r")"
    r"|-----BEGIN[A-Z ]*PRIVATE KEY-----(?:.*?-----END[A-Z ]*PRIVATE KEY-----|.*)",
    re.DOTALL,
)
# The value after a secret-looking name: group "value".
# The name ends in the word (``db_password=``, ``X-Api-Key:``; not ``cookiecutter-…-https:``);
# a placeholder (``${PASSWORD}``, ``%(password)s``, ``<token>``) is no value.
_ASSIGNED: Final = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z0-9_.-]{0,40}?"
    r"(?:passw(?:or)?d|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|credential|auth|session[_-]?id|cookie|signature)s?"
    r"['\"]?\s*[:=]\s*['\"]?(?P<value>(?![$%{<])[^\s'\"<>,;&)\]}]{3,})",
    re.IGNORECASE,
)
_SCHEME: Final = re.compile(
    r"\b(?:bearer|basic|token|digest)\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE
)
_URL_PASSWORD: Final = re.compile(r"://[^\s/:@]+:(?P<value>(?![$%{<])[^\s/@]{3,})@")
_RUN: Final = re.compile(r"[A-Za-z0-9+/=_~-]{12,}")
_SEGMENT: Final = re.compile(r"[A-Za-z0-9]{12,}")
_DIGITS: Final = re.compile(r"(?<![A-Za-z0-9])[0-9]{13,}(?![A-Za-z0-9])")
# What a mark looks like: never taken for a secret itself.
MARK: Final = re.compile(r"<secret:[0-9a-f]{" + str(MARK_HEX) + r"}>")
_MEMO_ENTRIES: Final = 4096
# Longer text is read this far; the rest is one mark (the rules are not linear in length).
MAX_TEXT: Final = 4096


def looks_random(run: str) -> bool:
    """Whether a run of token characters reads like generated text rather than words."""
    letters = digits = flips = case_flips = 0
    lower = upper = lower_runs = upper_runs = 0
    previous = 0  # 1 letter, 2 digit, 0 other
    previous_case = 0  # 1 lower, 2 upper
    for ch in run:
        if "0" <= ch <= "9":
            kind, case = 2, 0
            digits += 1
        elif "a" <= ch <= "z":
            kind, case = 1, 1
            lower += 1
        elif "A" <= ch <= "Z":
            kind, case = 1, 2
            upper += 1
        else:
            kind, case = 0, 0
        if kind and previous and kind != previous:
            flips += 1
        if case and case != previous_case:
            if previous_case:
                case_flips += 1
            if case == 1:
                lower_runs += 1
            else:
                upper_runs += 1
        previous, previous_case = kind, case
    letters = lower + upper
    if digits >= 2 and letters >= 2 and flips >= 4:
        return True
    # Mixed case without digits (base64 of letters): a change of case every few characters,
    # lower-case stretches shorter than words and capitals that come in twos (camelCase has
    # long lower-case words and single capitals).
    return (
        letters >= 16
        and case_flips * 4 >= len(run)
        and lower_runs > 0
        and upper_runs > 0
        and lower < 3.5 * lower_runs
        and upper >= 1.3 * upper_runs
    )


def _random_run(run: str) -> bool:
    """A run is secret when one of its stretches of letters and digits (12 or more, between
    separators) reads like generated text; it is then masked whole (``tok_<hex>``, a base64
    key with ``+`` and ``/`` in it). Judged stretch by stretch, so that names built of short
    parts (``s390x-s390x-2-2-22``, ``cp310-manylinux2014_x86_64``) are not."""
    return any(looks_random(m.group()) for m in _SEGMENT.finditer(run))


def secret_environment_values(environ: Mapping[str, str]) -> set[str]:
    """The values of ``environ`` that its names say are secrets."""
    found: set[str] = set()
    for name, value in list(environ.items()):
        if name.upper() in _NOT_SECRET_NAMES or not SECRET_NAME.search(name):
            continue
        if not MIN_ENV_VALUE <= len(value) <= MAX_ENV_VALUE:
            continue
        if value.isalpha() and value.islower() and not _SURELY_SECRET.search(name):
            continue  # a word (``SESSION_ENGINE=database``): masking it would mask the word
        found.add(value)
    return found


def secret_spans(
    text: str, known: re.Pattern[str] | None = None, digits: bool = True
) -> list[tuple[int, int]]:
    """Where ``text`` holds what the rules call secret, as merged ``(start, end)`` spans;
    ``digits``: long runs of digits too."""
    spans: list[tuple[int, int]] = []
    if known is not None:
        spans.extend(m.span() for m in known.finditer(text))
    spans.extend(m.span() for m in _TOKENS.finditer(text))
    for pattern in (_ASSIGNED, _SCHEME, _URL_PASSWORD):
        for m in pattern.finditer(text):
            if not MARK.fullmatch(m.group("value")):
                spans.append(m.span("value"))
    spans.extend(m.span() for m in _RUN.finditer(text) if _random_run(m.group()))
    if digits:
        spans.extend(m.span() for m in _DIGITS.finditer(text))
    if not spans:
        return spans
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


class Redactor:
    """The rules above, with the session's key and the secrets its environment names."""

    __slots__ = ("_digest", "_known", "_located", "_memo", "_seen", "_values")

    def __init__(self, digester: Digester, environ: Mapping[str, str] | None = None) -> None:
        self._digest = digester.digest
        self._values: set[str] = set()
        self._known: re.Pattern[str] | None = None
        self._memo: dict[tuple[str, bool], str] = {}
        self._located: dict[str, str] = {}
        self._seen: object = None
        self.note_environment(environ)

    def note_environment(self, environ: Mapping[str, str] | None = None) -> None:
        """Take the secret-looking values of the environment as it is now (never raises).

        Called at the end of every test phase: the process environment is read again only
        when its raw mapping changed (reading it decodes every variable and matches every
        name; comparing the raw one costs a microsecond). pytest sets ``PYTEST_CURRENT_TEST``
        and the recorder ``DIFFGENOME_CHILD`` at every phase, and no rule takes a secret
        from them (their names are not a secret's): they are left out of the comparison, or
        every phase of every test would read it all again (a sixth of the recorder's time
        on a suite of tiny tests)."""
        try:
            if environ is None:
                raw = getattr(_environ, "_data", None)
                if isinstance(raw, dict):
                    seen = dict(raw)
                    for name in PER_PHASE_KEYS:
                        seen.pop(name, None)
                    if seen == self._seen:
                        return
                    self._seen = seen
                environ = _environ
            values = secret_environment_values(environ)
        except Exception:
            return
        self.add_secrets(values)

    def add_secrets(self, values: Iterable[str]) -> None:
        new = {v for v in values if v and v not in self._values}
        if not new or len(self._values) >= MAX_ENV_VALUES:
            return
        self._values.update(sorted(new)[: MAX_ENV_VALUES - len(self._values)])
        # Longest first: a value that contains another is masked whole.
        alternatives = sorted(self._values, key=lambda v: (-len(v), v))
        self._known = re.compile("|".join(re.escape(v) for v in alternatives))
        self._memo.clear()
        self._located.clear()

    def mark(self, secret: str) -> str:
        digest = self._digest(_TAG + secret.encode("utf-8", "surrogatepass"))
        return f"<secret:{digest[:MARK_HEX]}>"

    def text(self, text: str, digits: bool = True) -> str:
        """``text`` with every secret-looking part replaced by its mark; never raises (on a
        fault the whole text is marked: never shown when not understood)."""
        memo = self._memo
        key = (text, digits)
        done = memo.get(key)
        if done is not None:
            return done
        try:
            head, rest = text[:MAX_TEXT], text[MAX_TEXT:]
            spans = secret_spans(head, self._known, digits)
            parts: list[str] = []
            at = 0
            for start, end in spans:
                parts.append(head[at:start])
                parts.append(self.mark(head[start:end]))
                at = end
            parts.append(head[at:])
            if rest:
                parts.append(self.mark(rest))
            done = "".join(parts)
        except Exception:
            done = self.mark(str(text))
        if len(memo) >= _MEMO_ENTRIES:
            memo.clear()
        memo[key] = done
        return done

    def located(self, text: str) -> str:
        """``text`` made independent of locations (``stable.stable_text``) with the rules
        applied, the rules reading the text as it was too: a secret whose context the rewrite
        broke is masked all the same (with ``$HOME=/root``, ``postgresql://root:pw@db`` reads
        ``postgresql:/<home>:pw@db`` once rewritten, where the URL rule no longer finds the
        password). What the rules find only in the text as it was (a random temp folder's
        name, rewritten away) changes nothing, so the result is the rewritten text's own
        wherever no secret is lost; never raises."""
        memo = self._located
        done = memo.get(text)
        if done is not None:
            return done
        try:
            done = self.text(stable.stable_text(text))
            head = text[:MAX_TEXT]
            for start, end in secret_spans(head, self._known):
                secret = head[start:end]
                if secret in done:
                    done = done.replace(secret, self.mark(secret))
        except Exception:
            done = self.mark(str(text))
        if len(memo) >= _MEMO_ENTRIES:
            memo.clear()
        memo[text] = done
        return done

    def test_id(self, test_id: str) -> str:
        """A test id with the rules applied to what follows its function's name (parameter
        values in ``[...]``, a subtest's ``[msg] (k=v)``): the path, classes and function
        are code, and stay as written. Runs of digits stay too: numeric tests name their
        cases by big integers (``9223372036854775807``), payment tests by public test card
        numbers, and an id is something people type."""
        start = test_id.find("::")
        if start < 0:
            return test_id
        for cut in range(start + 2, len(test_id)):
            if test_id[cut] in "[ (":
                tail, closing = test_id[cut:], ""
                if tail.endswith("]"):  # the bracket is the id's, never part of a secret
                    tail, closing = tail[:-1], "]"
                return test_id[:cut] + self.text(tail, digits=False) + closing
        return test_id
