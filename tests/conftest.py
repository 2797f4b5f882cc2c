"""Shared fixtures. Example projects under tests/projects/ are data, not tests of this suite."""

from __future__ import annotations

collect_ignore_glob = ["projects/*"]
pytest_plugins = ["pytester"]
