# `make demo` and `make test` work on a fresh machine with Python >= 3.10 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) || { echo "python3 -m venv failed: install python3-venv (Debian: apt-get install python3-venv)"; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	@touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test,cuda-sim]'
	@touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python examples/quickstart.py

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
