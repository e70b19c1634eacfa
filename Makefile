# Two entry points for a newcomer: `make demo` and `make test`. Both create .venv first if needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: setup demo test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)  ## create .venv with the package, Spark, Delta and the test tools

demo: $(STAMP)   ## simulate a small Kafka estate, run the pipeline locally, print the summary
	$(BIN)/rebalance demo

test: $(STAMP)   ## run the test suite (one Spark session for the whole run)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) demo build *.egg-info
