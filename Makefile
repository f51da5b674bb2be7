# Run ./setup.sh first on a fresh machine (it installs make itself); `./setup.sh TARGET` does both.
PY      := .venv/bin/python
export PYTHONPATH := $(CURDIR)/plugin

.PHONY: all fixtures demo test lint unit e2e bench clean

all: test

fixtures:
	$(PY) fixtures/build.py

demo: fixtures
	bash demo/run.sh

lint:
	$(PY) -m ruff check plugin gdb lldb tests fixtures bench
	$(PY) -m mypy

test: fixtures lint
	$(PY) -m pytest -q

unit:
	$(PY) -m pytest -q tests/unit

e2e: fixtures
	$(PY) -m pytest -q tests/e2e

bench: fixtures
	$(PY) bench/run.py
	$(PY) bench/stepping.py
	$(PY) bench/bt.py
	$(PY) bench/bbmap.py --repeats 1
	$(PY) bench/names.py --repeats 1
	$(PY) bench/realworld.py

clean:
	rm -rf fixtures/build
