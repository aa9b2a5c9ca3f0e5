# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint format protos bench clean

$(VENV)/.installed: pyproject.toml setup.py tb_roofline_plugin/xspace/_wire.c \
		tb_roofline_plugin/render/_text.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
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
lint: $(VENV)/.installed node_modules/.installed
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m mypy
	npx --no-install prettier --check frontend
	npx --no-install eslint frontend

format: $(VENV)/.installed node_modules/.installed
	$(PY) -m ruff format .
	npx --no-install prettier --write frontend

protos: $(VENV)/.installed
	$(PY) -m tb_roofline_plugin.protos.generate

bench: $(VENV)/.installed
	$(PY) benchmarks/run.py --browser

clean:
	rm -rf $(VENV) build *.egg-info node_modules
