# diffgenome developer targets. PYTHON=/path/to/python picks the interpreter; VENV the folder.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: venv test test-fast test-interpreter lint format demo bench bench-quick compat compat-examples schema chromium clean

venv:
	@sh scripts/venv $(VENV)

# Two workers, each taking whole files (a module's fixtures record once), in the order
# tests/e2e/conftest.py gives: the files with slow tests first, the unit tests last.
XDIST := -n 2 --dist loadfile --no-loadscope-reorder

# Everything, as CI runs it.
test: venv
	$(PY) -m pytest $(XDIST) -q $(PYTEST_ARGS)

# The edit-run loop: the unit layer and the end-to-end smoke set (tests/e2e/conftest.py).
test-fast: venv
	$(PY) -m pytest $(XDIST) -q -m "not e2e or smoke" $(PYTEST_ARGS)

# What CI runs on every further Python: the unit layer, the smoke set and the end-to-end
# modules about what the recorder sees (tests/e2e/conftest.py, INTERPRETER).
test-interpreter: venv
	$(PY) -m pytest $(XDIST) -q -m "not e2e or smoke or interpreter" $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check diffgenome tests experiments
	$(VENV)/bin/ruff format --check diffgenome tests experiments
	$(VENV)/bin/mypy --strict diffgenome

format: venv
	$(VENV)/bin/ruff check --fix diffgenome tests experiments
	$(VENV)/bin/ruff format diffgenome tests experiments

schema: venv
	$(PY) -m diffgenome.analysis.cli schema genome > docs/schema/diffgenome-genome-2.schema.json
	$(PY) -m diffgenome.analysis.cli schema diff > docs/schema/diffgenome-diff-3.schema.json

demo: venv
	$(PY) experiments/demo.py

bench: venv
	$(PY) experiments/bench.py

bench-quick: venv
	$(PY) experiments/bench.py --quick

# Strict settings and common plugins, plain vs --genome (docs/reliability.md); CI runs the
# example rows as tests/e2e/test_compat.py.
compat: venv
	$(PY) experiments/compat.py

compat-examples: venv
	$(PY) experiments/compat.py --examples-only

# The headless browser of the HTML report's tests (Debian's chromium; installed only when no
# Chromium is on PATH). Without it those tests skip on a workstation and fail in CI.
chromium:
	@sh scripts/ensure-chromium

clean:
	rm -rf .venv .venv-* .diffgenome build *.egg-info
