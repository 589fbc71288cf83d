"""The persistent barrier on the inline lines, and the persistent deposit
engines (allreduce `shan`, bcast `release_gather` past 56 bytes on one node;
alltoall, gather, scatter, reduce_scatter_block, scan and exscan `shan` at
every size to their bounds: coll/persistent_deposit.h), which the PMPI
library routes by name, against
mpi4py's own collectives: sizes across the chunk boundaries, every root, the
inputs changed between starts, one rank sleeping before each start (the
bcast root's area reuse rule), in place, a count that differs, and the names
refused on virtual nodes.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest
from _mpi_util import ENGINES_TABLE, REDUCED, assert_all, rule_table, start_and_time_out
from mpi4py import MPI

import shancoll

TIMEOUT = 30.0
CHUNK = 32 * 1024 // 8  # doubles per deposit chunk (shm/deposit_areas.h)
SIZES = (8, CHUNK, 3 * CHUNK + 5) if REDUCED else (8, 100, CHUNK - 1, CHUNK, 3 * CHUNK + 5)
STARTS = 6 if REDUCED else 12


def one_node(comm, **kw) -> bool:
    return shancoll.topology(comm, **kw)["node_count"] == 1 and comm.size > 1


def data(n, k, rank):
    return np.arange(n, dtype=float) * (rank + 1) + 10 * k + rank


def set_input(send, recv, x, in_place):
    """A run's input: in recvbuf in place, else in sendbuf (recvbuf poisoned)."""
    if in_place:
        recv[:] = x
    else:
        send[:], recv[:] = x, -1


def run_error(req) -> str | None:
    """One run of `req`: the ValueError it raised, else None."""
    try:
        req.start()
        req.wait(timeout=TIMEOUT)
    except ValueError as e:
        return str(e)
    return None


def test_deposit_allreduce_against_mpi4py(comm):
    """shan by name past 56 bytes: every run equals mpi4py's Allreduce (the
    same bits on every rank), in place too; auto does not choose it."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    for n in SIZES:
        for in_place in (False, True):
            send, recv = np.zeros(n), np.zeros(n)
            req = shancoll.allreduce_init(comm, MPI.IN_PLACE if in_place else send, recv,
                                          algorithm="shan")  # fmt: skip
            assert_all(comm, req.algorithm == "shan", f"n={n}: {req.algorithm}")
            for k in range(STARTS):
                mine = data(n, k, comm.rank)
                set_input(send, recv, mine, in_place)
                want = np.zeros(n)
                comm.Allreduce(mine, want, MPI.SUM)
                req.start()
                req.wait(timeout=TIMEOUT)
                assert_all(comm, np.array_equal(recv, want), f"n={n} in_place={in_place} run {k}")
            req.free()
    with rule_table("builtin"):  # no allreduce_init row: the inline engine alone
        auto = shancoll.allreduce_init(comm, np.zeros(100), np.zeros(100))
        assert_all(comm, auto.algorithm != "shan", f"auto at 800 bytes: {auto.algorithm}")
        auto.free()
    with rule_table(ENGINES_TABLE):  # a row naming it: the deposit
        auto = shancoll.allreduce_init(comm, np.zeros(100), np.zeros(100))
        assert_all(comm, auto.algorithm == "shan", f"auto by the table: {auto.algorithm}")
        auto.free()


@pytest.mark.parametrize("sleeper", ["root", "reader", "none"])
def test_deposit_bcast_against_mpi4py(comm, sleeper):
    """release_gather by name past 56 bytes, every root, one rank late
    before each start (a root that runs ahead must wait for its readers
    before it writes an area again): every run equals mpi4py's Bcast."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    for root in range(comm.size):
        late = {"root": root, "reader": (root + 1) % comm.size, "none": -1}[sleeper]
        for n in SIZES[-2:] if sleeper != "none" else SIZES:
            buf = np.zeros(n)
            req = shancoll.bcast_init(
                comm, buf, root, algorithm="release_gather", single_copy=False
            )  # from 32 KiB: the single copy
            assert_all(comm, req.algorithm == "release_gather", f"n={n}: {req.algorithm}")
            bad = []
            for k in range(STARTS):
                want = data(n, k, root) if comm.rank == root else np.zeros(n)
                comm.Bcast(want, root)
                buf[:] = data(n, k, root) if comm.rank == root else -1
                if comm.rank == late:
                    time.sleep(0.002)
                req.start()
                req.wait(timeout=TIMEOUT)
                if not np.array_equal(buf, want):
                    bad.append(k)
            req.free()
            assert_all(comm, not bad, f"bcast n={n} root={root} late={late}: wrong runs {bad}")


def test_deposit_counts_that_differ_are_refused(comm):
    """A reader whose count differs from the root's deposit: ArgumentError
    naming the count, not a silent wrong answer."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    buf = np.zeros(CHUNK + 3 if comm.rank == 0 else CHUNK + 2)
    req = shancoll.bcast_init(
        comm, buf, 0, algorithm="release_gather", timeout=TIMEOUT, single_copy=False
    )  # the deposit, not the single copy
    error = run_error(req)
    want = f"count: rank 0 contributes {8 * (CHUNK + 3)} bytes"
    if comm.rank == 0:
        assert_all(comm, error is None, f"root: {error}")
        req.free()
    else:
        assert_all(comm, error is not None and want in error, f"reader: {error}")


def test_persistent_barrier(comm):
    """The inline barrier (auto on one node): no rank's wait ends before rank
    0's start (rank 0 sleeping 5 ms before each; time.monotonic is the
    node's one CLOCK_MONOTONIC), many runs."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    req = shancoll.barrier_init(comm)
    assert_all(comm, req.algorithm == "release_gather", f"barrier: {req.algorithm}")
    early = []
    for k in range(STARTS):
        comm.Barrier()
        if comm.rank == 0:
            time.sleep(0.005)
        started = time.monotonic()
        req.start()
        req.wait(timeout=TIMEOUT)
        ended = time.monotonic()
        if ended < comm.bcast(started, root=0):
            early.append(k)
    req.free()
    assert_all(comm, not early, f"barrier ended before rank 0 started: runs {early}")


@pytest.mark.parametrize("name", ["allreduce", "bcast", "barrier"])
def test_names_refused_on_virtual_nodes(comm, name):
    """Several nodes (virtual ones of one rank): the names are refused."""
    big = np.zeros(100)
    calls = {
        "allreduce": lambda: shancoll.allreduce_init(comm, big, np.zeros(100), algorithm="shan",
                                                     ranks_per_node=1),
        "bcast": lambda: shancoll.bcast_init(comm, big, 0, algorithm="release_gather",
                                             ranks_per_node=1),
        "barrier": lambda: shancoll.barrier_init(comm, algorithm="release_gather",
                                                 ranks_per_node=1),
    }  # fmt: skip
    with pytest.raises(ValueError, match=f"as a request is the persistent {name} on one node"):
        calls[name]()


def test_deposit_reduce_and_allgather_against_mpi4py(comm):
    """release_gather (reduce, every root, in place at the root) and shan
    (allgather, in place too) by name past 56 bytes: every run equals mpi4py's;
    an allgather block past 1 MiB is refused without single copy
    (measured slower there)."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    p, me = comm.size, comm.rank
    n = 3 * CHUNK + 5
    for root in range(p):
        for in_place in (False, True):
            send, recv = np.zeros(n, np.int64), np.zeros(n, np.int64)
            mine = MPI.IN_PLACE if in_place and me == root else send
            req = shancoll.reduce_init(comm, mine, recv, MPI.SUM, root, algorithm="release_gather")
            for k in range(STARTS):
                x = data(n, k, me).astype(np.int64)
                want = np.zeros(n, np.int64)
                comm.Reduce(x, want, MPI.SUM, root)
                if in_place and me == root:
                    recv[:] = x
                else:
                    send[:], recv[:] = x, -1
                req.start()
                req.wait(timeout=TIMEOUT)
                ok = me != root or np.array_equal(recv, want)
                assert_all(comm, ok, f"reduce root={root} in_place={in_place} run {k}")
            req.free()
    for in_place in (False, True):
        send, recv = np.zeros(n), np.zeros(n * p)
        req = shancoll.allgather_init(comm, MPI.IN_PLACE if in_place else send, recv,
                                      algorithm="shan")  # fmt: skip
        for k in range(STARTS):
            want = np.zeros(n * p)
            comm.Allgather(data(n, k, me), want)
            recv[:] = -1
            if in_place:
                recv[me * n : (me + 1) * n] = data(n, k, me)
            else:
                send[:] = data(n, k, me)
            req.start()
            req.wait(timeout=TIMEOUT)
            assert_all(comm, np.array_equal(recv, want), f"allgather in_place={in_place} run {k}")
        req.free()
    big = (1 << 20) // 8 + 1
    with pytest.raises(ValueError, match="of at most 1 MiB per rank"):
        shancoll.allgather_init(
            comm, np.zeros(big), np.zeros(big * p), algorithm="shan", single_copy=False
        )


def test_deposit_missing_rank_times_out(comm):
    """A rank missing from a deposit allreduce's run: the others raise
    CollectiveTimeout within the wait's timeout, the run stays active, and
    the late start completes it with the right answer."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    c, n = comm.Dup(), CHUNK + 7
    absent = c.size - 1
    send, recv = np.zeros(n), np.zeros(n)
    req = shancoll.allreduce_init(c, send, recv, algorithm="shan", timeout=TIMEOUT)
    outcome = None
    send[:] = data(n, 1, c.rank)
    if c.rank != absent:
        outcome = start_and_time_out(req)
    outcomes = c.allgather(outcome)
    if c.rank == absent:
        req.start()
    req.wait(timeout=TIMEOUT)
    want = sum(data(n, 1, q) for q in range(c.size))
    ok = np.array_equal(recv, want)
    req.free()
    bad = {r: o for r, o in enumerate(outcomes) if r != absent and o != "timeout"}
    assert_all(c, not bad and ok, f"rank {absent} missing: {bad}, result ok={ok}")
    c.Free()


def run_late(req, k, me, p):
    """Run k of `req`, one rank sleeping before every third start: a rank
    that runs ahead must wait for its readers before it writes an area
    again."""
    if k % 3 == 2 and me == (k // 3) % p:
        time.sleep(0.002)
    req.start()
    req.wait(timeout=TIMEOUT)


def test_deposit_alltoall_against_mpi4py(comm):
    """shan (alltoall) by name: blocks of none, one, 100 and 512 doubles (4
    KiB, the largest it takes), in place and not, the blocks changed between
    starts and one rank late before every third start: every run equals
    mpi4py's Alltoall. A block past 4 KiB (without single copy) and virtual
    nodes are refused, a
    block size that differs between ranks is an error naming recvcount,
    never a wrong answer."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    p, me = comm.size, comm.rank
    for n in (0, 1, 100, 512) if not REDUCED else (1, 512):
        for in_place in (False, True):
            send, recv = np.zeros(n * p), np.zeros(n * p)
            req = shancoll.alltoall_init(comm, MPI.IN_PLACE if in_place else send, recv,
                                         algorithm="shan", timeout=TIMEOUT)  # fmt: skip
            assert_all(comm, req.algorithm == "shan", f"alltoall_init: {req.algorithm}")
            for k in range(STARTS):
                x = data(n * p, k, me)
                want = np.zeros(n * p)
                comm.Alltoall(x, want)
                set_input(send, recv, x, in_place)
                run_late(req, k, me, p)
                assert_all(comm, np.array_equal(recv, want),
                           f"alltoall n={n} in_place={in_place} run {k}")  # fmt: skip
            req.free()
    big = 4096 // 8 + 1
    with pytest.raises(ValueError, match="of blocks of at most 4 KiB"):
        shancoll.alltoall_init(
            comm, np.zeros(big * p), np.zeros(big * p), algorithm="shan", single_copy=False
        )
    with pytest.raises(ValueError, match="as a request is the persistent alltoall .* on one node"):
        shancoll.alltoall_init(comm, np.zeros(p), np.zeros(p), algorithm="shan", ranks_per_node=1)
    n = 100 + (1 if me == 0 else 0)
    req = shancoll.alltoall_init(comm, np.ones(n * p), np.zeros(n * p), algorithm="shan",
                                 timeout=TIMEOUT)  # fmt: skip
    error = run_error(req)
    ok = error is not None and "recvcount: local rank" in error and "sends" in error
    assert_all(comm, ok, f"differing blocks: {error!r}")
    with contextlib.suppress(Exception):
        req.free()


@pytest.mark.parametrize("name", ["gather", "scatter"])
def test_deposit_gather_scatter_against_mpi4py(comm, name):
    """shan (gather, scatter) by name: blocks of none, one and 100 doubles
    and the largest each takes (16 KiB, 2 KiB), every root, in place at the
    root and not, the blocks changed between starts and one rank late before
    every third start: every run equals mpi4py's. A block past the bound
    (without single copy) and virtual nodes are refused, a block that differs
    between ranks is an error naming recvcount, never a wrong answer."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    p, me = comm.size, comm.rank
    init = shancoll.gather_init if name == "gather" else shancoll.scatter_init
    largest = (16 if name == "gather" else 2) * 1024 // 8
    for n in (1, largest) if REDUCED else (0, 1, 100, largest):
        for root in range(p):
            for in_place in (False, True):
                if in_place and me != root:
                    mine, whole = np.zeros(n), np.zeros(0)
                else:
                    mine, whole = np.zeros(n), np.zeros(n * p)
                ip = in_place and me == root
                if name == "gather":
                    req = init(comm, MPI.IN_PLACE if ip else mine, whole, root, algorithm="shan",
                               timeout=TIMEOUT)  # fmt: skip
                else:
                    req = init(comm, whole, MPI.IN_PLACE if ip else mine, root, algorithm="shan",
                               timeout=TIMEOUT)  # fmt: skip
                assert_all(comm, req.algorithm == "shan", f"{name}_init: {req.algorithm}")
                bad = []
                for k in range(STARTS):
                    x = data(n * p, k, me)
                    want = np.zeros(n * p)
                    if name == "gather":
                        comm.Gather(x[:n], want, root)
                        mine[:], whole[:] = x[:n], -1
                        if ip:
                            whole[me * n : (me + 1) * n] = x[:n]
                    else:
                        comm.Scatter(x, want[:n], root)
                        whole[:], mine[:] = x if me == root else whole, -1
                    run_late(req, k, me, p)
                    if name == "gather":
                        ok = me != root or np.array_equal(whole, want)
                    else:
                        got = whole[me * n : (me + 1) * n] if ip else mine
                        ok = np.array_equal(got, want[:n])
                    if not ok:
                        bad.append(k)
                req.free()
                assert_all(comm, not bad, f"{name} n={n} root={root} in_place={in_place}: {bad}")
    big = largest + 1
    with pytest.raises(ValueError, match=f"of blocks of at most {largest * 8 // 1024} KiB"):
        if name == "gather":
            init(comm, np.zeros(big), np.zeros(big * p), 0, algorithm="shan", single_copy=False)
        else:
            init(comm, np.zeros(big * p), np.zeros(big), 0, algorithm="shan", single_copy=False)
    with pytest.raises(ValueError, match=f"as a request is the persistent {name} .*on one node"):
        if name == "gather":
            init(comm, np.zeros(1), np.zeros(p), 0, algorithm="shan", ranks_per_node=1)
        else:
            init(comm, np.zeros(p), np.zeros(1), 0, algorithm="shan", ranks_per_node=1)
    n = 100 + (1 if me == 1 else 0)  # rank 1's block differs from the root's
    if name == "gather":
        req = init(comm, np.ones(n), np.zeros(100 * p), 0, algorithm="shan", timeout=TIMEOUT)
    else:
        req = init(comm, np.ones(100 * p), np.zeros(n), 0, algorithm="shan", timeout=TIMEOUT)
    error = run_error(req)
    reader = 0 if name == "gather" else 1  # who reads the deposit that differs
    said = "recvcount: rank" if name == "gather" else "recvcount: the root sends"
    ok = me != reader or (error is not None and said in error)
    assert_all(comm, ok, f"{name}, differing blocks: {error!r}")
    with contextlib.suppress(Exception):
        req.free()


@pytest.mark.parametrize("name", ["reduce_scatter_block", "scan", "exscan"])
def test_deposit_reductions_against_mpi4py(comm, name):
    """shan (reduce_scatter_block, scan, exscan) by name: vectors of one
    element, 100 and the largest each takes (blocks of 8 KiB, 16 KiB); in
    place and not, MPI.SUM on int64 and MPI.MAX on doubles, the inputs
    changed between starts and one rank late before every third start:
    every run equals mpi4py's (exscan: rank 0's result is undefined and not
    compared). Past its bound, user ops and virtual nodes the name is
    refused."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    p, me = comm.size, comm.rank
    block = name == "reduce_scatter_block"
    init = getattr(shancoll, f"{name}_init")
    largest = (8 if block else 16) * 1024 // 8
    sizes = (1, 100, largest)
    for n in sizes:
        for dtype, op in ((np.int64, MPI.SUM), (float, MPI.MAX)):
            for in_place in (False, True):
                total = n * p if block else n
                send, recv = np.zeros(total, dtype), np.zeros(total, dtype)
                req = init(comm, MPI.IN_PLACE if in_place else send, recv if in_place else
                           recv[:n], op, algorithm="shan", timeout=TIMEOUT)  # fmt: skip
                assert_all(comm, req.algorithm == "shan", f"{name}_init: {req.algorithm}")
                bad = []
                for k in range(STARTS):
                    x = data(total, k, me).astype(dtype)
                    want = np.zeros(n, dtype)
                    if block:
                        comm.Reduce_scatter_block(x, want, op)
                    elif name == "scan":
                        comm.Scan(x, want, op)
                    else:
                        comm.Exscan(x, want, op)
                    set_input(send, recv, x, in_place)
                    run_late(req, k, me, p)
                    if not (name == "exscan" and me == 0) and not np.array_equal(recv[:n], want):
                        bad.append(k)
                req.free()
                assert_all(comm, not bad, f"{name} n={n} {op} in_place={in_place}: {bad}")
    big = largest + 1
    if block:
        with pytest.raises(ValueError, match="of a predefined op and blocks of at most 8 KiB"):
            init(comm, np.zeros(big * p), np.zeros(big), MPI.SUM, algorithm="shan")
    else:
        with pytest.raises(ValueError, match="of a predefined op and at most 16 KiB"):
            init(comm, np.zeros(big), np.zeros(big), MPI.SUM, algorithm="shan")
    user = MPI.Op.Create(lambda a, b, t: None, commute=True)
    try:
        with pytest.raises(ValueError, match=f"as a request is the persistent {name} of a"):
            init(comm, np.zeros(p), np.zeros(p if not block else 1), user, algorithm="shan")
    finally:
        user.Free()
    with pytest.raises(ValueError, match=f"as a request is the persistent {name} .* on one node"):
        init(comm, np.zeros(p), np.zeros(p if not block else 1), MPI.SUM, algorithm="shan",
             ranks_per_node=1)  # fmt: skip


def test_deposit_gatherv_against_mpi4py(comm):
    """shan (gatherv) by name: counts that differ by rank (one zero, one the
    largest it takes, 16 KiB), displacements with gaps, every root, in place
    at the root and not, one rank late before every third start: every run
    equals mpi4py's Gatherv (and the gaps stay as they were). A block past
    16 KiB is refused without single copy."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    p, me = comm.size, comm.rank
    counts = [(7 * r + 3) % 50 for r in range(p)]
    counts[0], counts[-1] = 0, 16 * 1024 // 8
    displs, at = [], 3
    for c in counts:
        displs.append(at)
        at += c + 3
    for root in range(p):
        for in_place in (False, True):
            mine, whole = np.zeros(counts[me]), np.zeros(at)
            ip = in_place and me == root
            req = shancoll.gatherv_init(comm, MPI.IN_PLACE if ip else mine,
                                        [whole, counts, displs, MPI.DOUBLE], root,
                                        algorithm="shan", timeout=TIMEOUT)  # fmt: skip
            assert_all(comm, req.algorithm == "shan", f"gatherv_init: {req.algorithm}")
            bad = []
            for k in range(STARTS):
                x = data(counts[me], k, me)
                want = np.full(at, -1.0)
                comm.Gatherv(x, [want, counts, displs, MPI.DOUBLE], root)
                mine[:], whole[:] = x, -1
                if ip:
                    whole[displs[me] : displs[me] + counts[me]] = x
                run_late(req, k, me, p)
                if me == root and not np.array_equal(whole, want):
                    bad.append(k)
            req.free()
            assert_all(comm, not bad, f"gatherv root={root} in_place={in_place}: {bad}")
    big = [16 * 1024 // 8 + 1] * p
    with pytest.raises(ValueError, match="of blocks of at most 16 KiB"):
        shancoll.gatherv_init(comm, np.zeros(big[me]), [np.zeros(sum(big)), big], 0,
                              algorithm="shan", single_copy=False)  # fmt: skip


def test_deposit_reduce_scatter_against_mpi4py(comm):
    """shan (reduce_scatter) by name: counts that differ by rank (one zero,
    one the largest it takes, 8 KiB), in place and not, MPI.SUM on int64, one
    rank late before every third start: every run equals mpi4py's
    Reduce_scatter. A block past 8 KiB is refused."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    p, me = comm.size, comm.rank
    counts = [(5 * r + 2) % 40 for r in range(p)]
    counts[0], counts[-1] = 0, 8 * 1024 // 8
    total, mine = sum(counts), counts[me]
    for in_place in (False, True):
        send, recv = np.zeros(total, np.int64), np.zeros(total if in_place else mine, np.int64)
        req = shancoll.reduce_scatter_init(comm, MPI.IN_PLACE if in_place else send, recv,
                                           counts, MPI.SUM, algorithm="shan",
                                           timeout=TIMEOUT)  # fmt: skip
        assert_all(comm, req.algorithm == "shan", f"reduce_scatter_init: {req.algorithm}")
        bad = []
        for k in range(STARTS):
            x = data(total, k, me).astype(np.int64)
            want = np.zeros(mine, np.int64)
            comm.Reduce_scatter(x, want, counts, MPI.SUM)
            set_input(send, recv, x, in_place)
            run_late(req, k, me, p)
            if not np.array_equal(recv[:mine], want):
                bad.append(k)
        req.free()
        assert_all(comm, not bad, f"reduce_scatter in_place={in_place}: {bad}")
    big = [8 * 1024 // 8 + 1] * p
    with pytest.raises(ValueError, match="of a predefined op and blocks of at most 8 KiB"):
        shancoll.reduce_scatter_init(comm, np.zeros(sum(big)), np.zeros(big[me]), big, MPI.SUM,
                                     algorithm="shan")  # fmt: skip


def test_deposit_alltoallv_against_mpi4py(comm):
    """shan (alltoallv) by name: counts that differ by pair (some zero, one
    the largest it takes, 4 KiB), displacements with gaps and out of rank
    order on the send side, in place and not, one rank late before every
    third start: every run equals mpi4py's Alltoallv (the gaps of recvbuf
    stay as they were). A block past 4 KiB is refused without single copy;
    counts that differ
    between sender and receiver are an error naming recvcounts."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    p, me = comm.size, comm.rank

    def count(src, dst):
        return 512 if (src, dst) == (0, p - 1) else (3 * src + 5 * dst) % 7

    scounts = [count(me, d) for d in range(p)]
    rcounts = [count(s, me) for s in range(p)]
    sdispls, at = [0] * p, 2
    for d in reversed(range(p)):  # the send blocks in reverse rank order
        sdispls[d], at = at, at + scounts[d] + 1
    send_len = at
    rdispls, at = [], 1
    for c in rcounts:
        rdispls.append(at)
        at += c + 2
    recv_len = at
    for in_place in (False, True):
        if in_place and scounts != rcounts:
            continue  # MPI: in place takes the receive layout for both sides
        send, recv = np.zeros(send_len), np.zeros(recv_len)
        sspec = MPI.IN_PLACE if in_place else [send, scounts, sdispls, MPI.DOUBLE]
        req = shancoll.alltoallv_init(comm, sspec, [recv, rcounts, rdispls, MPI.DOUBLE],
                                      algorithm="shan", timeout=TIMEOUT)  # fmt: skip
        assert_all(comm, req.algorithm == "shan", f"alltoallv_init: {req.algorithm}")
        bad = []
        for k in range(STARTS):
            x = data(send_len, k, me)
            want = np.full(recv_len, -1.0)
            comm.Alltoallv([x, scounts, sdispls, MPI.DOUBLE], [want, rcounts, rdispls, MPI.DOUBLE])
            send[:], recv[:] = x, -1
            run_late(req, k, me, p)
            if not np.array_equal(recv, want):
                bad.append(k)
        req.free()
        assert_all(comm, not bad, f"alltoallv in_place={in_place}: {bad}")
    big = [513] * p
    with pytest.raises(ValueError, match="of blocks of at most 4 KiB"):
        shancoll.alltoallv_init(comm, [np.zeros(513 * p), big], [np.zeros(513 * p), big],
                                algorithm="shan", single_copy=False)  # fmt: skip
    sent = 3 if me == 0 else 2  # rank 0 sends 3 to each, every rank expects 2
    req = shancoll.alltoallv_init(comm, [np.zeros(sent * p), [sent] * p],
                                  [np.zeros(2 * p), [2] * p], algorithm="shan",
                                  timeout=TIMEOUT)  # fmt: skip
    error = run_error(req)
    ok = me == 0 or (error is not None and "recvcounts: local rank 0 sends 24 bytes" in error)
    assert_all(comm, ok, f"alltoallv, differing counts: {error!r}")
    with contextlib.suppress(Exception):
        req.free()


def test_deposit_scatterv_against_mpi4py(comm):
    """shan (scatterv) by name: counts that differ by rank (one zero, one the
    largest it takes, 2 KiB), displacements with gaps and out of rank order,
    every root, in place at the root and not, one rank late before every
    third start: every run equals mpi4py's Scatterv. A block past 2 KiB is
    refused without single copy; a rank expecting another count than the root sends it is an
    error naming recvcount."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    p, me = comm.size, comm.rank
    counts = [(3 * r + 4) % 9 for r in range(p)]
    counts[0], counts[-1] = 0, 2 * 1024 // 8
    displs, at = [0] * p, 5
    for r in reversed(range(p)):
        displs[r], at = at, at + counts[r] + 2
    for root in range(p):
        for in_place in (False, True):
            whole, mine = np.zeros(at), np.zeros(counts[me])
            ip = in_place and me == root
            req = shancoll.scatterv_init(comm, [whole, counts, displs, MPI.DOUBLE],
                                         MPI.IN_PLACE if ip else mine, root, algorithm="shan",
                                         timeout=TIMEOUT)  # fmt: skip
            assert_all(comm, req.algorithm == "shan", f"scatterv_init: {req.algorithm}")
            bad = []
            for k in range(STARTS):
                x = data(at, k, me)
                want = np.zeros(counts[me])
                comm.Scatterv([x, counts, displs, MPI.DOUBLE], want, root)
                whole[:], mine[:] = x, -1
                run_late(req, k, me, p)
                got = whole[displs[me] : displs[me] + counts[me]] if ip else mine
                if not np.array_equal(got, want):
                    bad.append(k)
            req.free()
            assert_all(comm, not bad, f"scatterv root={root} in_place={in_place}: {bad}")
    big = [2 * 1024 // 8 + 1] * p
    with pytest.raises(ValueError, match="of blocks of at most 2 KiB"):
        shancoll.scatterv_init(comm, [np.zeros(sum(big)), big], np.zeros(big[me]), 0,
                               algorithm="shan", single_copy=False)  # fmt: skip
    expects = 3 if me == p - 1 else 2  # the last rank expects more than the root sends
    req = shancoll.scatterv_init(comm, [np.zeros(2 * p), [2] * p], np.zeros(expects), 0,
                                 algorithm="shan", timeout=TIMEOUT)  # fmt: skip
    error = run_error(req)
    ok = me != p - 1 or (error is not None and "recvcount: the root sends 16 bytes" in error)
    assert_all(comm, ok, f"scatterv, differing counts: {error!r}")
    with contextlib.suppress(Exception):
        req.free()
