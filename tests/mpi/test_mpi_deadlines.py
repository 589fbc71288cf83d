"""Every wait has a deadline: a rank missing from a collective is a TimeoutError on the
ranks that wait for it, within the timeout (plus slack) and naming what they waited
for, in every algorithm and every phase, the first call on a fresh communicator
included (its set-up runs blocking MPI calls, behind a handshake); never a hang.

Each case runs on a fresh communicator. The ranks but one (the missing rank) call with
a short timeout; once they have failed, every rank whose shancoll state is still intact
(the missing rank, and any rank that finished without waiting for it) abandons the
communicator with a call that times out too (``abandon``: a new node layout, whose
two-round handshake lets no latecomer through). Otherwise it would free its shared
segments at MPI_Finalize (MPI_Win_free is collective) and wait there for the ranks that
failed, which keep theirs. The communicators are never freed: messages of the failed
calls may still be in flight on them.

Only at 2-4 ranks (each case waits out a timeout) and once per rank count: the calls
name their node layout (``ranks_per_node``), so SHANCOLL_RANKS_PER_NODE runs add nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all
from mpi4py import MPI

import shancoll

WORLD = MPI.COMM_WORLD
pytestmark = pytest.mark.skipif(
    not 2 <= WORLD.size <= 4 or REDUCED or "SHANCOLL_RANKS_PER_NODE" in os.environ,
    reason="deadline cases run at 2-4 ranks, in the runs without virtual nodes by environment",
)

# Of the calls that must fail (0.5 s until 2026-11-30: these cases took half
# of a 3-rank suite's time). At 2 ranks the one rank that calls waits for the
# missing one from its first wait; at 3-4 ranks the callers may first meet
# each other, which takes microseconds, a few scheduler slices when ranks
# outnumber cores: far below the timeout either way.
TIMEOUT = 0.25
SLACK = 5.0  # they fail within TIMEOUT + SLACK
ABANDON_TIMEOUT = 0.05
LAST = WORLD.size - 1
N = 4  # elements per rank


@dataclass
class Case:
    call: Callable  # call(comm, timeout)
    expect: tuple[str, ...]  # the TimeoutError names one of these
    warm: Callable | None = None  # warm(comm), on every rank first: a later call's phase
    absent: tuple[int, ...] = (LAST,)  # the ranks that do not call
    waiters: tuple[int, ...] | None = None  # must time out (None: every rank that calls);
    # the other callers may finish instead
    inter: bool = False  # runs on an inter-communicator between ranks < LAST and LAST


def allgather(algorithm, rpn, elements=1, **kw):
    def call(c, timeout=None):
        shancoll.allgather(c, np.ones(elements), np.zeros(elements * c.size), algorithm=algorithm,
                           ranks_per_node=rpn, timeout=timeout, **kw)  # fmt: skip

    return call


def allreduce(algorithm, rpn):
    def call(c, timeout=None):
        shancoll.allreduce(c, np.ones(N), np.zeros(N), MPI.SUM, algorithm, ranks_per_node=rpn,
                           timeout=timeout)  # fmt: skip

    return call


def bcast(algorithm, rpn, root=LAST):
    def call(c, timeout=None):
        shancoll.bcast(c, np.ones(N), root, algorithm, ranks_per_node=rpn, timeout=timeout)

    return call


def reduce(algorithm, rpn, root=0):
    def call(c, timeout=None):
        shancoll.reduce(c, np.ones(N), np.zeros(N), MPI.SUM, root, algorithm, ranks_per_node=rpn,
                        timeout=timeout)  # fmt: skip

    return call


def barrier(algorithm, rpn):
    def call(c, timeout=None):
        shancoll.barrier(c, algorithm, ranks_per_node=rpn, timeout=timeout)

    return call


def scan(algorithm, rpn, coll="scan"):
    def call(c, timeout=None):
        getattr(shancoll, coll)(c, np.ones(N), np.zeros(N), MPI.SUM, algorithm, ranks_per_node=rpn,
                                timeout=timeout)  # fmt: skip

    return call


def reduce_scatter(algorithm, rpn):
    def call(c, timeout=None):
        shancoll.reduce_scatter_block(c, np.ones(N * c.size), np.zeros(N), MPI.SUM, algorithm,
                                      ranks_per_node=rpn, timeout=timeout)  # fmt: skip

    return call


def alltoall(algorithm, rpn, elements=1):
    def call(c, timeout=None):
        shancoll.alltoall(c, np.ones(elements * c.size), np.zeros(elements * c.size), algorithm,
                          ranks_per_node=rpn, timeout=timeout)  # fmt: skip

    return call


def gather(algorithm, rpn, v=False):
    def call(c, timeout=None):
        fn = shancoll.gatherv if v else shancoll.gather
        recv = np.zeros(N * c.size) if c.rank == 0 else None
        fn(c, np.ones(N), recv, 0, algorithm, ranks_per_node=rpn, timeout=timeout)

    return call


def scatter(algorithm, rpn, v=False):
    def call(c, timeout=None):
        fn = shancoll.scatterv if v else shancoll.scatter
        send = np.ones(N * c.size) if c.rank == 0 else None
        fn(c, send, np.zeros(N), 0, algorithm, ranks_per_node=rpn, timeout=timeout)

    return call


def inter_allgatherv(algorithm):
    def call(c, timeout=None):
        shancoll.allgatherv(c, np.ones(N), np.zeros(N * c.remote_size), algorithm=algorithm,
                            timeout=timeout)  # fmt: skip

    return call


FIRST_CALL = ("set-up of the communicator",)
ALLGATHERV = ["shan", "ring", "bruck", "recursive_doubling"]
ALLREDUCE_P2P = ["dissemination", "nway_dissemination", "bruck", "pairwise_exchange", "binomial"]
ALLREDUCE = ALLREDUCE_P2P + ["ring", "release_gather", "shan", "pieces"]
ROOTED = ["release_gather", "binomial"]
INTERGROUP = ["segmented", "root_gather"]
BARRIER = ["release_gather", "dissemination"]  # mpi: MPI_Barrier blocks in the library
ALLTOALL = ["shan", "pairwise", "bruck"]  # mpi: MPI_Alltoall blocks in the library
GATHER = ["shan", "binomial"]  # mpi: MPI_Gather(v) / MPI_Scatter(v) block in the library


def cases() -> dict[str, Case]:
    c: dict[str, Case] = {}
    # The first call on a fresh communicator, through every entry.
    for a in ALLGATHERV:
        c[f"allgatherv-{a}-first-call"] = Case(allgather(a, 0), FIRST_CALL)
    for a in ALLREDUCE:
        c[f"allreduce-{a}-first-call"] = Case(allreduce(a, 0), FIRST_CALL)
    for a in ROOTED:
        c[f"bcast-{a}-first-call"] = Case(bcast(a, 0), FIRST_CALL)
        c[f"reduce-{a}-first-call"] = Case(reduce(a, 0), FIRST_CALL)
    for a in BARRIER:
        c[f"barrier-{a}-first-call"] = Case(barrier(a, 0), FIRST_CALL)
    for a in GATHER:
        c[f"gather-{a}-first-call"] = Case(gather(a, 0), FIRST_CALL)
        c[f"scatterv-{a}-first-call"] = Case(scatter(a, 0, v=True), FIRST_CALL)
    for a in INTERGROUP:
        c[f"intergroup-{a}-first-call"] = Case(
            inter_allgatherv(a), ("set-up of the inter-communicator",), inter=True
        )
    # A later call: the set-up is done, the algorithm's own waits.
    for a in ["ring", "bruck", "recursive_doubling"]:
        f = allgather(a, 1)
        c[f"allgatherv-{a}-later-call"] = Case(f, (f"allgatherv '{a}'",), warm=f)
    for rpn in (0, 1):
        f = allgather("shan", rpn)
        c[f"allgatherv-shan-rpn{rpn}-later-call"] = Case(
            f, ("shan allgatherv", "node barrier", "transport"), warm=f
        )
    for a in ALLREDUCE_P2P + ["ring"]:
        f = allreduce(a, 1)
        c[f"allreduce-{a}-later-call"] = Case(f, (f"allreduce '{a}'",), warm=f)
    # release_gather on several physical nodes (the real-node runs) waits
    # in its step between the node leaders too, named after its algorithm.
    f = allreduce("release_gather", 0)
    c["allreduce-release_gather-later-call"] = Case(f, ("release_gather:", "allreduce '"), warm=f)
    f = allreduce("shan", 0)  # one node: the node pipeline
    # (on several physical nodes: or the fractions' allreduce between them)
    c["allreduce-shan-rpn0-later-call"] = Case(f, ("shan allreduce", "allreduce '"), warm=f)
    f = allreduce("shan", 1)  # one rank per node: the fractions' allreduce between nodes
    c["allreduce-shan-rpn1-later-call"] = Case(f, ("allreduce '",), warm=f)
    f = allreduce("pieces", 0)  # one node: its pieces; on several physical nodes: shan's
    c["allreduce-pieces-rpn0-later-call"] = Case(
        f, ("pieces allreduce", "shan allreduce", "allreduce '"), warm=f
    )
    tree = "a peer of the tree"
    for a, expect in (("release_gather", ("release_gather:", tree)), ("binomial", (tree,))):
        f = bcast(a, 0)
        c[f"bcast-{a}-later-call"] = Case(f, expect, warm=f)
        f = reduce(a, 0)  # only the root surely waits for the missing rank (a leaf)
        c[f"reduce-{a}-later-call"] = Case(f, expect, warm=f, waiters=(0,))
    # barrier: every rank that came waits (for a child's gather, local rank 0's
    # release, or, between nodes and in dissemination, a signal).
    signal = "barrier dissemination"
    for a, rpn, expect in (
        ("release_gather", 0, ("release_gather:", signal)),  # real nodes: between leaders
        ("release_gather", 1, (signal,)),
        ("release_gather", 2, ("release_gather:", signal)),
        ("dissemination", 0, (signal,)),
    ):
        f = barrier(a, rpn)
        c[f"barrier-{a}-rpn{rpn}-later-call"] = Case(f, expect, warm=f)
    # gather: the root waits for the missing rank's block (on its node, or
    # its subtree's counts); scatter: every rank waits for the missing root.
    for a, rpn in (("shan", 0), ("shan", 1), ("shan", 2), ("binomial", 0)):
        f = gather(a, rpn, v=rpn == 2)
        expect = ("gather shan:", "gather: the counts")
        c[f"gather-{a}-rpn{rpn}-later-call"] = Case(f, expect, warm=f, waiters=(0,))
        f = scatter(a, rpn, v=rpn == 1)
        expect = ("scatter shan:", "scatter: the counts")
        c[f"scatter-{a}-rpn{rpn}-later-call"] = Case(f, expect, warm=f, absent=(0,))
    for a in INTERGROUP:
        f = inter_allgatherv(a)
        c[f"intergroup-{a}-later-call"] = Case(f, ("group",), warm=f, inter=True)
    # alltoall: every rank that came waits (for a block of the missing rank, or,
    # in shan, in a node barrier or for a message between nodes).
    for a in ALLTOALL:
        c[f"alltoall-{a}-first-call"] = Case(alltoall(a, 0), FIRST_CALL)
    for a, rpn, expect in (
        ("pairwise", 1, ("alltoall 'pairwise'",)),
        ("bruck", 1, ("alltoall 'bruck'",)),
        ("shan", 0, ("node barrier", "alltoall 'shan'")),  # real nodes: between them
        ("shan", 1, ("alltoall 'shan'",)),
        ("shan", 2, ("node barrier", "alltoall 'shan'")),
    ):
        f = alltoall(a, rpn)
        c[f"alltoall-{a}-rpn{rpn}-later-call"] = Case(f, expect, warm=f)
    c["alltoall-shan-segments"] = Case(  # shan's own node segments, made at its first call
        alltoall("shan", 0), ("set-up of a shared-memory segment", "alltoall 'shan'"),
        warm=alltoall("pairwise", 0),
    )  # fmt: skip
    # Set-up started by a later call: each behind its own handshake.
    c["new-node-layout"] = Case(
        allgather("ring", 2), ("set-up of the node layout",), warm=allgather("ring", 1)
    )
    c["shan-rma-transport"] = Case(
        allgather("shan", 1, transport="rma"), ("set-up of the rma transport",),
        warm=allgather("shan", 1),
    )  # fmt: skip
    c["shan-segment-grows"] = Case(  # one node; below the two-rank single-copy size
        allgather("shan", 0, elements=2048), ("set-up of a shared-memory segment",),
        warm=allgather("shan", 0),
    )  # fmt: skip
    c["shan-rma-window-grows"] = Case(  # the window spans every node's segment
        allgather("shan", 1, elements=2048, transport="rma"),
        ("set-up of a shared-memory segment of every node",),
        warm=allgather("shan", 1, transport="rma"),
    )  # fmt: skip
    c["release_gather-segment"] = Case(  # on real nodes of one rank: the tree between nodes
        bcast("release_gather", 0), ("set-up of a shared-memory segment", "a peer of the tree"),
        warm=allgather("ring", 0),
    )  # fmt: skip
    c["shan-allreduce-fraction-communicators"] = Case(
        allreduce("shan", 1), ("set-up of shan allreduce's inter-node communicators",),
        warm=allreduce("ring", 1),
    )  # fmt: skip
    c["release_gather-leaders-communicator"] = Case(
        allreduce("release_gather", 1), ("communicator of the node leaders",),
        warm=allreduce("ring", 1),
    )  # fmt: skip
    # scan and exscan: rank 0 always waits for the missing last rank (in
    # recursive doubling its partners' groups reach it); shan on one node:
    # every rank at the node barrier, but on one node of two ranks (the pair
    # paths: scan a reduce to rank 1, exscan a bcast from rank 0) rank 0
    # needs nothing of rank 1 and may finish.
    node = WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    pair = WORLD.size == 2 and node.size == 2
    node.Free()
    for a in ["shan", "recursive_doubling"]:
        c[f"scan-{a}-first-call"] = Case(scan(a, 0), FIRST_CALL)
    rd = "recursive_doubling scan"
    for coll in ["scan", "exscan"]:
        f = scan("recursive_doubling", 0, coll)
        c[f"{coll}-recursive_doubling-later-call"] = Case(f, (rd,), warm=f, waiters=(0,))
        f = scan("shan", 0, coll)  # one node; on real nodes: between them too
        c[f"{coll}-shan-rpn0-later-call"] = Case(
            f, ("node barrier", rd), warm=f, waiters=() if pair else (0,)
        )
        f = scan("shan", 1, coll)  # one rank per node: the node totals' exscan
        c[f"{coll}-shan-rpn1-later-call"] = Case(f, (rd,), warm=f, waiters=(0,))
    # reduce_scatter_block: rank 0 exchanges with the missing last rank
    # (pairwise, shan's pairwise between nodes) or is its right neighbour (ring).
    for a in ["shan", "ring", "pairwise"]:
        c[f"reduce_scatter-{a}-first-call"] = Case(reduce_scatter(a, 0), FIRST_CALL)
        if a != "shan":
            f = reduce_scatter(a, 0)
            c[f"reduce_scatter-{a}-later-call"] = Case(
                f, (f"reduce_scatter '{a}'",), warm=f, waiters=(0,)
            )
    pw = "reduce_scatter 'pairwise'"
    f = reduce_scatter("shan", 0)  # one node: a pair channel's chunk; on real nodes: between them
    c["reduce_scatter-shan-rpn0-later-call"] = Case(
        f, ("reduce_scatter 'shan'", "node barrier", pw), warm=f, waiters=(0,)
    )
    f = reduce_scatter("shan", 1)
    c["reduce_scatter-shan-rpn1-later-call"] = Case(f, (pw,), warm=f, waiters=(0,))
    # Requests: wait() with the call's timeout (nonblocking) or a persistent
    # request's start + wait, on a communicator set up by the same call; a
    # persistent _init first compares the ranks' refusals, and waits there.
    for name, f in requests().items():
        compared = ("call descriptions",) if name.endswith("persistent") else ()
        c[f"{name}-later-call"] = Case(f, (f"{name.split('-')[0]} wait", *compared), warm=f)
    return c


def requests():
    """Request forms, keyed '<collective>-<how>': each call(c, timeout) waits."""

    def nonblocking(form, args, **kw):
        def call(c, timeout=None):
            form(c, *args(c), timeout=timeout, **kw).wait()

        return call

    def persistent(form, args, **kw):
        def call(c, timeout=None):
            req = form(c, *args(c), timeout=timeout, **kw)
            req.start()
            req.wait()
            req.free()

        return call

    def no_args(c):
        return ()

    def gather_args(c):
        return np.ones(N), np.zeros(N * c.size)

    def sum_args(c):
        return np.ones(N), np.zeros(N)

    def alltoall_args(c):
        return np.ones(N * c.size), np.zeros(N * c.size)

    return {
        "barrier-dissemination": nonblocking(shancoll.ibarrier, no_args, algorithm="dissemination"),
        "barrier-mpi": nonblocking(shancoll.ibarrier, no_args, algorithm="mpi"),
        "allgather-ring-request": nonblocking(shancoll.iallgather, gather_args, algorithm="ring"),
        "iallreduce-binomial-persistent": persistent(
            shancoll.allreduce_init, sum_args, algorithm="binomial"
        ),
        "alltoall-pairwise-persistent": persistent(
            shancoll.alltoall_init, alltoall_args, algorithm="pairwise"
        ),
    }


CASES = cases()


def fresh(case: Case) -> MPI.Comm:
    """A new communicator of every rank; with case.inter, an inter-communicator between
    the ranks below LAST and LAST, alone in its group (so that it keeps no shared state
    with the others: an inter-communicator cannot be abandoned through topology())."""
    if not case.inter:
        return WORLD.Dup()
    color = int(WORLD.rank == LAST)
    local = WORLD.Split(color, WORLD.rank)
    return local.Create_intercomm(0, WORLD, 0 if color else LAST, tag=31)


def fails_in_time(call, c, expect) -> str | None:
    """None if call(c, TIMEOUT) raises TimeoutError in time naming one of `expect`, else
    what happened instead ("finished" when it returned)."""
    start = time.monotonic()
    try:
        call(c, TIMEOUT)
    except TimeoutError as e:
        took, text = time.monotonic() - start, str(e)
        if took > TIMEOUT + SLACK:
            return f"TimeoutError after {took:.1f} s, more than {TIMEOUT} + {SLACK}: {text}"
        if "waited more than" not in text or not any(x in text for x in expect):
            return f"TimeoutError naming none of {expect}: {text}"
        return None
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return "finished"


def abandon(c: MPI.Comm) -> str | None:
    """Breaks this rank's shancoll state of `c`: a new node layout whose handshake cannot
    complete, the others having left (or being about to leave) `c`."""
    try:
        shancoll.topology(c, ranks_per_node=1000, timeout=ABANDON_TIMEOUT)
    except TimeoutError:
        return None
    except Exception as e:
        return f"abandon: {type(e).__name__}: {e}"
    return ABANDON_MET


ABANDON_MET = "abandon: topology() returned"


def missing_rank(case: Case) -> None:
    c = fresh(case)
    if case.warm:
        case.warm(c)
    calls = WORLD.rank not in case.absent
    outcome = fails_in_time(case.call, c, case.expect) if calls else None
    outcomes = WORLD.allgather(outcome)  # the absent ranks wait here
    intact = not calls or outcome == "finished"
    problem = abandon(c) if intact and not case.inter else None
    # Where every rank is intact (the callers needed nothing of the absent
    # ones) the ranks' abandon() meet, and the layout's set-up completes.
    if all(o in (None, "finished") for o in outcomes) and problem == ABANDON_MET:
        problem = None
    waiters = case.waiters
    if waiters is None:
        waiters = [r for r in range(WORLD.size) if r not in case.absent]
    bad = {r: o for r, o in enumerate(outcomes) if o and (r in waiters or o != "finished")}
    bad.update({r: p for r, p in enumerate(WORLD.allgather(problem)) if p is not None})
    assert_all(WORLD, not bad, f"ranks {case.absent} missing: {bad}")


@pytest.mark.parametrize("name", list(CASES))
def test_missing_rank_times_out(name):
    missing_rank(CASES[name])


ALONE = tuple(range(1, WORLD.size))  # every rank but 0 is missing
TOPOLOGY_CASES = {
    "fresh-communicator": Case(
        lambda c, t: shancoll.topology(c, timeout=t), FIRST_CALL, absent=ALONE
    ),
    "new-layout": Case(
        lambda c, t: shancoll.topology(c, ranks_per_node=1, timeout=t),
        ("set-up of the node layout",),
        warm=lambda c: shancoll.topology(c, ranks_per_node=0),
        absent=ALONE,
    ),
}


@pytest.mark.parametrize("name", list(TOPOLOGY_CASES))
def test_topology_on_one_rank_times_out(name):
    """topology() is collective where it builds a layout: called by rank 0 alone, on a
    fresh communicator or for a new layout of a known one, it times out."""
    missing_rank(TOPOLOGY_CASES[name])


def test_failed_set_up_refuses_later_calls():
    """A set-up that timed out leaves the communicator refused (RuntimeError naming the
    timeout), not set up again: a second handshake would match the first one's stale
    barrier on the ranks that come late."""
    c = WORLD.Dup()
    problem = None
    if WORLD.rank == 0:
        problem = fails_in_time(allgather("ring", 0), c, FIRST_CALL)
        try:
            allgather("ring", 0)(c, TIMEOUT)
            problem = problem or "the second call returned"
        except RuntimeError as e:
            if "earlier shancoll call" not in str(e) or FIRST_CALL[0] not in str(e):
                problem = problem or f"RuntimeError not naming the first failure: {e}"
        except Exception as e:
            problem = problem or f"{type(e).__name__}: {e}"
    WORLD.Barrier()  # rank 0 is done: the others abandon c
    if WORLD.rank != 0:
        problem = abandon(c)
    assert_all(WORLD, problem is None, str(problem))
