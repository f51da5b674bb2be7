# Run ./setup.sh first on a fresh machine (it installs make itself); `./setup.sh TARGET` does both.
PY      := .venv/bin/python
export PYTHONPATH := $(CURDIR)/plugin

.PHONY: all fixtures demo test lint unit e2e matrix matrix-ci debuggers bench clean

all: test

fixtures:
	$(PY) fixtures/build.py

demo: fixtures
	bash demo/run.sh

lint:
	$(PY) -m ruff check plugin gdb lldb tests fixtures bench
	$(PY) -m mypy

# The version matrix's CI cases first, so that the whole suite's summary is the last line.
# Two workers (the machines we test on have two cores; a file's tests stay on one worker, so
# its module-scoped debugger sessions are made once): 13 min -> about 6 min.
XDIST := -n 2 --dist loadfile
test: fixtures lint
	$(MAKE) --no-print-directory matrix-ci
	$(PY) -m pytest -q $(XDIST)

unit:
	$(PY) -m pytest -q $(XDIST) tests/unit

e2e: fixtures
	$(PY) -m pytest -q $(XDIST) tests/e2e

# The debuggers our users have: GDB 13 and LLDB 22 from setup.sh, GDB 18.1 and LLDB 19
# from tools/debuggers.sh (a private prefix, .debuggers/). `matrix` runs the e2e suite against GDB
# 13, GDB 18 and LLDB 22, and the scenario table and version checks against LLDB 19; `matrix-ci`
# (part of `test`) their representative cases against GDB 18 and LLDB 19: one variant per
# fragment source (GCC .cold, clang MFS, BOLT), with and without DWARF, live and post-mortem.
GDB18  := $(CURDIR)/.debuggers/bin/gdb-18
LLDB19 := $(CURDIR)/.debuggers/bin/lldb-19
MATRIX_CI_K := gcc-pgo or clang-mfs- or bolt-all- or test_errors or test_fully_stripped \
               or test_missing

debuggers:
	bash tools/debuggers.sh

# LLDB 19 runs the scenario table and the version checks: the other e2e files drive what it
# cannot do (its own bt through split functions with DWARF, see docs/versions.md).
matrix: fixtures debuggers
	$(PY) -m pytest -q $(XDIST) tests/e2e
	UNSPLIT_GDB=$(GDB18) $(PY) -m pytest -q $(XDIST) tests/e2e -k "gdb and not lldb"
	UNSPLIT_LLDB=$(LLDB19) $(PY) -m pytest -q $(XDIST) tests/e2e/test_scenarios.py \
	    tests/e2e/test_versions.py -k "lldb"

matrix-ci: fixtures debuggers
	UNSPLIT_GDB=$(GDB18) $(PY) -m pytest -q $(XDIST) tests/e2e/test_scenarios.py \
	    tests/e2e/test_versions.py -k "gdb and ($(MATRIX_CI_K))"
	UNSPLIT_LLDB=$(LLDB19) $(PY) -m pytest -q $(XDIST) tests/e2e/test_scenarios.py \
	    tests/e2e/test_versions.py -k "lldb and ($(MATRIX_CI_K))"

bench: fixtures
	$(PY) bench/run.py
	$(PY) bench/stepping.py
	$(PY) bench/bt.py
	$(PY) bench/bbmap.py --repeats 1
	$(PY) bench/names.py --repeats 1
	$(PY) bench/realworld.py
	$(PY) bench/realworld_cpp.py
	$(PY) bench/realworld_sqlite.py
	$(PY) bench/debuginfo.py --realworld
	$(PY) bench/libllvm.py
	$(PY) bench/libllvm_frames.py --mi --dap $(GDB18)
	$(PY) bench/fold.py
	$(PY) bench/fold_corpus.py
	$(PY) bench/breakpad_corpus.py

clean:
	rm -rf fixtures/build
