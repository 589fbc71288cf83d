"""A request refused by one rank alone, without checked mode: at a
persistent `<coll>_init` and at the request that sets a communicator up (the
first shancoll call on it), the ranks compare whether one refuses before
anything is posted, so that the refusal is every rank's ValueError naming that rank and
the argument (no rank waits for the timeout), and the communicator then runs
the same collective with good arguments, as mpi4py's does.

Each bad call is waited for with a short timeout: without the comparison the
other ranks' requests would wait for the refusing rank until it ends (the
test fails on a CollectiveTimeout, not a hang).
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import assert_all, one_rank_bad_calls, raises_all
from mpi4py import MPI

import shancoll

SHORT = 3.0  # the bad call's wait: it must fail at once, not time out


@pytest.fixture(autouse=True)
def two_ranks_at_least(comm):
    if comm.size < 2:
        pytest.skip("a refusal by one rank alone needs two ranks")


def run_to_completion(call, persistent):
    """Makes the request and waits for it (SHORT): the error of either."""
    req = call()
    if persistent:
        req.start()
    req.wait(timeout=SHORT)


def reduce_then_compare(comm):
    """A good ireduce on `comm` gives mpi4py's answer at the root."""
    send = np.arange(5.0) + comm.rank
    got, want = np.zeros(5), np.zeros(5)
    comm.Reduce(send, want, MPI.SUM, 0)
    shancoll.ireduce(comm, send, got, MPI.SUM, 0).wait(timeout=30)
    assert_all(comm, comm.rank != 0 or np.array_equal(got, want), "ireduce after the refusal")


@pytest.mark.parametrize("name", list(one_rank_bad_calls(MPI.COMM_SELF, False)))
def test_first_request_of_a_new_communicator_refused_by_one_rank(comm, name):
    """The first call on a new communicator, a request (shancoll sets the
    communicator up in it): the last rank's bad argument is every rank's ValueError naming it
    and the argument, within the call; the communicator then works."""
    dup = comm.Dup()
    try:
        bad = comm.size - 1
        raises_all(comm, ValueError, run_to_completion, one_rank_bad_calls(dup, False)[name], False,
                   match=f"rank {bad} refused")  # fmt: skip
        reduce_then_compare(dup)
    finally:
        dup.Free()


@pytest.mark.parametrize("name", list(one_rank_bad_calls(MPI.COMM_SELF, True)))
def test_persistent_init_refused_by_one_rank(comm, name):
    """Every `<coll>_init`, on a communicator that ran requests before: the
    last rank's bad argument is every rank's ValueError naming it, and the
    communicator then works."""
    shancoll.ibarrier(comm).wait(timeout=30)  # not the communicator's first request
    bad = comm.size - 1
    raises_all(comm, ValueError, run_to_completion, one_rank_bad_calls(comm, True)[name], True,
               match=f"rank {bad} refused")  # fmt: skip
    reduce_then_compare(comm)


def test_a_refusal_by_every_rank_is_each_rank_s_own(comm):
    """Every rank refuses alike (a root outside the communicator): each
    raises its own refusal, not another rank's (a front end may then hand
    the call to the MPI library on every rank alike)."""
    dup = comm.Dup()
    try:
        raised = ""
        try:
            shancoll.ireduce(dup, np.ones(2), np.zeros(2), MPI.SUM, comm.size)
        except ValueError as e:
            raised = str(e)
        ok = raised.startswith("root: must be a rank") and "refused" not in raised
        assert_all(comm, ok, f"rank {comm.rank}: {raised!r}")
        reduce_then_compare(dup)
    finally:
        dup.Free()


def test_a_request_on_a_set_up_communicator_waits_for_no_peer(comm):
    """MPI's nonblocking collectives are local: on a communicator set up
    already, rank 0 starts an ibcast and only then tells the others to start
    theirs (a request that compared the ranks' refusals would wait for them
    and time out); every rank gets mpi4py's answer."""
    dup = comm.Dup()
    try:
        shancoll.barrier(dup)  # sets the communicator up
        buf = np.arange(4.0) if comm.rank == 0 else np.zeros(4)
        if comm.rank == 0:
            req = shancoll.ibcast(dup, buf, 0, timeout=SHORT)
            for peer in range(1, comm.size):
                comm.send("started", dest=peer, tag=7)
        else:
            comm.recv(source=0, tag=7)
            req = shancoll.ibcast(dup, buf, 0, timeout=SHORT)
        req.wait()
        assert_all(comm, np.array_equal(buf, np.arange(4.0)), "ibcast")
    finally:
        dup.Free()
