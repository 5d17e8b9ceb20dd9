# trainyard: `make run` installs into .venv and starts the server; `make test` installs, lints
# (ruff, mypy) and tests, so CI runs all three. The install picks the CPU torch wheel where no
# NVIDIA GPU is present (scripts/install-torch says which it chose).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run lint test install bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip setuptools wheel

$(STAMP): pyproject.toml scripts/install-torch | $(BIN)/python
	scripts/install-torch $(BIN)/pip
	$(BIN)/pip install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/trainyard serve

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy src

test: lint
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/train.py

clean:
	rm -rf $(VENV) build *.egg-info
