"""Copies whose destination lies 1-31 bytes past their source modulo 4 KiB,
which glibc's memcpy and the kernel's cross-memory attach copy 5-30 times
slower on AMD CPUs (rep movsb; src/cpp/shancoll/cost.h,
memcpy_slow_distance): shancoll's local copies take vector moves there,
and its single copies bounce through a buffer at the remote address's
offset (shm/peer_memory.cc). Results equal mpi4py's for buffers placed at
such distances from each other and from the segment's pages, sizes with
tails and of several bounce chunks (64 KiB), through the paths that read
and write them: single copy (allreduce's pair, gather), release_gather's
slots, scan's local copy. The speed is benchmarks' (docs/performance.md).

Run over 1-8 ranks by test_mpi_suites.py.
"""

from __future__ import annotations

import numpy as np
from _mpi_util import REDUCED, assert_all

import shancoll

COUNTS = [3001] if REDUCED else [3001, 70001]  # float64: 23 KiB, 547 KiB


def at_page_offset(n: int, offset: int, fill: float = 0.0) -> np.ndarray:
    """n float64 values `offset` bytes past a page boundary."""
    raw = np.empty(n * 8 + offset + 8192, np.uint8)
    start = (-raw.ctypes.data) % 4096 + offset
    out = raw[start : start + n * 8].view(np.float64)
    out[:] = fill
    return out


def test_results_at_slow_distances(comm):
    p, r = comm.size, comm.rank
    failures = []
    for n in COUNTS:
        # every rank's recvbuf 8 (r + 1) bytes past a page, sendbufs on one:
        # reads of 8-31 bytes, writes of 8 between neighbours
        for place in [8 * (r + 1), 16]:
            send = at_page_offset(n, 0)
            send[:] = np.arange(n) * (r + 1) + r
            want = np.empty(n)
            comm.Allreduce(send, want)
            for single_copy in [None, False]:
                got = at_page_offset(n, place)
                options = {} if single_copy is None else {"single_copy": single_copy}
                shancoll.allreduce(comm, send, got, algorithm="release_gather", **options)
                if not np.array_equal(got, want):
                    failures.append(f"allreduce release_gather n={n} {options}")
            got = at_page_offset(n, place)
            shancoll.allreduce(comm, send, got, algorithm="shan")
            if not np.array_equal(got, want):
                failures.append(f"allreduce shan n={n}")
            gathered = at_page_offset(n * p, place) if r == 0 else None
            shancoll.gather(comm, send, gathered, 0, algorithm="shan", single_copy=True)
            everyone = np.empty(n * p)
            comm.Allgather(send, everyone)
            if r == 0 and not np.array_equal(gathered, everyone):
                failures.append(f"gather n={n}")
            buf = at_page_offset(n, place, fill=-1.0)
            if r == 0:
                buf[:] = send
            shancoll.bcast(comm, buf, 0, algorithm="release_gather", single_copy=False)
            if not np.array_equal(buf, everyone[:n]):
                failures.append(f"bcast n={n}")
            prefix, prefix_ref = at_page_offset(n, place), np.empty(n)
            shancoll.scan(comm, send, prefix)
            comm.Scan(send, prefix_ref)
            if not np.array_equal(prefix, prefix_ref):
                failures.append(f"scan n={n}")
    assert_all(comm, not failures, f"rank {r}: {failures}")
