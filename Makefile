# shancoll developer entry points. Every target that runs code first runs
# `make setup` (scripts/setup.sh: idempotent; builds and installs shancoll
# into .venv against the venv's MPICH).
#
#   make setup   create/update .venv, build + install shancoll
#   make test    setup, then run the test suite (under CI=true, or SHANCOLL_ALL_LIBS=1,
#                setup also builds the Open MPI and Intel MPI envs and SimGrid's SMPI
#                build, and the suites run under every library: scripts/setup.sh step 8)
#   make bench   setup, then run the quick benchmark sweep
#   make bench-peers  setup, then a plain C benchmark under every MPI library in its
#                documented settings and with the PMPI preload (2 ranks; benchmarks/peers.py)
#   make lint    ruff + clang-format checks (no changes made)
#   make smpi    SimGrid SMPI build of the core + driver (installs SimGrid if missing;
#                scripts/setup_smpi.sh), then the 64-rank simulated correctness check
#   make smpi-sweep  the simulated 1..32-node sweeps (hours of wall time; see
#                benchmarks/smpi/README.md for a subset)
#   make clean   remove build artefacts (keeps .venv); `make distclean` also removes .venv

SHELL := /bin/bash

VENV   := .venv
PYTHON := $(VENV)/bin/python

# Run the venv's tools (mpiexec, mpicxx, ...) ahead of any system MPI.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

TEST_CMD  := $(PYTHON) -m pytest tests -q
BENCH_CMD := $(PYTHON) -m shancoll.bench.sweep --quick

RUFF         := $(firstword $(wildcard $(VENV)/bin/ruff) $(shell command -v ruff 2>/dev/null))
CLANG_FORMAT := $(firstword $(wildcard $(VENV)/bin/clang-format) $(shell command -v clang-format 2>/dev/null))
CXX_SOURCES   = $(shell find src/cpp tests benchmarks -type f \
                  \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.cpp' -o -name '*.c' \) \
                  2>/dev/null)

.PHONY: all setup test bench bench-peers docs lint clean distclean smpi smpi-check smpi-sweep

all: test

setup:
	bash scripts/setup.sh

test: setup
	$(TEST_CMD)

bench: setup
	$(BENCH_CMD)

# The API reference (docs/api), warnings as errors: docs/api/_build/index.html.
docs: setup
	$(PYTHON) -m sphinx -W -q -b html docs/api docs/api/_build

bench-peers: setup
	$(PYTHON) benchmarks/peers.py --repeats 5

SMPI_SWEEP := python3 benchmarks/smpi/sweep_smpi.py
SMPI_ARIES := benchmarks/smpi/platforms/aries_dragonfly_32.xml
SMPI_FDR   := benchmarks/smpi/platforms/fdr_fattree_32.xml

smpi:
	bash scripts/setup_smpi.sh
	$(MAKE) smpi-check

# 2 simulated nodes x 32 ranks, real buffers, every algorithm against SMPI's MPI collective.
smpi-check:
	$(SMPI_SWEEP) allgatherv --check --platform $(SMPI_ARIES) --nodes 2 --sizes 0,1,1000,70000
	$(SMPI_SWEEP) allreduce --check --platform $(SMPI_FDR) --nodes 2 --counts 1,255,1000

# The committed results (docs/performance.md, "Simulated at scale"); --resume skips done points.
smpi-sweep:
	$(SMPI_SWEEP) allgatherv --platform $(SMPI_ARIES) --resume --sizes 1024 --shared \
	  --shancoll shan --out benchmarks/results/smpi/allgatherv_aries.csv
	$(SMPI_SWEEP) allgatherv --platform $(SMPI_ARIES) --resume --sizes 1024 --shancoll shan \
	  --smpi= --out benchmarks/results/smpi/allgatherv_aries.csv
	$(SMPI_SWEEP) allreduce --platform $(SMPI_FDR) --resume --counts 1 --dtypes int --ops sum \
	  --out benchmarks/results/smpi/allreduce_fdr.csv
	python3 benchmarks/smpi/plot_smpi.py benchmarks/results/smpi/*.csv

lint:
	@if [ -z "$(RUFF)" ]; then echo "ruff not found: run 'make setup' first" >&2; exit 1; fi
	$(RUFF) check .
	@if [ -z "$(CLANG_FORMAT)" ]; then \
	  echo "clang-format not found; skipping C++ format check"; \
	elif [ -n "$(strip $(CXX_SOURCES))" ]; then \
	  echo "$(CLANG_FORMAT) --dry-run --Werror <C/C++ sources>"; \
	  $(CLANG_FORMAT) --dry-run --Werror $(CXX_SOURCES); \
	fi

clean:
	rm -rf build _skbuild dist .pytest_cache .ruff_cache
	find . -path ./$(VENV) -prune -o \( -name '*.egg-info' -o -name '__pycache__' \) -prune \
	  -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
