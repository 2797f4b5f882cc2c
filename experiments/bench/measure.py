"""Run one command and report its wall time and peak RSS: ``python measure.py OUT -- CMD...``.

Each measured run gets its own fresh wrapper process because ``RUSAGE_CHILDREN.ru_maxrss`` is
the maximum over every child a process has waited for so far: in a fresh wrapper it is exactly
the peak of this one command (the largest of its process tree that was waited for). Standard
library only; it runs under the harness interpreter. The command's output goes to a log file.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    out, log, timeout, sep, *cmd = argv
    assert sep == "--", "usage: measure.py OUT LOG TIMEOUT -- CMD..."
    with open(log, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            rc = proc.wait(timeout=float(timeout))
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {
        "returncode": rc,
        "timed_out": timed_out,
        "wall_s": wall,
        "maxrss_kb": usage.ru_maxrss,  # kilobytes on Linux
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
    }
    with open(out, "w") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
