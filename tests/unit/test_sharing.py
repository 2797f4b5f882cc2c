"""diff/sharing.py: which fixtures share their value beyond one test, read from the source."""

from __future__ import annotations

import pytest

from diffgenome.analysis.diff.sharing import (
    EVERY_TEST,
    fixture_domain,
    fixture_scope,
    import_domain,
    written_globals,
)

SOURCE = """
import pytest
from pytest import fixture


@pytest.fixture
def plain():
    return 1


@fixture(autouse=True)
def automatic():
    return 1


@pytest.fixture(scope="module")
def per_module():
    def done():
        pass
    return 1


@pytest.fixture("session")
def positional():
    return 1


@pytest.fixture(scope=lambda fixture_name, config: "session")
def decided_at_run_time():
    return 1


def helper():
    return 1


class TestThing:
    @pytest.fixture(scope="class")
    def per_class(self):
        return 1

    @classmethod
    def setup_class(cls):
        pass

    def setup_method(self):
        pass


def setup_module():
    pass


@pytest.fixture(scope="module")
def plain():  # redefined: the last definition is in force
    return 2
"""


@pytest.mark.parametrize(
    ("qualname", "scope"),
    [
        ("automatic", "function"),
        ("per_module", "module"),
        ("per_module.<locals>.done", "module"),
        ("positional", "session"),
        ("decided_at_run_time", None),
        ("helper", None),
        ("TestThing.per_class", "class"),
        ("TestThing.setup_class", "class"),
        ("TestThing.setup_method", "function"),
        ("setup_module", "module"),
        ("plain", "module"),
        ("missing", None),
    ],
)
def test_a_fixtures_scope_is_read_from_its_decorator(qualname: str, scope: str | None) -> None:
    assert fixture_scope(SOURCE, qualname) == scope


def test_the_tests_that_may_share_a_fixtures_value() -> None:
    scopes = {"py:t.each": "function", "py:t.mod": "module", "py:t.cls": "class"}
    test = "tests/test_a.py::TestA::test_one"
    assert fixture_domain(test, "py:t.each", scopes.get) is None
    assert fixture_domain(test, "py:t.mod", scopes.get) == "tests/test_a.py"
    assert fixture_domain(test, "py:t.cls", scopes.get) == "tests/test_a.py"
    # A session fixture, a plugin's, one whose source is unknown: every test.
    assert fixture_domain(test, "py:pkg.plugin.thing", scopes.get) == EVERY_TEST


def test_what_an_import_made_is_shared_by_the_innermost_module_on_its_path() -> None:
    kinds = {"py:tests.test_a": "tests/test_a.py", "py:pkg.config": EVERY_TEST}
    through_test_module = ("py:tests.test_a", "py:pkg.prices.net")
    through_package = ("py:tests.test_a", "py:pkg.config", "py:pkg.prices.net")
    assert import_domain(through_test_module, kinds.get) == (0, "tests/test_a.py")
    assert import_domain(through_package, kinds.get) == (1, EVERY_TEST)
    assert import_domain(("py:pkg.prices.net",), kinds.get) == (-1, EVERY_TEST)


WRITERS = """
import registry

NAMES = []
CACHE = {}
COUNT = 0


def appends(name):
    NAMES.append(name)


def stores(key, value):
    CACHE[key] = value


def counts():
    global COUNT
    COUNT += 1


def through_a_module(name):
    registry.SEEN.add(name)


def only_locals(items):
    result = []
    result.append(len(items))
    items.sort()
    seen = {}
    seen["a"] = 1
    return result, NAMES[0], CACHE.get("a")
"""


@pytest.mark.parametrize(
    ("qualname", "names"),
    [
        ("appends", {"NAMES"}),
        ("stores", {"CACHE"}),
        ("counts", {"COUNT"}),
        ("through_a_module", {"SEEN"}),
        ("only_locals", set()),  # its own list, a parameter, reads: nothing beyond its call
    ],
)
def test_the_names_a_function_changes_beyond_its_call(qualname: str, names: set[str]) -> None:
    assert written_globals(WRITERS, qualname) == frozenset(names)
    assert written_globals(WRITERS, "missing") is None
