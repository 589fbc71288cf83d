import statistics as st
import sys
import time

import numpy as np
from mpi4py import MPI

import shancoll

w = MPI.COMM_WORLD
nb = int(sys.argv[1]) if len(sys.argv) > 1 else (1 << 20)
n = nb // 8
sb, rb = np.ones(2 * n), np.empty(n)
a_s, a_r = np.ones(2 * n), np.empty(2 * n)
x, y = np.ones(1), np.empty(1)
V = {
    "rsb shan": lambda: shancoll.reduce_scatter_block(w, sb, rb, algorithm="shan"),
    "rsb sc1": lambda: shancoll.reduce_scatter_block(w, sb, rb, algorithm="shan", single_copy=True),
    "rsb rw2M": lambda: shancoll.reduce_scatter_block(
        w, sb, rb, algorithm="shan", ring_window=2 << 20
    ),
    "rsb pairwise": lambda: shancoll.reduce_scatter_block(w, sb, rb, algorithm="pairwise"),
    "rsb mpi": lambda: shancoll.reduce_scatter_block(w, sb, rb, algorithm="mpi"),
    "a2a shan": lambda: shancoll.alltoall(w, a_s, a_r, algorithm="shan"),
    "a2a sc1": lambda: shancoll.alltoall(w, a_s, a_r, algorithm="shan", single_copy=True),
    "a2a sc0": lambda: shancoll.alltoall(w, a_s, a_r, algorithm="shan", single_copy=False),
    "a2a pairwise": lambda: shancoll.alltoall(w, a_s, a_r, algorithm="pairwise"),
    "a2a mpi": lambda: shancoll.alltoall(w, a_s, a_r, algorithm="mpi"),
}
res = {k: [] for k in V}
w.Barrier()
t0 = time.perf_counter()
for _ in range(20000):
    shancoll.allreduce(w, x, y)
ar = (time.perf_counter() - t0) / 20000
for _p in range(3):
    for k, f in V.items():
        ts = []
        for _ in range(15):
            w.Barrier()
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        res[k].append(st.median(ts))
if w.rank == 0:
    print(
        f"ar8 {ar * 1e6:.2f} | "
        + " | ".join(f"{k} {st.median(v) * 1e6:.0f}" for k, v in res.items())
    )
