"""Properties of shan from last_stats, with virtual nodes.

What the core counts (allgatherv_shan.cc): inter_messages/inter_bytes are the
block messages a rank sends to the next node (its own share of its node's
blocks plus the blocks it forwards); the zero-byte READY handshakes are not
counted. block_count is the number of blocks of the whole call, each
contribution split at block_size. Hence, summed over all ranks, with N nodes:

  inter_messages == block_count * (N - 1)    every block enters every other node once
  inter_bytes    == total bytes * (N - 1)
  forwarded      == block_count * (N - 2)    (N >= 2)

independent of the number of ranks per node.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from _mpi_util import (
    REDUCED,
    assert_all,
    fill,
    make_counts,
    prefix,
    reference_allgatherv,
    run_all,
    same,
)
from mpi4py import MPI

import shancoll

BLOCK = 4096


def expected_layout(comm, ranks_per_node):
    """Nodes as shancoll defines them: physical nodes cut into runs of k consecutive ranks."""
    phys = shancoll.topology(comm, 0)["node_of"]
    if not ranks_per_node:
        keys = phys
    else:
        keys = [(phys[r], r // ranks_per_node) for r in range(comm.size)]
    order = sorted(set(keys), key=keys.index)
    node_of = [order.index(k) for k in keys]
    return len(order), node_of


def run_shan(comm, counts_bytes, ranks_per_node, transport="two_sided", block_size=BLOCK):
    r = comm.rank
    send = fill(np.uint8, counts_bytes[r], r)
    ref = reference_allgatherv(
        comm, send, counts_bytes, prefix(counts_bytes), np.uint8, sum(counts_bytes)
    )
    out = np.zeros(sum(counts_bytes), np.uint8)
    run_all(
        comm,
        shancoll.allgatherv,
        comm,
        send,
        [out, counts_bytes],
        algorithm="shan",
        block_size=block_size,
        transport=transport,
        ranks_per_node=ranks_per_node,
    )
    assert_all(comm, same(out, ref), f"shan result rpn={ranks_per_node} {transport}")
    stats = shancoll.last_stats(comm)
    return stats, comm.allgather(stats)


LAYOUTS = [1, 2, 3] if not REDUCED else [1, 3]


@pytest.mark.parametrize("transport", ["two_sided", "rma"])
@pytest.mark.parametrize("ranks_per_node", LAYOUTS)
@pytest.mark.parametrize("dist", ["regular", "decreasing", "broadcast", "random"])
def test_blocks_enter_every_other_node_once(comm, dist, ranks_per_node, transport):
    counts = make_counts(dist, comm.size, 10_000 if not REDUCED else 5_000)
    mine, all_stats = run_shan(comm, counts, ranks_per_node, transport)
    n_nodes, node_of = expected_layout(comm, ranks_per_node)
    blocks = sum(math.ceil(c / BLOCK) for c in counts)
    total_msgs = sum(s.inter_messages for s in all_stats)
    total_bytes = sum(s.inter_bytes for s in all_stats)
    total_fwd = sum(s.forwarded for s in all_stats)
    # one node of several ranks: single copy or the ring of chunk slots, no blocks
    # (test_mpi_allgatherv checks which)
    one_node = n_nodes == 1 and comm.size > 1
    checks = {
        "algorithm": mine.algorithm == "shan",
        "node_count": all(s.node_count == n_nodes for s in all_stats),
        "block_count": all(s.block_count == (0 if one_node else blocks) for s in all_stats),
        "inter_messages": total_msgs == blocks * (n_nodes - 1),
        "inter_bytes": total_bytes == sum(counts) * (n_nodes - 1),
        "forwarded": total_fwd == blocks * max(n_nodes - 2, 0),
    }
    # load balance: each node's own blocks are shared evenly by its ranks (within one)
    if n_nodes > 1:
        for node in range(n_nodes):
            ranks = [r for r in range(comm.size) if node_of[r] == node]
            own = [all_stats[r].inter_messages - all_stats[r].forwarded for r in ranks]
            node_blocks = sum(math.ceil(counts[r] / BLOCK) for r in ranks)
            checks[f"node {node} shares"] = sum(own) == node_blocks and max(own) - min(own) <= 1
    bad = [k for k, v in checks.items() if not v]
    assert_all(
        comm,
        not bad,
        f"{bad}: N={n_nodes} blocks={blocks} counts={counts} "
        f"msgs={total_msgs} fwd={total_fwd} node_count(rank0)="
        f"{all_stats[0].node_count}",
    )


@pytest.mark.parametrize("transport", ["two_sided", "rma"])
def test_nodes_of_one_rank_skip_the_segment_where_receives_are_posted(comm, transport):
    """On nodes of one rank each the two-sided transport receives the blocks
    straight into recvbuf: the only copy is the rank's own block (sendbuf to
    recvbuf). rma writes into the segment, so it also copies the others out."""
    if comm.size < 2:
        pytest.skip("needs 2 nodes")
    counts = make_counts("random", comm.size, 10_000)
    mine, _ = run_shan(comm, counts, 1, transport)
    own = counts[comm.rank]
    want = own if transport == "two_sided" else own + sum(counts)
    got = mine.intra_bytes
    assert_all(comm, got == want, f"{transport}: {got} bytes copied, want {want}")


def test_inter_node_messages_scale_with_nodes_not_ranks(comm):
    """One rank contributes B blocks. With 2 nodes every block crosses once, however
    many ranks the nodes have; with one rank per node it crosses P-1 times."""
    p = comm.size
    counts = [8 * BLOCK if r == 0 else 0 for r in range(p)]
    blocks = 8
    _, two_nodes = run_shan(comm, counts, max(1, math.ceil(p / 2)))
    n2, _ = expected_layout(comm, max(1, math.ceil(p / 2)))
    _, per_rank = run_shan(comm, counts, 1)
    n1, _ = expected_layout(comm, 1)
    _, one_node = run_shan(comm, counts, p)
    nn, _ = expected_layout(comm, p)
    t2 = sum(s.inter_messages for s in two_nodes)
    t1 = sum(s.inter_messages for s in per_rank)
    t0 = sum(s.inter_messages for s in one_node)
    ok = t2 == blocks * (n2 - 1) and t1 == blocks * (n1 - 1) and t0 == blocks * (nn - 1)
    assert_all(comm, ok, f"2 nodes: {t2}, per-rank nodes: {t1}, one node: {t0}")


def test_node_count_and_topology(comm):
    for rpn in [None, 0, 1, 2, 3]:
        topo = shancoll.topology(comm, rpn)
        run_all(
            comm,
            shancoll.allgather,
            comm,
            np.ones(2),
            np.zeros(2 * comm.size),
            algorithm="shan",
            ranks_per_node=rpn,
        )
        stats = shancoll.last_stats(comm)
        ok = stats.node_count == topo["node_count"] and len(topo["node_of"]) == comm.size
        if rpn:
            n_nodes, node_of = expected_layout(comm, rpn)
            ok = ok and topo["node_count"] == n_nodes and topo["node_of"] == node_of
            ok = ok and all(len(rs) <= rpn for rs in topo["ranks"])
        assert_all(comm, ok, f"rpn={rpn}: topology {topo}, stats {stats}")


def test_oversubscribed_as_the_node_is(comm):
    """``oversubscribed`` is true exactly when this physical node runs more of
    the ranks than the CPUs they may use, or the launcher put more of the job's
    ranks here than there are CPUs (virtual nodes change nothing)."""
    physical = comm.Split_type(MPI.COMM_TYPE_SHARED)
    cpus = set().union(*physical.allgather(os.sched_getaffinity(0)))
    launched = int(os.environ.get("MPI_LOCALNRANKS", os.environ.get(
        "OMPI_COMM_WORLD_LOCAL_SIZE", "0")))  # fmt: skip
    want = physical.size > len(cpus) or launched > os.cpu_count()
    physical.Free()
    got = [shancoll.topology(comm, rpn)["oversubscribed"] for rpn in (None, 1)]
    assert_all(comm, got == [want, want], f"oversubscribed {got}, want {want}")


def test_stats_of_other_algorithms(comm):
    counts = make_counts("regular", comm.size, 100)
    for algorithm in shancoll.algorithms("allgatherv"):
        r = comm.rank
        out = np.zeros(sum(counts))
        run_all(
            comm,
            shancoll.allgatherv,
            comm,
            fill(np.float64, counts[r], r),
            [out, counts],
            algorithm=algorithm,
        )
        s = shancoll.last_stats(comm)
        ok = s.algorithm == algorithm and s.rounds >= 0 and s.inter_messages >= 0
        assert_all(comm, ok, f"{algorithm}: {s}")
    # auto resolves to a registered name
    out = np.zeros(sum(counts))
    run_all(comm, shancoll.allgatherv, comm, np.zeros(counts[comm.rank]), [out, counts])
    s = shancoll.last_stats(comm)
    assert_all(comm, s.algorithm in shancoll.algorithms("allgatherv"), f"auto ran {s}")


def test_multi_block_forwarding_large(comm):
    """block_size much smaller than messages: many blocks pipelined and forwarded."""
    m = 100_000 if not REDUCED else 30_000
    for dist in ["regular", "random"]:
        counts = make_counts(dist, comm.size, m)
        for transport in ["two_sided", "rma"]:
            _, all_stats = run_shan(comm, counts, 1, transport)
            n_nodes, _ = expected_layout(comm, 1)
            blocks = sum(math.ceil(c / BLOCK) for c in counts)
            ok = sum(s.inter_messages for s in all_stats) == blocks * (n_nodes - 1)
            assert_all(comm, ok, f"{dist} {transport}: blocks {blocks}, N {n_nodes}")


@pytest.mark.parametrize("ranks_per_node", [0, 1, 2])
@pytest.mark.parametrize("per_rank", [1000, 3 << 20])
def test_auto_follows_the_measured_rule(comm, ranks_per_node, per_rank):
    """algorithm="auto" without a rule table runs the built-in rule of
    allgatherv_select.cc (docs/performance.md): the MPI library's across
    hosts, ring on one-rank nodes, ring on one node once the private result
    exceeds 2 MiB, otherwise shan; a shared result is always shan."""
    shancoll.set_rules("builtin")
    try:
        check_builtin_auto(comm, ranks_per_node, per_rank)
    finally:
        shancoll.set_rules(None)


def check_builtin_auto(comm, ranks_per_node, per_rank):
    nodes, _ = expected_layout(comm, ranks_per_node)
    counts = [per_rank] * comm.size
    send = fill(np.uint8, per_rank, comm.rank)
    ref = reference_allgatherv(comm, send, counts, prefix(counts), np.uint8, sum(counts))
    out = np.zeros(sum(counts), np.uint8)
    run_all(comm, shancoll.allgatherv, comm, send, [out, counts], ranks_per_node=ranks_per_node)
    assert_all(comm, same(out, ref), "auto result")
    if comm.size == 1:
        expected = "shan"
    elif shancoll.topology(comm)["hosts"] > 1:  # across hosts: the MPI library's
        expected = "mpi"
    elif nodes == comm.size:
        expected = "ring"
    elif nodes == 1 and sum(counts) > 2 << 20:
        expected = "ring"
    else:
        expected = "shan"
    chosen = shancoll.last_stats(comm).algorithm
    assert_all(comm, chosen == expected, f"auto chose {chosen}, rule says {expected}")
    view = shancoll.allgatherv_shared(comm, send, counts, ranks_per_node=ranks_per_node)
    assert_all(comm, same(view, ref), "shared result")
    assert_all(comm, shancoll.last_stats(comm).algorithm == "shan", "shared result is shan")
