"""Allreduce and reduce with each reduction kernel set this CPU runs, side by side.

    .venv/bin/mpiexec -bind-to core -n 2 .venv/bin/python benchmarks/reduction_kernels.py \\
        [--sizes 16KiB,256KiB,1MiB] [--repeats 21]

``shancoll.reduction_kernels()`` lists the sets (``generic``, ``avx2``,
``avx512``); each is forced in turn through ``SHANCOLL_KERNELS`` and
``reload_environment()``. A set cannot be switched per call, so the timing
is by blocks: per repeat and size, one block of calls per set in turn (after
100 untimed calls), the slowest rank's mean per call; printed is the median
over the repeats and the speedup over ``generic``. Float64, ``MPI.SUM``,
``auto``. Bind the ranks: unbound ranks can share one core for the first
seconds of a job, which slows every early block alike.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from mpi4py import MPI

import shancoll
from shancoll.bench.series import format_bytes, parse_sizes


def block_seconds(comm, call, calls: int) -> float:
    for _ in range(100):
        call()
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return comm.allreduce((time.perf_counter() - start) / calls, op=MPI.MAX)


def make_call(comm, coll: str, x: np.ndarray, out: np.ndarray):
    if coll == "allreduce":
        return lambda: shancoll.allreduce(comm, x, out)
    return lambda: shancoll.reduce(comm, x, out, root=0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2KiB,16KiB,64KiB,256KiB,1MiB,4MiB")
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    sets = shancoll.reduction_kernels()["runnable"]
    if comm.rank == 0:
        print(f"{comm.size} ranks, kernel sets {', '.join(sets)}; median us per call (speedup)")
    for coll in ("allreduce", "reduce"):
        for nbytes in parse_sizes(args.sizes):
            x = np.arange(nbytes // 8, dtype=np.float64) + comm.rank
            out = np.zeros_like(x)
            call = make_call(comm, coll, x, out)
            calls = max(20, int(2e-3 / (2e-6 + nbytes * 1e-10)))  # about 2 ms a block
            times: dict[str, list[float]] = {s: [] for s in sets}
            for _ in range(args.repeats):
                for s in sets:
                    os.environ["SHANCOLL_KERNELS"] = s
                    shancoll.reload_environment()
                    times[s].append(block_seconds(comm, call, calls))
            if comm.rank == 0:
                base = np.median(times["generic"])
                row = [f"{s} {np.median(t) * 1e6:.2f} ({base / np.median(t):.2f}x)"
                       for s, t in times.items()]  # fmt: skip
                print(f"{coll} {format_bytes(nbytes)}: " + "  ".join(row), flush=True)
    os.environ.pop("SHANCOLL_KERNELS")
    shancoll.reload_environment()


if __name__ == "__main__":
    main()
