"""Two threads calling shancoll collectives at once, each on a communicator
of its own (MPI allows concurrent collectives on different communicators at
MPI_THREAD_MULTIPLE): every result equals mpi4py's collective on the same
communicator. The bindings release the GIL around each call, so the two
threads really are inside the core together."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _mpi_util import assert_all
from mpi4py import MPI

import shancoll

CALLS = 60


def mixed_calls(comm: MPI.Comm, seed: int, failures: list[str]) -> None:
    rng = np.random.default_rng(seed)  # the same sequence on every rank of comm
    for i in range(CALLS):
        n = int(rng.integers(1, 3000))
        x = np.arange(n, dtype=np.float64) * (comm.rank + 1) + i
        kind = i % 5
        if kind == 0:
            got, want = np.empty(n), np.empty(n)
            shancoll.allreduce(comm, x, got)
            comm.Allreduce(x, want)
        elif kind == 1:
            counts = [n + r for r in range(comm.size)]
            mine = np.full(counts[comm.rank], float(comm.rank + i))
            got, want = np.empty(sum(counts)), np.empty(sum(counts))
            shancoll.allgatherv(comm, mine, [got, counts])
            comm.Allgatherv(mine, [want, counts])
        elif kind == 2:
            got = x.copy() if comm.rank == 0 else np.empty(n)
            want = x.copy() if comm.rank == 0 else np.empty(n)
            shancoll.bcast(comm, got, 0)
            comm.Bcast(want, 0)
        elif kind == 3:
            got, want = np.zeros(n), np.zeros(n)
            shancoll.reduce(comm, x, got, MPI.SUM, 0)
            comm.Reduce(x, want, MPI.SUM, 0)
        else:
            got, want = np.empty(n), np.empty(n)
            shancoll.iallreduce(comm, x, got, MPI.MAX).wait()
            comm.Allreduce(x, want, MPI.MAX)
        if not np.array_equal(got, want):
            failures.append(f"call {i} (kind {kind}, n {n}) on comm seed {seed}")


def test_two_threads_two_communicators(comm):
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        pytest.skip("MPI was initialised below MPI_THREAD_MULTIPLE")
    comms = [comm.Dup(), comm.Dup()]
    failures: list[str] = []
    errors: list[BaseException] = []

    def body(c, seed):
        try:
            mixed_calls(c, seed, failures)
        except BaseException as e:  # reported below, collectively
            errors.append(e)

    threads = [threading.Thread(target=body, args=(c, s)) for s, c in enumerate(comms)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in comms:
        c.Free()
    assert_all(comm, not errors, f"errors in threads: {errors[:2]}")
    assert_all(comm, not failures, f"wrong results: {failures[:4]}")
