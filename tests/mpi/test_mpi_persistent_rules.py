"""Persistent `auto` by the rule table (rules.h, <coll>_init rows): a row
naming the collective's persistent engine gives it every size it fits, a
row saying `mpi` gives the MPI library's own (the inline engines too), a
row's single_copy=0 keeps the single-copy engines out, and without a row
the inline engines alone run (the built-in rule, what a machine no table was
measured on gets). Each request's results against mpi4py's call.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import assert_all, rule_table

import shancoll

TIMEOUT = 30.0
TABLE = """\
allreduce_init\t0\t*\t1\t*\t*\t*\tmpi\t-
gather_init\t0\t1024\t1\t*\t*\t*\tmpi\t-
gather_init\t1024\t32768\t1\t*\t*\t*\tshan\t-
gather_init\t32768\t*\t1\t*\t*\t*\tshan\tsingle_copy=0
bcast_init\t0\t*\t1\t*\t*\t*\trelease_gather\t-
"""


def one_node(comm) -> bool:
    return shancoll.topology(comm)["node_count"] == 1 and comm.size > 1


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "rules.tsv"
    path.write_text(TABLE)
    with rule_table(str(path)):
        yield


def gathered(comm, n, algorithm_wanted, what):
    """A persistent gather of n doubles per rank by auto, run twice, against mpi4py's."""
    mine, out = np.zeros(n), np.zeros(n * comm.size)
    req = shancoll.gather_init(comm, mine, out, 0)
    assert_all(comm, req.algorithm == algorithm_wanted, f"{what}: {req.algorithm}")
    for k in range(2):
        mine[:] = np.arange(n) + 1000 * k + 100 * comm.rank
        want = np.zeros_like(out)
        comm.Gather(mine, want, 0)
        req.start()
        req.wait(timeout=TIMEOUT)
        assert_all(comm, comm.rank != 0 or np.array_equal(out, want), f"{what}: run {k}")
    req.free()


def test_rows_choose_the_engine_or_the_library(comm, table):
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    gathered(comm, 1, "mpi", "gather 8 B, an mpi row")
    gathered(comm, 256, "shan", "gather 2 KiB, a shan row (the deposit)")
    # Past the deposit's bound (16 KiB) only the single copy fits, which the row's option keeps out.
    gathered(comm, 8192, "mpi", "gather 64 KiB, single_copy=0")
    x, out = np.arange(2.0) + comm.rank, np.zeros(2)
    req = shancoll.allreduce_init(comm, x, out)  # 16 bytes: the inline engine but for the row
    assert_all(comm, req.algorithm == "mpi", f"allreduce 16 B, an mpi row: {req.algorithm}")
    req.start()
    req.wait(timeout=TIMEOUT)
    assert_all(comm, np.array_equal(out, comm.allreduce(x)), "allreduce by mpi")
    req.free()
    buf = np.zeros(1000)  # 8000 bytes: the deposit
    req = shancoll.bcast_init(comm, buf, 0)
    assert_all(comm, req.algorithm == "release_gather", f"bcast 8000 B: {req.algorithm}")
    buf[:] = np.arange(1000.0) if comm.rank == 0 else -1
    req.start()
    req.wait(timeout=TIMEOUT)
    assert_all(comm, np.array_equal(buf, np.arange(1000.0)), "bcast by the deposit")
    req.free()


def test_without_rows_the_inline_engines_alone(comm):
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    with rule_table("builtin"):
        gathered(comm, 256, "mpi", "gather 2 KiB, no row")
        req = shancoll.allreduce_init(comm, np.zeros(2), np.zeros(2))
        assert_all(comm, req.algorithm == "shan", f"allreduce 16 B, no row: {req.algorithm}")
        req.free()
        req = shancoll.bcast_init(comm, np.zeros(1000), 0)
        assert_all(comm, req.algorithm == "mpi", f"bcast 8000 B, no row: {req.algorithm}")
        req.free()


def test_a_nonblocking_request_ignores_the_rows(comm, table):
    buf = np.zeros(1000)
    req = shancoll.ibcast(comm, buf, 0)
    req.wait(timeout=TIMEOUT)
    assert_all(comm, req.algorithm == "mpi", f"ibcast: {req.algorithm}")


def test_rows_of_an_unknown_collective_or_option_are_refused(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("gather_init\t0\t*\t1\t*\t*\t*\tshan\tring_window=65536\n")
    with pytest.raises(ValueError, match="persistent row"):
        shancoll.set_rules(bad)
    bad.write_text("frobnicate_init\t0\t*\t1\t*\t*\t*\tshan\t-\n")
    with pytest.raises(ValueError, match="unknown collective 'frobnicate_init'"):
        shancoll.set_rules(bad)
    shancoll.set_rules(None)


def test_the_tune_kernel_times_every_persistent_form(comm):
    """python -m shancoll.tune's kernel on <coll>_init: the engine (with single
    copy off too) and the library's own persistent request, each checked after
    its timed calls (a wrong result, a hang or an error would show in its row)."""
    from shancoll.bench import kernel
    from shancoll.bench.series import PERSISTENT_COLLECTIVES, algorithms_of, parse_series
    from shancoll.bench.tune import PERSISTENT_MECHANISMS

    wrong = kernel.intel_mpi_persistent_wrong  # the library's own not timed there

    for collective in PERSISTENT_COLLECTIVES:
        labels = algorithms_of(collective) + PERSISTENT_MECHANISMS.get(collective, [])
        series = [parse_series(label) for label in labels]
        rows = kernel.run(comm, collective=collective, distribution="regular",
                          sizes=[8, 40000], series=series, warmup=1, repeats=1, iterations=2,
                          call_timeout=TIMEOUT)  # fmt: skip
        bad = []  # rank 0's rows: ok, or refused (past the engine's bounds, off one node)
        for row in rows:
            refused = "as a request is the persistent" in row["error"]
            if (row["status"], row["check"]) != ("ok", "ok") and not refused:
                bad.append(row)
        if one_node(comm) and rows and rows[0]["check"] != "ok":
            bad.append(rows[0])  # 8 bytes on one node: every engine takes it
        timed = [x for x in series if x.algorithm != "mpi"] if wrong(collective) else series
        if comm.rank == 0 and len(rows) != 2 * len(timed):
            bad.append(f"{len(rows)} rows")
        assert_all(comm, not bad, f"{collective}: {bad}")
