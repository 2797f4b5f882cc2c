"""Which test files can see a module's names, read from base's imports (diff/importers.py),
and which bodies hand nothing they make elsewhere (diff/sharing.py)."""

from __future__ import annotations

from textwrap import dedent

import pytest

from diffgenome.analysis.diff.importers import ImportGraph
from diffgenome.analysis.diff.sharing import body_keeps_to_itself

TESTS = [
    "tests/test_direct.py",
    "tests/test_through.py",
    "tests/test_relative.py",
    "tests/test_package.py",
    "tests/test_none.py",
    "tests/sub/test_under_conftest.py",
    "tests/plug/test_plugin.py",
    "tests/test_skip.py",
]


def _graph(files: dict[str, str | None]) -> ImportGraph:
    return ImportGraph(files, {p: dedent(t) if t is not None else None for p, t in files.items()})


def test_the_files_whose_imports_reach_a_module_see_it() -> None:
    graph = _graph(
        {
            "pkg/__init__.py": "",
            "pkg/prices.py": "def net(x): return x",
            "tests/__init__.py": "",
            "tests/helpers.py": "from pkg.prices import net\nPRICE = net(1)\n",
            "tests/more.py": "def f():\n    from tests.helpers import PRICE\n    return PRICE\n",
            "tests/test_direct.py": "from tests.helpers import PRICE\n",
            "tests/test_through.py": "import tests.more as more\n",
            "tests/test_relative.py": "from . import helpers\n",
            "tests/test_package.py": "import tests\n",
            "tests/test_none.py": "from pkg.prices import net\n",
            "tests/sub/conftest.py": "from ..helpers import PRICE\n",
            "tests/sub/test_under_conftest.py": "def test(): pass\n",
            "tests/plug/conftest.py": "pytest_plugins = ['tests.helpers']\n",
            "tests/plug/test_plugin.py": "",
            "tests/test_skip.py": "import pytest\nh = pytest.importorskip('tests.helpers')\n",
        }
    )
    seeing = graph.test_files_seeing("tests/helpers.py", TESTS)
    # ``import tests`` binds the package, through which tests.helpers is reachable once
    # anybody imported it.
    assert seeing == frozenset(TESTS) - {"tests/test_none.py"}


def test_a_module_imported_by_a_computed_name_may_be_anything() -> None:
    graph = _graph(
        {
            "tests/helpers.py": "PRICE = 1\n",
            "tests/test_exec.py": "exec(open('x').read())\n",
            "tests/test_dynamic.py": "import importlib\nm = importlib.import_module(NAME)\n",
            "tests/test_plugins.py": "pytest_plugins = [NAME]\n",
            "tests/test_broken.py": "def (:\n",
            "tests/test_unread.py": None,
            "tests/test_plain.py": "import os\n",
        }
    )
    tests = [
        "tests/test_exec.py",
        "tests/test_dynamic.py",
        "tests/test_plugins.py",
        "tests/test_broken.py",
        "tests/test_unread.py",
        "tests/test_plain.py",
        "tests/test_not_in_the_tree.py",
    ]
    assert graph.test_files_seeing("tests/helpers.py", tests) == frozenset(tests) - {
        "tests/test_plain.py"
    }


def test_a_name_is_looked_for_as_the_end_of_a_path() -> None:
    """pytest's rootdir insertion makes ``import helpers`` find tests/helpers.py; so can
    any other helpers.py: both count."""
    graph = _graph(
        {
            "tests/helpers.py": "PRICE = 1\n",
            "other/helpers.py": "PRICE = 2\n",
            "tests/test_a.py": "from helpers import PRICE\n",
            "tests/test_b.py": "import helpersx\n",
        }
    )
    seeing = graph.test_files_seeing("tests/helpers.py", ["test_a.py", "test_b.py"])
    assert seeing == {"test_a.py"}  # test ids from a rootdir below the top


@pytest.mark.parametrize(
    ("body", "keeps"),
    [
        ('"""doc"""\nimport os\nX = make()\nY: int = 2\n', True),
        ("@st.composite\ndef f(draw): ...\n", True),
        ("@dataclass\nclass A:\n    x: int = 1\n", True),
        ("if X:\n    Y = 1\nelse:\n    Z = 2\n", True),
        ("register(X)\n", False),
        ("REGISTRY[k] = X\n", False),
        ("other.X = 1\n", False),
        ("a, other.b = 1, 2\n", False),
        ("del CACHE[k]\n", False),
        ("global X\n", False),
        ("@register(KEY)\ndef f(): ...\n", False),
        ("@register\nclass A: ...\n", False),
        ("class A:\n    register(1)\n", False),
        ("try:\n    import x\nexcept ImportError:\n    fallback()\n", False),
        ("def (:\n", False),
    ],
)
def test_a_body_keeps_what_it_makes_to_itself(body: str, keeps: bool) -> None:
    assert body_keeps_to_itself(body, "") is keeps


def test_an_importer_may_decorate_and_a_class_body_is_read_alone() -> None:
    test_module = "@pytest.mark.parametrize('v', POOL)\ndef test(v): ...\n"
    assert body_keeps_to_itself(test_module, "") is False
    assert body_keeps_to_itself(test_module, "", decorators=True) is True
    source = "register(1)\nclass A:\n    X = 1\nclass B:\n    REG.append(1)\n"
    assert body_keeps_to_itself(source, "A") is True
    assert body_keeps_to_itself(source, "B") is False
    assert body_keeps_to_itself(source, "C") is False
