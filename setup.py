"""Build hook for the optional compiled core of the collector.

Everything else is declared in pyproject.toml. The extension is optional: when it cannot be
built (no compiler, an interpreter it does not support), the pure-Python callbacks record the
same genomes, only slower; `pytest --genome` says which core it uses.
"""

import hashlib
import os
import sys

from setuptools import Extension, setup

_CORE = "diffgenome/recording/collect"
#: The files the compiled core is built from.
CORE_SOURCES = ("_accel.c", "_accel.h", "_accel_values.c")


def source_digest(folder: str) -> str:
    """The digest the core carries of its sources (``_accel.SOURCE``): the analysis side
    computes the same (analysis/record/core.py) to match a core built elsewhere, or cached,
    to the sources of the diffgenome that uses it."""
    digest = hashlib.sha256()
    for name in CORE_SOURCES:
        with open(os.path.join(folder, name), "rb") as source:
            digest.update(name.encode() + b"\0" + source.read() + b"\0")
    return digest.hexdigest()


# GCC and clang flags; MSVC (Windows wheels) would only warn about them, so it gets its own.
FLAGS = ["/O2"] if sys.platform == "win32" else ["-O2", "-Wall", "-Wno-missing-field-initializers"]
# The interpreter's own flags add debug information (-g): 315 KB on Linux, 65 KB without.
# macOS keeps it out of the linked file anyway, and MSVC writes it only when asked.
LINK = ["-s"] if sys.platform not in ("win32", "darwin") else []

setup(
    ext_modules=[
        Extension(
            "diffgenome.recording.collect._accel",
            # One translation unit: _accel.c #includes _accel_values.c (see _accel.h).
            sources=[f"{_CORE}/_accel.c"],
            depends=[f"{_CORE}/_accel.h", f"{_CORE}/_accel_values.c"],
            optional=True,
            extra_compile_args=FLAGS,
            extra_link_args=LINK,
            define_macros=[("DIFFGENOME_CORE_SOURCE", source_digest(_CORE))],
        )
    ]
)
