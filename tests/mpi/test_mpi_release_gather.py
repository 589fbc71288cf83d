"""shancoll.bcast, shancoll.reduce and allreduce's release_gather against mpi4py's
comm.Bcast, comm.Reduce and comm.Allreduce.

Sizes: 0, 1, inline-sized (<= 56 bytes; a bcast's to 312), one 8 KiB chunk, and more than the
32 KiB buffer (chunked, pipelined). Data are small integers (also in float and
complex types), so every combine order is exact and results compare bit for
bit. Checks accumulate and are made collective once per test (few allgathers:
the suite runs oversubscribed).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, physical_node, raises_all, run_all
from mpi4py import MPI
from test_mpi_allreduce import equal, exact_data, name_of, two_rank_nodes, valid_pairs

import shancoll

ROOTED = ["release_gather", "binomial", "mpi"]
# 40, 312: inlined (a bcast spills past its flag's line from 57 bytes); 313 in a slot;
# 100 000 > the 32 KiB buffer: 13 chunks of 8 KiB
BYTE_SIZES = [0, 1, 40, 312, 313, 8192, 100_000]


def roots(comm) -> list[int]:
    return sorted({0, comm.size - 1}) if REDUCED else list(range(comm.size))


def check_bcast(comm, failures, n, root, dtype=np.float64, algorithm="release_gather", **opts):
    ref = exact_data(dtype, n, root, seed=n)
    mine = ref.copy() if comm.rank == root else np.zeros(n, dtype)
    shancoll.bcast(comm, mine, root, algorithm, **opts)
    if not equal(mine, ref):
        failures.append(f"bcast {algorithm} n={n} root={root} {np.dtype(dtype)} {opts}")


def check_reduce(comm, failures, n, root, op=MPI.SUM, dtype=np.int64, algorithm="release_gather",
                 in_place=False, **opts):  # fmt: skip
    send = exact_data(dtype, n, comm.rank)
    ref = np.zeros(n, dtype)
    comm.Reduce(send, ref, op, root)
    out = send.copy() if in_place and comm.rank == root else np.zeros(n, dtype)
    sendbuf = MPI.IN_PLACE if in_place and comm.rank == root else send
    shancoll.reduce(comm, sendbuf, out, op, root, algorithm, **opts)
    if comm.rank == root and not equal(out, ref):
        failures.append(f"reduce {algorithm} {name_of(op)} {np.dtype(dtype)} n={n} root={root} "
                        f"in_place={in_place} {opts}")  # fmt: skip


def check_allreduce(comm, failures, n, op=MPI.SUM, dtype=np.int64, in_place=False, **opts):
    send = exact_data(dtype, n, comm.rank)
    ref = np.zeros(n, dtype)
    comm.Allreduce(send, ref, op)
    out = send.copy() if in_place else np.zeros(n, dtype)
    shancoll.allreduce(comm, MPI.IN_PLACE if in_place else send, out, op, "release_gather",
                       **opts)  # fmt: skip
    if not equal(out, ref):
        failures.append(f"allreduce {name_of(op)} {np.dtype(dtype)} n={n} in_place={in_place} "
                        f"{opts}")  # fmt: skip


def collective_check(comm, body, what):
    failures: list[str] = []
    run_all(comm, body, failures)
    assert_all(comm, not failures, f"{what} differs from mpi4py: {failures[:5]}")


@pytest.mark.parametrize("algorithm", ROOTED)
def test_bcast_every_root_and_size(comm, algorithm):
    def body(failures):
        for root, nbytes in itertools.product(roots(comm), BYTE_SIZES):
            check_bcast(comm, failures, nbytes, root, np.uint8, algorithm)
        check_bcast(comm, failures, 1001, comm.size - 1, np.complex128, algorithm)

    collective_check(comm, body, "bcast")


@pytest.mark.parametrize("algorithm", ROOTED)
def test_reduce_every_root_and_size(comm, algorithm):
    def body(failures):
        for root, nbytes in itertools.product(roots(comm), BYTE_SIZES):
            check_reduce(comm, failures, nbytes // 8, root, MPI.SUM, np.int64, algorithm)
            check_reduce(comm, failures, nbytes // 8, root, MPI.MAX, np.float64, algorithm,
                         in_place=True)  # fmt: skip

    collective_check(comm, body, "reduce")


def test_every_op_and_dtype(comm):
    def body(failures):
        for op, dtype in valid_pairs():
            check_reduce(comm, failures, 7, comm.size - 1, op, dtype)
            check_allreduce(comm, failures, 7, op, dtype)

    collective_check(comm, body, "release_gather")


def local_sizes(comm) -> tuple[int, int]:
    """(ranks on this rank's node, ranks on the largest node) of the layout the tests use."""
    t = shancoll.topology(comm)
    return len(t["ranks"][t["node"]]), max(len(r) for r in t["ranks"])


def option_grid(largest_node: int):
    """Trees x skew x pipelining x inlining x topology (none; socket-leader first and last
    over two consecutive socket groups and over an interleaved map of up to three sockets);
    flag mode and data copy cycle along (reduced: a cross-section)."""
    trees = [{"tree": "flat"}, {"tree": "kary", "k": 2}, {"tree": "kary", "k": 3},
             {"tree": "knomial", "k": 2}, {"tree": "knomial", "k": 4}]  # fmt: skip
    interleaved = [r % 3 for r in range(largest_node)]
    topologies = [{"topology": "none"}] + [
        {"topology": order, "sockets": sockets}
        for order in ["socket_leader_first", "socket_leader_last"]
        for sockets in [2, interleaved]
    ]
    grid = []
    axes = [trees, ["left", "right"], [1, 4], [False, True], topologies]
    for i, (tree, skew, buffers, inline, topology) in enumerate(itertools.product(*axes)):
        if REDUCED and i % 7:
            continue
        grid.append(dict(tree, skew=skew, buffers=buffers, buffer_size=1024 * buffers,
                         inline=inline, read_from_parent=i % 2 == 0, data_copy=i % 4 < 2,
                         **topology))  # fmt: skip
    return grid


def test_options_every_tree_and_optimisation(comm):
    def body(failures):
        for i, opts in enumerate(option_grid(local_sizes(comm)[1])):
            root = i % comm.size
            bcast_opts = {k: v for k, v in opts.items() if k != "data_copy"}
            for n in [5, 700]:  # inline-sized, and 5.6 KB over 1 KiB slots: chunked
                check_bcast(comm, failures, n, root, np.float64, **bcast_opts)
                check_reduce(comm, failures, n, root, MPI.SUM, np.int64, **opts)
                check_allreduce(comm, failures, n, MPI.SUM, np.int32, in_place=bool(i % 2),
                                **opts)  # fmt: skip

    collective_check(comm, body, "release_gather with options")


def joined(order: str, sockets: int, source: str) -> str:
    """How last_stats names a topology-aware tree's joining (after its shape)."""
    return f", {order} over {sockets} socket{'s' if sockets > 1 else ''} ({source})"


def tree_stats(comm, nbytes, **opts) -> tuple[str, str]:
    """(reduce tree, bcast tree) of a release_gather allreduce of nbytes, checked on the way."""
    failures: list[str] = []
    check_allreduce(comm, failures, nbytes // 8, MPI.SUM, np.int64, **opts)
    assert not failures, failures
    stats = shancoll.last_stats(comm)
    return stats.reduce_tree, stats.bcast_tree


def test_default_trees_as_the_paper_chose(comm):
    """Below 512 B a right-skewed 4-nomial tree, from 512 B right-skewed socket-leader-last
    K-ary trees (K=3 below 8 KiB, K=2 from 8 KiB); bcast flat; here on two fake sockets."""
    mine, _ = local_sizes(comm)
    over = joined("socket_leader_last", min(mine, 2), "sockets option")
    want = {256: "knomial k=4 right", 504: "knomial k=4 right", 512: "kary k=3 right" + over,
            8184: "kary k=3 right" + over, 8192: "kary k=2 right" + over}  # fmt: skip
    got = {n: run_all(comm, tree_stats, comm, n, sockets=2) for n in want}
    expected = {n: (w, "flat left") if mine > 1 else ("", "") for n, w in want.items()}
    assert_all(comm, got == expected, f"default trees: {got}, expected {expected}")


def test_bcast_and_reduce_trees_apart(comm):
    """bcast_* and reduce_* options set one phase's tree, over the plain options."""
    mine, _ = local_sizes(comm)
    opts = dict(tree="knomial", k=2, topology="socket_leader_first", sockets=2, bcast_tree="kary",
                bcast_k=3, bcast_skew="right", reduce_topology="none")  # fmt: skip
    got = run_all(comm, tree_stats, comm, 4096, **opts)
    first = joined("socket_leader_first", min(mine, 2), "sockets option")
    want = ("knomial k=2 right", "kary k=3 right" + first) if mine > 1 else ("", "")
    assert_all(comm, got == want, f"separate trees: {got}, expected {want}")


def test_socket_map_of_the_topology(comm):
    """The automatic map (hwloc, SHANCOLL_SOCKETS or the one-socket fallback) and the trees
    that use it: a default reduce of 8 KiB names its socket count and source."""
    t = shancoll.topology(comm)
    mine, _ = local_sizes(comm)
    ok = len(t["socket_of"]) == mine and t["socket_count"] == max(t["socket_of"]) + 1
    ok = ok and (t["socket_source"] in ("hwloc", "SHANCOLL_SOCKETS")
                 or t["socket_source"].startswith("one socket assumed"))  # fmt: skip
    if t["socket_source"].startswith("one socket assumed"):
        ok = ok and t["socket_of"] == [0] * mine
    reduce_tree, _ = run_all(comm, tree_stats, comm, 8192)
    want = "kary k=2 right" + joined("socket_leader_last", t["socket_count"], t["socket_source"])
    ok = ok and reduce_tree == (want if mine > 1 else "")
    assert_all(comm, ok, f"topology {t}, reduce tree {reduce_tree!r}, expected {want!r}")


def test_alternating_collectives_roots_and_options(comm):
    """Buffer reuse across calls: the layout, tree and root change between calls
    while slower ranks may still be reading the previous call's slots."""
    variants = [{}, {"inline": True}, {"buffers": 2, "buffer_size": 512},
                {"tree": "kary", "k": 2, "read_from_parent": False}]  # fmt: skip

    def body(failures):
        for i in range(24 if REDUCED else 60):
            opts = variants[i % len(variants)]
            root = (i * 7) % comm.size
            n = [3, 50, 3000][i % 3]
            if i % 3 == 0:
                check_bcast(comm, failures, n, root, np.float32, **opts)
            elif i % 3 == 1:
                check_reduce(comm, failures, n, root, MPI.SUM, np.int32, **opts)
            else:
                check_allreduce(comm, failures, n, MPI.MAX, np.int16, **opts)

    collective_check(comm, body, "alternating calls")


def test_single_copy_every_tree(comm):
    """Single copy (parents write a share of each 256 KiB chunk into their children's
    buffers from 64 KiB, children read the rest; reduce on a node of two ranks split
    between them) over tree kinds, skew, flag mode and topology; below the write
    threshold, above it over several chunks, and the slots (single_copy=False)."""
    trees = [{"tree": "flat"}, {"tree": "kary", "k": 2}, {"tree": "knomial", "k": 2},
             {"tree": "knomial", "k": 4}]  # fmt: skip
    topologies = [{"topology": "none"}, {"topology": "socket_leader_last", "sockets": 2}]
    axes = [trees, ["left", "right"], [True, False], topologies]

    def body(failures):
        for i, (tree, skew, rfp, topology) in enumerate(itertools.product(*axes)):
            if REDUCED and i % 5:
                continue
            opts = dict(tree, skew=skew, read_from_parent=rfp, **topology)
            root = i % comm.size
            for nbytes in [20_000, 600_000]:
                check_bcast(comm, failures, nbytes // 8, root, np.float64, **opts)
                check_reduce(comm, failures, nbytes // 8, root, MPI.SUM, np.int64,
                             in_place=bool(i % 2), **opts)  # fmt: skip
                check_allreduce(comm, failures, nbytes // 4, MPI.MAX, np.int32,
                                in_place=bool(i % 3), **opts)  # fmt: skip
            check_bcast(comm, failures, 75_000, root, np.float64, single_copy=i % 2 == 0, **opts)

    collective_check(comm, body, "release_gather single copy")


def test_single_copy_shares_on_two_rank_nodes(comm):
    """A node of two ranks (whatever SHANCOLL_RANKS_PER_NODE says): bcast of
    600 000 bytes in chunks of 256 KiB, the root writes half of each (rounded
    down to 64 bytes), the child reads the rest; reduce: the root computes 60%,
    the other rank reads and writes the rest; allreduce: each computes half
    and writes it to the other."""
    pair = two_rank_nodes(comm)
    failures: list[str] = []

    def body():
        if pair.size != 2:
            return
        nbytes = 600_000
        chunks = [262_144, 262_144, nbytes - 2 * 262_144]
        written = sum(c // 2 // 64 * 64 for c in chunks)
        for root in [0, 1]:
            check_bcast(pair, failures, nbytes // 8, root, np.float64, ranks_per_node=2)
            st = shancoll.last_stats(pair)
            want = (3, written) if pair.rank == root else (3, nbytes - written)
            if (st.intra_messages, st.intra_bytes) != want:
                failures.append(f"bcast root={root}: {st.intra_messages}, {st.intra_bytes} B")
            n = nbytes // 8
            check_reduce(pair, failures, n, root, MPI.SUM, np.int64, ranks_per_node=2)
            st = shancoll.last_stats(pair)
            split = n * (60 if root == 0 else 40) // 100  # local rank 0's part
            part = 8 * (split if pair.rank == 0 else n - split)
            want = (1, part) if pair.rank == root else (2, 2 * part)
            if (st.intra_messages, st.intra_bytes) != want:
                failures.append(f"reduce root={root}: {st.intra_messages}, {st.intra_bytes} B")
        check_allreduce(pair, failures, n, MPI.SUM, np.int64, ranks_per_node=2)
        st = shancoll.last_stats(pair)
        half = 8 * (n * (pair.rank + 1) // 2 - n * pair.rank // 2)
        if (st.intra_messages, st.intra_bytes) != (2, 2 * half):
            failures.append(f"allreduce: {st.intra_messages}, {st.intra_bytes} B")

    run_all(comm, body)
    pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


@pytest.mark.parametrize(
    "nbytes, options, chunks",
    [
        (50_000, {"single_copy": False}, 7),  # below 64 KiB: the paper's 8 KiB chunks
        (100_000, {"single_copy": False}, 4),  # from 64 KiB: 32 KiB chunks
        (100_000, {"buffer_size": 32768, "buffers": 4, "single_copy": False}, 13),  # the paper's
        (100_000, {"buffers": 16, "single_copy": False}, 7),  # 256 KiB in 16 slots: 16 KiB chunks
        (12_000, {}, 2),  # below 32 KiB: slots, by default
        (600_000, {}, 3),  # single copy, by default from 32 KiB: 256 KiB chunks
        (1000, {"single_copy": True}, 1),
        # bcast from 2 MiB: 128 KiB chunks (23 of them; 92 in 32 KiB chunks)
        (3_000_000, {"single_copy": False}, 23),
        ((2 << 20) - 8, {"single_copy": False}, 64),  # just below: 32 KiB chunks
    ],
)
def test_chunks_counted_in_stats(comm, nbytes, options, chunks):
    comm = physical_node(comm)  # the chunks of one node's bcast
    buf = np.zeros(nbytes, np.uint8)
    shancoll.bcast(comm, buf, 0, "release_gather", ranks_per_node=0, **options)
    stats = shancoll.last_stats(comm)
    want = chunks if comm.size > 1 else 0  # one rank copies nothing
    assert_all(comm, stats.algorithm == "release_gather" and stats.block_count == want,
               f"bcast of {nbytes} bytes with {options}: {stats}")  # fmt: skip


def test_bcast_and_reduce_across_the_2_mib_chunk_threshold(comm):
    """Bcast switches from 32 KiB to 128 KiB chunks at 2 MiB (reduce does
    not): sizes on both sides of it and of a chunk and a full buffer, every
    root, alternating with reduces and small bcasts, so each change of chunk
    size finds the other ranks' earlier steps on the old layout."""
    sizes = [(2 << 20) - 8, 2 << 20, (2 << 20) + 8, (2 << 20) + (1 << 20) + (1 << 17) + 24]

    def body(failures):
        for root, nbytes in itertools.product(roots(comm), sizes):
            check_bcast(comm, failures, nbytes, root, np.uint8, single_copy=False)
            check_reduce(comm, failures, nbytes // 8, root, MPI.SUM, np.int64)
            check_bcast(comm, failures, 100_000, root, np.uint8, single_copy=False)
        check_bcast(comm, failures, (2 << 20) + 40, 0, np.float64)  # auto's own single copy

    collective_check(comm, body, "bcast/reduce around 2 MiB")


def test_non_commutative_reduce_keeps_rank_order(comm):
    # "first": a o b = a, associative but not commutative; the result is rank 0's input.
    op = MPI.Op.Create(lambda a, b, t: np.copyto(np.frombuffer(b, "f8"), np.frombuffer(a, "f8")),
                       commute=False)  # fmt: skip
    try:

        def body(failures):
            for algorithm, root in itertools.product(["binomial", "mpi", "auto"], roots(comm)):
                check_reduce(comm, failures, 5, root, op, np.float64, algorithm)

        collective_check(comm, body, "non-commutative reduce")
        send = np.ones(3)
        raises_all(comm, ValueError, shancoll.reduce, comm, send, np.zeros(3), op, 0,
                   "release_gather", match="op")  # fmt: skip
    finally:
        op.Free()


def test_algorithms_listed():
    for collective in ["bcast", "reduce"]:
        assert shancoll.algorithms(collective) == ROOTED
    assert "release_gather" in shancoll.algorithms("allreduce")


def test_bad_input_names_the_argument(comm):
    buf = np.zeros(4)
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, comm.size, match="root")
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, tree="star", match="tree")
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, tree="knomial", k=1, match="k")
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, buffers=-1, match="buffers")
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, buffer_size=100, match="buffer_size")
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, skew="up", match="skew")
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, topology="diagonal",
               match="topology")  # fmt: skip
    raises_all(comm, ValueError, shancoll.reduce, comm, buf, np.zeros(4), reduce_topology="x",
               match="reduce_topology")  # fmt: skip
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, bcast_k=2, match="bcast_k")
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, bcast_colour=1,
               match="bcast_colour")  # fmt: skip
    _, largest = local_sizes(comm)
    for sockets in [0, -1, "two", [0] * (largest + 1), [-1] * largest, 2.0, True]:
        raises_all(comm, ValueError, shancoll.allreduce, comm, buf, np.zeros(4), MPI.SUM,
                   "release_gather", sockets=sockets, match="sockets")  # fmt: skip
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, colour=1, match="colour")
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, "mpi", inline=True,
               match="algorithm")  # fmt: skip
    raises_all(comm, ValueError, shancoll.bcast, comm, buf, 0, "ring", match="algorithm")
    # MPI.IN_PLACE elsewhere than at the root: "sendbuf" (the root: a read-only recvbuf).
    readonly = np.zeros(4)
    readonly.flags.writeable = False
    raises_all(comm, ValueError, shancoll.reduce, comm, MPI.IN_PLACE, readonly, root=0,
               match="buf")  # fmt: skip
    raises_all(comm, ValueError, shancoll.allreduce, comm, buf, np.zeros(4), MPI.SUM, "ring",
               tree="flat", match="algorithm")  # fmt: skip
    # The communicator still works after refused calls (nothing was sent).
    failures: list[str] = []
    run_all(comm, check_bcast, comm, failures, 9, 0)
    assert_all(comm, not failures, f"bcast after refused calls: {failures}")


@pytest.mark.parametrize("inter", ["bogus", "release_gather"])
def test_inter_algorithm_refused_before_any_communication(comm, inter):
    """inter_algorithm runs on the node leaders only, after the node's reduce:
    it must be refused on every rank before anything is sent, or the other
    ranks would wait in the node's bcast. Needs a node with a non-leader
    (3 ranks, nodes of 2)."""
    if comm.size < 3:
        pytest.skip("needs a node leader and a non-leader on two nodes")
    x, out = np.ones(4), np.zeros(4)
    raises_all(comm, ValueError, shancoll.allreduce, comm, x, out, MPI.SUM, "release_gather",
               inter_algorithm=inter, ranks_per_node=2, timeout=5,
               match="inter_algorithm")  # fmt: skip
    run_all(comm, shancoll.allreduce, comm, x, out, MPI.SUM, "release_gather", ranks_per_node=2)
    assert_all(comm, np.array_equal(out, np.full(4, float(comm.size))), "allreduce after refusal")


def test_a_rule_s_options_apply_to_calls_without_options(comm, tmp_path_factory):
    """A rule table row may carry options (e.g. the AMD EPYC table's
    single_copy=0): auto then runs its algorithm with them, unless the call
    gives options of its own."""
    node = physical_node(comm)
    if node.size < 2:
        pytest.skip("a tree needs two ranks on a node")
    path = tmp_path_factory.mktemp("rules") / "kary3.tsv" if node.rank == 0 else None
    path = node.bcast(path)
    if node.rank == 0:
        rule = "bcast 0 * 1 * * release_gather tree=kary,k=3,topology=none,ranks_per_node=0"
        path.write_text(rule + "\n")  # the physical node, whatever SHANCOLL_RANKS_PER_NODE says
    node.Barrier()
    shancoll.set_rules(path)
    try:
        buf = np.arange(8.0)
        run_all(node, shancoll.bcast, node, buf, 0)
        tree = shancoll.last_stats(node).bcast_tree  # as the root ran it (leaves may say "")
        assert_all(node, node.rank != 0 or tree.startswith("kary k=3"), f"rule's tree: {tree}")
        run_all(node, shancoll.bcast, node, buf, 0, timeout=30)
        tree = shancoll.last_stats(node).bcast_tree
        assert_all(node, node.rank != 0 or not tree.startswith("kary k=3"),
                   f"a call with options of its own keeps them: {tree}")  # fmt: skip
    finally:
        shancoll.set_rules(None)
