"""alltoall / alltoallv against mpi4py's own collectives, every algorithm.

Run over 1-8 ranks by test_mpi_suites.py (SHANCOLL_RANKS_PER_NODE runs too:
the virtual-node layouts with uneven last nodes), with virtual nodes of 1,
2 and 3 ranks named by the calls as well. The reference is always
comm.Alltoall(v) on the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import ALL_DTYPES, REDUCED, assert_all, fill, mpi_datatype, raises_all, run_all, same
from mpi4py import MPI

import shancoll

WORLD = MPI.COMM_WORLD
ALGORITHMS = shancoll.algorithms("alltoallv")
LAYOUTS = [None, 1, 2, 3]  # None: SHANCOLL_RANKS_PER_NODE's (or physical)
DTYPES = [np.float64] if REDUCED else [np.float64, np.int32, np.uint8, np.complex128]
# Elements per block; "large" (~256 KiB per rank, single copy on one node) in full runs only.
SIZES = {"zero": 0, "one": 1, "odd": 37, "large": 32768}
SIZE_CLASSES = ["zero", "one", "odd"] if REDUCED else list(SIZES)
SENTINEL = 0xA5  # the gaps' bytes


def as_bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def reference_alltoall(comm, send, dtype, block):
    ref = np.zeros(comm.size * block, dtype=dtype)
    comm.Alltoall([as_bytes(send), MPI.BYTE], [as_bytes(ref), MPI.BYTE])
    return ref


def count_matrix(p: int, m: int, seed: int) -> np.ndarray:
    """C[i, j]: elements rank i sends rank j, identical on every rank (zeros included)."""
    rng = np.random.default_rng(seed * 31 + p * 1000 + m)
    c = rng.integers(0, 2 * m + 1, size=(p, p))
    if p > 1:
        c[int(rng.integers(0, p)), :] = 0  # a rank that sends nothing
        c[:, int(rng.integers(0, p))] = 0  # a rank that receives nothing
    return c


def gapped_displs(counts, gap: int, reverse: bool) -> tuple[list[int], int]:
    """Displacements with `gap` elements before every block (in reversed rank
    order if asked), and the buffer length."""
    displs = [0] * len(counts)
    pos = gap
    order = range(len(counts) - 1, -1, -1) if reverse else range(len(counts))
    for r in order:
        displs[r] = pos
        pos += int(counts[r]) + gap
    return displs, pos


class Vector:
    """One rank's alltoallv arguments for the count matrix C."""

    def __init__(self, comm, c: np.ndarray, dtype, seed: int = 0):
        r = comm.rank
        self.dtype = np.dtype(dtype)
        self.scounts = [int(x) for x in c[r, :]]
        self.rcounts = [int(x) for x in c[:, r]]
        self.sdispls, slen = gapped_displs(self.scounts, 1, reverse=False)
        self.rdispls, self.rlen = gapped_displs(self.rcounts, 2, reverse=True)
        self.send = fill(self.dtype, slen, r, seed)

    def recv(self) -> np.ndarray:
        # a byte pattern, not a value: long double's padding bytes are then defined too
        return np.full(self.rlen * self.dtype.itemsize, SENTINEL, np.uint8).view(self.dtype)

    def reference(self, comm) -> np.ndarray:
        ref, item = self.recv(), self.dtype.itemsize
        scale = lambda v: [x * item for x in v]  # noqa: E731
        comm.Alltoallv(
            [as_bytes(self.send), scale(self.scounts), scale(self.sdispls), MPI.BYTE],
            [as_bytes(ref), scale(self.rcounts), scale(self.rdispls), MPI.BYTE],
        )
        return ref


def check_alltoall(comm, algorithm, dtype, block, what, **options):
    send = fill(dtype, comm.size * block, comm.rank, seed=block)
    ref = reference_alltoall(comm, send, dtype, block)
    out = np.zeros_like(ref)
    run_all(comm, shancoll.alltoall, comm, send, out, algorithm, **options)
    assert_all(comm, same(out, ref), f"{what}: alltoall differs from comm.Alltoall")


def check_alltoallv(comm, algorithm, v: Vector, what, **options):
    ref = v.reference(comm)
    out = v.recv()
    send = [v.send, v.scounts, v.sdispls, mpi_datatype(v.dtype)]
    recv = [out, v.rcounts, v.rdispls, mpi_datatype(v.dtype)]
    run_all(comm, shancoll.alltoallv, comm, send, recv, algorithm, **options)
    assert_all(comm, same(out, ref), f"{what}: alltoallv differs from comm.Alltoallv")


@pytest.mark.parametrize("size_class", SIZE_CLASSES)
@pytest.mark.parametrize("rpn", LAYOUTS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_alltoall_matches_mpi(comm, algorithm, rpn, size_class):
    dtypes = DTYPES if size_class != "large" else DTYPES[:1]
    for dtype in dtypes:
        what = f"{algorithm} rpn={rpn} {size_class} {np.dtype(dtype)}"
        check_alltoall(comm, algorithm, dtype, SIZES[size_class], what, ranks_per_node=rpn)


@pytest.mark.parametrize("m", [3] if REDUCED else [3, 4096])
@pytest.mark.parametrize("rpn", LAYOUTS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_alltoallv_matches_mpi(comm, algorithm, rpn, m):
    """Uneven counts with zeros, a rank sending nothing and one receiving nothing,
    gaps between blocks and receive blocks in reversed rank order: the gaps keep
    their sentinel, as comm.Alltoallv leaves them."""
    for seed, dtype in enumerate(DTYPES):
        v = Vector(comm, count_matrix(comm.size, m, seed), dtype, seed)
        what = f"{algorithm} rpn={rpn} m={m} {np.dtype(dtype)}"
        check_alltoallv(comm, algorithm, v, what, ranks_per_node=rpn)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_dtype(comm, algorithm):
    """Plain arrays (the dtype is the array's) and [buf, counts, displs] specs."""
    p, r = comm.size, comm.rank
    for dtype in ALL_DTYPES:
        send = fill(dtype, 3 * p, r, seed=5)
        ref = reference_alltoall(comm, send, dtype, 3)
        out = np.zeros_like(ref)
        run_all(comm, shancoll.alltoall, comm, send, out, algorithm)
        assert_all(comm, same(out, ref), f"{algorithm} alltoall dtype {np.dtype(dtype)}")
        v = Vector(comm, count_matrix(p, 2, 7), dtype, 7)
        ref = v.reference(comm)
        out = v.recv()
        run_all(
            comm,
            shancoll.alltoallv,
            comm,
            [v.send, v.scounts, v.sdispls],
            [out, v.rcounts, v.rdispls],
            algorithm,
        )
        assert_all(comm, same(out, ref), f"{algorithm} alltoallv dtype {np.dtype(dtype)}")


@pytest.mark.parametrize("rpn", [None, 2])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_in_place(comm, algorithm, rpn):
    p, r = comm.size, comm.rank
    for block in (0, 5):
        buf = fill(np.int64, p * block, r, seed=block)
        ref = reference_alltoall(comm, buf, np.int64, block)
        run_all(comm, shancoll.alltoall, comm, MPI.IN_PLACE, buf, algorithm, ranks_per_node=rpn)
        assert_all(comm, same(buf, ref), f"{algorithm} rpn={rpn} alltoall in place, {block}")
    # alltoallv in place: one symmetric count matrix (what i sends j, j sends i)
    c = count_matrix(p, 4, 3)
    c = c + c.T
    v = Vector(comm, c, np.float32, 3)
    v.send = fill(np.float32, v.rlen, r, 3)  # the blocks to send lie in recvbuf
    v.scounts, v.sdispls = v.rcounts, v.rdispls
    ref = v.send.copy()  # the gaps keep what recvbuf held
    item = 4
    comm.Alltoallv(
        [as_bytes(v.send), [x * item for x in v.scounts], [x * item for x in v.sdispls], MPI.BYTE],
        [as_bytes(ref), [x * item for x in v.rcounts], [x * item for x in v.rdispls], MPI.BYTE],
    )
    buf = v.send.copy()
    run_all(
        comm,
        shancoll.alltoallv,
        comm,
        MPI.IN_PLACE,
        [buf, v.rcounts, v.rdispls],
        algorithm,
        ranks_per_node=rpn,
    )
    assert_all(comm, same(buf, ref), f"{algorithm} rpn={rpn} alltoallv in place")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_repeated_calls_changing_sizes(algorithm):
    """One communicator (a dup, then a split), sizes growing and shrinking from
    call to call (segments grow, layouts change), other MPI traffic between."""
    comm = WORLD.Dup()
    split = comm.Split(comm.rank % 2, comm.rank)
    sizes = [1, 300, 0, 17, 5000, 2, 64] if not REDUCED else [1, 300, 0, 17, 2]
    for c in (comm, split):
        for i, block in enumerate(sizes):
            rpn = [None, 1, 2][i % 3]
            check_alltoall(
                c, algorithm, np.float64, block, f"{algorithm} call {i}", ranks_per_node=rpn
            )
            total = c.allreduce(block)  # MPI's own traffic in between
            assert_all(c, total == block * c.size, "allreduce between")
            v = Vector(c, count_matrix(c.size, block % 97 + 1, i), np.int16, i)
            check_alltoallv(c, algorithm, v, f"{algorithm} v call {i}", ranks_per_node=rpn)
    split.Free()
    comm.Free()


def node_layout(comm, rpn):
    t = shancoll.topology(comm, ranks_per_node=rpn)
    return t["node_count"], t["ranks"], t["node"]


@pytest.mark.parametrize("rpn", [1, 2, 3])
def test_stats_show_the_aggregation(rpn):
    """Summed over a node's ranks: shan sends N - 1 messages to other nodes,
    pairwise n (P - n) (the ranks of node n times the ranks elsewhere), with
    every block non-empty; both move the same bytes between nodes."""
    comm = WORLD.Dup()
    p = comm.size
    nodes, ranks, node = node_layout(comm, rpn)
    n = len(ranks[node])
    send = np.ones(2 * p, dtype=np.int32)
    out = np.zeros_like(send)
    per_node = {}
    for algorithm in ("shan", "pairwise"):
        shancoll.alltoall(comm, send, out, algorithm, ranks_per_node=rpn)
        s = shancoll.last_stats(comm)
        inter = comm.allgather((s.inter_messages, s.inter_bytes))
        per_node[algorithm] = (
            sum(inter[q][0] for q in ranks[node]),
            sum(inter[q][1] for q in ranks[node]),
        )
        assert_all(comm, s.node_count == nodes, f"{algorithm}: node_count {s.node_count}")
    want_shan = nodes - 1
    want_pairwise = n * (p - n)
    assert_all(
        comm,
        per_node["shan"][0] == want_shan,
        f"shan: {per_node['shan'][0]} messages from node {node}, want {want_shan}",
    )
    assert_all(
        comm,
        per_node["pairwise"][0] == want_pairwise,
        f"pairwise: {per_node['pairwise'][0]} messages, want {want_pairwise}",
    )
    assert_all(
        comm,
        per_node["shan"][1] == per_node["pairwise"][1] == 8 * n * (p - n),
        f"inter-node bytes {per_node}",
    )
    comm.Free()


def test_auto_choice(comm):
    """auto without a table: shan for small alltoall blocks on one node, else
    the MPI library's; alltoallv always the MPI library's (its sizes differ
    from rank to rank)."""
    shancoll.set_rules("builtin")  # the machine's own tables have rules of their own
    try:
        built_in_choice(comm)
    finally:
        shancoll.set_rules(None)


def built_in_choice(comm):
    t = shancoll.topology(comm)
    one_node = t["node_count"] == 1 and t["hosts"] == 1
    x = np.ones(comm.size, dtype=np.float64)
    out = np.zeros_like(x)
    shancoll.alltoall(comm, x, out)
    got = shancoll.last_stats(comm).algorithm
    want = "shan" if one_node else "mpi"
    assert_all(comm, got == want, f"alltoall of 8-byte blocks: auto ran {got}, want {want}")
    big = np.ones(comm.size * 1024, dtype=np.float64)  # 8 KiB blocks
    shancoll.alltoall(comm, big, np.zeros_like(big))
    got = shancoll.last_stats(comm).algorithm
    assert_all(comm, got == "mpi", f"alltoall of 8 KiB blocks: auto ran {got}")
    shancoll.alltoallv(comm, [x, [1] * comm.size], [out, [1] * comm.size])
    got = shancoll.last_stats(comm).algorithm
    assert_all(comm, got == "mpi", f"alltoallv: auto ran {got}")


def test_bad_arguments():
    comm = WORLD.Dup()
    p, r = comm.size, comm.rank
    x, out = np.ones(2 * p), np.zeros(2 * p)
    err = shancoll.ArgumentError
    raises_all(
        comm,
        err,
        shancoll.alltoall,
        comm,
        x,
        out,
        "nope",
        match="algorithm: unknown alltoallv algorithm 'nope'",
    )
    raises_all(comm, err, shancoll.alltoall, comm, x, np.zeros(p), match="sendbuf")
    raises_all(
        comm, err, shancoll.alltoall, comm, x.astype(np.float32), out, match="sendbuf: element type"
    )
    raises_all(comm, err, shancoll.alltoall, comm, x, out, timeout=-1, match="timeout")
    raises_all(comm, err, shancoll.alltoall, comm, x, out, tree="flat", match="tree")
    if p > 1:
        raises_all(
            comm,
            err,
            shancoll.alltoall,
            comm,
            np.ones(p + 1),
            np.zeros(p + 1),
            match="not a multiple",
        )
    ones = [1] * p
    raises_all(
        comm,
        err,
        shancoll.alltoallv,
        comm,
        [x, ones],
        [out, [1] * (p + 1)],
        match=f"recvbuf: counts: expected {p} entries",
    )
    raises_all(
        comm,
        err,
        shancoll.alltoallv,
        comm,
        [x, ones],
        [out, [-1] * p],
        match="recvbuf: counts: negative count",
    )
    raises_all(
        comm,
        err,
        shancoll.alltoallv,
        comm,
        [x, [-1] * p],
        [out, ones],
        match="sendbuf: counts: negative count",
    )
    raises_all(
        comm, err, shancoll.alltoallv, comm, [x, ones], [out, [3] * p], match="recvbuf: too small"
    )
    own = [1] * p
    own[r] = 2
    raises_all(
        comm,
        err,
        shancoll.alltoallv,
        comm,
        [x, own],
        [out, ones],
        match=f"recvcounts[{r}] expects 8 bytes",
    )
    for message in (str(e) for e in _caught(shancoll.alltoall, comm, x, out, "nope")):
        assert_all(comm, f"rank {r}" in message, f"the error names no rank: {message}")
    check_alltoall(comm, "shan", np.float64, 2, "after refusals")  # still usable
    comm.Free()


def _caught(fn, *args):
    try:
        fn(*args)
    except shancoll.ArgumentError as e:
        return [e]
    return []


def test_checked_mode_catches_disagreeing_counts():
    """check=True: a rank whose send counts differ from what its receiver
    expects is refused on every rank, alike, before any data moves."""
    comm = WORLD.Dup()
    p, r = comm.size, comm.rank
    if p < 2:
        pytest.skip("one rank cannot disagree with itself")
    x, out = np.ones(4 * p), np.zeros(4 * p)
    scounts = [2] * p
    if r == p - 1:
        scounts[0] = 3  # rank p-1 sends rank 0 three, rank 0 expects two
    raises_all(
        comm,
        shancoll.ArgumentError,
        shancoll.alltoallv,
        comm,
        [x, scounts],
        [out, [2] * p],
        "pairwise",
        check=True,
        match=f"check: rank {p - 1} sends rank 0",
    )
    y = np.ones(8 * p if r == 0 else 4 * p)  # rank 0's blocks are twice the others'
    raises_all(
        comm,
        shancoll.ArgumentError,
        shancoll.alltoall,
        comm,
        y,
        np.zeros_like(y),
        check=True,
        match="check",
    )
    check_alltoall(comm, "pairwise", np.float64, 3, "after checked refusals", check=True)
    comm.Free()


def test_intercommunicator_refused():
    """Inter-communicators are refused (ArgumentError naming comm), and both groups
    stay usable."""
    if WORLD.size < 2:
        pytest.skip("an inter-communicator needs two groups")
    half = WORLD.Split(WORLD.rank % 2, WORLD.rank)
    inter = half.Create_intercomm(0, WORLD, 1 - WORLD.rank % 2, tag=17)
    x = np.ones(2 * inter.remote_size)
    raises_all(WORLD, shancoll.ArgumentError, shancoll.alltoall, inter, x, np.zeros_like(x),
               match="comm: inter-communicators")  # fmt: skip
    check_alltoall(half, "shan", np.float64, 3, "the group after the refusal")
    inter.Free()
    half.Free()
