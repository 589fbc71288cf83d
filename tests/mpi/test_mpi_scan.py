"""shancoll.scan and shancoll.exscan against mpi4py's comm.Scan / comm.Exscan.

Correctness data are small integers (in float and complex types too), so
every combine order gives the exact result and results compare bit for bit
with the reference. Non-commutative ops (a Python callable, MPI.Op.Create
with commute=False) must come out in rank order, as mpi4py's own call gives
them. Exscan's rank 0 result is undefined in MPI: it is not compared, and
shancoll's own algorithms must leave it as it was.

Run over 1-8 ranks by test_mpi_suites.py (SHANCOLL_RANKS_PER_NODE runs too:
virtual nodes with uneven last nodes), with ranks_per_node 1, 2 and 3 named
by the calls as well.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, physical_node, raises_all, run_all
from mpi4py import MPI
from test_mpi_allreduce import affine_data, compose_affine, equal, exact_data, valid_pairs

import shancoll

WORLD = MPI.COMM_WORLD
ALGORITHMS = ["auto", *shancoll.algorithms("scan")]
OWN = ["shan", "recursive_doubling"]  # shancoll's: exscan leaves rank 0's recvbuf alone
COLLECTIVES = ["scan", "exscan"]
LAYOUTS = [None, 1, 2, 3]  # None: SHANCOLL_RANKS_PER_NODE's (or physical)


def run(coll: str, *args, **kwargs) -> None:
    getattr(shancoll, coll)(*args, **kwargs)


def reference(comm, coll: str, send: np.ndarray, op) -> np.ndarray:
    """mpi4py's Scan / Exscan of the same inputs."""
    ref = np.zeros_like(send)
    (comm.Scan if coll == "scan" else comm.Exscan)(send, ref, op)
    return ref


def compared(comm, coll: str) -> bool:
    """Whether this rank's result is defined (not exscan's rank 0)."""
    return coll == "scan" or comm.rank > 0


def check_case(comm, failures, coll, algorithm, op, dtype, n, **options) -> None:
    send = exact_data(dtype, n, comm.rank)
    out = np.zeros(n, dtype)
    run(coll, comm, send, out, op, algorithm, **options)
    want = reference(comm, coll, send, op)  # collective: on every rank
    if compared(comm, coll) and not equal(out, want):
        failures.append(f"{coll} {algorithm} {op} {np.dtype(dtype)} n={n} {options}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("coll", COLLECTIVES)
def test_every_op_and_dtype_matches_mpi(comm, coll, algorithm):
    failures: list[str] = []

    def body():
        for op, dtype in valid_pairs():
            for n in [1] if REDUCED else [1, 37]:
                check_case(comm, failures, coll, algorithm, op, dtype, n)

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("coll", COLLECTIVES)
def test_counts_zero_odd_large_and_in_place(comm, coll, algorithm):
    failures: list[str] = []
    large = [] if REDUCED else [1 << 17]

    def body():
        for op, dtype in [(MPI.SUM, np.float64), (MPI.MAX, np.int32), (MPI.PROD, np.complex64)]:
            for n in [0, 255, 1001, *large]:
                check_case(comm, failures, coll, algorithm, op, dtype, n)
        n = 257  # in place, and an mpi4py spec with a datatype
        buf = exact_data(np.float64, n, comm.rank)
        before = buf.copy()
        run(coll, comm, MPI.IN_PLACE, [buf, MPI.DOUBLE], MPI.SUM, algorithm)
        want = reference(comm, coll, before, MPI.SUM)
        if compared(comm, coll) and not equal(buf, want):
            failures.append("in place")
        if not compared(comm, coll) and algorithm in OWN and not equal(buf, before):
            failures.append("in place: rank 0's recvbuf written")

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


def test_exscan_leaves_rank_0_alone(comm):
    failures = []

    def body():
        for algorithm in OWN:
            out = np.full(9, -5, np.int64)
            shancoll.exscan(comm, np.arange(9), out, MPI.SUM, algorithm)
            if comm.rank == 0 and not np.all(out == -5):
                failures.append(algorithm)

    run_all(comm, body)
    assert_all(comm, not failures, f"rank 0's recvbuf written: {failures}")


def affine_op(inbuf, inoutbuf, datatype):
    """MPI.Op.Create's form of compose_affine: inout = in o inout."""
    a = np.frombuffer(inbuf, dtype=np.complex128)
    b = np.frombuffer(inoutbuf, dtype=np.complex128)
    b[:] = compose_affine(a, b)


@pytest.mark.parametrize("coll", COLLECTIVES)
def test_non_commutative_ops_in_rank_order(comm, coll):
    created = MPI.Op.Create(affine_op, commute=False)
    failures = []

    def body():
        for n in [1, 33]:
            send = affine_data(n, comm.rank)
            want = reference(comm, coll, send, created)
            for algorithm in ALGORITHMS:
                for rpn in LAYOUTS:
                    for op in [created, compose_affine]:
                        out = np.zeros(n, np.complex128)
                        run(coll, comm, send, out, op, algorithm, ranks_per_node=rpn)
                        if compared(comm, coll) and not equal(out, want):
                            failures.append(f"{algorithm} rpn={rpn} n={n} {op}")

    try:
        run_all(comm, body)
    finally:
        created.Free()
    assert_all(comm, not failures, f"not in rank order: {failures[:5]}")


@pytest.mark.parametrize("rpn", LAYOUTS)
@pytest.mark.parametrize("coll", COLLECTIVES)
def test_layouts(comm, coll, rpn):
    failures: list[str] = []

    def body():
        for algorithm in OWN:
            for dtype in [np.int64, np.float32, np.uint8]:
                for n in [1, 5, 300]:
                    check_case(comm, failures, coll, algorithm, MPI.SUM, dtype, n,
                               ranks_per_node=rpn)  # fmt: skip

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


def test_repeated_calls_changing_sizes_among_other_traffic(comm):
    """One communicator: sizes up and down (shan's slots grow, then serve
    smaller calls), scan and exscan alternating, shan allreduce (whose
    fraction communicators shan scan shares) and mpi4py's own calls between."""
    failures: list[str] = []
    sizes = [1, 1000, 3, 0, 70] if REDUCED else [1, 1000, 3, 40000, 0, 70, 5000]

    def body():
        for i, n in enumerate(sizes):
            for rpn in [None, 1, 2]:
                coll = COLLECTIVES[i % 2]
                check_case(comm, failures, coll, OWN[i % 2], MPI.SUM, np.int32, n,
                           ranks_per_node=rpn)  # fmt: skip
                out = np.zeros(n)
                shancoll.allreduce(comm, np.ones(n), out, MPI.SUM, "shan", ranks_per_node=rpn)
                if not np.all(out == comm.size):
                    failures.append(f"allreduce between n={n}")
                comm.Bcast(np.zeros(4), root=comm.size - 1)
                check_case(comm, failures, COLLECTIVES[1 - i % 2], "shan", MPI.MAX, np.int16, n,
                           ranks_per_node=rpn)  # fmt: skip

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


@pytest.mark.parametrize("rpn", [None, 2])
def test_back_to_back_growing_calls(comm, rpn):
    """Calls of growing sizes with nothing between them (the references come
    after): a rank may start the next call, whose larger slots move shan's
    areas, while a slower local rank still copies out of them."""
    sizes = [1 << k for k in range(0, 13 if REDUCED else 15)]
    outs = []
    for i, n in enumerate(sizes):
        coll = COLLECTIVES[i % 2]
        out = np.zeros(n, np.int64)
        send = exact_data(np.int64, n, comm.rank)
        run(coll, comm, send, out, MPI.SUM, "shan", ranks_per_node=rpn)
        outs.append(out)
    failures = []
    for i, n in enumerate(sizes):
        coll = COLLECTIVES[i % 2]
        want = reference(comm, coll, exact_data(np.int64, n, comm.rank), MPI.SUM)
        if compared(comm, coll) and not equal(outs[i], want):
            failures.append(f"{coll} n={n}")
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


def test_dup_and_split_communicators(comm):
    failures: list[str] = []
    dup = comm.Dup()
    half = comm.Split(comm.rank % 2, -comm.rank)  # reversed rank order in each half

    def body():
        for c in [dup, half]:
            for coll in COLLECTIVES:
                for algorithm in ALGORITHMS:
                    check_case(c, failures, coll, algorithm, MPI.SUM, np.int64, 17)

    run_all(comm, body)
    dup.Free()
    half.Free()
    assert_all(comm, not failures, f"differs from mpi4py: {failures[:5]}")


def test_stats(comm):
    p = comm.size
    rounds = (p - 1).bit_length()  # ceil(log2 P)
    for coll in COLLECTIVES:
        run_all(comm, run, coll, comm, np.ones(8), np.zeros(8), MPI.SUM, "recursive_doubling")
        s = shancoll.last_stats(comm)
        assert_all(comm, s.algorithm == "recursive_doubling" and s.rounds == rounds,
                   f"{coll} recursive_doubling: {s}")  # fmt: skip
        # shan on nodes of one rank: one fraction, the node totals' exscan
        # between all P nodes, by recursive doubling.
        run_all(comm, run, coll, comm, np.ones(8), np.zeros(8), MPI.SUM, "shan", ranks_per_node=1)
        s = shancoll.last_stats(comm)
        assert_all(comm, s.algorithm == "shan" and s.node_count == p and s.rounds == rounds
                   and s.inter_messages <= rounds and s.intra_messages == 1 + compared(comm, coll),
                   f"{coll} shan rpn=1: {s}")  # fmt: skip


def test_the_pair_paths_on_one_node_of_two_ranks(comm):
    """shan on a node of two ranks: exscan is a bcast from rank 0's input,
    rank 1 copying the message at most once (the steps of more ranks copied
    both inputs in and rank 1's result out: twice its bytes), inlined,
    through the slots or by single copy (which shares the copying between
    the two ranks); scan with a commutative op is a reduce to rank 1. A
    read-only sendbuf is only read."""
    if comm.size < 2:
        pytest.skip("needs two ranks")
    node = physical_node(comm)  # on real nodes of one rank: nobody (the others' runs do)
    pair = node.Split(0 if node.rank < 2 else MPI.UNDEFINED, node.rank)
    node.Free()
    failures: list[str] = []

    def body():
        if pair == MPI.COMM_NULL or pair.size < 2:
            return
        for coll in COLLECTIVES:
            for n in [1, 7, 300, 5000, 40000]:
                for single_copy in [False, True]:
                    case = f"{coll} n={n} single_copy={single_copy}"
                    send = exact_data(np.float64, n, pair.rank)
                    send.flags.writeable = False
                    out = np.full(n, -5.0)
                    run(coll, pair, send, out, MPI.SUM, "shan", ranks_per_node=0,
                        single_copy=single_copy)  # fmt: skip
                    s = shancoll.last_stats(pair)
                    want = reference(pair, coll, send, MPI.SUM)
                    if compared(pair, coll) and not equal(out, want):
                        failures.append(f"{case}: result")
                    if not compared(pair, coll) and not np.all(out == -5.0):
                        failures.append(f"{case}: rank 0's recvbuf written")
                    exscan_copies = coll == "exscan" and pair.rank == 1
                    if exscan_copies and s.intra_bytes > send.nbytes:  # single copy: a share
                        failures.append(f"{case}: {s.intra_bytes} bytes")
                    # the option reaches release_gather: a share by single copy past
                    # the inlined sizes, the whole message through the segment
                    shared = single_copy and n >= 300
                    if exscan_copies and (s.intra_bytes < send.nbytes) != shared:
                        failures.append(f"{case}: {s.intra_bytes} bytes of {send.nbytes}")

    run_all(comm, body)
    if pair != MPI.COMM_NULL:
        pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


@pytest.mark.parametrize("coll", COLLECTIVES)
def test_auto_is_the_mpi_library_without_a_rule(comm, coll):
    shancoll.set_rules("builtin")  # no table: the machine's own tables do have rules
    try:
        run_all(comm, run, coll, comm, np.ones(3), np.zeros(3))
    finally:
        shancoll.set_rules(None)
    got = shancoll.last_stats(comm).algorithm
    assert_all(comm, got == "mpi", f"auto chose {got}")
    assert_all(comm, shancoll.algorithms(coll) == ["shan", "recursive_doubling", "mpi"])


def bad_cases():
    ro = np.zeros(4)
    ro.flags.writeable = False
    return {
        "length mismatch": (np.ones(5), np.zeros(4), MPI.SUM, {}, "sendbuf"),
        "dtype mismatch": (np.ones(4, "f4"), np.zeros(4), MPI.SUM, {}, "sendbuf"),
        "bitwise on float": (np.ones(4), np.zeros(4), MPI.BAND, {}, "op"),
        "float16": (np.ones(4, "f2"), np.zeros(4, "f2"), MPI.SUM, {}, "recvbuf"),
        "minloc": (np.ones(4), np.zeros(4), MPI.MINLOC, {}, "op"),
        "not an op": (np.ones(4), np.zeros(4), "sum", {}, "op"),
        "read-only recvbuf": (np.ones(4), ro, MPI.SUM, {}, "recvbuf"),
        "unknown algorithm": (np.ones(4), np.zeros(4), MPI.SUM, {"algorithm": "nope"}, "algorithm"),
        "negative timeout": (np.ones(4), np.zeros(4), MPI.SUM, {"timeout": -1.0}, "timeout"),
        "unknown option": (np.ones(4), np.zeros(4), MPI.SUM, {"ports": 2}, "ports"),
    }


@pytest.mark.parametrize("case", list(bad_cases()))
@pytest.mark.parametrize("coll", COLLECTIVES)
def test_bad_input_raises_everywhere_then_recovers(comm, coll, case):
    send, recv, op, options, name = bad_cases()[case]
    raises_all(comm, ValueError, run, coll, comm, send, recv, op, match=name, **options)
    failures: list[str] = []
    run_all(comm, check_case, comm, failures, coll, "shan", MPI.SUM, np.float64, 9)
    assert_all(comm, not failures, "a valid call after an error")


def test_checked_mode_refuses_counts_that_differ(comm):
    if comm.size == 1:
        pytest.skip("one rank always agrees")
    n = 4 + (comm.rank == comm.size - 1)
    raises_all(comm, ValueError, shancoll.scan, comm, np.ones(n), np.zeros(n), check=True,
               match="check")  # fmt: skip
