import statistics as st
import time

import numpy as np
from mpi4py import MPI

import shancoll

w = MPI.COMM_WORLD
comms = [w] + [w.Dup() for _ in range(3)]
n = (1 << 20) // 8
bufs = [(np.ones(2 * n), np.empty(n)) for _ in comms]


def t(c, sb, rb, reps=30):
    ts = []
    for _ in range(reps):
        c.Barrier()
        t0 = time.perf_counter()
        shancoll.reduce_scatter_block(c, sb, rb, algorithm="shan")
        ts.append(time.perf_counter() - t0)
    return st.median(ts) * 1e6


res = {i: [] for i in range(len(comms))}
for _p in range(6):
    for i, c in enumerate(comms):
        res[i].append(t(c, *bufs[i]))
# fresh buffers on comm 0
nb = (np.ones(2 * n), np.empty(n))
fresh = [t(comms[0], *nb) for _ in range(3)]
if w.rank == 0:
    print(
        " | ".join(f"c{i} {st.median(v):.0f}" for i, v in res.items()),
        "| c0 fresh bufs",
        " ".join(f"{x:.0f}" for x in fresh),
    )
