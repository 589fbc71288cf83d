"""Scan and release_gather's reduce of 64 KiB with the receive buffer at several distances
past the send buffer (modulo 4 KiB): rank 0's local copy of its input into its result runs
into glibc's slow rep movsb at 1-31 bytes (memcpy-distance.txt).

mpiexec -n 2 -bind-to core python scan_distance.py   (prints rank 1's means of 300 calls, us)
"""

import time

import numpy as np
from mpi4py import MPI

import shancoll

w = MPI.COMM_WORLD
n = 65536 // 8
s = np.ones(n)
results = {shift: np.empty(n + 512)[shift : shift + n] for shift in [0, 8, 64, 256]}


def mean_us(f, calls: int = 300) -> float:
    w.Barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls * 1e6


for _ in range(3):
    out = []
    for shift, r in results.items():
        d = (r.ctypes.data - s.ctypes.data) % 4096
        scan = mean_us(lambda r=r: shancoll.scan(w, s, r))
        red = mean_us(lambda r=r: shancoll.reduce(w, s, r, root=1, algorithm="release_gather"))
        out.append(f"shift{shift}(mod4k {d}) scan {scan:.1f} red1 {red:.1f}")
    if w.rank == 1:
        print(" | ".join(out), flush=True)
