"""Bcast, reduce, allreduce: release_gather and its options against mpi4py's own, side by side.

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/release_gather_quick.py \\
        [--collectives bcast,reduce,allreduce] [--sizes 8,512,8KiB,4MiB] [--root 0] \\
        [--series default,flat,knomial4,leader_first,...] [--series-options "tree=kary,k=2"] \\
        [--repeats 7] [--target 0.2] [--csv out.csv]

Each (collective, size) is one timing block of ``shancoll.bench.time_calls``:
``native`` (mpi4py's ``comm.Bcast`` / ``comm.Reduce`` / ``comm.Allreduce``)
and every series are called side by side, a barrier before every call, the
slowest rank's time per call, median of the repeats, repeats interleaved
across series; so the ratios come from one run under one background load.
Printed per collective: the native time and, per series, native time /
series time (> 1: faster than MPI). After timing, each series runs once
more into a NaN-filled buffer and is checked against native; data are small
integers in float64, so every combine order gives the same bits.

Series (``--series``; default: all below): ``default`` (the paper's
choices), ``topo_none`` (topology none), ``leader_first`` / ``leader_last``
(topology-aware over 2 fake sockets, ``sockets=2``: on a one-socket machine
this times the trees' shape, not a real socket boundary), ``flat``,
``kary2``, ``kary3``, ``knomial2``, ``knomial4`` (tree, K; topology none),
``left`` / ``right`` (skew), ``no_pipeline`` (one 32 KiB slot),
``paper_buffer`` (the paper's 32 KiB in 4 slots at every size),
``inline``, ``no_rfp`` (``read_from_parent=False``), ``no_data_copy``,
``single_copy`` / ``no_single_copy`` (forced on at every size / off),
``binomial`` and ``mpi`` (shancoll's other algorithms; ``mpi`` calls the
same MPI collective from C++: about 1x, its spread is the run's noise).
``--series-options "tree=kary,k=2,sockets=2"`` adds a release_gather series
with those options (repeatable).
"""

from __future__ import annotations

import argparse
import csv

import numpy as np
from mpi4py import MPI

import shancoll
from shancoll.bench.kernel import time_calls
from shancoll.bench.series import format_bytes, parse_sizes

SIZES = [8, 64, 512, 4096, 32768, 65536, 262144, 1 << 20, 4 << 20]

# name -> (algorithm, release_gather options)
SERIES: dict[str, tuple[str, dict]] = {
    "default": ("release_gather", {}),
    "topo_none": ("release_gather", {"topology": "none"}),
    "leader_first": ("release_gather", {"topology": "socket_leader_first", "sockets": 2}),
    "leader_last": ("release_gather", {"topology": "socket_leader_last", "sockets": 2}),
    "flat": ("release_gather", {"tree": "flat", "topology": "none"}),
    "kary2": ("release_gather", {"tree": "kary", "k": 2, "topology": "none"}),
    "kary3": ("release_gather", {"tree": "kary", "k": 3, "topology": "none"}),
    "knomial2": ("release_gather", {"tree": "knomial", "k": 2, "topology": "none"}),
    "knomial4": ("release_gather", {"tree": "knomial", "k": 4, "topology": "none"}),
    "left": ("release_gather", {"skew": "left"}),
    "right": ("release_gather", {"skew": "right"}),
    "no_pipeline": ("release_gather", {"buffers": 1, "buffer_size": 32768}),
    "paper_buffer": ("release_gather", {"buffers": 4, "buffer_size": 32768}),
    "inline": ("release_gather", {"inline": True}),
    "no_rfp": ("release_gather", {"read_from_parent": False}),
    "no_data_copy": ("release_gather", {"data_copy": False}),
    "single_copy": ("release_gather", {"single_copy": True}),
    "no_single_copy": ("release_gather", {"single_copy": False}),
    "binomial": ("binomial", {}),
    "mpi": ("mpi", {}),
}


def _value(text: str):
    if text.isdigit():
        return int(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def parse_options(text: str) -> dict:
    """ "tree=kary,k=2,inline=true" -> {"tree": "kary", "k": 2, "inline": True}."""
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {key: _value(value) for key, _, value in pairs}


def series_call(comm, collective, x, out, root, algorithm, opts):
    """One series' call, writing into out."""
    if collective == "bcast":
        return lambda: shancoll.bcast(comm, out, root, algorithm, **opts)
    if collective == "reduce":
        return lambda: shancoll.reduce(comm, x, out, MPI.SUM, root, algorithm, **opts)
    return lambda: shancoll.allreduce(comm, x, out, MPI.SUM, algorithm, **opts)


def make_calls(comm, collective, x, outs, root, series):
    """One zero-argument call per series, native first, writing into outs[name]."""
    native = {
        "bcast": lambda: comm.Bcast(outs["native"], root),
        "reduce": lambda: comm.Reduce(x, outs["native"], MPI.SUM, root),
        "allreduce": lambda: comm.Allreduce(x, outs["native"], MPI.SUM),
    }[collective]
    calls = {"native": native}
    for name, (algorithm, opts) in series.items():
        calls[name] = series_call(comm, collective, x, outs[name], root, algorithm, opts)
    return calls


def check(comm, collective, x, outs, root, calls) -> dict[str, bool]:
    """Runs every call once more into NaN-filled outputs; compares with native."""
    for out in outs.values():
        if collective == "bcast":
            out[:] = x if comm.rank == root else np.nan
        else:
            out[:] = np.nan
    ok = {}
    for name, call in calls.items():
        try:
            call()
            ok[name] = True
        except Exception:  # raised on every rank: reported as an error below
            ok[name] = False
    must_match = collective != "reduce" or comm.rank == root
    for name in calls:
        ok[name] = ok[name] and (not must_match or np.array_equal(outs[name], outs["native"]))
    oks = comm.allgather(ok)
    return {name: all(o[name] for o in oks) for name in calls}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--collectives", default="bcast,reduce,allreduce")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--series", default=",".join(SERIES))
    parser.add_argument("--series-options", action="append", default=[])
    parser.add_argument("--root", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--target", type=float, default=0.2, help="timed seconds per point")
    parser.add_argument("--csv", default="")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    series = {name: SERIES[name] for name in args.series.split(",") if name}
    for text in args.series_options:
        series[f"rg[{text}]"] = ("release_gather", parse_options(text))
    rows = []
    for collective in args.collectives.split(","):
        for nbytes in parse_sizes(args.sizes):
            n = max(nbytes // 8, 1)
            x = np.arange(n, dtype=np.float64) % 7 + comm.rank
            # bcast: the root's buffer holds the data, the others' are overwritten
            root_data = collective == "bcast" and comm.rank == args.root
            outs = {name: x.copy() if root_data else np.zeros(n) for name in ["native", *series]}
            calls = make_calls(comm, collective, x, outs, args.root, series)
            timings = time_calls(comm, calls, warmup=3, repeats=args.repeats, iterations=None,
                                 target_seconds=args.target, max_iterations=20000)  # fmt: skip
            ok = check(comm, collective, x, outs, args.root, calls)
            native = timings["native"].median
            for name in calls:
                t = timings[name]
                failed = isinstance(t, Exception) or not ok[name]
                rows.append({
                    "collective": collective, "bytes": n * 8, "series": name,
                    "options": "" if name == "native" else ",".join(
                        f"{k}={v}" for k, v in series[name][1].items()),
                    "time_median_us": "" if failed else t.median * 1e6,
                    "speedup": "" if failed else native / t.median,
                    "status": "error" if failed else "ok",
                })  # fmt: skip
    if comm.rank != 0:
        return
    library = MPI.Get_library_version().splitlines()[0]
    layout = shancoll.topology(comm)
    print(f"{comm.size} ranks, {layout['node_count']} node(s), socket map {layout['socket_of']} "
          f"({layout['socket_source']}), {library}")  # fmt: skip
    print("speedup = native time / series time (> 1: faster than MPI)")
    for collective in args.collectives.split(","):
        mine = [r for r in rows if r["collective"] == collective]
        print(f"\n{collective}")
        print(" | ".join(["bytes", "native", *series]))
        for nbytes in sorted({r["bytes"] for r in mine}):
            at = {r["series"]: r for r in mine if r["bytes"] == nbytes}
            cells = [format_bytes(nbytes), f"{at['native']['time_median_us']:.2f}us"]
            cells += [f"{at[s]['speedup']:.2f}x" if at[s]["status"] == "ok" else "error"
                      for s in series]  # fmt: skip
            print(" | ".join(cells))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
