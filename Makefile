# trainyard: `make run` installs into .venv and starts the server; `make test` installs, lints
# (ruff, mypy) and tests, so CI runs all three.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run lint test install bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip setuptools wheel

$(STAMP): pyproject.toml | $(BIN)/python
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
