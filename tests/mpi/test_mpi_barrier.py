"""shancoll.barrier as a barrier, every algorithm, against MPI's.

The property: before each barrier every rank adds 1 to a counter at rank 0
(MPI_Accumulate into a passive-target window, flushed), entering late by a
delay that depends on its rank and the round; after the barrier every rank
reads the counter (MPI_Fetch_and_op NO_OP, flushed) and must see every
rank's increment of the round. A rank that left before the last one arrived
would read less. A comm.Barrier() (MPI's) after the read keeps the next
round's increments from overtaking a slow reader.

Run over 1-8 ranks by test_mpi_suites.py (SHANCOLL_RANKS_PER_NODE runs too:
the virtual-node layouts, uneven last nodes), with ranks_per_node 1, 2 and 3
named by the calls as well.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, raises_all, run_all
from mpi4py import MPI

import shancoll

WORLD = MPI.COMM_WORLD
ALGORITHMS = ["auto", *shancoll.algorithms("barrier")]
LAYOUTS = [None, 1, 2, 3]  # None: SHANCOLL_RANKS_PER_NODE's (or physical)
ROUNDS = 10 if REDUCED else 30


class Counter:
    """A counter at rank 0 of `comm` that every rank can add to and read (RMA)."""

    def __init__(self, comm: MPI.Comm):
        self.comm = comm
        self.win = MPI.Win.Allocate(8 if comm.rank == 0 else 0, 8, comm=comm)
        if comm.rank == 0:
            np.frombuffer(self.win.tomemory(), dtype=np.int64)[:] = 0
        comm.Barrier()
        self.win.Lock_all()

    def add(self) -> None:
        one = np.ones(1, dtype=np.int64)
        self.win.Accumulate(one, 0, op=MPI.SUM)
        self.win.Flush(0)

    def read(self) -> int:
        out = np.zeros(1, dtype=np.int64)
        self.win.Fetch_and_op(np.zeros(1, dtype=np.int64), out, 0, op=MPI.NO_OP)
        self.win.Flush(0)
        return int(out[0])

    def free(self) -> None:
        self.win.Unlock_all()
        self.win.Free()


def stagger(rank: int, round_: int) -> None:
    """A rank-dependent late arrival (some rounds: rank 0 last, others: the highest)."""
    late = rank if round_ % 2 else rank ^ 1
    time.sleep(0.0002 * (late % 4) * (round_ % 3))


def barrier_rounds(comm: MPI.Comm, rounds: int, call) -> list[int]:
    """The rounds whose read missed an increment (empty: a barrier every time)."""
    counter = Counter(comm)
    missed = []
    for r in range(1, rounds + 1):
        stagger(comm.rank, r)
        counter.add()
        call()
        if counter.read() < r * comm.size:
            missed.append(r)
        comm.Barrier()  # no increment of round r + 1 before every read of round r
    counter.free()
    return missed


@pytest.mark.parametrize("rpn", LAYOUTS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_barrier_holds_everyone(algorithm, rpn):
    comm = WORLD.Dup()
    missed = run_all(
        comm,
        barrier_rounds,
        comm,
        ROUNDS,
        lambda: shancoll.barrier(comm, algorithm, ranks_per_node=rpn),
    )
    assert_all(comm, not missed, f"{algorithm} rpn={rpn}: rounds {missed} let a rank out early")
    assert_all(comm, shancoll.last_stats(comm).algorithm != "", "no algorithm recorded")
    comm.Free()


def test_without_a_barrier_the_check_fails():
    """The property test can fail: with no barrier at all, a staggered rank is missed."""
    if WORLD.size < 2:
        pytest.skip("one rank is always everyone")
    comm = WORLD.Dup()

    def late_rank_missed():
        counter = Counter(comm)
        missed = 0
        for r in range(1, 4):
            if comm.rank == comm.size - 1:
                time.sleep(0.05)
            counter.add()
            if comm.rank == 0 and counter.read() < r * comm.size:
                missed += 1
            comm.Barrier()
        counter.free()
        return missed

    missed = run_all(comm, late_rank_missed)
    assert_all(comm, comm.rank != 0 or missed > 0, "a late rank went unnoticed without a barrier")
    comm.Free()


@pytest.mark.parametrize("algorithm", ["release_gather", "dissemination"])
def test_many_calls_and_other_collectives_between(algorithm):
    """Thousands of calls (the flags' counters only grow) interleaved with bcast,
    reduce and allreduce on release_gather's flags of the same layouts, on a dup and
    on a split communicator; the barrier still holds afterwards."""
    comm = WORLD.Dup()
    split = comm.Split(comm.rank % 2, comm.rank)
    calls = 500 if REDUCED else 3000
    for rpn in (None, 2):
        for i in range(calls):
            shancoll.barrier(comm, algorithm, ranks_per_node=rpn)
            if i % 97 == 0:
                x = np.full(3, comm.rank, dtype="f8")
                shancoll.bcast(comm, x, i % comm.size, "release_gather", ranks_per_node=rpn)
                assert_all(comm, (x == i % comm.size).all(), "bcast between barriers")
                out = np.zeros(3)
                shancoll.allreduce(comm, np.ones(3), out, MPI.SUM, "release_gather",
                                   ranks_per_node=rpn)  # fmt: skip
                assert_all(comm, (out == comm.size).all(), "allreduce between barriers")
                shancoll.reduce(comm, np.ones(3), out, MPI.SUM, 0, "release_gather",
                                ranks_per_node=rpn)  # fmt: skip
                shancoll.barrier(split, algorithm, ranks_per_node=rpn)
    for c in (comm, split):
        missed = run_all(c, barrier_rounds, c, ROUNDS, lambda c=c: shancoll.barrier(c, algorithm))
        assert_all(c, not missed, f"after many calls: rounds {missed} let a rank out early")
    split.Free()
    comm.Free()


def layout(comm: MPI.Comm, rpn: int) -> tuple[int, int, int]:
    """(nodes, my node's size, my local rank) for virtual nodes of rpn ranks (within
    each host in the runs on two real hosts)."""
    t = shancoll.topology(comm, ranks_per_node=rpn)
    return t["node_count"], len(t["ranks"][t["node"]]), t["local_rank"]


@pytest.mark.parametrize("rpn", [1, 2, 3])
def test_release_gather_stats(rpn):
    """Within a node a gather and a release (2 rounds, one signal per rank);
    between the node leaders ceil(log2 nodes) dissemination rounds, one message each."""
    comm = WORLD.Dup()
    shancoll.barrier(comm, "release_gather", ranks_per_node=rpn)
    s = shancoll.last_stats(comm)
    nodes, local_size, local_rank = layout(comm, rpn)
    between = math.ceil(math.log2(nodes)) if local_rank == 0 and nodes > 1 else 0
    on_node = 2 if local_size > 1 else 0
    want = (nodes, on_node + between, int(local_size > 1), between)
    got = (s.node_count, s.rounds, s.intra_messages, s.inter_messages)
    assert_all(comm, got == want, f"(nodes, rounds, intra, inter) {got} != {want}")
    tree_ok = local_size == 1 or s.reduce_tree == "knomial k=4 right"
    assert_all(comm, tree_ok, f"gather tree {s.reduce_tree}")
    comm.Free()


def test_dissemination_stats():
    comm = WORLD.Dup()
    shancoll.barrier(comm, "dissemination", ranks_per_node=1)
    s = shancoll.last_stats(comm)
    rounds = math.ceil(math.log2(comm.size)) if comm.size > 1 else 0
    got = (s.rounds, s.inter_messages, s.intra_messages)
    assert_all(comm, got == (rounds, rounds, 0), f"(rounds, inter, intra) {got}")
    comm.Free()


def test_bad_arguments():
    comm = WORLD.Dup()
    raises_all(comm, shancoll.ArgumentError, shancoll.barrier, comm, "nope",
               match="algorithm: unknown barrier algorithm 'nope'")  # fmt: skip
    raises_all(comm, shancoll.ArgumentError, shancoll.barrier, comm, tree="flat",
               match="tree: unknown option of barrier")  # fmt: skip
    raises_all(comm, shancoll.ArgumentError, shancoll.barrier, comm, timeout=-1, match="timeout")
    shancoll.barrier(comm)  # still usable
    comm.Free()
