"""The suite's last module (by name): the process exits with kept calls live.

The entries of the blocking allreduce, bcast, reduce and barrier keep their
last call (src/cpp/bindings/entry.h). Here the job ends with kept calls on a
communicator never freed (its shancoll state goes at MPI_Finalize), one kept
call whose communicator has been freed, and calls whose user-defined op has
been freed (never kept: entry.cc, KeptCall). Interpreter exit must then be
clean on every rank: tests/test_mpi_suites.py fails the run on a non-zero
exit (a crash in Python's teardown or in MPI_Finalize after every test
passed).
"""

from __future__ import annotations

import numpy as np
from _mpi_util import assert_all
from mpi4py import MPI

import shancoll

COMM = MPI.COMM_WORLD
_LEFT = []  # a communicator left for MPI_Finalize, held to the end


def _first(inbuf, inoutbuf, datatype):
    """a o b = a: not commutative, the result is the lowest rank's input."""
    np.copyto(np.frombuffer(inoutbuf, "f8"), np.frombuffer(inbuf, "f8"))


def test_exit_with_kept_calls_live():
    left = COMM.Dup()
    _LEFT.append(left)
    freed = COMM.Split(0, COMM.size - 1 - COMM.rank)
    a, b = np.ones(4), np.zeros(4)
    for _ in range(3):
        shancoll.allreduce(freed, a, b)
    freed.Free()  # the allreduce kept on it: stale, dropped at exit
    op = MPI.Op.Create(_first, commute=False)
    try:
        for _ in range(3):
            a[:] = COMM.rank
            shancoll.reduce(left, a, b if left.rank == 0 else None, op, 0)
            assert_all(COMM, left.rank != 0 or (b == 0).all(), f"non-commutative reduce: {b}")
    finally:
        op.Free()
    for _ in range(3):
        a[:] = left.rank + 1
        shancoll.reduce(left, a, b if left.rank == 0 else None, MPI.SUM, 0)
        shancoll.bcast(left, b, 0)
        shancoll.barrier(left)
    want = left.size * (left.size + 1) / 2
    assert_all(COMM, (b == want).all(), f"reduce then bcast: {b} != {want}")
