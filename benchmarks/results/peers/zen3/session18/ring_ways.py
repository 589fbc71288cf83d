"""One job of the ring-stores comparison: 1 MiB through each shared-memory ring.

mpiexec -n 2 -bind-to core python ring_ways.py [BYTES]   (SHANCOLL_RING_STORES set per job)
Prints the 8-byte allreduce (the state's sign: ~0.4 us near, ~1 us far) and the median
of 3 x 15 calls of each ring path, us.
"""

import os
import statistics as st
import sys
import time

import numpy as np
from mpi4py import MPI

import shancoll

w = MPI.COMM_WORLD
nb = int(sys.argv[1]) if len(sys.argv) > 1 else (1 << 20)
n = nb // 8
s, r, g = np.ones(n), np.empty(n), np.empty(2 * n)
sb, rb = np.ones(2 * n), np.empty(n)
x, y = np.ones(1), np.empty(1)
V = {
    "rsb": lambda: shancoll.reduce_scatter_block(w, sb, rb, algorithm="shan", single_copy=False),
    "a2a": lambda: shancoll.alltoall(w, sb, g, algorithm="shan", single_copy=False),
    "gather": lambda: shancoll.gather(w, s, g, root=0, algorithm="shan", single_copy=False),
    "ag": lambda: shancoll.allgather(w, s, g, algorithm="shan", single_copy=False),
    "bcast": lambda: shancoll.bcast(w, s, algorithm="release_gather", single_copy=False),
}


def medians_us(series: dict, passes: int = 3, calls: int = 15) -> dict[str, float]:
    """Each series `calls` times per pass, the passes interleaved: the median
    of the passes' medians per series, us (gather_8mib.py uses it too)."""
    res = {k: [] for k in series}
    for _ in range(passes):
        for k, f in series.items():
            ts = []
            for _ in range(calls):
                w.Barrier()
                t0 = time.perf_counter()
                f()
                ts.append(time.perf_counter() - t0)
            res[k].append(st.median(ts))
    return {k: st.median(v) * 1e6 for k, v in res.items()}


if __name__ == "__main__":
    w.Barrier()
    t0 = time.perf_counter()
    for _ in range(20000):
        shancoll.allreduce(w, x, y)
    ar = (time.perf_counter() - t0) / 20000
    res = medians_us(V)
    if w.rank == 0:
        way = os.environ.get("SHANCOLL_RING_STORES", "auto")
        print(
            f"{way:8s} ar8 {ar * 1e6:.2f} | " + " | ".join(f"{k} {v:.0f}" for k, v in res.items()),
            flush=True,
        )
