"""What checked mode (check=True, SHANCOLL_CHECK=1) costs per call.

    mpiexec -n 2 --bind-to core python benchmarks/check_cost.py [--calls N] [--repeats R]

Times shancoll.allreduce (8 B and 64 KiB of float64, algorithm auto) and
shancoll.bcast (8 B) with and without check=True, repeats interleaved, and
prints the median per-call time of each and the difference (rank 0).
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from mpi4py import MPI

import shancoll


def per_call(comm, fn, calls: int) -> float:
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(calls):
        fn()
    return (MPI.Wtime() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    cases = {}
    for label, n in (("allreduce 8 B", 1), ("allreduce 64 KiB", 8192)):
        s, r = np.ones(n), np.zeros(n)
        cases[label] = lambda check, s=s, r=r: shancoll.allreduce(comm, s, r, check=check)
    b = np.ones(1)
    cases["bcast 8 B"] = lambda check: shancoll.bcast(comm, b, 0, check=check)
    times = {(label, check): [] for label in cases for check in (False, True)}
    for _ in range(args.repeats):
        for label, call in cases.items():
            for check in (False, True):

                def one(call=call, check=check):
                    call(check)

                times[label, check].append(per_call(comm, one, args.calls))
    if comm.rank == 0:
        print(f"{comm.size} ranks, {MPI.Get_library_version().splitlines()[0]}")
        print(f"{'call':18} {'plain us':>9} {'checked us':>11} {'cost us':>8}")
        for label in cases:
            plain = statistics.median(times[label, False])
            checked = statistics.median(times[label, True])
            print(f"{label:18} {plain:9.2f} {checked:11.2f} {checked - plain:8.2f}")


if __name__ == "__main__":
    main()
