"""The compiled core for the target interpreter, when it is not the one running diffgenome.

``diffgenome diff --python PY`` records with a copy of the recording side
(:meth:`Workspace.recorder_path`), which holds the compiled core built for the interpreter
that installed diffgenome (an isolated install: pipx, ``uv tool``, a venv of its own). When
``PY`` is another CPython version, that core does not load there and the copy records with
the pure-Python callbacks: the same genomes, several times slower. So, once per diff, before
anything records, this module puts a core built for ``PY`` from the same C sources into the
copy, the first it finds of:

1. the per-user cache (``$XDG_CACHE_HOME/diffgenome/cores``, else ``~/.cache/...``), one file
   per source digest and interpreter (its ``EXT_SUFFIX``);
2. the target environment's own installation of pytest-diffgenome, when its core was built
   from the same sources (every core carries the digest of its sources, ``_accel.SOURCE``,
   readable from its bytes);
3. a build for ``PY`` into that cache, with ``PY``'s own compiler settings (its sysconfig),
   when the C sources are here (an editable install or a clone on ``PYTHONPATH``: a wheel
   carries none) and a C compiler works.

When none of them gives one, the copy gets ``_accel.absent``: why, in words, and the one
command that fixes it, which the recorder says as its reason, the run stores and the diff's
progress and report repeat. A target whose version the recorder has not been tested on
gets nothing: the recorder keeps the compiled core off there itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import diffgenome
from diffgenome.analysis.progress import Progress
from diffgenome.analysis.record.git import first_line
from diffgenome.protocol import identity

#: The files the compiled core is built from (setup.py lists the same).
CORE_SOURCES = ("_accel.c", "_accel.h", "_accel_values.c")
#: What precedes the source digest in a built core's bytes (``_accel.c``'s ``SOURCE_MARK``).
SOURCE_PREFIX = b"diffgenome-core-source:"
#: The file of the recorder's copy that says why it has no core (the tracer reads it).
ABSENT_FILE = "_accel.absent"
_COLLECT = ("recording", "collect")
BUILD_TIMEOUT = 600

#: The recording side's module that says, in the target interpreter, what a compiled core
#: for it needs and has (``--supply``) and which core the tracer records with there
#: (``--verdict``, for ``diffgenome doctor``). A module name run in a child process, never
#: imported here: the analysis side does not import the recording side.
CORE_FACTS = "diffgenome.recording.collect.corefacts"


@dataclass(frozen=True)
class CoreSupply:
    """What the recorder's copy got for the target interpreter (:func:`apply` gives another
    copy of the same workspace kind the same)."""

    #: ``loads`` (the copy's core works there), ``cached``, ``found`` (the target's own
    #: installation), ``built``, ``absent``; or left to the recorder, which says why it has
    #: none: ``own`` (the target is this interpreter's kind), ``untested`` (it keeps the core
    #: off there), ``unprobed``.
    how: str
    #: Why there is none, and the command that fixes it (``absent`` only).
    reason: str | None = None
    #: The core file put into the copy (``cached``, ``found``, ``built``).
    file: str | None = None


def apply(recorder: str, supply: CoreSupply) -> None:
    """Give another copy of the recording side (a confirmation's workspace) what
    :func:`provide` gave the first: the same core file, or the same reason for none."""
    target = Path(recorder, "diffgenome", *_COLLECT)
    if supply.file is not None and not (target / os.path.basename(supply.file)).exists():
        shutil.copy2(supply.file, target / os.path.basename(supply.file))
    elif supply.reason is not None:
        (target / ABSENT_FILE).write_text(supply.reason + "\n", encoding="utf-8")


def source_digest(folder: Path) -> str | None:
    """The digest of the core's C sources in ``folder`` (setup.py's ``source_digest``), or
    None when they are not there."""
    digest = hashlib.sha256()
    try:
        for name in CORE_SOURCES:
            digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def core_digest(path: Path) -> str | None:
    """The source digest a built core carries, read from its bytes (it is not loaded)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    at = data.find(SOURCE_PREFIX)
    if at < 0:
        return None
    value = data[at + len(SOURCE_PREFIX) : at + len(SOURCE_PREFIX) + 64].decode("ascii", "replace")
    return value if len(value) == 64 and all(c in "0123456789abcdef" for c in value) else None


def cache_folder() -> Path:
    """The per-user cache of built cores (``XDG_CACHE_HOME`` first, as on Linux)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        if sys.platform == "darwin":
            base = os.path.expanduser("~/Library/Caches")
        elif os.name == "nt":
            base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
        else:
            base = os.path.expanduser("~/.cache")
    return Path(base) / "diffgenome" / "cores"


def _own_collect() -> Path:
    return Path(diffgenome.__file__).resolve().parent.joinpath(*_COLLECT)


def own_digest() -> str | None:
    """The source digest of this diffgenome's core: of its C sources when they are here
    (they are what a build would use), else the one its own built core carries."""
    here = _own_collect()
    digest = source_digest(here)
    if digest is not None:
        return digest
    from importlib.machinery import EXTENSION_SUFFIXES

    for suffix in EXTENSION_SUFFIXES:
        found = core_digest(here / f"_accel{suffix}")
        if found is not None:
            return found
    return None


def provide(
    recorder: str, python: str, version: str, env: dict[str, str], progress: Progress
) -> CoreSupply:
    """Put a compiled core for ``python`` into the recorder's copy (see the module's
    docstring); ``env``: the environment the target is probed in (the copy on its path)."""
    target = Path(recorder, "diffgenome", *_COLLECT)
    (target / ABSENT_FILE).unlink(missing_ok=True)
    info = _core_facts(python, env, recorder)
    if info is None:
        return CoreSupply("unprobed")  # the recorder says why it has none itself
    if info.get("loads"):
        return CoreSupply("loads")
    if info.get("tested") is False:
        return CoreSupply("untested")
    from importlib.machinery import EXTENSION_SUFFIXES

    suffix = str(info.get("ext_suffix") or "")
    if suffix in EXTENSION_SUFFIXES:
        # This interpreter's kind: the copy's own core is for it, and the recorder says why
        # it does not load (not built, a failed import).
        return CoreSupply("own")
    name = f"_accel{suffix}"
    fix = f"`{shlex.quote(python)} -m pip install {identity.install_spec(other_interpreter=True)}`"
    digest = own_digest()
    if digest is None or not suffix:
        return _absent(
            target,
            f"no-compiled-core: this diffgenome has no compiled core of its own (it was "
            f"installed without a C compiler), so none for {version} can be matched to it; "
            f"install pytest-diffgenome into that environment: {fix}",
        )
    cached = cache_folder() / digest[:32] / name
    if core_digest(cached) == digest:
        shutil.copy2(cached, target / name)
        return CoreSupply("cached", file=str(cached))
    found_there = info.get("found")
    for found in found_there if isinstance(found_there, list) else ():
        if core_digest(Path(str(found))) == digest:
            shutil.copy2(str(found), target / name)
            return CoreSupply("found", file=str(found))
    sources = _own_collect()
    if source_digest(sources) != digest:
        return _absent(
            target,
            f"other-interpreter: this diffgenome's compiled core is built for "
            f"{_own_version()} only, and none for {version} from the same sources was found "
            f"(in the cache or that environment) or can be built (this installation has no C "
            f"sources); install pytest-diffgenome into that environment: {fix}",
        )
    with progress.step("building", "built", f"the compiled core for {version}") as step:
        failure = _build(sources, digest, info, cached)
        step.result = f"into {cached.parent}" if failure is None else "failed"
    if failure is not None:
        return _absent(
            target,
            f"build-failed: this diffgenome's compiled core is built for {_own_version()} "
            f"only, and building one for {version} failed ({failure}); install "
            f"pytest-diffgenome into that environment: {fix}",
        )
    shutil.copy2(cached, target / name)
    return CoreSupply("built", file=str(cached))


def _own_version() -> str:
    import platform

    return f"{platform.python_implementation()} {platform.python_version()}"


def _absent(target: Path, reason: str) -> CoreSupply:
    (target / ABSENT_FILE).write_text(reason + "\n", encoding="utf-8")
    return CoreSupply("absent", reason)


def _core_facts(python: str, env: dict[str, str], cwd: str) -> dict[str, object] | None:
    """What ``python`` says of a compiled core for it (:data:`CORE_FACTS` ``--supply``), run
    in ``env`` from ``cwd`` (the copy of the recording side); None when it cannot say."""
    try:
        done = subprocess.run(
            [python, "-m", CORE_FACTS, "--supply"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
            cwd=cwd,
        )
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return info if isinstance(info, dict) else None


def _build(sources: Path, digest: str, info: dict[str, object], out: Path) -> str | None:
    """Compile the core for the probed interpreter into ``out``; None, or what failed (one
    line). The file appears whole or not at all (another diff may build the same)."""
    build = info.get("build")
    if os.name == "nt" or not isinstance(build, dict):
        return "building for another interpreter is done on Linux and macOS only"
    include = str(build.get("INCLUDEPY") or "")
    if not os.path.isfile(os.path.join(include, "Python.h")):
        return f"no Python.h in {include or 'its include folder'}: its headers are not installed"
    link = shlex.split(str(build.get("LDSHARED") or ""))
    if not link:
        return "its sysconfig names no linker (LDSHARED)"
    flags = shlex.split(str(build.get("CFLAGS") or "")) + shlex.split(
        str(build.get("CCSHARED") or "")
    )
    strip = ["-s"] if info.get("platform") not in ("darwin",) else []
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".build-", suffix=out.suffix, dir=out.parent)
        os.close(handle)
    except OSError as exc:
        return f"the cache {out.parent} cannot be written: {exc.strerror or exc}"
    command = [
        *link,
        *flags,
        "-O2",
        "-Wno-missing-field-initializers",
        f"-I{include}",
        f"-DDIFFGENOME_CORE_SOURCE={digest}",
        *strip,
        str(sources / "_accel.c"),
        "-o",
        temporary,
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
        )
        if done.returncode != 0:
            error = next(
                (line for line in done.stderr.splitlines() if "error" in line),
                first_line(done.stderr),
            )
            return f"{link[0]} exited {done.returncode}: {error.strip()}"
        if core_digest(Path(temporary)) != digest:
            return "the built file does not carry the digest of its sources"
        os.chmod(temporary, 0o755)
        os.replace(temporary, out)
        return None
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{link[0]}: {exc}"
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


__all__ = [
    "ABSENT_FILE",
    "CORE_FACTS",
    "CoreSupply",
    "apply",
    "cache_folder",
    "core_digest",
    "provide",
    "source_digest",
]
