"""Checked mode (check=True, SHANCOLL_CHECK=1): ranks whose calls disagree all
raise ArgumentError naming the field, before the collective runs; calls that
agree run as without it. Without checked mode these calls are undefined (MPI)
and may return wrong data quietly, so each case here runs checked only."""

from __future__ import annotations

import os

import numpy as np
import pytest
from _mpi_util import assert_all, one_rank_bad_calls, raises_all, run_all
from mpi4py import MPI

import shancoll


@pytest.fixture
def checked_environment():
    """SHANCOLL_CHECK=1 for the test (every collective, every front end)."""
    os.environ["SHANCOLL_CHECK"] = "1"
    shancoll.reload_environment()
    yield
    del os.environ["SHANCOLL_CHECK"]
    shancoll.reload_environment()


def one_rank_differs(comm, usual, other):
    """`other` on the last rank, `usual` elsewhere."""
    return other if comm.rank == comm.size - 1 else usual


@pytest.fixture(autouse=True)
def two_ranks_at_least(comm):
    if comm.size < 2:
        pytest.skip("a disagreement needs two ranks")


def test_allreduce_count(comm):
    n = one_rank_differs(comm, 8, 4)
    raises_all(comm, ValueError, shancoll.allreduce, comm, np.ones(n), np.zeros(n), check=True,
               match="disagree on the count")  # fmt: skip


def test_allreduce_op(comm):
    op = one_rank_differs(comm, MPI.SUM, MPI.MAX)
    raises_all(comm, ValueError, shancoll.allreduce, comm, np.ones(4), np.zeros(4), op,
               check=True, match="disagree on the op")  # fmt: skip


def test_allreduce_algorithm_names_the_ranks(comm):
    name = one_rank_differs(comm, "auto", "binomial")
    raises_all(comm, ValueError, shancoll.allreduce, comm, np.ones(4), np.zeros(4), MPI.SUM, name,
               check=True, match=f"ranks [{comm.size - 1}] differ from rank 0")  # fmt: skip


def test_reduce_element_type(comm):
    dtype = one_rank_differs(comm, np.float64, np.int64)
    x = np.ones(4, dtype=dtype)
    raises_all(comm, ValueError, shancoll.reduce, comm, x, np.zeros_like(x), check=True,
               match="disagree on the element type")  # fmt: skip


def test_bcast_root(comm):
    root = one_rank_differs(comm, 0, 1)
    raises_all(comm, ValueError, shancoll.bcast, comm, np.ones(4), root, check=True,
               match="disagree on the root")  # fmt: skip


@pytest.mark.usefixtures("checked_environment")
def test_allgatherv_counts_from_the_environment(comm):
    counts = [one_rank_differs(comm, 2, 3)] * comm.size
    mine = np.ones(counts[comm.rank])
    out = np.zeros(sum(counts))
    raises_all(comm, ValueError, shancoll.allgatherv, comm, mine, [out, counts],
               match="disagree on the recvcounts")  # fmt: skip


def test_agreeing_calls_run(comm):
    x, out = np.arange(5.0), np.zeros(5)
    run_all(comm, shancoll.allreduce, comm, x, out, check=True)
    assert_all(comm, np.array_equal(out, comm.size * x), "checked allreduce result")
    assert_all(comm, shancoll.last_stats(comm).algorithm != "", "the collective ran")
    buf = np.arange(3.0) if comm.rank == 0 else np.zeros(3)
    run_all(comm, shancoll.bcast, comm, buf, 0, check=True)
    assert_all(comm, np.array_equal(buf, np.arange(3.0)), "checked bcast result")


def test_communicator_usable_after_a_disagreement(comm):
    n = one_rank_differs(comm, 8, 4)
    raises_all(comm, ValueError, shancoll.allreduce, comm, np.ones(n), np.zeros(n), check=True,
               match="count")  # fmt: skip
    x, out = np.ones(6), np.zeros(6)
    run_all(comm, shancoll.allreduce, comm, x, out)
    assert_all(comm, np.array_equal(out, np.full(6, float(comm.size))), "allreduce afterwards")


def _request_calls(comm, n, root):
    """Every nonblocking door with n elements per block (float64) and `root`."""
    p = comm.size
    ones, zeros = np.ones, np.zeros
    at_root = comm.rank == root
    return {
        "ibarrier": lambda **kw: shancoll.ibarrier(comm, **kw),
        "ibcast": lambda **kw: shancoll.ibcast(comm, zeros(n), root, **kw),
        "ireduce": lambda **kw: shancoll.ireduce(comm, ones(n), zeros(n), MPI.SUM, root, **kw),
        "iallreduce": lambda **kw: shancoll.iallreduce(comm, ones(n), zeros(n), **kw),
        "igather": lambda **kw: shancoll.igather(
            comm, ones(n), zeros(n * p) if at_root else None, root, **kw),
        "igatherv": lambda **kw: shancoll.igatherv(
            comm, ones(n), [zeros(n * p), [n] * p] if at_root else None, root, **kw),
        "iscatter": lambda **kw: shancoll.iscatter(
            comm, ones(n * p) if at_root else None, zeros(n), root, **kw),
        "iscatterv": lambda **kw: shancoll.iscatterv(
            comm, [ones(n * p), [n] * p] if at_root else None, zeros(n), root, **kw),
        "iallgather": lambda **kw: shancoll.iallgather(comm, ones(n), zeros(n * p), **kw),
        "iallgatherv": lambda **kw: shancoll.iallgatherv(
            comm, ones(n), [zeros(n * p), [n] * p], **kw),
        "ialltoall": lambda **kw: shancoll.ialltoall(comm, ones(n * p), zeros(n * p), **kw),
        "ialltoallv": lambda **kw: shancoll.ialltoallv(
            comm, [ones(n * p), [n] * p], [zeros(n * p), [n] * p], **kw),
        "ireduce_scatter_block": lambda **kw: shancoll.ireduce_scatter_block(
            comm, ones(n * p), zeros(n), **kw),
        "ireduce_scatter": lambda **kw: shancoll.ireduce_scatter(
            comm, ones(n * p), zeros(n), [n] * p, **kw),
        "iscan": lambda **kw: shancoll.iscan(comm, ones(n), zeros(n), **kw),
        "iexscan": lambda **kw: shancoll.iexscan(comm, ones(n), zeros(n), **kw),
    }  # fmt: skip


REQUEST_DOORS = list(_request_calls(MPI.COMM_SELF, 1, 0))
ROOTED = {"ibcast", "ireduce", "igather", "igatherv", "iscatter", "iscatterv"}


@pytest.mark.usefixtures("checked_environment")
@pytest.mark.parametrize("door", REQUEST_DOORS)
def test_request_doors_compare_their_calls(comm, door):
    """Every nonblocking door under SHANCOLL_CHECK=1: the last rank asks for
    another algorithm (a rooted door: another root) and every rank raises
    before anything is posted; the same call agreeing then runs."""
    if door in ROOTED:
        call = _request_calls(comm, 2, one_rank_differs(comm, 0, 1))[door]
        raises_all(comm, ValueError, call, match="disagree on the root")
    else:
        call = _request_calls(comm, 2, 0)[door]
        raises_all(comm, ValueError, call, algorithm=one_rank_differs(comm, "auto", "mpi"),
                   match="disagree on the algorithm")  # fmt: skip
    _request_calls(comm, 2, 0)[door]().wait(timeout=30)
    comm.Barrier()


@pytest.mark.usefixtures("checked_environment")
def test_request_counts_disagree(comm):
    n = one_rank_differs(comm, 4, 2)
    p = comm.size
    raises_all(comm, ValueError, shancoll.iallgather, comm, np.ones(n), np.zeros(n * p),
               match="disagree on the recvcounts")  # fmt: skip
    raises_all(comm, ValueError, shancoll.ireduce, comm, np.ones(n), np.zeros(n),
               match="disagree on the count")  # fmt: skip


def _one_bad_rank_calls(comm):
    """Every nonblocking door (ibarrier aside: it has no buffer) with a bad
    argument on the last rank alone (`one_rank_bad_calls`)."""
    return {f"i{name}": call for name, call in one_rank_bad_calls(comm).items()}


@pytest.mark.usefixtures("checked_environment")
@pytest.mark.parametrize("door", list(_one_bad_rank_calls(MPI.COMM_SELF)))
def test_one_rank_s_bad_argument_is_every_rank_s_error(comm, door):
    """SHANCOLL_CHECK=1: a bad argument on one rank alone (the last) is
    refused on every rank, naming that rank and the argument, before
    anything is posted (no rank waits for the timeout); the communicator
    then runs the same door with good arguments."""
    bad = comm.size - 1
    raises_all(comm, ValueError, _one_bad_rank_calls(comm)[door], match=f"rank {bad} refused")
    _request_calls(comm, 2, 0)[door]().wait(timeout=30)
    comm.Barrier()


def test_timed_out_comparison_writes_no_freed_memory(comm):
    """A checked call that times out on one rank leaves its comparison (a nonblocking
    collective of the MPI library, which cannot be cancelled) posted; once the other
    ranks arrive, MPI completes it. It must write into memory shancoll kept for it:
    before, it wrote into the comparison's freed vector, which the next allocation of
    its size had taken (seen as an abort in malloc, tests later, at 3 ranks).
    Algorithm ring: its waits have deadlines (the `mpi` route, which `auto` takes
    on real nodes, is the library's blocking call and waits for rank 0 as MPI
    does)."""
    c = comm.Dup()  # left out of step: never freed, never reused
    x = np.ones(4)
    opts = dict(algorithm="ring", check=True)
    run_all(comm, shancoll.allreduce, c, x, np.zeros(4), **opts)  # set-up done
    kept = []
    if comm.rank == 0:
        with pytest.raises(TimeoutError, match="call descriptions"):
            shancoll.allreduce(c, x, np.zeros(4), timeout=0.3, **opts)
        # The comparison's memory was (size + 0 or 1) * 9 int64: take every block of
        # those sizes glibc has free, as numpy arrays of a known pattern.
        for n in (9 * comm.size, 9 * (comm.size + 1)):
            kept += [np.full(n, -7, dtype=np.int64) for _ in range(300)]
    comm.Barrier()
    if comm.rank != 0:  # completes rank 0's comparison, then times out waiting for it
        with pytest.raises(TimeoutError):
            shancoll.allreduce(c, x, np.zeros(4), timeout=0.3, **opts)
    comm.Barrier()  # rank 0's progress: MPI finishes the comparison here
    ok = all((a == -7).all() for a in kept)
    assert_all(comm, ok, "a timed-out comparison wrote into memory freed and reused since")
