"""gather, gatherv, scatter, scatterv against mpi4py's own collectives,
every algorithm.

Blocks are compared bitwise with comm.Gatherv / comm.Scatterv on the same
bytes (every NumPy numeric dtype), at roots 0, the middle and the last rank,
with zero and uneven counts and displacements with gaps (never written),
in place at the root, on virtual nodes of 1, 2 and 3 ranks (an uneven last
node at odd rank counts), in pairs of ranks where single copy carries blocks
of 32 KiB and more, with changing sizes and roots on one communicator,
dup/split communicators and other MPI traffic in between. A block whose
size differs from what its receiver expects is refused on that rank (the
root for a gather, the receiver for a scatter) and the communicator stays
usable.

Run over 1-8 ranks by test_mpi_suites.py (SHANCOLL_RANKS_PER_NODE runs too).
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from _mpi_util import ALL_DTYPES, REDUCED, assert_all, fill, mpi_datatype, raises_all, run_all, same
from mpi4py import MPI
from test_mpi_allreduce import PAIR, two_rank_nodes

import shancoll

NAMED = shancoll.algorithms("gatherv")
ALGORITHMS = ["auto", *NAMED]
DTYPES = [np.float64, np.int32, np.uint8, np.complex64] if REDUCED else ALL_DTYPES
LAYOUTS = [None, 1, 2, 3]  # None: SHANCOLL_RANKS_PER_NODE's (or physical)
GAP = 3  # elements left unwritten between two blocks


def roots(size: int) -> list[int]:
    return sorted({0, size // 2, size - 1})


def uneven_counts(size: int, m: int, seed: int) -> list[int]:
    """Element counts with zeros and a larger block; identical on every rank."""
    rng = np.random.default_rng(seed + 100 * size + m)
    counts = rng.integers(0, m + 1, size=size).tolist()
    counts[seed % size] = 0
    counts[(seed + 1) % size] = m + 5
    return counts


def gapped_displs(counts: list[int]) -> list[int]:
    out, at = [], GAP
    for c in counts:
        out.append(at)
        at += c + GAP
    return out


def as_bytes(a: np.ndarray) -> list:
    return [a.view(np.uint8), MPI.BYTE]


def reference_gatherv(comm, send, counts, displs, root, length, dtype):
    """mpi4py's own Gatherv, as bytes (every dtype works)."""
    item = np.dtype(dtype).itemsize
    ref = np.zeros(length, dtype=dtype) if comm.rank == root else None
    spec = None
    if comm.rank == root:
        spec = [ref.view(np.uint8), [c * item for c in counts], [d * item for d in displs],
                MPI.BYTE]  # fmt: skip
    comm.Gatherv(as_bytes(send), spec, root)
    return ref


def reference_scatterv(comm, send, counts, displs, root, dtype):
    item = np.dtype(dtype).itemsize
    ref = np.zeros(counts[comm.rank], dtype=dtype)
    spec = None
    if comm.rank == root:
        spec = [send.view(np.uint8), [c * item for c in counts], [d * item for d in displs],
                MPI.BYTE]  # fmt: skip
    comm.Scatterv(spec, as_bytes(ref), root)
    return ref


def check_gatherv(comm, algorithm, counts, root, dtype, what, regular=False, **options):
    """One gather(v) against comm.Gatherv; gaps must keep their fill."""
    dtype = np.dtype(dtype)
    send = fill(dtype, counts[comm.rank], comm.rank, seed=root)
    displs = [r * counts[0] for r in range(comm.size)] if regular else gapped_displs(counts)
    length = max((d + c for d, c in zip(displs, counts, strict=True)), default=0) + GAP
    ref = reference_gatherv(comm, send, counts, displs, root, length, dtype)
    out = None
    if comm.rank == root:
        out = np.zeros(length, dtype=dtype)
        if regular:
            recv = [out[: comm.size * counts[0]], mpi_datatype(dtype)]
        else:
            recv = [out, counts, displs, mpi_datatype(dtype)]
    else:
        recv = None
    call = shancoll.gather if regular else shancoll.gatherv
    run_all(comm, call, comm, send, recv, root, algorithm, **options)
    ok = comm.rank != root or same(out, ref)
    assert_all(comm, ok, f"{what}: result differs from comm.Gatherv")


def check_scatterv(comm, algorithm, counts, root, dtype, what, regular=False, **options):
    dtype = np.dtype(dtype)
    displs = [r * counts[0] for r in range(comm.size)] if regular else gapped_displs(counts)
    length = max((d + c for d, c in zip(displs, counts, strict=True)), default=0) + GAP
    send = fill(dtype, length, root, seed=7) if comm.rank == root else None
    ref = reference_scatterv(comm, send, counts, displs, root, dtype)
    out = np.zeros(counts[comm.rank], dtype=dtype)
    spec = None
    if comm.rank == root:
        spec = [send[: comm.size * counts[0]], mpi_datatype(dtype)] if regular else [
            send, counts, displs, mpi_datatype(dtype)]  # fmt: skip
    call = shancoll.scatter if regular else shancoll.scatterv
    run_all(comm, call, comm, spec, out, root, algorithm, **options)
    assert_all(comm, same(out, ref), f"{what}: result differs from comm.Scatterv")


CHECKS = {"gather": check_gatherv, "scatter": check_scatterv}


@pytest.mark.parametrize("kind", ["gather", "scatter"])
@pytest.mark.parametrize("algorithm", NAMED)
def test_every_dtype_and_root(comm, algorithm, kind):
    """Every dtype once, the roots in turn; the v form and the regular one."""
    rs = roots(comm.size)
    for i, dtype in enumerate(DTYPES):
        root = rs[i % len(rs)]
        counts = uneven_counts(comm.size, 9, i)
        what = f"{kind}v {algorithm} {np.dtype(dtype)} root={root} counts={counts}"
        CHECKS[kind](comm, algorithm, counts, root, dtype, what)
        what = f"{kind} {algorithm} {np.dtype(dtype)} root={root}"
        CHECKS[kind](comm, algorithm, [i % 4] * comm.size, root, dtype, what, regular=True)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", ["gather", "scatter"])
@pytest.mark.parametrize("algorithm", ["auto", "shan", "binomial"])
def test_virtual_nodes(comm, algorithm, kind, layout):
    """The layouts (mpi does not read them): sizes and roots in turn."""
    sizes = [0, 1, 300] if REDUCED else [0, 1, 300, 20000]
    rs = roots(comm.size)
    for i, m in enumerate(sizes):
        root = rs[i % len(rs)]
        counts = uneven_counts(comm.size, m, root)
        what = f"{kind}v {algorithm} ranks_per_node={layout} m={m} root={root}"
        CHECKS[kind](comm, algorithm, counts, root, np.float64, what, ranks_per_node=layout)
        root = rs[(i + 1) % len(rs)]
        CHECKS[kind](comm, algorithm, [m] * comm.size, root, np.float32, what, regular=True,
                     ranks_per_node=layout)  # fmt: skip


@pytest.mark.parametrize("kind", ["gather", "scatter"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_pairs_single_copy(comm, algorithm, kind):
    """Nodes of two ranks: the pair channels by default; with single_copy
    (shan), blocks of 8 KiB and more by single copy, split between the root
    and the block's owner, smaller ones through the segment; both directions
    of the root, blocks larger and smaller than the root's own."""
    pair = two_rank_nodes(comm)
    try:
        sizes = [4, 40000] if REDUCED else [4, 5000, 40000, 300000]
        variants = [{}, {"single_copy": True}] if algorithm == "shan" else [{}]
        for m, options in itertools.product(sizes, variants):  # bytes per block: m * 8 (float64)
            for root in range(pair.size):
                counts = [m, m // 3 + 4097][: pair.size]
                what = f"{kind}v {algorithm} pair m={m} root={root} {options}"
                CHECKS[kind](pair, algorithm, counts, root, np.float64, what, ranks_per_node=PAIR,
                             **options)  # fmt: skip
                CHECKS[kind](pair, algorithm, [m] * pair.size, root, np.uint8, what,
                             regular=True, ranks_per_node=PAIR, **options)  # fmt: skip
                in_place = {"gather": in_place_gather, "scatter": in_place_scatter}[kind]
                for regular in (True, False):  # the root copies nothing of its own
                    ok = in_place(pair, algorithm, regular, root, m, ranks_per_node=PAIR,
                                  **options)  # fmt: skip
                    assert_all(pair, ok, f"{what} in place regular={regular}")
    finally:
        pair.Free()


def in_place_gather(comm, algorithm, regular, root, m, **options):
    p, r = comm.size, comm.rank
    counts = [m] * p if regular else uneven_counts(p, m, root)
    displs = [q * m for q in range(p)] if regular else gapped_displs(counts)
    length = max(d + c for d, c in zip(displs, counts, strict=True)) + GAP
    mine = fill(np.int64, counts[r], r)
    ref = reference_gatherv(comm, mine, counts, displs, root, length, np.int64)
    if r == root:
        out = np.zeros(length, dtype=np.int64)
        out[displs[r] : displs[r] + counts[r]] = mine
        recv = out[: p * m] if regular else [out, counts, displs]
        call = shancoll.gather if regular else shancoll.gatherv
        run_all(comm, call, comm, MPI.IN_PLACE, recv, root, algorithm, **options)
        return same(out, ref)
    run_all(comm, shancoll.gather if regular else shancoll.gatherv, comm, mine, None, root,
            algorithm, **options)  # fmt: skip
    return True


def in_place_scatter(comm, algorithm, regular, root, m, **options):
    p, r = comm.size, comm.rank
    counts = [m] * p if regular else uneven_counts(p, m, root)
    displs = [q * m for q in range(p)] if regular else gapped_displs(counts)
    length = max(d + c for d, c in zip(displs, counts, strict=True)) + GAP
    send = fill(np.int64, length, root) if r == root else None
    ref = reference_scatterv(comm, send, counts, displs, root, np.int64)
    call = shancoll.scatter if regular else shancoll.scatterv
    if r == root:
        before = send.copy()
        spec = send[: p * m] if regular else [send, counts, displs]
        run_all(comm, call, comm, spec, MPI.IN_PLACE, root, algorithm, **options)
        return same(send, before)  # the root's block stays where it is, nothing written
    out = np.zeros(counts[r], dtype=np.int64)
    run_all(comm, call, comm, None, out, root, algorithm, **options)
    return same(out, ref)


@pytest.mark.parametrize("regular", [True, False])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_in_place(comm, algorithm, regular):
    for root in roots(comm.size):
        for m in [0, 5, 6000]:
            ok = in_place_gather(comm, algorithm, regular, root, m)
            assert_all(comm, ok, f"gather in place {algorithm} regular={regular} root={root} m={m}")
            ok = in_place_scatter(comm, algorithm, regular, root, m)
            assert_all(comm, ok, f"scatter in place {algorithm} regular={regular} root={root}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_changing_calls_dup_split_and_traffic(comm, algorithm):
    """Sizes and roots change from call to call on one communicator, on a dup
    and a split, with MPI's own collectives and messages in between."""
    dup = comm.Dup()
    half = comm.Split(comm.rank % 2, comm.rank)
    try:
        for i, m in enumerate([3, 0, 4100, 17, 9000, 1, 64]):
            for c in (comm, dup, half):
                root = (i * 5 + 1) % c.size
                counts = uneven_counts(c.size, m, i)
                check_gatherv(c, algorithm, counts, root, np.float32, f"call {i} m={m}")
                c.Allreduce(MPI.IN_PLACE, np.ones(3), MPI.SUM)  # MPI's own traffic between
                check_scatterv(c, algorithm, counts, root, np.int16, f"call {i} m={m}")
                token = np.array([c.rank], dtype=np.int64)
                c.Sendrecv_replace(token, (c.rank + 1) % c.size, 9, (c.rank - 1) % c.size, 9)
    finally:
        half.Free()
        dup.Free()


@pytest.mark.parametrize("algorithm", ["shan", "binomial"])
def test_gather_count_mismatch_refused_at_root(comm, algorithm):
    """A rank that sends more than the root's recvcounts give it: the root
    refuses (ValueError naming recvcounts and the rank), nothing is written
    past the block, every other rank returns, and the next call works."""
    if comm.size < 2:
        pytest.skip("needs a second rank")
    root, liar = 0, comm.size - 1
    counts = [4] * comm.size
    send = np.full(counts[comm.rank] + (3 if comm.rank == liar else 0), comm.rank, dtype=np.int32)
    out = np.full(4 * comm.size + 8, -1, dtype=np.int32) if comm.rank == root else None
    error = None
    try:
        recv = [out, counts, [4 * q for q in range(comm.size)]] if comm.rank == root else None
        shancoll.gatherv(comm, send, recv, root, algorithm)
    except ValueError as e:
        error = str(e)
    if comm.rank == root:
        ok = error is not None and f"rank {liar}" in error and "recvcounts" in error
        ok = (
            ok and (out[4 * comm.size :] == -1).all() and (out[4 * liar : 4 * liar + 4] == -1).all()
        )
    else:
        ok = error is None
    assert_all(comm, ok, f"{algorithm}: the root refuses the block (got {error!r})")
    check_gatherv(comm, algorithm, [2] * comm.size, root, np.int32, "after the refusal")


@pytest.mark.parametrize("algorithm", ["shan", "binomial"])
def test_scatter_count_mismatch_refused_at_receiver(comm, algorithm):
    if comm.size < 2:
        pytest.skip("needs a second rank")
    root, short = 0, comm.size - 1
    counts = [6] * comm.size
    out = np.full(counts[comm.rank] - (2 if comm.rank == short else 0), -1, dtype=np.float64)
    send = np.arange(6.0 * comm.size) if comm.rank == root else None
    error = None
    try:
        spec = [send, counts] if comm.rank == root else None
        shancoll.scatterv(comm, spec, out, root, algorithm)
    except ValueError as e:
        error = str(e)
    if comm.rank == short:
        ok = error is not None and "recvbuf" in error and (out == -1).all()
    else:
        ok = error is None and (out == np.arange(6.0) + 6 * comm.rank).all()
    assert_all(comm, ok, f"{algorithm}: the receiver refuses the block (got {error!r})")
    check_scatterv(comm, algorithm, [2] * comm.size, root, np.int32, "after the refusal")


def test_bad_arguments(comm):
    p = comm.size
    send = np.zeros(2)
    raises_all(comm, ValueError, shancoll.gather, comm, send, np.zeros(2 * p), p, match="root")
    raises_all(comm, ValueError, shancoll.scatter, comm, np.zeros(2 * p), send, -1, match="root")
    raises_all(comm, ValueError, shancoll.gatherv, comm, send, np.zeros(2 * p), 0, "nope",
               match="algorithm")  # fmt: skip
    raises_all(comm, ValueError, shancoll.scatterv, comm, np.zeros(2 * p), send, 0,
               bogus_option=1)  # fmt: skip
    # in place only at the root: the others refuse it, the root (no recvbuf) too
    error = None
    try:
        shancoll.gather(comm, MPI.IN_PLACE, None, 0)
    except ValueError as e:
        error = str(e)
    want = "recvbuf" if comm.rank == 0 else "IN_PLACE"
    assert_all(comm, want in (error or ""), f"in place refused: got {error!r}")
    # the root alone: its own block does not match its receive count
    root_error = None
    if comm.rank == 0:
        try:
            shancoll.gatherv(comm, np.zeros(3), [np.zeros(2 * p), [2] * p], 0)
        except ValueError as e:
            root_error = str(e)
    assert_all(comm, comm.rank != 0 or "sendbuf" in (root_error or ""), f"got {root_error!r}")
    check_gatherv(comm, "auto", [1] * p, 0, np.float64, "after the refusals")


@pytest.mark.parametrize("kind", ["gather", "scatter"])
def test_stats_one_message_per_node(comm, kind):
    """shan on virtual nodes of 2: every node but the root's sends (gather)
    or receives (scatter) its blocks in one message; binomial's messages
    between nodes grow with ranks."""
    layout = 2
    topo = shancoll.topology(comm, layout)
    nodes = topo["node_count"]
    counts = [5] * comm.size
    totals = {}
    for algorithm in ["shan", "binomial"]:
        CHECKS[kind](comm, algorithm, counts, 0, np.float64, algorithm, ranks_per_node=layout)
        s = shancoll.last_stats(comm)
        totals[algorithm] = comm.allreduce(s.inter_messages)
        assert_all(comm, s.algorithm == algorithm and s.node_count == nodes, f"{s}")
    assert_all(comm, totals["shan"] == nodes - 1, f"shan: {totals['shan']} inter-node messages")
    assert_all(comm, totals["binomial"] >= totals["shan"], f"{totals}")


def test_inter_communicator_goes_to_mpi(comm):
    """On an inter-communicator the call is mpi4py's own (MPI's), with its root
    rules: the first group's root gathers the second group's blocks and
    scatters them back; algorithm names other than auto and mpi are refused."""
    if comm.size < 2:
        pytest.skip("needs two groups")
    color = int(comm.rank >= comm.size // 2)
    half = comm.Split(color, comm.rank)
    inter = half.Create_intercomm(0, comm, comm.size // 2 if color == 0 else 0, 17)
    try:
        mine = np.full(3, 10.0 * comm.rank)
        if color == 0:
            root = MPI.ROOT if half.rank == 0 else MPI.PROC_NULL
            got = np.zeros(3 * inter.remote_size)
            shancoll.gather(inter, None, got, root)
            want = np.repeat(10.0 * np.arange(comm.size // 2, comm.size), 3)
            ok = half.rank != 0 or same(got, want)
            shancoll.scatter(inter, got, None, root, "mpi")
        else:
            shancoll.gather(inter, mine, None, 0)
            back = np.zeros(3)
            shancoll.scatter(inter, None, back, 0)
            ok = same(back, mine)
        assert_all(comm, ok, "gather/scatter on an inter-communicator")
        raises_all(comm, ValueError, shancoll.gatherv, inter, mine, None, 0, "shan",
                   match="inter-communicator")  # fmt: skip
    finally:
        inter.Free()
        half.Free()


def pair_call(pair, kind, block, options):
    """One shan call of `kind` on a node of two ranks, blocks of `block`
    bytes; the bytes both ranks moved by cross-memory attach."""
    r = pair.rank
    if kind == "gather":
        recv = np.zeros(pair.size * block, np.uint8) if r == 0 else None
        shancoll.gather(pair, fill(np.uint8, block, r), recv, 0, algorithm="shan",
                        ranks_per_node=PAIR, **options)  # fmt: skip
        ref = pair.gather(fill(np.uint8, block, r))  # every rank calls it
        ok = r != 0 or same(recv, np.concatenate(ref))
    elif kind == "scatter":
        send = fill(np.uint8, pair.size * block, 5) if r == 0 else None
        out = np.zeros(block, np.uint8)
        shancoll.scatter(pair, send, out, 0, algorithm="shan", ranks_per_node=PAIR, **options)
        ref = pair.scatter(np.split(send, pair.size) if r == 0 else None)
        ok = same(out, ref)
    else:
        send, out = fill(np.uint8, pair.size * block, r), np.zeros(pair.size * block, np.uint8)
        shancoll.alltoall(pair, send, out, algorithm="shan", ranks_per_node=PAIR, **options)
        ref = np.zeros_like(out)
        pair.Alltoall(send, ref)
        ok = same(out, ref)
    moved = pair.allreduce(shancoll.last_stats(pair).single_copy_bytes)
    return ok, moved


@pytest.mark.parametrize("kind", ["gather", "scatter", "alltoall"])
def test_single_copy_from_8_kib_when_asked(comm, kind):
    """Nodes of two ranks, shan: with single_copy=1 (what a rule table asks
    where single copy won) blocks from 8 KiB cross by cross-memory attach,
    each block once (last_stats().single_copy_bytes over the pair), smaller
    ones through the segment; by default the pair channels, no single copy."""
    pair = two_rank_nodes(comm)
    off = os.environ.get("SHANCOLL_SINGLE_COPY") == "0"
    try:
        for block, options in itertools.product([8191, 8192, 20000], [{}, {"single_copy": True}]):
            ok, moved = pair_call(pair, kind, block, options)
            crossing = 2 * block if kind == "alltoall" else block
            want = crossing if options and block >= 8192 and pair.size == 2 and not off else 0
            what = f"{kind} pair block={block} {options}"
            assert_all(comm, ok, f"{what}: differs from mpi4py")
            assert_all(comm, moved == want, f"{what}: {moved} bytes by single copy, not {want}")
    finally:
        pair.Free()
