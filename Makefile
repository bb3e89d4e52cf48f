# Two entry points from a fresh clone: `make bench` and `make test`. Both create .venv if missing
# and install the project with its dev extra (re-installed when pyproject.toml changes).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup test test-deep bench benchmarks lint typecheck clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ctxbench needs Python >= 3.11 (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)

# The modules setup.py compiles (its COMPILED list): an edit to one re-installs, which compiles it again (about a
# minute with gcc). Without a C compiler the install is pure Python.
COMPILED := $(shell sed -n 's/^    "\([a-z_/]*\.py\)",$$/\1/p' setup.py)

$(STAMP): pyproject.toml setup.py $(COMPILED) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "setup: installing ctxbench and its dev extra; compiling the replay's hot path (setup.py)" >&2
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@$(BIN)/python -c 'import harness.build as b; print("setup:", b.current().describe())' >&2
	@touch $(STAMP)

setup: $(STAMP)

# ruff, then the layer contract of docs/design.md ("Which way imports go") with import-linter.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo

typecheck: setup
	$(BIN)/mypy

# One pytest worker per core (pytest-xdist); each test's result does not depend on the others'.
test: lint typecheck
	$(BIN)/python -m pytest -n auto

# Random exploration of the property tests (many more examples, random, with the example database):
# not part of `make test`, whose examples are the same on every machine.
test-deep: setup
	HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest tests/properties -q

bench: setup
	$(BIN)/ctxbench run examples/default.toml --out runs/default

# Speed benchmarks (pytest-benchmark), timed for real rather than run once as tests.
benchmarks: setup
	$(BIN)/python -m pytest tests/benchmarks --benchmark-enable --benchmark-only

clean:
	rm -rf build harness/build_record.json
	find harness strategies -name '*.so' -delete; rm -f ctxbench__mypyc*.so
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache .benchmarks .import_linter_cache
