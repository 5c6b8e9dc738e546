# The README's commands. `make up` runs ProfilerHub on this machine; `make test` runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install up test lint bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch: the CPU wheel this machine keeps locally (never a CUDA build).
	$(BIN)/python -m pip install --quiet -e '.[server,dev]' 'torch==2.13.0'
	@touch $(STAMP)

install: $(STAMP)  ## create .venv with everything, test tools included

up: install  ## run hub, workers and apps on this machine with embedded defaults
	$(BIN)/profilerhub up

test: install  ## start the services the tests need and run the whole suite
	@bash infra/ensure-test-deps.sh
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check services workers tests benchmarks infra
	$(BIN)/mypy services workers

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
