#!/usr/bin/env bash
# Builds the SimGrid SMPI version of shancoll's C++ core and benchmark driver
# (build/smpi/shancoll_bench_smpi), installing SimGrid first if smpicxx is
# missing (Debian/Ubuntu: libsimgrid-dev + simgrid, 3.32 on Debian 12).
# Idempotent: reruns only rebuild what changed. `make smpi` runs this.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v smpicxx >/dev/null || ! command -v smpirun >/dev/null; then
  if ! command -v apt-get >/dev/null; then
    echo "setup_smpi: smpicxx not found and no apt-get; install SimGrid (>= 3.32) by hand" >&2
    exit 1
  fi
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup_smpi: installing SimGrid (libsimgrid-dev, simgrid)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libsimgrid-dev simgrid
fi

echo "setup_smpi: $(smpirun -version 2>/dev/null | head -1 || echo SimGrid)"
cmake -S benchmarks/smpi -B build/smpi -DCMAKE_CXX_COMPILER="$(command -v smpicxx)" >/dev/null
cmake --build build/smpi -j "${SHANCOLL_SMPI_JOBS:-2}"
echo "setup_smpi: built build/smpi/shancoll_bench_smpi"
