"""Two threads calling shancoll collectives at once, each on a communicator
of its own (MPI allows concurrent collectives on different communicators at
MPI_THREAD_MULTIPLE): every result equals mpi4py's collective on the same
communicator. The bindings release the GIL around each call, so the two
threads really are inside the core together.

mpi4py's answers are computed once both threads are done, one communicator
after the other: Intel MPI 2021.18's own collectives deadlock when two
threads call them at once on two communicators (Intel Xeon VM, 2026-11-29:
a plain mpi4py script of two threads' Allreduce, Bcast and Reduce hung in
11 of 12 runs at 2 and 3 ranks; with I_MPI_COLL_INTRANODE=pt2pt in none),
and this test had called them beside shancoll's in each thread."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest
from _mpi_util import assert_all
from mpi4py import MPI

import shancoll

CALLS = 60

# (what, shancoll's result, the call that gives mpi4py's answer)
Result = tuple[str, np.ndarray, Callable[[], np.ndarray]]


def answer(n: int, call: Callable[[np.ndarray], None]) -> Callable[[], np.ndarray]:
    """mpi4py's answer of n doubles, computed when asked."""

    def run() -> np.ndarray:
        want = np.zeros(n)
        call(want)
        return want

    return run


def mixed_calls(comm: MPI.Comm, seed: int, results: list[Result]) -> None:
    rng = np.random.default_rng(seed)  # the same sequence on every rank of comm
    for i in range(CALLS):
        n = int(rng.integers(1, 3000))
        x = np.arange(n, dtype=np.float64) * (comm.rank + 1) + i
        kind = i % 5
        if kind == 0:
            got = np.empty(n)
            shancoll.allreduce(comm, x, got)
            want = answer(n, lambda w, x=x: comm.Allreduce(x, w))
        elif kind == 1:
            counts = [n + r for r in range(comm.size)]
            mine = np.full(counts[comm.rank], float(comm.rank + i))
            got = np.empty(sum(counts))
            shancoll.allgatherv(comm, mine, [got, counts])
            want = answer(sum(counts), lambda w, m=mine, c=counts: comm.Allgatherv(m, [w, c]))
        elif kind == 2:
            got = x.copy() if comm.rank == 0 else np.empty(n)
            shancoll.bcast(comm, got, 0)
            want = answer(n, lambda w, x=x: (w.__setitem__(slice(None), x), comm.Bcast(w, 0)))
        elif kind == 3:
            got = np.zeros(n)
            shancoll.reduce(comm, x, got, MPI.SUM, 0)
            want = answer(n, lambda w, x=x: comm.Reduce(x, w, MPI.SUM, 0))
        else:
            got = np.empty(n)
            shancoll.iallreduce(comm, x, got, MPI.MAX).wait()
            want = answer(n, lambda w, x=x: comm.Allreduce(x, w, MPI.MAX))
        results.append((f"call {i} (kind {kind}, n {n}) on comm seed {seed}", got, want))


def test_two_threads_two_communicators(comm):
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        pytest.skip("MPI was initialised below MPI_THREAD_MULTIPLE")
    comms = [comm.Dup(), comm.Dup()]
    results: list[list[Result]] = [[], []]
    errors: list[BaseException] = []

    def body(c, seed):
        try:
            mixed_calls(c, seed, results[seed])
        except BaseException as e:  # reported below, collectively
            errors.append(e)

    threads = [threading.Thread(target=body, args=(c, s)) for s, c in enumerate(comms)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_all(comm, not errors, f"errors in threads: {errors[:2]}")
    # mpi4py's answers, one communicator after the other (every rank in the same order)
    failures = [what for rs in results for what, got, want in rs if not np.array_equal(got, want())]
    for c in comms:
        c.Free()
    assert_all(comm, not failures, f"wrong results: {failures[:4]}")
