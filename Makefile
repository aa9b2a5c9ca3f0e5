# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint format protos bench clean

# Two stamps: what the demo needs (the package and its run-time dependencies), and the test
# toolchain on top of it (pytest, playwright, jax, ruff, mypy, ...), only for `make test`.
$(VENV)/.demo-installed: pyproject.toml setup.py tb_roofline_plugin/xspace/_wire.c \
		tb_roofline_plugin/render/_text.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.test-installed: $(VENV)/.demo-installed
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.demo-installed
	$(PY) -m tb_roofline_plugin.cli demo

# The frontend's formatter and linter (prettier, eslint), pinned in package-lock.json.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# `make test` (what CI runs, .ci/run) is `make lint`, then the whole test suite.
test: lint
	$(PY) -m pytest -q

# Formatting and lint of the Python code and the frontend, the types, and the import
# contract of pyproject.toml's [tool.importlinter] (layers).
lint: $(VENV)/.test-installed node_modules/.installed
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m mypy
	npx --no-install prettier --check frontend
	npx --no-install eslint frontend

format: $(VENV)/.test-installed node_modules/.installed
	$(PY) -m ruff format .
	npx --no-install prettier --write frontend

protos: $(VENV)/.test-installed
	$(PY) -m tb_roofline_plugin.protos.generate

bench: $(VENV)/.test-installed
	$(PY) benchmarks/run.py --browser

clean:
	rm -rf $(VENV) build *.egg-info node_modules
