"""Per-call cost of the Python entry points on tiny messages.

Two measures, because wall time on a shared machine is noisy:

``time``
    Run under mpiexec (e.g. ``mpiexec -n 2 --bind-to core python
    benchmarks/python_call_cost.py time``): median per-call microseconds
    over several repeats of a timed loop, for each case.
``instructions``
    Run without mpiexec: each case runs once in a singleton MPI process
    under ``valgrind --tool=callgrind`` with N and with 2N calls, counting
    only inside the builtin entry (``--toggle-collect=*entry_vectorcall*``, the
    entry's vectorcall: call_entry may be inlined into it; the
    whole process's count varies by millions between runs: MPI's start-up);
    the difference divided by N is the instructions of one call (the first
    call's set-up cancels out). The Python side of the call (the caller's
    bytecode, the vectorcall into the builtin) is not counted. Needs an
    extension with symbols: ``cmake -DCMAKE_STRIP=/bin/true build/<dir>``
    keeps pybind11 from stripping it.

Cases: the plain calls of ``allreduce`` and ``reduce`` (8-byte float64
arrays), ``bcast`` (one float64), ``barrier`` and ``allgatherv`` (one
float64 per rank, ``[out, counts]``), and a few buffer-spec forms of
allreduce that used to take the Python path.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def _cases(comm, MPI, np, shancoll):
    p = comm.Get_size()
    a, b = np.ones(1), np.zeros(1)
    out, counts = np.zeros(p), [1] * p
    mpi = {"algorithm": "mpi"} if os.environ.get("CALL_COST_MPI") else {}
    return {
        "allreduce": lambda: shancoll.allreduce(comm, a, b, **mpi),
        "allreduce_timeout_int": lambda: shancoll.allreduce(comm, a, b, timeout=5, **mpi),
        "allreduce_spec": lambda: shancoll.allreduce(
            comm, [a, MPI.DOUBLE], [b, MPI.DOUBLE], **mpi
        ),  # fmt: skip
        "bcast": lambda: shancoll.bcast(comm, b, **mpi),
        "reduce": lambda: shancoll.reduce(comm, a, b, **mpi),
        "barrier": lambda: shancoll.barrier(comm, **mpi),
        "allgatherv": lambda: shancoll.allgatherv(comm, a, [out, counts], **mpi),
    }


def _setup():
    import numpy as np
    from mpi4py import MPI

    import shancoll

    return MPI, np, shancoll


def run_calls(case: str, calls: int) -> None:
    MPI, np, shancoll = _setup()
    fn = _cases(MPI.COMM_WORLD, MPI, np, shancoll)[case]
    for _ in range(calls):
        fn()


def time_cases(calls: int, repeats: int, only: list[str] | None) -> None:
    MPI, np, shancoll = _setup()
    comm = MPI.COMM_WORLD
    cases = _cases(comm, MPI, np, shancoll)
    for name, fn in cases.items():
        if only and name not in only:
            continue
        for _ in range(calls // 10):  # warm-up
            fn()
        samples = []
        for _ in range(repeats):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples.append((time.perf_counter() - t0) / calls * 1e6)
        med = comm.allreduce(statistics.median(samples), op=MPI.MAX)
        if comm.Get_rank() == 0:
            print(f"{name:24s} {med:8.3f} us/call (P={comm.Get_size()}, median of {repeats})")


def _instructions(case: str, calls: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               "--toggle-collect=*entry_vectorcall*",
               sys.executable, __file__, "run", case, str(calls)]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True)
        with open(out) as f:
            text = f.read()
    m = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
    if not m or int(m.group(1)) == 0:
        raise RuntimeError("nothing counted: is the extension stripped? (see the docstring)")
    return int(m.group(1))


def count_cases(calls: int, only: list[str] | None) -> None:
    MPI, np, shancoll = _setup()
    names = [n for n in _cases(MPI.COMM_SELF, MPI, np, shancoll) if not only or n in only]
    for name in names:
        once, twice = _instructions(name, calls), _instructions(name, 2 * calls)
        print(f"{name:24s} {(twice - once) / calls:10.0f} instructions/call in the entry (1 rank)",
              flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("time")
    t.add_argument("--calls", type=int, default=20000)
    t.add_argument("--repeats", type=int, default=7)
    t.add_argument("cases", nargs="*")
    c = sub.add_parser("instructions")
    c.add_argument("--calls", type=int, default=2000)
    c.add_argument("cases", nargs="*")
    r = sub.add_parser("run")  # one case under valgrind (internal)
    r.add_argument("case")
    r.add_argument("calls", type=int)
    args = ap.parse_args()
    if args.mode == "time":
        time_cases(args.calls, args.repeats, args.cases)
    elif args.mode == "instructions":
        count_cases(args.calls, args.cases)
    else:
        run_calls(args.case, args.calls)


if __name__ == "__main__":
    main()
