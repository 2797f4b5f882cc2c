"""``diffgenome doctor``: what this installation records with, said in a few lines.

pip says nothing when the optional compiled core could not be built, and an isolated install
used with ``--python`` of another interpreter needs a core for that one too, so the user who
wants to know asks here: which distribution and interpreter run, which core ``pytest
--genome`` records with (asked of the recording side in a child process, as pytest would
import it), whether pytest loads the plugin by itself, where the store is and which digest key
it has. ``--python PY`` adds what ``diffgenome diff --python PY`` would record with there,
after getting the copied recorder its core (analysis/record/core.py) as a diff does.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import diffgenome
from diffgenome.analysis.progress import Progress
from diffgenome.analysis.record.core import CORE_FACTS
from diffgenome.analysis.record.interpreter import PLUGIN_MODULE, environment, probed
from diffgenome.analysis.record.worktree import Workspace
from diffgenome.protocol import identity
from diffgenome.store.key import KEY_FILE, key_fingerprint
from diffgenome.store.reader import StoreReader

#: Asked of the recording side in the interpreter that would record: its own verdict. Run
#: by name in a child, as pytest would import it there, never imported here.
_CORE_CHECK = ("-m", CORE_FACTS, "--verdict")


@dataclass
class Checkup:
    """The lines to print, and whether something would make recording slow or not happen."""

    lines: list[str] = field(default_factory=list)
    ok: bool = True

    def say(self, topic: str, text: str) -> None:
        self.lines.append(f"  {topic:<12} {text}")


def checkup(store: str, python: str | None) -> Checkup:
    """What :func:`main`'s ``doctor`` prints about this installation, its store, and the
    target interpreter ``python`` when given."""
    out = Checkup(["diffgenome doctor"])
    where = os.path.dirname(os.path.abspath(diffgenome.__file__ or "."))
    out.say(
        "distribution",
        f"{identity.DISTRIBUTION} {identity.version()} in {where} "
        f"(reinstall: pip install --force-reinstall {identity.install_spec()})",
    )
    finding = identity.check()
    if finding is not None:
        out.say("package", finding.text)
        out.ok = out.ok and not finding.fatal
    out.say("interpreter", f"{_this_python()} at {sys.executable}")
    _core(out, "core", [sys.executable, *_CORE_CHECK], None, tempfile.gettempdir())
    _plugin(out)
    _store(out, store)
    if python is not None:
        _target(out, python)
    return out


def _this_python() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def _core(
    out: Checkup, topic: str, command: list[str], env: dict[str, str] | None, cwd: str
) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=120, check=False, env=env, cwd=cwd
        )
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        out.say(topic, "unknown: the recording side does not import there")
        out.ok = False
        return
    if info.get("core") == "c":
        name = os.path.basename(str(info.get("file") or "?"))
        source = str(info.get("source") or "unknown")[:12]
        out.say(topic, f"compiled ({name}, from sources {source})")
    else:
        out.say(topic, f"pure-Python, slower (the same genomes): {info.get('reason')}")
        out.ok = False


def _plugin(out: Checkup) -> None:
    found = [ep for ep in entry_points(group="pytest11") if ep.value.startswith(PLUGIN_MODULE)]
    if not found:
        out.say("plugin", f"not registered with pytest: `pytest -p {PLUGIN_MODULE}` loads it")
        out.ok = False
    elif os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        out.say(
            "plugin",
            f"registered (pytest11 `{found[0].name}`), but PYTEST_DISABLE_PLUGIN_AUTOLOAD is "
            f"set: `pytest -p {PLUGIN_MODULE}` loads it",
        )
    else:
        out.say("plugin", f"registered: pytest loads it by itself (pytest11 `{found[0].name}`)")


def _store(out: Checkup, store: str) -> None:
    key_path = os.path.join(store, KEY_FILE)
    if not os.path.isdir(store):
        out.say("store", f"{store}: not there yet (the first `pytest --genome` here makes it)")
        out.say("key", "none yet: the store's key is made with it")
        return
    try:
        with StoreReader.open(store) as reader:
            runs = len(reader.runs())
        out.say("store", f"{store}: {runs} run{'' if runs == 1 else 's'}")
    except Exception as exc:
        out.say("store", f"{store}: cannot be read ({' '.join(str(exc).split())})")
        out.ok = False
    try:
        key = Path(key_path).read_bytes()
        out.say("key", f"{key_fingerprint(key)} ({key_path})")
    except OSError as exc:
        out.say("key", f"{key_path}: {exc.strerror or exc}")


def _target(out: Checkup, python: str) -> None:
    """What a diff with ``--python python`` records with: the probe and the core supply of a
    diff, asked as a diff asks (:func:`probed`), then the copied recorder's own verdict in
    that interpreter."""
    with Workspace(None) as workspace:
        target, supply = probed(python, workspace, "", Progress())
        env = environment(workspace, None, "")
        python = target.python
        plugin = "by itself" if target.has_entry_point else f"with -p {PLUGIN_MODULE}"
        out.say("--python", f"{target.version} at {python} (pytest loads the plugin {plugin})")
        how = {
            "cached": "from the per-user cache",
            "found": "from that environment's own pytest-diffgenome",
            "built": "just built into the per-user cache",
        }.get(supply.how)
        command = [python, *_CORE_CHECK]
        _core(out, "its core", command, env, workspace.root)
        if how is not None:
            out.lines[-1] += f", {how}"


__all__ = ["Checkup", "checkup"]
