"""Verdicts on the tests a release-to-release diff reported, written by reading the code change.

Each rule says, for one project, which reported changes it explains: a change matches when
every given field matches (``kind``, ``symbol``, ``site``, ``test``: substrings). A real rule
also says which status the change alone justifies (``level``: ``changed``, or ``touched`` for a
decision that exists in one side's code only). A test is

- ``real`` when its status is justified by real changes: ``changed`` with at least one real
  change of level ``changed``, ``touched`` with only real changes, ``added``/``removed`` when
  its test file is among the changed files. Noise entries next to real ones are counted
  apart (``noise_entries``): the test belongs in the report, some of its lines do not.
- ``noise`` when it has no real change of its status' level and at least one noise change:
  without the artefact it would not be reported (or not with that status).
- ``unclassified`` otherwise (nobody has read it yet: never counted as real or noise).

``mislabelled`` marks real tests whose report names the wrong decision (ordinal ids).
The cause strings are the explanations that go into docs/experiments.md.
"""

from __future__ import annotations

import json
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
        where = change.get("symbol") or "/".join(change.get("path", []))
        return (
            self.test in test
            and self.kind in change.get("kind", "")
            and self.symbol in where
            and self.site in (change.get("site") or "")
            and self._taken(change)
        )


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
    "==/!= with a list, or a tuple outside pytest.warns: the new deprecation check (its own "
    "site) is taken true and the DeprecationWarning it emits escapes the test: the test's "
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
    justified = [r for r in real if status == "touched" or r.level == "changed"]
    if status == "touched" and real and not noise and not unexplained:
        return "real", real_causes, extra
    if status == "changed" and justified and not unexplained:
        return "real", real_causes, extra
    if noise and not justified and not unexplained:
        extra.pop("noise_entries", None)
        return "noise", sorted(set(noise)), extra
    return "unclassified", real_causes, extra
