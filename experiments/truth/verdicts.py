"""Verdicts on the tests a release-to-release diff reported, written by reading the code change.

Each rule says, for one project, which reported changes it explains: a change matches when
every given field matches (``kind``, ``symbol``, ``site``, ``test``: substrings; ``test_re``:
a regular expression searched in the test id). A real rule
also says which status the change alone justifies (``level``: ``changed``, or ``touched`` for a
decision that exists in one side's code only). A test is

- ``real`` when its status is justified by real changes: ``changed`` with at least one real
  change of level ``changed``, ``touched`` with only real changes, ``added``/``removed`` when
  its test file is among the changed files. Noise entries next to real ones are counted
  apart (``noise_entries``): the test belongs in the report, some of its lines do not.
- ``noise`` when it has no real change of its status' level and at least one noise change:
  without the artefact it would not be reported (or not with that status).
- ``unclassified`` otherwise (nobody has read it yet: never counted as real or noise).

A rule whose ``kind`` is ``added`` or ``removed`` judges a test of that status by its id
(``test``) alone, before the changed-files rule: a case whose id only shifted.

``mislabelled`` marks real tests whose report names the wrong decision (ordinal ids).
The cause strings are the explanations that go into docs/experiments.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    verdict: str  # "real" | "noise"
    cause: str
    kind: str = ""
    symbol: str = ""
    site: str = ""
    test: str = ""
    level: str = "changed"  # real rules: the status this change alone justifies
    mislabelled: bool = False
    head_taken: str = ""  # "true"/"false": the head outcome of the decision was taken so
    test_re: str = ""  # a regular expression the test id must contain (re.search)
    both_sides: bool = False  # only a change whose base and head are both given (not null)

    def _taken(self, change: dict[str, Any]) -> bool:
        if not self.head_taken:
            return True
        head = change.get("head")
        if isinstance(head, str):
            try:
                head = json.loads(head)
            except ValueError:
                return False
        return isinstance(head, dict) and int(head.get(self.head_taken) or 0) > 0

    def matches(self, test: str, change: dict[str, Any]) -> bool:
        if self.kind in ("added", "removed"):  # judges a test's status, not a change
            return False
        where = change.get("symbol") or "/".join(change.get("path", []))
        return (
            self.test in test
            and (not self.test_re or re.search(self.test_re, test) is not None)
            and self.kind in change.get("kind", "")
            and self.symbol in where
            and self.site in (change.get("site") or "")
            and self._taken(change)
            and (not self.both_sides or (_given(change, "base") and _given(change, "head")))
        )


def _given(change: dict[str, Any], side: str) -> bool:
    return change.get(side) not in (None, "null")


SHIFT = (
    "decision ids shift when an if is inserted (ordinal site ids `f/if[N]`): the new "
    "deprecation check in `_comparator.wrapper` takes `if[1]`, so the old "
    "`isinstance(other, (dict, tuple, list))` outcome is compared with the new check's and "
    "reappears as a new `if[2]`; the test's path through `wrapper` is the same"
)
LAMBDA_SHIFT = (
    "lambda ids are ordinals in their module (`<lambda>#N`): the two `frozendict` lambdas "
    "inserted into `_signatures.module_info` renumber every later lambda, so the same calls "
    "show as removed `#52` and added `#54`"
)
CLOCK = "clock: the default timer (time.monotonic) gives other floats in every run"
RR_RANDOM = "random: RRCache evicts a key chosen by random.choice"
SAMPLE_ORDER = (
    "bounded value sample: only the first 8 distinct values are kept (plus an overflow "
    "digest) in the order they occur; `sorted(set(links), key=...)` meets them in an order "
    "set by object addresses, so another 8 are kept"
)
ITER = (
    "TTLCache/TLRUCache.__iter__ rewritten: iterates a snapshot of keys through "
    "Cache.__iter__ (reads other fields, no while loop, skips removed TLRU items)"
)
DEEPCOPY = (
    "_Timer.__deepcopy__ added: deepcopy of a timed cache no longer goes through "
    "_Timer.__getattr__/__reduce__/__init__"
)
NAT_CMP = (
    "Version.compare: `rc1 == rc2` replaces `not _nat_cmp(rc1, rc2)`, so _nat_cmp is no "
    "longer called for equal or empty prereleases; `1 if rc2 else 0` for an empty rc1"
)
WARN_REAL = (
    "new DeprecationWarning for ==/!= with a str, tuple or list (the new check is taken "
    "true); reported as a changed `if[1]` only through the ordinal shift (recordings before "
    "warnings were part of the genome; with content ids: touched)"
)
WARN_TOUCHED = (
    "the new deprecation check in `_comparator.wrapper` ran; the report names the old "
    "`isinstance(other, (dict, tuple, list))` check as a new decision `if[2]` (ordinal shift)"
)
WARN_TOUCHED_TRUE = (
    "==/!= with a tuple or list: the new deprecation check ran *true* and a DeprecationWarning "
    "is emitted (the test asserts it for tuples), yet the test is only touched: the check's "
    "outcome equals the old `if[1]`'s, the test catches the warning with pytest.warns (not "
    "recorded), and the report names the old check as the new decision `if[2]` (ordinal shift)"
)
WARN_NEW = "ran the new deprecation check in `_comparator.wrapper` (its own site): false"
WARN_NEW_TRUE = (
    "==/!= with a str, tuple or list: the new deprecation check (its own site) is taken true "
    "and a DeprecationWarning is emitted (recorded where it escapes the test; one the test "
    "catches with pytest.warns is not recorded, its own assertions judge it: such a test is "
    "touched)"
)
WARN_EMITTED = (
    "==/!= with a list outside pytest.warns: the new deprecation check (its own site) is "
    "taken true and the DeprecationWarning it emits escapes the test: the test's "
    "recorded warnings gain it (`warnings_changed`, 4 per test; 1 in "
    "test_valid_collection_operands_still_compare)"
)
OCCURRENCE = (
    "occurrence index shift among conditions equal up to local names: removing `not rccmp` "
    "gives its id `if[282752c386]` to `not rc1`, whose old id `#1` shows as a vanished "
    "decision (the test still takes `not rc1`)"
)
ANNOTATIONS = (
    "Compose.__annotations__ became an `_InstanceAnnotations` descriptor (new class at "
    "import, its __get__ called)"
)
NEW_NAME = "toolz.functoolz gained the class `_InstanceAnnotations`: one more module attribute"

# tomlkit 0.15.1 -> 0.15.2
AOT_FALLBACK = (
    "emptied arrays of tables are rendered as `key = []` at the top of their scope: "
    "Container.as_string, _render_table and _render_aot_table now call the new "
    "`_header_less_aots` on their body and `_is_empty_aot` on every keyed item, and skip "
    "emptied ones in new `if`s (same text for the tests that have none)"
)
EMITS_HEADER = (
    "_render_table's header condition moved into the new `_emits_header` (also called by "
    "`_header_less_aots` for child tables) and its outcome is kept in `header_emitted` (two "
    "new `if`s): `table.is_super_table()`, `key.is_dotted()`, `table.value.body` and the two "
    "`any(...)` generators now run under `_emits_header`, so at the old call paths there are "
    "fewer calls (and the results, fields and callees of the moved `is_super_table` calls "
    "are gone from there)"
)
BODY_READS = (
    "`table.value.body` is read at other counts: once more by each table or AoT element "
    "rendered under a header (the argument of the new `_header_less_aots`), no longer by the "
    "two `any(...)` generators of the header condition nor by the `is_super_table` calls "
    "moved into `_emits_header`"
)
LINECOL = (
    "Source._to_linecol counts lines with `splitlines(keepends=True)`: its loop test is a "
    "new decision (`cur + len(line) > self.idx`), taken the same way here"
)
LINECOL_EOF = (
    "Source._to_linecol: an error at the very end of a document without a final newline "
    "now falls out of the loop and is reported at column 0 (was the offset in the last line: "
    "`[[a]` gives (1, 0), was (1, 4)); one `self.idx` read fewer, and ParseError and its "
    "subclasses get the other column (`self._col` pos -> zero)"
)
PARSE_NUMBER = (
    "Parser._parse_number: the leading-zero check also accepts `0E` (a new condition, so a new "
    "decision) and a new check rejects inf/nan not written in lowercase"
)
MLB_CR = (
    "String.from_raw: CRLF pairs are collapsed before the invalid-sequence check and a new "
    "`if type_ is StringType.MLB and escape` escapes a bare CR"
)
BARE_CR_READ = (
    "String.from_raw escapes a bare CR of a multiline basic string with the new module regex "
    "`_BARE_CR` (this test's strings take that branch): a new global read"
)
BARE_CR_TOUCHED = (
    "String.from_raw names the new module regex `_BARE_CR`: a name bound on one side only, so "
    "its state line makes the test `touched` (it ran changed code), never `changed`"
)
BARE_CR_STATIC = (
    "static state: the recorder takes a function's globals from its bytecode (LOAD_GLOBAL), so "
    "every String.from_raw call now shows the new module constant `_BARE_CR` (a compiled "
    "regex, the same at entry and exit) as state, although on this test's paths the function "
    "never reads it (no multiline basic string with escaping, or InvalidStringError raised "
    "before that line)"
)
MLL_CR = (
    "StringType.invalid_sequences: CR is no longer allowed in a multiline literal string (one "
    "more forbidden sequence: the `any(...)` generator runs once more, InvalidStringError "
    "gets the other set)"
)
ARRAY_RENDER = (
    "Array.as_string builds `list(self._iter_items())` itself (so `_iter_items` runs from "
    "as_string, the join is a new generator over the list) and checks for a trailing comment"
)
FOLD = (
    "DateTime and Time gained a `fold` parameter (default 0) that item(), _new(), __sub__ and "
    "unwrap() pass on: the recorded arguments now include `fold=int`, unwrap/__sub__ read "
    "`self.fold`"
)
FORMAT_TIME = "item(time) and Time._new render the raw value with the new `_format_time`"
ITEM_SORT = (
    "item() on a list of dicts: the key sort is the local `_sort_key` (AoT tables) or "
    "`_sort_key#1` (inline tables) instead of one lambda, chosen by a new "
    "`if table_constructor is Table`"
)
SUPER_TABLE_VALIDATE = (
    "Container._validate_table_candidate: a dotted key over an existing super table is no "
    "longer a redefinition: the new condition calls `existing.is_super_table()` and, when "
    "true, the check goes on into the subtree"
)
UNWRAP_ORDER = (
    "Container.unwrap walks `_map` sorted by body index: the new sort-key lambda runs per key"
)
FLOAT_SIGN = "Float._new: new condition for -0.0 (`and not raw.startswith('-')`): a new decision"
BOOL_EQ = "Bool.__eq__: new `isinstance(other, Bool)` check"
INLINE_SEP = (
    "InlineTable.as_string: the deferred separator is `,` or `, ` by the new "
    "`following.startswith(' ')` (reads `v.trivia` once more)"
)
STRING_ADD = (
    "String.__add__ escapes a plain str operand for the string's type (new isinstance check, "
    "`self._t.escaped_sequences`, `escape_string`)"
)
INTEGER_STR = (
    "api.integer(str) checks the new `_INTEGER_RE` and builds Integer(int(raw, 0), Trivia(), "
    "raw) instead of item(int(raw))"
)
KEY_VALUE = "api.key_value parses the trailing comment (`parse_comment=True`) and checks end()"
IMPORTS = (
    "import: tests/test_types.py is new, and `_utils._compact_escapes` skips `\\e` "
    "(comprehension gained `if k != 'e'`)"
)
KWARGS_SHIFT = (
    "ordinal parametrize ids: pytest names a dict argument `kwargsN` by its position, and the "
    "two cases inserted as kwargs18/kwargs19 (`My\\rString`, `My\\r\\nString`) renumber the "
    "seven later cases of test_create_string (same kwargs, example and expected): each is "
    "reported removed under its old id and added under its new one, never compared"
)
# Naming 5 (docs/protocol.md "Decision sites"): a site id digests the compound statements that
# enclose the decision, headers included, and a local by the value first assigned to it. Where
# the release edited such a header, the unchanged decisions inside are sites of one side's
# code, shown once gone (base's id) and once new (head's id).
RENDER_REHOMED = (
    "decisions under a header the release edited: in _render_table the header block's "
    "`if <header condition>:` became `if header_emitted:` (`table.is_aot_element()`, the "
    "`newline_in_table_trivia` expression, the `elif table.trivia.indent == '\\n'`), and the "
    "loops over `table.value.body` of _render_table and _render_aot_table start their "
    "`isinstance(v, Table)` / `isinstance(v, AoT)` chain with the new `if k is not None and "
    "_is_empty_aot(v): continue`, so every unchanged condition of that chain (and the "
    "`assert k is not None`, `v.is_super_table()`, `k.is_dotted()` and separator checks "
    "inside it) sits under another enclosing `if`: a decision of one side's code (base's id "
    "gone, head's new) with the same counts on both sides (no compared test skips an "
    "emptied array of tables: the tests that empty one are new)"
)
ITEM_REHOMED = (
    "items.item: the loop over a dict's keys iterates `sorted(v.items(), key=_sort_key)` (was "
    "an inline lambda), so its `isinstance(table, InlineTable)` sits under another `for` "
    "header: a decision of one side's code"
)
UNWRAP_REHOMED = (
    "Container.unwrap iterates `sorted(self._map.items(), key=...)` (was `self._map.items()`), "
    "so its `isinstance(idx, tuple)` and `hasattr(value, 'unwrap')` sit under another `for` "
    "header: decisions of one side's code"
)
DELITEM_SLICE = (
    "Array.__delitem__: a slice's indices are `list(range(*key.indices(length)))` (was "
    "`range(key.start or 0, key.stop or length, key.step or 1)`), the first value bound to "
    "`indices_to_remove`, which the loop `for i in sorted(indices_to_remove, reverse=True)` "
    "iterates: every decision inside that loop (the comma and indent repairs) sits under "
    "another `for` header, a decision of one side's code"
)
SUB_FOLD = (
    "DateTime.__sub__: `result` is first bound to `datetime(..., fold=self.fold).__sub__(other)` "
    "(fold passed on), so `isinstance(result, datetime)` is a decision of one side's code"
)
# the from_raw calls of these tests take the `type_ is StringType.MLB and escape` branch
BARE_CR_TESTS = (
    "test_create_multiline_string_with_leading_newline_round_trips[kwargs0-",
    "test_create_multiline_string_with_leading_newline_round_trips[kwargs1-",
    "test_create_multiline_string_with_leading_newline_round_trips[kwargs2-",
    "test_create_string[kwargs13-",
    "test_create_string[kwargs14-",
    "test_create_string[kwargs15-",
    "test_create_string[kwargs16-",
    "test_create_string[kwargs17-",
)

# humanize 4.16.0 -> 4.17.0
SRC_AS_TESTS = (
    "test root over the source root: 4.17.0's pytest configuration sets testpaths = "
    "['src', 'tests'] (for --doctest-modules) and the recorder takes testpaths as test roots "
    "(scope.discover_roots), so every file under src/ is placed as test code and named by its "
    "path from the rootdir: each call into the package shows as a removed `humanize.X` and an "
    "added `src.humanize.X` with its whole subtree (nothing inside it is compared), and a "
    "test class's method called from the package is no longer a stand-in "
    "(`stand_in_removed`). Without it these tests are unchanged or only touched"
)
HUMANIZE_IMPORT_ORDER = (
    "import order: 4.17.0's testpaths = ['src', 'tests'] collects src/ first (its doctests), "
    "so the package body runs at the top of collection, no longer under "
    "tests/test_benchmarks"
)
NOW_GONE = (
    "_abs_timedelta returns abs(delta): for a negative delta it no longer calls `_now()` "
    "(and its `if delta.days < 0` is gone)"
)
HUMANIZE_REWRITTEN = (
    "a rewritten condition the test ran through (a decision of one side only): metric's "
    "rounding carry (`>= 1000` -> `>= 10 ** (exponent % 3 + 1)`), fractional's "
    "`denominator == 1`, intword's integer ratio, intcomma's `elif not isinstance(value, "
    "int)`, _abs_timedelta's removed `if delta.days < 0`"
)
NOW_HIDDEN = (
    "_abs_timedelta returns abs(delta): for a negative delta (naturaltime of a time in the "
    "future, naturaldate of a past date) it no longer calls `_now()`, a changed test; its "
    "report shows only the renamed call (the test-root artefact hides the change)"
)
INTCOMMA_HIDDEN = (
    "intcomma: an int now takes the new `elif not isinstance(value, int)` and skips the "
    "second `math.isfinite` check (a decision of both sides no longer taken: changed); "
    "naturaldelta/naturaltime write N >= 2 years and precisedelta whole years through "
    "intcomma(int); the report shows only the renamed call (the test-root artefact hides "
    "the change)"
)
IMPORTS_I18N = (
    "import: tests/test_i18n.py parametrizes a new test over the locale folders "
    "(`sorted(p.name for p in LOCALE_DIR.iterdir() if p.is_dir())`, run at import)"
)
PARAM_SHIFT = (
    "ordinal parametrize ids: pytest numbers non-text arguments by position (`test_inputN`, "
    "`valN`), and cases inserted earlier in the list (5 in test_naturaldelta, 2 in "
    "test_naturaltime, 1 in test_precisedelta_multiple_units) renumber the later ones: the "
    "same case is reported removed under its old id and added under its new one, never "
    "compared"
)
HUMANIZE_PAST_DATES = (
    r"test_naturaldate\[test_input(2-yesterday|4-Jun 27 1982|9-|1[0-9]-|20-Jan 02\])"
)
HUMANIZE_INTCOMMA_INT = (
    r"test_number\.py::test_intcomma\[test_args[0-4]-|test_i18n\.py::test_(intcomma|naturaldelta)$"
    r"|-(?:[2-9]|[1-9]\d+|\d{1,3}(?:,\d{3})+) years|precisedelta.*(?<![.\d])\d[\d,]* years?\b"
)
HUMANIZE_SHIFTED_REMOVED = (
    "test_naturaldelta[test_input33-2,739,726 years]",
    "test_naturaltime[test_input33-2 years ago]",
    "test_naturaltime[test_input34-1 year, 4 days ago]",
    "test_precisedelta_multiple_units[val13-days-1 month]",
    "test_precisedelta_multiple_units[val14-days-1 month and 1 day]",
    "test_precisedelta_multiple_units[val15-days-2 months and 1 day]",
    "test_precisedelta_multiple_units[val16-days-3 months]",
)
HUMANIZE_SHIFTED_ADDED = (
    "test_naturaldelta[test_input38-2,739,726 years]",
    "test_naturaltime[test_input35-2 years ago]",
    "test_naturaltime[test_input36-1 year, 4 days ago]",
    "test_precisedelta_multiple_units[val14-days-1 month]",
    "test_precisedelta_multiple_units[val15-days-1 month and 1 day]",
    "test_precisedelta_multiple_units[val16-days-2 months and 1 day]",
    "test_precisedelta_multiple_units[val17-days-3 months]",
)

BOLTONS_CLOCK = "clock: ecoutils takes the start time at import (_get_utc_now())"
BOLTONS_HEAP = (
    "heap: gcutils.get_all walks gc.get_objects(), every object of the process (the newer "
    "code makes more); not the code's doing for this test"
)
BOLTONS_LOOKALIKE = (
    "look-alike ids (naming 4): base's `visited_item is True` and head's new `trace is True` "
    "share one id in remap, so one condition's counts are compared with the other's"
)
BOLTONS_RENAMED = (
    "renamed decision (naming 4): an unchanged `if new_items` / `if visited_item is True` / "
    "`if reraise_visit` of remap gets another id once the trace code is added around it, "
    "shown once as gone and once as new"
)
BOLTONS_TRACE = "remap's new tracing decisions (new code), taken false: the test asks no trace"
BOLTONS_RESEARCH = "research() passes its own enter= to remap now (24.1.0)"
BOLTONS_PY2 = "Python 2 branches removed (`unicode` conditions became `str`): decisions gone/new"
BOLTONS_TB = "tests/test_tbutils.py changed: the tracebacks it formats carry its new line numbers"
BOLTONS_WARN = "timeutils no longer warns (DeprecationWarning) at import"


RULES: dict[str, tuple[Rule, ...]] = {
    "cachetools": (
        Rule("noise", RR_RANDOM, test="tests/test_rr.py"),
        Rule("noise", SAMPLE_ORDER, kind="result_changed", symbol="LFUCache.__setstate__"),
        Rule("noise", CLOCK, kind="result_changed", symbol="_Timer.__enter__"),
        Rule("noise", CLOCK, kind="result_changed", symbol="_Timer.__call__"),
        Rule("noise", CLOCK, kind="args_changed", symbol="Cache.expire"),
        Rule("noise", CLOCK, kind="args_changed", symbol="TLRUCache._Item.__init__"),
        Rule(
            "noise",
            CLOCK,
            kind="stand_in_changed",
            symbol="stand-in[stub ?",
            test="default_timer_stubs",
        ),
        Rule("real", ITER, symbol="TTLCache.__iter__"),
        Rule("real", ITER, symbol="TLRUCache.__iter__"),
        Rule("real", ITER, kind="call_added", symbol="Cache.__iter__"),
        # fewer loop rounds in TLRUCache.__iter__ (removed items are no longer visited)
        Rule("real", ITER, kind="call_count_changed", symbol="_Timer."),
        Rule("real", ITER, kind="call_count_changed", symbol="_TimedCache.timer"),
        Rule("real", ITER, kind="args_changed", symbol="_Timer.__exit__"),
        Rule("real", ITER, kind="stand_in_changed", symbol="stand-in[fake ?"),
        Rule("real", DEEPCOPY, symbol="_Timer.__deepcopy__"),
        Rule("real", DEEPCOPY, kind="call_removed", symbol="_Timer.__"),
    ),
    "humanize": (
        # Session 5 (s5c, after the test-root fix): read against the code change; every
        # `touched` test ran a rewritten condition, every `changed` one the two above.
        Rule("real", NOW_GONE, kind="call_removed", symbol="py:humanize.time._now"),
        *(
            Rule("real", HUMANIZE_REWRITTEN, kind="branch_changed", symbol=symbol, level="touched")
            for symbol in (
                "py:humanize.number.metric",
                "py:humanize.number.fractional",
                "py:humanize.number.intword",
                "py:humanize.number.intcomma",
                "py:humanize.time._abs_timedelta",
            )
        ),
        Rule("real", HUMANIZE_IMPORT_ORDER, test="<import>", symbol="py:humanize"),
        *(Rule("noise", PARAM_SHIFT, kind="removed", test=t) for t in HUMANIZE_SHIFTED_REMOVED),
        *(Rule("noise", PARAM_SHIFT, kind="added", test=t) for t in HUMANIZE_SHIFTED_ADDED),
        Rule("real", IMPORTS_I18N, test="<import>", symbol="py:tests.test_i18n.<genexpr>"),
        *(
            Rule("real", cause, symbol=symbol, test=test, test_re=test_re, mislabelled=True)
            for cause, test, test_re in (
                (NOW_HIDDEN, "from now", ""),
                (NOW_HIDDEN, "", HUMANIZE_PAST_DATES),
                (INTCOMMA_HIDDEN, "", HUMANIZE_INTCOMMA_INT),
            )
            for symbol in ("py:humanize.", "py:src.humanize.")
        ),
        # s4b only (before the fix): calls renamed `py:src.humanize.…`.
        Rule("noise", SRC_AS_TESTS, symbol="py:src.humanize"),
        Rule("noise", SRC_AS_TESTS, kind="call_removed", symbol="py:humanize"),
        Rule("noise", SRC_AS_TESTS, kind="stand_in_removed"),
    ),
    "semver": (
        # diffgenome-genome/2 (content site ids, main after #10.2): the new check has its own
        # site; `not rccmp` removed gives its id to `not rc1` (locals become placeholders, the
        # occurrence index shifts), so base's `not rc1` (`#1`) shows as a vanished decision.
        Rule("real", WARN_EMITTED, kind="warnings_changed"),
        Rule(
            "real",
            WARN_NEW_TRUE,
            site="wrapper/if[6c5cce8d2f]",
            level="touched",
            head_taken="true",
        ),
        Rule("real", WARN_NEW, site="wrapper/if[6c5cce8d2f]", level="touched"),
        Rule(
            "real",
            OCCURRENCE,
            site="Version.compare/if[282752c386]#1",
            level="touched",
            mislabelled=True,
        ),
        Rule("real", NAT_CMP, kind="call_removed", symbol="Version._nat_cmp"),
        Rule("real", NAT_CMP, symbol="Version.compare", site="Version.compare/if["),
        Rule("real", NAT_CMP, symbol="Version.compare", site="ifexp[", level="touched"),
        Rule("real", NAT_CMP, symbol="Version._nat_cmp", test="follow_specification"),
        Rule("real", NAT_CMP, symbol="semver.version._cmp", test="follow_specification"),
        Rule(
            "real", WARN_REAL, site="wrapper/if[1]", test="compare_version_string", mislabelled=True
        ),
        Rule(
            "real", WARN_REAL, site="wrapper/if[1]", test="compare_version_tuples", mislabelled=True
        ),
        Rule(
            "real", WARN_REAL, site="wrapper/if[1]", test="compare_version_list", mislabelled=True
        ),
        Rule(
            "real",
            WARN_REAL,
            site="wrapper/if[1]",
            test="valid_collection_operands",
            mislabelled=True,
        ),
        Rule("noise", SHIFT, site="wrapper/if[1]"),
        Rule(
            "real",
            WARN_TOUCHED_TRUE,
            site="wrapper/if[2]",
            test="equality_with_malformed",
            level="touched",
            mislabelled=True,
            head_taken="true",
        ),
        Rule("real", WARN_TOUCHED, site="wrapper/if[2]", level="touched", mislabelled=True),
    ),
    "tomlkit": (
        *(
            Rule("noise", KWARGS_SHIFT, kind="removed", test=f"test_create_string[kwargs{n}-")
            for n in range(18, 25)
        ),
        *(
            Rule("noise", KWARGS_SHIFT, kind="added", test=f"test_create_string[kwargs{n}-")
            for n in range(20, 27)
        ),
        # empty AoT fallback and the header condition moved into _emits_header
        Rule("real", AOT_FALLBACK, kind="call_added", symbol="container._header_less_aots"),
        Rule("real", AOT_FALLBACK, kind="call_added", symbol="container._is_empty_aot"),
        Rule("real", AOT_FALLBACK, kind="call_added", symbol="container._render_empty_aot"),
        Rule("real", AOT_FALLBACK, site="Container.as_string/if[071d8d6f9f]", level="touched"),
        Rule("real", AOT_FALLBACK, site="/if[ae2ce760d0]", level="touched"),
        Rule("real", EMITS_HEADER, kind="call_added", symbol="container._emits_header"),
        # Session 8: `_header_less_aots`, `_is_empty_aot` and `_emits_header` are new code,
        # contracted out of the call trees (docs/diffing.md "Structure"): what they call now
        # hangs under their callers, and their decisions are decisions of one side's code.
        Rule("real", AOT_FALLBACK, site="container._header_less_aots/", level="touched"),
        Rule("real", AOT_FALLBACK, kind="call_added", symbol="items.Key.as_string"),
        Rule("real", AOT_FALLBACK, kind="call_count_changed", symbol="items.Key.as_string"),
        Rule("real", AOT_FALLBACK, kind="result_changed", symbol="items.Key.as_string"),
        Rule("real", AOT_FALLBACK, kind="call_added", symbol="items.AoT.body"),
        Rule("real", EMITS_HEADER, kind="call_added", symbol="items.Key.is_dotted"),
        Rule(
            "real", EMITS_HEADER, site="container._emits_header.<locals>.<genexpr>", level="touched"
        ),
        Rule("real", EMITS_HEADER, site="_render_table/if[b1cf415b0d]", level="touched"),
        Rule("real", EMITS_HEADER, site="_render_table/if[e592e004b5]", level="touched"),
        Rule("real", EMITS_HEADER, symbol="Container._render_table.<locals>.<genexpr>"),
        Rule("real", BODY_READS, kind="call_count_changed", symbol="Container.body"),
        Rule("real", BODY_READS, kind="call_count_changed", symbol="AbstractTable.value"),
        Rule("real", EMITS_HEADER, kind="call_count_changed", symbol="Key.is_dotted"),
        Rule("real", EMITS_HEADER, kind="call_removed", symbol="Key.is_dotted"),
        Rule("real", EMITS_HEADER, symbol="items.Table.is_super_table", kind="call_removed"),
        Rule("real", EMITS_HEADER, symbol="items.Table.is_super_table", kind="call_count"),
        Rule("real", EMITS_HEADER, symbol="items.Table.is_super_table", kind="result_changed"),
        Rule("real", EMITS_HEADER, symbol="items.Table.is_super_table", kind="state_changed"),
        Rule("real", EMITS_HEADER, site="Table.is_super_table/if["),
        # callees of the moved is_super_table calls (items(), _map, body)
        Rule("real", EMITS_HEADER, symbol="Container.body"),
        Rule("real", EMITS_HEADER, symbol="Container.item"),
        Rule("real", EMITS_HEADER, symbol="Container.__getitem__"),
        Rule("real", EMITS_HEADER, symbol="Container.__len__"),
        Rule("real", EMITS_HEADER, symbol="AbstractTable."),
        Rule("real", EMITS_HEADER, symbol="SingleKey."),
        # Source._to_linecol
        Rule("real", LINECOL, site="Source._to_linecol/if[", level="touched"),
        Rule("real", LINECOL_EOF, kind="result_changed", symbol="Source._to_linecol"),
        Rule("real", LINECOL_EOF, kind="call_count_changed", symbol="Source.idx"),
        Rule("real", LINECOL_EOF, kind="args_changed", symbol="ParseError.__init__"),
        Rule("real", LINECOL_EOF, kind="args_changed", symbol="UnexpectedEofError.__init__"),
        Rule("real", LINECOL_EOF, kind="args_changed", symbol="UnexpectedCharError.__init__"),
        Rule("real", LINECOL_EOF, kind="args_changed", symbol="InvalidNumberError.__init__"),
        Rule("real", LINECOL_EOF, kind="state_changed", symbol="ParseError.__init__"),
        Rule("real", PARSE_NUMBER, site="Parser._parse_number/if[", level="touched"),
        # strings
        Rule("real", MLB_CR, site="String.from_raw/if[7b98fb0990]", level="touched"),
        *(
            Rule("real", BARE_CR_READ, kind="state_changed", symbol="String.from_raw", test=t)
            for t in BARE_CR_TESTS
        ),
        # Since session 4's `touched` (a module-level name bound on one side only): such a
        # test is `touched`, which is what it is: it ran String.from_raw, whose code changed.
        Rule(
            "real",
            BARE_CR_TOUCHED,
            kind="state_changed",
            symbol="String.from_raw",
            level="touched",
        ),
        Rule("noise", BARE_CR_STATIC, kind="state_changed", symbol="String.from_raw"),
        Rule("real", MLL_CR, symbol="StringType.invalid_sequences"),
        Rule("real", MLL_CR, symbol="String.from_raw.<locals>.<genexpr>"),
        Rule("real", MLL_CR, kind="args_changed", symbol="InvalidStringError.__init__"),
        Rule("real", STRING_ADD, symbol="String.__add__"),
        Rule("real", STRING_ADD, kind="call_added", symbol="StringType.escaped_sequences"),
        Rule("real", STRING_ADD, kind="call_added", symbol="_utils.escape_string"),
        # arrays, inline tables, scalars
        Rule("real", ARRAY_RENDER, symbol="Array.as_string.<locals>.<genexpr>"),
        Rule("real", ARRAY_RENDER, kind="call_added", symbol="Array._iter_items"),
        Rule("real", ARRAY_RENDER, site="Array.as_string/if[e4ddbe97ec]", level="touched"),
        Rule("real", INLINE_SEP, site="InlineTable.as_string/ifexp[07955b0f70]", level="touched"),
        Rule("real", INLINE_SEP, kind="call_count_changed", symbol="Item.trivia"),
        Rule("real", FOLD, kind="args_changed", symbol="items.DateTime.__"),
        Rule("real", FOLD, kind="args_changed", symbol="items.Time.__"),
        Rule("real", FOLD, kind="state_changed", symbol="items.DateTime."),
        Rule("real", FOLD, kind="state_changed", symbol="items.Time."),
        Rule("real", FORMAT_TIME, kind="call_added", symbol="items._format_time"),
        Rule("real", FLOAT_SIGN, site="Float._new/if[", level="touched"),
        Rule("real", BOOL_EQ, site="Bool.__eq__/if[d5166d020d]", level="touched"),
        Rule("real", ITEM_SORT, symbol="items.item.<locals>."),
        Rule("real", ITEM_SORT, site="item#13/if[c82805ff27]", level="touched"),
        # Since naming revision 4 (overload stubs no longer counted), ``item#13`` is ``item``.
        Rule("real", ITEM_SORT, site="items.item/if[c82805ff27]", level="touched"),
        Rule("real", FORMAT_TIME, site="items._format_time/if[", level="touched"),
        # tables
        Rule(
            "real",
            SUPER_TABLE_VALIDATE,
            site="_validate_table_candidate/if[4219716ff4]",
            level="touched",
        ),
        Rule(
            "real",
            SUPER_TABLE_VALIDATE,
            site="_validate_table_candidate/if[5db3686f3b]",
            level="touched",
        ),
        Rule("real", SUPER_TABLE_VALIDATE, site="_validate_table_candidate/if["),
        Rule("real", SUPER_TABLE_VALIDATE, kind="call_added", symbol="_validate_table_candidate"),
        Rule("real", SUPER_TABLE_VALIDATE, kind="call_added", symbol="items.Table.is_super_table"),
        Rule("real", UNWRAP_ORDER, symbol="Container.unwrap.<locals>.<lambda>"),
        # api
        Rule("real", INTEGER_STR, symbol="tomlkit.api.integer"),
        Rule("real", INTEGER_STR, test="test_api.py::test_integer", symbol="items.Integer.__"),
        Rule("real", INTEGER_STR, test="test_api.py::test_integer", symbol="items.item#13"),
        Rule("real", INTEGER_STR, test="test_api.py::test_integer", symbol="py:tomlkit.items.item"),
        Rule("real", KEY_VALUE, symbol="tomlkit.api.key_value"),
        Rule("real", KEY_VALUE, test="test_api.py::test_key_value", symbol="Parser."),
        Rule("real", IMPORTS, test="<import>", symbol="py:tests.test_types"),
        Rule("real", IMPORTS, test="<import>", site="tomlkit._utils/comprehension["),
        # Naming 5 (session 10): the new and moved decisions of the release under their
        # content ids, and the decisions the release re-homed under an edited header.
        Rule("real", AOT_FALLBACK, site="Container.as_string/if[be670d7fe7]", level="touched"),
        Rule("real", AOT_FALLBACK, site="_render_table/if[3cf8cd9628]", level="touched"),
        Rule("real", AOT_FALLBACK, site="_render_aot_table/if[06e14f6226]", level="touched"),
        Rule("real", EMITS_HEADER, site="_render_table/if[a3160eba04]", level="touched"),
        Rule("real", EMITS_HEADER, site="_render_table/if[d7f4542ab4]", level="touched"),
        Rule("real", EMITS_HEADER, site="_render_table/if[ecf7ef59e4]", level="touched"),
        *(
            Rule("real", RENDER_REHOMED, site=site, level="touched")
            for site in (
                # _render_table: base's id, head's id
                "_render_table/if[131810131f]",  # isinstance(v, Table)
                "_render_table/if[c1795bc9eb]",
                "_render_table/if[d3f35c3e02]",  # isinstance(v, AoT)
                "_render_table/if[dcb6985941]",
                "_render_table/if[6e4b49c7c7]",  # table.is_aot_element()
                "_render_table/if[481f80ef7c]",
                "_render_table/ifexp[6d0d6df608]",  # newline_in_table_trivia
                "_render_table/ifexp[720c450e33]",
                "_render_table/if[b9f503d4fd]",  # table.trivia.indent == '\\n'
                "_render_table/if[1d1e38b463]",
                "_render_table/ifexp[075841ef73]",  # prefix=_key if key.is_dotted()
                "_render_table/ifexp[979f683106]",
                "_render_table/assert[cc84c11611]",  # assert k is not None (Table)
                "_render_table/assert[ba81b555c8]",
                "_render_table/assert[32a5c4cc76]",  # assert k is not None (AoT)
                "_render_table/assert[34a4b430c0]",
                "_render_table/if[f86027bd93]",  # v.is_super_table()
                "_render_table/if[0fdfd68bf9]",
                "_render_table/if[4463899d19]",  # k.is_dotted() and not key.is_dotted()
                "_render_table/if[a8f566feca]",
                "_render_table/if[28f8336029]",  # cur.strip(' ') ... (Table)
                "_render_table/if[f9bc6b9d0f]",
                "_render_table/if[082ab2afb9]",  # cur.strip(' ') ... (AoT)
                "_render_table/if[56bbdb37e7]",
                # _render_aot_table
                "_render_aot_table/if[2a2cb161ec]",  # isinstance(v, Table)
                "_render_aot_table/if[85f6c25696]",
                "_render_aot_table/if[e135ac549f]",  # isinstance(v, AoT)
                "_render_aot_table/if[f3968b99a6]",
                "_render_aot_table/assert[5de5f78a27]",  # assert k is not None (Table)
                "_render_aot_table/assert[fbe527a64c]",
                "_render_aot_table/assert[722934d723]",  # assert k is not None (AoT)
                "_render_aot_table/assert[4df65cdfc0]",
                "_render_aot_table/if[f03f4cef4a]",  # v.is_super_table()
                "_render_aot_table/if[87d6115e60]",
                "_render_aot_table/if[fdfba2b4c2]",  # k.is_dotted()
                "_render_aot_table/if[5377ff829f]",
            )
        ),
        Rule("real", MLB_CR, site="String.from_raw/if[91c490fe1d]", level="touched"),
        Rule("real", MLB_CR, site="String.from_raw/if[c63dae7a48]", level="touched"),
        Rule("real", MLB_CR, site="String.from_raw/if[91bca40f57]", level="touched"),
        Rule("real", ARRAY_RENDER, site="Array.as_string/if[857bb4fe1c]", level="touched"),
        Rule("real", BOOL_EQ, site="Bool.__eq__/if[6c9b1a3b4c]", level="touched"),
        Rule("real", INLINE_SEP, site="InlineTable.as_string/ifexp[1d6d1c9666]", level="touched"),
        Rule("real", ITEM_SORT, site="items.item/if[7c1b07384b]", level="touched"),
        Rule("real", ITEM_REHOMED, site="items.item/if[1546ebb60a]", level="touched"),
        Rule("real", ITEM_REHOMED, site="items.item/if[b7f8d37324]", level="touched"),
        *(
            Rule("real", UNWRAP_REHOMED, site=f"Container.unwrap/{site}", level="touched")
            for site in (
                "if[0c104e4247]",
                "if[5d5378165e]",
                "ifexp[9557d287c6]",
                "ifexp[56f7e8151e]",
            )
        ),
        *(
            Rule("real", DELITEM_SLICE, site=f"Array.__delitem__/{site}", level="touched")
            for site in (
                # base's id, head's id, in the loop over `sorted(indices_to_remove, ...)`
                *("if[24fa97e9ae]", "if[e345478bca]"),  # idx == 0 and ... (first indent)
                *("if[d2f2ce1055]", "if[19f97895aa]"),  # comma_in_indent and comma_in_comma
                *("if[5aabcf6404]", "if[237a8bed4c]"),  # not comma_in_indent and not ...
                *("if[8b18fcbadc]", "if[f24818ffa2]"),  # group_rm.indent ... '\\n' in ...
                *("if[93d36f716d]", "if[2c570cbd80]"),  # group is not None and (...)
                *("if[2e00925ff5]", "if[3ea479c4ba]"),  # group is not None
                *("if[abf4d0ff20]", "if[b106f0745f]"),  # group.indent is None
                *("if[312209dd93]", "if[399215c5dc]"),  # ',' not in group.indent.s
                *("if[a9036675e6]", "if[20fa6b5d8e]"),  # group.indent ... ',' in ...
                *("ifexp[13081a412d]", "ifexp[b87d9cf536]"),  # len(self._value) > idx
                *("ifexp[213da037a4]", "ifexp[63897b75d0]"),  # the same, second one
            )
        ),
        Rule("real", SUB_FOLD, site="DateTime.__sub__/if[e1b7b4070e]", level="touched"),
        Rule("real", SUB_FOLD, site="DateTime.__sub__/if[d7576c1fb3]", level="touched"),
    ),
    "sqlparse": (
        # 0.5.3 moves `from sqlparse.exceptions import SQLParseError` from sql.py to
        # engine/filter_stack.py and the RecursionError guard from TokenList.flatten to
        # FilterStack.run. Read by a person (session 5): the three reported tests.
        Rule(
            "real",
            "import graph: sqlparse.exceptions is now imported by engine.filter_stack, no "
            "longer by sqlparse.sql, so its module body runs under another importer",
            symbol="py:sqlparse.exceptions",
        ),
        Rule(
            "real",
            "the RecursionError guard moved out of TokenList.flatten: a RecursionError now "
            "propagates through grouping until FilterStack.run turns it into SQLParseError "
            "(test_max_recursion; unverified on both sides: the recorder loses events at the "
            "recursion limit and says so)",
            kind="exit_changed",
            test="test_max_recursion",
        ),
    ),
    "toolz": (
        Rule("noise", LAMBDA_SHIFT, symbol="toolz._signatures.<lambda>#"),
        Rule(
            "noise",
            "address: the test seeds random_sample with hash(object()) (an id)",
            test="test_random_sample",
        ),
        Rule(
            "noise",
            "str hash seed: EqualityHashKey hashes the str '__default__hashkey__', "
            "so set collisions (and __eq__ calls) differ per process",
            symbol="EqualityHashKey.__eq__",
        ),
        Rule("real", ANNOTATIONS, symbol="_InstanceAnnotations"),
        Rule("real", ANNOTATIONS, symbol="InstanceProperty.__get__", test="<import>"),
        Rule("real", NEW_NAME, kind="call_count_changed", test="test_introspect_builtin_modules"),
        Rule("real", NEW_NAME, symbol="TlzLoader.exec_module", test="test_tlz"),
    ),
    "itsdangerous": (
        # 2.2.0 defaults digest_method to a new module function `_lazy_sha1` (FIPS builds may
        # lack SHA-1) instead of `hashlib.sha1`, adds the `_PDataSerializer` protocol class and
        # moves the typing imports (`typing as _t` -> `typing as t`). Read by a person
        # (session 7): every reported test. Before naming 4, its five `@t.overload` stubs
        # renamed `Serializer.__init__` to `__init__#5` (15 tests reported for that alone).
        Rule(
            "real",
            "the default digest method is the new _lazy_sha1, called on every signature",
            kind="call_added",
            symbol="py:itsdangerous.signer._lazy_sha1",
        ),
        Rule(
            "real",
            "digest_method is now a Python function (_lazy_sha1), not the builtin hashlib.sha1",
            kind="state_changed",
            symbol="py:itsdangerous.signer.",
        ),
        Rule(
            "real",
            "digest_method is now a Python function (_lazy_sha1), not the builtin hashlib.sha1",
            kind="args_changed",
            symbol="py:itsdangerous.signer.HMACAlgorithm.__init__",
        ),
        Rule(
            "real",
            "the new _PDataSerializer protocol class body runs at import",
            test="<import>",
            symbol="py:itsdangerous.serializer._PDataSerializer",
        ),
        Rule(
            "real",
            "typing imported as t, not _t: the module-level TYPE_CHECKING tests read otherwise",
            kind="branch_changed",
            test="<import>",
            symbol="py:itsdangerous.",
            level="touched",
        ),
    ),
    "boltons": (
        # 24.1.0 adds tracing to iterutils.remap (trace=, new `if trace...` decisions in new
        # code), changes research() to pass enter=, drops Python 2 branches from
        # mathutils.Bits.__init__ and urlutils (`unicode` -> `str` conditions), removes the
        # timeutils DeprecationWarning at import, and edits tests/test_tbutils.py. Read by a
        # person (session 10) against `git diff HEAD~1 HEAD`: every reported test.
        Rule("noise", BOLTONS_CLOCK, kind="result_changed", symbol="ecoutils._get_utc_now"),
        Rule("noise", BOLTONS_HEAP, kind="branch_changed", symbol="py:boltons.gcutils.get_all"),
        # Before naming 5 (#24.4): base's `if visited_item is True` and head's new
        # `if trace is True` share the id a82c2438f7, so one condition's counts were compared
        # with the other's ...
        Rule(
            "noise",
            BOLTONS_LOOKALIKE,
            kind="branch_changed",
            site="remap/if[a82c2438f7]",
            both_sides=True,
            mislabelled=True,
        ),
        # ... and the unchanged decisions around the new code got new ids (each once as gone,
        # once as new): `if new_items`, `if visited_item is True`, `if reraise_visit`.
        *(
            Rule("noise", BOLTONS_RENAMED, kind="branch_changed", site=f"remap/if[{site}]")
            for site in ("9c8dd522c9", "b4afc8cbac", "058bd4faed", "351abb01e5", "ace288588f")
        ),
        # The new tracing decisions of remap (new code, taken false: no trace asked).
        *(
            Rule(
                "real",
                BOLTONS_TRACE,
                kind="branch_changed",
                site=f"remap/if[{site}]",
                level="touched",
            )
            for site in (
                # naming 5 (after)
                "0076c0a84e",
                "17db7f0457",
                "5e5277198b",
                "8576475463",
                "91d575d4c2",
                "987d789de5",
                "9ff944c8de",
                "c416d88a3c",
                "c65b0f3957",
                "d4626934c8",
                "e6e89072db",
                # naming 4 (before)
                "249de03ec1",
                "4b2319ee0c",
                "8e7a6f7f21",
                "a82c2438f7",
                "af9bdcd094",
                "c0bd43de8f",
                "f3e02fba23",
                "f78d42c367",
            )
        ),
        Rule("real", BOLTONS_RESEARCH, kind="args_changed", symbol="py:boltons.iterutils.research"),
        Rule("real", BOLTONS_RESEARCH, kind="branch_changed", symbol="py:boltons.iterutils.remap/"),
        Rule("real", BOLTONS_PY2, symbol="py:boltons.mathutils.Bits.__init__", level="touched"),
        Rule("real", BOLTONS_PY2, symbol="py:boltons.urlutils.", level="touched"),
        Rule("real", BOLTONS_TB, symbol="py:boltons.tbutils.", test="tests/test_tbutils.py"),
        Rule("real", BOLTONS_WARN, kind="warnings_changed", test="<import>"),
    ),
}


def classify(
    project: str, reported: list[dict[str, Any]], changed_files: list[str] | None = None
) -> dict[str, Any]:
    rules = RULES.get(project, ())
    files = {line.split("\t")[-1] for line in changed_files or []}
    tests = []
    for test in reported:
        verdict, causes, extra = _verdict(rules, test, files)
        tests.append(
            {
                "test": test["test"],
                "status": test["status"],
                "verdict": verdict,
                "causes": causes,
                "kinds": sorted({c["kind"] for c in test["changes"]}),
                "lines": len(test["changes"]),
            }
            | extra
        )
    counts = Counter(t["verdict"] for t in tests)
    noise_causes: Counter[str] = Counter()
    real_causes: Counter[str] = Counter()
    entry_causes: Counter[str] = Counter()
    for t in tests:
        table = {"noise": noise_causes, "real": real_causes}.get(t["verdict"])
        if table is not None:
            table.update(t["causes"])
        entry_causes.update(t.get("noise_entries", []))
    return {
        "counts": dict(counts),
        # Reported change lines that the code change cannot explain (a noise rule's), in the
        # tests that belong in the report (``real``) and in all reported tests.
        "noise_lines_in_real_tests": sum(
            t.get("noise_lines", 0) for t in tests if t["verdict"] == "real"
        ),
        "noise_lines": sum(t.get("noise_lines", 0) for t in tests),
        "lines": sum(t.get("lines", 0) for t in tests),
        "mislabelled": sum(1 for t in tests if t.get("mislabelled")),
        "with_noise_entries": sum(1 for t in tests if t.get("noise_entries")),
        "noise_causes": dict(noise_causes.most_common()),
        "noise_entry_causes": dict(entry_causes.most_common()),
        "real_causes": dict(real_causes.most_common()),
        "tests": tests,
    }


def _verdict(
    rules: tuple[Rule, ...], test: dict[str, Any], files: set[str]
) -> tuple[str, list[str], dict[str, Any]]:
    status = test["status"]
    if status == "unstable":
        # diffgenome itself says the differences are not the change's (confirmation or
        # --repeat saw them between recordings of one commit): neither real nor noise.
        return "unstable", [(test["reasons"] or ["unstable"])[0].split(":", 1)[0]], {}
    if status in ("added", "removed"):
        by_id = next(
            (
                r
                for r in rules
                if r.kind == status
                and r.test in test["test"]
                and (not r.test_re or re.search(r.test_re, test["test"]) is not None)
            ),
            None,
        )
        if by_id is not None:
            return by_id.verdict, [by_id.cause], {}
        # The test's file, or a file of its folder (a mixin in tests/__init__.py), changed.
        folder = test["test"].split("::", 1)[0].rsplit("/", 1)[0] + "/"
        if any(f.startswith(folder) for f in files):
            return "real", [f"test {status}: the suite's tests changed"], {}
        return "unclassified", [], {}
    real: list[Rule] = []
    noise: list[str] = []
    unexplained = 0
    # A test's changes beyond the saved ones (MAX_CHANGES) are not seen: say so.
    if test.get("n_changes", len(test["changes"])) > len(test["changes"]):
        unexplained += 1
    for change in test["changes"]:
        rule = next((r for r in rules if r.matches(test["test"], change)), None)
        if rule is None:
            unexplained += 1
        elif rule.verdict == "noise":
            noise.append(rule.cause)
        else:
            real.append(rule)
    mislabelled = any(r.mislabelled for r in real)
    real_causes = sorted({r.cause for r in real})
    extra: dict[str, Any] = {"mislabelled": True} if mislabelled else {}
    if noise:
        extra["noise_entries"] = sorted(set(noise))
        extra["noise_lines"] = len(noise)  # change lines a noise rule explains
    justified = [r for r in real if status == "touched" or r.level == "changed"]
    if status == "touched" and real and not unexplained:
        # Its new or gone decisions are real; noise lines beside them are counted apart.
        return "real", real_causes, extra
    if status == "restructured" and test.get("structure") and not noise and not unexplained:
        # What moved is named from the code change itself (one-sided symbols only); the
        # differences left, if any, are decisions of one side's code that a rule explains.
        return "real", [*real_causes, *(f"structure: {s}" for s in test["structure"])], extra
    if status == "changed" and justified and not unexplained:
        return "real", real_causes, extra
    if noise and not justified and not unexplained:
        extra.pop("noise_entries", None)
        return "noise", sorted(set(noise)), extra
    return "unclassified", real_causes, extra
