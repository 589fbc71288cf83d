"""One table of bad options, refused alike by every front end.

Run under mpiexec (2 ranks) by tests/test_front_ends.py. Each case is a
(collective, key, value) the option table refuses; this script runs it
through the Python API (keyword) and the C API (``key=value``, loaded with
ctypes from the installed libshancoll.so) and writes one JSON file per rank
into the directory argv[1]: {"python": {case: message}, "capi": {case:
[code, message]}, "listings": ...}.
The PMPI library takes the same cases from SHANCOLL_<COLL>_OPTIONS (its
callers have no options argument): see the test.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import shancoll

# (collective, key, Python value, C text): every one refused by the option table.
CASES = [
    ("bcast", "tree", "oak", "oak"),
    ("bcast", "k", 2, "2"),
    ("bcast", "bcast_k", 3, "3"),
    ("bcast", "buffers", -1, "-1"),
    ("bcast", "ports", 2, "2"),
    ("bcast", "timeout", -1.0, "-1"),
    ("bcast", "inter_algorithm", "ring", "ring"),
    ("reduce", "skew", "up", "up"),
    ("reduce", "topology", "ring", "ring"),
    ("reduce", "sockets", 0, "0"),
    ("allreduce", "inter_algorithm", "bogus", "bogus"),
    ("allreduce", "inter_algorithm", "release_gather", "release_gather"),
    ("allreduce", "ports", -1, "-1"),
    ("allreduce", "reduce_k", 2, "2"),
    ("allgather", "transport", "pigeon", "pigeon"),
    ("allgather", "block_size", -5, "-5"),
    ("barrier", "tree", "flat", "flat"),
    ("barrier", "ports", 2, "2"),
    ("barrier", "timeout", -1.0, "-1"),
    ("barrier", "ranks_per_node", -2, "-2"),
    ("scan", "ports", 2, "2"),
    ("scan", "tree", "flat", "flat"),
    ("exscan", "timeout", -1.0, "-1"),
    ("exscan", "consistent", False, "0"),
    ("reduce_scatter_block", "ports", 2, "2"),
    ("reduce_scatter_block", "timeout", -1.0, "-1"),
    ("reduce_scatter", "tree", "flat", "flat"),
    ("alltoall", "tree", "flat", "flat"),
    ("alltoall", "block_size", 64, "64"),
    ("alltoall", "timeout", -1.0, "-1"),
    ("alltoallv", "transport", "rma", "rma"),
    ("alltoallv", "ranks_per_node", -2, "-2"),
    ("gather", "tree", "flat", "flat"),
    ("gatherv", "timeout", -1.0, "-1"),
    ("scatter", "block_size", 5, "5"),
    ("scatterv", "ranks_per_node", -2, "-2"),
]
LISTED = ["allgather", "allgatherv", "allreduce", "iallreduce", "bcast", "reduce", "barrier"]
LISTED += ["scan", "exscan", "reduce_scatter", "reduce_scatter_block", "alltoall", "alltoallv"]
LISTED += ["gather", "gatherv", "scatter", "scatterv"]
ROOTED_BLOCKS = ("gather", "gatherv", "scatter", "scatterv")


def case_id(case) -> str:
    return f"{case[0]}:{case[1]}={case[3]}"


def python_call(comm, collective: str, key: str, value):
    x = np.ones(4)
    out = np.empty(4 * comm.size) if collective in ("allgather", "gather") else np.empty(4)
    options = {key: value}
    if collective in ROOTED_BLOCKS:
        many = np.ones(4 * comm.size)
        gathers = collective.startswith("gather")
        send, recv = (x, many) if gathers else (many, x)
        getattr(shancoll, collective)(comm, send, recv, 0, **options)
        return
    if collective == "bcast":
        shancoll.bcast(comm, x, 0, **options)
    elif collective == "reduce":
        shancoll.reduce(comm, x, out, MPI.SUM, 0, **options)
    elif collective == "allreduce":
        shancoll.allreduce(comm, x, out, MPI.SUM, **options)
    elif collective == "barrier":
        shancoll.barrier(comm, **options)
    elif collective in ("scan", "exscan"):
        getattr(shancoll, collective)(comm, x, out, MPI.SUM, **options)
    elif collective == "reduce_scatter_block":
        shancoll.reduce_scatter_block(comm, np.ones(4 * comm.size), out, MPI.SUM, **options)
    elif collective == "reduce_scatter":
        counts = [4] * comm.size
        shancoll.reduce_scatter(comm, np.ones(4 * comm.size), out, counts, MPI.SUM, **options)
    elif collective == "alltoall":
        shancoll.alltoall(comm, out, np.empty_like(out), **options)
    elif collective == "alltoallv":
        shancoll.alltoallv(comm, out, np.empty_like(out), **options)
    else:
        shancoll.allgather(comm, x, out, **options)


def handle_type(obj) -> type:
    return ctypes.c_int if MPI._sizeof(obj) == 4 else ctypes.c_void_p


def load_capi():
    lib = ctypes.CDLL(str(Path(shancoll.__file__).parent / "lib" / "libshancoll.so"))
    lib.shancoll_last_error.restype = ctypes.c_char_p
    lib.shancoll_algorithms.restype = ctypes.c_char_p
    lib.shancoll_algorithms.argtypes = [ctypes.c_char_p]
    return lib


def capi_call(lib, comm, collective: str, text: str) -> tuple[int, str]:
    c, t, o = handle_type(comm), handle_type(MPI.DOUBLE), handle_type(MPI.SUM)
    h = MPI._handleof
    x = np.ones(4)
    out = np.empty(4 * comm.size)
    ptr = ctypes.c_void_p
    options = text.encode()
    if collective in ROOTED_BLOCKS:
        counts = (ctypes.c_int * comm.size)(*[4] * comm.size)
        displs = (ctypes.c_int * comm.size)(*[4 * r for r in range(comm.size)])
        one, all_ = ptr(x.ctypes.data), ptr(out.ctypes.data)
        d = t(h(MPI.DOUBLE))
        if collective == "gather":
            rc = lib.shancoll_gather(one, 4, d, all_, 4, d, 0, c(h(comm)), None, options)
        elif collective == "gatherv":
            rc = lib.shancoll_gatherv(one, 4, d, all_, counts, displs, d, 0, c(h(comm)), None,
                                      options)  # fmt: skip
        elif collective == "scatter":
            rc = lib.shancoll_scatter(all_, 4, d, one, 4, d, 0, c(h(comm)), None, options)
        else:
            rc = lib.shancoll_scatterv(all_, counts, displs, d, one, 4, d, 0, c(h(comm)), None,
                                       options)  # fmt: skip
        return rc, lib.shancoll_last_error().decode()
    if collective == "bcast":
        rc = lib.shancoll_bcast(ptr(x.ctypes.data), 4, t(h(MPI.DOUBLE)), 0, c(h(comm)), None,
                                options)  # fmt: skip
    elif collective == "reduce":
        rc = lib.shancoll_reduce(ptr(x.ctypes.data), ptr(out.ctypes.data), 4, t(h(MPI.DOUBLE)),
                                 o(h(MPI.SUM)), 0, c(h(comm)), None, options)  # fmt: skip
    elif collective == "allreduce":
        rc = lib.shancoll_allreduce(ptr(x.ctypes.data), ptr(out.ctypes.data), 4, t(h(MPI.DOUBLE)),
                                    o(h(MPI.SUM)), c(h(comm)), None, options)  # fmt: skip
    elif collective == "barrier":
        rc = lib.shancoll_barrier(c(h(comm)), None, options)
    elif collective.startswith("reduce_scatter"):
        send = np.ones(4 * comm.size)
        if collective == "reduce_scatter":
            counts = (ctypes.c_int * comm.size)(*([4] * comm.size))
            rc = lib.shancoll_reduce_scatter(ptr(send.ctypes.data), ptr(out.ctypes.data), counts,
                                             t(h(MPI.DOUBLE)), o(h(MPI.SUM)), c(h(comm)), None,
                                             options)  # fmt: skip
        else:
            rc = lib.shancoll_reduce_scatter_block(ptr(send.ctypes.data), ptr(out.ctypes.data), 4,
                                                   t(h(MPI.DOUBLE)), o(h(MPI.SUM)), c(h(comm)),
                                                   None, options)  # fmt: skip
    elif collective in ("scan", "exscan"):
        rc = getattr(lib, f"shancoll_{collective}")(
            ptr(x.ctypes.data), ptr(out.ctypes.data), 4, t(h(MPI.DOUBLE)), o(h(MPI.SUM)),
            c(h(comm)), None, options,
        )  # fmt: skip
    elif collective == "alltoall":
        rc = lib.shancoll_alltoall(ptr(out.ctypes.data), 4, t(h(MPI.DOUBLE)), ptr(x.ctypes.data),
                                   4, t(h(MPI.DOUBLE)), c(h(comm)), None, options)  # fmt: skip
    elif collective == "alltoallv":
        counts = (ctypes.c_int * comm.size)(*[4] * comm.size)
        displs = (ctypes.c_int * comm.size)(*[4 * r for r in range(comm.size)])
        rc = lib.shancoll_alltoallv(ptr(out.ctypes.data), counts, displs, t(h(MPI.DOUBLE)),
                                    ptr(out.ctypes.data), counts, displs, t(h(MPI.DOUBLE)),
                                    c(h(comm)), None, options)  # fmt: skip
    else:
        rc = lib.shancoll_allgather(ptr(x.ctypes.data), 4, t(h(MPI.DOUBLE)), ptr(out.ctypes.data),
                                    4, t(h(MPI.DOUBLE)), c(h(comm)), None, options)  # fmt: skip
    return rc, lib.shancoll_last_error().decode()


def main() -> None:
    comm = MPI.COMM_WORLD
    lib = load_capi()
    result = {"rank": comm.rank, "python": {}, "capi": {}, "listings": {}}
    for case in CASES:
        collective, key, value, text = case
        try:
            python_call(comm, collective, key, value)
            result["python"][case_id(case)] = None
        except shancoll.ArgumentError as e:
            result["python"][case_id(case)] = str(e)
        result["capi"][case_id(case)] = capi_call(lib, comm, collective, f"{key}={text}")
        comm.Barrier()  # a case refused on one rank only must not desynchronise the next
    for collective in LISTED:
        result["listings"][collective] = {
            "python": shancoll.algorithms(collective),
            "capi": lib.shancoll_algorithms(collective.encode()).decode().split(","),
        }
    Path(sys.argv[1], f"rank{comm.rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
