"""Is the imported ``diffgenome`` package this project's? One cheap check, said in one line.

This project is distributed as ``pytest-diffgenome``, but its import package and command are
``diffgenome``, and another project, distributed as ``diffgenome``, uses the same import name
(and command). Installed into one environment, the two write into one ``diffgenome/`` folder:
whichever is installed last owns ``diffgenome/__init__.py`` and the ``diffgenome`` command,
and uninstalling one removes files the other needs. Then our plugin still loads (its modules
are ours alone) but records under someone else's ``__init__``, and ``diffgenome`` runs the
other tool, or nothing runs at all: failures far from their cause.

:func:`check` tells, from a marker in our ``__init__.py`` (free) and, only when recording or
running the CLI, from the distribution metadata beside the package (one folder's
``*.dist-info``, a few milliseconds), whether the package is ours and whether another
distribution shares it, in one line with what to do. Standard library only: the recording
side calls it inside the user's test process. It never raises and never warns.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from dataclasses import dataclass

#: The name this project is published under (PyPI, ``pip install``).
DISTRIBUTION = "pytest-diffgenome"
#: The import package (and command) name, shared with another project on PyPI.
IMPORT_NAME = "diffgenome"
#: The attribute of our ``diffgenome/__init__.py`` that says it is ours.
MARKER = "__distribution__"

_REINSTALL = f"pip install --force-reinstall {DISTRIBUTION}"


@dataclass(frozen=True)
class Finding:
    """What is wrong, in one line with what to do."""

    text: str
    #: True when the imported package is not (all) ours: do not record, do not run.
    fatal: bool


def version() -> str:
    """This project's version: our ``__init__``'s, else our installed metadata's."""
    package = sys.modules.get(IMPORT_NAME)
    if package is not None and getattr(package, MARKER, None) == DISTRIBUTION:
        value = getattr(package, "__version__", None)
        if isinstance(value, str):
            return value
    try:
        from importlib.metadata import version as installed

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return installed(DISTRIBUTION)
    except Exception:
        return "unknown"


def check() -> Finding | None:
    """None when the imported ``diffgenome`` is ours and no other distribution shares its
    folder; else what is wrong. Never raises."""
    try:
        return _check()
    except Exception:
        return None


def _check() -> Finding | None:
    try:
        import diffgenome as package
    except Exception as exc:  # pragma: no cover - the caller itself was imported from it
        return Finding(f"cannot import the `{IMPORT_NAME}` package ({exc}); {_REINSTALL}", True)
    folders = [os.path.abspath(str(entry)) for entry in getattr(package, "__path__", [])]
    where = folders[0] if folders else IMPORT_NAME
    rivals = _rivals({os.path.dirname(folder) for folder in folders})
    uninstall = "".join(f"`pip uninstall {name}`, then " for name, _ in rivals)
    owners = ", ".join(f"{name} {version}" for name, version in rivals)
    if getattr(package, "__file__", None) is None:
        return Finding(
            f"the `{IMPORT_NAME}` package in {where} has no __init__.py (uninstalling another "
            f"project that shares the name removes it); {uninstall}`{_REINSTALL}`",
            True,
        )
    if getattr(package, MARKER, None) != DISTRIBUTION:
        owner = f"{owners}, another project" if owners else "another project"
        return Finding(
            f"the `{IMPORT_NAME}` package imported from {where} is not {DISTRIBUTION}'s: its "
            f"__init__.py is {owner}'s, installed over ours under the same import name; "
            f"{uninstall}`{_REINSTALL}`",
            True,
        )
    if rivals:
        return Finding(
            f"{owners} (another project) also installs the `{IMPORT_NAME}` package in "
            f"{os.path.dirname(where)}; whichever is installed last replaces the other's "
            f"`{IMPORT_NAME}/__init__.py` and `{IMPORT_NAME}` command: {uninstall}"
            f"`{_REINSTALL}`",
            False,
        )
    return None


def _rivals(sites: set[str]) -> list[tuple[str, str]]:
    """(name, version) of each distribution other than ours installed in ``sites`` (a
    ``*.dist-info`` there: an ``*.egg-info`` left in a source tree is no installation) that
    owns a top-level ``diffgenome`` (by its top_level.txt, else its RECORD)."""
    from importlib.metadata import Distribution

    found: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for site in sorted(sites):
            try:
                entries = [e.path for e in os.scandir(site) if e.name.endswith(".dist-info")]
            except OSError:
                continue
            for path in sorted(entries):
                try:
                    dist = Distribution.at(path)
                    name = _normal(dist.metadata.get("Name") or os.path.basename(path))
                    if name == _normal(DISTRIBUTION) or name in found:
                        continue
                    top_level = dist.read_text("top_level.txt")
                    if top_level is not None:
                        owns = IMPORT_NAME in top_level.split()
                    else:
                        owns = f"\n{IMPORT_NAME}/" in "\n" + (dist.read_text("RECORD") or "")
                    if owns:
                        found[name] = dist.metadata.get("Version") or "?"
                except Exception:
                    continue  # a broken dist-info of someone else's is not our business
    return sorted(found.items())


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
