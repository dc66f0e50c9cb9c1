# Two commands on a fresh machine with Python 3.11+, a C++ compiler, make and perl:
#   make demo   set up .venv, compress the bundled real tensors, simulate the blocks
#   make test   set up .venv and run the suite that CI runs (pytest -m slow: the long sweeps)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup test test-quick demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check golden rtl sim linkcodec tests
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m "not slow" --durations=25 tests

# The edit loop, a few minutes: lint, the golden models, every codec's encoder driving its
# decoder, one link pair and a generated block's Verilator lint. `make test` is the suite.
QUICK := tests/test_golden_*.py tests/test_payload.py tests/test_imports.py \
	"tests/test_contract.py::test_encoder_drives_its_decoder[qlc-pair-random]" \
	"tests/test_contract.py::test_encoder_drives_its_decoder[huffman-pair-random]" \
	"tests/test_contract.py::test_encoder_drives_its_decoder[huffman-pair-bf16-random]" \
	"tests/test_contract.py::test_encoder_drives_its_decoder[exponent-pair-random]" \
	"tests/test_rtl_link.py::test_link_round_trip[qlc-2-256-64]" \
	"tests/test_rtl_link.py::test_generate_link_lints_clean[link-rx]"

test-quick: $(STAMP)
	$(BIN)/ruff check golden rtl sim linkcodec tests
	$(BIN)/python -m pytest -n 2 --dist loadgroup $(QUICK)

demo: $(STAMP)
	$(BIN)/linkcodec demo

bench: $(STAMP)
	$(BIN)/linkcodec bench

clean:
	rm -rf build .pytest_cache
