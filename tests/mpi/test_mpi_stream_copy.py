"""Local copies by streaming stores (cost.h, stream_copy): from half the
largest cache by default, from SHANCOLL_STREAM_COPY bytes when set.

With the threshold at 64 bytes nearly every copy of every algorithm
streams: the results must still equal mpi4py's own collectives, for
buffers at every alignment and sizes that leave every kind of head and
tail (the streamed body is 16-byte aligned, 64 bytes a step).

Run over 1-8 ranks by test_mpi_suites.py.
"""

from __future__ import annotations

import os

import numpy as np
from _mpi_util import REDUCED, assert_all
from mpi4py import MPI

import shancoll


def half_the_largest_cache(caches: str) -> int | None:
    """The caches as rules_info names them ("L1d 32K L2 1M L3 32M") -> 16 MiB;
    None where sysfs said nothing."""
    if caches == "unknown":
        return None
    size = caches.split()[-1]
    return int(size[:-1]) << {"K": 10, "M": 20, "G": 30}[size[-1]] >> 1


def test_the_default_is_half_the_largest_cache(comm):
    info = shancoll.rules_info()
    assert info["stream_copy_from"] == half_the_largest_cache(info["caches"]), info


def view(n: int, offset: int, dtype, fill: float) -> np.ndarray:
    """n elements of dtype, `offset` bytes past a 64-byte boundary."""
    item = np.dtype(dtype).itemsize
    raw = np.empty(n * item + offset + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start : start + n * item].view(dtype)
    out[:] = fill
    return out


def test_streamed_copies_are_right(comm):
    os.environ["SHANCOLL_STREAM_COPY"] = "64"
    shancoll.reload_environment()
    failures: list[str] = []
    try:
        assert shancoll.rules_info()["stream_copy_from"] == 64
        p, r = comm.size, comm.rank
        sizes = [1, 65, 4097] if REDUCED else [1, 7, 64, 65, 200, 4097, 70001]
        for n in sizes:
            for offset in [0, 1, 8, 17]:
                mine = view(n, offset, np.uint8, 0)
                mine[:] = (np.arange(n) * 7 + r) % 251
                everyone = view(n * p, offset, np.uint8, 0)
                shancoll.allgather(comm, mine, everyone)
                ref = np.empty(n * p, np.uint8)
                comm.Allgather(mine, ref)
                if not (everyone == ref).all():
                    failures.append(f"allgather n={n} offset={offset}")
                gathered = view(n * p, offset, np.uint8, 0) if r == 0 else None
                shancoll.gather(comm, mine, gathered, 0)
                if r == 0 and not (gathered == ref).all():
                    failures.append(f"gather n={n} offset={offset}")
                whole = view(n * p, offset, np.uint8, 0)
                whole[:] = (np.arange(n * p) * 5 + 1) % 249
                part, part_ref = view(n, offset, np.uint8, 0), np.empty(n, np.uint8)
                shancoll.scatter(comm, whole if r == 0 else None, part, 0)
                comm.Scatter(whole, part_ref, 0)
                if not (part == part_ref).all():
                    failures.append(f"scatter n={n} offset={offset}")
                send = view(n * p, offset, np.uint8, 0)
                send[:] = (np.arange(n * p) + 3 * r) % 253
                got, want = view(n * p, offset, np.uint8, 0), np.empty(n * p, np.uint8)
                shancoll.alltoall(comm, send, got)
                comm.Alltoall(send, want)
                if not (got == want).all():
                    failures.append(f"alltoall n={n} offset={offset}")
                x = view(n, offset, np.float64, r + 1.0)
                total = view(n, offset, np.float64, 0)
                shancoll.allreduce(comm, x, total, MPI.SUM)
                if not (total == p * (p + 1) / 2).all():
                    failures.append(f"allreduce n={n} offset={offset}")
                b = view(n, offset, np.float64, 5.0 if r == 0 else 0.0)
                shancoll.bcast(comm, b, 0)
                if not (b == 5.0).all():
                    failures.append(f"bcast n={n} offset={offset}")
    finally:
        del os.environ["SHANCOLL_STREAM_COPY"]
        shancoll.reload_environment()
    assert_all(comm, not failures, f"{failures[:5]}")
