"""Calls whose ranks disagree, without checked mode: MPI leaves them
undefined, but shancoll never reads or writes past a rank's own buffers.
The single-copy paths (two ranks of a node copying straight between their
buffers) agree on the call's shape before any copy and refuse a difference
on every rank. And displacements are each rank's own (MPI): a rank's block
lands where the receiver's displacements put it."""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import assert_all, physical_node, raises_all, run_all

import shancoll


@pytest.fixture
def pair(comm):
    """The two ranks of a node that copy straight between their buffers."""
    node = physical_node(comm)
    if node.size != 2 or not shancoll.topology(node, ranks_per_node=0)["single_copy"]:
        pytest.skip("single copy runs between the two ranks of a node")
    return node


@pytest.mark.parametrize("mine,theirs", [(8192, 4096), (16384, 8192), (4096, 2048)])
def test_allreduce_counts_that_differ_are_refused(pair, mine, theirs):
    n = mine if pair.rank == 0 else theirs  # 64/32 KiB, 128/64 KiB, 32/16 KiB of doubles
    x, out = np.ones(n), np.zeros(n)
    raises_all(pair, ValueError, shancoll.allreduce, pair, x, out, algorithm="shan",
               ranks_per_node=0, match="count")  # fmt: skip
    x, out = np.ones(9000), np.zeros(9000)  # still usable
    run_all(pair, shancoll.allreduce, pair, x, out, algorithm="shan", ranks_per_node=0)
    assert_all(pair, np.array_equal(out, np.full(9000, 2.0)), "allreduce afterwards")


@pytest.mark.parametrize("mine,theirs", [(2, 1), (2, 4), (7, 6)])
def test_small_allreduce_counts_that_differ_are_refused(comm, mine, theirs):
    """shan's one-line path (at most 56 bytes beside the ready flag): the flag
    carries the writer's size, so every local rank sees a count unlike its
    own and all of them refuse; the communicator stays usable."""
    comm = physical_node(comm)  # one-node paths: on real nodes, each node's ranks
    if comm.size < 2:
        pytest.skip("needs two ranks on one node")
    n = mine if comm.rank == 0 else theirs
    x, out = np.ones(n), np.zeros(n)
    raises_all(comm, ValueError, shancoll.allreduce, comm, x, out, algorithm="shan",
               ranks_per_node=0, timeout=5, match="count")  # fmt: skip
    x, out = np.ones(3), np.zeros(3)
    run_all(comm, shancoll.allreduce, comm, x, out, algorithm="shan", ranks_per_node=0)
    assert_all(comm, np.array_equal(out, np.full(3, float(comm.size))), "allreduce afterwards")


@pytest.mark.parametrize(
    "collective,mine,theirs",
    [(c, m, t) for c in ("bcast", "reduce", "allreduce") for m, t in [(2, 1), (2, 4)]]
    + [(c, m, t) for c in ("bcast", "reduce", "allreduce") for m, t in [(30, 20), (20, 39)]],
)  # inlined lines up to 312 bytes
def test_small_release_gather_sizes_that_differ_are_refused(comm, collective, mine, theirs):
    """release_gather's inlined messages (at most 312 bytes, a bcast's 56 on
    nodes of more than 8 ranks) carry their writer's size: a bcast's reader
    whose size differs from the root's, a
    reduce's parent whose child's differs (and, through it, the root), and
    for allreduce every rank (the root's refusal rides on its bcast) raise;
    the others return. The step is complete either way, so the communicator
    stays usable: more calls than the 8 lines in turn then give MPI's answer."""
    comm = physical_node(comm)  # one-node paths: on real nodes, each node's ranks
    if comm.size < 2:
        pytest.skip("needs two ranks on one node")
    n = mine if comm.rank == 0 else theirs
    x, out = np.ones(n), np.zeros(n)
    kw = {"algorithm": "release_gather", "ranks_per_node": 0, "timeout": 5}
    calls = {
        "bcast": lambda: shancoll.bcast(comm, x, root=0, **kw),
        "reduce": lambda: shancoll.reduce(comm, x, out, root=0, **kw),
        "allreduce": lambda: shancoll.allreduce(comm, x, out, **kw),
    }
    try:
        calls[collective]()
        refused = False
    except ValueError as e:
        refused = "count" in str(e)
    refusing = comm.allgather(refused)
    expected = {  # who sees a size unlike its own
        "bcast": [r != 0 for r in range(comm.size)],
        "reduce": [r == 0 for r in range(comm.size)],
        "allreduce": [True] * comm.size,
    }[collective]
    assert_all(comm, refusing == expected, f"refusing ranks {refusing}, expected {expected}")
    for i in range(10):
        y = np.full(3, float(i)) if comm.rank == 0 else np.zeros(3)
        run_all(comm, shancoll.bcast, comm, y, root=0, **kw)
        assert_all(comm, np.all(y == i), f"bcast {i} afterwards")
        total = np.zeros(3)
        run_all(comm, shancoll.allreduce, comm, np.full(3, 1.0), total, **kw)
        assert_all(comm, np.all(total == comm.size), f"allreduce {i} afterwards")


@pytest.mark.parametrize("changes", ["root", "reader"])
def test_small_bcast_that_differs_after_repeats_is_refused(comm, changes):
    """A loop of one inlined bcast takes the repeat path (straight from the
    last call's plan to the root's line, release_gather.cc); a call whose
    size then differs on one rank, the root's or a reader's, still reaches
    every reader as a refusal, whichever path each rank takes, and the loop
    goes on afterwards."""
    comm = physical_node(comm)  # one-node paths, as above
    if comm.size < 2:
        pytest.skip("needs two ranks on one node")
    kw = {"algorithm": "release_gather", "ranks_per_node": 0, "timeout": 5}

    def loop(tag):
        for i in range(20):  # more than the 8 lines in turn
            y = np.full(2, float(i + tag)) if comm.rank == 0 else np.zeros(2)
            run_all(comm, shancoll.bcast, comm, y, root=0, **kw)
            assert_all(comm, np.all(y == i + tag), f"bcast {i} of the loop {tag}")

    loop(0)
    odd = (comm.rank == 0) == (changes == "root")
    x = np.full(3 if odd else 2, 7.0) if comm.rank == 0 else np.zeros(3 if odd else 2)
    try:
        shancoll.bcast(comm, x, root=0, **kw)
        refused = False
    except ValueError as e:
        refused = "count" in str(e)
    refusing = comm.allgather(refused)
    expected = [r != 0 for r in range(comm.size)]
    assert_all(comm, refusing == expected, f"refusing ranks {refusing}, expected {expected}")
    loop(100)


def test_allgatherv_counts_that_differ_are_refused(pair):
    counts = [20000, 20000] if pair.rank == 0 else [10000, 20000]
    mine = np.ones(counts[pair.rank])
    out = np.zeros(sum(counts))
    raises_all(pair, ValueError, shancoll.allgatherv, pair, mine, [out, counts],
               algorithm="shan", ranks_per_node=0, match="recvcounts")  # fmt: skip


def test_allgatherv_displacements_are_each_rank_s_own(pair):
    """Rank 0 packs the blocks, rank 1 leaves a gap before each: both legal."""
    n = 20000  # 160 KiB in all: the single-copy path
    counts = [n, n]
    displs = [0, n] if pair.rank == 0 else [100, n + 200]
    mine = np.full(n, float(pair.rank + 1))
    out = np.zeros(2 * n + 200)
    run_all(pair, shancoll.allgatherv, pair, mine, [out, (counts, displs)], algorithm="shan",
            ranks_per_node=0)  # fmt: skip
    ok = all(np.all(out[displs[r] : displs[r] + n] == r + 1) for r in range(2))
    assert_all(pair, ok, f"blocks at this rank's displacements {displs}")


@pytest.mark.parametrize("root_bytes,other_bytes", [(1 << 20, 256 << 10), (256 << 10, 1 << 20)])
def test_bcast_sizes_that_differ_are_refused(pair, root_bytes, other_bytes):
    """release_gather's single-copy bcast writes into its child's buffer and
    reads its parent's: a child with a smaller buffer was overwritten past
    its end, a larger one read past the parent's. Both refuse instead."""
    n = (root_bytes if pair.rank == 0 else other_bytes) // 8
    buf = np.full(n, 1.0) if pair.rank == 0 else np.zeros(n)
    guard = np.zeros(n + 4096)  # the child's buffer is a view: what follows it must stay zero
    if pair.rank == 1:
        guard[:n] = buf
        buf = guard[:n]
    raises_all(pair, ValueError, shancoll.bcast, pair, buf, 0, algorithm="release_gather",
               ranks_per_node=0, single_copy=True, match="count")  # fmt: skip
    assert_all(pair, not np.any(guard[n:]), "nothing written past the child's buffer")
    x = np.full(40000, 3.0) if pair.rank == 0 else np.zeros(40000)  # still usable
    run_all(pair, shancoll.bcast, pair, x, 0, algorithm="release_gather", ranks_per_node=0,
            single_copy=True)  # fmt: skip
    assert_all(pair, np.all(x == 3.0), "bcast afterwards")


# A call whose ranks disagree: where the node's flags see it they refuse it at
# once; between nodes (virtual or real) it ends at this timeout. At 1 s these
# waits took half of a 2 x 1 hosts run, and 10-12 s of every other suite at
# 0.5 s.
MISMATCH_TIMEOUT = 0.3
GUARD = 4096  # elements after each receive buffer that must stay untouched
SENTINEL = 12345.0
SHARED_MEMORY_ALGORITHMS = [
    ("bcast", "release_gather"), ("reduce", "release_gather"), ("allreduce", "shan"),
    ("allreduce", "release_gather"), ("allgather", "shan"), ("gather", "shan"),
    ("scatter", "shan"), ("alltoall", "shan"), ("scan", "shan"), ("exscan", "shan"),
    ("reduce_scatter_block", "shan"),
]  # fmt: skip


def _mismatched_call(comm, collective, algorithm, n, guarded, timeout, **options):
    """The collective with `n` elements per block on this rank (float64)."""
    p, rank = comm.size, comm.rank
    kw = {"algorithm": algorithm, "ranks_per_node": 0, "timeout": timeout, **options}
    ones = np.ones
    if collective == "bcast":
        buf = guarded(n)
        buf[:] = 1.0 if rank == 0 else 0.0
        return lambda: shancoll.bcast(comm, buf, root=0, **kw)
    calls = {
        "reduce": lambda: shancoll.reduce(comm, ones(n), guarded(n), root=0, **kw),
        "allreduce": lambda: shancoll.allreduce(comm, ones(n), guarded(n), **kw),
        "allgather": lambda: shancoll.allgather(comm, ones(n), guarded(n * p), **kw),
        "gather": lambda: shancoll.gather(
            comm, ones(n), guarded(n * p) if rank == 0 else None, root=0, **kw),
        "scatter": lambda: shancoll.scatter(
            comm, ones(n * p) if rank == 0 else None, guarded(n), root=0, **kw),
        "alltoall": lambda: shancoll.alltoall(comm, ones(n * p), guarded(n * p), **kw),
        "scan": lambda: shancoll.scan(comm, ones(n), guarded(n), **kw),
        "exscan": lambda: shancoll.exscan(comm, ones(n), guarded(n), **kw),
        "reduce_scatter_block": lambda: shancoll.reduce_scatter_block(
            comm, ones(n * p), guarded(n), **kw),
    }  # fmt: skip
    return calls[collective]


class _Guarded:
    """Receive buffers, each followed by GUARD elements that must stay as set."""

    def __init__(self):
        self.made = []

    def __call__(self, count):
        whole = np.full(count + GUARD, SENTINEL)
        whole[:count] = 0.0
        self.made.append((whole, count))
        return whole[:count]

    def intact(self):
        return all(np.all(whole[count:] == SENTINEL) for whole, count in self.made)


@pytest.mark.parametrize("collective,algorithm", SHARED_MEMORY_ALGORITHMS)
def test_shared_memory_paths_stay_in_bounds_when_counts_differ(comm, collective, algorithm):
    """Rank 0 passes one count, the others half or twice it, at inline, slot,
    pipelined and single-copy sizes. MPI leaves the outcome undefined, but
    every rank returns or raises within the deadline, nothing is written past
    any rank's receive buffer, and no rank crashes. Before the node segment
    agreed on its size, a scan whose ranks differed mapped more than the
    leader had made and died of SIGBUS."""
    _run_mismatched(comm, collective, algorithm)


@pytest.mark.parametrize("transport", ["two_sided", "rma"])
def test_allgather_between_nodes_stays_in_bounds_when_counts_differ(comm, transport):
    """The same across virtual nodes of one rank: shan's remote writers put
    blocks into other nodes' segments at offsets of their own layout. With
    the rma transport, a writer whose counts were larger put past the target
    node's window (segmentation fault) before every node's segment took the
    largest size asked for and the puts were bounded by it."""
    if comm.size < 2:
        pytest.skip("needs two nodes")
    _run_mismatched(comm, "allgather", "shan", ranks_per_node=1, transport=transport)


def _run_mismatched(comm, collective, algorithm, **options):
    agreed = _mismatched_call(comm, collective, algorithm, 64, _Guarded(), 5, **options)
    run_all(comm, agreed)  # the options are valid: only the counts make the calls below fail
    for root_count in (2, 256, 8192, 131072):  # 16 B to 1 MiB per block
        for factor in (0.5, 2):
            n = root_count if comm.rank == 0 else int(root_count * factor)
            guarded = _Guarded()
            dup = comm.Dup()  # a failed call leaves its communicator unusable
            try:
                _mismatched_call(
                    dup, collective, algorithm, n, guarded, MISMATCH_TIMEOUT, **options
                )()
            except Exception:  # noqa: BLE001 - any clear error is a fine outcome
                pass
            dup.Free()
            what = f"{collective} {root_count}x{factor}: past a receive buffer"
            assert_all(comm, guarded.intact(), what)
            comm.Barrier()
