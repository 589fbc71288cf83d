"""Allreduce: every shancoll algorithm against mpi4py's ``comm.Allreduce``, side by side.

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/allreduce_quick.py [--op max] \\
        [--sizes 2040,256KiB] [--algorithms shan,pairwise_exchange] [--split-phase off|only]

Float64 data (int32 for the butterfly paper's "1 int"); the timing of
``shancoll.bench.time_calls``: a barrier before every call, the slowest
rank's time per call, median of the repeats, all series interleaved. Prints
a table of speedups (native time / series time; > 1 is faster) and checks
every result against the native one after timing. Then the split-phase
overhead at the butterfly paper's 255 doubles: each schedule-driven algorithm
blocking, against ``iallreduce(...).wait()`` and against ``iallreduce`` driven
by a ``test()`` loop (the issue's target: under 10% over blocking).
"""

from __future__ import annotations

import argparse

import numpy as np
from mpi4py import MPI

import shancoll
from shancoll.bench.kernel import time_calls
from shancoll.bench.series import format_bytes, parse_sizes

# bytes per rank; 4 = the butterfly paper's 1 int, 2040 = its 255 doubles
SIZES = [4, 8, 64, 512, 2040, 2048, 8192, 65536, 262144, 1 << 20, 4 << 20, 16 << 20]


def make_calls(comm, x, outs, op, algorithms):
    calls = {"native": lambda: comm.Allreduce(x, outs["native"], op=op)}
    for name in algorithms:
        calls[name] = lambda name=name: shancoll.allreduce(comm, x, outs[name], op, name)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", default="sum", choices=["sum", "max"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="bytes per rank")
    parser.add_argument("--algorithms", default="", help="default: every algorithm")
    parser.add_argument("--split-phase", default="on", choices=["on", "off", "only"],
                        help="the overhead table: also (on), not (off), alone (only)")  # fmt: skip
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    op = MPI.SUM if args.op == "sum" else MPI.MAX
    algorithms = args.algorithms.split(",") if args.algorithms else shancoll.algorithms("allreduce")
    rows = []
    for nbytes in [] if args.split_phase == "only" else parse_sizes(args.sizes):
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
    if comm.rank == 0 and rows:
        print(" | ".join(["bytes", "native", *algorithms]))
        for row in rows:
            print(" | ".join(row))
    if args.split_phase == "off":
        return
    lines = split_phase_overhead(comm, op, args.repeats)
    if comm.rank == 0:
        print(f"\nsplit-phase overhead, 255 doubles, {args.op}")
        print("\n".join(lines))


SPLIT_PHASE = ["dissemination", "nway_dissemination", "bruck", "pairwise_exchange", "binomial",
               "mpi"]  # fmt: skip


def test_loop(comm, x, out, op, name):
    req = shancoll.iallreduce(comm, x, out, op, name)
    while not req.test():
        pass


def split_phase_overhead(comm, op, repeats: int) -> list[str]:
    x = np.arange(255, dtype=np.float64) % 7 + comm.rank
    out = np.empty_like(x)
    calls = {}
    for name in SPLIT_PHASE:
        calls[name] = lambda name=name: shancoll.allreduce(comm, x, out, op, name)
        calls[name + "/wait"] = lambda name=name: shancoll.iallreduce(comm, x, out, op,
                                                                      name).wait()  # fmt: skip
        calls[name + "/test"] = lambda name=name: test_loop(comm, x, out, op, name)
    timings = time_calls(comm, calls, warmup=3, repeats=repeats, iterations=None,
                         target_seconds=0.3, max_iterations=20000)  # fmt: skip
    lines = ["algorithm | blocking | iallreduce+wait (overhead) | iallreduce+test loop (overhead)"]
    for name in SPLIT_PHASE:
        base = timings[name].median
        cells = [name, f"{base * 1e6:.2f}us"]
        for kind in ("wait", "test"):
            t = timings[f"{name}/{kind}"].median
            cells.append(f"{t * 1e6:.2f}us ({(t / base - 1) * 100:+.0f}%)")
        lines.append(" | ".join(cells))
    return lines


if __name__ == "__main__":
    main()
