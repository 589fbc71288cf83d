import statistics as st
import time

import numpy as np
from mpi4py import MPI

import shancoll

w = MPI.COMM_WORLD
n = (1 << 20) // 8
sb, rb = np.ones(2 * n), np.empty(n)
x, y = np.ones(1), np.empty(1)
out = []
for _p in range(4):
    ts = []
    for _ in range(20):
        w.Barrier()
        t0 = time.perf_counter()
        shancoll.reduce_scatter_block(w, sb, rb, algorithm="shan")
        ts.append(time.perf_counter() - t0)
    w.Barrier()
    t0 = time.perf_counter()
    for _ in range(20000):
        shancoll.allreduce(w, x, y)
    ar = (time.perf_counter() - t0) / 20000
    out.append(f"rsb {st.median(ts) * 1e6:.0f} ar8 {ar * 1e6:.2f}")
if w.rank == 0:
    print(" | ".join(out))
