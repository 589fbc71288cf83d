"""8-byte allreduce from Python at 2 ranks: shancoll's blocking call against
its persistent request (start + wait: shan's node-segment lines on one
node), its `mpi` engine (MPICH's MPI_Allreduce_init behind shancoll's
request) and mpi4py's own persistent allreduce. Best of 5 repeats of 20000
calls, the slowest rank's time per call.

    mpiexec -n 2 python benchmarks/persistent_allreduce.py
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

import shancoll

CALLS, REPEATS = 20000, 5


def per_call(comm, call):
    best = float("inf")
    for _ in range(REPEATS):
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(CALLS):
            call()
        best = min(best, (time.perf_counter() - start) / CALLS)
    return comm.allreduce(best, op=MPI.MAX)


def main():
    comm = MPI.COMM_WORLD
    x, y = np.ones(1), np.zeros(1)
    shan = shancoll.allreduce_init(comm, x, y)
    mpi = shancoll.allreduce_init(comm, x, y, algorithm="mpi")
    library = comm.Allreduce_init(x, y)
    times = {
        "blocking shancoll.allreduce": per_call(comm, lambda: shancoll.allreduce(comm, x, y)),
        f"allreduce_init ({shan.algorithm}) start+wait": per_call(
            comm, lambda: (shan.start(), shan.wait())
        ),
        "allreduce_init (mpi) start+wait": per_call(comm, lambda: (mpi.start(), mpi.wait())),
        "mpi4py Allreduce_init Start+Wait": per_call(
            comm, lambda: (library.Start(), library.Wait())
        ),
    }
    if comm.rank == 0:
        for name, t in times.items():
            print(f"{name:45s} {t * 1e6:8.2f} us")
    shan.free()
    mpi.free()
    library.Free()


if __name__ == "__main__":
    main()
