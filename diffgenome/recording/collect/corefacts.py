"""What an interpreter says of the compiled core, asked in a child process by name.

The analysis side never imports the recording side; it runs this module in the interpreter
that would record (``python -m diffgenome.recording.collect.corefacts --verdict`` or
``--supply``), which prints one JSON object on one line:

- ``--verdict`` (``diffgenome doctor``): which core the tracer records with there, as pytest
  would import it, and why not the compiled one (``core``, ``reason``, ``file``, ``source``);
- ``--supply`` (analysis/record/core.py, before a diff with ``--python`` records): what a
  compiled core for that interpreter needs and what it has: its extension suffix, platform
  and build settings (``ext_suffix``, ``platform``, ``build``), whether the recorder was
  tested on its version (``tested``), which core loads from the copy of the recording side
  (``loads``) and the cores of the same name on its path outside that copy (``found``).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig


def verdict() -> dict[str, object]:
    """The tracer's own verdict: the core it records with, and its reason for none."""
    from diffgenome.recording.collect import tracer

    core = tracer._ACCEL
    return {
        "core": "c" if core is not None else "python",
        "reason": tracer._ACCEL_ABSENT,
        "file": getattr(core, "__file__", None),
        "source": getattr(core, "SOURCE", None),
    }


def supply() -> dict[str, object]:
    """What a compiled core for this interpreter needs, and what is there already."""
    info: dict[str, object] = {
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or "",
        "platform": sys.platform,
    }
    info["build"] = {
        k: str(sysconfig.get_config_var(k) or "")
        for k in ("LDSHARED", "CCSHARED", "CFLAGS", "INCLUDEPY")
    }
    copy = None
    try:
        import diffgenome

        copy = os.path.dirname(os.path.abspath(next(iter(diffgenome.__path__))))
        from diffgenome.recording.collect.capabilities import CAPABILITIES

        info["tested"] = CAPABILITIES.tested
    except BaseException:
        info["tested"] = None
    try:
        from diffgenome.recording.collect import _accel

        info["loads"] = getattr(_accel, "SOURCE", "unknown")
    except BaseException:
        info["loads"] = None
    found = []
    for entry in sys.path:
        where = os.path.abspath(entry or ".")
        if where == copy:
            continue
        name = "_accel" + str(info["ext_suffix"])
        path = os.path.join(where, "diffgenome", "recording", "collect", name)
        if os.path.isfile(path):
            found.append(path)
    info["found"] = found
    return info


#: The name the analysis side runs this module by (it never imports it).
_MODULE = "diffgenome.recording.collect.corefacts"
_ASKED = {"--verdict": verdict, "--supply": supply}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in _ASKED:
        print(f"usage: python -m {_MODULE} --verdict|--supply", file=sys.stderr)
        return 2
    print(json.dumps(_ASKED[argv[0]]()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
