"""The pinned third-party projects the benchmark runs, and what each needs to run offline.

Every entry is a real sdist from PyPI that ships its own test suite. Its test dependencies are
listed explicitly (sdists carry extras but not dependency groups, and several suites need a few
more packages than they declare); their resolved versions are recorded per virtualenv in the
results. Tests that cannot run here (network, services, tools we do not install) are deselected
by node id prefix, each with its reason, and the reasons are copied into every result.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    # Extras of the project itself, installed with `pip install -e DIR[extras]`.
    extras: tuple[str, ...] = ()
    # Further packages the suite needs (test runner plugins, fixtures libraries).
    test_deps: tuple[str, ...] = ()
    # Extra pytest arguments used in every mode (e.g. neutralising a hard-wired --cov).
    pytest_args: tuple[str, ...] = ()
    # node id (or prefix understood by --deselect) -> why it cannot run here.
    deselect: dict[str, str] = field(default_factory=dict)
    # Paths given to pytest (defaults to the project's own testpaths).
    paths: tuple[str, ...] = ()
    mock_heavy: bool = False
    notes: str = ""
    # --quick runs only this selection (paths, then node ids to leave out), to stay short.
    quick_paths: tuple[str, ...] = ()
    quick_deselect: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


# Smallest suites first: a run cut short still has whole rows.
PROJECTS: tuple[Project, ...] = (
    Project(
        name="cookiecutter",
        version="2.7.1",
        test_deps=("pytest", "pytest-mock", "freezegun"),
        # Its addopts hard-wire `--cov=cookiecutter -vvv`; pytest-cov would fight coverage run.
        pytest_args=("-o", "addopts="),
        mock_heavy=True,
        notes="pytest-mock and monkeypatch heavy; runs git and hooks in subprocesses",
    ),
    Project(
        name="attrs",
        version="26.1.0",
        test_deps=("pytest", "hypothesis", "pympler", "cloudpickle"),
        notes="hypothesis property tests; src layout; --import-mode=importlib from its config",
    ),
    Project(
        name="packaging",
        version="26.3",
        test_deps=("pytest", "hypothesis", "pretend", "tomli_w", "pip"),
        notes="its config sets filterwarnings=error: any warning the recorder caused would fail",
    ),
    Project(
        name="google-api-core",
        version="2.44.0",
        extras=("grpc", "async_rest"),
        test_deps=("pytest", "pytest-asyncio", "pytest-mock"),
        # Its filterwarnings=error turns pytest-asyncio's "loop scope unset" deprecation into an
        # INTERNALERROR at configure time; its own CI pins an older pytest-asyncio.
        pytest_args=("-o", "asyncio_default_fixture_loop_scope=function"),
        mock_heavy=True,
        notes="unittest.mock everywhere (grpc and REST transports mocked)",
    ),
    Project(
        name="more-itertools",
        version="11.2.1",
        test_deps=("pytest",),
        notes="unittest-style suite, pure functions, no mocks",
        quick_paths=("tests/test_recipes.py",),
        # The three call-heaviest tests of that file take most of its time under --genome.
        quick_deselect=(
            "tests/test_recipes.py::PrimeFunctionTests",
            "tests/test_recipes.py::PolynomialFromRootsTests::test_large",
            "tests/test_recipes.py::FactorTests::test_cross_check",
        ),
    ),
    Project(
        name="mistune",
        version="3.0.2",
        test_deps=("pytest",),
        paths=("tests",),
        notes="markdown parser (#26): regex-driven block and inline parsers, a token dict "
        "per element; most tests render a fixture document",
    ),
    Project(
        name="click",
        version="8.1.8",
        test_deps=("pytest",),
        # Its filterwarnings=error meets pytest 9's deprecation of a non-Collection
        # argument in one of its fixtures: an error at collection, with or without us.
        pytest_args=("-W", "ignore::pytest.PytestRemovedIn10Warning"),
        paths=("tests",),
        notes="CLI library (#26): decorators, contexts and a CliRunner per test",
    ),
    Project(
        name="sqlparse",
        version="0.5.3",
        test_deps=("pytest",),
        paths=("tests",),
        notes="SQL tokenizer and parser (#12): a token object per lexeme, recursive grouping, "
        "every call passes new strings and tokens",
    ),
    Project(
        name="jinja2",
        version="3.1.6",
        test_deps=("pytest", "trio"),
        paths=("tests",),
        notes="template engine (#12): lexer, recursive-descent parser, code generator; "
        "object-heavy",
    ),
    Project(
        name="google-auth",
        version="2.62.2",
        extras=("testing",),
        mock_heavy=True,
        notes="unittest.mock everywhere; pytest-localserver on loopback",
    ),
)

QUICK_PROJECT = "more-itertools"


def by_name(name: str) -> Project:
    for project in PROJECTS:
        if project.name == name:
            return project
    raise KeyError(f"unknown project {name!r}; known: {', '.join(p.name for p in PROJECTS)}")
