# trainyard: `make run` installs into .venv (run-time dependencies only) and starts the server;
# `make test` also installs the development extras, lints (ruff, mypy) and tests, so CI runs all
# three. The install picks the CPU torch wheel where no NVIDIA GPU is present
# (scripts/install-torch says which it chose).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run lint test test-fast install bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip setuptools wheel

$(STAMP): pyproject.toml scripts/install-torch | $(BIN)/python
	scripts/install-torch $(BIN)/pip
	$(BIN)/pip install -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/pip install -e '.[dev]'
	touch $(DEV_STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/trainyard serve

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy src

test: lint
	$(BIN)/python -m pytest -q --durations=20

# The unit tests alone, for the edit-test loop (under 3 minutes on 2 cores): no subprocess jobs,
# PostgreSQL, namespaces, browsers or slow tests (tests/conftest.py marks them by folder, fixture
# and call). `make test` stays the whole suite.
test-fast: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -m "not slow and not jobs and not postgres and not namespaces and not browser and not gpu"

bench: $(STAMP)
	$(BIN)/python bench/data/ingest.py
	$(BIN)/python bench/training/train.py

clean:
	rm -rf $(VENV) build *.egg-info
