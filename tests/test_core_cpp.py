"""The C++ core without Python: tests/cpp/core_tests.cc (every registered
allgatherv algorithm against MPI_Allgatherv, with virtual nodes and both shan
transports) run under mpiexec at several rank counts, with a hard time limit.

The binary is the one `pip install .` puts into the package
(<site-packages>/shancoll/bin/shancoll_core_tests), built against the same MPI.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

NAME = "shancoll_core_tests"
SUMMARY = re.compile(r"^core_tests: (\d+) passed, (\d+) failed$", re.MULTILINE)
TIMEOUT = float(os.environ.get("SHANCOLL_TEST_SUITE_TIMEOUT", "300"))


def _binary() -> Path:
    spec = importlib.util.find_spec("shancoll")
    for location in spec.submodule_search_locations or []:
        path = Path(location) / "bin" / NAME
        if path.is_file():
            return path
    pytest.fail(f"{NAME} is not installed with the package: build with SHANCOLL_TOOLS=ON")


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5])
def test_core_cpp(ranks):
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = dict(os.environ, SHANCOLL_TIMEOUT="60")
    try:
        run = subprocess.run(
            [str(mpiexec), "-n", str(ranks), str(_binary())],
            capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as e:
        tail = (e.stdout or b"")[-3000:]
        pytest.fail(f"{NAME} at {ranks} ranks hung for {TIMEOUT:.0f} s; output tail:\n{tail}")
    output = run.stdout + run.stderr
    summary = SUMMARY.search(output)
    assert summary, f"no summary line from {NAME} at {ranks} ranks:\n{output[-3000:]}"
    assert run.returncode == 0 and summary.group(2) == "0", output[-3000:]
    assert int(summary.group(1)) > 0
