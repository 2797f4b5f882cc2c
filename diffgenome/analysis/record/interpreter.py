"""The target interpreter of a diff's recordings: what it has, and what they run with.

``--python`` names the interpreter with the project's dependencies; diffgenome need not be
installed there. A probe asks it, once per diff, what it is (Python 3.12 or newer), whether
pytest imports, whether the recorder's plugin would load by itself (an entry point) and
whether hypothesis' plugin would; every recording then runs with :func:`environment`, so
that neither an editable install of the checkout nor a missing diffgenome can change what
runs, and both sides draw the same string hash seed.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from diffgenome.analysis.progress import Progress
from diffgenome.analysis.record.core import CoreSupply, provide
from diffgenome.analysis.record.git import first_line
from diffgenome.analysis.record.process import DiffError
from diffgenome.analysis.record.worktree import Workspace

#: The recorder's plugin, as data: the module name ``-p`` hands pytest in a recording's own
#: process (where no entry point loads it) and the probe looks for among the entry points.
#: The analysis side never imports the recording side.
PLUGIN_MODULE = "diffgenome.recording.plugin"
#: The string hash seed of every recording a diff makes, unless PYTHONHASHSEED is set.
DIFF_HASH_SEED = "0"


@dataclass(frozen=True)
class Target:
    """What the probe found out about the target interpreter."""

    python: str
    version: str
    has_entry_point: bool
    # hypothesis' pytest plugin loads by itself there: its --hypothesis-seed is available
    has_hypothesis: bool = False
    #: A digest of the distributions installed there (name and version of each): part of a
    #: recording's environment, so that a dependency upgraded is another environment.
    packages: str | None = None


_PROBE = """
import json, os, platform, sys
info = {"python": platform.python_implementation() + " " + platform.python_version(),
        "ok": sys.version_info >= (3, 12)}
try:
    import pytest
    info["pytest"] = pytest.__version__
except BaseException as exc:
    info["pytest_error"] = type(exc).__name__ + ": " + str(exc)
try:
    from importlib.metadata import entry_points
    info["entry_point"] = any(
        ep.value.split(":")[0].strip() == @PLUGIN@ for ep in entry_points(group="pytest11")
    ) and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
except BaseException:
    info["entry_point"] = False
try:
    from importlib.metadata import entry_points
    info["hypothesis"] = any(
        ep.name == "hypothesispytest" for ep in entry_points(group="pytest11")
    ) and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
except BaseException:
    info["hypothesis"] = False
try:
    import hashlib
    from importlib.metadata import distributions
    names = sorted({(d.metadata["Name"] or "?") + "==" + d.version for d in distributions()})
    info["packages"] = hashlib.sha256(chr(10).join(names).encode()).hexdigest()[:24]
except BaseException:
    info["packages"] = None
print(json.dumps(info))
""".replace("@PLUGIN@", repr(PLUGIN_MODULE))


def probe(python: str, env: dict[str, str], cwd: str) -> Target:
    """What ``python`` is and has (pytest, the plugin's entry point, hypothesis' plugin), run
    in ``env`` (:func:`environment` of no tree); what makes it unusable is a :class:`DiffError`
    that says which ``--python`` to pass. A path relative to here (``.venv/bin/python``) is
    made absolute: the recordings run it from other folders (worktrees)."""
    if os.sep in python or (os.altsep and os.altsep in python):
        python = os.path.abspath(python)
    try:
        done = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
            cwd=cwd,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise DiffError(
            f"cannot run the target interpreter {python} ({exc}); pass --python PY of the "
            "environment that has the project's dependencies"
        ) from None
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        first = first_line(done.stderr) or f"exit status {done.returncode}"
        raise DiffError(
            f"the target interpreter {python} does not run ({first}); pass --python PY"
        ) from None
    if not info.get("ok"):
        raise DiffError(
            f"the target interpreter {python} is {info.get('python')}; the recorder needs "
            "Python 3.12 or newer: pass --python PY"
        )
    if "pytest" not in info:
        raise DiffError(
            f"pytest cannot be imported by {python} ({info.get('pytest_error')}); install "
            "pytest in that environment or pass --python PY"
        )
    packages = info.get("packages")
    return Target(
        python,
        str(info["python"]),
        bool(info.get("entry_point")),
        bool(info.get("hypothesis")),
        packages if isinstance(packages, str) else None,
    )


def probed(
    python: str, workspace: Workspace, prefix: str, progress: Progress
) -> tuple[Target, CoreSupply]:
    """The target interpreter, probed (:func:`probe`) in the environment of no tree, and the
    compiled core the workspace's copy of the recording side gets for it
    (:func:`diffgenome.analysis.record.core.provide`). A diff asks once, before its first
    recording."""
    env = environment(workspace, None, prefix)
    target = probe(python, env, workspace.root)
    core = provide(workspace.recorder_path(), target.python, target.version, env, progress)
    return target, core


#: Files that make a folder a Python project's root (where its modules are imported from).
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def source_root_of(
    prefix: str, is_file: Callable[[str], bool], is_dir: Callable[[str], bool]
) -> str:
    """Where a tree's own modules are imported from, relative to its top: the nearest folder
    from where the user stands (``prefix`` of the repository) up to the top that holds a
    project file, or its ``src/`` when it has one; where the user stands when none does.
    ``is_file`` and ``is_dir`` answer for a path from the top (a checked-out tree, or a
    commit that is not checked out yet).

    Not simply where the user stands: a reviewer in ``tests/`` of a project installed
    editable would otherwise record the checkout's code on both sides (pytest found it
    through the install), which the recorder can only disclose as ``foreign-module``."""
    parts = prefix.split("/") if prefix else []
    folder = prefix
    for n in range(len(parts), -1, -1):
        candidate = "/".join(parts[:n])
        if any(is_file(_joined(candidate, name)) for name in PROJECT_FILES):
            folder = candidate
            break
    src = _joined(folder, "src")
    return src if is_dir(src) else folder


def _joined(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def source_root(tree: str, prefix: str) -> str:
    """:func:`source_root_of` for a checked-out ``tree``, as a path."""
    found = source_root_of(
        prefix,
        lambda path: os.path.isfile(os.path.join(tree, path)),
        lambda path: os.path.isdir(os.path.join(tree, path)),
    )
    return os.path.join(tree, found) if found else tree


def environment(
    workspace: Workspace, tree: str | None, prefix: str, root: str | None = None
) -> dict[str, str]:
    """The environment of a recording in ``tree`` (None: the probe's), where the user stands
    at ``prefix`` of the repository: the recorded tree's source root (:func:`source_root`)
    first on ``PYTHONPATH``, then the copy of the recording side, then the user's own.
    ``root``: that source root relative to the tree's top, when the tree is not checked out
    yet and cannot be looked at (the commit's answer, :func:`source_root_of`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIFFGENOME_")}
    paths: list[str] = []
    if tree is not None:
        # The recorded tree first: an editable install of the user's checkout must not
        # win over the revision being recorded.
        if root is None:
            paths.append(source_root(tree, prefix))
        else:
            paths.append(os.path.join(tree, root) if root else tree)
    paths.append(workspace.recorder_path())
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # One string hash seed for every recording of a diff (unless the user chose one):
    # set order and hash() results then differ between base and head only when the
    # code does (attrs: 335 tests differed on an identical tree by the seed alone).
    env.setdefault("PYTHONHASHSEED", DIFF_HASH_SEED)
    # pytest's tmp_path folders and whatever else the tests leave in the temp folder go
    # with the workspace.
    env["TMPDIR"] = workspace.temp_path()
    return env


__all__ = ["DIFF_HASH_SEED", "PLUGIN_MODULE", "Target", "environment", "probe", "probed"]
