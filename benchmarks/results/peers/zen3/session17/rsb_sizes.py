import statistics as st
import time

import numpy as np
from mpi4py import MPI

import shancoll

w = MPI.COMM_WORLD
x, y = np.ones(1), np.empty(1)
w.Barrier()
t0 = time.perf_counter()
for _ in range(20000):
    shancoll.allreduce(w, x, y)
ar = (time.perf_counter() - t0) / 20000
out = [f"ar8 {ar * 1e6:.2f}"]
for nb in [16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20]:
    n = nb // 8
    sb, rb = np.ones(2 * n), np.empty(n)
    V = {
        "ch": dict(algorithm="shan"),
        "sc1": dict(algorithm="shan", single_copy=True),
        "pw": dict(algorithm="pairwise"),
        "ring": dict(algorithm="ring"),
    }
    res = {k: [] for k in V}
    for _p in range(3):
        for k, kw in V.items():
            ts = []
            for _ in range(max(5, int(2e5 / nb))):
                w.Barrier()
                t0 = time.perf_counter()
                shancoll.reduce_scatter_block(w, sb, rb, **kw)
                ts.append(time.perf_counter() - t0)
            res[k].append(st.median(ts))
    out.append(f"{nb >> 10}K " + " ".join(f"{k} {st.median(v) * 1e6:.1f}" for k, v in res.items()))
if w.rank == 0:
    print(" | ".join(out))
