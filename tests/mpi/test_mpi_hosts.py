"""Calls across hosts (physical nodes): shancoll.topology counts them, and
`auto` leaves such calls to the MPI library unless a rule table says
otherwise. Runs in every layout; the real-node runs (n2-hosts2-*, n4-hosts2-*)
are the ones with two hosts."""

from __future__ import annotations

import os

import numpy as np
import pytest
from _mpi_util import assert_all, physical_node, rule_table, run_all
from mpi4py import MPI

import shancoll


def hosts_of(comm: MPI.Comm) -> int:
    node = physical_node(comm)
    leaders = comm.allreduce(1 if node.rank == 0 else 0)
    node.Free()
    return leaders


def test_the_launcher_placed_the_ranks_on_the_hosts_asked_for(comm):
    """A real-node run (SHANCOLL_TEST_HOSTS, set by tests/test_mpi_suites.py) that
    MPI saw as one node would pass every other test while trying nothing
    across hosts: it fails here instead."""
    wanted = os.environ.get("SHANCOLL_TEST_HOSTS")
    if not wanted:
        pytest.skip("not a real-node run")
    hosts = hosts_of(comm)
    assert_all(comm, hosts == int(wanted), f"MPI sees {hosts} nodes, the launcher asked {wanted}")


def test_topology_counts_hosts(comm):
    hosts = hosts_of(comm)
    assert_all(comm, shancoll.topology(comm)["hosts"] == hosts, "topology's hosts")


def test_auto_across_hosts_is_the_mpi_library(comm):
    hosts = hosts_of(comm)
    shancoll.set_rules("builtin")  # the built-in rules, whatever table is shipped
    try:
        x, out = np.ones(16), np.zeros(16)
        run_all(comm, shancoll.allreduce, comm, x, out)
        ran = shancoll.last_stats(comm).algorithm
        assert_all(comm, (ran == "mpi") == (hosts > 1), f"auto allreduce ran {ran}, {hosts} hosts")
        gathered = np.zeros(16 * comm.size)
        run_all(comm, shancoll.allgather, comm, x, gathered)
        ran = shancoll.last_stats(comm).algorithm
        assert_all(comm, (ran == "mpi") == (hosts > 1 and comm.size > 1),
                   f"auto allgather ran {ran} on {hosts} hosts")  # fmt: skip
        run_all(comm, shancoll.bcast, comm, x, 0)
        ran = shancoll.last_stats(comm).algorithm
        assert_all(comm, (ran == "mpi") == (hosts > 1), f"auto bcast ran {ran} on {hosts} hosts")
    finally:
        shancoll.set_rules(None)


def test_shan_between_nodes_takes_the_table_row_for_its_layout(comm, tmp_path):
    """shan allreduce's step between nodes (here every rank its own node) runs
    what the rule table names for nodes of one rank on these hosts, under this
    network module where a row names one (N@<network>, rules.h), else the
    built-in rule without the node step (ring at 1 MiB, across hosts too):
    told apart by their rounds."""
    if comm.size < 2:
        pytest.skip("one rank: no step between nodes")
    network = shancoll.rules_info()["network"]
    other = "ofi" if network == "ucx" else "ucx"
    table = tmp_path / "between-nodes.tsv"  # every rank its own copy
    table.write_text(
        f"allreduce 0 * 2 * 2+ *@{other} binomial -\n"
        f"allreduce 0 * 2 * 2+ *@{network} pairwise_exchange -\n"
    )
    x = np.arange(1 << 17, dtype=np.int64) * (comm.rank + 1)  # 1 MiB
    want = np.zeros_like(x)
    comm.Allreduce(x, want, MPI.SUM)

    def rounds(algorithm: str) -> int:
        out = np.zeros_like(x)
        run_all(comm, shancoll.allreduce, comm, x, out, MPI.SUM, algorithm, ranks_per_node=1)
        assert_all(comm, np.array_equal(out, want), f"{algorithm}: wrong sums")
        return shancoll.last_stats(comm).rounds

    assert_all(comm, rounds("pairwise_exchange") != rounds("ring"), "the rounds tell them apart")
    named = "ring" if network == "unknown" else "pairwise_exchange"
    with rule_table(str(table)):
        shan = rounds("shan")
    assert_all(comm, shan == rounds(named), f"shan's step between nodes: not {named}")
