"""A small report tool whose behaviour is mostly what it does to the world: what it prints,
logs, writes, warns and sets (tests/e2e/test_effects.py changes each of these in turn)."""

import logging
import os
import warnings

log = logging.getLogger("report.cli")


def summary(items):
    total = sum(items)
    print(f"total: {total}")
    return total


def publish(items, folder):
    with open(os.path.join(folder, "report.txt"), "w") as out:
        out.write(f"items: {len(items)}\n")
    return len(items)


def check(items):
    if len(items) > 2:
        log.warning("%d items is many", len(items))
    return len(items) > 2


def legacy(items):
    warnings.warn("legacy() is deprecated", DeprecationWarning, stacklevel=2)
    return list(items)


def configure():
    os.environ["REPORT_MODE"] = "fast"
    return True
