"""The rows of the compatibility matrix: one setting or plugin each, the real suites it runs
on and the example project that exercises it where no real suite does."""

from __future__ import annotations

from dataclasses import dataclass, field

# Fast real suites of the benchmark (experiments/bench/projects.py), in that order.
SUITES = ("cookiecutter", "attrs", "google-api-core")
SEED = "20261201"


@dataclass(frozen=True)
class Row:
    key: str
    setting: str
    # pytest arguments added to both runs (plain and --genome)
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    # PyPI packages installed for this row (an overlay venv per suite; see envs.py)
    plugins: tuple[str, ...] = ()
    suites: tuple[str, ...] = SUITES
    example: str | None = None
    # arguments for the example instead of ``args`` (None: the same)
    example_args: tuple[str, ...] | None = None
    # pass ``-p no:cacheprovider`` (every row but the one about the cache provider)
    no_cache: bool = True
    # each mode runs this many times in a row against its own persistent state (hypothesis'
    # database): the second run replays what the first one saved
    repeat: int = 1
    # the setting stops the session early (``-x``): tests of the example that never ran are
    # not held against it
    partial: bool = False
    # per-suite argument lists, for settings that name the project's package
    per_suite: dict[str, tuple[str, ...]] = field(default_factory=dict)
    note: str = ""
    # run plain more times: where two plain sessions already differ (scheduling under
    # xdist, tests sharing files), a plain/--genome difference among those tests is the
    # suite's, and the row says so instead of blaming or excusing the recorder by hand
    plain_control: int = 0  # how many extra plain sessions

    def args_for(self, suite: str) -> tuple[str, ...]:
        return self.args + self.per_suite.get(suite, ())


# packaging's 62k tests are mostly two files' parametrisations: three smaller files instead.
PACKAGING_FILES = ("tests/test_markers.py", "tests/test_requirements.py", "tests/test_metadata.py")
COV_TARGETS = {
    "cookiecutter": ("--cov=cookiecutter",),
    "attrs": ("--cov=attr", "--cov=attrs"),
    "google-api-core": ("--cov=google.api_core",),
}
# The matrix, in the order of issue #15.
ROWS: tuple[Row, ...] = (
    Row("baseline", "nothing added (reference)", example="basic"),
    Row(
        "filterwarnings-error",
        "`filterwarnings = error`",
        suites=("packaging", "google-api-core", "attrs"),
        per_suite={
            "packaging": PACKAGING_FILES,
            "attrs": ("-o", "filterwarnings=error"),
        },
        example="basic",
        example_args=("-o", "filterwarnings=error"),
        note="packaging (three files) and google-api-core set it in their own config; attrs and "
        "the example get it with `-o` (cookiecutter cannot collect under it, plain or not)",
    ),
    Row(
        "strict",
        "`--strict-config --strict-markers`",
        args=("--strict-config", "--strict-markers"),
        example="basic",
    ),
    Row(
        "strict-ini-keys",
        "`--strict-config --strict-markers` with diffgenome's ini keys set",
        args=(
            "--strict-config",
            "--strict-markers",
            "-o",
            "genome_egress=loopback",
            "-o",
            "genome_max_nodes=100000",
        ),
        example="strict-ini-keys",
        example_args=("--strict-config", "--strict-markers"),
        note="suites: keys given with `-o`; example: keys in its pytest.ini",
    ),
    Row("exitfirst", "`-x`", args=("-x",), example="basic", partial=True),
    Row(
        "importlib",
        "`--import-mode=importlib`",
        args=("--import-mode=importlib",),
        example="basic",
        note="attrs sets it in its own config",
    ),
    Row(
        "cacheprovider",
        "cache provider on, then `-p no:cacheprovider`",
        no_cache=False,
        example="basic",
        note="every other row runs with `-p no:cacheprovider`; this one with the cache",
    ),
    Row(
        "randomly",
        f"pytest-randomly, `--randomly-seed={SEED}` in both runs",
        args=(f"--randomly-seed={SEED}",),
        plugins=("pytest-randomly",),
        example="basic",
    ),
    Row(
        "timeout-signal",
        "pytest-timeout, `--timeout-method=signal`",
        args=("--timeout=900", "--timeout-method=signal"),
        plugins=("pytest-timeout",),
        example="timeout-signal",
        example_args=(),
        note="example: a test overruns its 1 s timeout and fails",
    ),
    Row(
        "timeout-thread",
        "pytest-timeout, `--timeout-method=thread`",
        args=("--timeout=900", "--timeout-method=thread"),
        plugins=("pytest-timeout",),
        example="timeout-thread",
        example_args=(),
    ),
    Row(
        "timeout-thread-fires",
        "pytest-timeout thread method firing (ends the process with `os._exit`)",
        suites=(),
        example="timeout-thread-fires",
        note="example only: no real suite hangs",
    ),
    Row(
        "rerunfailures",
        "pytest-rerunfailures, `--reruns 2`",
        args=("--reruns", "2"),
        plugins=("pytest-rerunfailures",),
        example="rerunfailures",
        example_args=(),
        note="example: a flaky test passes on its rerun, another fails every attempt",
    ),
    Row(
        "asyncio-anyio",
        "pytest-asyncio and anyio",
        args=("-o", "asyncio_default_fixture_loop_scope=function"),
        plugins=("pytest-asyncio", "anyio"),
        example="asyncio-anyio",
        example_args=(),
        note="google-api-core's async tests use pytest-asyncio; anyio only in the example",
    ),
    Row(
        "hypothesis-db",
        "hypothesis with its database (two sessions per mode, the second replays it)",
        repeat=2,
        suites=("attrs",),
        example="hypothesis-database",
        note="attrs is the one suite of the benchmark that uses hypothesis",
    ),
    Row(
        "freezegun",
        "freezegun (patched clocks)",
        suites=("cookiecutter",),
        example="freezegun",
        note="only cookiecutter of the benchmark uses it",
    ),
    Row("time-machine", "time-machine (patched clocks)", suites=(), example="time-machine"),
    Row(
        "pytest-socket",
        "pytest-socket `--disable-socket --allow-unix-socket` (two egress guards)",
        args=("--disable-socket", "--allow-unix-socket"),
        plugins=("pytest-socket",),
        example="pytest-socket",
    ),
    Row(
        "pytest-cov",
        "pytest-cov (`--cov=PKG`, default core)",
        args=("--cov-report=",),
        plugins=("pytest-cov",),
        per_suite=COV_TARGETS,
        example="basic",
        example_args=("--cov=pkg", "--cov-report="),
    ),
    Row(
        "pytest-cov-sysmon",
        "pytest-cov with `COVERAGE_CORE=sysmon` (both on sys.monitoring)",
        args=("--cov-report=",),
        env={"COVERAGE_CORE": "sysmon"},
        plugins=("pytest-cov",),
        per_suite=COV_TARGETS,
        example="basic",
        example_args=("--cov=pkg", "--cov-report="),
    ),
    Row(
        "xdist-loadscope",
        "pytest-xdist `-n 2 --dist loadscope`",
        args=("-n", "2", "--dist", "loadscope"),
        plugins=("pytest-xdist",),
        example="basic",
        # cookiecutter's tests collide on shared folders under two workers; three more plain
        # sessions did not see every test that collides (loadgroup, 2026-12-01), nine do.
        plain_control=9,
    ),
    Row(
        "xdist-loadgroup",
        "pytest-xdist `-n 2 --dist loadgroup`",
        args=("-n", "2", "--dist", "loadgroup"),
        plugins=("pytest-xdist",),
        example="basic",
        # cookiecutter's tests collide on shared folders under two workers; three more plain
        # sessions did not see every test that collides (loadgroup, 2026-12-01), nine do.
        plain_control=9,
    ),
    Row("gc-disable", "`gc.disable()` in a test", suites=(), example="gc-disable"),
    Row(
        "settrace",
        "a test calls `sys.settrace` / `sys.setprofile` / pdb",
        suites=(),
        example="settrace-debugger",
    ),
    Row(
        "sys-monitoring",
        "a test uses `sys.monitoring` itself (own tool id, restart_events, diffgenome's id)",
        suites=(),
        example="sys-monitoring",
    ),
    Row(
        "recursionlimit",
        "`sys.setrecursionlimit` changed by a test",
        suites=(),
        example="recursionlimit",
    ),
)


def by_key(key: str) -> Row:
    for row in ROWS:
        if row.key == key:
            return row
    raise KeyError(f"unknown row {key!r}; known: {', '.join(r.key for r in ROWS)}")
