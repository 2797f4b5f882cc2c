"""Which recording of base is compared with which of head: tests by id, or, where pytest
renumbered parametrized cases between the sides, by their parameter values; and whether the
value digests of two runs compare at all (one key)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from diffgenome.analysis.diff.align import TestIndex


def digests_comparable(base_run: Mapping[str, Any], head_run: Mapping[str, Any]) -> bool:
    """Digests of two runs compare only under one known key."""
    fingerprint = base_run.get("key_fingerprint")
    return fingerprint is not None and fingerprint == head_run.get("key_fingerprint")


def pair_renumbered(base: Mapping[str, TestIndex], head: Mapping[str, TestIndex]) -> dict[str, str]:
    """Base id → the id it is reported under, for parametrized cases whose ids moved.

    pytest names a case whose value it cannot print by its position (``test[kwargs18]``), so
    inserting two cases turns it into ``test[kwargs20]``: compared by id, every later case is
    compared with its neighbour's recording, and the last reads as added (tomlkit, humanize:
    14 tests each). Within one test function whose set of case ids differs between the
    sides, cases are paired by their parameter values instead (the ``params`` digests), when
    every case of that function on both sides has them, none missing (cases listed twice with
    equal values pair in id order). A base case whose values are gone is removed; if head
    reuses its id for another case it is reported as ``<id> (base)``.
    """
    groups: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
    unusable: set[str] = set()
    for side, tests in enumerate((base, head)):
        for test_id, test in tests.items():
            function, bracket, _ = test_id.partition("[")
            if not bracket:
                continue
            key = _case_values(test)
            if key is None:
                unusable.add(function)
            else:
                groups.setdefault(function, ({}, {}))[side][test_id] = key
    names: dict[str, str] = {}
    for function, (b_cases, h_cases) in groups.items():
        if function in unusable or set(b_cases) == set(h_cases):
            continue
        h_by_values: dict[str, list[str]] = {}
        for test_id, values in h_cases.items():
            h_by_values.setdefault(values, []).append(test_id)
        b_by_values: dict[str, list[str]] = {}
        for test_id, values in b_cases.items():
            b_by_values.setdefault(values, []).append(test_id)
        for values, base_ids in b_by_values.items():
            # Cases listed twice with equal values (tomlkit: kwargs4 and kwargs8) are the
            # same case: which one pairs with which does not matter; they pair in id order.
            head_ids = sorted(h_by_values.get(values, ()), key=_natural)
            for index, base_id in enumerate(sorted(base_ids, key=_natural)):
                if index < len(head_ids):
                    names[base_id] = head_ids[index]
                elif base_id in head:
                    names[base_id] = f"{base_id} (base)"
    return {base_id: name for base_id, name in names.items() if base_id != name}


def _natural(test_id: str) -> list[tuple[int, str]]:
    """``kwargs4`` before ``kwargs18``: numbers compare as numbers."""
    return [(int(part), "") if part.isdigit() else (0, part) for part in _DIGITS.split(test_id)]


_DIGITS = re.compile(r"(\d+)")


def _case_values(test: TestIndex) -> str | None:
    params = test.record.get("params")
    if not isinstance(params, Mapping) or not params:
        return None
    if not all(isinstance(digest, str) for digest in params.values()):
        return None  # a value too big to digest: its equality is unknown
    return "\0".join(f"{name}={params[name]}" for name in sorted(params))


def renamed(tests: dict[str, TestIndex], names: Mapping[str, str]) -> dict[str, TestIndex]:
    """``tests`` under the ids they are reported by (``names``: :func:`pair_renumbered`\'s)."""
    return {names.get(test_id, test_id): test for test_id, test in tests.items()}
