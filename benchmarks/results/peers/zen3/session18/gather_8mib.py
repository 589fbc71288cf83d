"""Gather of 8 MiB per rank at 2 ranks (root 0), each mechanism, medians of 3 x 10 calls.

mpiexec -n 2 -bind-to core python gather_8mib.py
"""

import statistics as st
import time

import numpy as np
from mpi4py import MPI

import shancoll

w = MPI.COMM_WORLD
n = (8 << 20) // 8
s, g = np.ones(n), np.empty(2 * n)


def gather(**options):
    return lambda: shancoll.gather(w, s, g, root=0, **options)


V = {
    "sc1": gather(algorithm="shan", single_copy=True),
    "chan": gather(algorithm="shan", single_copy=False),
    "chan2M": gather(algorithm="shan", single_copy=False, ring_window=2 << 20),
    "mpi": gather(algorithm="mpi"),
}
res = {k: [] for k in V}
for _ in range(3):
    for k, f in V.items():
        ts = []
        for _ in range(10):
            w.Barrier()
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        res[k].append(st.median(ts))
if w.rank == 0:
    print(" | ".join(f"{k} {st.median(v) * 1e6:.0f}" for k, v in res.items()), flush=True)
