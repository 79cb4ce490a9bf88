# Two commands do all the set-up on a fresh machine:
#   make demo   creates .venv, installs recallbench, runs it on the bundled default, writes out/
#   make test   installs the test dependencies, runs ruff, mypy (strict) and the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: demo test lint typecheck pytest schemas bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/recallbench run --out out

test: $(VENV)/.installed-dev lint typecheck pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# On every core (pytest-xdist), a test file per worker: module fixtures are built once.
pytest: $(VENV)/.installed-dev
	$(BIN)/pytest -n auto --dist loadfile

# Regenerate the JSON Schema files shipped in the package from the models.
schemas: $(VENV)/.installed
	$(BIN)/python -m recallbench.schemas

# Time `recallbench evaluate` against pytrec_eval and ranx on a 7M-line run (a few minutes).
bench: $(VENV)/.installed-dev
	$(PIP) install -e '.[bench]'
	$(BIN)/python benchmarks/evaluate_speed.py --data /dev/shm/recallbench-bench

clean:
	rm -rf $(VENV) out .cache .mypy_cache .ruff_cache .pytest_cache .hypothesis
