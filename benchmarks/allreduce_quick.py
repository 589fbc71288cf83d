"""Allreduce: every shancoll algorithm against mpi4py's ``comm.Allreduce``, side by side.

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/allreduce_quick.py [--op max]

Float64 data (int32 for the butterfly paper's "1 int"); the timing of
``shancoll.bench.time_calls``: a barrier before every call, the slowest
rank's time per call, median of the repeats, all series interleaved. Prints
a table of speedups (native time / series time; > 1 is faster) and checks
every result against the native one after timing.
"""

from __future__ import annotations

import argparse

import numpy as np
from mpi4py import MPI

import shancoll
from shancoll.bench import format_bytes, time_calls

# bytes per rank; 4 = the butterfly paper's 1 int, 2040 = its 255 doubles
SIZES = [4, 8, 2040, 2048, 16384, 262144, 1 << 20, 4 << 20, 16 << 20]


def make_calls(comm, x, outs, op, algorithms):
    calls = {"native": lambda: comm.Allreduce(x, outs["native"], op=op)}
    for name in algorithms:
        calls[name] = lambda name=name: shancoll.allreduce(comm, x, outs[name], op, name)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", default="sum", choices=["sum", "max"])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    op = MPI.SUM if args.op == "sum" else MPI.MAX
    algorithms = shancoll.algorithms("allreduce")
    rows = []
    for nbytes in SIZES:
        dtype = np.int32 if nbytes == 4 else np.float64
        n = nbytes // np.dtype(dtype).itemsize
        x = np.arange(n, dtype=dtype) % 7 + comm.rank
        outs = {name: np.empty_like(x) for name in ["native", *algorithms]}
        calls = make_calls(comm, x, outs, op, algorithms)
        timings = time_calls(comm, calls, warmup=3, repeats=args.repeats, iterations=None,
                             target_seconds=0.3, max_iterations=20000)  # fmt: skip
        native = timings["native"].median
        row = [format_bytes(nbytes), f"{native * 1e6:.2f}us"]
        for name in algorithms:
            t = timings[name]
            ok = not isinstance(t, Exception) and np.array_equal(outs[name], outs["native"])
            row.append(f"{native / t.median:.2f}x" if ok else "error")
        rows.append(row)
    if comm.rank == 0:
        library = MPI.Get_library_version().splitlines()[0]
        print(f"allreduce {args.op}, {comm.size} ranks, {library}")
        print(" | ".join(["bytes", "native", *algorithms]))
        for row in rows:
            print(" | ".join(row))


if __name__ == "__main__":
    main()
