"""The mapping of base code onto head code (#46, docs/diffing.md "Identity by mapping"): what
it pairs across two versions, and what it leaves apart."""

from __future__ import annotations

import textwrap

from diffgenome.analysis.diff.mapping import CodeMapping, Version, map_code, translated
from diffgenome.protocol.naming import SourceNames, parse_source


def version(source: str, module: str = "m") -> Version:
    source = textwrap.dedent(source)
    tree = parse_source(source, module)
    return Version(tree, SourceNames(source, module, tree, keep_parts=True))


def mapping(base: str, head: str) -> CodeMapping:
    return map_code([(version(base), version(head))])


def sites_of(source: str, symbol: str) -> dict[str, str]:
    """Predicate -> site id of ``symbol``'s decisions."""
    return {s.predicate: s.id for s in version(source).names.sites if s.symbol == symbol}


def test_an_inserted_elif_leaves_the_later_branches_paired_with_themselves() -> None:
    base = """
        def f(key):
            if key == "a":
                return 1
            elif key == "b":
                return 2
            elif key == "c":
                return 3
            return 0
    """
    head = base.replace(
        'elif key == "b":',
        'elif key == "amp":\n                return 9\n            elif key == "b":',
    )
    found = mapping(base, head)
    old, new = sites_of(base, "py:m.f"), sites_of(head, "py:m.f")
    assert old["key == 'b'"] != new["key == 'b'"]  # renamed by its chain within a version
    assert found.site(old["key == 'b'"]) == new["key == 'b'"]
    assert found.site(old["key == 'c'"]) == new["key == 'c'"]
    assert new["key == 'amp'"] not in found.sites.values()


def test_a_renamed_callee_pairs_the_generator_and_the_decision_below() -> None:
    base = """
        class P:
            def _line(self, item):
                return item.price * item.qty

            def total(self, items):
                total = sum(self._line(item) for item in items)
                if total > LIMIT:
                    return total * 9 // 10
                return total
    """
    head = base.replace("_line", "_line_total").replace("total = sum", "amount = sum")
    head = head.replace("if total >", "if amount >").replace(
        "return total * 9", "return amount * 9"
    )
    head = head.replace("        return total\n", "        return amount\n")
    found = mapping(base, head)
    assert found.symbols["py:m.P._line"] == "py:m.P._line_total"
    [(old_gen, new_gen)] = [(o, n) for o, n in found.symbols.items() if "<genexpr>" in o]
    assert old_gen != new_gen and "<genexpr>" in new_gen
    old, new = sites_of(base, "py:m.P.total"), sites_of(head, "py:m.P.total")
    assert found.site(old["total > LIMIT"]) == new["amount > LIMIT"]


def test_a_condition_edited_in_place_is_the_same_decision() -> None:
    base = "def f(x):\n    if x > 0:\n        return 1\n    return 2\n"
    head = base.replace("x > 0", "x >= 0")
    found = mapping(base, head)
    assert found.site(sites_of(base, "py:m.f")["x > 0"]) == sites_of(head, "py:m.f")["x >= 0"]


def test_statements_merged_keep_their_decisions() -> None:
    """semver 3.0.3: two assignments merged into one, the comprehension's condition edited;
    aligned by kind alone, the first assignment took the place of the merged one."""
    base = """
        def nat(a, b):
            a, b = a or "", b or ""
            a_parts, b_parts = a.split("."), b.split(".")
            a_parts = [int(x) if re.match(r"^\\d+$", x) else x for x in a_parts]
            return a_parts
    """
    head = """
        def nat(a, b):
            a_parts = [int(x) if x.isdigit() else x for x in (a or "").split(".")]
            return a_parts
    """
    found = mapping(base, head)
    old = sites_of(base, "py:m.nat")
    new = sites_of(head, "py:m.nat")
    assert found.site(old["re.match('^\\\\d+$', x)"]) == new["x.isdigit()"]


def test_a_helper_renamed_and_hoisted_is_paired_by_its_code() -> None:
    base = """
        def parse(argv):
            def isanumber(x):
                try:
                    float(x)
                    return True
                except ValueError:
                    return False
            return [a for a in argv if not isanumber(a)]
    """
    head = """
        def _is_number(x):
            try:
                float(x)
                return True
            except ValueError:
                return False

        def parse(argv):
            return [a for a in argv if not _is_number(a)]
    """
    assert mapping(base, head).symbols == {"py:m.parse.<locals>.isanumber": "py:m._is_number"}


def test_unrelated_or_ambiguous_code_is_not_paired() -> None:
    """A removed function pairs only with an added one that does the same, and only where
    no other candidate is nearly as good."""
    base = "def old(x):\n    return x.strip().lower()\n"
    unrelated = "def new(values):\n    for v in values:\n        print(v, sep=',')\n"
    assert mapping(base, unrelated).symbols == {}
    twins = (
        "def one(x):\n    return x.strip().lower()\n\ndef two(x):\n    return x.strip().lower()\n"
    )
    assert mapping(base, twins).symbols == {}


def test_a_look_alike_keeps_its_own_name() -> None:
    """packaging: ``_operators["in"]`` made to test ``not in`` reads like ``_operators["not
    in"]``; identity comes first, so that one is never taken for the other."""
    base = """
        OPS = {
            "in": lambda lhs, rhs: lhs in rhs,
            "not in": lambda lhs, rhs: lhs not in rhs,
        }
    """
    head = base.replace(
        '"in": lambda lhs, rhs: lhs in rhs', '"in": lambda lhs, rhs: lhs not in rhs'
    )
    found = mapping(base, head)
    lambdas = {s.symbol for s in version(head).names.scopes if "<lambda>" in s.symbol}
    not_in = [s for s in lambdas if s in {x.symbol for x in version(base).names.scopes}]
    assert len(not_in) == 1  # the "not in" lambda kept its name
    assert not_in[0] not in found.symbols  # and is no one's partner but its own
    assert not_in[0] not in found.symbols.values()


def test_translated_reads_base_in_head_names() -> None:
    found = CodeMapping(symbols={"py:m.a": "py:m.b"}, sites={"py:m.a/if[1]": "py:m.b/if[2]"})
    document = {
        "tests": [
            {
                "id": "t",
                "phases": {
                    "call": {
                        "nodes": [
                            {"id": 0, "symbol": "py:m.a", "exits": {"raised:py:m.a": 1}},
                            {"id": 1, "type": "substitution", "claimed_target": "py:m.a"},
                        ],
                        "branches": [{"node": 0, "site": "py:m.a/if[1]", "symbol": "py:m.a"}],
                    }
                },
            }
        ],
        "symbols": [{"id": "py:m.a"}],
    }
    out = translated(document, found)
    phase = out["tests"][0]["phases"]["call"]
    assert phase["nodes"][0]["symbol"] == "py:m.b"
    assert phase["nodes"][0]["exits"] == {"raised:py:m.b": 1}
    assert phase["nodes"][1]["claimed_target"] == "py:m.b"
    assert phase["branches"][0] == {"node": 0, "site": "py:m.b/if[2]", "symbol": "py:m.b"}
    assert out["symbols"] == [{"id": "py:m.b"}]
    assert document["tests"][0]["phases"]["call"]["nodes"][0]["symbol"] == "py:m.a"  # a copy
