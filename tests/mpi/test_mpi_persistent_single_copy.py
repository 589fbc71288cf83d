"""The persistent single-copy engines (coll/persistent_single_copy.h): bcast
`release_gather` from 128 KiB, gather(v), scatter(v), allgather(v) and
alltoall(v) `shan` past their deposits' bounds, and allreduce `shan` and
reduce `release_gather` on a node of two ranks when asked
(single_copy=True), on one node where the ranks
may copy straight between their buffers. Against mpi4py's own collectives:
blocks of one chunk and of several (128 KiB each, claimed by either rank of
a pair), every root, in place, irregular layouts with gaps, the inputs
changed between starts and one rank late before every third start; a rank
that sits in a blocking receive after its start while its peers wait (MPI's
progress rule: the peers must copy its blocks themselves); counts that
differ, an error on every rank at _init.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, start_and_time_out
from mpi4py import MPI

import shancoll

TIMEOUT = 30.0
CHUNK = 256 * 1024 // 8  # doubles in the largest claimed chunk (kClaimedChunk)
SIZES = (4100, 3 * CHUNK + 5) if not REDUCED else (3 * CHUNK + 5,)
STARTS = 4 if REDUCED else 7


def single_copy(comm) -> bool:
    topo = shancoll.topology(comm)
    return topo["node_count"] == 1 and comm.size > 1 and topo["single_copy"]


def need_single_copy(comm):
    if not single_copy(comm):
        pytest.skip("one node of several ranks with cross-memory attach only")


def data(n, k, rank):
    return np.arange(n, dtype=float) * (rank + 1) + 100 * k + rank


def run(req, k, me, p):
    """A start and its wait, rank k % p sleeping 2 ms first every third run."""
    if k % 3 == 0 and me == k % p:
        time.sleep(0.002)
    req.start()
    req.wait(timeout=TIMEOUT)


# name -> (make(comm, n, root, in_place) -> (request, set_input(k), result()),
# what mpi4py's call gives), the blocks of n doubles
def bcast_case(comm, n, root, in_place):
    n = max(n, CHUNK)  # past 128 KiB, where it takes single copy unasked
    buf = np.zeros(n)
    req = shancoll.bcast_init(comm, buf, root, algorithm="release_gather")

    def set_input(k):
        buf[:] = data(n, k, root) if comm.rank == root else -1

    def want(k):
        w = data(n, k, root) if comm.rank == root else np.zeros(n)
        comm.Bcast(w, root)
        return w

    return req, set_input, lambda: buf, want


def gather_case(comm, n, root, in_place):
    p, me = comm.size, comm.rank
    send, recv = np.zeros(n), np.zeros(n * p)
    mine = MPI.IN_PLACE if in_place and me == root else send
    req = shancoll.gather_init(comm, mine, recv, root, algorithm="shan")

    def set_input(k):
        recv[:] = -1
        if mine is MPI.IN_PLACE:
            recv[me * n : (me + 1) * n] = data(n, k, me)
        send[:] = data(n, k, me)

    def want(k):
        w = np.zeros(n * p)
        comm.Gather(data(n, k, me), w, root)
        return w if me == root else None

    return req, set_input, lambda: recv if me == root else None, want


def scatter_case(comm, n, root, in_place):
    p, me = comm.size, comm.rank
    send, recv = np.zeros(n * p), np.zeros(n)
    mine = MPI.IN_PLACE if in_place and me == root else recv
    req = shancoll.scatter_init(comm, send, mine, root, algorithm="shan")

    def set_input(k):
        send[:] = data(n * p, k, root)
        recv[:] = -1

    def want(k):
        w = np.zeros(n)
        comm.Scatter(data(n * p, k, root), w, root)
        return w

    def result():
        return send[me * n : (me + 1) * n] if mine is MPI.IN_PLACE else recv

    return req, set_input, result, want


def allgather_case(comm, n, root, in_place):
    p, me = comm.size, comm.rank
    send, recv = np.zeros(n), np.zeros(n * p)
    req = shancoll.allgather_init(comm, MPI.IN_PLACE if in_place else send, recv, algorithm="shan")

    def set_input(k):
        recv[:] = -1
        send[:] = data(n, k, me)
        if in_place:
            recv[me * n : (me + 1) * n] = data(n, k, me)

    def want(k):
        w = np.zeros(n * p)
        comm.Allgather(data(n, k, me), w)
        return w

    return req, set_input, lambda: recv, want


def alltoall_case(comm, n, root, in_place):
    p, me = comm.size, comm.rank
    send, recv = np.zeros(n * p), np.zeros(n * p)
    req = shancoll.alltoall_init(comm, send, recv, algorithm="shan")

    def set_input(k):
        send[:], recv[:] = data(n * p, k, me), -1

    def want(k):
        w = np.zeros(n * p)
        comm.Alltoall(data(n * p, k, me), w)
        return w

    return req, set_input, lambda: recv, want


def allreduce_case(comm, n, root, in_place):
    send, recv = np.zeros(n), np.zeros(n)
    mine = MPI.IN_PLACE if in_place else send
    req = shancoll.allreduce_init(comm, mine, recv, MPI.SUM, algorithm="shan", single_copy=True)

    def set_input(k):
        send[:], recv[:] = data(n, k, comm.rank), -1
        if in_place:
            recv[:] = send

    def want(k):
        w = np.zeros(n)
        comm.Allreduce(data(n, k, comm.rank), w)
        return w

    return req, set_input, lambda: recv, want


def reduce_case(comm, n, root, in_place):
    send, recv = np.zeros(n), np.zeros(n)
    mine = MPI.IN_PLACE if in_place and comm.rank == root else send
    req = shancoll.reduce_init(comm, mine, recv, MPI.SUM, root, algorithm="release_gather",
                               single_copy=True)  # fmt: skip

    def set_input(k):
        send[:], recv[:] = data(n, k, comm.rank), -1
        if in_place and comm.rank == root:
            recv[:] = send

    def want(k):
        w = np.zeros(n)
        comm.Reduce(data(n, k, comm.rank), w, MPI.SUM, root)
        return w if comm.rank == root else None

    return req, set_input, lambda: recv, want


CASES = {
    "allreduce": (allreduce_case, True),
    "reduce": (reduce_case, True),
    "bcast": (bcast_case, False),
    "gather": (gather_case, True),
    "scatter": (scatter_case, True),
    "allgather": (allgather_case, True),
    "alltoall": (alltoall_case, False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_single_copy_against_mpi4py(comm, name):
    """Every root, in place where MPI has it, blocks of one chunk and of
    four: every run equals mpi4py's, with the inputs changed between starts
    and one rank late before every third; the request says its algorithm."""
    need_single_copy(comm)
    make, has_in_place = CASES[name]
    p, me = comm.size, comm.rank
    roots = range(p) if name in ("bcast", "gather", "scatter", "reduce") else (0,)
    for n in SIZES:
        for root in roots:
            for in_place in (False, True) if has_in_place else (False,):
                req, set_input, result, want = make(comm, n, root, in_place)
                assert_all(comm, req.algorithm in ("shan", "release_gather"), req.algorithm)
                bad = []
                for k in range(STARTS):
                    expected = want(k)
                    set_input(k)
                    run(req, k, me, p)
                    if expected is not None and not np.array_equal(result(), expected):
                        bad.append(k)
                req.free()
                assert_all(comm, not bad, f"{name} n={n} root={root} in_place={in_place}: {bad}")


def test_single_copy_allreduce_on_two_ranks(comm):
    """allreduce_init(single_copy=True) on a node of two ranks: the run reads
    the peer's input once (one intra message of the vector's bytes, where the
    deposits move one per rank), chunks of 16 KiB and of 256 KiB and a short
    one, a non-commutative op in rank order, the same bits on both ranks;
    counts that differ: an error at _init on both ranks. reduce_init alike
    at both roots (predefined ops: the root's statistics, one read where its
    deposit counts two)."""
    need_single_copy(comm)
    if comm.size != 2:
        pytest.skip("a node of two ranks")
    for n in (4100, (1 << 20) // 8 + 5):
        send, recv = np.zeros(n), np.zeros(n)
        req = shancoll.allreduce_init(comm, send, recv, lambda a, b: 2 * a + b,
                                      algorithm="shan", single_copy=True)  # fmt: skip
        for k in range(STARTS):
            send[:] = data(n, k, comm.rank)
            run(req, k, comm.rank, 2)
            both = comm.allgather(send.copy())
            st = shancoll.last_stats(comm)
            assert_all(comm, np.array_equal(recv, 2 * both[0] + both[1]), f"n={n} run {k}")
            assert_all(comm, (st.intra_messages, st.intra_bytes) == (1, 8 * n), f"{st}")
        req.free()
        for root in (0, 1):
            req = shancoll.reduce_init(comm, send, recv, MPI.SUM, root,
                                       algorithm="release_gather", single_copy=True)  # fmt: skip
            for k in range(STARTS):
                send[:], recv[:] = data(n, k, comm.rank), -1
                run(req, k, comm.rank, 2)
                both = comm.allgather(send.copy())
                st = shancoll.last_stats(comm)
                ok = comm.rank != root or np.array_equal(recv, both[0] + both[1])
                assert_all(comm, ok, f"reduce root={root} n={n} run {k}")
                one_read = (st.intra_messages, st.intra_bytes) == (1, 8 * n)
                assert_all(comm, comm.rank != root or one_read, f"reduce root={root}: {st}")
            req.free()
    with pytest.raises(ValueError, match="count: local ranks 0 and 1"):
        m = 5000 + comm.rank
        shancoll.allreduce_init(comm, np.zeros(m), np.zeros(m), single_copy=True, algorithm="shan")
    comm.Barrier()  # the communicator stays usable


def test_single_copy_when_asked_comes_before_the_deposit(comm):
    """single_copy=True (or a rule's single_copy=1) on a bcast_init of 64 KiB
    and an allgather_init of 16 KiB per rank, both within the deposits'
    bounds: the runs copy straight between the ranks' buffers (the root of
    the bcast moves nothing itself, an allgather takes p - 1 blocks, where
    the deposits count p - 1 and p), and equal mpi4py's; without the option
    the deposits still run there."""
    need_single_copy(comm)
    p, me = comm.size, comm.rank
    n = 64 * 1024 // 8
    for asked, root_moves, gathers in ((True, 0, p - 1), (False, p - 1, p)):
        buf = np.zeros(n)
        opt = {"single_copy": True} if asked else {}
        req = shancoll.bcast_init(comm, buf, 0, algorithm="release_gather", **opt)
        for k in range(3):
            buf[:] = data(n, k, 0) if me == 0 else -1
            run(req, k, me, p)
            st = shancoll.last_stats(comm)
            assert_all(comm, np.array_equal(buf, data(n, k, 0)), f"bcast asked={asked} run {k}")
            moved = me != 0 or st.intra_messages == root_moves
            assert_all(comm, moved, f"bcast asked={asked}: the root's {st}")
        req.free()
        m = 16 * 1024 // 8
        send, recv = np.zeros(m), np.zeros(m * p)
        req = shancoll.allgather_init(comm, send, recv, algorithm="shan", **opt)
        for k in range(3):
            send[:] = data(m, k, me)
            run(req, k, me, p)
            st = shancoll.last_stats(comm)
            want = np.concatenate([data(m, k, r) for r in range(p)])
            assert_all(comm, np.array_equal(recv, want), f"allgather asked={asked} run {k}")
            assert_all(comm, st.intra_messages == gathers, f"allgather asked={asked}: {st}")
        req.free()


def test_single_copy_v_forms_against_mpi4py(comm):
    """gatherv, scatterv, allgatherv and alltoallv with irregular counts (one
    rank's none, others past a chunk) and gaps between the blocks: every run
    equals mpi4py's, the gaps untouched."""
    need_single_copy(comm)
    p, me = comm.size, comm.rank
    counts = [(0 if r == 1 else CHUNK + 7 * r + 3) for r in range(p)]
    displs = [sum(counts[:r]) + 5 * r for r in range(p)]
    extent = displs[-1] + counts[-1] + 5
    for root in range(p):
        recv = np.zeros(extent)
        send = np.zeros(counts[me])
        req = shancoll.gatherv_init(
            comm, send, [recv, (counts, displs), MPI.DOUBLE], root, algorithm="shan"
        )
        for k in range(STARTS):
            send[:], recv[:] = data(counts[me], k, me), -1
            want = np.full(extent, -1.0)
            comm.Gatherv(data(counts[me], k, me), [want, (counts, displs), MPI.DOUBLE], root)
            run(req, k, me, p)
            assert_all(comm, me != root or np.array_equal(recv, want), f"gatherv {root} {k}")
        req.free()
        src, mine = np.zeros(extent), np.zeros(counts[me])
        req = shancoll.scatterv_init(
            comm, [src, (counts, displs), MPI.DOUBLE], mine, root, algorithm="shan"
        )
        for k in range(STARTS):
            src[:], mine[:] = data(extent, k, root), -1
            want = np.zeros(counts[me])
            comm.Scatterv([data(extent, k, root), (counts, displs), MPI.DOUBLE], want, root)
            run(req, k, me, p)
            assert_all(comm, np.array_equal(mine, want), f"scatterv {root} {k}")
        req.free()
    recv, send = np.zeros(extent), np.zeros(counts[me])
    req = shancoll.allgatherv_init(
        comm, send, [recv, (counts, displs), MPI.DOUBLE], algorithm="shan"
    )
    for k in range(STARTS):
        send[:], recv[:] = data(counts[me], k, me), -1
        want = np.full(extent, -1.0)
        comm.Allgatherv(data(counts[me], k, me), [want, (counts, displs), MPI.DOUBLE])
        run(req, k, me, p)
        assert_all(comm, np.array_equal(recv, want), f"allgatherv {k}")
    req.free()
    # alltoallv: rank r sends (CHUNK + r + j) doubles to rank j, with gaps
    sc = [CHUNK + me + j for j in range(p)]
    rc = [CHUNK + j + me for j in range(p)]
    sd = [sum(sc[:j]) + 3 * j for j in range(p)]
    rd = [sum(rc[:j]) + 2 * j for j in range(p)]
    sbuf, rbuf = np.zeros(sd[-1] + sc[-1]), np.zeros(rd[-1] + rc[-1] + 2)
    req = shancoll.alltoallv_init(
        comm, [sbuf, (sc, sd), MPI.DOUBLE], [rbuf, (rc, rd), MPI.DOUBLE], algorithm="shan"
    )
    for k in range(STARTS):
        sbuf[:], rbuf[:] = data(sbuf.size, k, me), -1
        want = np.full(rbuf.size, -1.0)
        comm.Alltoallv([data(sbuf.size, k, me), (sc, sd), MPI.DOUBLE], [want, (rc, rd), MPI.DOUBLE])
        run(req, k, me, p)
        assert_all(comm, np.array_equal(rbuf, want), f"alltoallv {k}")
    req.free()


@pytest.mark.parametrize("name", list(CASES))
def test_single_copy_progress_while_a_rank_blocks(comm, name):
    """One rank starts, then sits in a blocking receive that its peer sends
    only after its own wait has returned: the peers must copy that rank's
    blocks themselves (its test never runs before it is released). Every
    rank in turn, every root: no hang, the right answer."""
    need_single_copy(comm)
    make, _ = CASES[name]
    p, me = comm.size, comm.rank
    n = 3 * CHUNK + 5
    for root in range(p) if name in ("bcast", "gather", "scatter", "reduce") else (0,):
        req, set_input, result, want = make(comm, n, root, False)
        for blocked in range(p):
            releaser = (blocked + 1) % p
            expected = want(blocked)
            set_input(blocked)
            req.start()
            if me == blocked:
                comm.Recv(np.zeros(1), source=releaser, tag=7)
            try:
                req.wait(timeout=TIMEOUT / 3)  # a CollectiveTimeout fails the test
            finally:  # release the blocked rank even then: a failure, not a hang
                if me == releaser:
                    comm.Send(np.zeros(1), dest=blocked, tag=7)
            ok = expected is None or np.array_equal(result(), expected)
            assert_all(comm, ok, f"{name} root={root} blocked={blocked}")
        req.free()


def test_single_copy_counts_that_differ(comm):
    """A gather whose one rank sends more than the root expects, an
    allgather whose one rank's count differs (past the deposits' bounds):
    ValueError on every rank at _init naming the count, never a wrong answer
    or a hang."""
    need_single_copy(comm)
    p, me = comm.size, comm.rank
    n = CHUNK + (1 if me == p - 1 else 0)
    with pytest.raises(ValueError, match="recvcount: local rank"):
        shancoll.gather_init(comm, np.zeros(n), np.zeros(CHUNK * p), 0, algorithm="shan")
    n = (1 << 20) // 8 + 1 + (1 if me == p - 1 else 0)  # past the deposit's 1 MiB
    with pytest.raises(ValueError, match="recvcount: local rank"):
        shancoll.allgather_init(comm, np.zeros(n), np.zeros(n * p), algorithm="shan")
    comm.Barrier()  # the communicator stays usable
    req = shancoll.allgather_init(comm, np.ones(CHUNK), np.zeros(CHUNK * p), algorithm="shan")
    run(req, 1, me, p)
    req.free()


def test_single_copy_refused_where_it_cannot_run(comm):
    """alltoall in place past 4 KiB (a reader could read a block already
    overwritten), single_copy=False and virtual nodes: refused by name, with
    the reason."""
    need_single_copy(comm)
    p = comm.size
    big = 4096 // 8 + 1
    with pytest.raises(ValueError, match=r"or larger by single copy \(not in place\)"):
        shancoll.alltoall_init(comm, MPI.IN_PLACE, np.zeros(big * p), algorithm="shan")
    with pytest.raises(ValueError, match="of blocks of at most 16 KiB, or larger by single copy"):
        shancoll.gather_init(comm, np.zeros(CHUNK), np.zeros(CHUNK * p), 0, algorithm="shan",
                             single_copy=False)  # fmt: skip
    with pytest.raises(ValueError, match="as a request is the persistent scatter .*on one node"):
        shancoll.scatter_init(comm, np.zeros(CHUNK * p), np.zeros(CHUNK), 0, algorithm="shan",
                              ranks_per_node=1)  # fmt: skip


@pytest.mark.parametrize("name", ["bcast", "gather"])
def test_single_copy_missing_rank_times_out(comm, name):
    """A rank missing from a run: the root, which exchanges a block with it,
    raises CollectiveTimeout within the wait's timeout (nobody copies a block
    before both of its ranks have started), the run stays active, and the
    late start completes it with the right answer."""
    need_single_copy(comm)
    c = comm.Dup()
    make, _ = CASES[name]
    req, set_input, result, want = make(c, 3 * CHUNK + 5, 0, False)
    absent = c.size - 1
    expected = want(1)
    set_input(1)
    outcome = None
    if c.rank != absent:
        outcome = start_and_time_out(req)
    outcomes = c.allgather(outcome)
    if c.rank == absent:
        req.start()
    req.wait(timeout=TIMEOUT)
    ok = expected is None or np.array_equal(result(), expected)
    req.free()
    # the root (rank 0) exchanges a block with the absent rank; the other
    # ranks' blocks are the root's alone, and may complete
    late = outcomes[0] != "timeout"
    assert_all(c, not late and ok, f"{name}: rank {absent} missing: root {outcomes[0]}, ok={ok}")
    c.Free()
