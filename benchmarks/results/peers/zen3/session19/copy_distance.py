"""Collectives with the receive buffers at 0 and at 16 bytes past a page (send buffers on a
page): 16 is glibc's and the kernel's slow distance on AMD (memcpy-distance.txt,
cma-distance.txt), which shancoll's copies avoid since the nineteenth session.

mpiexec -n 2 -bind-to core python copy_distance.py   (medians of 5 x 20 calls, us, rank 0)
"""

import statistics as st
import time

import numpy as np
from mpi4py import MPI

import shancoll

w = MPI.COMM_WORLD


def at_page_offset(n: int, offset: int) -> np.ndarray:
    raw = np.empty(n * 8 + offset + 8192, np.uint8)
    start = (-raw.ctypes.data) % 4096 + offset
    out = raw[start : start + n * 8].view(np.float64)
    out[:] = 1.0
    return out


def series(nb: int, place: int) -> dict:
    n = nb // 8
    s, r, g = at_page_offset(n, 0), at_page_offset(n, place), at_page_offset(2 * n, place)
    return {
        "allreduce shan": lambda: shancoll.allreduce(w, s, r, algorithm="shan"),
        "allreduce mpi4py": lambda: w.Allreduce(s, r),
        "gather sc": lambda: shancoll.gather(w, s, g, 0, algorithm="shan", single_copy=True),
        "gather mpi4py": lambda: w.Gather(s, g, 0),
        "scan": lambda: shancoll.scan(w, s, r),
        "scan mpi4py": lambda: w.Scan(s, r),
        "bcast rg": lambda: shancoll.bcast(w, r, 0, algorithm="release_gather", single_copy=False),
        "bcast mpi4py": lambda: w.Bcast(r, 0),
    }


for nb in [65536, 1 << 20]:
    runs = {place: series(nb, place) for place in (0, 16)}
    res = {(place, k): [] for place in runs for k in runs[place]}
    for _ in range(5):
        for place, ss in runs.items():
            for k, f in ss.items():
                ts = []
                for _ in range(20):
                    w.Barrier()
                    t0 = time.perf_counter()
                    f()
                    ts.append(time.perf_counter() - t0)
                res[(place, k)].append(st.median(ts))
    if w.rank == 0:
        for k in runs[0]:
            a, b = (st.median(res[(p, k)]) * 1e6 for p in (0, 16))
            print(f"{nb >> 10:5d} KiB {k:18s} at 0: {a:8.1f}  at 16: {b:8.1f}", flush=True)
