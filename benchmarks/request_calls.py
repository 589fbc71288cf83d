"""N repeated 8-byte request calls (after 64 warm-up calls), for callgrind:
the instructions of one request's door, start and wait, from Python.

    mpiexec -n 1 valgrind --tool=callgrind --callgrind-out-file=cg.N \\
        python benchmarks/request_calls.py N ibcast

Run with two N (1000 and 5000) and take the difference of a function's
inclusive count (callgrind_annotate --inclusive=yes) over 4000: the first
call's set-up and the interpreter's start cancel out
(docs/performance.md, "Requests: a refusal on one rank").
Kinds: ibcast, iallreduce (auto), ireduce_binomial, igather_binomial.
"""

import sys

import numpy as np
from mpi4py import MPI

import shancoll

n, kind = int(sys.argv[1]), sys.argv[2]
comm = MPI.COMM_WORLD
buf, out = np.zeros(1), np.zeros(1)
calls = {
    "ibcast": lambda: shancoll.ibcast(comm, buf, 0).wait(),
    "iallreduce": lambda: shancoll.iallreduce(comm, buf, out).wait(),
    "ireduce_binomial": lambda: shancoll.ireduce(
        comm, buf, out, MPI.SUM, 0, algorithm="binomial"
    ).wait(),
    "igather_binomial": lambda: shancoll.igather(comm, buf, out, 0, algorithm="binomial").wait(),
}
call = calls[kind]
for _ in range(64):
    call()
for _ in range(n):
    call()
