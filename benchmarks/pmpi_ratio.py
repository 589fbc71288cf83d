"""A plain MPI benchmark, unchanged, with and without the shancoll PMPI library.

    .venv/bin/python benchmarks/pmpi_ratio.py [-n 2] [--repeats 3] [--markdown] [-- osu args]

Runs ``shancoll_osu_style`` (benchmarks/c/osu_style.c, installed in
<site-packages>/shancoll/bin; it knows nothing of shancoll) under mpiexec,
alternately without and with ``LD_PRELOAD=libshancoll_pmpi.so``, ``--repeats``
times each, and prints per collective and size the median of each
configuration's times (``--stat``: each run's median per call, or OSU's mean)
and their ratio (MPI time / shancoll time: > 1 means
the preload is faster). Arguments after ``--`` go to the benchmark (e.g.
``-- -m 65536 -c allreduce``). Any other MPI program runs the same way: see
docs/performance.md for the Intel MPI Benchmarks and the OSU micro-benchmarks.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
from pathlib import Path


def installed(relative: str) -> Path:
    spec = importlib.util.find_spec("shancoll")
    for location in spec.submodule_search_locations or []:
        path = Path(location) / relative
        if path.is_file():
            return path
    sys.exit(f"{relative} is not installed with shancoll (build with SHANCOLL_CAPI=ON)")


def run_once(
    ranks: int, preload: bool, bench_args: list[str], column: int
) -> dict[tuple[str, int], float]:
    """One run of the benchmark: {(collective, bytes): microseconds of the column}."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = str(installed("lib/libshancoll_pmpi.so"))
    mpiexec = Path(sys.executable).parent / "mpiexec"
    binary = installed("bin/shancoll_osu_style")
    out = subprocess.run(
        [str(mpiexec), "-n", str(ranks), str(binary), *bench_args],
        env=env, check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    ).stdout  # fmt: skip
    times = {}
    for line in out.splitlines():
        if line and not line.startswith("#"):
            fields = line.split()
            times[(fields[0], int(fields[1]))] = float(fields[2 + column])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--ranks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument(
        "--stat", choices=["avg", "median"], default="median",
        help="per-call statistic (median: robust on a shared machine; avg: OSU's)",
    )  # fmt: skip
    parser.add_argument("bench_args", nargs="*", help="after --: arguments of osu_style")
    args = parser.parse_args()
    runs: dict[bool, list[dict]] = {False: [], True: []}
    for _ in range(args.repeats):  # interleaved: slow drifts of the machine hit both alike
        for preload in (False, True):
            column = 0 if args.stat == "avg" else 1
            runs[preload].append(run_once(args.ranks, preload, args.bench_args, column))
    keys = list(runs[False][0])
    median = {p: {k: statistics.median(r[k] for r in runs[p]) for k in keys} for p in runs}
    row = "{:<11} {:>8} {:>11.2f} {:>11.2f} {:>7.2f}"
    if args.markdown:
        row = "| {} | {} | {:.2f} | {:.2f} | {:.2f} |"
    if args.markdown:
        print("| collective | bytes | MPI us | preload us | ratio |\n|---|---:|---:|---:|---:|")
    else:
        print(f"{'collective':<11} {'bytes':>8} {'MPI us':>11} {'preload us':>11} {'ratio':>7}")
    for key in keys:
        mpi, shan = median[False][key], median[True][key]
        print(row.format(key[0], key[1], mpi, shan, mpi / shan if shan > 0 else float("nan")))


if __name__ == "__main__":
    main()
