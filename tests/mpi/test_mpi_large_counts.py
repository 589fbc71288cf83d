"""Counts past 2^31 elements: int8 messages of 2^31 + 8 elements (2 GiB + 8 B).

An int count or displacement cannot hold them (MPI-4's large-count functions
and shancoll's 64-bit byte counts must), so a truncation anywhere gives a
wrong result or a short message. Each collective runs with algorithm 'auto'
in place (one 2 GiB buffer per rank: at most about 4.5 GiB in all at 2
ranks, one collective at a time, on a fresh communicator freed afterwards so
that no scratch memory or segment outlives its test) and the result is
checked everywhere, the elements around index 2^31 individually.

Only at 1 and 2 ranks on the physical node: more ranks need more memory, and
virtual nodes (SHANCOLL_RANKS_PER_NODE) take 5-10 times as long at this size
(tens of seconds per call on 2 cores). Skipped, on every rank, when the node
has less memory available than the test needs. Marked ``large_memory``:
``-m "not large_memory"`` leaves them out.
"""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
from _mpi_util import assert_all
from mpi4py import MPI

import shancoll

N = 2**31 + 8
TAIL = 16  # the last elements: distinct values, all past index 2^31 - 1
TIMEOUT = 600  # seconds per wait: a 2 GiB step on a loaded 2-core machine
CHUNK = 1 << 26

pytestmark = [
    pytest.mark.large_memory,
    pytest.mark.skipif(MPI.COMM_WORLD.size > 2, reason="large counts: 1 and 2 ranks only"),
    pytest.mark.skipif(
        int(os.environ.get("SHANCOLL_RANKS_PER_NODE", "0") or 0) > 0,
        reason="large counts: on the physical node only (virtual nodes are 5-10x slower)",
    ),
    pytest.mark.skipif(
        MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED).size < MPI.COMM_WORLD.size,
        reason="large counts: on one physical node only (2 GiB through a network module "
        "on loopback took longer than the suite allows)",
    ),
]


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@pytest.fixture
def big(comm):
    """A fresh communicator for one large call, if the node has the memory."""
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    need = node.size * (N + (N >> 3)) + (1 << 30)  # buffer + 1/8 slack per rank, 1 GiB spare
    node.Free()
    available = comm.allreduce(_available_bytes(), op=MPI.MIN)
    if available < need:
        pytest.skip(
            f"large counts: needs {need / 2**30:.1f} GiB of available memory on the node, "
            f"has {available / 2**30:.1f} GiB"
        )
    c = comm.Dup()
    yield c
    c.Free()
    gc.collect()


def _fill(value: int) -> np.ndarray:
    buf = np.full(N, value, dtype=np.int8)
    buf[-TAIL:] = value * np.arange(1, TAIL + 1, dtype=np.int8)
    return buf


def _holds(buf: np.ndarray, value: int) -> bool:
    """buf is _fill(value)."""
    body = buf[:-TAIL]
    if not all(np.all(body[i : i + CHUNK] == value) for i in range(0, body.size, CHUNK)):
        return False
    return bool(np.array_equal(buf[-TAIL:], value * np.arange(1, TAIL + 1, dtype=np.int8)))


def test_allreduce(comm, big):
    buf = _fill(comm.rank + 1)
    shancoll.allreduce(big, MPI.IN_PLACE, buf, MPI.SUM, timeout=TIMEOUT)
    algorithm = shancoll.last_stats(big).algorithm
    assert_all(comm, _holds(buf, comm.size * (comm.size + 1) // 2), f"allreduce ({algorithm})")


def test_bcast(comm, big):
    buf = _fill(5) if comm.rank == 0 else np.zeros(N, dtype=np.int8)
    shancoll.bcast(big, buf, root=0, timeout=TIMEOUT)
    algorithm = shancoll.last_stats(big).algorithm
    assert_all(comm, _holds(buf, 5), f"bcast ({algorithm})")


def test_reduce(comm, big):
    root = comm.size - 1
    buf = _fill(comm.rank + 1)
    send = MPI.IN_PLACE if comm.rank == root else buf
    shancoll.reduce(big, send, buf, MPI.SUM, root=root, timeout=TIMEOUT)
    algorithm = shancoll.last_stats(big).algorithm
    ok = comm.rank != root or _holds(buf, comm.size * (comm.size + 1) // 2)
    assert_all(comm, ok, f"reduce ({algorithm})")


def test_allgatherv(comm, big):
    """Rank 0's block holds 2^31 elements, the others' start past index 2^31."""
    p = comm.size
    counts = [N - 8 * (p - 1)] + [8] * (p - 1)
    displs = [0] + [N - 8 * (p - r) for r in range(1, p)]
    buf = np.zeros(N, dtype=np.int8)
    mine = slice(displs[comm.rank], displs[comm.rank] + counts[comm.rank])
    buf[mine] = comm.rank + 1
    buf[mine][-4:] = (comm.rank + 1) * np.arange(10, 14, dtype=np.int8)
    shancoll.allgatherv(big, MPI.IN_PLACE, [buf, counts, displs], timeout=TIMEOUT)
    algorithm = shancoll.last_stats(big).algorithm
    ok = True
    for r in range(p):
        block = buf[displs[r] : displs[r] + counts[r]]
        head = block[:-4]
        ok = ok and all(np.all(head[i : i + CHUNK] == r + 1) for i in range(0, head.size, CHUNK))
        ok = ok and np.array_equal(block[-4:], (r + 1) * np.arange(10, 14, dtype=np.int8))
    assert_all(comm, ok, f"allgatherv ({algorithm})")
