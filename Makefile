# The README's commands. `make up` runs ProfilerHub on this machine; `make test` runs every test.
#
# Two install stamps: `make up` installs only what the server needs (the [server] extra: about a
# minute on a fresh clone); `make test` adds the test and lint tools and torch on top of it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SERVER := $(VENV)/.installed-server
STAMP  := $(VENV)/.installed

.PHONY: install install-server up test lint bench clean

$(BIN)/python:
	@echo "make: creating $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV)

# pip's own output is the progress: one line per package it collects, a bar per download.
# --no-compile: Python compiles what it imports on first use; compiling ~160 packages up front
# took a third of the install (206 s instead of 330 s on a loaded 2-core machine).
$(SERVER): pyproject.toml | $(BIN)/python
	@echo "make: installing ProfilerHub and its server dependencies into $(VENV)"
	$(BIN)/python -m pip install --disable-pip-version-check --no-compile --progress-bar on -e '.[server]'
	@touch $(SERVER)

$(STAMP): pyproject.toml $(SERVER)
	@echo "make: installing the test and lint tools and torch into $(VENV)"
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch: the CPU wheel this machine keeps locally (never a CUDA build).
	$(BIN)/python -m pip install --quiet -e '.[server,dev]' 'torch==2.13.0'
	# Byte-compile everything once: the suite starts hundreds of hub, worker and app processes, and
	# where PYTHONDONTWRITEBYTECODE is set (this machine kind sets it) each would compile its imports again (~2 s
	# of CPU per process). A few files of torch's own tests are not valid Python 3.11: ignored.
	@echo "make: byte-compiling the virtual environment and the sources"
	-@$(BIN)/python -m compileall -q -j0 $(VENV)/lib services workers > /dev/null 2>&1
	@touch $(STAMP)

install-server: $(SERVER)  ## create .venv with what `profilerhub up` needs, nothing more

install: $(STAMP)  ## create .venv with everything, test tools included

up: install-server  ## run hub, workers and apps on this machine with embedded defaults
	$(BIN)/profilerhub up

# Two pytest-xdist workers: most tests run in process on one core, so one pytest left the second
# core idle much of the time. `--dist loadfile` keeps each file on one worker, so a module's shared
# stack (hub, worker, Chromium) starts once. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2

test: install  ## start the services the tests need and run the whole suite
	@bash infra/ensure-test-deps.sh
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: install
	$(BIN)/ruff check services workers tests benchmarks infra
	$(BIN)/mypy services workers

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
