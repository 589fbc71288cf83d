"""Gather of 8 MiB per rank at 2 ranks (root 0), each mechanism, medians of 3 x 10 calls.

mpiexec -n 2 -bind-to core python gather_8mib.py
"""

import numpy as np
from mpi4py import MPI
from ring_ways import medians_us

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
res = medians_us(V, calls=10)
if w.rank == 0:
    print(" | ".join(f"{k} {v:.0f}" for k, v in res.items()), flush=True)
