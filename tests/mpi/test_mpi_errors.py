"""Bad input raises ValueError on every rank (same bad input everywhere), never hangs,
and the communicator stays usable afterwards."""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import assert_all, fill, raises_all, reference_allgatherv, run_all, same
from mpi4py import MPI

import shancoll


def valid_call_works(comm, algorithm="auto"):
    p, r = comm.size, comm.rank
    counts = [3 + i for i in range(p)]
    displs = [sum(counts[:i]) for i in range(p)]
    send = fill(np.float64, counts[r], r)
    ref = reference_allgatherv(comm, send, counts, displs, np.float64, sum(counts))
    out = np.zeros(sum(counts))
    run_all(comm, shancoll.allgatherv, comm, send, [out, counts], algorithm=algorithm)
    assert_all(comm, same(out, ref), "a valid call after an error")


def bad_cases(comm):
    p = comm.size
    counts = [4] * p
    good_send = np.ones(4)
    good_recv = np.zeros(4 * p)
    ro = np.zeros(4 * p)
    ro.flags.writeable = False
    strided = np.zeros(8 * p)[::2]
    return {
        "counts too short": (good_send, [good_recv, counts[:-1] if p > 1 else []], {}, "counts"),
        "counts too long": (good_send, [good_recv, counts + [4]], {}, "counts"),
        "negative count": (good_send, [good_recv, [-1] + counts[1:]], {}, "counts"),
        "negative displ": (
            good_send,
            [good_recv, counts, [-4] + [4 * i for i in range(1, p)]],
            {},
            "displs",
        ),
        "recvbuf too small": (good_send, [np.zeros(4 * p - 1), counts], {}, "recvbuf"),
        "read-only recvbuf": (good_send, [ro, counts], {}, "recvbuf"),
        "non-contiguous recvbuf": (good_send, [strided, counts], {}, "recvbuf"),
        "non-contiguous sendbuf": (np.ones(8)[::2], [good_recv, counts], {}, "sendbuf"),
        "dtype mismatch": (np.ones(4, "f4"), [good_recv, counts], {}, "sendbuf"),
        "datatype mismatch recv": (good_send, [good_recv, counts, MPI.INT], {}, "recvbuf"),
        "datatype mismatch send": ([good_send, MPI.FLOAT], [good_recv, counts], {}, "sendbuf"),
        "send count mismatch": (np.ones(5), [good_recv, counts], {}, "sendbuf"),
        "bad spec length": (good_send, [good_recv, counts, None, MPI.DOUBLE, 1], {}, "recvbuf"),
        "not a buffer": (good_send, [object(), counts], {}, "recvbuf"),
        "object dtype": (np.array([None] * 4), [np.array([None] * 4 * p), counts], {}, "buf"),
        "unknown algorithm": (good_send, [good_recv, counts], {"algorithm": "nope"}, "algorithm"),
        "unknown transport": (
            good_send,
            [good_recv, counts],
            {"transport": "carrier-pigeon"},
            "transport",
        ),
        "negative block_size": (good_send, [good_recv, counts], {"block_size": -1}, "block_size"),
        "negative timeout": (good_send, [good_recv, counts], {"timeout": -1.0}, "timeout"),
        "negative ranks_per_node": (
            good_send,
            [good_recv, counts],
            {"ranks_per_node": -2},
            "ranks_per_node",
        ),
        "algorithm not a string": (good_send, [good_recv, counts], {"algorithm": 3}, "algorithm"),
    }


CASES = list(bad_cases(MPI.COMM_SELF))


@pytest.mark.parametrize("case", CASES)
def test_bad_input_raises_everywhere_then_recovers(comm, case):
    send, recv, options, name = bad_cases(comm)[case]
    raises_all(comm, ValueError, shancoll.allgatherv, comm, send, recv, match=name, **options)
    valid_call_works(comm)


def test_bad_allgather_input(comm):
    p = comm.size
    # recvbuf size not a multiple of P (P > 1), or a send count that does not match
    if p > 1:
        raises_all(
            comm,
            ValueError,
            shancoll.allgather,
            comm,
            np.ones(2),
            np.zeros(2 * p + 1),
            match="recvbuf",
        )
    raises_all(
        comm, ValueError, shancoll.allgather, comm, np.ones(3), np.zeros(2 * p), match="sendbuf"
    )
    raises_all(
        comm,
        ValueError,
        shancoll.allgather,
        comm,
        np.ones(2, "i4"),
        np.zeros(2 * p),
        match="sendbuf",
    )
    valid_call_works(comm)


def test_bad_shared_input(comm):
    p = comm.size
    raises_all(
        comm,
        ValueError,
        shancoll.allgatherv_shared,
        comm,
        np.ones(2),
        [2] * (p + 1),
        match="counts",
    )
    raises_all(
        comm,
        ValueError,
        shancoll.allgatherv_shared,
        comm,
        np.ones(2),
        [2] * p,
        dtype=np.int32,
        match="dtype",
    )
    raises_all(
        comm, ValueError, shancoll.allgatherv_shared, comm, np.ones(3), [2] * p, match="sendbuf"
    )
    valid_call_works(comm, "shan")


def test_freed_communicator(comm):
    dup = comm.Dup()
    run_all(comm, shancoll.allgather, dup, np.ones(1), np.zeros(comm.size))  # has state
    dup.Free()
    raises_all(
        comm, ValueError, shancoll.allgather, dup, np.ones(1), np.zeros(comm.size), match="comm"
    )
    raises_all(
        comm,
        ValueError,
        shancoll.allgatherv,
        MPI.COMM_NULL,
        np.ones(1),
        np.zeros(comm.size),
        match="comm",
    )
    raises_all(
        comm,
        ValueError,
        shancoll.allgatherv_shared,
        MPI.COMM_NULL,
        np.ones(1),
        [1] * comm.size,
        match="comm",
    )
    raises_all(
        comm,
        ValueError,
        shancoll.allgather,
        "not a comm",
        np.ones(1),
        np.zeros(comm.size),
        match="comm",
    )
    valid_call_works(comm)


@pytest.mark.skipif(MPI.COMM_WORLD.size < 2, reason="needs 2 ranks for an inter-communicator")
def test_intercommunicator_refused_by_shared_results(comm):
    """allgather(v) take inter-communicators (test_mpi_intergroup.py); the node-shared
    results do not: there is no node segment shared by the two groups."""
    local = comm.Split(comm.rank % 2, comm.rank)
    inter = local.Create_intercomm(0, comm, 1 - comm.rank % 2, tag=9)
    try:
        raises_all(comm, ValueError, shancoll.allgather_shared, inter, np.ones(1), match="inter")
        out = np.zeros(inter.remote_size)
        run_all(comm, shancoll.allgather, inter, np.full(1, float(comm.rank)), out)
        ref = np.zeros(inter.remote_size)
        inter.Allgather(np.full(1, float(comm.rank)), ref)
        assert_all(comm, same(out, ref), "allgather on the inter-communicator")
    finally:
        inter.Free()
        local.Free()
    valid_call_works(comm)


def test_timeout_is_an_error_not_a_hang(comm):
    """Only rank 0 enters: it must raise TimeoutError quickly, the others then catch up."""
    if comm.size < 2:
        pytest.skip("needs 2 ranks")
    c = comm.Dup()
    try:
        run_all(
            comm,
            shancoll.allgather,
            c,
            np.ones(1),
            np.zeros(c.size),
            algorithm="shan",
            ranks_per_node=1,
        )  # warm: topology and segments exist
        err = None
        if comm.rank == 0:
            try:
                shancoll.allgather(
                    c, np.ones(1), np.zeros(c.size), algorithm="shan", ranks_per_node=1, timeout=0.5
                )
            except TimeoutError as e:
                err = e
        ok = comm.rank != 0 or isinstance(err, TimeoutError)
        assert_all(comm, ok, f"rank 0 alone: expected TimeoutError, got {err!r}")
    finally:
        # the communicator may be out of step now: free it, never reuse it
        c.Free()
    valid_call_works(comm)


@pytest.mark.parametrize("algorithm", ["ring", "bruck", "recursive_doubling"])
def test_point_to_point_allgatherv_timeout_is_an_error(comm, algorithm):
    """Only rank 0 enters a point-to-point allgatherv: it raises TimeoutError
    naming the wait and the peer instead of hanging in a blocking
    MPI_Sendrecv; the others then catch up. (Nodes of one rank, as above: a
    rank whose call failed keeps its node segment, so a node-mate freeing
    the communicator would wait for it in MPI_Win_free.)"""
    if comm.size < 2:
        pytest.skip("needs 2 ranks")
    c = comm.Dup()
    opts = dict(algorithm=algorithm, ranks_per_node=1)
    try:
        run_all(comm, shancoll.allgather, c, np.ones(1), np.zeros(c.size), **opts)
        err = None
        if comm.rank == 0:
            try:
                shancoll.allgather(c, np.ones(1), np.zeros(c.size), timeout=0.5, **opts)
            except TimeoutError as e:
                err = e
        ok = comm.rank != 0 or (isinstance(err, TimeoutError) and "rank" in str(err))
        assert_all(comm, ok, f"rank 0 alone: expected TimeoutError, got {err!r}")
    finally:
        c.Free()  # out of step now: never reused
    valid_call_works(comm)
