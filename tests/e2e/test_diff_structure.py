"""End-to-end: behaviour told apart from structure (#23, docs/diffing.md "Structure").

One real git repository holds ``tests/projects/orders`` and a branch per pull request: the
five textbook refactors (extract a helper, inline one, rename a private method, move a method
onto the model class, rewrite a loop over a generator: every value a test can reach is
identical), two changes the tests miss (an int default that became a float; a receipt's lines
reversed) and, as on tabulate, a helper extracted together with a one-line fix elsewhere.
Each is diffed against the base with ``diffgenome diff`` as a reviewer runs it. Before this,
every refactor was ``changed`` (3 to 6 tests each) and failed the default gate.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import cli, cli_json, git_in, make_project, run_pytest

# (file, old text, new text): each edit must match exactly once.
Edit = tuple[str, str, str]

EXTRACT = [
    (
        "orders/pricing.py",
        "            if line.qty > 0:\n                total += line.price * line.qty\n",
        "            if line.qty > 0:\n                total += self._line_amount(line)\n",
    ),
    (
        "orders/pricing.py",
        "    def total(self, order: Order) -> int:",
        "    def _line_amount(self, line) -> int:\n        return line.price * line.qty\n\n"
        "    def total(self, order: Order) -> int:",
    ),
]
REFACTORS: dict[str, list[Edit]] = {
    "extract-helper": EXTRACT,
    "inline-helper": [
        (
            "orders/pricing.py",
            "        return subtotal + self._tax(subtotal)\n\n    def _tax(self, amount):\n"
            "        return amount * self.tax_percent // 100\n",
            "        return subtotal + subtotal * self.tax_percent // 100\n",
        )
    ],
    "rename-private": [
        ("orders/pricing.py", "self._tax(subtotal)", "self._tax_on(subtotal)"),
        ("orders/pricing.py", "    def _tax(self, amount):", "    def _tax_on(self, amount):"),
    ],
    "move-to-model": [
        (
            "orders/pricing.py",
            "    def subtotal(self, order: Order) -> int:\n        total = 0\n"
            "        for line in order.lines:\n            if line.qty > 0:\n"
            "                total += line.price * line.qty\n        return total\n",
            "    def subtotal(self, order: Order) -> int:\n        return order.subtotal()\n",
        ),
        (
            "orders/model.py",
            "    def add(self, sku: str, price: int, qty: int = 1) -> Order:",
            "    def subtotal(self) -> int:\n        total = 0\n        for line in self.lines:\n"
            "            if line.qty > 0:\n                total += line.price * line.qty\n"
            "        return total\n\n"
            "    def add(self, sku: str, price: int, qty: int = 1) -> Order:",
        ),
    ],
    "loop-to-generator": [
        (
            "orders/pricing.py",
            "        total = 0\n        for line in order.lines:\n            if line.qty > 0:\n"
            "                total += line.price * line.qty\n        return total\n",
            "        return sum(line.price * line.qty for line in order.lines if line.qty > 0)\n",
        )
    ],
}
MISSED_BY_TESTS: dict[str, list[Edit]] = {
    # total() becomes a float: 1260.0 == 1260, so every assertion still holds.
    "float-default": [("orders/pricing.py", "tax_percent=20)", "tax_percent=20.0)")],
    # the receipt's rows in reverse: the test only looks for the total line.
    "reversed-lines": [
        ("orders/pricing.py", "for line in order.lines]", "for line in reversed(order.lines)]")
    ],
}
# tabulate's pull request: a helper extracted, and a one-line fix elsewhere (free lines are
# no longer listed on the receipt).
EXTRACT_AND_FIX = [
    *EXTRACT,
    ("orders/pricing.py", "for line in order.lines]", "for line in order.lines if line.qty]"),
]


# On top of loop-to-generator: the generator's filter lets the free line through. It adds 0,
# so every result a test sees is equal; what the generator yields is not. A lambda or
# generator expression is named by its content, so this reads as one removed and one added:
# the same code, modified, never contracted.
GENERATOR_MUTANT = [
    (
        "orders/pricing.py",
        "for line in order.lines if line.qty > 0)",
        "for line in order.lines if line.qty >= 0)",
    )
]


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository: ``main`` is the project as it is, one branch per variant."""
    repo = make_project(tmp_path_factory.mktemp("structure"), {}, base="orders")
    git_in(repo, "branch", "-M", "main")
    variants = {**REFACTORS, **MISSED_BY_TESTS, "extract-and-fix": EXTRACT_AND_FIX}
    for name, edits in [*variants.items(), ("generator-mutant", GENERATOR_MUTANT)]:
        start = "loop-to-generator" if name == "generator-mutant" else "main"
        git_in(repo, "checkout", "-q", "-b", name, start)
        for file, old, new in edits:
            path = repo / file
            text = path.read_text()
            assert text.count(old) == 1, (name, file, old)
            path.write_text(text.replace(old, new))
        git_in(repo, "commit", "-qam", name)
    git_in(repo, "checkout", "-q", "main")
    # Eight diffs and their confirmations make more runs than the store's default cap keeps;
    # keep them all, so that no diff loses the run it reuses to another's cap (#25.2).
    assert run_pytest(repo, "-q", "--genome").returncode == 0
    assert cli(repo, "prune", "--cap", "0").returncode == 0
    return repo


def _diff(repo: Path, tmp_path: Path, head: str, *extra: str) -> tuple[int, dict[str, Any]]:
    return cli_json(repo, tmp_path, "diff", "main", head, *extra)


def _statuses(document: dict[str, Any]) -> dict[str, str]:
    return {test["id"].rpartition("::")[2]: test["status"] for test in document["tests"]}


@pytest.mark.parametrize("variant", sorted(REFACTORS))
def test_a_pure_refactor_is_restructured_and_passes_the_gate(
    orders: Path, tmp_path: Path, variant: str
) -> None:
    code, document = _diff(orders, tmp_path, variant)
    statuses = _statuses(document)
    assert "changed" not in statuses.values(), document["tests"]
    assert "unverified" not in statuses.values(), document["tests"]
    restructured = [t for t in document["tests"] if t["status"] == "restructured"]
    assert restructured, statuses
    for test in restructured:
        assert test["structure"], test  # a line says what moved
    assert document["summary"]["restructured"] == len(restructured)
    assert code == 0, document["summary"]
    again, _ = _diff(orders, tmp_path, variant, "--fail-on", "restructured")
    assert again == 1


def test_each_refactor_says_what_moved(orders: Path, tmp_path: Path) -> None:
    said = {}
    for variant in ("extract-helper", "inline-helper", "rename-private", "move-to-model"):
        _, document = _diff(orders, tmp_path, variant)
        said[variant] = {line for t in document["tests"] for line in t["structure"]}
    assert said["extract-helper"] == {
        "`orders.pricing.Pricing._line_amount` extracted from `orders.pricing.Pricing.subtotal`"
    }
    assert said["inline-helper"] == {
        "`orders.pricing.Pricing._tax` inlined into `orders.pricing.Pricing.total`"
    }
    assert said["rename-private"] == {
        "`orders.pricing.Pricing._tax` renamed to `orders.pricing.Pricing._tax_on` (the same "
        "code), called by `orders.pricing.Pricing.total`"
    }
    assert said["move-to-model"] == {
        "`orders.model.Order.subtotal` extracted from `orders.pricing.Pricing.subtotal`"
    }


@pytest.mark.parametrize(
    ("variant", "changed"),
    [
        # every test that prices an order sees the float
        (
            "float-default",
            {
                "test_checkout_mails_a_receipt",
                "test_nothing_to_pay_sends_nothing",
                "test_receipt_names_the_total",
                "test_subtotal_skips_empty_lines",
                "test_total_adds_tax",
                "test_total_of_an_empty_order",
            },
        ),
        # only the receipt of several lines is reordered (the mocked mailer gets one line)
        ("reversed-lines", {"test_receipt_names_the_total"}),
    ],
)
def test_a_change_the_tests_miss_stays_changed(
    orders: Path, tmp_path: Path, variant: str, changed: set[str]
) -> None:
    code, document = _diff(orders, tmp_path, variant)
    statuses = _statuses(document)
    assert {name for name, status in statuses.items() if status == "changed"} == changed
    assert all(test["outcome"]["head"] == "passed" for test in document["tests"])
    assert code == 1


def test_a_fix_beside_an_extraction_is_the_change_and_the_extraction_is_structure(
    orders: Path, tmp_path: Path
) -> None:
    code, document = _diff(orders, tmp_path, "extract-and-fix")
    statuses = _statuses(document)
    assert statuses["test_receipt_names_the_total"] == "changed"
    assert {name for name, status in statuses.items() if status == "changed"} == {
        "test_receipt_names_the_total"
    }
    assert code == 1
    [fixed] = [t for t in document["tests"] if t["status"] == "changed"]
    # The fix is the change; the extraction is a line of structure, not a call added.
    kinds = {(c["kind"], c["symbol"]) for c in fixed["changes"]}
    assert ("result_changed", "py:orders.pricing.Pricing.receipt") in kinds, kinds
    assert not any(kind == "call_added" for kind, _ in kinds), kinds
    # In a test whose behaviour changed, new code is named as new (it may do something new).
    assert fixed["structure"] == [
        "new `orders.pricing.Pricing._line_amount`, called by `orders.pricing.Pricing.subtotal`"
    ]
    # The causes: the fix first, then the extraction once, with every test that ran it.
    causes = document["causes"]
    assert causes[0]["symbol"] == "py:orders.pricing.Pricing.receipt", causes
    [moved] = [c for c in causes if c["kind"] == "structure"]
    assert moved["summary"] == (
        "`orders.pricing.Pricing._line_amount` extracted from `orders.pricing.Pricing.subtotal`"
    )
    assert moved["tests"] == 4 and moved["statuses"] == {"changed": 1, "restructured": 3}
    others = {name for name, status in statuses.items() if status == "restructured"}
    assert "test_total_adds_tax" in others


def test_a_changed_generator_expression_is_behaviour_not_structure(
    orders: Path, tmp_path: Path
) -> None:
    code, document = cli_json(orders, tmp_path, "diff", "loop-to-generator", "generator-mutant")
    statuses = _statuses(document)
    # The tests whose order has the free line: the generator now yields one more value.
    assert statuses["test_subtotal_skips_empty_lines"] == "changed", document["tests"]
    assert "restructured" not in statuses.values(), statuses
    assert code == 1


CONVERT = {
    "conv/__init__.py": "",
    "conv/fields.py": """
        def convert(pairs, converters):
            out = []
            for name, text in pairs:
                out.append(converters[name](text.strip()))
            return out
    """,
    "tests/test_fields.py": """
        from conv.fields import convert


        def test_two_callbacks():
            def number(text):
                return int(text)

            def word(text):
                return text.upper()

            got = convert([("n", " 4 "), ("w", " Ab ")], {"n": number, "w": word})
            assert got == [4, "AB"]
    """,
}


def test_an_extraction_above_two_test_callbacks_is_structure(tmp_path: Path) -> None:
    """A function that calls two callbacks the test made (two stand-ins that look alike:
    neither claims a target) gets a helper extracted (parse 1.20.2's ``_split_field``, whose
    caller runs its converters). The contraction merged the two stand-ins into one, could not
    do it exactly and gave up: the refactor was ``changed``."""
    repo = make_project(tmp_path, CONVERT, name="conv")
    git_in(repo, "branch", "-M", "main")
    git_in(repo, "checkout", "-q", "-b", "extract")
    path = repo / "conv" / "fields.py"
    call = "        out.append(converters[name](text.strip()))\n"
    assert path.read_text().count(call) == 1
    path.write_text(
        path.read_text().replace(call, "        out.append(_one(converters, name, text))\n")
        + "\n\ndef _one(converters, name, text):\n    return converters[name](text.strip())\n"
    )
    git_in(repo, "commit", "-qam", "extract _one")
    code, document = cli_json(repo, tmp_path, "diff", "main", "extract")
    assert _statuses(document)["test_two_callbacks"] == "restructured", document["tests"]
    assert code == 0
    # The same extraction that also lower-cases what a callback is given: the test still
    # passes (word upper-cases it), but a callback receives another value: changed.
    git_in(repo, "checkout", "-q", "-b", "extract-lower")
    path.write_text(
        path.read_text().replace("[name](text.strip())", "[name](text.strip().lower())")
    )
    git_in(repo, "commit", "-qam", "lower")
    code, document = cli_json(repo, tmp_path, "diff", "main", "extract-lower")
    [test] = [t for t in document["tests"] if t["id"].endswith("test_two_callbacks")]
    assert test["status"] == "changed" and test["outcome"]["head"] == "passed", test
    assert [change["kind"] for change in test["changes"]] == ["stand_in_changed"], test
    assert code == 1


HEXES = {
    "hexes/__init__.py": "",
    "hexes/norm.py": """
        def normalize(digits):
            if len(digits) == 3:
                digits = "".join(2 * s for s in digits)
            return "#" + digits.lower()
    """,
    "tests/test_norm.py": """
        from hexes.norm import normalize


        def test_short():
            assert normalize("0aF") == "#00aaff"


        def test_long():
            assert normalize("00AAFF") == "#00aaff"
    """,
}


def test_a_generator_expression_that_moves_with_an_extraction_is_that_extraction(
    tmp_path: Path,
) -> None:
    """webcolors' ``_expand_shorthand`` taken out of ``normalize_hex`` with the generator
    expression in it: the expression is named by its content and its function, so it read as
    one removed from ``normalize_hex`` and one added in it, a second cause beside the
    extraction for the tests that run it. It is the extraction's code: one line, one cause."""
    repo = make_project(tmp_path, HEXES, name="hexes")
    git_in(repo, "branch", "-M", "main")
    git_in(repo, "checkout", "-q", "-b", "extract")
    path = repo / "hexes" / "norm.py"
    path.write_text(
        'def normalize(digits):\n    return "#" + _expand(digits).lower()\n\n\n'
        "def _expand(digits):\n    if len(digits) == 3:\n"
        '        return "".join(2 * s for s in digits)\n    return digits\n'
    )
    git_in(repo, "commit", "-qam", "extract _expand")
    code, document = cli_json(repo, tmp_path, "diff", "main", "extract")
    tests = {t["id"].rpartition("::")[2]: t for t in document["tests"]}
    for name in ("test_short", "test_long"):
        assert tests[name]["status"] == "restructured", tests[name]
        assert tests[name]["structure"] == [
            "`hexes.norm._expand` extracted from `hexes.norm.normalize`"
        ], tests[name]
    assert [cause["summary"] for cause in document["causes"]] == [
        "`hexes.norm._expand` extracted from `hexes.norm.normalize`"
    ]
    assert code == 0


# A helper that binds the local a decision tests (``with self._open() as lines``) is renamed,
# and, in the same pull request, what one test passes in changes: that test is ``changed`` by
# its value, and the decisions below the renamed call (taken as often as before), whose ids
# say how ``lines`` was bound, are not a second change beside the structure line.
READER = {
    "reader/__init__.py": "",
    "reader/core.py": """
        import contextlib
        import io


        class Reader:
            def __init__(self, text):
                self.text = text

            @contextlib.contextmanager
            def _open(self):
                yield io.StringIO(self.text)

            def keys(self):
                found = []
                with self._open() as lines:
                    for line in lines:
                        if "=" in line:
                            found.append(line.split("=", 1)[0])
                return found
    """,
    "tests/test_reader.py": """
        from reader.core import Reader

        TEXT = "a=1\\nb=2\\n"


        def test_keys():
            assert Reader(TEXT).keys()[0] == "a"
    """,
}


def test_a_renamed_helper_s_decisions_are_not_listed_beside_a_real_change(
    tmp_path: Path,
) -> None:
    repo = make_project(tmp_path, READER)
    git_in(repo, "branch", "-M", "main")
    git_in(repo, "checkout", "-q", "-b", "pr")
    core = repo / "reader" / "core.py"
    core.write_text(core.read_text().replace("_open(", "_open_text("))
    test = repo / "tests" / "test_reader.py"
    test.write_text(test.read_text().replace("Reader(TEXT)", "Reader(TEXT.upper())"))
    test.write_text(test.read_text().replace('== "a"', '== "A"'))
    git_in(repo, "commit", "-qam", "rename the helper; the test's text in capitals")
    _, document = _diff(repo, tmp_path, "HEAD")
    [entry] = [t for t in document["tests"] if t["id"].endswith("test_keys")]
    assert entry["status"] == "changed"
    assert entry["structure"] == [
        "`reader.core.Reader._open` renamed to `reader.core.Reader._open_text` (the same code), "
        "called by `reader.core.Reader.keys`"
    ]
    kinds = [change["kind"] for change in entry["changes"]]
    assert "branch_changed" not in kinds, entry["changes"]
    assert kinds, entry  # the test's own change: the text it passes, the keys found


BOUNDS = {
    "bounds/__init__.py": "",
    "bounds/validate.py": """
        class Invalid(Exception):
            pass


        class Range:
            checks = 0

            def __init__(self, low=None, high=None, inclusive=True):
                self.low = low
                self.high = high
                self.inclusive = inclusive

            def __call__(self, value):
                if self.low is not None and (
                    value < self.low if self.inclusive else value <= self.low
                ):
                    raise Invalid(f"below {self.low}")
                if self.high is not None and (
                    value > self.high if self.inclusive else value >= self.high
                ):
                    raise Invalid(f"above {self.high}")
                return value
    """,
    "tests/test_range.py": """
        import pytest

        from bounds.validate import Invalid, Range


        def test_rejects():
            for bounds, value in (((0, 5), -1), ((0, 5), 6), ((1, None), 0), ((None, 2), 3)):
                with pytest.raises(Invalid):
                    Range(*bounds)(value)


        def test_accepts():
            assert Range(0, 5)(3) == 3
            assert Range(0, 5, inclusive=False)(4) == 4
    """,
}


def test_predicates_extracted_from_a_validator_that_raises_are_structure(tmp_path: Path) -> None:
    """marshmallow 3.23's ``Range.__call__`` with its bound checks extracted as methods
    (``self._below(value)``): the checks return, then the caller raises. The caller left no
    exit state and read the bounds itself; the helpers' readings of them were listed as
    changes, so the refactor was ``changed`` and failed the gate."""
    repo = make_project(tmp_path, BOUNDS, name="bounds")
    git_in(repo, "branch", "-M", "main")
    git_in(repo, "checkout", "-q", "-b", "extract")
    path = repo / "bounds" / "validate.py"
    text = path.read_text()
    below = (
        "        if self.low is not None and (\n"
        "            value < self.low if self.inclusive else value <= self.low\n"
        "        ):\n"
    )
    above = (
        "        if self.high is not None and (\n"
        "            value > self.high if self.inclusive else value >= self.high\n"
        "        ):\n"
    )
    assert text.count(below) == 1 and text.count(above) == 1
    text = text.replace(below, "        if self._below(value):\n").replace(
        above, "        if self._above(value):\n"
    )
    text += (
        "\n    def _below(self, value):\n"
        "        if self.low is None:\n            return False\n"
        "        return value < self.low if self.inclusive else value <= self.low\n"
        "\n    def _above(self, value):\n"
        "        if self.high is None:\n            return False\n"
        "        return value > self.high if self.inclusive else value >= self.high\n"
    )
    path.write_text(text)
    git_in(repo, "commit", "-qam", "extract the bound checks")
    code, document = cli_json(repo, tmp_path, "diff", "main", "extract")
    statuses = _statuses(document)
    assert statuses["test_rejects"] == "restructured", document["tests"]
    assert statuses["test_accepts"] == "restructured", document["tests"]
    assert code == 0
    # The same extraction, but the helper also counts its checks on the validator: every
    # test still passes, and the count it leaves is state the caller now leaves: changed.
    git_in(repo, "checkout", "-q", "-b", "extract-count")
    path.write_text(
        path.read_text().replace(
            "    def _below(self, value):\n",
            "    def _below(self, value):\n        self.checks += 1\n",
        )
    )
    git_in(repo, "commit", "-qam", "remember the check")
    code, document = cli_json(repo, tmp_path, "diff", "main", "extract-count")
    [test] = [t for t in document["tests"] if t["id"].endswith("test_accepts")]
    assert test["status"] == "changed" and test["outcome"]["head"] == "passed", test
    state = [change for change in test["changes"] if change["kind"] == "state_changed"]
    targets = {fact["target"] for change in state for fact in change["head"]}
    assert "self.checks" in targets, test["changes"]
    assert code == 1


CHAIN = {
    "chain/__init__.py": "",
    "chain/valid.py": """
        class All:
            def __init__(self, *validators):
                self.validators = validators

            def __call__(self, value):
                return self._exec((check for check in self.validators), value)

            def _exec(self, checks, value):
                for check in checks:
                    value = check(value)
                return value
    """,
    "tests/test_valid.py": """
        from chain.valid import All


        def test_chain():
            assert All(str.strip, str.upper)(" a ") == "A"
    """,
}


def test_a_private_method_renamed_under_a_generator_passed_to_it_is_structure(
    tmp_path: Path,
) -> None:
    """voluptuous 0.15's ``_exec`` renamed ``_execute``: the generator expression passed to
    it is named by where it is bound too, so it was one removed and one added generator,
    never contracted (its values are behaviour), and the rename was ``changed``."""
    repo = make_project(tmp_path, CHAIN, name="chain")
    git_in(repo, "branch", "-M", "main")
    git_in(repo, "checkout", "-q", "-b", "rename")
    path = repo / "chain" / "valid.py"
    assert path.read_text().count("_exec(") == 2
    path.write_text(path.read_text().replace("_exec(", "_execute("))
    git_in(repo, "commit", "-qam", "rename _exec")
    code, document = cli_json(repo, tmp_path, "diff", "main", "rename")
    assert _statuses(document)["test_chain"] == "restructured", document["tests"]
    assert code == 0


def test_a_method_renamed_and_edited_is_said_so_not_inlined_and_extracted(
    orders: Path, tmp_path: Path
) -> None:
    """voluptuous' ``Any._exec`` became ``Any._execute`` with ``>`` made ``>=``: the report
    said the old method was inlined into its caller and the new one extracted from it, which
    nobody did."""
    git_in(orders, "checkout", "-q", "-b", "rename-and-edit", "main")
    try:
        path = orders / "orders" / "pricing.py"
        text = path.read_text()
        text = text.replace("self._tax(subtotal)", "self._tax_on(subtotal)")
        text = text.replace(
            "    def _tax(self, amount):\n        return amount * self.tax_percent // 100\n",
            "    def _tax_on(self, amount):\n"
            "        return (amount * self.tax_percent + 50) // 100\n",
        )
        path.write_text(text)
        git_in(orders, "commit", "-qam", "rename _tax and round it")
    finally:
        git_in(orders, "checkout", "-q", "main")
    _, document = _diff(orders, tmp_path, "rename-and-edit")
    said = {line for test in document["tests"] for line in test["structure"]}
    assert said == {
        "`orders.pricing.Pricing._tax` renamed to `orders.pricing.Pricing._tax_on` (its code "
        "edited), called by `orders.pricing.Pricing.total`"
    }, said


SIGNER = """
class Signer:
    def now(self):
        return 100

    def unsign(self, value, max_age=None):
        if max_age is not None:
            age = self.now() - value
            if age > max_age:
                raise ValueError("expired")
        return value
"""
SIGNER_EXTRACTED = """
class Signer:
    def now(self):
        return 100

    def _check_age(self, value, max_age):
        age = self.now() - value
        if age > max_age:
            raise ValueError("expired")

    def unsign(self, value, max_age=None):
        if max_age is not None:
            self._check_age(value, max_age)
        return value
"""


def test_a_method_named_on_one_side_only_is_no_change_of_a_test_that_never_calls_it(
    tmp_path: Path,
) -> None:
    """itsdangerous: ``unsign``'s age checks extracted as ``self._check_age``. ``unsign``
    names ``self._check_age`` where it named ``self.now``, and its state facts said so
    (``class attribute`` on one side only): 91 tests that never check an age were
    ``changed``. They ran changed code and did the same: ``touched``."""
    repo = make_project(
        tmp_path,
        {
            "sig/__init__.py": "",
            "sig/core.py": SIGNER,
            "tests/test_sig.py": """
                import pytest

                from sig.core import Signer


                def test_plain():
                    assert Signer().unsign(5) == 5


                def test_expired():
                    with pytest.raises(ValueError):
                        Signer().unsign(5, max_age=10)
            """,
        },
    )
    (repo / "sig" / "core.py").write_text(SIGNER_EXTRACTED)
    git_in(repo, "commit", "-qam", "extract the age check")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    statuses = _statuses(document)
    assert statuses == {
        "<import>": "unchanged",
        "test_plain": "touched",
        "test_expired": "restructured",
    }, document["tests"]
    assert code == 0


def test_an_edited_decision_no_test_tells_apart_is_a_gap(tmp_path: Path) -> None:
    """itsdangerous: ``age > max_age`` made ``age >= max_age`` changes nothing for a test
    that is not at the boundary: the tests were quietly ``touched``, and the first screen
    said nothing of the edit. It is a gap of the changed code now; a test at the boundary,
    which does behave otherwise, takes it away."""
    tests = """
        import pytest

        from sig.core import Signer


        def test_expired():
            with pytest.raises(ValueError):
                Signer().unsign(5, max_age=10)


        def test_fresh():
            assert Signer().unsign(95, max_age=10) == 95
    """
    repo = make_project(
        tmp_path, {"sig/__init__.py": "", "sig/core.py": SIGNER, "tests/test_sig.py": tests}
    )
    (repo / "sig" / "core.py").write_text(SIGNER.replace("age > max_age", "age >= max_age"))
    git_in(repo, "commit", "-qam", "an age of max_age has expired")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    [entry] = [c for c in document["code_changes"] if c["symbol"] == "py:sig.core.Signer.unsign"]
    edit = (
        "decision edited, and no test that reaches it behaves otherwise: "
        "`age > max_age` → `age >= max_age`"
    )
    assert edit in entry["gaps"], entry["gaps"]
    screen = cli(repo, "diff", "HEAD~1", "HEAD")
    assert edit in screen.stdout, screen.stdout
    # A test at the boundary: it behaves otherwise (its outcome changes), so no gap.
    boundary = (
        tests
        + """

        def test_boundary():
            assert Signer().unsign(90, max_age=10) == 90
    """
    )
    (repo / "tests" / "test_sig.py").write_text(textwrap.dedent(boundary))
    (repo / "sig" / "core.py").write_text(SIGNER)
    git_in(repo, "commit", "-qam", "a boundary test")
    (repo / "sig" / "core.py").write_text(SIGNER.replace("age > max_age", "age >= max_age"))
    git_in(repo, "commit", "-qam", "the edit again")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", codes=(3,))
    [entry] = [c for c in document["code_changes"] if c["symbol"] == "py:sig.core.Signer.unsign"]
    assert not any(gap.startswith("decision edited") for gap in entry["gaps"]), entry["gaps"]


def test_a_condition_that_only_calls_a_renamed_method_is_no_edit(tmp_path: Path) -> None:
    """xmltodict's ``_should_force_list`` renamed ``_forced_list`` (the same code): its
    caller's ``if self._should_force_list(key, data):`` became ``if self._forced_list(key,
    data):``, and the first screen listed it as "decision edited, and no test that reaches
    it behaves otherwise" under a diff that was otherwise all ``restructured``. The caller
    changed only by naming renamed code anew, and so did its condition."""
    source = """
        class Box:
            def __init__(self):
                self.items = {}

            def put(self, key, value):
                if self._wanted(key):
                    self.items[key] = value
                return self

            def _wanted(self, key):
                return not key.startswith("_")
    """
    tests = """
        from box.core import Box


        def test_put():
            assert Box().put("a", 1).put("_b", 2).items == {"a": 1}
    """
    repo = make_project(
        tmp_path, {"box/__init__.py": "", "box/core.py": source, "tests/test_box.py": tests}
    )
    renamed = textwrap.dedent(source).replace("_wanted", "_kept")
    (repo / "box" / "core.py").write_text(renamed)
    git_in(repo, "commit", "-qam", "rename _wanted")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert _statuses(document)["test_put"] == "restructured", document["tests"]
    assert code == 0
    gaps = {c["symbol"]: c["gaps"] for c in document["code_changes"]}
    assert gaps.get("py:box.core.Box.put") == [], gaps


def test_a_module_that_became_a_package_is_compared_with_itself(tmp_path: Path) -> None:
    """inflection 0.5.0 → 0.5.1: ``inflection.py`` became ``inflection/__init__.py``, with
    ``__version__`` edited. Every symbol read as removed and added again, and the one edit
    showed nowhere: the first screen named only ``setup.py``."""
    words = """
        __version__ = "0.5.0"


        def plural(word):
            return word if word.endswith("s") else word + "s"
    """
    tests = "from words import plural\n\n\ndef test_plural():\n    assert plural('cat') == 'cats'\n"
    repo = make_project(tmp_path, {"words.py": words, "tests/test_words.py": tests})
    (repo / "words").mkdir()
    git_in(repo, "mv", "words.py", "words/__init__.py")
    init = repo / "words" / "__init__.py"
    init.write_text(init.read_text().replace("0.5.0", "0.5.1"))
    git_in(repo, "commit", "-qam", "a package")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert code == 0
    assert {c["symbol"]: c["change"] for c in document["code_changes"]} == {
        "py:words": "modified"
    }, document["code_changes"]
    screen = cli(repo, "diff", "HEAD~1", "HEAD")
    assert "py:words (modified)" in screen.stdout, screen.stdout


def test_a_renamed_local_is_no_edit_and_no_gap(tmp_path: Path) -> None:
    """inflection: ``for inflection in UNCOUNTABLES`` renamed ``for uncountable in ...`` (a
    local in a decision's condition; here a list and a comprehension's variable). The genomes
    were the same, every test ``unchanged``, and the report still listed the function under
    "changed code not fully exercised": code edited, no test tells the edit apart. No test
    can: the code is the same."""
    words = """
        UNCOUNTABLES = {"sheep", "fish"}


        def singularize(word):
            kept = [w for w in UNCOUNTABLES if word.endswith(w)]
            if kept:
                return word
            return word[:-1] if word.endswith("s") else word
    """
    tests = """
        from lang.words import singularize


        def test_sheep():
            assert singularize("sheep") == "sheep"


        def test_posts():
            assert singularize("posts") == "post"
    """
    repo = make_project(
        tmp_path, {"lang/__init__.py": "", "lang/words.py": words, "tests/test_words.py": tests}
    )
    (repo / "lang" / "words.py").write_text(
        textwrap.dedent(words)
        .replace("kept", "matches")
        .replace("[w for w in", "[u for u in")
        .replace("endswith(w)", "endswith(u)")
    )
    git_in(repo, "commit", "-qam", "a clearer name")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert code == 0
    assert set(_statuses(document).values()) == {"unchanged"}, document["tests"]
    assert document["code_changes"] == [], document["code_changes"]
    screen = cli(repo, "diff", "HEAD~1", "HEAD")
    assert "not fully exercised" not in screen.stdout, screen.stdout


def test_an_edit_every_test_that_runs_it_survives_unchanged_is_a_gap(tmp_path: Path) -> None:
    """humanize: ``"%d Bytes" % bytes_`` made ``% round(bytes_)`` (a fix for fractional
    sizes) is run by every size test, which all pass ints: each is ``unchanged``, and the
    first screen said nothing of the edit. It is a gap of the changed code now; a test that
    passes a fraction, which does behave otherwise, takes it away."""
    size = """
        def naturalsize(value):
            if value < 1000:
                return "%d Bytes" % value
            return "%.1f kB" % (value / 1000)
    """
    tests = """
        from units.size import naturalsize


        def test_bytes():
            assert naturalsize(300) == "300 Bytes"


        def test_kilobytes():
            assert naturalsize(3000) == "3.0 kB"
    """
    repo = make_project(
        tmp_path, {"units/__init__.py": "", "units/size.py": size, "tests/test_size.py": tests}
    )
    fixed = textwrap.dedent(size).replace("% value\n", "% round(value)\n")
    (repo / "units" / "size.py").write_text(fixed)
    git_in(repo, "commit", "-qam", "round fractional byte counts")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert set(_statuses(document).values()) == {"unchanged"}, document["tests"]
    assert code == 0
    [entry] = [c for c in document["code_changes"] if c["symbol"] == "py:units.size.naturalsize"]
    gap = (
        "code edited, and the 2 tests that reach it behave as before: no test tells the edit apart"
    )
    assert entry["gaps"] == [gap], entry["gaps"]
    screen = cli(repo, "diff", "HEAD~1", "HEAD")
    assert gap in screen.stdout, screen.stdout
    # A test with a fraction: it behaves otherwise ("1 Bytes" became "2 Bytes"), so no gap.
    _fix_again_with_a_test(
        repo,
        ("tests/test_size.py", tests, "def test_fraction():\n    naturalsize(1.7)\n"),
        ("units/size.py", size, fixed),
    )
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", codes=(1,))
    assert _statuses(document)["test_fraction"] == "changed", document["tests"]
    [entry] = [c for c in document["code_changes"] if c["symbol"] == "py:units.size.naturalsize"]
    assert entry["gaps"] == [], entry["gaps"]


def _fix_again_with_a_test(
    repo: Path, test: tuple[str, str, str], module: tuple[str, str, str]
) -> None:
    """Two more commits: ``test`` (its file, text and a new test) on the unfixed ``module``
    (its file, text and fixed text), then the fix again, so that ``HEAD~1 HEAD`` is the fix
    with the new test on both sides."""
    test_file, tests, new_test = test
    module_file, before, fixed = module
    (repo / test_file).write_text(textwrap.dedent(tests) + "\n\n" + new_test)
    (repo / module_file).write_text(textwrap.dedent(before))
    git_in(repo, "commit", "-qam", "a test that tells the fix apart")
    (repo / module_file).write_text(fixed)
    git_in(repo, "commit", "-qam", "the fix again")


def test_an_extraction_that_edits_a_decision_on_the_way_says_so(tmp_path: Path) -> None:
    """itsdangerous: the age checks extracted *and* ``>`` made ``>=`` read as a pure
    extraction (``restructured``, exit 0): the tests took the same ways with either
    condition. The structure line names the condition that was not in the code it came
    from."""
    repo = make_project(
        tmp_path,
        {
            "sig/__init__.py": "",
            "sig/core.py": SIGNER,
            "tests/test_sig.py": """
                import pytest

                from sig.core import Signer


                def test_expired():
                    with pytest.raises(ValueError):
                        Signer().unsign(5, max_age=10)
            """,
        },
    )
    (repo / "sig" / "core.py").write_text(
        SIGNER_EXTRACTED.replace("age > max_age", "age >= max_age")
    )
    git_in(repo, "commit", "-qam", "extract the age check, and expire at max_age")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    [test] = [t for t in document["tests"] if t["id"].endswith("test_expired")]
    assert test["status"] == "restructured"
    assert test["structure"] == [
        "`sig.core.Signer._check_age` extracted from `sig.core.Signer.unsign`, with a decision "
        "the code it came from did not have: `age >= max_age` (gone from there: "
        "`age > max_age`); no test here tells them apart"
    ]


def test_the_tests_that_read_a_rewritten_module_constant_reach_its_edit(tmp_path: Path) -> None:
    """parse 1.20.2 rewrote its module-level ``PARSE_RE``, which only ``<import>`` runs: the
    gap said "the 1 test that run it behave as before" while 60 tests parsed with the new
    expression, and the two new tests that check it were not counted as reaching it. The
    tests that run a function reading the constant reach the edit now: a quiet edit names
    them, and a new test that reads the constant takes the gap away."""
    fields = """
        import re

        FIELD = re.compile(r"{(\\w*)}")


        def names(template):
            return FIELD.findall(template)
    """
    tests = """
        from tpl.fields import names


        def test_one():
            assert names("a {x} b") == ["x"]


        def test_two():
            assert names("{x}{y}") == ["x", "y"]
    """
    repo = make_project(
        tmp_path, {"tpl/__init__.py": "", "tpl/fields.py": fields, "tests/test_fields.py": tests}
    )
    (repo / "tpl" / "fields.py").write_text(textwrap.dedent(fields).replace(r"(\w*)", r"([\w-]*)"))
    git_in(repo, "commit", "-qam", "hyphens in field names")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert set(_statuses(document).values()) == {"unchanged"}, document["tests"]
    [entry] = [c for c in document["code_changes"] if c["symbol"] == "py:tpl.fields"]
    reading = {"tests/test_fields.py::test_one", "tests/test_fields.py::test_two"}
    assert reading <= set(entry["tests_head"]), entry
    gap = (
        "code edited, and the 3 tests that reach it behave as before: no test tells the edit apart"
    )
    assert entry["gaps"] == [gap], entry["gaps"]  # the two tests and <import>
    (repo / "tests" / "test_fields.py").write_text(
        textwrap.dedent(tests) + '\n\ndef test_hyphen():\n    assert names("{a-b}") == ["a-b"]\n'
    )
    git_in(repo, "commit", "-qam", "a test of the hyphen")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~2", "HEAD", codes=(1,))
    assert _statuses(document)["test_hyphen"] == "added", document["tests"]
    [entry] = [c for c in document["code_changes"] if c["symbol"] == "py:tpl.fields"]
    assert "tests/test_fields.py::test_hyphen" in entry["tests_head"], entry
    assert entry["gaps"] == [], entry["gaps"]


def test_a_field_a_new_branch_names_is_no_change_of_a_test_that_never_takes_it(
    tmp_path: Path,
) -> None:
    """parse's ``Result.__contains__`` given a branch for ints that reads ``self.fixed``: the
    recorder reads the fields a function names at every call, so ``test_contains``, which
    passes names and never takes the branch, read as ``changed`` ("state: now also entry
    self.fixed=one"). A field the function names on one side only is the code's, like a
    decision it adds: the test is ``touched``, and the untaken branch is a gap."""
    result = """
        class Result:
            def __init__(self, fixed, named):
                self.fixed = fixed
                self.named = named

            def __contains__(self, name):
                return name in self.named
    """
    tests = """
        from res.result import Result


        def test_contains():
            result = Result((1,), {"a": 2})
            assert "a" in result
            assert "b" not in result
    """
    repo = make_project(
        tmp_path, {"res/__init__.py": "", "res/result.py": result, "tests/test_result.py": tests}
    )
    fixed = textwrap.dedent(result).replace(
        "        return name in self.named\n",
        "        if isinstance(name, int):\n"
        "            return -len(self.fixed) <= name < len(self.fixed)\n"
        "        return name in self.named\n",
    )
    (repo / "res" / "result.py").write_text(fixed)
    git_in(repo, "commit", "-qam", "in knows the fixed indexes")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert _statuses(document)["test_contains"] == "touched", document["tests"]
    assert code == 0
    [entry] = [
        c for c in document["code_changes"] if c["symbol"] == "py:res.result.Result.__contains__"
    ]
    [site] = [s for s in entry["sites"] if s["predicate"] == "isinstance(name, int)"]
    untaken = f"decision outcome never observed: {site['site']} true"
    assert entry["gaps"] == [untaken], entry["gaps"]
    # Taking the branch is behaviour: a test that asks for an index changes.
    _fix_again_with_a_test(
        repo,
        ("tests/test_result.py", tests, "def test_index():\n    print(0 in Result((1,), {}))\n"),
        ("res/result.py", result, fixed),
    )
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", codes=(1,))
    statuses = _statuses(document)
    assert (statuses["test_contains"], statuses["test_index"]) == ("touched", "changed")


COLLECTOR = """
    class Collector:
        def __init__(self, sep):
            self.sep = sep
            self.data = []
            self.out = []

        def add(self, text):
            self.data.append(text)

        def end(self):
            data = (None if not self.data
                    else self.sep.join(self.data))
            self.data = []
            if data:
                data = data.strip() or None
            self.out.append(data)
            return data
"""
COLLECTOR_TESTS = """
    from sax.collect import Collector


    def test_end():
        c = Collector(" ")
        c.add("a")
        c.add(" b ")
        assert c.end() == "a  b"
        assert c.end() is None
"""
COLLECTOR_END = """
        def end(self):
            data = (None if not self.data
                    else self.sep.join(self.data))
"""
JOINED_END = """
        def _joined(self):
            return (None if not self.data
                    else self.sep.join(self.data))

        def end(self):
            data = self._joined()
"""
# The same class, the joined data extracted into a helper (xmltodict's ``_joined_data``).
JOINED = COLLECTOR.replace(COLLECTOR_END, JOINED_END)


def test_a_field_read_moved_into_an_extracted_helper_is_structure(tmp_path: Path) -> None:
    """xmltodict's SAX handler, refactored: the joined character data extracted into
    ``_joined_data`` (``data = self._joined_data()``). The caller no longer reads
    ``self.data`` (it only stores it), the helper does; its facts lifted into the caller are
    the helper's moments (``exit self.data=one``), where base's caller said its own (``exit
    self.data=empty``). The field is named by the caller on one side only, which the differ
    missed because a *local* ``data`` is read on both sides: every test was ``changed``.
    The same extraction joining the data reversed stays ``changed``."""
    repo = make_project(
        tmp_path,
        {
            "sax/__init__.py": "",
            "sax/collect.py": COLLECTOR,
            "tests/test_collect.py": COLLECTOR_TESTS,
        },
    )
    assert "data = self._joined()" in JOINED
    (repo / "sax" / "collect.py").write_text(textwrap.dedent(JOINED))
    git_in(repo, "commit", "-qam", "the joined data in one helper")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert _statuses(document)["test_end"] == "restructured", document["tests"]
    assert code == 0
    # A mutant of the extraction: what the helper returns differs, the test still passes.
    (repo / "sax" / "collect.py").write_text(
        textwrap.dedent(JOINED).replace("join(self.data))", "join(self.data[::-1]))")
    )
    (repo / "tests" / "test_collect.py").write_text(
        textwrap.dedent(COLLECTOR_TESTS).replace('== "a  b"', "")
    )
    git_in(repo, "commit", "-qam", "joined the other way round; the test no longer says")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~2", "HEAD", codes=(1,))
    assert _statuses(document)["test_end"] == "changed", document["tests"]
    # Its assertion was edited with the code: the first screen says so beside the test.
    screen = cli(repo, "diff", "HEAD~2", "HEAD").stdout
    [title] = [line for line in screen.splitlines() if "test_collect.py::test_end" in line]
    assert "· its test code was edited" in title, screen


def test_a_method_that_names_many_fields_keeps_them_all_through_an_extraction(
    tmp_path: Path,
) -> None:
    """The same extraction in a method that names twenty more fields (xmltodict's
    ``endElement`` names 13): a node kept 32 state facts, and which ones an overflowing set
    kept depended on the order they came in, so moving one read into a helper changed the
    others, and an overflowed set cannot be merged: ``changed``. A node keeps 256 now
    (values revision 7)."""
    fields = [f"f{i}" for i in range(20)]
    collector = COLLECTOR.replace(
        "            self.out = []\n",
        "            self.out = []\n"
        + "".join(f"            self.{f} = {i}\n" for i, f in enumerate(fields)),
    ).replace(
        "            self.out.append(data)\n",
        "            self.out.append((data, " + " + ".join(f"self.{f}" for f in fields) + "))\n",
    )
    joined = collector.replace(COLLECTOR_END, JOINED_END)
    assert collector != COLLECTOR and "data = self._joined()" in joined
    repo = make_project(
        tmp_path,
        {
            "sax/__init__.py": "",
            "sax/collect.py": collector,
            "tests/test_collect.py": COLLECTOR_TESTS,
        },
    )
    (repo / "sax" / "collect.py").write_text(textwrap.dedent(joined))
    git_in(repo, "commit", "-qam", "the joined data in one helper")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    assert _statuses(document)["test_end"] == "restructured", document["tests"]
    assert code == 0
