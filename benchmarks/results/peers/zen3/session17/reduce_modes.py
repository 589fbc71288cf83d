"""Per job: the 8-byte allreduce (mode), then reduce (root 0) per mechanism at 64 KiB-2 MiB."""

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
out = [f"ar8 {(time.perf_counter() - t0) / 20000 * 1e6:.2f}"]
V = {
    "sc0": dict(single_copy=False),
    "sc1": dict(single_copy=True),
    "sc0-2M": dict(single_copy=False, buffer_size=2 << 20, buffers=64),
}
for nb in [64 << 10, 256 << 10, 1 << 20, 2 << 20]:
    s, r = np.ones(nb // 8), np.empty(nb // 8)
    res = {k: [] for k in V}
    for _p in range(3):
        for k, kw in V.items():
            ts = []
            for _ in range(max(5, int(2e5 / nb))):
                w.Barrier()
                t0 = time.perf_counter()
                shancoll.reduce(w, s, r, MPI.SUM, 0, algorithm="release_gather", **kw)
                ts.append(time.perf_counter() - t0)
            res[k].append(st.median(ts))
    out.append(f"{nb >> 10}K " + " ".join(f"{k} {st.median(v) * 1e6:.1f}" for k, v in res.items()))
if w.rank == 0:
    print(" | ".join(out))
