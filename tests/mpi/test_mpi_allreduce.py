"""shancoll.allreduce and iallreduce against mpi4py's comm.Allreduce.

Correctness data are small integers (also in float and complex types), so
every combine order gives the exact result and results can be compared with
the reference bit for bit. The rank-consistency tests use awkward floating
point data instead, where the order of additions shows in the last bits.
Checks are accumulated and made collective once per test (few allgathers:
the suite runs oversubscribed).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, physical_node, raises_all, run_all
from mpi4py import MPI

import shancoll

ALGORITHMS = ["dissemination", "nway_dissemination", "bruck", "pairwise_exchange", "binomial",
              "ring", "shan", "pieces", "mpi"]  # fmt: skip
SPLIT_PHASE = ["dissemination", "nway_dissemination", "bruck", "pairwise_exchange", "binomial",
               "mpi"]  # fmt: skip
# bitwise identical on all ranks
SAME_TREE = ["pairwise_exchange", "binomial", "ring", "shan", "pieces", "mpi"]

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOATS = [np.float32, np.float64, np.longdouble]
COMPLEX = [np.complex64, np.complex128, np.clongdouble]
ARITH, ORDER = [MPI.SUM, MPI.PROD], [MPI.MIN, MPI.MAX]
LOGICAL, BITWISE = [MPI.LAND, MPI.LOR, MPI.LXOR], [MPI.BAND, MPI.BOR, MPI.BXOR]
OP_NAMES = {"SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"}


def name_of(op: MPI.Op) -> str:
    return next((f"MPI.{n}" for n in OP_NAMES if getattr(MPI, n) == op), "user op")


def valid_pairs():
    """Every (op, dtype) MPI defines (reduced mode: a cross-section)."""
    pairs = [(op, t) for op in ARITH for t in INTS + FLOATS + COMPLEX]
    pairs += [(op, t) for op in ORDER for t in INTS + FLOATS]
    pairs += [(op, t) for op in LOGICAL for t in INTS + [np.bool_]]
    pairs += [(op, t) for op in BITWISE for t in INTS]
    if REDUCED:
        keep = {np.bool_, np.int8, np.uint16, np.int32, np.uint64, np.float32, np.float64,
                np.complex128, np.longdouble}  # fmt: skip
        pairs = [(op, t) for op, t in pairs if t in keep and op in (MPI.SUM, MPI.MAX, MPI.LAND,
                                                                     MPI.BXOR)]  # fmt: skip
    return pairs


def exact_data(dtype, n: int, rank: int, seed: int = 0) -> np.ndarray:
    """Values whose reduction is exact in every order (small integers; full range for ints)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed * 7919 + rank * 104729 + n)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=n).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    small = rng.integers(-3, 4, size=n)
    if dtype.kind == "c":
        return (small + 1j * rng.integers(-2, 3, size=n)).astype(dtype)
    return small.astype(dtype)


def equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality; by value for long double types (their padding bytes are undefined)
    and complex ones (the sign of a zero part of a complex product depends on the order)."""
    if a.dtype in (np.longdouble, np.clongdouble) or a.dtype.kind == "c":
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    return a.shape == b.shape and a.tobytes() == b.tobytes()


_reference: dict = {}


def reference(comm, op, dtype, n: int, seed: int = 0) -> np.ndarray:
    """mpi4py's Allreduce on the same data (cached: identical for every algorithm)."""
    key = (comm.size, op.handle, np.dtype(dtype).str, n, seed)
    if key not in _reference:
        ref = np.empty(n, dtype)
        comm.Allreduce(exact_data(dtype, n, comm.rank, seed), ref, op)
        _reference[key] = ref
    return _reference[key]


def check_case(comm, failures: list, algorithm, op, dtype, n, **options) -> None:
    send = exact_data(dtype, n, comm.rank)
    out = np.zeros(n, dtype)
    shancoll.allreduce(comm, send, out, op, algorithm, **options)
    if not equal(out, reference(comm, op, dtype, n)):
        failures.append(f"{algorithm} {name_of(op)} {np.dtype(dtype)} n={n} {options}")


def large_count(dtype) -> int:
    return (1 << (17 if REDUCED else 20)) // np.dtype(dtype).itemsize  # 128 KiB / 1 MiB


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_op_and_dtype_matches_mpi(comm, algorithm):
    failures: list[str] = []

    def body():
        for op, dtype in valid_pairs():
            for n in [1] if REDUCED else [1, 255]:
                check_case(comm, failures, algorithm, op, dtype, n)

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from comm.Allreduce: {failures[:5]}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_counts_zero_odd_large_and_in_place(comm, algorithm):
    failures: list[str] = []

    def body():
        for op, dtype in [(MPI.SUM, np.float64), (MPI.MAX, np.int32), (MPI.PROD, np.complex64)]:
            for n in [0, 255, 1001, large_count(dtype)]:
                check_case(comm, failures, algorithm, op, dtype, n)
        n = 257  # in place, and an mpi4py spec with a datatype
        buf = exact_data(np.float64, n, comm.rank)
        shancoll.allreduce(comm, MPI.IN_PLACE, [buf, MPI.DOUBLE], MPI.SUM, algorithm)
        if not equal(buf, reference(comm, MPI.SUM, np.float64, n)):
            failures.append("in place")

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from comm.Allreduce: {failures[:5]}")


def awkward_floats(dtype, n: int, rank: int) -> np.ndarray:
    """NaN, signed zeros, infinities, subnormals and ordinary values, shifted per rank."""
    specials = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-310, -1e-310, 1.5, -2.25, 3e38]
    values = np.array(specials, dtype=np.float64).astype(dtype)
    return np.roll(np.resize(values, n), rank)


def test_every_kernel_set_gives_the_same_bits(comm, monkeypatch):
    """Each instruction set this build and CPU run (reduction_kernels()),
    forced by SHANCOLL_KERNELS: every op and dtype against comm.Allreduce at
    counts that leave vector tails, and awkward floats bitwise the same as
    with the generic loops."""
    runnable = shancoll.reduction_kernels()["runnable"]
    failures: list[str] = []
    generic_bits: dict = {}

    def body():
        for name in runnable:
            monkeypatch.setenv("SHANCOLL_KERNELS", name)
            shancoll.reload_environment()
            if shancoll.reduction_kernels()["active"] != name:
                failures.append(f"{name}: not active once forced")
            wrong: list[str] = []
            for op, dtype in valid_pairs():
                for n in [255, 1001]:
                    check_case(comm, wrong, "binomial", op, dtype, n)
            failures.extend(f"{name}: {w}" for w in wrong)
            for op in (MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX):
                for dtype in (np.float32, np.float64):
                    out = np.zeros(1001, dtype)
                    shancoll.allreduce(comm, awkward_floats(dtype, 1001, comm.rank), out, op,
                                       "binomial")  # fmt: skip
                    bits = generic_bits.setdefault((name_of(op), dtype), out.tobytes())
                    if out.tobytes() != bits:
                        failures.append(f"{name} {name_of(op)} {np.dtype(dtype)}: other bits")

    try:
        run_all(comm, body)
    finally:
        monkeypatch.delenv("SHANCOLL_KERNELS")
        shancoll.reload_environment()
    assert_all(comm, not failures, f"{failures[:5]}")


def expected_rounds(algorithm: str, p: int, ports: int | None) -> int:
    if algorithm == "shan":
        return shan_rounds(MPI.COMM_WORLD, None, 5, "nway_dissemination")
    if algorithm == "pieces":  # one node: a reduce-scatter and an allgather per round; else shan
        if shan_layout(MPI.COMM_WORLD, None)[0] > 1:
            return shan_rounds(MPI.COMM_WORLD, None, 5, "nway_dissemination")
        return 2 if p > 1 else 0
    if p == 1:
        return 1 if algorithm == "mpi" else 0
    log2 = p.bit_length() - 1
    ceil_log2 = (p - 1).bit_length()
    n = ports or 1
    if algorithm == "nway_dissemination":
        return shancoll._core.nway_plan(p, ports or 0)["rounds"]
    if algorithm == "bruck":
        return math.ceil(round(math.log(p, n + 1), 9))
    if algorithm == "dissemination":
        digits = np.base_repr(p, n + 1)
        return len(digits) - 1 + (int(digits[0], n + 1) > 1)
    return {
        "pairwise_exchange": log2 if p == 1 << log2 else log2 + 2,
        "binomial": 2 * ceil_log2,
        "ring": 2 * (p - 1),
        "mpi": 1,
    }[algorithm]


def test_ring_sends_blocks_in_chunks_of_one_mib(comm):
    """ring's blocks (count / P elements) of 2 MiB and a bit go as two 1 MiB
    chunks and a short one, each forwarded once it has arrived and been
    combined: 3 messages per step, 2 (P - 1) steps; against mpi4py."""
    failures: list[str] = []
    p = comm.size
    n = p * (((2 << 20) + 4096) // 8) + p - 1  # every block 2 MiB + 4 KiB (+ 8 B)

    def body():
        check_case(comm, failures, "ring", MPI.SUM, np.float64, n)
        st = shancoll.last_stats(comm)
        sent = st.intra_messages + st.inter_messages
        if sent != 3 * 2 * (p - 1):
            failures.append(f"{sent} messages, want {3 * 2 * (p - 1)}")

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def test_rounds_follow_the_papers_formulas(comm):
    p = comm.size
    failures = []

    def body():
        for algorithm in ALGORITHMS:
            port_choices = [None] + (list(range(1, p + 1)) if algorithm in (
                "nway_dissemination", "bruck", "dissemination") else [])  # fmt: skip
            for ports in port_choices:
                check_case(comm, failures, algorithm, MPI.SUM, np.int64, 5, ports=ports)
                st = shancoll.last_stats(comm)
                want = expected_rounds(algorithm, p, ports)
                if st.algorithm != algorithm or st.rounds != want:
                    failures.append(f"{algorithm} ports={ports}: {st.rounds} rounds, want {want}")
        # dissemination (n = 1): floor(log2 P) + popcount(P) - 1 messages of the full vector
        shancoll.allreduce(comm, np.ones(7), np.empty(7), MPI.SUM, "dissemination")
        st = shancoll.last_stats(comm)
        want = (p.bit_length() - 1 + bin(p).count("1") - 1) if p > 1 else 0
        sent = (st.intra_messages + st.inter_messages, st.intra_bytes + st.inter_bytes)
        if sent != (want, 56 * want):
            failures.append(f"dissemination messages {st}, want {want}")

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def test_nway_default_is_the_smallest_adaptable_n(comm):
    plan = shancoll._core.nway_plan(comm.size)
    smaller = [shancoll._core.nway_plan(comm.size, n)["adaptable"] for n in range(1, plan["n"])]
    assert_all(comm, plan["adaptable"] and not any(smaller), f"{plan}")
    fallback = shancoll._core.nway_plan(13, 1)  # the paper's example without a 5-tuple
    assert_all(comm, not fallback["adaptable"] and "fallback" in fallback["text"], f"{fallback}")


def awkward(dtype, n: int, rank: int) -> np.ndarray:
    """Large dynamic range and cancellation: the order of additions shows."""
    rng = np.random.default_rng(4242 + rank)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 17, size=n)
    return x.astype(dtype)


def test_results_identical_on_every_rank_and_run(comm):
    failures = []
    n = 1001

    def body():
        for dtype in [np.float64, np.float32]:
            send = awkward(dtype, n, comm.rank)
            ref = np.empty(n, dtype)
            comm.Allreduce(send, ref, MPI.SUM)
            scale = np.empty(n, np.float64)
            comm.Allreduce(np.abs(send.astype(np.float64)), scale, MPI.SUM)
            eps = np.finfo(dtype).eps * 2 * comm.size
            for algorithm in ALGORITHMS + ["auto"]:
                out, again = np.empty(n, dtype), np.empty(n, dtype)
                shancoll.allreduce(comm, send, out, MPI.SUM, algorithm)
                used = shancoll.last_stats(comm).algorithm
                shancoll.allreduce(comm, send, again, MPI.SUM, algorithm)
                if out.tobytes() != again.tobytes():
                    failures.append(f"{algorithm} {dtype.__name__}: differs run to run")
                if np.any(np.abs(out - ref) > eps * scale):
                    failures.append(f"{algorithm} {dtype.__name__}: not close to comm.Allreduce")
                if algorithm in SAME_TREE or algorithm == "auto":
                    if used not in SAME_TREE:
                        failures.append(f"auto chose {used} for floating point")
                    digests = comm.allgather(out.tobytes())
                    if any(d != digests[0] for d in digests):
                        failures.append(f"{algorithm} {dtype.__name__}: ranks differ")

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


# ---------------------------------------------------------------------------
# user-defined and non-commutative ops


def compose_affine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Affine maps x -> m x + c stored as m + c j: 'a, then b'. Associative, not commutative."""
    return (a.real * b.real) + 1j * (b.real * a.imag + b.imag)


def affine_data(n: int, rank: int) -> np.ndarray:
    rng = np.random.default_rng(99 + rank)
    return (rng.integers(1, 3, size=n) + 1j * rng.integers(-3, 4, size=n)).astype(np.complex128)


def in_rank_order(comm, n: int) -> np.ndarray:
    parts = comm.allgather(affine_data(n, comm.rank))
    acc = parts[0]
    for x in parts[1:]:
        acc = compose_affine(acc, x)
    return acc


def rank_order_algorithms(p: int) -> list[str]:
    # shan, pieces: nodes on one machine (virtual or not) are contiguous ranges of ranks
    names = ["binomial", "mpi", "auto", "shan", "pieces"]
    names += ["pairwise_exchange"] if p & (p - 1) == 0 else []
    return names + ([name for name in ALGORITHMS if name not in names] if p == 1 else [])


def test_non_commutative_python_callable_in_rank_order(comm):
    n = 33
    want = in_rank_order(comm, n)
    failures = []

    def body():
        for algorithm in rank_order_algorithms(comm.size):
            out = np.empty(n, np.complex128)
            shancoll.allreduce(comm, affine_data(n, comm.rank), out, compose_affine, algorithm)
            if not equal(out, want):
                failures.append(algorithm)

    run_all(comm, body)
    assert_all(comm, not failures, f"not in rank order: {failures}")


def test_non_commutative_refused_by_rotating_algorithms(comm):
    if comm.size == 1:  # one rank: every algorithm is trivially in rank order (tested above)
        assert_all(comm, "dissemination" in rank_order_algorithms(1))
        return
    op = MPI.Op.Create(lambda a, b, t: None, commute=False)
    try:
        for algorithm in ["dissemination", "nway_dissemination", "bruck", "ring"]:
            raises_all(comm, ValueError, shancoll.allreduce, comm, np.ones(3), np.empty(3), op,
                       algorithm, match="op")  # fmt: skip
    finally:
        op.Free()


def test_user_defined_ops(comm):
    n = 255
    failures = []

    def my_max(inbuf, inoutbuf, datatype):
        a = np.frombuffer(inbuf, dtype=np.int32)
        b = np.frombuffer(inoutbuf, dtype=np.int32)
        np.maximum(a, b, out=b)

    created = MPI.Op.Create(my_max, commute=True)

    def body():
        for algorithm in ALGORITHMS:
            out = np.empty(n, np.int32)
            shancoll.allreduce(comm, exact_data(np.int32, n, comm.rank), out, created, algorithm)
            if not equal(out, reference(comm, MPI.MAX, np.int32, n)):
                failures.append(f"MPI.Op.Create {algorithm}")
            out = np.empty(n, np.int64)
            shancoll.allreduce(comm, exact_data(np.int64, n, comm.rank), out, np.add, algorithm,
                               commute=True)  # fmt: skip
            if not equal(out, reference(comm, MPI.SUM, np.int64, n)):
                failures.append(f"callable {algorithm}")

    try:
        run_all(comm, body)
    finally:
        created.Free()
    assert_all(comm, not failures, f"{failures}")


# ---------------------------------------------------------------------------
# shan: hierarchical, over virtual nodes (the suite runs 1-8 ranks; each test
# also tries explicit layouts on the same ranks)

LAYOUTS = [None, 1, 2, 3]  # from the environment; one rank per node; nodes of 2, of 3


def shan_layout(comm, rpn):
    """(nodes, local size, local rank, F = the largest local size) for this rank."""
    t = shancoll.topology(comm, rpn)
    sizes = [len(ranks) for ranks in t["ranks"]]
    return t["node_count"], sizes[t["node"]], t["local_rank"], max(sizes)


def shan_fractions(comm, rpn, count: int) -> list[int]:
    """Lengths of the non-empty fractions this rank reduces and allreduces between nodes."""
    _, local_size, local_rank, f = shan_layout(comm, rpn)
    lengths = [count * (j + 1) // f - count * j // f for j in range(f)]
    return [n for n in lengths[local_rank::local_size] if n > 0]


def shan_rounds(comm, rpn, count: int, inner: str) -> int:
    """Inter-node rounds: the inner algorithm's, once per fraction this rank takes."""
    nodes = shan_layout(comm, rpn)[0]
    return 0 if nodes == 1 else len(shan_fractions(comm, rpn, count)) * expected_rounds(
        inner, nodes, None)  # fmt: skip


def test_shan_layouts_counts_dtypes_ops(comm):
    failures: list[str] = []
    cases = [(MPI.SUM, np.float64), (MPI.MAX, np.int16), (MPI.PROD, np.complex128),
             (MPI.LXOR, np.bool_), (MPI.BAND, np.uint64)]  # fmt: skip
    counts = [1, 2, 3, 7, 1001]  # 1-3: fewer elements than local ranks (empty fractions)

    def body():
        for rpn in LAYOUTS:
            for op, dtype in cases[:2] if REDUCED else cases:
                for n in counts:
                    check_case(comm, failures, "shan", op, dtype, n, ranks_per_node=rpn)
            out = np.empty(5, np.complex128)  # non-commutative: rank order across nodes
            shancoll.allreduce(comm, affine_data(5, comm.rank), out, compose_affine, "shan",
                               ranks_per_node=rpn)  # fmt: skip
            if not equal(out, in_rank_order(comm, 5)):
                failures.append(f"non-commutative rpn={rpn}")

    run_all(comm, body)
    assert_all(comm, not failures, f"differs from comm.Allreduce: {failures[:5]}")


def test_shan_bitwise_identical_on_awkward_floats(comm):
    failures: list[str] = []
    n = 1001

    def body():
        for rpn in LAYOUTS:
            for dtype in [np.float64, np.float32]:
                send = awkward(dtype, n, comm.rank)
                out, again = np.empty(n, dtype), np.empty(n, dtype)
                shancoll.allreduce(comm, send, out, MPI.SUM, "shan", ranks_per_node=rpn)
                shancoll.allreduce(comm, send, again, MPI.SUM, "shan", ranks_per_node=rpn)
                if out.tobytes() != again.tobytes():
                    failures.append(f"rpn={rpn} {dtype.__name__}: differs run to run")
                digests = comm.allgather(out.tobytes())
                if any(d != digests[0] for d in digests):
                    failures.append(f"rpn={rpn} {dtype.__name__}: ranks differ")
                ref = np.empty(n, dtype)
                comm.Allreduce(send, ref, MPI.SUM)
                scale = np.empty(n, np.float64)
                comm.Allreduce(np.abs(send.astype(np.float64)), scale, MPI.SUM)
                if np.any(np.abs(out - ref) > np.finfo(dtype).eps * 2 * comm.size * scale):
                    failures.append(f"rpn={rpn} {dtype.__name__}: not close to comm.Allreduce")

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def shan_copies(nodes: int, f: int, n: int) -> tuple[int, int]:
    """shan's (intra messages, bytes) for n doubles: whole copies in and out of
    the segment; on one node of f ranks (the pipeline) up to 4 KiB combined per
    rank (8 n f bytes) the input copied in whole (every rank reduces it all),
    above, per chunk, all but the rank's own fraction (n / f elements) in and
    out; nothing at all alone, nor on nodes of one rank each (the inter-node
    step runs from sendbuf into recvbuf)."""
    if f == 1:
        return 0, 0
    if nodes > 1:
        return 2, 2 * 8 * n
    return (1, 8 * n) if 8 * n * f <= 4096 else (2, 2 * 8 * (n - n // f))


def test_shan_stats_fraction_per_inter_node_message(comm):
    failures: list[str] = []

    def body():
        for rpn in LAYOUTS:
            nodes, _, _, f = shan_layout(comm, rpn)
            n = 16 * f  # every fraction 16 doubles (128 B): the inner algorithm is
            send = exact_data(np.float64, n, comm.rank)  # pairwise_exchange (auto, floats)
            for consistent, inner in [(True, "pairwise_exchange"), (False, "nway_dissemination")]:
                out = np.empty(n)
                shancoll.allreduce(comm, send, out, MPI.SUM, "shan", ranks_per_node=rpn,
                                   consistent=consistent)  # fmt: skip
                st = shancoll.last_stats(comm)
                got = (st.node_count, st.rounds, st.intra_messages, st.intra_bytes)
                want = (nodes, shan_rounds(comm, rpn, n, inner), *shan_copies(nodes, f, n))
                if got != want or not equal(out, reference(comm, MPI.SUM, np.float64, n)):
                    failures.append(f"rpn={rpn} {inner}: (nodes, rounds, intra) {got} != {want}")
                # each inter-node message carries one fraction, m/F bytes
                if st.inter_bytes != 128 * st.inter_messages or (nodes > 1) != (st.rounds > 0):
                    failures.append(f"rpn={rpn} {inner}: inter {st}")
                # butterfly at 2^k nodes: one fraction per round, m/F bytes per round
                if inner == "pairwise_exchange" and nodes & (nodes - 1) == 0:
                    if st.inter_messages != st.rounds:
                        failures.append(f"rpn={rpn}: {st.inter_messages} messages in "
                                        f"{st.rounds} rounds")  # fmt: skip

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_repeated_calls_share_the_segment_with_allgatherv(comm):
    """Changing sizes (the segment grows), interleaved with shan allgatherv, whose
    notification flags must not be confused by allreduce data of all one bits."""
    failures: list[str] = []
    sizes = [3, 70000, 0, 17, 5000] if REDUCED else [3, 70000, 0, 17, 300000, 1, 5000]

    def body():
        for i, n in enumerate(sizes):
            out = np.zeros(n, np.int64)
            shancoll.allreduce(comm, np.full(n, -1, np.int64), out, MPI.BAND, "shan")
            if not np.all(out == -1):
                failures.append(f"allreduce n={n}")
            check_case(comm, failures, "shan", MPI.SUM, np.float32, n + i)
            counts = [n % 1000 + r for r in range(comm.size)]
            got = np.zeros(sum(counts), np.int64)
            mine = np.full(counts[comm.rank], comm.rank, np.int64)
            shancoll.allgatherv(comm, mine, [got, counts, MPI.INT64_T], algorithm="shan")
            if not equal(got, np.repeat(np.arange(comm.size), counts)):
                failures.append(f"allgatherv after allreduce n={n}")

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_pipeline_in_place_many_chunks_in_a_row(comm):
    """One node: chunks of 64 KiB through 4 slots per rank, so slots are reused
    within a call and across calls; in place, with a size that leaves a short
    last chunk, and an awkward element count per fraction."""
    failures: list[str] = []
    n = 5 * 8192 + 77 if REDUCED else 11 * 8192 + 77  # doubles: 6 or 12 chunks

    def body():
        for seed in range(3):
            buf = exact_data(np.float64, n, comm.rank, seed)
            shancoll.allreduce(comm, MPI.IN_PLACE, buf, MPI.SUM, "shan")
            if not equal(buf, reference(comm, MPI.SUM, np.float64, n, seed)):
                failures.append(f"in place, call {seed}")
            check_case(comm, failures, "shan", MPI.MAX, np.int16, n + seed)

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def test_pieces_rounds_pieces_in_place_and_layouts(comm):
    """pieces: pieces of 4 KiB (block_size) and of the default 64 KiB, a
    message of more than one 1 MiB round (the two region sets both used,
    then reused by the next calls), element counts that leave short last
    pieces and fractions of different lengths, sizes that change from call
    to call, in place, dtypes wider than a double, and every node layout
    (several nodes: shan)."""
    failures: list[str] = []
    rounds = (1 << 20) // 8  # doubles per round
    counts = [1, 3, 4095, 8193] if REDUCED else [1, 3, 4095, 8193, rounds + 77, 2 * rounds + 5]

    def body():
        for block in [4096, 0]:
            for seed, n in enumerate(counts):
                buf = exact_data(np.float64, n, comm.rank, seed)
                shancoll.allreduce(comm, MPI.IN_PLACE, buf, MPI.SUM, "pieces", block_size=block)
                if not equal(buf, reference(comm, MPI.SUM, np.float64, n, seed)):
                    failures.append(f"in place n={n} block_size={block}")
                check_case(comm, failures, "pieces", MPI.MAX, np.int16, n + seed,
                           block_size=block)  # fmt: skip
                check_case(comm, failures, "pieces", MPI.SUM, np.complex128, n // 3 + 1,
                           block_size=block)  # fmt: skip
        for rpn in LAYOUTS:
            check_case(comm, failures, "pieces", MPI.SUM, np.float32, 1001, ranks_per_node=rpn)
            out = np.empty(5, np.complex128)  # non-commutative: rank order
            shancoll.allreduce(comm, affine_data(5, comm.rank), out, compose_affine, "pieces",
                               ranks_per_node=rpn)  # fmt: skip
            if not equal(out, in_rank_order(comm, 5)):
                failures.append(f"non-commutative rpn={rpn}")
            buf = affine_data(5, comm.rank)  # in place, the last rank folds into recvbuf
            shancoll.allreduce(comm, MPI.IN_PLACE, buf, compose_affine, "pieces",
                               ranks_per_node=rpn)  # fmt: skip
            if not equal(buf, in_rank_order(comm, 5)):
                failures.append(f"non-commutative in place rpn={rpn}")

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def test_pieces_through_rings_of_ring_window(comm):
    """pieces with ring_window: rounds back to back round each rank's rings,
    many laps (each call's inputs differ, so a round that overwrote places
    still being read would show), rounds cut to half the window (64 KiB:
    rounds of 32 KiB), a round that wraps onto the one before it (5 KiB,
    then two rounds of 31 KiB in a 64 KiB ring: the second starts over at 0,
    over the first, which the other ranks may still be reading), windows
    changing between calls (the rings start over; 16 MiB grows the
    segment), the default after a window, in place."""
    failures: list[str] = []
    plan = [(1 << 16, [6001]), (1 << 16, [12289]), (1 << 16, [640, 7936]), (1 << 21, [6001]),
            (1 << 21, [99999]), (None, [4095]), (1 << 24, [300001]), (1 << 18, [777]),
            (None, [140000])]  # fmt: skip
    if REDUCED:
        plan = plan[:4] + plan[-2:]

    def body():
        for window, counts in plan:
            options = {"ring_window": window} if window else {}
            for seed in range(120 // len(counts) if counts[0] < 10000 else 3):
                for n in counts:
                    buf = exact_data(np.float64, n, comm.rank, seed)
                    shancoll.allreduce(comm, MPI.IN_PLACE, buf, MPI.SUM, "pieces", **options)
                    if not equal(buf, reference(comm, MPI.SUM, np.float64, n, seed)):
                        failures.append(f"in place n={n} seed={seed} ring_window={window}")
            check_case(comm, failures, "pieces", MPI.MAX, np.int32, counts[-1] + 3, **options)

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def test_pieces_refuses_ring_windows_that_differ_and_stays_in_step(comm):
    """Local rank 0 gives another ring_window than the others: the rounds'
    places agree until the smaller ring wraps, then every rank refuses the
    call naming ring_window (before it reads a piece from the wrong place),
    within the timeout; the next calls, with the same window everywhere,
    are right (the rings start over on every rank after a refused round)."""
    if comm.size < 2 or shancoll.topology(comm)["node_count"] != 1:
        pytest.skip("one node of several ranks")
    n = 10000  # 80 KB: the 1 MiB ring wraps at the 14th call
    window = (1 << 20) if comm.rank == 0 else (1 << 21)

    def differing_calls():
        for seed in range(40):
            buf = exact_data(np.float64, n, comm.rank, seed)
            shancoll.allreduce(comm, MPI.IN_PLACE, buf, MPI.SUM, "pieces", ring_window=window,
                               timeout=5)  # fmt: skip
            if not equal(buf, reference(comm, MPI.SUM, np.float64, n, seed)):
                raise AssertionError(f"seed={seed}: a wrong result before the refusal")

    raises_all(comm, ValueError, differing_calls, match="ring_window")
    failures: list[str] = []
    for seed in range(30):
        check_case(comm, failures, "pieces", MPI.SUM, np.float64, n + seed, ring_window=1 << 20)
    assert_all(comm, not failures, f"after the refused call: {failures[:5]}")


def test_pieces_bitwise_identical_on_awkward_floats(comm):
    failures: list[str] = []

    def body():
        for dtype in [np.float64, np.float32]:
            send = awkward(dtype, 20001, comm.rank)
            out = np.empty_like(send)
            shancoll.allreduce(comm, send, out, MPI.SUM, "pieces", block_size=4096)
            everyone = comm.allgather(out.tobytes())
            if any(b != everyone[0] for b in everyone):
                failures.append(str(np.dtype(dtype)))

    run_all(comm, body)
    assert_all(comm, not failures, f"results differ between ranks: {failures}")


def two_rank_nodes(comm):
    """Each physical node's ranks in pairs of consecutive ranks, each pair one
    node of two ranks (a lone last rank alone, as on nodes of one rank in the
    real-node runs; calls pass ranks_per_node=PAIR, whatever
    SHANCOLL_RANKS_PER_NODE says). The single-copy tests need Linux
    cross-memory attach between the processes: this checks it first, so that
    a machine without it fails with the reason."""
    node = physical_node(comm)
    pair = node.Split(node.rank // 2, comm.rank)
    node.Free()
    usable = pair.size == 1 or shancoll.topology(pair, PAIR)["single_copy"]
    assert_all(comm, usable or os.environ.get("SHANCOLL_SINGLE_COPY") == "0",
               "single-copy reads unavailable between these ranks: process_vm_readv refused "
               "(ptrace permission, a container's seccomp profile?)")  # fmt: skip
    return pair


PAIR = 2


def test_shan_single_copy_on_two_rank_nodes(comm):
    """A node of two ranks, from 16 KiB: below 64 KiB each rank reads the
    other's input once (one intra message of m bytes) and reduces the whole
    message; from 64 KiB each reads the other's half of its fraction and
    writes back its result (two messages of a fraction each). In place or
    not, several 256 KiB chunks and a short one, rank order for a
    non-commutative op, the same bits on both ranks and run to run."""
    failures: list[str] = []
    pair = two_rank_nodes(comm)
    counts = [2048, 3 * 32768 + 5] if REDUCED else [2048, 2049, 8191, 8192, 6 * 32768 + 5, 1 << 20]

    def single_copied(n: int, what: str) -> None:
        st = shancoll.last_stats(pair)
        fraction = n * (pair.rank + 1) // 2 - n * pair.rank // 2
        want = (1, 8 * n) if 8 * n < 65536 else (2, 2 * 8 * fraction)
        if (st.intra_messages, st.intra_bytes) != want:
            failures.append(f"{what} n={n}: intra {st.intra_messages}, {st.intra_bytes} B")

    def body():
        if pair.size != 2:
            return
        for n in counts:
            check_case(pair, failures, "shan", MPI.SUM, np.float64, n, ranks_per_node=PAIR)
            single_copied(n, "sum")
            buf = exact_data(np.float64, n, pair.rank)
            shancoll.allreduce(pair, MPI.IN_PLACE, buf, MPI.SUM, "shan", ranks_per_node=PAIR)
            single_copied(n, "in place")
            if not equal(buf, reference(pair, MPI.SUM, np.float64, n)):
                failures.append(f"in place n={n}")
        check_case(pair, failures, "shan", MPI.MAX, np.int16, 40001, ranks_per_node=PAIR)
        for n in [1500, 5000]:  # complex128, 24 KB (whole) and 80 KB (split)
            out = np.empty(n, np.complex128)
            shancoll.allreduce(pair, affine_data(n, pair.rank), out, compose_affine, "shan",
                               ranks_per_node=PAIR)  # fmt: skip
            inout = affine_data(n, pair.rank)
            shancoll.allreduce(pair, MPI.IN_PLACE, inout, compose_affine, "shan",
                               ranks_per_node=PAIR)  # fmt: skip
            if not (equal(out, in_rank_order(pair, n)) and equal(inout, out)):
                failures.append(f"non-commutative n={n}: not in rank order")
        send = awkward(np.float64, 10001, pair.rank)
        out, again = np.empty_like(send), np.empty_like(send)
        shancoll.allreduce(pair, send, out, MPI.SUM, "shan", ranks_per_node=PAIR)
        shancoll.allreduce(pair, send, again, MPI.SUM, "shan", ranks_per_node=PAIR)
        if out.tobytes() != again.tobytes() or len(set(pair.allgather(out.tobytes()))) != 1:
            failures.append("awkward floats: not the same bits on both ranks and runs")

    run_all(comm, body)
    pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_two_rank_nodes_go_whole_up_to_8_kib(comm):
    """A node of two ranks below single copy: up to 8 KiB each rank reads the
    other's whole input and reduces all of it (one flag crossing, one intra
    message of m bytes); above, the split pipeline. Sum and a non-commutative
    op in rank order, in place or not, the same bits on both ranks."""
    failures: list[str] = []
    pair = two_rank_nodes(comm)

    def body():
        if pair.size != 2:
            return
        for n, whole in [(8, True), (700, True), (1024, True), (1025, False), (1800, False)]:
            check_case(pair, failures, "shan", MPI.SUM, np.float64, n, ranks_per_node=PAIR)
            st = shancoll.last_stats(pair)
            if ((st.intra_messages, st.intra_bytes) == (1, 8 * n)) != whole:
                failures.append(f"n={n}: whole={whole} expected, {st}")
            buf = exact_data(np.float64, n, pair.rank)
            shancoll.allreduce(pair, MPI.IN_PLACE, buf, MPI.SUM, "shan", ranks_per_node=PAIR)
            if not equal(buf, reference(pair, MPI.SUM, np.float64, n)):
                failures.append(f"in place n={n}")
        for n in [300, 512]:  # complex128: 4800 B and 8 KiB
            out = np.empty(n, np.complex128)
            shancoll.allreduce(pair, affine_data(n, pair.rank), out, compose_affine, "shan",
                               ranks_per_node=PAIR)  # fmt: skip
            if (
                not equal(out, in_rank_order(pair, n))
                or len(set(pair.allgather(out.tobytes()))) != 1
            ):
                failures.append(f"non-commutative n={n}: not in rank order on both ranks")

    run_all(comm, body)
    pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_two_rank_nodes_without_single_copy(comm, monkeypatch):
    """SHANCOLL_SINGLE_COPY=0 (read when a node layout is built): the pipeline,
    two copies per chunk of 64 KiB, in place or not; topology() says so."""
    monkeypatch.setenv("SHANCOLL_SINGLE_COPY", "0")
    shancoll.reload_environment()
    failures: list[str] = []
    pair = two_rank_nodes(comm)
    n = 5 * 8192 + 77  # doubles: 6 chunks

    def body():
        if pair.size != 2:
            return
        check_case(pair, failures, "shan", MPI.SUM, np.float64, n, ranks_per_node=PAIR)
        buf = exact_data(np.float64, n, pair.rank)
        shancoll.allreduce(pair, MPI.IN_PLACE, buf, MPI.SUM, "shan", ranks_per_node=PAIR)
        if not equal(buf, reference(pair, MPI.SUM, np.float64, n)):
            failures.append("in place")
        if shancoll.last_stats(pair).intra_messages != 2 * 6:
            failures.append(f"not the pipeline: {shancoll.last_stats(pair)}")
        if shancoll.topology(pair, PAIR)["single_copy"]:
            failures.append("topology() says single copy")

    run_all(comm, body)
    pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_has_no_split_phase(comm):
    raises_all(comm, ValueError, shancoll.iallreduce, comm, np.ones(3), np.empty(3), MPI.SUM,
               "shan", match="algorithm")  # fmt: skip


def test_an_option_stays_with_its_call(comm):
    """single_copy given to one call is not carried into the calls after it
    (it was: written into the dict that every call without **options shares,
    so every later call of a collective asked for it, and one naming an
    algorithm other than release_gather was refused)."""
    send = np.arange(5, dtype=np.float64) + comm.rank
    want = np.empty(5)
    comm.Allreduce(send, want, MPI.SUM)
    out = np.empty(5)
    run_all(comm, shancoll.allreduce, comm, send, out, MPI.SUM, "release_gather",
            single_copy=True)  # fmt: skip
    for algorithm in ["shan", "ring", "pairwise_exchange"]:
        out = np.zeros(5)
        run_all(comm, shancoll.allreduce, comm, send, out, MPI.SUM, algorithm)
        assert_all(comm, np.array_equal(out, want), f"{algorithm}: {out} != {want}")
    buf = np.arange(3.0) if comm.rank == 0 else np.zeros(3)
    run_all(comm, shancoll.bcast, comm, buf, 0, "binomial")
    assert_all(comm, np.array_equal(buf, np.arange(3.0)), f"bcast: {buf}")


def test_consistent_false_lets_auto_pick_rank_varying_algorithms(comm):
    """Where they have fewer rounds: not at 2^k ranks. (Virtual nodes on one
    host: across hosts auto leaves the call to the MPI library.)"""
    comm = physical_node(comm)
    n = 33
    send = awkward(np.float64, n, comm.rank)
    used = []
    for consistent in [True, False]:  # one rank per node: the message-passing rules
        out = np.empty(n)
        run_all(comm, shancoll.allreduce, comm, send, out, consistent=consistent,
                ranks_per_node=1)  # fmt: skip
        used.append(shancoll.last_stats(comm).algorithm)
    # at 2^k ranks pairwise_exchange has as few rounds and better locality
    power_of_two = comm.size & (comm.size - 1) == 0
    want = "pairwise_exchange" if power_of_two else "nway_dissemination"
    assert_all(comm, used == ["pairwise_exchange", want], f"{used}")


def test_auto_on_one_node_goes_through_shared_memory(comm):
    """The built-in rule: shan at every size and for non-commutative ops;
    rank-consistent, so consistent=False changes nothing. (One node whatever
    the suite's SHANCOLL_RANKS_PER_NODE: the layout is given, on one physical
    node. A machine's rule table may choose release_gather instead.)"""
    shancoll.set_rules("builtin")
    try:
        check_auto_on_one_node(physical_node(comm))
    finally:
        shancoll.set_rules(None)


def check_auto_on_one_node(comm):
    alone = comm.size == 1
    for n, want in [(4, "shan"), (1 << 15, "shan")]:
        for consistent in [True, False]:
            out = np.empty(n)
            run_all(comm, shancoll.allreduce, comm, np.ones(n), out, consistent=consistent,
                    ranks_per_node=comm.size)  # fmt: skip
            got = shancoll.last_stats(comm).algorithm
            if alone:  # no shared memory to use: the message rules (tested above)
                want = got
            assert_all(comm, got == want and np.all(out == comm.size), f"n={n}: {got} != {want}")
    n = 33
    out = np.empty(n, np.complex128)
    run_all(comm, shancoll.allreduce, comm, affine_data(n, comm.rank), out, compose_affine,
            ranks_per_node=comm.size)  # fmt: skip
    got = shancoll.last_stats(comm).algorithm
    want = "pairwise_exchange" if alone else "shan"
    assert_all(comm, got == want and equal(out, in_rank_order(comm, n)), f"{got} != {want}")


# ---------------------------------------------------------------------------
# bad input


def bad_cases():
    ro = np.zeros(4)
    ro.flags.writeable = False
    return {
        "length mismatch": (np.ones(5), np.zeros(4), MPI.SUM, {}, "sendbuf"),
        "dtype mismatch": (np.ones(4, "f4"), np.zeros(4), MPI.SUM, {}, "sendbuf"),
        "bitwise on float": (np.ones(4), np.zeros(4), MPI.BAND, {}, "op"),
        "max on complex": (np.ones(4, "c16"), np.zeros(4, "c16"), MPI.MAX, {}, "op"),
        "sum on bool": (np.ones(4, "?"), np.zeros(4, "?"), MPI.SUM, {}, "op"),
        "float16": (np.ones(4, "f2"), np.zeros(4, "f2"), MPI.SUM, {}, "recvbuf"),
        "minloc": (np.ones(4), np.zeros(4), MPI.MINLOC, {}, "op"),
        "not an op": (np.ones(4), np.zeros(4), "sum", {}, "op"),
        "non-contiguous sendbuf": (np.ones(8)[::2], np.zeros(4), MPI.SUM, {}, "sendbuf"),
        "non-contiguous recvbuf": (np.ones(4), np.zeros(8)[::2], MPI.SUM, {}, "recvbuf"),
        "read-only recvbuf": (np.ones(4), ro, MPI.SUM, {}, "recvbuf"),
        "unknown algorithm": (np.ones(4), np.zeros(4), MPI.SUM, {"algorithm": "nope"}, "algorithm"),
        "negative ports": (np.ones(4), np.zeros(4), MPI.SUM, {"ports": -1}, "ports"),
        "negative timeout": (np.ones(4), np.zeros(4), MPI.SUM, {"timeout": -1.0}, "timeout"),
    }


@pytest.mark.parametrize("case", list(bad_cases()))
def test_bad_input_raises_everywhere_then_recovers(comm, case):
    send, recv, op, options, name = bad_cases()[case]
    raises_all(comm, ValueError, shancoll.allreduce, comm, send, recv, op, match=name, **options)
    failures: list[str] = []
    run_all(comm, check_case, comm, failures, "auto", MPI.SUM, np.float64, 9)
    assert_all(comm, not failures, "a valid call after an error")


# ---------------------------------------------------------------------------
# split phase


@pytest.mark.parametrize("algorithm", SPLIT_PHASE + ["auto"])
def test_split_phase_matches_and_counts_tests(comm, algorithm):
    n = 255
    failures = []

    def body():
        for op, dtype in [(MPI.SUM, np.float64), (MPI.BXOR, np.uint16), (MPI.MIN, np.int8)]:
            out = np.zeros(n, dtype)
            req = shancoll.iallreduce(comm, exact_data(dtype, n, comm.rank), out, op, algorithm)
            while not req.test():
                pass
            if not equal(out, reference(comm, op, dtype, n)) or not req.done:
                failures.append(f"{name_of(op)} {np.dtype(dtype)}")
            if req.test_calls < 1 or (algorithm != "mpi" and req.rounds != shancoll.last_stats(
                    comm).rounds):  # fmt: skip
                failures.append(f"test_calls {req.test_calls}, rounds {req.rounds}")
        if algorithm != "auto" and algorithm != "mpi":
            want = expected_rounds(algorithm, comm.size, None)
            if req.rounds != want:
                failures.append(f"rounds {req.rounds}, want {want}")

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures}")


def test_split_phase_sends_its_first_round_at_start(comm):
    """A request's first round leaves when iallreduce returns, before any test().

    Two ranks (one round): rank 0 starts and then makes no MPI call for a
    second; rank 1 must finish within half of it. (Eager messages of 64
    bytes need no progress on the sender once posted.) One rank: no rounds,
    so the request is complete at start.
    """
    n = 8
    send = exact_data(np.float64, n, comm.rank)
    out = np.zeros(n)
    if comm.size == 1:
        req = shancoll.iallreduce(comm, send, out, MPI.SUM, "pairwise_exchange")
        assert req.done and req.test_calls == 0 and equal(out, send)
        return
    pair = comm.Split(0 if comm.rank < 2 else MPI.UNDEFINED, comm.rank)
    outcome = "done"
    if pair != MPI.COMM_NULL:
        pair.Barrier()
        req = shancoll.iallreduce(pair, send, out, MPI.SUM, "pairwise_exchange")
        if pair.rank == 0:
            time.sleep(1.0)
        else:
            try:
                req.wait(timeout=0.5)
            except TimeoutError:
                outcome = "rank 1 waited for rank 0's first test()"
        req.wait()
        pair.Free()
    assert_all(comm, outcome == "done", f"{comm.allgather(outcome)}")
    ok = comm.rank >= 2 or equal(out, send + exact_data(np.float64, n, 1 - comm.rank))
    assert_all(comm, ok, "result")


def test_several_outstanding_requests(comm):
    n = 101
    algorithms = ["binomial", "dissemination", "mpi", "pairwise_exchange", "bruck"]
    outs = [np.zeros(n, np.int64) for _ in algorithms]

    def body():
        reqs = [shancoll.iallreduce(comm, exact_data(np.int64, n, comm.rank, seed=i), outs[i],
                                    MPI.SUM, a) for i, a in enumerate(algorithms)]  # fmt: skip
        while not all([r.test() for r in reversed(reqs)]):
            pass

    run_all(comm, body)
    for i in range(len(algorithms)):
        assert_all(comm, equal(outs[i], reference(comm, MPI.SUM, np.int64, n, seed=i)), f"{i}")


def test_wait_timeout_then_resume(comm):
    n = 64
    out = np.zeros(n, np.float64)
    send = exact_data(np.float64, n, comm.rank)
    outcome = None
    if comm.rank == 0:  # the others start only after rank 0's wait has timed out
        req = shancoll.iallreduce(comm, send, out, MPI.SUM, "dissemination")
        try:
            req.wait(timeout=0.05)
            outcome = "done" if comm.size == 1 else "no timeout"
        except TimeoutError:
            outcome = "timed out"
        for r in range(1, comm.size):
            comm.send("go", dest=r, tag=77)
        req.wait()
    else:
        comm.recv(source=0, tag=77)
        req = shancoll.iallreduce(comm, send, out, MPI.SUM, "dissemination")
        req.wait(timeout=60)
    assert_all(comm, equal(out, reference(comm, MPI.SUM, np.float64, n)), "result after resume")
    want = "done" if comm.size == 1 else "timed out"
    assert_all(comm, comm.bcast(outcome, root=0) == want, f"rank 0: {outcome}")
    check = np.zeros(3)
    run_all(comm, shancoll.allreduce, comm, np.ones(3), check)  # still usable
    assert_all(comm, equal(check, np.full(3, float(comm.size))), "usable afterwards")


def test_algorithms_listed(comm):
    # release_gather has its own suite (test_mpi_release_gather.py).
    registered = ALGORITHMS[:-3] + ["release_gather", "shan", "pieces", "mpi"]
    assert_all(comm, shancoll.algorithms("allreduce") == registered, "registry")
