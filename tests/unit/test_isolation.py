"""The recording side runs inside the user's test process: standard library and pytest only.
The two sides never import each other; what both need is in ``diffgenome.protocol`` (formats,
vocabularies, naming) and ``diffgenome.store`` (the store, written by one side and read by
the other), which import neither side."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pytest_world() -> set[str]:
    """pytest and the distributions it requires: what "pytest" means in the user's process."""
    names = {"pytest", "_pytest", "py", "diffgenome"}
    for requirement in importlib.metadata.requires("pytest") or []:
        if "extra ==" in requirement:
            continue
        name = re.split(r"[ ;<>=!~\[]", requirement, maxsplit=1)[0]
        names.add(name.lower().replace("-", "_"))
    return names


PYTEST_WORLD = _pytest_world()

PROBE = textwrap.dedent(
    """
    import importlib, pkgutil, sys

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("pydantic", "pydantic_core", "rich"):
                raise ImportError(f"{name} is not importable in this process")
            return None

    sys.meta_path.insert(0, Refuse())
    import diffgenome.protocol, diffgenome.store, diffgenome.recording
    loaded = []
    for package in (diffgenome.protocol, diffgenome.store, diffgenome.recording):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
            loaded.append(info.name)
    from diffgenome.recording import plugin
    outside = sorted(
        {m.split(".")[0] for m in sys.modules}
        - set(sys.stdlib_module_names) - set(sys.builtin_module_names)
    )
    print(" ".join(loaded))
    print(" ".join(outside))
    """
)


def test_recording_side_imports_only_stdlib_and_pytest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded_line, outside_line = done.stdout.strip().splitlines()
    loaded = set(loaded_line.split())
    # The probe must really have imported the collector, the plugin and the store writer.
    assert {
        "diffgenome.recording.collect.tracer",
        "diffgenome.recording.plugin",
        "diffgenome.store.writer",
        "diffgenome.store.writer_process",
        "diffgenome.recording.session",
    } <= loaded
    # ... and the whole store, the reader's half too: the recording side may import any of it.
    assert {"diffgenome.store.layout", "diffgenome.store.reader"} <= loaded
    outside = set(outside_line.split()) - {
        "__main__",
        "_distutils_hack",
        "__editable___pytest_diffgenome_0_1_0_finder",
    }
    assert outside <= PYTEST_WORLD, f"recording side pulled in {sorted(outside - PYTEST_WORLD)}"
    assert "pydantic" not in outside and "rich" not in outside


def test_the_probe_would_notice_a_leak() -> None:
    """The refusal is real: importing the analysis side under the same guard fails."""
    probe = PROBE.replace(
        "import diffgenome.protocol, diffgenome.store, diffgenome.recording",
        "import diffgenome.protocol, diffgenome.store, diffgenome.recording, "
        "diffgenome.analysis.models",
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode != 0
    assert "pydantic" in done.stderr


def _imported(package: str) -> dict[str, set[str]]:
    """Every module a package's files import, anywhere in the file (lazy imports included).
    Only import statements count: code held in a string (a probe run in another interpreter)
    imports nothing here."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "diffgenome" / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    assert found, f"no modules found under diffgenome/{package}"
    return found


def _offenders(package: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    return {
        path: sorted(name for name in names if name.startswith(forbidden))
        for path, names in _imported(package).items()
        if any(name.startswith(forbidden) for name in names)
    }


def test_recording_never_imports_analysis() -> None:
    assert _offenders("recording", ("diffgenome.analysis",)) == {}


def test_analysis_never_imports_recording() -> None:
    """The CLI reaches the recording side only through the store and in other interpreters
    (a probe's code is a string run there, which imports nothing here)."""
    assert _offenders("analysis", ("diffgenome.recording",)) == {}
    # The check reads real imports: the analysis side does import the store.
    assert _offenders("analysis", ("diffgenome.store",)) != {}


def test_protocol_imports_neither_side_and_only_the_standard_library() -> None:
    """The store stands on the protocol, never the other way round."""
    assert (
        _offenders("protocol", ("diffgenome.analysis", "diffgenome.recording", "diffgenome.store"))
        == {}
    )
    outside = {
        path: sorted(
            name
            for name in names
            if name.split(".")[0] not in sys.stdlib_module_names
            and name.split(".")[0] != "diffgenome"
        )
        for path, names in _imported("protocol").items()
    }
    assert {path: names for path, names in outside.items() if names} == {}


def test_the_store_imports_neither_side_and_only_the_standard_library() -> None:
    """The store is one room both sides use: the writer runs in the user's test process, the
    reader in the CLI, so it stands on the standard library and the protocol alone."""
    assert _offenders("store", ("diffgenome.analysis", "diffgenome.recording")) == {}
    outside = {
        path: sorted(
            name
            for name in names
            if name.split(".")[0] not in sys.stdlib_module_names
            and not name.startswith(("diffgenome.protocol", "diffgenome.store"))
        )
        for path, names in _imported("store").items()
    }
    assert {path: names for path, names in outside.items() if names} == {}
    # The check reads real imports: the writer imports the store's layout and the protocol.
    writer = _file_imports("diffgenome/store/writer.py")
    assert "diffgenome.store.layout" in writer
    assert any(name.startswith("diffgenome.protocol") for name in writer)


def test_the_differ_does_no_input_or_output() -> None:
    """Git, files, child processes and the store are ``analysis.record``'s and the CLI's."""
    io = {"os", "subprocess", "shutil", "tempfile", "signal", "sqlite3", "pathlib", "rich"}
    io_modules = (
        "diffgenome.analysis.record",
        "diffgenome.store",
        "diffgenome.analysis.report",
    )
    found = {
        path: sorted(n for n in names if n.split(".")[0] in io or n.startswith(io_modules))
        for path, names in _imported("analysis/diff").items()
    }
    assert {path: names for path, names in found.items() if names} == {}


def _file_imports(relative: str) -> set[str]:
    """Every module one file imports, anywhere in it."""
    path = ROOT / relative
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_progress_model_draws_nothing() -> None:
    """Steps, handles and the renderer protocol are the work's; how they look (rich) is the
    report's, so the work that reports its progress depends on no way of showing it."""
    names = _file_imports("diffgenome/analysis/progress.py")
    assert names, "the progress model imports nothing: the check would pass on any file"
    outside = sorted(n for n in names if n.split(".")[0] not in sys.stdlib_module_names)
    assert outside == []


def test_the_floors_of_the_analysis_side() -> None:
    """A diff flows collect -> record -> store -> diff -> report, and the pipeline is the one
    module that joins them: recording the sides knows neither the differ, the reports nor the
    pipeline above it; the reports know neither how sides are recorded nor the pipeline."""
    pipeline = ("diffgenome.analysis.pipeline",)
    record = ("diffgenome.analysis.record",)
    assert (
        _offenders(
            "analysis/record", ("diffgenome.analysis.diff", "diffgenome.analysis.report", *pipeline)
        )
        == {}
    )
    assert _offenders("analysis/report", (*record, *pipeline)) == {}
    assert _offenders("analysis/diff", pipeline) == {}


def test_the_command_reads_the_request_runs_the_pipeline_and_delivers() -> None:
    """``diff`` is three rooms, one after the other: the request (arguments read and checked,
    nothing run), the pipeline (which knows no report and no argument), the delivery (the
    reports, which know neither the pipeline nor how the sides were recorded)."""
    request = _file_imports("diffgenome/analysis/request.py")
    delivery = _file_imports("diffgenome/analysis/delivery.py")
    pipeline = _file_imports("diffgenome/analysis/pipeline.py")
    later = (
        "diffgenome.analysis.pipeline",
        "diffgenome.analysis.delivery",
        "diffgenome.analysis.cli",
    )
    assert sorted(n for n in request if n.startswith(later)) == []
    assert (
        sorted(
            n
            for n in pipeline
            if n.startswith(("diffgenome.analysis.report", "diffgenome.analysis.request", *later))
        )
        == []
    )
    assert (
        sorted(
            n
            for n in delivery
            if n.startswith(
                ("diffgenome.analysis.record", "diffgenome.analysis.pipeline", "argparse")
            )
        )
        == []
    )
    # The check reads real imports: each room imports what it is known to use.
    assert "diffgenome.analysis.record.sides" in request
    assert "diffgenome.analysis.request" in delivery
    assert "diffgenome.analysis.record.sides" in pipeline
    for room in ("report", "diff", "record"):
        assert _offenders(f"analysis/{room}", ("diffgenome.analysis.request", *later)) == {}


def test_the_floor_check_would_notice_an_arrow_up() -> None:
    """The check reads real imports: the pipeline itself imports both floors it joins."""
    names = _file_imports("diffgenome/analysis/pipeline.py")
    assert any(name.startswith("diffgenome.analysis.record") for name in names)
    assert any(name.startswith("diffgenome.analysis.diff") for name in names)
