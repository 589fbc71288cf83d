"""The Python entries' repeat path (src/cpp/bindings/entry.h): a repeated
call with the same arguments runs the entry's kept call, without taking its
arguments again. Its results, call by call with the arguments changed in
between: tests/mpi/test_mpi_repeated_calls.py.

Counted by callgrind in a singleton MPI process: the instructions inside
``PyUnicode_AsUTF8AndSize``, which every blocking collective's intake calls
for its ``algorithm`` argument (and the repeat path never does), are the same
for N and for 2N calls: only the first call takes the arguments.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from _ci import missing

CALLS = 50
TIMEOUT = 300

# Each blocking collective with a repeat path, called `calls` times.
SCRIPT = """
import sys
import numpy as np
from mpi4py import MPI
import shancoll

comm, calls = MPI.COMM_WORLD, int(sys.argv[1])
a, b = np.ones(1), np.zeros(1)
for _ in range(calls):
    shancoll.allreduce(comm, a, b)
    shancoll.bcast(comm, b)
    shancoll.reduce(comm, a, b, op=MPI.MAX)
    shancoll.barrier(comm, timeout=30)
"""


def _intake_instructions(calls: int, tmp_path) -> int:
    out = tmp_path / f"callgrind.{calls}"
    grind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             "--toggle-collect=PyUnicode_AsUTF8AndSize"]  # fmt: skip
    run = subprocess.run(
        [*grind, sys.executable, "-c", SCRIPT, str(calls)],
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    m = re.search(r"^(?:summary|totals):\s*(\d+)", out.read_text(), re.M)
    assert m, out.read_text()[:2000]
    return int(m.group(1))


def test_a_repeated_call_does_not_take_its_arguments_again(tmp_path):
    if not shutil.which("valgrind"):
        missing("valgrind is not installed (make setup as root installs it)")
    once = _intake_instructions(CALLS, tmp_path)
    twice = _intake_instructions(2 * CALLS, tmp_path)
    assert once > 0  # the first call of each collective took its arguments
    assert twice == once, f"{(twice - once) / CALLS:.0f} instructions a repeated call in the intake"
