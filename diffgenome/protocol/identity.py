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
        return Finding(f"cannot import the `{IMPORT_NAME}` package ({exc}); {_reinstall()}", True)
    folders = [os.path.abspath(str(entry)) for entry in getattr(package, "__path__", [])]
    where = folders[0] if folders else IMPORT_NAME
    sites = {os.path.dirname(folder) for folder in folders}
    rivals = _rivals(sites)
    reinstall = _reinstall(sites)
    uninstall = "".join(f"`pip uninstall {name}`, then " for name, _ in rivals)
    owners = ", ".join(f"{name} {version}" for name, version in rivals)
    if getattr(package, "__file__", None) is None:
        return Finding(
            f"the `{IMPORT_NAME}` package in {where} has no __init__.py (uninstalling another "
            f"project that shares the name removes it); {uninstall}`{reinstall}`",
            True,
        )
    if getattr(package, MARKER, None) != DISTRIBUTION:
        owner = f"{owners}, another project" if owners else "another project"
        return Finding(
            f"the `{IMPORT_NAME}` package imported from {where} is not {DISTRIBUTION}'s: its "
            f"__init__.py is {owner}'s, installed over ours under the same import name; "
            f"{uninstall}`{reinstall}`",
            True,
        )
    if rivals:
        return Finding(
            f"{owners} (another project) also installs the `{IMPORT_NAME}` package in "
            f"{os.path.dirname(where)}; whichever is installed last replaces the other's "
            f"`{IMPORT_NAME}/__init__.py` and `{IMPORT_NAME}` command: {uninstall}"
            f"`{reinstall}`",
            False,
        )
    return None


def _reinstall(sites: set[str] | None = None) -> str:
    """The command that puts our package back in place: pip from where it was installed."""
    return f"pip install --force-reinstall {install_spec(sites)}"


def install_spec(sites: set[str] | None = None, *, other_interpreter: bool = False) -> str:
    """How pip installs this diffgenome again: from where it was installed (PEP 610's
    ``direct_url.json`` in our ``*.dist-info``: a git URL, a folder, an sdist or a wheel), else
    by name from the package index. ``other_interpreter``: for another Python, which cannot
    take a wheel built for this one: an sdist beside that wheel, else the name and version.
    ``sites``: the site folders of the imported package (default: its own)."""
    try:
        found = _direct_url(sites)
    except Exception:
        found = None
    pinned = f"{DISTRIBUTION}=={version()}"
    if found is None:
        return pinned if other_interpreter else DISTRIBUTION
    url, info = found
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    local = unquote(parts.path) if parts.scheme == "file" else None
    subdirectory = info.get("subdirectory")
    tail = f"#subdirectory={subdirectory}" if isinstance(subdirectory, str) else ""
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict):
        revision = vcs.get("requested_revision") or vcs.get("commit_id")
        return f"{vcs.get('vcs', 'git')}+{url}{f'@{revision}' if revision else ''}{tail}"
    directory = info.get("dir_info")
    if isinstance(directory, dict):
        where = local or url
        return f"-e {where}" if directory.get("editable") and not other_interpreter else where
    where = local or url
    if other_interpreter and where.endswith(".whl"):
        name = DISTRIBUTION.replace("-", "_")
        sdist = os.path.join(os.path.dirname(where), f"{name}-{version()}.tar.gz")
        return sdist if local and os.path.isfile(sdist) else pinned
    return where


def _direct_url(sites: set[str] | None) -> tuple[str, dict[str, object]] | None:
    """The URL our distribution was installed from and its PEP 610 details, or None (from an
    index, or no metadata beside the package)."""
    import json

    if sites is None:
        import diffgenome as package

        sites = {os.path.dirname(os.path.abspath(str(f))) for f in package.__path__}
    for site in sorted(sites):
        try:
            names = sorted(e.name for e in os.scandir(site) if e.name.endswith(".dist-info"))
        except OSError:
            continue
        for name in names:
            if _normal(name[: -len(".dist-info")].rsplit("-", 1)[0]) != _normal(DISTRIBUTION):
                continue
            try:
                with open(os.path.join(site, name, "direct_url.json"), encoding="utf-8") as f:
                    info = json.load(f)
            except (OSError, ValueError):
                return None
            return _url_of(info)
    # Not beside the package: an editable install keeps its metadata in site-packages, and
    # names the folder that holds the package (anything else is another installation's).
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import unquote, urlsplit

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = distribution(DISTRIBUTION).read_text("direct_url.json")
        found = _url_of(json.loads(text)) if text else None
    except (PackageNotFoundError, ValueError):
        return None
    if found is None:
        return None
    parts = urlsplit(found[0])
    here = {os.path.normcase(os.path.abspath(site)) for site in sites}
    if parts.scheme == "file" and os.path.normcase(os.path.abspath(unquote(parts.path))) in here:
        return found
    return None


def _url_of(info: object) -> tuple[str, dict[str, object]] | None:
    if isinstance(info, dict) and isinstance(info.get("url"), str):
        return info["url"], info
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
