"""shan allgatherv's block size against the ring and the library, 2 ranks.

Run on two real MPI nodes (the layout "2 hosts", shancoll.bench.hosts):

    mpiexec -hosts shancoll-node-a:1,shancoll-node-b:1 -n 2 \
        python benchmarks/hosts_allgatherv_probe.py

Prints, per size per rank, the median of 3 interleaved rounds of each series'
median of 5 timed loops of 20 calls (us): mpi4py's comm.Allgather, ring, shan
with its default blocks, with 64 KiB blocks and with 4 MiB blocks.
"""

import time

import numpy as np
from mpi4py import MPI

import shancoll

comm = MPI.COMM_WORLD


def timed(call, loops=5, calls=20):
    comm.Barrier()
    call()
    times = []
    for _ in range(loops):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - t0) / calls)
    return float(np.median(times)) * 1e6


def series_of(send, recv):
    def shan(**options):
        return lambda: shancoll.allgatherv(comm, send, recv, algorithm="shan", **options)

    return {
        "native": lambda: comm.Allgather(send, recv),
        "ring": lambda: shancoll.allgatherv(comm, send, recv, algorithm="ring"),
        "shan": shan(),
        "shan64k": shan(block_size=65536),
        "shan4m": shan(block_size=4 << 20),
    }


for nbytes in [256 << 10, 1 << 20, 4 << 20]:
    send = np.ones(nbytes // 8)
    series = series_of(send, np.empty(send.size * comm.size))
    results = {name: [] for name in series}
    for _ in range(3):
        for name, call in series.items():
            results[name].append(timed(call))
    if comm.rank == 0:
        cells = " ".join(f"{k}={np.median(v):.1f}" for k, v in results.items())
        print(nbytes, cells, flush=True)
