"""The floor of the per-event cost: ``sys.monitoring`` delivering events to an empty callback.

:func:`build` compiles ``_bench_floor.c`` for one interpreter (its own headers and extension
suffix, the system C compiler) into a folder that the ``bench_floor`` plugin imports from. No
setuptools: the benchmark's project environments need not have it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("_bench_floor.c")
_CONFIG = (
    "import json, sysconfig; print(json.dumps({k: sysconfig.get_config_var(k) or '' for k in "
    "('INCLUDEPY', 'EXT_SUFFIX', 'CC', 'CFLAGSFORSHARED')}))"
)


def build(python: str, dest: Path) -> tuple[Path | None, str]:
    """(the folder holding the built module, "") or (None, why it could not be built)."""
    try:
        probe = subprocess.run([python, "-c", _CONFIG], capture_output=True, text=True, timeout=60)
        config = json.loads(probe.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot read {python}'s build settings: {exc}"
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / f"_bench_floor{config['EXT_SUFFIX']}"
    compiler = shlex.split(os.environ.get("CC") or config["CC"] or "cc")
    cmd = [
        *compiler,
        "-O2",
        "-shared",
        "-fPIC",
        f"-I{config['INCLUDEPY']}",
        str(SOURCE),
        "-o",
        str(target),
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot run the C compiler: {exc}"
    if done.returncode != 0:
        return None, f"the C compiler failed: {done.stderr.strip()[-500:]}"
    return dest, ""
