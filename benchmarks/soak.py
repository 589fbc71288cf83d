"""Soak: many mixed shancoll collectives, every result checked, resources tracked.

    mpiexec -n 4 python benchmarks/soak.py [--calls 20000] [--seed 1]

Every collective (allgather, allgatherv, allreduce, iallreduce, bcast,
reduce), sizes from 0 to 1 MiB, every algorithm and ``auto``, on the world
communicator and on communicators created and freed during the run; every
result compared with mpi4py's own collective. Each rank records its RSS, open
file descriptors and its own /dev/shm entries at the start and the end; rank 0
prints them, and the run fails (exit 1) on a wrong result or on growth
beyond the allowance (a leak). tests/mpi/test_mpi_soak.py runs a short one.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

import shancoll

MIB = 1 << 20


@dataclass
class Resources:
    rss_kib: int
    fds: int
    shm: int

    @staticmethod
    def now() -> Resources:
        with open("/proc/self/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return Resources(rss, len(os.listdir("/proc/self/fd")), own_shm_entries())


def own_shm_entries() -> int:
    """/dev/shm entries of this process's node segments (shm/segment.cc names
    them /shancoll-<leader pid>-<n>): other jobs' entries on the machine come
    and go on their own and must not count."""
    if not os.path.isdir("/dev/shm"):
        return 0
    prefix = f"shancoll-{os.getpid()}-"
    return sum(name.startswith(prefix) for name in os.listdir("/dev/shm"))


def size_of(rng: np.random.Generator) -> int:
    """Bytes of one call: mostly small, sometimes up to 1 MiB, sometimes 0."""
    pick = rng.random()
    if pick < 0.05:
        return 0
    if pick < 0.8:
        return int(rng.integers(1, 4096))
    return int(rng.integers(4096, MIB + 1))


def algorithm(rng: np.random.Generator, collective: str) -> str:
    names = ["auto"] + shancoll.algorithms(collective)
    return names[int(rng.integers(len(names)))]


def one_call(comm: MPI.Comm, rng: np.random.Generator, i: int) -> bool:
    """One random collective (the same on every rank: rng is seeded alike); True if right."""
    n = size_of(rng) // 8
    x = np.arange(n, dtype=np.float64) + comm.rank * 3 + i
    kind = int(rng.integers(6))
    if kind == 0:
        got, want = np.empty(n), np.empty(n)
        shancoll.allreduce(comm, x, got, algorithm=algorithm(rng, "allreduce"))
        comm.Allreduce(x, want)
        return np.allclose(got, want)
    if kind == 1:
        got, want = np.empty(n), np.empty(n)
        shancoll.iallreduce(comm, x, got, algorithm=algorithm(rng, "iallreduce")).wait()
        comm.Allreduce(x, want)
        return np.allclose(got, want)
    if kind == 2:
        counts = [max(0, n - r) for r in range(comm.size)]
        mine = np.full(counts[comm.rank], float(comm.rank + i))
        got, want = np.empty(sum(counts)), np.empty(sum(counts))
        shancoll.allgatherv(comm, mine, [got, counts], algorithm=algorithm(rng, "allgatherv"))
        comm.Allgatherv(mine, [want, counts])
        return np.array_equal(got, want)
    if kind == 3:
        got, want = np.empty(n * comm.size), np.empty(n * comm.size)
        shancoll.allgather(comm, x, got, algorithm=algorithm(rng, "allgather"))
        comm.Allgather(x, want)
        return np.array_equal(got, want)
    if kind == 4:
        root = int(rng.integers(comm.size))
        got = x.copy() if comm.rank == root else np.empty(n)
        want = got.copy()
        shancoll.bcast(comm, got, root, algorithm(rng, "bcast"))
        comm.Bcast(want, root)
        return np.array_equal(got, want)
    root = int(rng.integers(comm.size))
    got, want = np.zeros(n), np.zeros(n)
    shancoll.reduce(comm, x, got, MPI.SUM, root, algorithm(rng, "reduce"))
    comm.Reduce(x, want, MPI.SUM, root)
    return comm.rank != root or np.allclose(got, want)


def soak(comm: MPI.Comm, calls: int, seed: int) -> tuple[int, Resources, Resources]:
    """Runs `calls` collectives (a new communicator every 200, freed after its
    batch); returns (wrong results on this rank, resources before, after)."""
    rng = np.random.default_rng(seed)
    wrong = 0
    one_call(comm, rng, -1)  # the world communicator's set-up is not a leak
    before = Resources.now()
    for batch in range(0, calls, 200):
        sub = comm.Split(batch % 2 if comm.size > 2 else 0, comm.rank)
        for i in range(batch, min(calls, batch + 200)):
            wrong += not one_call(sub if i % 3 == 0 else comm, rng, i)
        sub.Free()
    comm.Barrier()
    return wrong, before, Resources.now()


def growth(before: Resources, after: Resources, calls: int) -> list[str]:
    """What grew beyond the allowance: RSS by more than 64 MiB (allocators keep
    memory they freed), any file descriptor or /dev/shm entry."""
    out = []
    if after.rss_kib - before.rss_kib > 64 * 1024:
        out.append(f"RSS grew by {(after.rss_kib - before.rss_kib) // 1024} MiB in {calls} calls")
    if after.fds > before.fds:
        out.append(f"open file descriptors {before.fds} -> {after.fds}")
    if after.shm > before.shm:
        out.append(f"/dev/shm entries {before.shm} -> {after.shm}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    wrong, before, after = soak(comm, args.calls, args.seed)
    reports = comm.gather((wrong, before, after, growth(before, after, args.calls)))
    if comm.rank != 0:
        return 0
    failed = False
    for rank, (w, b, a, grew) in enumerate(reports):
        print(f"rank {rank}: {w} wrong; RSS {b.rss_kib // 1024}->{a.rss_kib // 1024} MiB, "
              f"fds {b.fds}->{a.fds}, /dev/shm {b.shm}->{a.shm} {'; '.join(grew)}")  # fmt: skip
        failed |= bool(w or grew)
    print("soak", "FAILED" if failed else "ok", f"({args.calls} calls, {comm.size} ranks)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
