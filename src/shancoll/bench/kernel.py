"""Timing kernel for shancoll's collectives, run inside an MPI job.

Usage (one job; ``python -m shancoll.bench.sweep`` launches these for you)::

    mpiexec -n 2 python -m shancoll.bench.kernel --collective allgatherv \\
        --distribution bcast --sizes 1KiB:16MiB:4 \\
        --series shan,ring,bruck,recursive_doubling,mpi,shan_shared,native,memcpy

Method (as in the GASPI-SHAN Allgather(V) benchmark), per size, for all
series side by side in the same job: for each series ``warmup`` untimed
calls, then ``repeats`` repeats of ``iterations`` calls, an ``MPI_Barrier``
before every call. Repeats are interleaved over the series (repeat r of
every series before repeat r+1 of any), so that drifts in the machine's
background load hit all series alike. Each rank times each call on its
own; after the timed loops (never inside them) one ``MAX`` allreduce per
series turns the local times into the slowest rank's time of every call. A
repeat's value is the mean of its calls; the point reports the median, min
and max over repeats. With ``--iterations auto`` the count is chosen from
the warm-up calls (the slowest rank's median) so that a series' timed calls
last about ``--target-seconds`` in all; every rank uses the same count.

Series (one name everywhere: CSV ``series`` column, plot legend, table):

``<algorithm>``
    ``shancoll.allgatherv(..., algorithm=<algorithm>)`` into a private
    receive buffer, for each algorithm of ``shancoll.algorithms(...)``
    (``mpi`` is the MPI library's ``MPI_Allgatherv`` called from C++).
``<algorithm>[<options>]``
    the same with options: ``shan[rma]``, ``shan[two_sided]`` (transport),
    ``shan[bs=64KiB]`` (block_size), combined as ``shan[rma,bs=64KiB]``.
``shan_shared``
    ``shancoll.allgatherv_shared``: the result stays in the node-shared
    segment, read in place (no copy into a private buffer); options as above.
``native``
    mpi4py's ``comm.Allgatherv`` (the baseline of every speedup).
``memcpy``
    the machine floor: ``numpy.copyto`` of the whole result (total bytes),
    on every rank at once, barrier-separated like the others.

Every point is checked after the timed loops: the receive buffer (or the
shared view) is filled with NaN, one more (untimed) call is made, and the
result must equal the expected concatenation on every rank (``check`` =
``ok``/``fail``).

Distributions (bytes per rank ``m_i`` for ``c`` bytes per rank on
``P`` ranks, rounded down to the element size): ``regular`` m_i = c;
``decreasing`` m_i = 2c(P-1-i)/(P-1) (m_0 = c if P = 1); ``bcast`` m_0 = P*c,
all others 0. At P = 2, ``decreasing`` and ``bcast`` coincide.

Output: with ``--jsonl PATH`` rank 0 appends one JSON object per line:
``{"event": "env", ...}`` first, ``{"event": "start", ...}`` before each
point (so that a hang can be attributed), ``{"event": "row", ...}`` after
it, ``{"event": "skip", ...}`` for series not relevant to the layout and
``{"event": "done"}`` at the end. Rank 0 prints a table to stdout.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .series import (
    ALL_DISTRIBUTIONS,
    COLLECTIVES,
    MESSAGE_COLLECTIVES,
    PERSISTENT_COLLECTIVES,
    Series,
    algorithms_of,
    check_distribution,
    distribution_bytes,
    format_bytes,
    parse_series,
    parse_sizes,
    split_series,
)

__all__ = ["Timing", "environment", "run", "time_calls", "main"]

KERNEL = "python"  # the `kernel` column: this module (the C++ driver is shancoll_bench)

# ---------------------------------------------------------------------------
# environment


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def mpi_library_short(version: str) -> str:
    """``'MPICH Version:  5.0.2\\n...' -> 'MPICH 5.0.2'``; Open MPI / Intel MPI first clause."""
    first = version.strip().splitlines()[0] if version.strip() else "unknown MPI"
    m = re.match(r"\s*MPICH Version:\s*(\S+)", first)
    if m:
        return f"MPICH {m.group(1)}"
    return re.split(r"[,\x00]", first)[0].strip()


def environment(comm, ranks_per_node: int, layout: dict) -> dict:
    """Everything a figure needs to be reproduced (collective: gathers hostnames)."""
    import mpi4py
    from mpi4py import MPI

    import shancoll

    hosts = comm.allgather(MPI.Get_processor_name())
    lib = MPI.Get_library_version()
    env_keys = ("SHANCOLL_", "MPIR_CVAR_", "MPICH_", "OMPI_MCA_", "I_MPI_", "UCX_", "FI_")
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "hosts": sorted(set(hosts)),
        "cores": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "mpi4py": mpi4py.__version__,
        "shancoll": shancoll.__version__,
        "mpi_library": mpi_library_short(lib),
        "mpi_library_version": lib.strip(),
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "ranks": comm.Get_size(),
        "ranks_per_node": ranks_per_node,
        "nodes": layout["node_count"],
        "node_sizes": [len(r) for r in layout["ranks"]],
        "timer": "time.perf_counter",
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(env_keys)},
    }


# ---------------------------------------------------------------------------
# the kernel


@dataclass
class Timing:
    median: float
    min: float
    max: float
    iterations: int


def calls_per_repeat(
    seconds_per_call: float, target_seconds: float, repeats: int, max_iterations: int
) -> int:
    """Calls per repeat so that all repeats take about ``target_seconds``."""
    per_repeat = target_seconds / (repeats * max(seconds_per_call, 1e-7))
    return max(1, min(max_iterations, int(per_repeat)))


def time_each(call: Callable[[], Any], times: np.ndarray, barrier, clock) -> None:
    """``len(times)`` calls, a barrier before each; ``times[i]``: call i's seconds."""
    for i in range(len(times)):
        barrier()
        t0 = clock()
        call()
        times[i] = clock() - t0


def time_calls(
    comm,
    calls: dict[str, Callable[[], Any]],
    *,
    warmup: int,
    repeats: int,
    iterations: int | None,
    target_seconds: float,
    max_iterations: int,
    on_block: Callable[[str], None] = lambda label: None,
) -> dict[str, Timing | Exception]:
    """Times every call of ``calls`` (each collective over ``comm``), side by side.

    Per call: ``warmup`` untimed calls (and, for ``iterations=None``, the
    count from the slowest rank's fastest warm-up call: a first call that
    builds state, such as a shared segment, takes milliseconds, and with
    two warm-up calls a median let it shrink the count to one call per
    repeat, which timed a cold call; then one untimed batch of that count,
    whose mean per call lowers the estimate where the set-up outlasted the
    warm-up: across two hosts both warm-up calls of a job's first series
    could carry it, and 3-7 calls per repeat read 1.5-4x the same
    algorithm's time in the same job), then ``repeats``
    repeats of ``iterations`` calls, a barrier before each call. Repeats are
    interleaved: repeat r of every call runs before repeat r+1 of any, so
    that drifts in background load hit all of them alike. Local times are
    turned into the slowest rank's time per call by one MAX allreduce per
    call after all timed loops. An exception (raised on every rank) ends
    that call's timing: it is returned in place of its Timing.
    """
    from mpi4py import MPI

    barrier = comm.Barrier
    clock = time.perf_counter
    results: dict[str, Timing | Exception] = {}
    live: dict[str, Callable[[], Any]] = {}
    counts: dict[str, int] = {}
    for label, call in calls.items():
        on_block(label)
        try:
            warm = np.zeros(max(warmup, 1 if iterations is None else 0))
            time_each(call, warm, barrier, clock)
            n = iterations
            if n is None:  # from the fastest warm-up call: the first may carry set-up
                est = comm.allreduce(float(np.min(warm)), op=MPI.MAX)
                n = calls_per_repeat(est, target_seconds, repeats, max_iterations)
                if n < max_iterations:  # the set-up may have outlasted the warm-up
                    batch = np.empty(n)
                    time_each(call, batch, barrier, clock)  # as the timed loops run them
                    batch = comm.allreduce(float(batch.mean()), op=MPI.MAX)
                    n = calls_per_repeat(min(est, batch), target_seconds, repeats, max_iterations)
        except Exception as e:
            results[label] = e
            continue
        live[label] = call
        counts[label] = n
    local = {label: np.empty((repeats, counts[label])) for label in live}
    for r in range(repeats):
        for label, call in list(live.items()):
            on_block(label)
            try:
                time_each(call, local[label][r], barrier, clock)
            except Exception as e:
                results[label] = e
                del live[label]
    for label in live:
        slowest = np.empty_like(local[label])
        comm.Allreduce(local[label], slowest, op=MPI.MAX)
        per_repeat = slowest.mean(axis=1)
        results[label] = Timing(
            float(np.median(per_repeat)),
            float(per_repeat.min()),
            float(per_repeat.max()),
            counts[label],
        )
    return {label: results[label] for label in calls}


class Point:
    """Buffers of one (distribution, size) point, shared by all series."""

    def __init__(
        self, comm, collective: str, distribution: str, bytes_per_rank: int, dtype: np.dtype
    ):
        self.comm = comm
        p, rank = comm.Get_size(), comm.Get_rank()
        self.dtype = dtype
        item = dtype.itemsize
        self.bytes = distribution_bytes(distribution, bytes_per_rank, p, item)
        self.counts = [b // item for b in self.bytes]
        self.displs = [int(x) for x in np.concatenate(([0], np.cumsum(self.counts)[:-1]))]
        total = int(sum(self.counts))
        self.total_bytes = total * item
        # Rank r contributes (r+1)*2^32 + 0, 1, 2, ...: exact in float64, distinct per rank.
        blocks = [np.arange(n, dtype=dtype) + (r + 1) * 2.0**32 for r, n in enumerate(self.counts)]
        self.expected = np.concatenate(blocks) if blocks else np.empty(0, dtype)
        self.send = np.ascontiguousarray(blocks[rank])
        self.recv = np.full(total, np.nan, dtype)
        self.copy_src = self.expected.copy()  # memcpy floor: the whole result, page-touched
        self.copy_dst = np.zeros(total, dtype)
        self.collective = collective
        self.view = None

    def call_for(self, s: Series, rpn: int, timeout: float | None) -> Callable[[], Any]:
        import shancoll

        comm, send, recv = self.comm, self.send, self.recv
        opts = dict(s.options)
        if s.kind == "memcpy":
            src, dst = self.copy_src, self.copy_dst
            copyto = np.copyto
            return lambda: copyto(dst, src)
        if self.collective == "allgather":
            if s.kind == "native":
                return lambda: comm.Allgather(send, recv)
            if s.kind == "shared":

                def shared():
                    self.view = shancoll.allgather_shared(
                        comm, send, ranks_per_node=rpn, timeout=timeout, **opts
                    )

                return shared
            fn = shancoll.allgather
            alg = s.algorithm
            return lambda: fn(
                comm, send, recv, algorithm=alg, ranks_per_node=rpn, timeout=timeout, **opts
            )
        counts, displs = self.counts, self.displs
        if s.kind == "native":
            spec = [recv, (counts, displs)]  # mpi4py infers the MPI datatype from the dtype
            return lambda: comm.Allgatherv(send, spec)
        if s.kind == "shared":

            def shared():
                self.view = shancoll.allgatherv_shared(
                    comm, send, counts, displs, ranks_per_node=rpn, timeout=timeout, **opts
                )

            return shared
        fn = shancoll.allgatherv
        spec = [recv, counts, displs]
        alg = s.algorithm
        return lambda: fn(
            comm, send, spec, algorithm=alg, ranks_per_node=rpn, timeout=timeout, **opts
        )

    def reset(self, s: Series) -> None:
        if s.kind == "memcpy":
            self.copy_dst.fill(np.nan)
        else:
            self.recv.fill(np.nan)
        self.view = None

    def check(self, s: Series) -> bool:
        if s.kind == "memcpy":
            got = self.copy_dst
        elif s.kind == "shared":
            got = np.asarray(self.view).reshape(-1)
        else:
            got = self.recv
        return bool(np.array_equal(got, self.expected))


class MessagePoint:
    """Buffers of one allreduce/bcast/reduce/scan/exscan point: one message of ``nbytes``, root 0
    (barrier: no buffers; its one point is 0 bytes; gather, scatter: one block
    of ``nbytes`` per rank, all of them at root 0).

    Rank r contributes ``arange(n) + r``: every sum is an integer, exact in
    float64 whatever order an algorithm combines in.
    """

    def __init__(self, comm, collective: str, nbytes: int, dtype: np.dtype):
        self.comm = comm
        self.collective = collective
        p, self.rank = comm.Get_size(), comm.Get_rank()
        n = nbytes // dtype.itemsize
        self.bytes = [n * dtype.itemsize] * p
        self.total_bytes = n * dtype.itemsize
        # What a result can never be: NaN, or for integers their largest value.
        self.poison = np.nan if dtype.kind in "fc" else np.iinfo(dtype).max
        base = np.arange(n, dtype=dtype)
        self.send = base + self.rank
        self.recv = np.full(n, self.poison, dtype)
        r = self.rank
        if collective in ("gather", "scatter"):  # P blocks at the root: rank r's is base + r
            blocks = np.concatenate([base + r for r in range(p)]) if n else base
            if collective == "gather":
                self.recv = np.full(p * n if self.rank == 0 else 0, self.poison, dtype)
                self.expected = blocks if self.rank == 0 else self.recv
            else:
                self.send = blocks if self.rank == 0 else base[:0]
                self.expected = base + self.rank
        elif collective == "bcast":
            self.expected = base
            self.recv[:] = base if self.rank == 0 else self.poison
        elif collective == "scan":  # ranks 0..r: sum of base + q
            self.expected = (r + 1) * base + r * (r + 1) // 2
        elif collective == "exscan":  # ranks 0..r-1 (rank 0: undefined, not checked)
            self.expected = r * base + r * (r - 1) // 2
        elif collective == "reduce_scatter_block":  # P blocks in, block r of the sum out
            whole = np.arange(p * n, dtype=dtype)
            self.send = whole + r
            self.expected = p * whole[r * n : (r + 1) * n] + p * (p - 1) // 2
        else:
            self.expected = p * base + p * (p - 1) // 2
        self.copy_src, self.copy_dst = base + self.rank, np.zeros(n, dtype)

    def call_for(self, s: Series, rpn: int, timeout: float | None) -> Callable[[], Any]:
        from mpi4py import MPI

        import shancoll

        comm, send, recv = self.comm, self.send, self.recv
        if s.kind == "memcpy":
            src, dst, copyto = self.copy_src, self.copy_dst, np.copyto
            return lambda: copyto(dst, src)
        if s.kind == "native":
            native = {
                "barrier": comm.Barrier,
                "allreduce": lambda: comm.Allreduce(send, recv, MPI.SUM),
                "bcast": lambda: comm.Bcast(recv, 0),
                "reduce": lambda: comm.Reduce(send, recv, MPI.SUM, 0),
                "scan": lambda: comm.Scan(send, recv, MPI.SUM),
                "exscan": lambda: comm.Exscan(send, recv, MPI.SUM),
                "reduce_scatter_block": lambda: comm.Reduce_scatter_block(send, recv, MPI.SUM),
                "gather": lambda: comm.Gather(send, recv if self.rank == 0 else None, 0),
                "scatter": lambda: comm.Scatter(send if self.rank == 0 else None, recv, 0),
            }
            return native[self.collective]
        kw = dict(s.options, algorithm=s.algorithm, ranks_per_node=rpn, timeout=timeout)
        if self.collective == "barrier":
            return lambda: shancoll.barrier(comm, **kw)
        if self.collective == "gather":
            return lambda: shancoll.gather(comm, send, recv, 0, **kw)
        if self.collective == "scatter":
            return lambda: shancoll.scatter(comm, send, recv, 0, **kw)
        if self.collective == "allreduce":
            return lambda: shancoll.allreduce(comm, send, recv, MPI.SUM, **kw)
        if self.collective in ("scan", "exscan", "reduce_scatter_block"):
            call = getattr(shancoll, self.collective)
            return lambda: call(comm, send, recv, MPI.SUM, **kw)
        if self.collective == "bcast":
            return lambda: shancoll.bcast(comm, recv, 0, **kw)
        return lambda: shancoll.reduce(comm, send, recv, MPI.SUM, 0, **kw)

    def reset(self, s: Series) -> None:
        if s.kind == "memcpy":
            self.copy_dst.fill(self.poison)
        elif not (self.collective == "bcast" and self.rank == 0):  # the root's data stay
            self.recv.fill(self.poison)

    def check(self, s: Series) -> bool:
        if s.kind == "memcpy":
            return bool(np.array_equal(self.copy_dst, self.copy_src))
        if self.collective == "reduce" and self.rank != 0:
            return True  # only the root receives
        if self.collective == "exscan" and self.rank == 0:
            return True  # undefined on rank 0
        return bool(np.array_equal(self.recv, self.expected))


def setting_block(setting: int, in_a: bool, i: int, n: int, c: int) -> int:
    """Bytes rank i of a group of n sends in an intergroup setting (as shancoll_bench).

    Group A is the larger (p ranks), B the smaller (q); c the largest block.
    1, 2, 5, 7: c everywhere; 3: B sends c/4; 4: A sends c/4; 6, 8: rank i
    sends c i / (n - 1). 1-4 are allgathers (equal blocks per group), 5-8
    allgathervs; 1, 5, 6 have p = q, the others p/q about 25/7.
    """
    if setting == 3 and not in_a:
        return c // 4
    if setting == 4 and in_a:
        return c // 4
    if setting in (6, 8):
        return c * i // (n - 1) if n > 1 else c
    return c


def make_intercomm(world, distribution: str):
    """World split into the setting's two groups, joined by an inter-communicator.

    Returns (intercomm, in_a, color); p = q for settings 1, 5, 6, else the
    first group has round(25 P / 32) ranks, as in shancoll_bench.
    """
    setting = int(distribution.removeprefix("setting"))
    size, rank = world.Get_size(), world.Get_rank()
    if size < 2:
        raise ValueError(f"ranks: an intergroup setting needs at least 2 ranks, got {size}")
    first = size // 2 if setting in (1, 5, 6) else (25 * size + 16) // 32
    first = min(max(1, first), size - 1)
    color = 0 if rank < first else 1
    local = world.Split(color, rank)
    inter = local.Create_intercomm(0, world, first if color == 0 else 0, tag=7)
    local.Free()
    n, remote = inter.Get_size(), inter.Get_remote_size()
    return inter, n > remote or (n == remote and color == 0), color


class InterPoint:
    """Buffers of one intergroup point: setting ``distribution``, largest block c bytes."""

    def __init__(self, inter, in_a: bool, color: int, distribution: str, c: int, dtype):
        self.setting = int(distribution.removeprefix("setting"))
        self.collective = "allgather" if self.setting <= 4 else "allgatherv"
        item, n, remote = dtype.itemsize, inter.Get_size(), inter.Get_remote_size()
        mine = setting_block(self.setting, in_a, inter.Get_rank(), n, c) // item
        self.counts = [setting_block(self.setting, not in_a, i, remote, c) // item
                       for i in range(remote)]  # fmt: skip
        self.displs = [int(x) for x in np.concatenate(([0], np.cumsum(self.counts)[:-1]))]
        # Block of (group g, rank i): (1000 g + i + 1) 2^32 + 0, 1, ...: exact, distinct.
        tag = float(2**32)
        self.send = np.arange(mine, dtype=dtype) + (1000 * color + inter.Get_rank() + 1) * tag
        blocks = [np.arange(k, dtype=dtype) + (1000 * (1 - color) + i + 1) * tag
                  for i, k in enumerate(self.counts)]  # fmt: skip
        self.expected = np.concatenate(blocks) if blocks else np.empty(0, dtype)
        self.recv = np.full(self.expected.size, np.nan, dtype)
        self.bytes = [b * item for b in self.counts]
        self.total_bytes = int(self.expected.size) * item
        self.copy_src, self.copy_dst = self.expected.copy(), np.zeros_like(self.expected)
        self.inter = inter

    def call_for(self, s: Series, rpn: int, timeout: float | None) -> Callable[[], Any]:
        import shancoll

        inter, send, recv = self.inter, self.send, self.recv
        if s.kind == "memcpy":
            src, dst, copyto = self.copy_src, self.copy_dst, np.copyto
            return lambda: copyto(dst, src)
        kw = dict(s.options, algorithm=s.algorithm, timeout=timeout)
        if self.collective == "allgather":
            if s.kind == "native":
                return lambda: inter.Allgather(send, recv)
            return lambda: shancoll.allgather(inter, send, recv, **kw)
        counts, displs = self.counts, self.displs
        if s.kind == "native":
            spec = [recv, (counts, displs)]
            return lambda: inter.Allgatherv(send, spec)
        vspec = [recv, counts, displs]
        return lambda: shancoll.allgatherv(inter, send, vspec, **kw)

    def reset(self, s: Series) -> None:
        (self.copy_dst if s.kind == "memcpy" else self.recv).fill(np.nan)

    def check(self, s: Series) -> bool:
        got = self.copy_dst if s.kind == "memcpy" else self.recv
        return bool(np.array_equal(got, self.expected))


class AlltoallPoint:
    """Buffers of one alltoall(v) point: a block of ``nbytes`` from every rank to every
    rank (alltoallv with explicit counts and displacements of the same layout).

    Rank r's block for rank j is ``(r + 1) 2^32 + j 2^20 + 0, 1, ...``: exact in
    float64 and distinct per pair, so a block delivered to the wrong rank or
    place is seen.
    """

    def __init__(self, comm, collective: str, nbytes: int, dtype: np.dtype):
        self.comm, self.collective = comm, collective
        p, rank = comm.Get_size(), comm.Get_rank()
        n = nbytes // dtype.itemsize
        self.bytes = [n * dtype.itemsize] * p
        self.total_bytes = p * n * dtype.itemsize
        base = np.arange(n, dtype=dtype)
        self.send = np.concatenate([base + (rank + 1) * 2.0**32 + j * 2.0**20 for j in range(p)])
        self.expected = np.concatenate(
            [base + (i + 1) * 2.0**32 + rank * 2.0**20 for i in range(p)]
        )
        self.recv = np.full(p * n, np.nan, dtype)
        self.counts = [n] * p
        self.displs = [n * j for j in range(p)]
        self.copy_src, self.copy_dst = self.send.copy(), np.zeros_like(self.send)

    def call_for(self, s: Series, rpn: int, timeout: float | None) -> Callable[[], Any]:
        import shancoll

        comm, send, recv = self.comm, self.send, self.recv
        if s.kind == "memcpy":
            src, dst, copyto = self.copy_src, self.copy_dst, np.copyto
            return lambda: copyto(dst, src)
        layout = (self.counts, self.displs)
        vsend, vrecv = [send, layout], [recv, layout]  # mpi4py's form
        if s.kind == "native":
            if self.collective == "alltoall":
                return lambda: comm.Alltoall(send, recv)
            return lambda: comm.Alltoallv(vsend, vrecv)
        kw = dict(s.options, algorithm=s.algorithm, ranks_per_node=rpn, timeout=timeout)
        if self.collective == "alltoall":
            return lambda: shancoll.alltoall(comm, send, recv, **kw)
        return lambda: shancoll.alltoallv(comm, vsend, vrecv, **kw)

    def reset(self, s: Series) -> None:
        (self.copy_dst if s.kind == "memcpy" else self.recv).fill(np.nan)

    def check(self, s: Series) -> bool:
        if s.kind == "memcpy":
            return bool(np.array_equal(self.copy_dst, self.copy_src))
        return bool(np.array_equal(self.recv, self.expected))


class PersistentPoint:
    """A persistent collective (``<coll>_init``): the buffers of its blocking
    collective's point, one request per series made once at the point (MPI
    fixes the buffers at _init), each call a start and its wait. Series: the
    collective's persistent engine by name (``shancoll.<coll>_init``, its
    options), and ``mpi`` and ``native``, both the MPI library's own persistent
    request (mpi4py's ``<Coll>_init``): what the PMPI library leaves a call to
    where a table's row says ``mpi``. Intel MPI's own persistent gather,
    scatter and allgather give wrong results (docs/performance.md): not timed."""

    def __init__(self, comm, collective: str, distribution: str, nbytes: int, dtype: np.dtype):
        self.base = collective.removesuffix("_init")
        self.inner = make_point(comm, self.base, distribution, nbytes, dtype)
        self.comm, self.collective = comm, collective
        self.bytes, self.total_bytes = self.inner.bytes, self.inner.total_bytes
        self.view = None
        self.requests: list[Any] = []

    def _library_request(self):
        from mpi4py import MPI

        comm, send, recv = self.comm, self.inner.send, self.inner.recv
        at_root = comm.Get_rank() == 0
        make = {
            "allreduce": lambda: comm.Allreduce_init(send, recv, MPI.SUM),
            "bcast": lambda: comm.Bcast_init(recv, 0),
            "reduce": lambda: comm.Reduce_init(send, recv, MPI.SUM, 0),
            "scan": lambda: comm.Scan_init(send, recv, MPI.SUM),
            "exscan": lambda: comm.Exscan_init(send, recv, MPI.SUM),
            "reduce_scatter_block": lambda: comm.Reduce_scatter_block_init(send, recv, MPI.SUM),
            "gather": lambda: comm.Gather_init(send, recv if at_root else None, 0),
            "scatter": lambda: comm.Scatter_init(send if at_root else None, recv, 0),
            "allgather": lambda: comm.Allgather_init(send, recv),
            "alltoall": lambda: comm.Alltoall_init(send, recv),
        }
        return make[self.base]()

    def _shancoll_request(self, s: Series, rpn: int, timeout: float | None):
        from mpi4py import MPI

        import shancoll

        p, comm = self.inner, self.comm
        kw = dict(s.options, algorithm=s.algorithm, ranks_per_node=rpn, timeout=timeout)
        make = getattr(shancoll, self.collective)
        if self.base in ("allreduce", "scan", "exscan", "reduce_scatter_block"):
            return make(comm, p.send, p.recv, MPI.SUM, **kw)
        if self.base == "bcast":
            return make(comm, p.recv, 0, **kw)
        if self.base == "reduce":
            return make(comm, p.send, p.recv, MPI.SUM, 0, **kw)
        if self.base in ("gather", "scatter"):
            return make(comm, p.send, p.recv, 0, **kw)
        return make(comm, p.send, p.recv, **kw)  # allgather, alltoall

    def call_for(self, s: Series, rpn: int, timeout: float | None) -> Callable[[], Any]:
        if s.kind == "memcpy":
            return self.inner.call_for(s, rpn, timeout)
        if s.kind == "native" or s.algorithm == "mpi":
            request = self._library_request()
            self.requests.append(request)
            return lambda: (request.Start(), request.Wait())
        try:
            request = self._shancoll_request(s, rpn, timeout)
        except ValueError as e:  # past the engine's bounds: every rank's refusal, its row's error

            def refused(e=e):
                raise e

            return refused
        self.requests.append(request)
        return lambda: (request.start(), request.wait(timeout=timeout))

    def reset(self, s: Series) -> None:
        self.inner.reset(s)

    def check(self, s: Series) -> bool:
        return self.inner.check(s)

    def close(self) -> None:
        """Frees the requests (every rank alike, after the point's last call)."""
        for request in self.requests:
            (request.Free if hasattr(request, "Free") else request.free)()
        self.requests.clear()


def intel_mpi_persistent_wrong(collective: str) -> bool:
    """Whether the running library is Intel MPI and `collective` one of the
    persistent forms it gets wrong (docs/performance.md)."""
    from mpi4py import MPI

    wrong = ("gather_init", "scatter_init", "allgather_init")
    return collective in wrong and "Intel(R) MPI" in MPI.Get_library_version()


def point_class(collective: str) -> type:
    """The buffers and calls of a collective's points: each collective names
    its class, so a collective missing from the lists is an error, never
    timed as another (scan and exscan were once timed as allgatherv)."""
    if collective == "intergroup":
        return InterPoint
    if collective in PERSISTENT_COLLECTIVES:
        return PersistentPoint
    if collective in ("alltoall", "alltoallv"):
        return AlltoallPoint
    if collective in MESSAGE_COLLECTIVES:
        return MessagePoint
    if collective in ("allgatherv", "allgather"):
        return Point
    raise ValueError(f"collective: no benchmark point for {collective!r}")


def make_point(comm, collective: str, distribution: str, nbytes: int, dtype, inter=None):
    cls = point_class(collective)
    if cls is InterPoint:
        return InterPoint(*inter, distribution, nbytes, dtype)
    if cls in (Point, PersistentPoint):
        return cls(comm, collective, distribution, nbytes, dtype)
    return cls(comm, collective, nbytes, dtype)


def _irrelevant(s: Series, collective: str, node_count: int) -> str:
    """Why a series is skipped on this job ('' if it is not)."""
    if s.kind == "shared" and collective in (
        *MESSAGE_COLLECTIVES,
        "intergroup",
        "alltoall",
        "alltoallv",
    ):
        return f"{collective} has no node-shared variant"
    if s.kind == "memcpy" and collective == "barrier":
        return "barrier moves no data"
    if (s.kind == "native" or s.algorithm == "mpi") and intel_mpi_persistent_wrong(collective):
        return "Intel MPI's own persistent form gives wrong results (docs/performance.md)"
    if s.needs_nodes and node_count < 2:
        return "transport option is irrelevant on a single node"
    return ""


def _active_series(
    series: Sequence[Series], collective: str, node_count: int, emit: Callable[[dict], None]
) -> list[Series]:
    """The series this job times; the others are reported as skipped."""
    active = []
    for s in series:
        reason = _irrelevant(s, collective, node_count)
        if reason:
            emit({"event": "skip", "series": s.label, "reason": reason})
        else:
            active.append(s)
    return active


def _error_text(e: Exception) -> str:
    return f"{type(e).__name__}: {e}".replace("\n", " ")


def _check_result(comm, point, s: Series, call: Callable[[], Any], failed: dict) -> bool:
    """One more, untimed call: its result must equal the expected one on every rank."""
    from mpi4py import MPI

    point.reset(s)
    try:
        call()
        good = point.check(s)
    except Exception as e:  # an error on every rank: record it, go on
        good = False
        failed[s.label] = _error_text(e)
    return comm.allreduce(good, op=MPI.LAND)


def _outcome(comm, point, s: Series, t, calls: dict, failed: dict, emit, size: int) -> dict:
    """The columns of a point that say how it went: timings and check, or the error.

    ``failed`` maps the series that raised to their error: they are not timed
    at the larger sizes, and their rows say why.
    """
    if t is None:
        error = "skipped after an earlier error: " + failed[s.label]
        return {"iterations": 0, "check": "", "status": "error", "error": error}
    if isinstance(t, Exception):
        failed[s.label] = _error_text(t)
        return {"iterations": 0, "check": "", "status": "error", "error": failed[s.label]}
    emit({"event": "start", "series": s.label, "bytes_per_rank": size})  # the check may hang
    ok = _check_result(comm, point, s, calls[s.label], failed)
    point.view = None
    return {
        "iterations": t.iterations,
        "time_median_s": t.median,
        "time_min_s": t.min,
        "time_max_s": t.max,
        "check": "ok" if ok else "fail",
        "status": "ok",
        "error": failed.get(s.label, ""),
    }


def run(
    comm,
    *,
    collective: str,
    distribution: str,
    sizes: Sequence[int],
    series: Sequence[Series],
    ranks_per_node: int = 0,
    warmup: int = 2,
    repeats: int = 5,
    iterations: int | None = None,
    target_seconds: float = 0.1,
    max_iterations: int = 1000,
    dtype: str = "float64",
    call_timeout: float | None = None,
    emit: Callable[[dict], None] = lambda rec: None,
) -> list[dict]:
    """Times every (size, series) point of one distribution; returns rank 0's rows."""
    import shancoll

    check_distribution(collective, distribution)
    dt = np.dtype(dtype)
    layout = shancoll.topology(comm, ranks_per_node)
    inter = make_intercomm(comm, distribution) if collective == "intergroup" else None
    emit({"event": "env", **environment(comm, ranks_per_node, layout)})
    active = _active_series(series, collective, layout["node_count"], emit)
    job = {
        "collective": collective,
        "distribution": distribution,
        "ranks": comm.Get_size(),
        "ranks_per_node": ranks_per_node,
        "nodes": layout["node_count"],
        "hosts": layout["hosts"],
        "dtype": dt.name,
        "kernel": KERNEL,
        "warmup": warmup,
        "repeats": repeats,
    }
    rows: list[dict] = []
    failed: dict[str, str] = {}
    for size in sizes:
        point = make_point(comm, collective, distribution, size, dt, inter)
        todo = [s for s in active if s.label not in failed]
        calls = {s.label: point.call_for(s, ranks_per_node, call_timeout) for s in todo}
        timings = time_calls(
            comm, calls, warmup=warmup, repeats=repeats, iterations=iterations,
            target_seconds=target_seconds, max_iterations=max_iterations,
            on_block=lambda label, size=size: emit({"event": "start", "series": label,
                                                    "bytes_per_rank": size}),
        )  # fmt: skip
        for s in active:
            t = timings.get(s.label)
            row = {
                **job,
                "series": s.label,
                "kind": s.kind,
                "algorithm": s.algorithm,
                "options": s.options_text,
                "bytes_per_rank": size,
                "total_bytes": point.total_bytes,
                "max_bytes": max(point.bytes),
                **_outcome(comm, point, s, t, calls, failed, emit, size),
            }
            rows.append(row)
            emit({"event": "row", **row})
        if isinstance(point, PersistentPoint):
            point.close()
        del point, calls
    if inter is not None:
        inter[0].Free()
    emit({"event": "done"})
    return rows if comm.Get_rank() == 0 else []


# ---------------------------------------------------------------------------
# command line


def format_table(rows: Sequence[dict]) -> str:
    """Median time per call and speedup over ``native`` (native/series), per size."""
    ok = [r for r in rows if r.get("status") == "ok"]
    labels = list(dict.fromkeys(r["series"] for r in rows))
    sizes = sorted({r["bytes_per_rank"] for r in rows})
    t = {(r["series"], r["bytes_per_rank"]): r["time_median_s"] for r in ok}
    head = f"{'bytes/rank':>10} {'native':>10} " + " ".join(f"{lb:>14}" for lb in labels)
    lines = [head]
    for size in sizes:
        nat = t.get(("native", size))
        cells = []
        for lb in labels:
            v = t.get((lb, size))
            cells.append(f"{'-':>14}" if v is None or nat is None else f"{nat / v:>13.2f}x")
        nat_txt = "-" if nat is None else f"{nat * 1e6:.1f}us"
        lines.append(f"{format_bytes(size):>10} {nat_txt:>10} " + " ".join(cells))
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m shancoll.bench.kernel",
        description="Time shancoll collectives against mpi4py's native ones (run under mpiexec).",
    )
    ap.add_argument("--collective", default="allgatherv", choices=COLLECTIVES)
    ap.add_argument("--distribution", default="regular", choices=ALL_DISTRIBUTIONS)
    ap.add_argument(
        "--native-job",
        default="",
        help="label the native series native:<name> (a job with a forced native algorithm)",
    )
    ap.add_argument(
        "--sizes",
        default="1KiB:1MiB:4",
        help="bytes per rank: list (1KiB,1MiB) or range start:stop:factor",
    )
    ap.add_argument(
        "--series",
        default="all",
        help="comma list of series labels; 'all' = every algorithm + shan_shared + "
        "native + memcpy (default)",
    )
    ap.add_argument(
        "--ranks-per-node",
        type=int,
        default=0,
        help="0: physical nodes (default); n > 0: virtual nodes of n ranks",
    )
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--iterations", default="auto", help="calls per repeat, or 'auto'")
    ap.add_argument(
        "--target-seconds",
        type=float,
        default=0.1,
        help="auto iterations: seconds of timed calls per point",
    )
    ap.add_argument("--max-iterations", type=int, default=1000)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument(
        "--call-timeout",
        type=float,
        default=None,
        help="shancoll timeout= per call (seconds; default SHANCOLL_TIMEOUT or 120)",
    )
    ap.add_argument("--jsonl", default=None, help="rank 0 appends JSON lines here")
    ap.add_argument("--quiet", action="store_true", help="no table on stdout")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    algs = algorithms_of(args.collective)
    labels = (
        algs + ["shan_shared", "native", "memcpy"]
        if args.series == "all"
        else split_series(args.series)
    )
    if args.native_job:
        labels = [f"native:{args.native_job}" if lb == "native" else lb for lb in labels]
    series = [parse_series(lb, algs) for lb in labels]
    iterations = None if args.iterations == "auto" else int(args.iterations)
    out = open(args.jsonl, "a", encoding="utf-8") if args.jsonl and comm.rank == 0 else None

    def emit(rec: dict) -> None:
        if out is not None:
            out.write(json.dumps(rec) + "\n")
            out.flush()

    try:
        rows = run(
            comm,
            collective=args.collective,
            distribution=args.distribution,
            sizes=parse_sizes(args.sizes),
            series=series,
            ranks_per_node=args.ranks_per_node,
            warmup=args.warmup,
            repeats=args.repeats,
            iterations=iterations,
            target_seconds=args.target_seconds,
            max_iterations=args.max_iterations,
            dtype=args.dtype,
            call_timeout=args.call_timeout,
            emit=emit,
        )
    finally:
        if out is not None:
            out.close()
    if comm.rank == 0 and not args.quiet:
        print(
            f"{args.collective}, {args.distribution}, {comm.size} ranks: median time of "
            f"native, speedup native/series"
        )
        print(format_table(rows))
        for r in rows:
            if r["status"] != "ok" or r.get("check") == "fail":
                print(
                    f"  {r['series']} {format_bytes(r['bytes_per_rank'])}: "
                    f"{r['status']} {r.get('check', '')} {r.get('error', '')}",
                    file=sys.stderr,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
