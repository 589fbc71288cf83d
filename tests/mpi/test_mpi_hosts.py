"""Calls across hosts (physical nodes): shancoll.topology counts them, and
`auto` leaves such calls to the MPI library unless a rule table says
otherwise. Runs in every layout; the real-node runs (n2-hosts2-*, n4-hosts2-*)
are the ones with two hosts."""

from __future__ import annotations

import numpy as np
from _mpi_util import assert_all, physical_node, run_all
from mpi4py import MPI

import shancoll


def hosts_of(comm: MPI.Comm) -> int:
    node = physical_node(comm)
    leaders = comm.allreduce(1 if node.rank == 0 else 0)
    node.Free()
    return leaders


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
