"""One job of the allreduce comparison of the nineteenth session: pieces (its rings written by
the ring stores' way), shan (single copy), release_gather (single copy off) and the MPI
library's own allreduce at each size, float64 sum.

SIZES=BYTES,... mpiexec -n 2 -bind-to core python allreduce_ways.py  (SHANCOLL_RING_STORES per job)
Prints the 8-byte allreduce (the state's sign: ~0.4 us near, ~1 us far), the pair channels'
reduce_scatter_block of 1 MiB (plain stores lose 2-3x far) and per size the median of 3 x 15
calls of each series, us.
"""

import os
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import shancoll

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "session18"))
from ring_ways import medians_us  # noqa: E402

w = MPI.COMM_WORLD
sizes = [int(s) for s in os.environ.get("SIZES", str(1 << 20)).split(",")]


def series(nb: int) -> dict:
    s, r = np.ones(nb // 8), np.empty(nb // 8)
    return {
        "pieces": lambda: shancoll.allreduce(w, s, r, algorithm="pieces"),
        "shan": lambda: shancoll.allreduce(w, s, r, algorithm="shan"),
        "rg-sc0": lambda: shancoll.allreduce(
            w, s, r, algorithm="release_gather", single_copy=False
        ),
        "mpi": lambda: w.Allreduce(s, r),
    }


if __name__ == "__main__":
    x, y = np.ones(1), np.empty(1)
    sb, rb = np.ones(1 << 18), np.empty(1 << 17)
    for _ in range(1000):
        shancoll.allreduce(w, x, y)
    w.Barrier()
    t0 = MPI.Wtime()
    for _ in range(20000):
        shancoll.allreduce(w, x, y)
    ar = (MPI.Wtime() - t0) / 20000
    rsb = medians_us(
        {
            "rsb": lambda: shancoll.reduce_scatter_block(
                w, sb, rb, algorithm="shan", single_copy=False
            )
        }
    )["rsb"]
    way = os.environ.get("SHANCOLL_RING_STORES", "auto")
    for nb in sizes:
        res = medians_us(series(nb))
        if w.rank == 0:
            print(
                f"{way:8s} ar8 {ar * 1e6:.2f} rsb1M {rsb:.0f} | {nb >> 10:5d} KiB | "
                + " | ".join(f"{k} {v:.0f}" for k, v in res.items()),
                flush=True,
            )
