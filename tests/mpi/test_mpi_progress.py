"""MPI's progress rule for shancoll's split-phase requests.

A nonblocking collective completes once every rank waits on it, whatever else
each rank waits on first. So a window of outstanding requests, shancoll's and
the MPI library's, on several communicators, completed by every rank in an
order of its own with short random sleeps, must finish with the right
results: a shancoll request that advanced only when its owner tested it
would deadlock here from 3 ranks on (rank A waits on request X, whose later
rounds need rank B, which waits on request Y, whose later rounds need A).
"""

from __future__ import annotations

import random
import time

import numpy as np
from _mpi_util import REDUCED, assert_all
from mpi4py import MPI

import shancoll

WINDOW = 20
COMMS = 4
WINDOWS = 40 if REDUCED else 150  # 800 / 3000 requests in all
SPLIT_PHASE = ["dissemination", "nway_dissemination", "bruck", "pairwise_exchange", "binomial"]
KINDS = [*SPLIT_PHASE, "mpi", "library_iallreduce", "library_ibcast"]
TIMEOUT = 30.0


def start(kind, comm, i, n):
    """Starts request i of the window; returns (complete, check)."""
    p, r = comm.size, comm.rank
    send = np.arange(n, dtype=np.int64) + (r + 1) * (i + 1)
    out = np.empty(n, dtype=np.int64)
    expected = np.arange(n, dtype=np.int64) * p + (i + 1) * p * (p + 1) // 2
    if kind == "library_ibcast":
        out[:] = send if r == i % p else -1
        req = comm.Ibcast(out, root=i % p)
        expected = np.arange(n, dtype=np.int64) + (i % p + 1) * (i + 1)
        return req.Wait, lambda: np.array_equal(out, expected)
    if kind == "library_iallreduce":
        req = comm.Iallreduce(send, out, MPI.SUM)

        # mpi4py's request does not hold the send buffer, and MPI may read it
        # until completion (Open MPI's libnbc does, during progress): alive till then.
        def complete(keep_alive=send):
            req.Wait()

        return complete, lambda: np.array_equal(out, expected)
    req = shancoll.iallreduce(comm, send, out, MPI.SUM, kind)
    if i % 2:
        return lambda: req.wait(timeout=TIMEOUT), lambda: np.array_equal(out, expected)

    def test_loop():
        deadline = time.monotonic() + TIMEOUT
        while not req.test():
            assert time.monotonic() < deadline, f"request {i} ({kind}) never completed"

    return test_loop, lambda: np.array_equal(out, expected)


def test_outstanding_requests_complete_in_any_order(comm):
    comms = [comm.Dup() for _ in range(COMMS)]
    shared = random.Random(2026)  # the same kinds and starts on every rank
    mine = random.Random(1000 + comm.rank)  # this rank's completion order and sleeps
    wrong = []
    try:
        for w in range(WINDOWS):
            started = []
            for i in range(WINDOW):
                kind = shared.choice(KINDS)
                c = comms[shared.randrange(COMMS)]
                n = shared.choice([1, 7, 255, 1000])
                started.append((f"window {w} request {i} ({kind}, n={n})", *start(kind, c, i, n)))
            mine.shuffle(started)
            for what, complete, check in started:
                if mine.random() < 0.3:
                    time.sleep(mine.random() * 2e-4)
                complete()
                if not check():
                    wrong.append(what)
    finally:
        for c in comms:
            c.Free()
    assert_all(comm, not wrong, f"wrong results: {wrong[:5]}")
