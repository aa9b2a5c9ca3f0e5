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

test: $(VENV)/.installed
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m pytest -q

lint: $(VENV)/.installed
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .

format: $(VENV)/.installed
	$(PY) -m ruff format .

protos: $(VENV)/.installed
	$(PY) -m tb_roofline_plugin.protos.generate

bench: $(VENV)/.installed
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info
