"""How ring writers store their chunks (src/cpp/shancoll/shm/ring_stores.h):
plainly or around the cache, chosen chunk by chunk from the writer's own
timings (``auto``), or fixed by ``SHANCOLL_RING_STORES``.

Whatever the way, the results of every collective that writes into a
shared-memory ring (the pair channels of gather, alltoall and
reduce_scatter_block, ``shan`` allgather's ring, ``release_gather``'s bcast
and reduce slots, ``pieces`` allreduce's inputs and results) equal mpi4py's,
for sources at odd offsets and sizes whose last chunk is short;
``last_stats().streamed_ring_bytes`` shows the way taken (none plain, on
every writer streamed). An invalid name is refused, naming the variable.

Run over 1-8 ranks by test_mpi_suites.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all
from mpi4py import MPI
from test_mpi_stream_copy import view

import shancoll

# Bytes per block: chunks of a quarter of the block, at least 16 KiB, so
# every chunk but a short last one is timed (8 KiB and up).
SIZES = [70001] if REDUCED else [70001, 300007]


@pytest.fixture
def ring_stores(request):
    os.environ["SHANCOLL_RING_STORES"] = request.param
    shancoll.reload_environment()
    yield request.param
    del os.environ["SHANCOLL_RING_STORES"]
    shancoll.reload_environment()


def one_node_of_several(comm) -> bool:
    """Rings only join ranks of one node (virtual nodes and hosts split them)."""
    return comm.size > 1 and shancoll.topology(comm)["node_count"] == 1


def run_ring_collectives(comm, n: int, offset: int) -> tuple[list[str], dict[str, int]]:
    """Each ring collective once with blocks of n bytes; (failures, streamed
    bytes per collective on this rank)."""
    p, r = comm.size, comm.rank
    failures, streamed = [], {}

    def done(name: str, ok: bool) -> None:
        streamed[name] = shancoll.last_stats(comm).streamed_ring_bytes
        if not ok:
            failures.append(f"{name} n={n} offset={offset}")

    mine = view(n, offset, np.uint8, 0)
    mine[:] = (np.arange(n) * 7 + r) % 251
    ref = np.empty(n * p, np.uint8)
    comm.Allgather(mine, ref)
    everyone = view(n * p, offset, np.uint8, 0)
    shancoll.allgather(comm, mine, everyone, algorithm="shan", single_copy=False)
    done("allgather", (everyone == ref).all())
    gathered = view(n * p, offset, np.uint8, 0) if r == 0 else None
    shancoll.gather(comm, mine, gathered, 0, algorithm="shan", single_copy=False)
    done("gather", r != 0 or (gathered == ref).all())
    send = view(n * p, offset, np.uint8, 0)
    send[:] = (np.arange(n * p) + 3 * r) % 253
    got, want = view(n * p, offset, np.uint8, 0), np.empty(n * p, np.uint8)
    shancoll.alltoall(comm, send, got, algorithm="shan", single_copy=False)
    comm.Alltoall(send, want)
    done("alltoall", (got == want).all())
    words = np.arange(n // 8 * p, dtype=np.int64) * (r + 1)
    block, block_ref = np.empty(n // 8, np.int64), np.empty(n // 8, np.int64)
    shancoll.reduce_scatter_block(comm, words, block, algorithm="shan", single_copy=False)
    comm.Reduce_scatter_block(words, block_ref)
    done("reduce_scatter_block", (block == block_ref).all())
    sums, sums_ref = np.empty_like(words), np.empty_like(words)
    shancoll.allreduce(comm, words, sums, algorithm="pieces")
    comm.Allreduce(words, sums_ref)
    done("allreduce", (sums == sums_ref).all())
    shancoll.allreduce(comm, MPI.IN_PLACE, words, algorithm="pieces")
    done("allreduce in place", (words == sums_ref).all())
    total = np.empty_like(words) if r == 0 else None
    shancoll.reduce(comm, sums_ref, total, root=0, algorithm="release_gather", single_copy=False)
    done("reduce", r != 0 or (total == sums_ref * p).all())
    buf = view(n, offset, np.uint8, 0 if r else 1)
    if r == 0:
        buf[:] = (np.arange(n) * 11 + 5) % 247
    shancoll.bcast(comm, buf, 0, algorithm="release_gather", single_copy=False)
    done("bcast", (buf == (np.arange(n) * 11 + 5) % 247).all())
    return failures, streamed


# The collectives in which this rank writes chunks into a ring.
def writes(comm, name: str) -> bool:
    if name == "reduce":  # a leaf copies into its slot (an inner rank combines into it);
        return comm.rank == comm.size - 1  # rooted at 0, children have higher ranks
    return comm.rank != 0 if name == "gather" else comm.rank == 0 if name == "bcast" else True


@pytest.mark.parametrize("ring_stores", ["plain", "streamed", "auto"], indirect=True)
def test_every_way_is_right(comm, ring_stores):
    assert shancoll.rules_info()["ring_stores"] == ring_stores
    failures, ways = [], []
    for n in SIZES:
        for offset in [0, 17]:
            failed, streamed = run_ring_collectives(comm, n, offset)
            failures += failed
            if not one_node_of_several(comm):
                continue
            for name, bytes_ in streamed.items():
                if ring_stores == "plain" and bytes_ != 0:
                    ways.append(f"{name}: {bytes_} bytes streamed, plain")
                if ring_stores == "streamed" and writes(comm, name) and bytes_ == 0:
                    ways.append(f"{name}: nothing streamed, streamed")
    assert_all(comm, not failures, f"rank {comm.rank}: {failures}")
    assert_all(comm, not ways, f"rank {comm.rank}: {ways}")


def test_an_unknown_way_is_refused(comm):
    os.environ["SHANCOLL_RING_STORES"] = "fast"
    try:
        with pytest.raises(shancoll.ArgumentError, match="SHANCOLL_RING_STORES"):
            shancoll.reload_environment()
    finally:
        del os.environ["SHANCOLL_RING_STORES"]
        shancoll.reload_environment()
    assert shancoll.rules_info()["ring_stores"] == "auto"
