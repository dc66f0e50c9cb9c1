# Two commands on a fresh machine with Python 3.11+, a C++ compiler, make and perl:
#   make demo   set up .venv, compress the bundled real tensors, simulate the blocks
#   make test   set up .venv and run the suite that CI runs (pytest -m slow: the long sweeps)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup test demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check golden rtl sim linkcodec tests
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m "not slow" --durations=25 tests

demo: $(STAMP)
	$(BIN)/linkcodec demo

bench: $(STAMP)
	$(BIN)/linkcodec bench

clean:
	rm -rf build .pytest_cache
