"""The session's hook into new interpreters (#11): the variable a child finds its session by,
the ``.pth`` line that starts its collector, and the capture folder's name.

The way coverage.py measures subprocesses: while a session records, one line in a ``.pth``
file of the interpreter's site-packages (written when the session starts, removed when it
ends) starts a collector in every new Python process of that environment, but only when
``DIFFGENOME_CHILD`` is in its environment; without it the line costs one dictionary lookup.
What sessions that died leave behind (their ``.pth``, their capture folders, which may hold a
child's values) is removed by the next session's start.
"""

from __future__ import annotations

import os
import sys
from typing import Final

from diffgenome.recording.collect.childwire import try_remove, write_file

_getpid = os.getpid
_listdir = os.listdir

ENV: Final = "DIFFGENOME_CHILD"
CONFIG_NAME: Final = "config.json"
#: The capture folder's name in the temporary folder: ``<prefix><session pid>-<random>``.
FOLDER_PREFIX: Final = "diffgenome-children-"
#: Sorted after every other ``.pth`` (site processes them in name order), so that the paths
#: an editable install adds are in place when the line imports diffgenome.
PTH_PREFIX: Final = "zz-diffgenome-child-"
PTH_LINE: Final = (
    "import os, sys; exec("
    + repr(
        f"if {ENV!r} in os.environ:\n"
        " try:\n"
        "  from diffgenome.recording.child import start\n"
        "  start()\n"
        " except Exception as exc:\n"
        "  sys.stderr.write('diffgenome: this Python child process is not recorded: %r\\n'"
        " % (exc,))\n"
    )
    + ")\n"
)
#: What the variable's value starts with: stable.py makes the value itself stable text
#: (a test that copies ``os.environ`` into a value must not digest a pid or a folder).
VALUE_PREFIX: Final = "diffgenome-child:"


def parse_value(value: str) -> tuple[str, str]:
    """``(token, folder)`` of a ``DIFFGENOME_CHILD`` value; empty strings when malformed."""
    if not value.startswith(VALUE_PREFIX):
        return "", ""
    token, _, folder = value[len(VALUE_PREFIX) :].partition("|")
    return token, folder


def install_pth(site_packages: str) -> str:
    """Write the ``.pth`` line for this session (and remove those of sessions that died
    without removing theirs); its path."""
    pid = _getpid()
    try:
        for name in _listdir(site_packages):
            if name.startswith(PTH_PREFIX) and name.endswith(".pth"):
                other = name[len(PTH_PREFIX) : -4]
                if other.isdigit() and int(other) != pid and not _alive(int(other)):
                    try_remove(site_packages, name)
    except OSError:
        pass
    name = f"{PTH_PREFIX}{pid}.pth"
    # Readable by all, like any .pth: a child run as another user must not fail to start.
    write_file(site_packages, name, PTH_LINE.encode("utf-8"), 0o644)
    return f"{site_packages}/{name}"


def _alive(pid: int) -> bool:
    if sys.platform == "win32":
        return True  # os.kill(pid, 0) would send CTRL_C_EVENT there: never guess
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_folders(tmp: str) -> None:
    """Capture folders of sessions that died without removing theirs: they may hold a
    child's values (canonical forms), so they do not outlive the next session's start."""
    import shutil

    try:
        names = _listdir(tmp)
    except OSError:
        return
    for name in names:
        if name.startswith(FOLDER_PREFIX):
            pid = name[len(FOLDER_PREFIX) :].partition("-")[0]
            if pid.isdigit() and int(pid) != _getpid() and not _alive(int(pid)):
                shutil.rmtree(f"{tmp}/{name}", ignore_errors=True)


def site_folders() -> list[str]:
    """Where the interpreters of this environment read ``.pth`` files from, in the order
    tried: the environment's site-packages, then (a system Python one may not write to) the
    user's, when it is enabled and exists (it is never created)."""
    import site
    import sysconfig

    folders = [sysconfig.get_path("purelib")]
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user and os.path.isdir(user):
        folders.append(user)
    return folders


def install_hook() -> str:
    """Write the ``.pth`` into the first folder that takes it; its path."""
    problems: list[str] = []
    for folder in site_folders():
        try:
            return install_pth(folder)
        except OSError as exc:
            problems.append(f"{folder}: {exc.strerror or exc}")
    raise OSError("cannot write the child-process hook into " + "; ".join(problems))
