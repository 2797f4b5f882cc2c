"""An installation of diffgenome (#27): where pip installed it from, which compiled core it
has, and why the pure-Python one records when it does."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from diffgenome.analysis.models import DiffDocument, DiffSide
from diffgenome.analysis.pipeline import core_notes
from diffgenome.analysis.record import core
from diffgenome.protocol import identity
from diffgenome.recording.collect import cores, tracer

REPO = Path(__file__).resolve().parents[2]
COLLECT = REPO / "diffgenome" / "recording" / "collect"


def _site(tmp_path: Path, direct_url: dict[str, object] | None) -> set[str]:
    """A site folder holding our ``*.dist-info`` with ``direct_url`` (PEP 610) in it."""
    info = tmp_path / "site" / "pytest_diffgenome-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: pytest-diffgenome\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return {str(tmp_path / "site")}


@pytest.mark.parametrize(
    ("direct_url", "same", "other"),
    [
        (None, "pytest-diffgenome", "pytest-diffgenome==0.1.0"),
        (
            {
                "url": "https://example.invalid/dg.git",
                "vcs_info": {"vcs": "git", "commit_id": "ab"},
            },
            "git+https://example.invalid/dg.git@ab",
            "git+https://example.invalid/dg.git@ab",
        ),
        (
            {
                "url": "https://example.invalid/dg.git",
                "vcs_info": {"vcs": "git", "commit_id": "ab", "requested_revision": "v0.1.0"},
            },
            "git+https://example.invalid/dg.git@v0.1.0",
            "git+https://example.invalid/dg.git@v0.1.0",
        ),
        ({"url": "file:///src/dg", "dir_info": {}}, "/src/dg", "/src/dg"),
        ({"url": "file:///src/dg", "dir_info": {"editable": True}}, "-e /src/dg", "/src/dg"),
        (
            {"url": "file:///d/pytest_diffgenome-0.1.0.tar.gz", "archive_info": {}},
            "/d/pytest_diffgenome-0.1.0.tar.gz",
            "/d/pytest_diffgenome-0.1.0.tar.gz",
        ),
        (
            {"url": "file:///nowhere/pytest_diffgenome-0.1.0-cp312-cp312-linux.whl"},
            "/nowhere/pytest_diffgenome-0.1.0-cp312-cp312-linux.whl",
            "pytest-diffgenome==0.1.0",  # a wheel for this interpreter, and no sdist beside it
        ),
    ],
)
def test_the_install_spec_is_where_pip_installed_it_from(
    tmp_path: Path, direct_url: dict[str, object] | None, same: str, other: str
) -> None:
    """What the repair line and the isolated install's fix name: never a name that is not on
    the index yet when pip recorded where it came from."""
    sites = _site(tmp_path, direct_url)
    assert identity.install_spec(sites) == same
    assert identity.install_spec(sites, other_interpreter=True) == other


def test_another_python_gets_the_sdist_beside_a_wheel(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel = dist / "pytest_diffgenome-0.1.0-cp312-cp312-linux_x86_64.whl"
    sdist = dist / "pytest_diffgenome-0.1.0.tar.gz"
    wheel.write_bytes(b"")
    sdist.write_bytes(b"")
    sites = _site(tmp_path, {"url": wheel.as_uri(), "archive_info": {}})
    assert identity.install_spec(sites) == str(wheel)
    assert identity.install_spec(sites, other_interpreter=True) == str(sdist)


def test_both_sides_name_the_same_files() -> None:
    """The analysis side writes the file the recording side reads, and hashes the sources
    setup.py hashes."""
    assert core.ABSENT_FILE == cores.CORE_ABSENT_FILE
    tree = ast.parse((REPO / "setup.py").read_text())
    [sources] = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "CORE_SOURCES" for t in node.targets)
    ]
    assert tuple(sources) == core.CORE_SOURCES
    assert sorted(p.name for p in COLLECT.glob("_accel*.[ch]")) == sorted(core.CORE_SOURCES)


@pytest.mark.skipif(tracer._ACCEL is None, reason=f"no compiled core: {tracer._ACCEL_ABSENT}")
def test_the_built_core_carries_the_digest_of_its_sources() -> None:
    """``make venv`` rebuilds the core when a C file changes, so the development build names
    the sources in the tree, and its bytes say the same as its attribute."""
    assert tracer._ACCEL is not None
    digest = core.source_digest(COLLECT)
    assert digest == tracer._ACCEL.SOURCE
    assert core.core_digest(Path(tracer._ACCEL.__file__)) == digest
    assert core.own_digest() == digest


def _reason(tmp_path: Path, keep: list[str], extra: dict[str, str]) -> str:
    """The reason the tracer gives in a copy of the package holding only ``keep`` of the
    compiled files and ``extra`` files beside them."""
    copy = tmp_path / "copy"
    shutil.copytree(
        REPO / "diffgenome",
        copy / "diffgenome",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "*.c", "*.h"),
    )
    here = copy / "diffgenome" / "recording" / "collect"
    for name in keep:
        shutil.copy2(COLLECT / name, here / name)
    for name, text in extra.items():
        (here / name).write_text(text)
    done = subprocess.run(
        [sys.executable, "-c", "from diffgenome.recording.collect import tracer as t\n"
         "print(t._ACCEL is None, t._ACCEL_ABSENT)"],
        cwd=copy, capture_output=True, text=True, check=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(copy)},
    )  # fmt: skip
    return done.stdout.strip()


def test_the_tracer_says_why_it_has_no_core(tmp_path: Path) -> None:
    """Never built; built for another interpreter only (the copy of an isolated install);
    and what diffgenome diff found for the target, in its words."""
    assert _reason(tmp_path / "a", [], {}) == (
        "True not-built: this installation has no compiled core (pip leaves it out when no C "
        "compiler works at install time)"
    )
    other = "_accel.cpython-399-x86_64-linux-gnu.so"
    said = _reason(tmp_path / "b", [], {other: "not a core"})
    assert said.startswith(
        "True other-interpreter: the compiled core here is built for "
        ".cpython-399-x86_64-linux-gnu.so, not for this interpreter (."
    ), said
    found = "other-interpreter: none for CPython 3.99;\n fix it: `py -m pip install x`\n"
    said = _reason(tmp_path / "c", [], {other: "", core.ABSENT_FILE: found})
    assert said == "True other-interpreter: none for CPython 3.99; fix it: `py -m pip install x`"


def _diff(base: tuple[str | None, str | None], head: tuple[str | None, str | None]) -> DiffDocument:
    def side(rev: str, commit: str, core_of: tuple[str | None, str | None]) -> DiffSide:
        return DiffSide.model_validate(
            {
                "run": "r",
                "commit": commit,
                "rev": rev,
                "core": core_of[0],
                "core_reason": core_of[1],
            }
        )

    return DiffDocument.model_validate(
        {
            "format": "diffgenome-diff/3",
            "base": side("HEAD~1", "a" * 40, base).model_dump(),
            "head": side("HEAD", "b" * 40, head).model_dump(),
            "summary": {},
            "tests": [],
        }
    )


def test_the_report_notes_the_sides_the_pure_python_core_recorded() -> None:
    slow = ("python", "other-interpreter: why; `fix`")
    assert core_notes(_diff(("c", None), ("c", None))) == []
    assert core_notes(_diff((None, None), (None, None))) == []  # runs that did not say
    assert core_notes(_diff(slow, slow)) == [
        f"base (HEAD~1, {'a' * 12}) and head (HEAD, {'b' * 12}) recorded with the pure-Python "
        "core (slower, the same genomes): other-interpreter: why; `fix`"
    ]
    assert core_notes(_diff(("c", None), ("python", "not-built: no compiler"))) == [
        f"head (HEAD, {'b' * 12}) recorded with the pure-Python core (slower, the same "
        "genomes): not-built: no compiler"
    ]


def _build_info(**build: str) -> dict[str, object]:
    """What the core probe reports of this interpreter, some of its build settings replaced."""
    import sysconfig

    names = ("LDSHARED", "CCSHARED", "CFLAGS", "INCLUDEPY")
    settings = {k: str(sysconfig.get_config_var(k) or "") for k in names}
    return {"platform": sys.platform, "build": {**settings, **build}}


@pytest.mark.skipif(sys.platform == "win32", reason="builds for another interpreter: POSIX")
def test_a_build_that_cannot_work_says_why_in_one_line(tmp_path: Path) -> None:
    digest = core.source_digest(COLLECT)
    assert digest is not None
    out = tmp_path / "cache" / "_accel.so"
    headers = core._build(COLLECT, digest, _build_info(INCLUDEPY=str(tmp_path)), out)
    assert headers == f"no Python.h in {tmp_path}: its headers are not installed"
    failing = core._build(COLLECT, digest, _build_info(LDSHARED="false"), out)
    assert failing is not None and failing.startswith("false exited 1")
    assert not out.exists() and list(out.parent.iterdir()) == []  # nothing half-written


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="builds for another interpreter: POSIX")
def test_a_build_with_an_interpreter_s_settings_is_a_core_of_these_sources(
    tmp_path: Path,
) -> None:
    """What diff builds for another interpreter, built here for this one (its settings are
    what the core probe reports): a loadable core that names the sources it came from."""
    import sysconfig

    digest = core.source_digest(COLLECT)
    assert digest is not None
    out = tmp_path / "cache" / f"_accel{sysconfig.get_config_var('EXT_SUFFIX')}"
    assert core._build(COLLECT, digest, _build_info(), out) is None
    assert core.core_digest(out) == digest
    package = tmp_path / "pkg" / "diffgenome" / "recording" / "collect"
    package.mkdir(parents=True)
    shutil.copy2(out, package / out.name)
    for folder in (package.parent.parent, package.parent, package):
        (folder / "__init__.py").touch()
    loaded = subprocess.run(
        [sys.executable, "-c", "from diffgenome.recording.collect import _accel as a\n"
         "print(a.VERSION, a.SOURCE)"],
        cwd=tmp_path / "pkg", capture_output=True, text=True, check=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "pkg")},
    )  # fmt: skip
    assert loaded.stdout.split() == [str(cores.CORE_VERSION), digest]
