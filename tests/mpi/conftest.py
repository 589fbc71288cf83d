"""MPI test configuration: run with ``mpiexec -n N python -m pytest tests/mpi``.

Every test runs on every rank. A failure must be collective, or the ranks
that passed would walk into the next test's collectives and hang: the hook
below exchanges every test's outcome, and a test that failed on any rank
fails on all of them (naming the ranks and the first error). Inside a test,
checks between collectives use ``assert_all`` (from ``_mpi_util``) for the
same reason.

Only rank 0 writes pytest's report to stdout (the other ranks' reports would
interleave with it; since failures are collective, rank 0 reports every
failure, quoting the first failing rank's error). stderr stays open on every
rank, so faulthandler's stack dumps of a hung test come from all of them.

Environment (set by tests/test_mpi_suites.py):
  SHANCOLL_TEST_MODE=reduced        a smaller matrix (oversubscribed rank counts)
  SHANCOLL_RANKS_PER_NODE=k         virtual nodes for algorithm 'auto'/'shan'
  SHANCOLL_TEST_ALL_RANKS_OUTPUT=1  every rank writes its report
"""

from __future__ import annotations

import os
import sys

import pytest
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))

from _mpi_util import sync_outcome  # noqa: E402


def pytest_configure(config):
    if MPI.COMM_WORLD.rank != 0 and os.environ.get("SHANCOLL_TEST_ALL_RANKS_OUTPUT") != "1":
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)


def pytest_report_header(config):
    comm = MPI.COMM_WORLD
    mode = os.environ.get("SHANCOLL_TEST_MODE", "full")
    return (
        f"shancoll MPI suite: {comm.size} ranks, mode={mode}"
        f", SHANCOLL_RANKS_PER_NODE={os.environ.get('SHANCOLL_RANKS_PER_NODE', '')!r}, "
        f"{MPI.Get_library_version().splitlines()[0]}"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        result = yield
    except BaseException as e:
        sync_outcome(MPI.COMM_WORLD, item.nodeid, e)
        raise
    sync_outcome(MPI.COMM_WORLD, item.nodeid, None)
    return result


@pytest.fixture
def comm():
    return MPI.COMM_WORLD
