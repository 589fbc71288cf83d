"""The C++ core under SimGrid SMPI (benchmarks/smpi): built with smpicxx, run
by smpirun on 2 simulated nodes x 8 ranks with real buffers, every allgatherv
and allreduce algorithm compared with SMPI's own MPI collective.

Skipped when SimGrid is not installed (`make smpi`, or `make setup` with
SHANCOLL_ALL_LIBS=1, installs it; see docs/performance.md "Simulated at
scale"); in CI, where `make setup` installs it, a failure. The 64-rank
version of the same check is `make smpi-check`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _ci import missing

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "smpi"
SWEEP = ROOT / "benchmarks" / "smpi" / "sweep_smpi.py"
PLATFORMS = ROOT / "benchmarks" / "smpi" / "platforms"
TIMEOUT = float(os.environ.get("SHANCOLL_TEST_SUITE_TIMEOUT", "300"))


@pytest.fixture(scope="module")
def driver() -> Path:
    if not (shutil.which("smpicxx") and shutil.which("smpirun") and shutil.which("cmake")):
        missing("SimGrid SMPI (smpicxx, smpirun) not installed: `make smpi` installs it")
    # Incremental: a no-op when build/smpi is up to date (make smpi built it).
    subprocess.run(
        ["cmake", "-S", str(ROOT / "benchmarks" / "smpi"), "-B", str(BUILD),
         f"-DCMAKE_CXX_COMPILER={shutil.which('smpicxx')}"],
        check=True, capture_output=True, timeout=TIMEOUT,
    )  # fmt: skip
    build = subprocess.run(
        ["cmake", "--build", str(BUILD), "-j2"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return BUILD / "shancoll_bench_smpi"


@pytest.mark.parametrize(
    "args",
    [
        ["allgatherv", "--platform", str(PLATFORMS / "aries_dragonfly_32.xml"),
         "--sizes", "0,1,1000,70000"],
        ["allgatherv", "--platform", str(PLATFORMS / "aries_dragonfly_32.xml"),
         "--sizes", "1000", "--dists", "decreasing", "--transport", "rma", "--shancoll", "shan"],
        ["allreduce", "--platform", str(PLATFORMS / "fdr_fattree_32.xml"),
         "--counts", "1,255,1000"],
    ],
    ids=["allgatherv", "allgatherv-rma", "allreduce"],
)  # fmt: skip
def test_smpi_matches_smpi_collectives(driver, args):
    cmd = [sys.executable, str(SWEEP), *args, "--check", "--nodes", "2", "--ranks-per-node", "8",
           "--driver", str(driver), "--run-timeout", str(int(TIMEOUT))]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=4 * TIMEOUT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " ok " in run.stdout and "FAIL" not in run.stdout
