# Two entry points for a newcomer: `make demo` and `make test`. Both create .venv first if needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: setup demo lint test test-slow test-compat lab lab-eval clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)  ## create .venv with the package, Spark, Delta and the test tools

demo: $(STAMP)   ## simulate a small Kafka estate, run the pipeline locally, print the summary
	$(BIN)/rebalance demo

lint: $(STAMP)   ## ruff over the repository, then mypy (strict on pipelines/) as pyproject.toml configures them
	$(BIN)/ruff check .
	$(BIN)/mypy

test: $(STAMP)   ## run the test suite (one Spark session for the whole run): default, connect, cluster, kafka_source and browser tiers
	$(BIN)/python -m pytest -m "not slow and not kafka" $(PYTEST_ARGS)

test-slow: $(STAMP)  ## the slow tier: kill -9 loop, rotation, backlog, OPTIMIZE/VACUUM, older wordings, bench smoke
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

test-compat: $(STAMP)  ## the ends of the supported Spark range (4.0.1 and 4.2.0), each in its own venv, through the whole flow
	$(BIN)/python -m tests.compat $(PYTEST_ARGS)

lab: $(STAMP)    ## real Kafka 3.9, 4.1 and 4.2 on 127.0.0.1, every cause provoked; refreshes tests/data/kafka-lab
	$(BIN)/python -m lab run --version all --commit-corpus

lab-eval: $(STAMP)  ## the pipeline's verdicts on the committed lab corpus, per version and scenario
	$(BIN)/python -m lab.evaluate $(wildcard tests/data/kafka-lab/*.*.*) --min-accuracy 0.95

clean:
	rm -rf $(VENV) .venv-compat demo build *.egg-info
