"""shan on one node: gather(v), scatter(v), alltoall(v) and reduce_scatter go
through pair channels (src/cpp/shancoll/shm/pair_channels.h), whose chunks
are numbered per pair of ranks across calls and across these collectives:
a sender may return while its receiver still copies. Checked against
mpi4py's own collectives, called back to back with changing sizes and roots
(blocks of several chunks, more than a pair's ring holds, and empty ones;
rings of several sizes), and a block of a size its receiver does not
expect: refused on the receiver, nothing written, the next call right.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, run_all
from mpi4py import MPI
from test_mpi_alltoall import Vector, check_alltoallv
from test_mpi_gather import check_gatherv, check_scatterv, uneven_counts
from test_mpi_reduce_scatter import vector_case

import shancoll

# Elements (float64) per block: empty, one line, several chunks (a chunk is at
# most 64 KiB by default), more than a pair's default ring holds.
SIZES = [0, 5, 3000, 9000] if REDUCED else [0, 5, 3000, 9000, 40000, 100000]


@pytest.fixture(autouse=True)
def _one_host(comm):
    """Pair channels live in one host's shared memory: on ranks spread over
    hosts (the suites' hosts2 runs) these calls take the other paths, which
    the collectives' own test files check there."""
    if shancoll.topology(comm)["hosts"] > 1:
        pytest.skip("pair channels: ranks on one host only")


def one_node(comm) -> dict:
    return {"ranks_per_node": comm.size}


def counts_matrix(comm, m: int, i: int) -> np.ndarray:
    rng = np.random.default_rng(i + 10 * comm.size)
    c = rng.integers(0, m + 1, size=(comm.size, comm.size))
    c[i % comm.size, :] = 0
    return c


@pytest.mark.parametrize("ring_window", [None, 65536, 2 << 20])
def test_every_collective_back_to_back(comm, ring_window):
    """The four collectives in turn on one communicator, nothing between the
    calls: each pair's chunk numbers carry from one call to the next. Each
    pair's ring (shm/chunk_ring.h) at its default, its smallest (64 KiB,
    wrapping within a block) and 2 MiB (more chunks in a lap than a pair
    has ready lines); the ring changes size between the parametrized runs."""
    if comm.size < 2:
        pytest.skip("a node of one rank takes no channel")
    opts = one_node(comm) | ({"ring_window": ring_window} if ring_window else {})
    for i, m in enumerate(SIZES + SIZES[::-1]):
        root = (i * 3 + 1) % comm.size
        counts = uneven_counts(comm.size, m, i)
        what = f"call {i} m={m} root={root}"
        check_gatherv(comm, "shan", counts, root, np.float64, what, **opts)
        check_alltoallv(comm, "shan", Vector(comm, counts_matrix(comm, m, i), np.int32), what,
                        **opts)  # fmt: skip
        check_scatterv(comm, "shan", counts, root, np.uint8, what, **opts)
        check_gatherv(comm, "shan", [m] * comm.size, root, np.int16, what, regular=True, **opts)
        failures = []
        vector_case(comm, failures, "shan", MPI.SUM, np.float64, counts, **opts)
        vector_case(comm, failures, "shan", MPI.PROD, np.int32, counts, in_place=True, **opts)
        assert_all(comm, not failures, f"{what}: {failures}")


def test_alltoall_rounds_follow_the_chunks(comm):
    """One round per chunk of the largest block, plus the last read: blocks of
    up to 16 KiB are one chunk, larger ones a quarter of the block each (at
    least 16 KiB, at most 64 KiB)."""
    if comm.size < 2:
        pytest.skip("a node of one rank takes no channel")
    for block, chunks in [(8, 1), (16 << 10, 1), (64 << 10, 4), (1 << 20, 16)]:
        send = np.ones(block * comm.size, np.uint8)
        run_all(comm, shancoll.alltoall, comm, send, np.zeros_like(send), "shan", **one_node(comm))
        rounds = shancoll.last_stats(comm).rounds
        assert_all(comm, rounds == chunks + 1, f"{block} B: {rounds} rounds, not {chunks + 1}")


# (elements expected, elements more sent): several chunks; a block in the
# spill lines after its ready line, and one the receiver expected there but
# that comes through the ring (pair_channels.cc).
MISMATCHES = [(20000, 7), (20, 7), (100, 20), (20, 120)]


@pytest.mark.parametrize(("m", "more"), MISMATCHES)
def test_alltoallv_count_mismatch_refused_at_receiver(comm, m, more):
    """A rank sends its neighbour more than the neighbour's recvcounts say:
    the neighbour refuses (ValueError naming recvcounts and the sender),
    its block is not written, every other rank returns, the next call works."""
    if comm.size < 2:
        pytest.skip("needs a second rank")
    p, r = comm.size, comm.rank
    liar, victim = 0, 1
    scounts = [m + (more if r == liar and q == victim else 0) for q in range(p)]
    send = np.full(sum(scounts), r, np.float64)
    out = np.full(m * p, -1.0)
    error = None
    try:
        shancoll.alltoallv(comm, [send, scounts], [out, [m] * p], "shan", **one_node(comm))
    except ValueError as e:
        error = str(e)
    if r == victim:
        ok = error is not None and "recvcounts" in error and f"rank {liar}" in error
        ok = ok and (out[liar * m : (liar + 1) * m] == -1).all()
    else:
        ok = error is None
    assert_all(comm, ok, f"the receiver refuses the block (got {error!r})")
    check_alltoallv(comm, "shan", Vector(comm, counts_matrix(comm, 9, 1), np.float64),
                    "after the refusal", **one_node(comm))  # fmt: skip


def test_reduce_scatter_count_mismatch_refused_at_receiver(comm):
    """One rank's recvcounts differ: it sends blocks of other sizes, and every
    rank whose block differs refuses; the next call works."""
    if comm.size < 2:
        pytest.skip("needs a second rank")
    p, r = comm.size, comm.rank
    counts = [3000] * p
    if r == p - 1:
        counts[0] += 16
    send = np.ones(sum(counts))
    out = np.full(counts[r], -1.0)
    error = None
    try:
        shancoll.reduce_scatter(comm, send, out, counts, MPI.SUM, "shan", **one_node(comm))
    except ValueError as e:
        error = str(e)
    refused = comm.allgather(error is not None)
    ok = refused[0] and (error is None or (out == -1).all())
    assert_all(comm, ok, f"rank 0 refuses the mismatched block (got {error!r}, {refused})")
    failures = []
    vector_case(comm, failures, "shan", MPI.SUM, np.float64, [700] * p, **one_node(comm))
    assert_all(comm, not failures, f"after the refusal: {failures}")


def test_single_copy_takes_the_segment_path(comm):
    """single_copy=True keeps the segment path on one node (its large blocks by
    cross-memory attach where that works), for the machines where it wins:
    right against mpi4py, and an alltoall there takes no rounds of chunks."""
    if comm.size < 2:
        pytest.skip("a node of one rank takes no channel")
    opts = {**one_node(comm), "single_copy": True}
    for i, m in enumerate([5, 9000, 40000]):
        root = (i + 1) % comm.size
        counts = uneven_counts(comm.size, m, i)
        what = f"single_copy m={m} root={root}"
        check_gatherv(comm, "shan", counts, root, np.float64, what, **opts)
        check_scatterv(comm, "shan", counts, root, np.uint8, what, **opts)
        check_alltoallv(comm, "shan", Vector(comm, counts_matrix(comm, m, i), np.int32), what,
                        **opts)  # fmt: skip
    send = np.ones((64 << 10) * comm.size, np.uint8)
    run_all(comm, shancoll.alltoall, comm, send, np.zeros_like(send), "shan", **opts)
    rounds = shancoll.last_stats(comm).rounds
    assert_all(comm, rounds == 0, f"single_copy alltoall: {rounds} rounds of chunks")


def test_many_small_blocks_wrap_the_ready_lines(comm):
    """A pair has 16 ready lines: 40 small alltoalls in a row (one chunk per
    pair each) with a 2 MiB ring, then 64 KiB, then the default; every
    result matches mpi4py's."""
    if comm.size < 2:
        pytest.skip("a node of one rank takes no channel")
    for ring_window in [2 << 20, 65536, None]:
        opts = one_node(comm) | ({"ring_window": ring_window} if ring_window else {})
        for i in range(40):
            m = 1 + (i * 37) % 700
            what = f"ring_window={ring_window} call {i} m={m}"
            check_alltoallv(comm, "shan", Vector(comm, counts_matrix(comm, m, i), np.int32),
                            what, **opts)  # fmt: skip
