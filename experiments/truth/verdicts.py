"""Verdicts on the tests a release-to-release diff reported, written by reading the code change.

Each rule says, for one project, which reported changes it explains: a change matches when
every given field (``kind``, ``symbol``, ``site``: substrings) matches. A test is

- ``noise`` when at least one of its changes matches a noise rule (the report about it is at
  least partly an artefact: a reader cannot trust it as it stands),
- ``real`` when every change matches a real rule,
- ``unclassified`` otherwise (nobody has read it yet: never counted as real or noise).

``unverified`` tests with no changes are classified by their reasons (``reason`` field).
The cause strings are the explanations that go into docs/experiments.md.
"""

from __future__ import annotations

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
    reason: str = ""
    test: str = ""

    def matches_change(self, test: str, change: dict[str, Any]) -> bool:
        if self.reason:
            return False
        return (
            self.test in test
            and self.kind in change.get("kind", "")
            and self.symbol in (change.get("symbol") or "/".join(change.get("path", [])))
            and self.site in (change.get("site") or "")
        )

    def matches_reason(self, test: str, reason: str) -> bool:
        return bool(self.reason) and self.test in test and self.reason in reason


RULES: dict[str, tuple[Rule, ...]] = {}


def classify(project: str, reported: list[dict[str, Any]]) -> dict[str, Any]:
    rules = RULES.get(project, ())
    tests = []
    for test in reported:
        verdict, causes = _verdict(rules, test)
        tests.append(
            {
                "test": test["test"],
                "status": test["status"],
                "verdict": verdict,
                "cause": "; ".join(causes),
                "kinds": sorted({c["kind"] for c in test["changes"]}),
            }
        )
    counts = Counter(t["verdict"] for t in tests)
    noise_causes = Counter(
        cause for t in tests if t["verdict"] == "noise" for cause in t["cause"].split("; ")
    )
    return {
        "counts": dict(counts),
        "noise_causes": dict(noise_causes.most_common()),
        "tests": tests,
    }


def _verdict(rules: tuple[Rule, ...], test: dict[str, Any]) -> tuple[str, list[str]]:
    noise: list[str] = []
    real: list[str] = []
    unexplained = 0
    items: list[tuple[str, dict[str, Any] | None]] = [("", c) for c in test["changes"]]
    if not test["changes"]:
        items = [(r, None) for r in test["reasons"]] or [("", None)]
    for reason, change in items:
        rule = next(
            (
                r
                for r in rules
                if (change is not None and r.matches_change(test["test"], change))
                or (change is None and r.matches_reason(test["test"], reason))
            ),
            None,
        )
        if rule is None:
            unexplained += 1
        elif rule.verdict == "noise":
            noise.append(rule.cause)
        else:
            real.append(rule.cause)
    if noise:
        return "noise", sorted(set(noise))
    if real and not unexplained:
        return "real", sorted(set(real))
    return "unclassified", sorted(set(real))
