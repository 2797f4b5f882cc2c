"""The benchmark harness of issue #5: `make bench` (`experiments/bench.py`).

Runs real third-party test suites, from pinned sdists, three ways side by side -- plain pytest,
`pytest --genome`, and `coverage run --branch` with per-test contexts -- and reports medians,
peak memory, store size and any test whose outcome changes under the recorder.
"""
