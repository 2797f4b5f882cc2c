"""codemap: names and decision outcomes, proven by running real code under sys.monitoring."""

from __future__ import annotations

import contextlib
import dis
import itertools
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import CodeType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diffgenome.protocol.naming import CodeName, fallback_name, iter_code_objects
from diffgenome.recording.collect.codemap import (
    INTERNAL_JUMP,
    NO_DECISION,
    FileMap,
    build_file_map,
)

TOOL = 4
MONITORING = sys.monitoring


@dataclass
class Recorded:
    fmap: FileMap
    ns: dict[str, Any]
    code: CodeType
    counts: dict[str, tuple[int, int]]  # site id -> (true, false)
    results: list[tuple[str, int, int, int]]  # (qualname, src, dest, classify result)

    def site(self, ref: str) -> tuple[int, int]:
        """Outcomes of the site ``ref`` names: an id, or ``<symbol>/<kind>[n]`` for the n-th
        decision of that kind in the symbol, in source order (ids are content digests)."""
        sid = positional_ids(self.fmap.sites).get(ref, ref)
        assert sid in self.counts, f"{ref} not among {sorted(positional_ids(self.fmap.sites))}"
        return self.counts[sid]


def positional_ids(sites: Iterable[Any]) -> dict[str, str]:
    """``<symbol>/<kind>[n]`` (the n-th such decision in source order) -> the site's id."""
    seen: Counter[tuple[str, str]] = Counter()
    out: dict[str, str] = {}
    for site in sites:
        n = seen[(site.symbol, site.kind)]
        seen[(site.symbol, site.kind)] += 1
        out[f"{site.symbol}/{site.kind}[{n}]"] = site.id
    return out


def positions(sites: Iterable[Any]) -> list[str]:
    """The sites as ``<symbol>/<kind>[n]``, in source order."""
    return list(positional_ids(sites))


def record(
    source: str, calls: Iterable[tuple[str, tuple[Any, ...]]], module: str = "m"
) -> Recorded:
    """Run ``calls`` on the module compiled from ``source`` with BRANCH events on all its code."""
    source = textwrap.dedent(source)
    fmap = build_file_map(source, module)
    code = compile(source, f"<{module}>", "exec", dont_inherit=True)
    ns: dict[str, Any] = {"__name__": module}
    counts: Counter[tuple[str, int]] = Counter()
    results: list[tuple[str, int, int, int]] = []

    def on_branch(c: CodeType, src: int, dest: int) -> object:
        r = fmap.classify(c, src, dest)
        results.append((c.co_qualname, src, dest, r))
        if r >= 0:
            counts[(fmap.sites[r // 2].id, r % 2)] += 1
        return None

    codes = list(iter_code_objects(code))
    MONITORING.use_tool_id(TOOL, "codemap-test")
    try:
        MONITORING.register_callback(TOOL, MONITORING.events.BRANCH, on_branch)
        for c in codes:
            MONITORING.set_local_events(TOOL, c, MONITORING.events.BRANCH)
        exec(code, ns)  # module and class bodies run monitored too
        for name, args in calls:
            with contextlib.suppress(AssertionError):
                ns[name](*args)
    finally:
        for c in codes:
            MONITORING.set_local_events(TOOL, c, 0)
        MONITORING.register_callback(TOOL, MONITORING.events.BRANCH, None)
        MONITORING.free_tool_id(TOOL)
    per_site = {s.id: (counts[(s.id, 1)], counts[(s.id, 0)]) for s in fmap.sites}
    assert len(per_site) == len(fmap.sites), "site ids must be unique"
    return Recorded(fmap, ns, code, per_site, results)


def calls_of(name: str, inputs: Iterable[tuple[Any, ...]]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(name, args) for args in inputs]


def expected(
    inputs: Iterable[tuple[Any, ...]], condition: Callable[..., object]
) -> tuple[int, int]:
    outcomes = [bool(condition(*args)) for args in inputs]
    return sum(outcomes), len(outcomes) - sum(outcomes)


BOOLS3 = list(itertools.product([0, 1], repeat=3))


# --- if / elif / boolean operators ------------------------------------------------------


def test_if_elif_else_chain_and_boolean_operators() -> None:
    rec = record(
        """
        def g(a, b, c):
            if a and b:
                r = 1
            elif a or b:
                r = 2
            elif not c:
                r = 3
            else:
                r = 4
            if (a and b) or c:
                r += 10
            if not a:
                r += 100
            return r
        """,
        calls_of("g", BOOLS3),
    )
    assert rec.site("py:m.g/if[0]") == expected(BOOLS3, lambda a, b, c: a and b)
    rest = [t for t in BOOLS3 if not (t[0] and t[1])]
    assert rec.site("py:m.g/if[1]") == expected(rest, lambda a, b, c: a or b)
    rest2 = [t for t in rest if not (t[0] or t[1])]
    assert rec.site("py:m.g/if[2]") == expected(rest2, lambda a, b, c: not c)
    assert rec.site("py:m.g/if[3]") == expected(BOOLS3, lambda a, b, c: (a and b) or c)
    assert rec.site("py:m.g/if[4]") == expected(BOOLS3, lambda a, b, c: not a)
    assert [s.predicate for s in rec.fmap.sites] == [
        "a and b",
        "a or b",
        "not c",
        "a and b or c",
        "not a",
    ]


def test_if_as_last_statement_whose_false_target_carries_the_test_position() -> None:
    rec = record(
        """
        def f(x):
            if x:
                y = 1
        """,
        calls_of("f", [(0,), (1,), (1,)]),
    )
    assert rec.site("py:m.f/if[0]") == (2, 1)


def test_nested_ifs_chained_comparisons_none_tests_and_walrus() -> None:
    inputs: list[tuple[Any, ...]] = [
        (a, b, c) for a in (None, 0, 1, 2) for b in (0, 1, 2) for c in (0, 3)
    ]
    rec = record(
        """
        def n(a, b, c):
            if a is not None:
                if 0 < a < b:
                    return 1
                elif (t := a + b) > 2 and c:
                    return t
            if a is None or b == c:
                pass
            return 0
        """,
        calls_of("n", inputs),
    )
    assert rec.site("py:m.n/if[0]") == expected(inputs, lambda a, b, c: a is not None)
    not_none = [t for t in inputs if t[0] is not None]
    assert rec.site("py:m.n/if[1]") == expected(not_none, lambda a, b, c: 0 < a < b)
    rest = [t for t in not_none if not 0 < t[0] < t[1]]
    assert rec.site("py:m.n/if[2]") == expected(rest, lambda a, b, c: a + b > 2 and c)
    reached = [t for t in inputs if t not in not_none or t in rest]
    reach = [t for t in reached if not (t in rest and t[0] + t[1] > 2 and t[2])]
    assert rec.site("py:m.n/if[3]") == expected(reach, lambda a, b, c: a is None or b == c)


def test_value_context_boolean_operators_are_not_decisions() -> None:
    rec = record(
        """
        def v(a, b):
            x = a or b
            y = a and not b
            if ident(a or b):
                return x, y
            return None
        def ident(z):
            return z
        """,
        calls_of("v", [(0, 0), (0, 1), (1, 0)]),
    )
    assert positions(rec.fmap.sites) == ["py:m.v/if[0]"]
    assert rec.site("py:m.v/if[0]") == (2, 1)
    internal = [r for r in rec.results if r[3] == INTERNAL_JUMP]
    never = [r for r in rec.results if r[3] == NO_DECISION]
    assert never, "the jumps of `x = a or b` belong to no decision"
    assert internal == [], "jumps that only go on evaluating a condition are disabled"


# --- loops ------------------------------------------------------------------------------


def test_while_loops_break_continue_and_for_loops_are_never_outcomes() -> None:
    rec = record(
        """
        def w(n, m):
            while n > 0 and m:
                n -= 1
                if n == 5:
                    continue
                if n == 2:
                    break
            return n
        def loops(xs):
            total = 0
            for x in xs:
                for y in xs:
                    total += y
            while xs:
                xs = xs[1:]
            return total
        """,
        [("w", (10, 1)), ("w", (3, 0)), ("w", (0, 1)), ("loops", ([1, 2, 3],))],
    )
    # w(10, 1): the loop test holds for n = 10..3, the break leaves at n == 2; w(3, 0) and
    # w(0, 1) fail it at once.
    assert rec.site("py:m.w/while[0]") == (8, 2)
    assert rec.site("py:m.w/if[0]") == (1, 7)
    assert rec.site("py:m.w/if[1]") == (1, 6)
    assert rec.site("py:m.loops/while[0]") == (3, 1)
    for_iters = {i.offset for i in dis.get_instructions(rec.ns["loops"]) if i.opname == "FOR_ITER"}
    assert len(for_iters) == 2
    seen = {src for q, src, _, r in rec.results if q == "loops" and src in for_iters}
    assert seen == for_iters
    assert all(
        r == NO_DECISION for q, src, _, r in rec.results if src in for_iters and q == "loops"
    )


def test_if_inside_loops_with_continue_break_pass_else() -> None:
    xs = [0, 1, 2, 0, 3]
    rec = record(
        """
        def l1(xs):
            for x in xs:
                if x:
                    continue
                f(x)
        def l2(xs):
            for x in xs:
                if x: break
            else:
                f(0)
        def l3(xs):
            for x in xs:
                if x:
                    pass
        def l4(xs):
            i = 0
            while i < len(xs):
                i += 1
                if xs[i - 1]:
                    f(i)
        def l5(xs):
            for x in xs:
                while x:
                    x -= 1
        def f(x):
            return x
        """,
        [(name, (xs,)) for name in ("l1", "l2", "l3", "l4", "l5")],
    )
    assert rec.site("py:m.l1/if[0]") == (3, 2)
    assert rec.site("py:m.l2/if[0]") == (1, 1)
    assert rec.site("py:m.l3/if[0]") == (3, 2)
    assert rec.site("py:m.l4/while[0]") == (5, 1)
    assert rec.site("py:m.l4/if[0]") == (3, 2)
    assert rec.site("py:m.l5/while[0]") == (6, 5)


# --- expressions --------------------------------------------------------------------------


def test_conditional_expressions_nested_and_inside_conditions() -> None:
    inputs = list(itertools.product([0, 1], repeat=2))
    rec = record(
        """
        def ie(a, b):
            return (1 if a else 2) if (b if a else not b) else 3
        def inside(a, b):
            if (a if b else not a) and b:
                return 1
            return 0
        """,
        calls_of("ie", inputs) + calls_of("inside", inputs),
    )
    assert rec.site("py:m.ie/ifexp[0]") == expected(inputs, lambda a, b: b if a else not b)
    assert rec.site("py:m.ie/ifexp[1]") == expected(inputs, lambda a, b: a)
    chosen = [t for t in inputs if (t[1] if t[0] else not t[1])]
    assert rec.site("py:m.ie/ifexp[2]") == expected(chosen, lambda a, b: a)
    assert rec.site("py:m.inside/if[0]") == expected(inputs, lambda a, b: (a if b else not a) and b)
    assert rec.site("py:m.inside/ifexp[0]") == expected(inputs, lambda a, b: b)


def test_comprehension_clauses_and_generator_expressions() -> None:
    xs = [0, 1, 2, 3, 4]
    rec = record(
        """
        def comp(xs):
            a = [x for x in xs if x if x % 2]
            b = {x for x in xs if x > 1}
            c = {x: 1 for x in xs if not x}
            d = list(x for x in xs if x > 2)
            e = [(x, y) for x in xs if x < 2 for y in xs if y == x]
            return a, b, c, d, e
        """,
        [("comp", (xs,))],
    )
    assert rec.site("py:m.comp/comprehension[0]") == (4, 1)
    assert rec.site("py:m.comp/comprehension[1]") == (2, 2)
    assert rec.site("py:m.comp/comprehension[2]") == (3, 2)
    assert rec.site("py:m.comp/comprehension[3]") == (1, 4)
    assert rec.site("py:m.comp/comprehension[4]") == (2, 3)
    assert rec.site("py:m.comp/comprehension[5]") == (2, 8)
    assert rec.site("py:m.comp.<locals>.<genexpr>[9a38341a2c]/comprehension[0]") == (2, 3)


# --- match ------------------------------------------------------------------------------


@dataclass
class Point:
    x: int
    y: int


def test_match_cases_with_patterns_guards_and_wildcard() -> None:
    values: list[Any] = [1, 2, [3, 1], [1, 3], {"k": 1}, "s", Point(0, 5), Point(1, 1), 5.0]
    rec = record(
        """
        def mt(v, Point):
            match v:
                case 1 | 2:
                    return "small"
                case [a, b] if a > b:
                    return "pair"
                case {"k": k}:
                    return "map"
                case str():
                    return "str"
                case Point(x=0, y=y):
                    return "point"
                case _:
                    return "other"
        """,
        [("mt", (v, Point)) for v in values],
    )
    assert [s.predicate for s in rec.fmap.sites] == [
        "1 | 2",
        "[a, b] if a > b",
        "{'k': k}",
        "str()",
        "Point(x=0, y=y)",
        "_",
    ]
    assert rec.site("py:m.mt/match[0]") == (2, 7)
    assert rec.site("py:m.mt/match[1]") == (1, 6)
    assert rec.site("py:m.mt/match[2]") == (1, 5)
    assert rec.site("py:m.mt/match[3]") == (1, 4)
    assert rec.site("py:m.mt/match[4]") == (1, 3)
    assert rec.site("py:m.mt/match[5]") == (0, 0)  # irrefutable: no branch


def test_match_capture_pattern_as_last_case() -> None:
    rec = record(
        """
        def mc(v):
            match v:
                case (0, _):
                    return 0
                case other:
                    return other
        """,
        calls_of("mc", [((0, 1),), ((1, 1),), (3,)]),
    )
    assert rec.site("py:m.mc/match[0]") == (1, 2)
    assert rec.site("py:m.mc/match[1]") == (0, 0)


# --- assert, try/except/with --------------------------------------------------------------


def test_assert_outcome_is_whether_it_held_and_try_with_make_no_sites() -> None:
    rec = record(
        """
        import contextlib
        def asrt(x):
            assert x > 0, "negative"
            assert x
            try:
                with contextlib.suppress(KeyError):
                    {}[x]
                with open("/nonexistent/codemap") as fh:
                    fh.read()
            except (OSError, ValueError) as exc:
                result = exc
            except Exception:
                raise
            else:
                result = None
            finally:
                x += 1
            return result
        """,
        calls_of("asrt", [(2,), (-1,), (3,)]),
    )
    assert positions(rec.fmap.sites) == ["py:m.asrt/assert[0]", "py:m.asrt/assert[1]"]
    assert rec.site("py:m.asrt/assert[0]") == (2, 1)
    assert rec.site("py:m.asrt/assert[1]") == (2, 0)
    machinery = [r for r in rec.results if r[3] >= 0 and rec.fmap.sites[r[3] // 2].kind != "assert"]
    assert machinery == []


# --- scopes: lambdas, nested functions, methods, async ------------------------------------


def test_decisions_in_lambdas_nested_functions_methods_and_async() -> None:
    rec = record(
        """
        import asyncio
        pick = lambda a: "y" if a else "n"
        def outer(a, b):
            def inner(c):
                if c > 1:
                    return c
                return 0
            keep = list(filter(lambda v: v > a, [0, 1, 2]))
            return inner(b), keep
        class C:
            LIMIT = 1 if pick(1) == "y" else 2
            def m(self, v):
                while v > self.LIMIT:
                    v -= 1
                return v
        async def h(x):
            await asyncio.sleep(0)
            return x
        async def af(a, b):
            if a or await h(b):
                return 1
            return [x async for x in agen(b) if x % 2] if b else []
        async def agen(n):
            for i in range(n):
                yield i
        def run_af(a, b):
            return asyncio.run(af(a, b))
        """,
        [
            ("pick", (0,)),
            ("pick", (3,)),
            ("outer", (0, 2)),
            ("outer", (1, 0)),
            ("run_af", (0, 0)),
            ("run_af", (0, 4)),
            ("run_af", (1, 1)),
        ],
    )
    assert rec.site("py:m.<lambda>[86645cb003]/ifexp[0]") == (2, 1)  # one call at class creation
    assert rec.site("py:m.outer.<locals>.inner/if[0]") == (1, 1)
    assert rec.site("py:m.C/ifexp[0]") == (1, 0)
    assert rec.site("py:m.af/if[0]") == (2, 1)
    assert rec.site("py:m.af/ifexp[0]") == (0, 1)
    c = rec.ns["C"]()
    assert c.m(3) == 1
    names = {
        rec.fmap.code_name(co).symbol: rec.fmap.code_name(co).kind
        for co in iter_code_objects(rec.code)
    }
    assert names["py:m"] == "module"
    assert names["py:m.C"] == "class"
    assert names["py:m.C.m"] == "function"
    assert names["py:m.<lambda>[86645cb003]"] == "lambda"
    assert names["py:m.outer.<locals>.<lambda>[19fa8b2098]"] == "lambda"
    assert names["py:m.af"] == "function"


def test_comparison_in_a_lambda_is_not_a_decision() -> None:
    rec = record(
        """
        def outer(a):
            return list(filter(lambda v: v > a, [0, 1, 2]))
        """,
        [("outer", (0,))],
    )
    assert rec.fmap.sites == []
    assert [r for r in rec.results if r[3] >= 0] == []


def test_method_while_loop_under_monitoring() -> None:
    rec = record(
        """
        class C:
            LIMIT = 1
            def m(self, v):
                while v > self.LIMIT:
                    v -= 1
                return v
        def call(v):
            return C().m(v)
        """,
        calls_of("call", [(3,), (0,)]),
    )
    assert rec.site("py:m.C.m/while[0]") == (2, 2)


def test_jumps_needing_extended_arg() -> None:
    body = "".join(f"        v{i} = x + {i}\n" for i in range(300))
    rec = record(
        f"def big(x):\n    while x > 0:\n{body}        x -= 1\n    return x\n",
        [("big", (3,)), ("big", (0,))],
    )
    assert any(i.opname == "EXTENDED_ARG" for i in dis.get_instructions(rec.ns["big"]))
    assert rec.site("py:m.big/while[0]") == (3, 2)


# --- random conditions against an evaluator of their own ------------------------------------


@dataclass
class Cond:
    """A generated condition: its source and a short-circuit evaluator that logs ifexps."""

    source: str
    evaluate: Callable[[dict[str, int], list[tuple[int, bool]]], object]
    ifexps: int  # number of conditional expressions inside, numbered in AST pre-order


def _leaf(kind: int, var: str, other: str) -> Cond:
    if kind == 0:
        return Cond(var, lambda env, log: env[var], 0)
    if kind == 1:
        return Cond(f"{var} > 1", lambda env, log: env[var] > 1, 0)
    if kind == 2:
        return Cond(f"0 < {var} < 2", lambda env, log: 0 < env[var] < 2, 0)
    if kind == 3:
        return Cond(f"ident({var} or {other})", lambda env, log: env[var] or env[other], 0)
    return Cond(f"{var} == {other}", lambda env, log: env[var] == env[other], 0)


VARS = ("a", "b", "c", "d")
leaves = st.builds(_leaf, st.integers(0, 4), st.sampled_from(VARS), st.sampled_from(VARS))


def _shift(c: Cond, by: int) -> Callable[[dict[str, int], list[tuple[int, bool]]], object]:
    def run(env: dict[str, int], log: list[tuple[int, bool]]) -> object:
        inner: list[tuple[int, bool]] = []
        value = c.evaluate(env, inner)
        log.extend((i + by, v) for i, v in inner)
        return value

    return run


def _combine(children: st.SearchStrategy[Cond]) -> st.SearchStrategy[Cond]:
    def boolop(op: str, xs: list[Cond]) -> Cond:
        offsets = list(itertools.accumulate([0] + [x.ifexps for x in xs]))
        parts = [_shift(x, off) for x, off in zip(xs, offsets, strict=False)]

        def run(env: dict[str, int], log: list[tuple[int, bool]]) -> object:
            value: object = None
            for part in parts:
                value = part(env, log)
                if (op == "and" and not value) or (op == "or" and value):
                    return value
            return value

        return Cond(f" {op} ".join(f"({x.source})" for x in xs), run, offsets[-1])

    def negate(x: Cond) -> Cond:
        return Cond(f"not ({x.source})", lambda env, log: not x.evaluate(env, log), x.ifexps)

    def ifexp(test: Cond, body: Cond, orelse: Cond) -> Cond:
        t = _shift(test, 1)
        b = _shift(body, 1 + test.ifexps)
        o = _shift(orelse, 1 + test.ifexps + body.ifexps)

        def run(env: dict[str, int], log: list[tuple[int, bool]]) -> object:
            mark = len(log)
            chosen = bool(t(env, log))
            log.insert(mark, (0, chosen))
            return b(env, log) if chosen else o(env, log)

        total = 1 + test.ifexps + body.ifexps + orelse.ifexps
        return Cond(f"({body.source}) if ({test.source}) else ({orelse.source})", run, total)

    return st.one_of(
        st.builds(
            boolop, st.sampled_from(["and", "or"]), st.lists(children, min_size=2, max_size=3)
        ),
        st.builds(negate, children),
        st.builds(ifexp, children, children, children),
    )


conditions = st.recursive(leaves, _combine, max_leaves=6)
envs = st.lists(st.tuples(*[st.integers(0, 2)] * 4), min_size=1, max_size=12)

CONTEXTS = {
    # kind of the site under test -> (source with COND, how to call it, site ordinal offset)
    "if": (
        "def t(a, b, c, d):\n    if COND:\n        return 1\n",
        "per-env",
    ),
    "ifexp": ("def t(a, b, c, d):\n    return 1 if COND else 0\n", "per-env"),
    "assert": ("def t(a, b, c, d):\n    assert COND\n", "per-env"),
    "match": (
        "def t(a, b, c, d):\n    match a:\n        case x if COND:\n            return x\n",
        "per-env",
    ),
    "comprehension": ("def t(envs):\n    return [1 for (a, b, c, d) in envs if COND]\n", "all"),
    "genexpr": ("def t(envs):\n    return list(1 for (a, b, c, d) in envs if COND)\n", "all"),
    "while": (
        "def t(envs):\n    it = iter(envs)\n    a, b, c, d = next(it)\n    while COND:\n"
        "        nxt = next(it, None)\n        if nxt is None:\n            break\n"
        "        a, b, c, d = nxt\n",
        "all",
    ),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cond=conditions, inputs=envs, context=st.sampled_from(sorted(CONTEXTS)))
def test_random_conditions_match_their_evaluation(
    cond: Cond, inputs: list[tuple[int, int, int, int]], context: str
) -> None:
    template, style = CONTEXTS[context]
    source = "def ident(z):\n    return z\n" + template.replace("COND", f"({cond.source})")
    calls = calls_of("t", inputs) if style == "per-env" else [("t", (inputs,))]
    rec = record(source, calls)

    true = false = 0
    ifexp_counts: Counter[tuple[int, bool]] = Counter()
    for values in inputs:
        env = dict(zip(VARS, values, strict=True))
        log: list[tuple[int, bool]] = []
        outcome = bool(cond.evaluate(env, log))
        ifexp_counts.update(log)
        true += outcome
        false += not outcome
        if context == "while" and not outcome:
            break

    if context == "genexpr":
        # named by its content, which is the generated condition
        [ifexp_symbol] = {site.symbol for site in rec.fmap.sites if "<genexpr>[" in site.symbol}
        sid = f"{ifexp_symbol}/comprehension[0]"
    else:
        sid = f"py:m.t/{context}[0]"
        ifexp_symbol = "py:m.t"
    assert rec.site(sid) == (true, false), cond.source
    first = 1 if context == "ifexp" else 0
    for k in range(cond.ifexps):
        got = rec.site(f"{ifexp_symbol}/ifexp[{first + k}]")
        assert got == (ifexp_counts[(k, True)], ifexp_counts[(k, False)]), cond.source


# --- naming --------------------------------------------------------------------------------

NAMING_SOURCE = """
import functools

def deco(f):
    return f

class C:
    @property
    def x(self):
        return 1 if self else 0

    @x.setter
    def x(self, value):
        if value:
            pass

    @deco
    @deco
    def m(self):
        return (lambda: 1, lambda: 2)

if functools:
    def cond():
        return 1
else:
    def cond():
        return 2

def outer():
    def helper():
        return [lambda: 0 for _ in ()]
    first = helper
    def helper():
        return (y for y in () if y)
    return first, helper

gen = (z for z in () if z)
"""


def test_symbol_ids_and_kinds_of_every_code_object() -> None:
    fmap = build_file_map(NAMING_SOURCE, "pkg.mod")
    code = compile(NAMING_SOURCE, "pkg/mod.py", "exec", dont_inherit=True)
    names = [fmap.code_name(c) for c in iter_code_objects(code)]
    symbols = sorted(n.symbol for n in names)
    assert symbols == sorted(
        [
            "py:pkg.mod",
            "py:pkg.mod.deco",
            "py:pkg.mod.C",
            "py:pkg.mod.C.x",
            "py:pkg.mod.C.x#1",
            "py:pkg.mod.C.m",
            "py:pkg.mod.C.m.<locals>.<lambda>[8867acda9f]",
            "py:pkg.mod.C.m.<locals>.<lambda>[a41c582806]",
            "py:pkg.mod.cond",
            "py:pkg.mod.cond#1",
            "py:pkg.mod.outer",
            "py:pkg.mod.outer.<locals>.helper",
            "py:pkg.mod.outer.<locals>.helper#1",
            "py:pkg.mod.outer.<locals>.helper.<locals>.<lambda>[adc65b2f9d]",
            "py:pkg.mod.outer.<locals>.helper.<locals>.<genexpr>[0a8f9415c7]",
            # the same generator expression in two places, bound apart: two names
            "py:pkg.mod.<genexpr>[ba22937daf]",
        ]
    )
    kinds = {n.symbol: n.kind for n in names}
    assert kinds["py:pkg.mod"] == "module"
    assert kinds["py:pkg.mod.C"] == "class"
    assert kinds["py:pkg.mod.C.x#1"] == "function"
    assert kinds["py:pkg.mod.C.m.<locals>.<lambda>[a41c582806]"] == "lambda"
    assert kinds["py:pkg.mod.<genexpr>[ba22937daf]"] == "generator"
    by_symbol = {n.symbol: n for n in names}
    assert by_symbol["py:pkg.mod.C.m"].line == NAMING_SOURCE.splitlines().index("    @deco") + 1
    # The inlined list comprehension's lambda lives in helper, not in a <listcomp>.
    assert all("<listcomp>" not in s for s in symbols)
    assert positions(fmap.sites) == [
        "py:pkg.mod.C.x/ifexp[0]",
        "py:pkg.mod.C.x#1/if[0]",
        "py:pkg.mod/if[0]",
        "py:pkg.mod.outer.<locals>.helper.<locals>.<genexpr>[0a8f9415c7]/comprehension[0]",
        "py:pkg.mod.<genexpr>[ba22937daf]/comprehension[0]",
    ]
    assert all(":" not in s.id.removeprefix("py:") for s in fmap.sites)


def test_real_property_getter_and_setter_get_distinct_ids() -> None:
    fmap = build_file_map(NAMING_SOURCE, "pkg.mod")
    ns: dict[str, Any] = {}
    exec(compile(NAMING_SOURCE, "pkg/mod.py", "exec", dont_inherit=True), ns)
    prop = ns["C"].__dict__["x"]
    assert fmap.code_name(prop.fget.__code__).symbol == "py:pkg.mod.C.x"
    assert fmap.code_name(prop.fset.__code__).symbol == "py:pkg.mod.C.x#1"
    lambdas = ns["C"]().m()
    ids = [fmap.code_name(f.__code__).symbol for f in lambdas]
    assert ids == [
        "py:pkg.mod.C.m.<locals>.<lambda>[8867acda9f]",
        "py:pkg.mod.C.m.<locals>.<lambda>[a41c582806]",
    ]


def test_overload_stubs_do_not_rename_the_function_they_describe() -> None:
    """itsdangerous 2.2.0 added five ``@t.overload`` stubs above ``Serializer.__init__``:
    counted with it, the one function that runs became ``__init__#5`` and every test read as
    calling another function."""
    plain = "class S:\n    def __init__(self, a=None):\n        self.a = a\n"
    stubs = textwrap.dedent(
        """
        import typing as t
        from typing import overload
        class S:
            @t.overload
            def __init__(self) -> None: ...
            @overload
            def __init__(self, a: int) -> None: ...
            def __init__(self, a=None):
                self.a = a
        """
    )
    for source in (plain, stubs):
        fmap = build_file_map(source, "m")
        ns: dict[str, Any] = {}
        exec(compile(source, "m.py", "exec", dont_inherit=True), ns)
        assert fmap.code_name(ns["S"].__init__.__code__).symbol == "py:m.S.__init__"
    code = compile(stubs, "m.py", "exec", dont_inherit=True)
    fmap = build_file_map(stubs, "m")
    named = sorted(
        fmap.code_name(c).symbol for c in iter_code_objects(code) if c.co_name == "__init__"
    )
    assert named == [
        "py:m.S.__init__",
        "py:m.S.__init__[overload]",
        "py:m.S.__init__[overload]#1",
    ]


def test_same_line_twins_without_distinguishing_positions() -> None:
    source = "pair = (lambda: 0, lambda: 'x')\nsame = (lambda: 0, lambda: 0)\n"
    fmap = build_file_map(source, "m")
    ns: dict[str, Any] = {}
    exec(compile(source, "m.py", "exec", dont_inherit=True), ns)
    assert [fmap.code_name(f.__code__).symbol for f in ns["pair"]] == [
        "py:m.<lambda>[ac5044b6b1]",
        "py:m.<lambda>[89f715b775]",
    ]
    # Lambdas are named by content: the twins read like the pair's first one, so they take
    # the next ordinals of that content. Identical twins on one line (3.12 does not even
    # give them columns) cannot be told apart.
    assert {fmap.code_name(f.__code__).symbol for f in ns["same"]} <= {
        "py:m.<lambda>[ac5044b6b1]#1",
        "py:m.<lambda>[ac5044b6b1]#2",
    }


def test_qualname_rules_global_generics_type_alias_and_genexpr_parents() -> None:
    source = textwrap.dedent(
        """
        g = (lambda: x for x in range(3))
        class C:
            def m[T](self): pass
            type A[T] = list[T] if T else T
        def f():
            global h
            def h(): pass
            class E:
                def q(self): pass
            return E
        """
    )
    fmap = build_file_map(source, "m")
    code = compile(source, "m.py", "exec", dont_inherit=True)
    names = {c.co_qualname: fmap.code_name(c) for c in iter_code_objects(code)}
    assert names["<genexpr>.<lambda>"].symbol == "py:m.<genexpr>.<lambda>[bbe894b587]"
    assert names["C.<generic parameters of m>"].symbol == "py:m.C.<generic parameters of m>"
    assert names["C.m"].symbol == "py:m.C.m"
    assert names["C.A"].symbol == "py:m.C.A"
    assert names["h"].symbol == "py:m.h"
    assert names["f.<locals>.E.q"].symbol == "py:m.f.<locals>.E.q"
    assert positions(fmap.sites) == ["py:m.C.A/ifexp[0]"]


def test_unknown_code_falls_back_and_classify_never_raises() -> None:
    fmap = build_file_map("def a():\n    return 1\n", "m")

    def stranger(x: int) -> int:
        return 1 if x else 2

    name = fmap.code_name(stranger.__code__)
    assert name == fallback_name(stranger.__code__, "m")
    assert name.symbol.startswith("py:m.test_unknown_code_falls_back")
    assert name.symbol.endswith(".<locals>.stranger")
    for ins in dis.get_instructions(stranger):
        assert fmap.classify(stranger.__code__, ins.offset, ins.offset + 2) in (
            NO_DECISION,
            INTERNAL_JUMP,
        )
    mod = compile("x = 1\n", "m.py", "exec", dont_inherit=True)
    assert fallback_name(mod, "pkg.m") == CodeName("py:pkg.m", "module", 1)
    lam = compile("f = lambda: 1\n", "m.py", "exec", dont_inherit=True).co_consts[0]
    assert fallback_name(lam, "m").kind == "lambda"


def test_build_file_map_raises_syntax_error_only() -> None:
    with pytest.raises(SyntaxError):
        build_file_map("def broken(:\n", "m")
    with pytest.raises(SyntaxError):
        build_file_map("x = 1\0\n", "m")


def test_a_condition_too_deep_to_unparse_is_mapped_and_recorded() -> None:
    """``x + x + ... > 0`` of 1,500 terms compiles, but unparsing it, copying it and
    ``ast.dump`` all meet the recursion limit: its decision keeps a name of its own (the
    flat text of its nodes) and is recorded like any other, where the map raised
    RecursionError before."""
    terms = " + x" * 1500
    source = f"def f(x):\n    if x{terms} > 0:\n        return 1\n    return 0\n"
    other = source.replace("> 0", "> 1")
    run = record(source, calls_of("f", [(1,), (-1,)]))
    [site] = run.fmap.sites
    assert run.counts[site.id] == (1, 1)
    assert site.id != build_file_map(other, "m").sites[0].id


def test_long_predicates_are_cut_to_200_characters() -> None:
    cond = " and ".join(f"variable_{i}" for i in range(60))
    fmap = build_file_map(f"if {cond}:\n    pass\n", "m")
    assert len(fmap.sites[0].predicate) == 200


# --- stability ----------------------------------------------------------------------------

SAMPLE_LINES = textwrap.dedent(
    """
    import os
    LIMIT = 3 if os.sep else 4
    class Store:
        @property
        def size(self):
            return len(self.items) if self.items else 0
        @size.setter
        def size(self, value):
            assert value >= 0, "negative"
            self.items = [item for item in range(value) if item % 2]
        def find(self, key):
            counter = 0
            while counter < LIMIT and key:
                counter += 1
                if key in self.items or not self.items:
                    return counter
            match key:
                case [first, *_] if first:
                    return first
                case _:
                    return None
    def pick(values):
        sort_key = lambda counter: -counter if counter else 0
        other = lambda counter: counter or 1
        return sorted((v for v in values if v), key=sort_key), other
    """
).splitlines()

FILLERS = st.sampled_from(
    [
        "",
        "# a comment",
        "    # indented comment",
        "def unrelated_{n}():\n    if True:\n        return {n}",
    ]
)


def _ids(source: str) -> tuple[list[str], list[tuple[str, str]]]:
    fmap = build_file_map(source, "pkg.sample")
    code = compile(source, "sample.py", "exec", dont_inherit=True)
    symbols = sorted(
        s
        for s in (fmap.code_name(c).symbol for c in iter_code_objects(code))
        if "unrelated_" not in s
    )
    sites = [(s.id, s.predicate) for s in fmap.sites if "unrelated_" not in s.id]
    return symbols, sites


@settings(max_examples=60, deadline=None)
@given(
    inserts=st.lists(st.tuples(st.integers(0, len(SAMPLE_LINES)), FILLERS), max_size=8),
    rename=st.booleans(),
)
def test_ids_survive_blank_lines_comments_new_functions_and_renames(
    inserts: list[tuple[int, str]], rename: bool
) -> None:
    base_symbols, base_sites = _ids("\n".join(SAMPLE_LINES) + "\n")
    lines = list(SAMPLE_LINES)
    for n, (at, filler) in enumerate(sorted(inserts, reverse=True)):
        # Only insert where the next line starts a statement at module level or is inside a
        # block (a blank line/comment is fine anywhere; a def only at module level).
        if filler.startswith("def"):
            nxt = lines[at] if at < len(lines) else ""
            if nxt.startswith(" ") or nxt.startswith("#") or nxt == "":
                continue
            filler = filler.format(n=n)
        lines.insert(at, filler)
    source = "\n".join(lines) + "\n"
    if rename:
        source = source.replace("counter", "tally")
    symbols, sites = _ids(source)
    assert symbols == base_symbols
    if rename:
        sites = [(i, p.replace("tally", "counter")) for i, p in sites]
    assert sites == base_sites


def test_sample_ids_are_the_expected_ones() -> None:
    symbols, sites = _ids("\n".join(SAMPLE_LINES) + "\n")
    assert "py:pkg.sample.Store.size" in symbols and "py:pkg.sample.Store.size#1" in symbols
    assert "py:pkg.sample.pick.<locals>.<lambda>[f1ce22f4ba]" in symbols
    assert "py:pkg.sample.pick.<locals>.<lambda>[27c5af0322]" in symbols
    fmap = build_file_map("\n".join(SAMPLE_LINES) + "\n", "pkg.sample")
    assert [i for i, _ in sites] == [s.id for s in fmap.sites]
    assert all(re.fullmatch(r"py:[^/]+/[a-z]+\[[0-9a-f]{10}\](#\d+)?", i) for i, _ in sites)
    assert positions(fmap.sites) == [
        "py:pkg.sample/ifexp[0]",
        "py:pkg.sample.Store.size/ifexp[0]",
        "py:pkg.sample.Store.size#1/assert[0]",
        "py:pkg.sample.Store.size#1/comprehension[0]",
        "py:pkg.sample.Store.find/while[0]",
        "py:pkg.sample.Store.find/if[0]",
        "py:pkg.sample.Store.find/match[0]",
        "py:pkg.sample.Store.find/match[1]",
        "py:pkg.sample.pick.<locals>.<lambda>[f1ce22f4ba]/ifexp[0]",
        "py:pkg.sample.pick.<locals>.<genexpr>[66baa6afd4]/comprehension[0]",
    ]
