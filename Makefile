# The two commands: `make run` (the app on a shipped demo model) and `make test` (the whole test suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench checkpoints clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m ui.shell.serve --server.port 8501

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m bench

checkpoints: $(STAMP)
	bash checkpoints/build.sh

clean:
	rm -rf $(VENV) .pytest_cache
