"""Per job: the 8-byte allreduce (mode), then 1 MiB allreduce, bcast, allgather per mechanism."""

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
n = (1 << 20) // 8
s, r, g = np.ones(n), np.empty(n), np.empty(2 * n)
V = {
    "ar shan": lambda: shancoll.allreduce(w, s, r, algorithm="shan"),
    "ar rg": lambda: shancoll.allreduce(w, s, r, algorithm="release_gather"),
    "ar rg-sc0": lambda: shancoll.allreduce(w, s, r, algorithm="release_gather", single_copy=False),
    "ar rg-sc1": lambda: shancoll.allreduce(w, s, r, algorithm="release_gather", single_copy=True),
    "ar mpi": lambda: shancoll.allreduce(w, s, r, algorithm="mpi"),
    "bc rg": lambda: shancoll.bcast(w, s, algorithm="release_gather"),
    "bc sc0": lambda: shancoll.bcast(w, s, algorithm="release_gather", single_copy=False),
    "bc sc1": lambda: shancoll.bcast(w, s, algorithm="release_gather", single_copy=True),
    "bc mpi": lambda: shancoll.bcast(w, s, algorithm="mpi"),
    "ag shan": lambda: shancoll.allgather(w, s, g, algorithm="shan"),
    "ag sc0": lambda: shancoll.allgather(w, s, g, algorithm="shan", single_copy=False),
    "ag sc1": lambda: shancoll.allgather(w, s, g, algorithm="shan", single_copy=True),
    "ag mpi": lambda: shancoll.allgather(w, s, g, algorithm="mpi"),
}
res = {k: [] for k in V}
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
