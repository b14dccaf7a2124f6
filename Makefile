# The two commands: `make run` (the app on a shipped demo model) and `make test` (the whole test suite). Each sets up
# what it needs on a fresh Debian machine: the virtual environment and, as root, the Debian packages (python3-venv;
# for `make test` Chromium, Xvfb and Qt's libraries: scripts/system-packages.sh, quick when nothing is missing).
# `make test-fast`: ruff, mypy (transformer/, ui/, pages/; cached in .mypy_cache: ~18 s of CPU cold, under 1 s
# after) and everything but the browser tests and the ones that train or start servers (the edit loop);
# `make desktop` opens the same app in its own window.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run desktop test test-fast bench checkpoints clean

$(STAMP): requirements.txt requirements-dev.txt requirements-desktop.txt
	@PYTHON="$(PYTHON)" bash scripts/system-packages.sh venv
	$(or $(PYTHON),python3) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m ui.shell.serve --server.port 8501

# The studio in a native window (pywebview + Qt); Qt's Debian libraries are installed first where a display exists
# (without one, the launcher says so in one line and exits 1).
desktop: $(STAMP)
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then bash scripts/system-packages.sh qt; fi
	@$(PY) -m ui.shell.desktop

# Where the Debian packages cannot be installed (not root, no apt-get) the tests that need them skip with a reason;
# under CI (CI=true) such a skip is a failure. Three pytest-xdist workers with work stealing: much of the suite waits on
# processes, servers and Chromium, and the extra workers fill that time (bench/README.md, "The test suite").
# The tests keep Python's bytecode (and pytest's rewritten test modules) in __pycache__ even where the environment
# says PYTHONDONTWRITEBYTECODE: without it every worker, server and fresh interpreter compiles the tree again (a
# worker's collection: ~11 CPU-s instead of ~5).
TESTS := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -n 3 --dist worksteal

test: $(STAMP)
	@bash scripts/system-packages.sh browser display qt
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(TESTS)

test-fast: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(TESTS) -m "not slow and not browser" -q

bench: $(STAMP)
	$(PY) -m bench

checkpoints: $(STAMP)
	bash checkpoints/build.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
