"""shancoll.reduce_scatter and reduce_scatter_block against mpi4py's
comm.Reduce_scatter / comm.Reduce_scatter_block.

Correctness data are small integers (in float and complex types too), so
every combine order gives the exact result and results compare bit for bit.
Non-commutative ops (a Python callable, MPI.Op.Create with commute=False)
must come out in rank order, as mpi4py's own call gives them, on every
algorithm that takes them (ring refuses them).

Run over 1-8 ranks by test_mpi_suites.py (SHANCOLL_RANKS_PER_NODE runs too:
virtual nodes with uneven last nodes), with ranks_per_node 1, 2 and 3 named
by the calls as well.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, make_counts, raises_all, run_all
from mpi4py import MPI
from test_mpi_allreduce import (
    PAIR,
    affine_data,
    compose_affine,
    equal,
    exact_data,
    two_rank_nodes,
    valid_pairs,
)
from test_mpi_scan import affine_op

import shancoll

WORLD = MPI.COMM_WORLD
ALGORITHMS = ["auto", *shancoll.algorithms("reduce_scatter")]
RANK_ORDER = ["auto", "shan", "pairwise", "mpi"]
LAYOUTS = [None, 1, 2, 3]  # None: SHANCOLL_RANKS_PER_NODE's (or physical)


def block_case(comm, failures, algorithm, op, dtype, n, in_place=False, **options) -> None:
    """reduce_scatter_block of n elements per rank against mpi4py's."""
    send = exact_data(dtype, n * comm.size, comm.rank)
    want = np.zeros(n, dtype)
    comm.Reduce_scatter_block(send, want, op)
    if in_place:
        out = send.copy()
        shancoll.reduce_scatter_block(comm, MPI.IN_PLACE, out, op, algorithm, **options)
        out = out[:n]
    else:
        out = np.zeros(n, dtype)
        shancoll.reduce_scatter_block(comm, send, out, op, algorithm, **options)
    if not equal(out, want):
        failures.append(f"block {algorithm} {op} {np.dtype(dtype)} n={n} in_place={in_place}")


def vector_case(comm, failures, algorithm, op, dtype, counts, in_place=False, **options) -> None:
    """reduce_scatter with these counts against mpi4py's."""
    send = exact_data(dtype, sum(counts), comm.rank)
    mine = counts[comm.rank]
    want = np.zeros(mine, dtype)
    comm.Reduce_scatter(send, want, counts, op)
    if in_place:
        out = send.copy()
        shancoll.reduce_scatter(comm, MPI.IN_PLACE, out, counts, op, algorithm, **options)
        out = out[:mine]
    else:
        out = np.zeros(mine, dtype)
        shancoll.reduce_scatter(comm, send, out, counts, op, algorithm, **options)
    if not equal(out, want):
        failures.append(f"{algorithm} {op} {np.dtype(dtype)} counts={counts} in_place={in_place}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_op_and_dtype_matches_mpi(comm, algorithm):
    failures: list[str] = []

    def body():
        for op, dtype in valid_pairs():
            for n in [1] if REDUCED else [1, 5]:
                block_case(comm, failures, algorithm, op, dtype, n)

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_counts_zero_uneven_large_and_in_place(comm, algorithm):
    failures: list[str] = []
    large = [] if REDUCED else [1 << 15]

    def body():
        for op, dtype in [(MPI.SUM, np.float64), (MPI.MAX, np.int32), (MPI.PROD, np.complex64)]:
            for n in [0, 1, 255, *large]:
                block_case(comm, failures, algorithm, op, dtype, n)
            for dist in ["regular", "decreasing", "broadcast", "random"]:
                vector_case(comm, failures, algorithm, op, dtype, make_counts(dist, comm.size, 7))
        for in_place in [False, True]:  # and an mpi4py spec with a datatype
            block_case(comm, failures, algorithm, MPI.SUM, np.int64, 33, in_place)
            counts = make_counts("random", comm.size, 20, seed=3)
            vector_case(comm, failures, algorithm, MPI.SUM, np.float32, counts, in_place)
        send = exact_data(np.float64, 3 * comm.size, comm.rank)
        want, out = np.zeros(3), np.zeros(3)
        comm.Reduce_scatter_block(send, want)
        shancoll.reduce_scatter_block(comm, [send, MPI.DOUBLE], [out, MPI.DOUBLE], MPI.SUM,
                                      algorithm)  # fmt: skip
        if not equal(out, want):
            failures.append("spec with a datatype")

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


def test_non_commutative_ops_in_rank_order(comm):
    created = MPI.Op.Create(affine_op, commute=False)
    failures = []

    def body():
        for n in [1, 9]:
            send = affine_data(n * comm.size, comm.rank)
            want = np.zeros(n, np.complex128)
            comm.Reduce_scatter_block(send, want, created)
            for algorithm in RANK_ORDER:
                for rpn in LAYOUTS:
                    for op in [created, compose_affine]:
                        out = np.zeros(n, np.complex128)
                        shancoll.reduce_scatter_block(comm, send, out, op, algorithm,
                                                      ranks_per_node=rpn)  # fmt: skip
                        if not equal(out, want):
                            failures.append(f"{algorithm} rpn={rpn} n={n} {op}")

    try:
        run_all(comm, body)
        if comm.size > 1:
            raises_all(comm, ValueError, shancoll.reduce_scatter_block, comm, np.ones(comm.size),
                       np.zeros(1), created, "ring", match="op")  # fmt: skip
    finally:
        created.Free()
    assert_all(comm, not failures, f"not in rank order: {failures[:5]}")


def test_shan_single_copy_on_two_rank_nodes(comm):
    """A node of two ranks, single_copy=True, blocks from 8 KiB: each rank
    reads its block of the other's input by cross-memory attach and combines
    it with its own, writing nothing into the other's buffers
    (single_copy_bytes: its own block). In place (local rank 1's block moves
    to the start of its buffer, which rank 0 reads meanwhile), uneven counts,
    rank order for a non-commutative op; by default, or below 8 KiB, the
    pair channels."""
    failures: list[str] = []
    pair = two_rank_nodes(comm)

    def copied(what: str, want: int) -> None:
        got = shancoll.last_stats(pair).single_copy_bytes
        if got != want:
            failures.append(f"{what}: single_copy_bytes {got}, expected {want}")

    def body():
        if pair.size != 2:
            return
        asked, off = {"single_copy": True}, {"single_copy": False}
        for n, options, single in [(8192, asked, True), (3 * 32768 + 5, asked, True),
                                   (1000, asked, False), (2048, asked, True),
                                   (8192, {}, False), (8192, off, False)]:  # fmt: skip
            for in_place in [False, True]:
                block_case(pair, failures, "shan", MPI.SUM, np.float64, n, in_place,
                           ranks_per_node=PAIR, **options)  # fmt: skip
                copied(f"block n={n} {options} in_place={in_place}", 8 * n * single)
        for counts in [[9000, 20000], [20000, 9000]]:
            for in_place in [False, True]:
                vector_case(pair, failures, "shan", MPI.MAX, np.int64, counts, in_place,
                            ranks_per_node=PAIR, single_copy=True)  # fmt: skip
                copied(f"counts={counts} in_place={in_place}", 8 * counts[pair.rank])
        n = 5000  # complex128: 80 KB per block
        send = affine_data(2 * n, pair.rank)
        want = np.zeros(n, np.complex128)
        created = MPI.Op.Create(affine_op, commute=False)
        pair.Reduce_scatter_block(send, want, created)
        created.Free()
        out = np.zeros(n, np.complex128)
        shancoll.reduce_scatter_block(pair, send, out, compose_affine, "shan", ranks_per_node=PAIR,
                                      single_copy=True)  # fmt: skip
        copied("non-commutative", 16 * n)
        if not equal(out, want):
            failures.append("non-commutative: not in rank order")

    run_all(comm, body)
    pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_single_copy_refuses_counts_that_differ(comm):
    """Ranks whose recvcounts differ are refused on both ranks before any
    read (the rendezvous compares the counts), and the pair goes on."""
    pair = two_rank_nodes(comm)
    if pair.size == 2:
        counts = [10000, 10000] if pair.rank == 0 else [12000, 8000]
        send = np.ones(20000)
        raises_all(pair, ValueError, shancoll.reduce_scatter, pair, send,
                   np.zeros(counts[pair.rank]), counts, MPI.SUM, "shan", ranks_per_node=PAIR,
                   single_copy=True, match="recvcounts")  # fmt: skip
        out = np.zeros(10000)
        shancoll.reduce_scatter_block(pair, send, out, MPI.SUM, "shan", ranks_per_node=PAIR,
                                      single_copy=True)  # fmt: skip
        assert_all(pair, np.array_equal(out, np.full(10000, 2.0)), f"{out[:3]}")
    pair.Free()


@pytest.mark.parametrize("rpn", LAYOUTS)
def test_layouts(comm, rpn):
    failures: list[str] = []

    def body():
        for algorithm in ["shan", "ring", "pairwise"]:
            for dtype in [np.int64, np.float32, np.uint8]:
                for n in [1, 5, 300]:
                    block_case(comm, failures, algorithm, MPI.SUM, dtype, n, ranks_per_node=rpn)
                counts = make_counts("random", comm.size, 40, seed=rpn or 0)
                vector_case(comm, failures, algorithm, MPI.SUM, dtype, counts, ranks_per_node=rpn)

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


def test_repeated_calls_changing_sizes_among_other_traffic(comm):
    """One communicator: sizes up and down (shan's slots grow, then serve
    smaller calls), block and vector forms alternating, shan scan and shan
    allreduce (which share shan's fraction communicators) and mpi4py's own
    calls between."""
    failures: list[str] = []
    sizes = [1, 700, 3, 0, 70] if REDUCED else [1, 700, 3, 9000, 0, 70, 2000]

    def body():
        for i, n in enumerate(sizes):
            for rpn in [None, 1, 2]:
                block_case(comm, failures, ["shan", "pairwise"][i % 2], MPI.SUM, np.int32, n,
                           ranks_per_node=rpn)  # fmt: skip
                out = np.zeros(n)
                shancoll.scan(comm, np.ones(n), out, MPI.SUM, "shan", ranks_per_node=rpn)
                if not np.all(out == comm.rank + 1):
                    failures.append(f"scan between n={n}")
                shancoll.allreduce(comm, np.ones(n), out, MPI.SUM, "shan", ranks_per_node=rpn)
                comm.Bcast(np.zeros(4), root=comm.size - 1)
                counts = make_counts("decreasing", comm.size, n, seed=i)
                vector_case(comm, failures, "shan", MPI.MAX, np.int16, counts, ranks_per_node=rpn)

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


@pytest.mark.parametrize("rpn", [None, 2])
def test_back_to_back_growing_calls(comm, rpn):
    """Calls of growing sizes with nothing between them (the references come
    after): a rank may start the next call, whose larger slots move shan's
    areas, while a slower local rank still copies out of them."""
    sizes = [1 << k for k in range(0, 11 if REDUCED else 13)]
    outs = []
    for n in sizes:
        out = np.zeros(n, np.int64)
        shancoll.reduce_scatter_block(comm, exact_data(np.int64, n * comm.size, comm.rank), out,
                                      MPI.SUM, "shan", ranks_per_node=rpn)  # fmt: skip
        outs.append(out)
    failures = []
    for n, out in zip(sizes, outs, strict=True):
        want = np.zeros(n, np.int64)
        comm.Reduce_scatter_block(exact_data(np.int64, n * comm.size, comm.rank), want)
        if not equal(out, want):
            failures.append(f"n={n}")
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


def test_dup_and_split_communicators(comm):
    failures: list[str] = []
    dup = comm.Dup()
    half = comm.Split(comm.rank % 2, -comm.rank)  # reversed rank order in each half

    def body():
        for c in [dup, half]:
            for algorithm in ALGORITHMS:
                block_case(c, failures, algorithm, MPI.SUM, np.int64, 4)
                vector_case(c, failures, algorithm, MPI.SUM, np.int64,
                            make_counts("random", c.size, 5))  # fmt: skip

    run_all(comm, body)
    dup.Free()
    half.Free()
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


def test_stats(comm):
    p = comm.size
    send, out = np.ones(8 * p), np.zeros(8)
    for algorithm in ["pairwise", "ring"]:
        run_all(comm, shancoll.reduce_scatter_block, comm, send, out, MPI.SUM, algorithm)
        s = shancoll.last_stats(comm)
        messages = s.intra_messages + s.inter_messages
        ok = s.algorithm == algorithm and s.rounds == p - 1 and messages == p - 1
        assert_all(comm, ok, f"{algorithm}: {s}")
    # shan on nodes of one rank: one fraction, pairwise between all P nodes.
    run_all(comm, shancoll.reduce_scatter_block, comm, send, out, MPI.SUM, "shan",
            ranks_per_node=1)  # fmt: skip
    s = shancoll.last_stats(comm)
    ok = s.algorithm == "shan" and s.node_count == p and s.rounds == p - 1
    assert_all(comm, ok and s.inter_messages == p - 1 and s.intra_messages == 2, f"shan: {s}")


def test_auto_is_the_mpi_library_without_a_rule(comm):
    shancoll.set_rules("builtin")  # no table: the machine's own tables do have rules
    try:
        for coll, args in [("reduce_scatter_block", ()), ("reduce_scatter", ([2] * comm.size,))]:
            run_all(comm, getattr(shancoll, coll), comm, np.ones(2 * comm.size), np.zeros(2), *args)
            got = shancoll.last_stats(comm).algorithm
            assert_all(comm, got == "mpi", f"{coll}: auto chose {got}")
            assert_all(comm, shancoll.algorithms(coll) == ["shan", "ring", "pairwise", "mpi"])
    finally:
        shancoll.set_rules(None)


def bad_cases(p: int):
    ro = np.zeros(4)
    ro.flags.writeable = False
    block = np.ones(4 * p)
    return {
        "sendbuf not P blocks": ("block", (np.ones(4 * p + 1), np.zeros(4)), {}, "sendbuf"),
        "dtype mismatch": ("block", (np.ones(4 * p, "f4"), np.zeros(4)), {}, "sendbuf"),
        "bitwise on float": ("block", (block, np.zeros(4), MPI.BAND), {}, "op"),
        "float16": ("block", (np.ones(4 * p, "f2"), np.zeros(4, "f2")), {}, "recvbuf"),
        "minloc": ("block", (block, np.zeros(4), MPI.MINLOC), {}, "op"),
        "not an op": ("block", (block, np.zeros(4), "sum"), {}, "op"),
        "read-only recvbuf": ("block", (block, ro), {}, "recvbuf"),
        "in place, not P blocks": ("block", (MPI.IN_PLACE, np.zeros(4 * p + 1)), {}, "recvbuf"),
        "unknown algorithm": ("block", (block, np.zeros(4)), {"algorithm": "nope"}, "algorithm"),
        "negative timeout": ("block", (block, np.zeros(4)), {"timeout": -1.0}, "timeout"),
        "unknown option": ("block", (block, np.zeros(4)), {"ports": 2}, "ports"),
        "recvcounts missing": ("vector", (block, np.zeros(4)), {}, "recvcounts"),
        "recvcounts too short": ("vector", (block, np.zeros(4), [4] * (p + 1)), {}, "recvcounts"),
        "negative count": ("vector", (block, np.zeros(4), [-1] * p), {}, "recvcounts"),
        "sum(recvcounts) != sendbuf": ("vector", (block, np.zeros(4), [5] * p), {}, "sendbuf"),
    }


@pytest.mark.parametrize("case", list(bad_cases(1)))
def test_bad_input_raises_everywhere_then_recovers(comm, case):
    if case == "in place, not P blocks" and comm.size == 1:
        pytest.skip("any length is one block")
    form, args, options, name = bad_cases(comm.size)[case]
    call = shancoll.reduce_scatter_block if form == "block" else shancoll.reduce_scatter
    raises_all(comm, ValueError, call, comm, *args, match=name, **options)
    failures: list[str] = []
    run_all(comm, block_case, comm, failures, "shan", MPI.SUM, np.float64, 9)
    assert_all(comm, not failures, "a valid call after an error")


def test_inter_communicator_refused(comm):
    if comm.size < 2:
        pytest.skip("needs two groups")
    local = comm.Split(comm.rank % 2, comm.rank)
    inter = local.Create_intercomm(0, comm, 1 - comm.rank % 2, tag=7)
    raises_all(comm, ValueError, shancoll.reduce_scatter_block, inter, np.ones(2), np.zeros(1),
               match="comm: an inter-communicator")  # fmt: skip
    raises_all(comm, ValueError, shancoll.reduce_scatter, inter, np.ones(2), np.zeros(1), [1, 1],
               match="comm: an inter-communicator")  # fmt: skip
    inter.Free()
    local.Free()


def test_checked_mode_refuses_counts_that_differ(comm):
    if comm.size == 1:
        pytest.skip("one rank always agrees")
    counts = [2] * comm.size
    counts[0] += comm.rank == comm.size - 1
    send, out = np.ones(sum(counts)), np.zeros(counts[comm.rank])
    raises_all(comm, ValueError, shancoll.reduce_scatter, comm, send, out, counts, check=True,
               match="check")  # fmt: skip
