"""Allgather and allgatherv on inter-communicators, against mpi4py's Intercomm.Allgather(v).

COMM_WORLD is split into a first group of ``s`` ranks and a second of the
rest; both directions (the first group larger, the second larger) and p/q
not an integer where the rank count allows. An inter-communicator needs two
groups: at 1 rank the tests skip.

Settings after Kang, Traeff et al. (Section 5), scaled down: 1-4 for
allgather (equal blocks, A's blocks larger, B's larger; A is the larger
group), 5-8 for allgatherv (equal blocks, arithmetic sequences k*i, on every
split), plus zero blocks (one group, both groups, one process holding all).
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, fill, raises_all, run_all, same
from mpi4py import MPI

import shancoll

pytestmark = pytest.mark.skipif(
    MPI.COMM_WORLD.size < 2, reason="an inter-communicator needs two groups: 2 ranks or more"
)

INTER_ALGORITHMS = shancoll.algorithms("allgatherv", inter=True)
INTRA_ALGORITHMS = shancoll.algorithms("allgatherv")
K = 5 if REDUCED else 13  # elements per block (odd: segments do not divide evenly)


def first_group_sizes(size: int) -> list[int]:
    """Sizes of the first group: the first group larger, then the second larger."""
    if size < 2:
        return []
    if REDUCED:  # 4: 3+1, 1+3; 5: 3+2, 1+4; 8: 5+3, 1+7 (p/q not an integer, then 1 group of 1)
        return sorted({{4: 3, 5: 3, 8: 5}.get(size, size - 1), 1}, reverse=True)
    return list(range(size - 1, 0, -1))


class Split:
    """An inter-communicator between the first ``s`` ranks of ``comm`` and the rest."""

    def __init__(self, comm: MPI.Comm, s: int):
        self.s = s
        self.color = 0 if comm.rank < s else 1
        self.local = comm.Split(self.color, comm.rank)
        self.inter = self.local.Create_intercomm(0, comm, s if self.color == 0 else 0, tag=77)
        self.sizes = (s, comm.size - s)  # sizes of groups 0 and 1
        self.larger = 0 if s >= comm.size - s else 1  # the paper's A

    def free(self):
        self.inter.Free()
        self.local.Free()

    def __repr__(self):
        return f"{self.sizes[0]}+{self.sizes[1]}"


@pytest.fixture(scope="module")
def splits():
    world = MPI.COMM_WORLD
    made = [Split(world, s) for s in first_group_sizes(world.size)]
    yield made
    for sp in made:
        sp.free()


# ---------------------------------------------------------------------------
# block sizes: count(group, rank) in elements, identical on every process


def regular(k_larger: int, k_smaller: int):
    return lambda sp, g, i: k_larger if g == sp.larger else k_smaller


def arithmetic(k: int):
    return lambda sp, g, i: k * i


def one_holds_all(k: int):
    return lambda sp, g, i: k * sp.sizes[g] if i == sp.sizes[g] - 1 else 0


ALLGATHER_SETTINGS = {
    "equal blocks (settings 1, 2)": regular(K, K),
    "A larger blocks (setting 3)": regular(3 * K, K),
    "B larger blocks (setting 4)": regular(K, 3 * K),
    "single elements": regular(1, 1),
    "A sends nothing": regular(0, K),
    "B sends nothing": regular(K, 0),
    "nothing at all": regular(0, 0),
}
ALLGATHERV_SETTINGS = {
    "equal blocks (settings 5, 7)": regular(K, K),
    "arithmetic k*i (settings 6, 8)": arithmetic(K),
    "arithmetic, B larger": lambda sp, g, i: (3 if g != sp.larger else 1) * K * i,
    "one process holds all": one_holds_all(K),
    "all zero": regular(0, 0),
}
if REDUCED:
    ALLGATHER_SETTINGS = {
        k: v for k, v in ALLGATHER_SETTINGS.items() if "single" not in k and "at all" not in k
    }


def remote_counts(sp: Split, counts) -> list[int]:
    g = 1 - sp.color
    return [counts(sp, g, i) for i in range(sp.sizes[g])]


def my_block(sp: Split, counts, dtype, seed: int = 0) -> np.ndarray:
    n = counts(sp, sp.color, sp.inter.rank)
    return fill(dtype, n, MPI.COMM_WORLD.rank, seed)


def reference(sp: Split, send, rcounts, rdispls, length, dtype, regular_call: bool):
    """mpi4py's own intercomm collective on the same inputs (as bytes)."""
    dtype = np.dtype(dtype)
    item = dtype.itemsize
    ref = np.zeros(length, dtype)
    sendspec = [np.ascontiguousarray(send).view(np.uint8), MPI.BYTE]
    if regular_call:
        sp.inter.Allgather(sendspec, [ref.view(np.uint8), MPI.BYTE])
    else:
        rb = [c * item for c in rcounts]
        db = [d * item for d in rdispls]
        sp.inter.Allgatherv(sendspec, [ref.view(np.uint8), rb, db, MPI.BYTE])
    return ref


def check_allgather(sp: Split, counts, dtype, seed=0, **options):
    send = my_block(sp, counts, dtype, seed)
    rcounts = remote_counts(sp, counts)
    out = np.zeros(sum(rcounts), dtype)
    ref = reference(sp, send, None, None, out.size, dtype, True)
    run_all(MPI.COMM_WORLD, shancoll.allgather, sp.inter, send, out, **options)
    assert_all(MPI.COMM_WORLD, same(out, ref), f"allgather {sp} {dtype} {options}")


def check_allgatherv(sp: Split, counts, dtype, seed=0, reverse=False, **options):
    send = my_block(sp, counts, dtype, seed)
    rcounts = remote_counts(sp, counts)
    if reverse:  # blocks in reverse rank order with gaps: not the packed layout
        rdispls, at = [0] * len(rcounts), 1
        for i in reversed(range(len(rcounts))):
            rdispls[i], at = at, at + rcounts[i] + 1
        length = at
    else:
        rdispls = list(np.cumsum([0] + rcounts[:-1]))
        length = sum(rcounts)
    out = np.zeros(length, dtype)
    ref = reference(sp, send, rcounts, rdispls, length, dtype, False)
    run_all(MPI.COMM_WORLD, shancoll.allgatherv, sp.inter, send, [out, rcounts, rdispls], **options)
    assert_all(MPI.COMM_WORLD, same(out, ref), f"allgatherv {sp} {dtype} {options}")


# ---------------------------------------------------------------------------
# correctness


@pytest.mark.parametrize("algorithm", INTER_ALGORITHMS)
def test_allgather_settings(splits, algorithm):
    for sp in splits:
        for counts in ALLGATHER_SETTINGS.values():
            check_allgather(sp, counts, np.float64, algorithm=algorithm)


@pytest.mark.parametrize("algorithm", INTER_ALGORITHMS)
def test_allgatherv_settings(splits, algorithm):
    for sp in splits:
        for counts in ALLGATHERV_SETTINGS.values():
            check_allgatherv(sp, counts, np.float64, algorithm=algorithm)
        check_allgatherv(sp, arithmetic(K), np.float64, reverse=True, algorithm=algorithm)


DTYPES = [np.int8, np.float64]
if not REDUCED:
    DTYPES += [np.bool_, np.uint16, np.float32, np.complex128, np.longdouble]


def test_dtypes(splits):
    sp = splits[0]
    for dtype in DTYPES:
        for algorithm in INTER_ALGORITHMS:
            check_allgather(sp, regular(3, 2), dtype, algorithm=algorithm)
            check_allgatherv(sp, arithmetic(3), dtype, algorithm=algorithm)


def test_segmented_with_every_intragroup_algorithm(splits):
    for sp in splits[:1] if REDUCED else splits:
        for intra in INTRA_ALGORITHMS:
            check_allgather(sp, regular(K, 2 * K), np.int32, intra_algorithm=intra)
            check_allgatherv(sp, arithmetic(K), np.int32, intra_algorithm=intra)


def test_repeated_calls_with_changing_sizes(splits):
    sp = splits[-1]
    for seed, k in enumerate([7, 0, 2, 11, 1]):
        algorithm = INTER_ALGORITHMS[seed % len(INTER_ALGORITHMS)]
        check_allgatherv(sp, arithmetic(k), np.float32, seed, algorithm="segmented")
        check_allgather(sp, regular(k, k + 1), np.float32, seed, algorithm="segmented")
        check_allgatherv(sp, one_holds_all(k), np.float32, seed, algorithm=algorithm)


def test_mpi4py_specs(splits):
    """mpi4py's spec forms, read against the remote group."""
    sp = splits[0]
    world = MPI.COMM_WORLD
    remote = sp.inter.remote_size
    send = np.full(4, world.rank, dtype="i4")
    ref = np.zeros(4 * remote, "i4")
    sp.inter.Allgather(send, ref)
    for spec in ([np.zeros(4 * remote, "i4"), MPI.INT], [np.zeros(4 * remote, "i4"), 4]):
        run_all(world, shancoll.allgather, sp.inter, [send, MPI.INT], spec)
        assert_all(world, same(spec[0], ref), f"allgather spec {spec[1]}")
    evenly = np.zeros(4 * remote, "i4")  # a plain array: split evenly over the remote group
    run_all(world, shancoll.allgatherv, sp.inter, send, evenly)
    assert_all(world, same(evenly, ref), "allgatherv, counts inferred from the remote size")


# ---------------------------------------------------------------------------
# statistics: the paper's properties


def group_values(sp: Split, value: int) -> list[int]:
    """``value`` of every process of the local group, in local rank order."""
    return sp.local.allgather(value)


def test_segmented_allgather_statistics(splits):
    """Algorithm 1: ceil(p/q) rounds; b_j receives the |s_j| blocks of its subgroup, a_i one
    segment of floor or ceil(k_B/|s_j|) bytes; every byte crosses once, so each process ends
    with exactly its lower-bound share (the remote full message; M = the largest)."""
    world = MPI.COMM_WORLD
    for sp in splits:
        counts = regular(3 * K, 2 * K + 1)  # k_B not divisible by the subgroup sizes
        check_allgather(sp, counts, np.uint8, algorithm="segmented")
        st = shancoll.last_stats(sp.inter)
        p, q = sp.sizes[sp.larger], sp.sizes[1 - sp.larger]
        k_a, k_b = counts(sp, sp.larger, 0), counts(sp, 1 - sp.larger, 0)
        in_a = sp.color == sp.larger
        me = sp.inter.rank
        sizes = [p // q + (1 if j < p % q else 0) for j in range(q)]  # |s_j|
        if in_a:
            j = next(j for j in range(q) if me < sum(sizes[: j + 1]))  # a_me is in s_j
            ok_recv = st.remote_recv_bytes in (k_b // sizes[j], -(-k_b // sizes[j]))
            ok_sent = st.remote_sent_bytes == k_a and st.rounds == 1
        else:
            size_j = sizes[me]
            ok_recv = st.remote_recv_bytes == size_j * k_a and st.rounds == size_j
            ok_sent = st.remote_sent_bytes == k_b
        assert_all(world, ok_recv and ok_sent and st.algorithm == "segmented", f"{sp}: {st}")
        received = sum(group_values(sp, st.remote_recv_bytes))
        k_remote = k_b * q if in_a else k_a * p
        assert_all(world, received == k_remote, f"{sp}: the group received {received} bytes")
        assert_all(
            world, max(world.allgather(st.rounds)) == -(-p // q), f"{sp}: rounds != ceil(p/q)"
        )


def test_segmented_allgatherv_statistics(splits):
    """Algorithm 2: each process receives floor or ceil(K/n) bytes of the remote full
    message of K bytes (n: its group's size), sends each byte of its block exactly once;
    the group receives all K bytes once (M = max(K_A, K_B) per process in the end)."""
    world = MPI.COMM_WORLD
    for sp in splits:
        for counts in (arithmetic(K), one_holds_all(K)):
            check_allgatherv(sp, counts, np.uint8, algorithm="segmented")
            st = shancoll.last_stats(sp.inter)
            n = sp.inter.size
            k_remote = sum(remote_counts(sp, counts))
            mine = counts(sp, sp.color, sp.inter.rank)
            ok = (
                st.remote_recv_bytes in (k_remote // n, -(-k_remote // n))
                and st.remote_sent_bytes == mine
            )
            assert_all(world, ok, f"{sp}: {st} (remote full message {k_remote} bytes)")
            received = sum(group_values(sp, st.remote_recv_bytes))
            assert_all(world, received == k_remote, f"{sp}: the group received {received}")


def test_root_gather_statistics(splits):
    """The baseline: only the roots exchange, each a whole full message."""
    world = MPI.COMM_WORLD
    for sp in splits:
        counts = arithmetic(K)
        check_allgatherv(sp, counts, np.uint8, algorithm="root_gather")
        st = shancoll.last_stats(sp.inter)
        root = sp.inter.rank == 0
        k_remote = sum(remote_counts(sp, counts))
        want = k_remote if root else 0
        assert_all(world, st.remote_recv_bytes == want, f"{sp} root_gather: {st}")


# ---------------------------------------------------------------------------
# listing and errors


def test_algorithm_listing():
    assert shancoll.algorithms("allgatherv", inter=True) == ["segmented", "root_gather", "mpi"]
    assert shancoll.algorithms("allgather", inter=True) == ["segmented", "root_gather", "mpi"]


def bad_cases(sp: Split):
    remote = sp.inter.remote_size
    send = np.ones(2)
    recv = np.zeros(2 * remote)
    wrong = [2] * (remote + 1)
    return {
        "in place": (shancoll.allgather, MPI.IN_PLACE, recv, {}, "IN_PLACE"),
        "counts for the local group": (shancoll.allgatherv, send, [recv, wrong], {}, "counts"),
        "recvbuf too small": (
            shancoll.allgatherv, send, [np.zeros(1), [2] * remote], {}, "recvbuf"
        ),
        "dtype mismatch": (shancoll.allgather, np.ones(2, "f4"), recv, {}, "sendbuf"),
        "unknown algorithm": (shancoll.allgather, send, recv, {"algorithm": "ring"}, "algorithm"),
        "unknown intra_algorithm": (
            shancoll.allgatherv, send, recv, {"intra_algorithm": "segmented"}, "intra_algorithm"
        ),
        "negative timeout": (shancoll.allgather, send, recv, {"timeout": -1.0}, "timeout"),
    }  # fmt: skip


def test_bad_input_raises_everywhere_then_recovers(splits):
    world = MPI.COMM_WORLD
    sp = splits[0]
    for fn, send, recv, options, name in bad_cases(sp).values():
        raises_all(world, ValueError, fn, sp.inter, send, recv, match=name, **options)
    raises_all(
        world, ValueError, shancoll.allgather, world, np.ones(1), np.zeros(world.size),
        match="intra_algorithm", intra_algorithm="ring",
    )  # fmt: skip
    check_allgatherv(sp, arithmetic(3), np.float64)


@pytest.mark.parametrize("algorithm", ["segmented", "root_gather"])
def test_timeout_is_an_error_not_a_hang(splits, algorithm):
    """Only the first group enters: it must raise TimeoutError naming the wait.

    The inter-communicator is deliberately not freed: the failed call's sends
    are still in flight to the second group, whose shancoll state is intact;
    freeing it there would release its context id to a later communicator,
    which could then match them (why a broken InterComm keeps its dup). MPI_Finalize
    frees it."""
    world = MPI.COMM_WORLD
    sp = splits[0]
    inter = sp.inter.Dup()
    send, out = np.ones(2), np.zeros(2 * inter.remote_size)
    run_all(world, shancoll.allgatherv, inter, send, out, algorithm=algorithm)  # warm
    err = None
    if sp.color == 0:
        try:
            shancoll.allgatherv(inter, send, out, algorithm=algorithm, timeout=0.3)
        except TimeoutError as e:
            err = e
    ok = sp.color == 1 or (isinstance(err, TimeoutError) and "waited more than" in str(err))
    assert_all(world, ok, f"the first group alone: expected TimeoutError, got {err!r}")
    check_allgatherv(sp, arithmetic(2), np.float64)
