"""Check an installed pytest-diffgenome: it is ours, it has its compiled core, it records.

cibuildwheel runs this on every wheel it builds (``test-command`` in pyproject.toml), in a
virtualenv where only that wheel and its dependencies are installed; the slow test of
tests/e2e/test_distribution.py runs it on the wheel ``python -m build`` makes here. The
compiled core is an optional extension (setup.py), so a wheel could otherwise ship without it
and only be slow: here that fails. On an interpreter the recorder is not yet tested on (the
capability table's ``tested``; 3.14 now), the core must be built and load, and the recorder
must record with the pure-Python one, as it keeps the core off there. Standard library only;
exits 1 with one line on failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

TEST = """
def double(x):
    if x:
        return 2 * x
    return 0


def test_double():
    assert double(2) == 4
"""


def fail(text: str) -> int:
    print(f"check_wheel: FAILED: {text}", file=sys.stderr)
    return 1


def main() -> int:
    import importlib

    import diffgenome
    from diffgenome.protocol import identity
    from diffgenome.recording.collect import tracer
    from diffgenome.recording.collect.capabilities import CAPABILITIES

    where = Path(diffgenome.__file__ or "?").parent
    finding = identity.check()
    if finding is not None:
        return fail(finding.text)
    # On a version the recorder has not been tested on (3.14 for now) the core must still be
    # built and load, but the recorder keeps it off: the pure-Python core must record.
    expected = "diffgenome: recording with the compiled core"
    if not CAPABILITIES.tested:
        try:
            core = importlib.import_module("diffgenome.recording.collect._accel")
        except ImportError as exc:
            return fail(f"no compiled core in {where} ({exc})")
        if getattr(core, "VERSION", None) != tracer.CORE_VERSION:
            return fail(f"the compiled core in {where} is not this version's")
        expected = "diffgenome: recording with the pure-Python core (untested-interpreter: "
    elif tracer._ACCEL is None:
        return fail(f"no compiled core in {where} ({tracer._ACCEL_ABSENT})")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DIFFGENOME_"))}
    env["COLUMNS"] = "200"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_double.py").write_text(TEST)
        recorded = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--genome"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        output = recorded.stdout + recorded.stderr
        if recorded.returncode != 0 or "1 passed" not in output:
            return fail(f"pytest --genome exited {recorded.returncode}:\n{output}")
        if not any(line.startswith(expected) for line in output.splitlines()):
            return fail(f"pytest --genome did not say `{expected}...`:\n{output}")
        runs = subprocess.run(
            [sys.executable, "-m", "diffgenome.analysis.cli", "runs"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if runs.returncode != 0 or " complete " not in runs.stdout:
            return fail(f"diffgenome runs exited {runs.returncode}:\n{runs.stdout}{runs.stderr}")
    name = f"{identity.DISTRIBUTION} {identity.version()}"
    kept_off = "" if CAPABILITIES.tested else " (kept off: untested interpreter)"
    print(f"check_wheel: ok: {name} in {where}, compiled core{kept_off}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
