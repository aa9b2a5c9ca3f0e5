# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint format protos bench clean

$(VENV)/.installed: pyproject.toml setup.py tb_roofline_plugin/xspace/_wire.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(PY) -m tb_roofline_plugin.cli demo

# `make test` (what CI runs, .ci/run) is `make lint`, then the whole test suite.
test: lint
	$(PY) -m pytest -q

# Formatting, lint, and the import contract of pyproject.toml's [tool.importlinter] (layers).
lint: $(VENV)/.installed
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports

format: $(VENV)/.installed
	$(PY) -m ruff format .

protos: $(VENV)/.installed
	$(PY) -m tb_roofline_plugin.protos.generate

bench: $(VENV)/.installed
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info
