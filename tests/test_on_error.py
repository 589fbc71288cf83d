"""SHANCOLL_ON_ERROR: jobs that end after a failed collective.

The MPI cases run a small script under `mpiexec -n 2` in which rank 1 skips a
collective that rank 0 enters with a 2 s timeout. With `abort` the job must
end with a non-zero status soon after the deadline, and stderr must name the
rank, the collective, the algorithm and what rank 0 waited for; with the
default `raise` a job whose exception nobody catches must still end (not hang
in MPI_Finalize), and one that catches it must finish normally. A bad
argument never aborts. Each run is killed with all its ranks (its own process
group) when it outlives the deadline by LIMIT seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

import shancoll

DEADLINE = 2.0  # the collective's timeout in the scripts
LIMIT = 15.0  # seconds the job may take beyond it (start-up, import, the abort)


def under_mpi_launcher() -> bool:
    return any(v in os.environ for v in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK"))


def _pmpi_libdir() -> str:
    return str(Path(shancoll.__file__).resolve().parent / "lib")


def _launch(tmp_path, source: str, **env_vars: str) -> tuple[int | None, float, str]:
    """Runs `source` at 2 ranks; (exit status or None if killed, seconds, output)."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        pytest.skip("no mpiexec next to the Python running the tests")
    script = tmp_path / "script.py"
    script.write_text(source)
    env = dict(os.environ)
    for name in ("LD_PRELOAD", "SHANCOLL_RANKS_PER_NODE", "SHANCOLL_ALLREDUCE_ALGORITHM"):
        env.pop(name, None)
    env["SHANCOLL_ON_ERROR"] = "raise"
    env.update(env_vars)
    command = [str(mpiexec), "-n", "2", sys.executable, str(script), _pmpi_libdir()]
    start = time.monotonic()
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=DEADLINE + LIMIT)
        return proc.returncode, time.monotonic() - start, out
    except subprocess.TimeoutExpired:
        elapsed = time.monotonic() - start
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, _ = proc.communicate(timeout=10)
                break
            except subprocess.TimeoutExpired:
                out = ""
        return None, elapsed, out or ""


HEADER = """
import sys
import numpy as np
from mpi4py import MPI
import shancoll

comm = MPI.COMM_WORLD
x = np.ones(1000)
out = np.empty_like(x)
shancoll.allreduce(comm, x, out, algorithm="ring")  # set up on both ranks
print(f"rank {comm.rank}: ready", flush=True)
"""


def _set_up(body: str) -> str:
    """The script: shancoll set up on both ranks by a first allreduce, then `body`."""
    return HEADER + body


# Rank 1 skips the collective and waits in MPI's own barrier, which rank 0
# never reaches: without the abort, nothing ends this job.
ABORT_SCRIPTS = {
    "allreduce": _set_up("""
if comm.rank == 0:
    shancoll.allreduce(comm, x, out, algorithm="ring", timeout=2)
comm.Barrier()
"""),
    "iallreduce_wait": _set_up("""
if comm.rank == 0:
    shancoll.iallreduce(comm, x, out, algorithm="bruck").wait(timeout=2)
comm.Barrier()
"""),
    "bcast": _set_up("""
if comm.rank == 0:
    shancoll.bcast(comm, x, root=1, algorithm="binomial", timeout=2)
comm.Barrier()
"""),
    # mpi4py's own comm.Allreduce, routed to shancoll by the PMPI library
    "pmpi_allreduce": """
import sys
import mpi4py
mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI
import numpy as np

comm = MPI.COMM_WORLD
x = np.ones(1000)
out = np.empty_like(x)
comm.Allreduce(x, out)
print(f"rank {comm.rank}: ready", flush=True)
if comm.rank == 0:
    comm.Allreduce(x, out)
comm.Barrier()
""",
}

AWAITED = {
    "allreduce": ("allreduce (algorithm ring)", "a chunk from the left neighbour"),
    "iallreduce_wait": ("iallreduce (algorithm bruck)", "iallreduce wait: messages of a round"),
    "bcast": ("bcast (algorithm binomial)", "waited more than 2"),
    "pmpi_allreduce": ("allreduce (algorithm ring)", "a chunk from the left neighbour"),
}


@pytest.mark.skipif(under_mpi_launcher(), reason="already under mpiexec: no nested launch")
@pytest.mark.parametrize("case", sorted(ABORT_SCRIPTS))
def test_abort_ends_the_job(tmp_path, case):
    env = {"SHANCOLL_ON_ERROR": "abort"}
    if case.startswith("pmpi"):
        env.update(SHANCOLL_ALLREDUCE_ALGORITHM="ring", SHANCOLL_ALLREDUCE_OPTIONS="timeout=2")
    status, elapsed, out = _launch(tmp_path, ABORT_SCRIPTS[case], **env)
    assert status is not None, f"the job did not end: killed after {elapsed:.0f} s\n{out[-3000:]}"
    assert status != 0, out[-3000:]
    assert out.count("ready") == 2, out[-3000:]
    assert elapsed < DEADLINE + LIMIT
    lines = [line for line in out.splitlines() if "aborting the job (on_error=abort)" in line]
    assert len(lines) == 1, out[-3000:]
    collective, awaited = AWAITED[case]
    assert lines[0].startswith(f"shancoll: rank 0: {collective} failed"), lines[0]
    assert awaited in lines[0], lines[0]


# The default: rank 0's CollectiveTimeout, caught or not; rank 1 goes on to
# the end of the script, and so into MPI_Finalize.
RAISE_SCRIPTS = {
    "uncaught": _set_up("""
if comm.rank == 0:
    shancoll.allreduce(comm, x, out, algorithm="ring", timeout=2)
"""),
    "caught": _set_up("""
if comm.rank == 0:
    try:
        shancoll.allreduce(comm, x, out, algorithm="ring", timeout=2)
    except shancoll.CollectiveTimeout as e:
        print(f"rank 0 caught: {e}", flush=True)
fresh = comm.Dup()  # as the README advises
shancoll.allreduce(fresh, x, out, algorithm="ring")
assert np.all(out == 2)
print(f"rank {comm.rank}: done", flush=True)
"""),
}


@pytest.mark.skipif(under_mpi_launcher(), reason="already under mpiexec: no nested launch")
@pytest.mark.parametrize("case", sorted(RAISE_SCRIPTS))
def test_raise_job_ends(tmp_path, case):
    """No hang in MPI_Finalize: the healthy rank no longer waits there to free
    windows that the failed rank keeps."""
    status, elapsed, out = _launch(tmp_path, RAISE_SCRIPTS[case])
    assert status is not None, f"the job did not end: killed after {elapsed:.0f} s\n{out[-3000:]}"
    assert "aborting the job" not in out, out[-3000:]
    if case == "uncaught":
        assert status != 0, out[-3000:]
        assert "CollectiveTimeout: shancoll: rank 0 waited more than 2" in out, out[-3000:]
    else:
        assert status == 0, out[-3000:]
        assert "rank 0 caught" in out and out.count("done") == 2, out[-3000:]


BAD_ARGUMENTS = _set_up("""
assert shancoll.on_error() == "abort"
for bad in (  # refused before the call, and (the last two) inside it, before any communication
    lambda: shancoll.allreduce(comm, x, out, algorithm="no_such_algorithm", timeout=2),
    lambda: shancoll.bcast(comm, x, root=comm.size, timeout=2),
    lambda: shancoll.allreduce(comm, x, out[:10], timeout=2),
    lambda: shancoll.iallreduce(comm, x, out, algorithm="ring"),
    lambda: shancoll.allreduce(comm, x, out, algorithm="release_gather", sockets=[0, 1, 0]),
):
    try:
        bad()
    except ValueError as e:
        print(f"rank {comm.rank}: refused: {e}", flush=True)
shancoll.allreduce(comm, x, out, timeout=2)  # the communicator is still usable
assert np.all(out == 2)
print(f"rank {comm.rank}: done", flush=True)
""")


@pytest.mark.skipif(under_mpi_launcher(), reason="already under mpiexec: no nested launch")
def test_bad_argument_does_not_abort(tmp_path):
    status, elapsed, out = _launch(tmp_path, BAD_ARGUMENTS, SHANCOLL_ON_ERROR="abort")
    assert status == 0, out[-3000:]
    assert out.count("refused") == 10 and out.count("done") == 2, out[-3000:]
    assert "aborting the job" not in out, out[-3000:]


@pytest.fixture
def clean_on_error(monkeypatch):
    monkeypatch.delenv("SHANCOLL_ON_ERROR", raising=False)
    shancoll.set_on_error(None)
    shancoll.reload_environment()
    yield monkeypatch
    shancoll.set_on_error(None)
    monkeypatch.delenv("SHANCOLL_ON_ERROR", raising=False)
    shancoll.reload_environment()


def test_set_on_error(clean_on_error):
    assert shancoll.on_error() == "raise"  # the default
    shancoll.set_on_error("abort")
    assert shancoll.on_error() == "abort"
    shancoll.set_on_error("raise")
    assert shancoll.on_error() == "raise"
    for bad in ("abrot", "ABORT", "", 1, True):
        with pytest.raises(ValueError, match="on_error: expected 'raise', 'abort' or None"):
            shancoll.set_on_error(bad)
        assert shancoll.on_error() == "raise"  # unchanged
    clean_on_error.setenv("SHANCOLL_ON_ERROR", "abort")
    shancoll.reload_environment()
    assert shancoll.on_error() == "raise"  # the explicit choice wins
    shancoll.set_on_error(None)
    assert shancoll.on_error() == "abort"  # back to the environment


def test_invalid_environment(clean_on_error):
    """A bad SHANCOLL_ON_ERROR is refused by name: by reload_environment, the
    getter and the first call on a communicator (before any communication)."""
    clean_on_error.setenv("SHANCOLL_ON_ERROR", "exit")
    expected = "SHANCOLL_ON_ERROR: expected 'raise' or 'abort', got 'exit'"
    with pytest.raises(ValueError, match=expected):
        shancoll.reload_environment()
    with pytest.raises(ValueError, match="SHANCOLL_ON_ERROR"):
        shancoll.on_error()
    comm = MPI.COMM_SELF.Dup()
    try:
        x = np.ones(4)
        with pytest.raises(ValueError, match="SHANCOLL_ON_ERROR"):
            shancoll.allreduce(comm, x, np.empty_like(x))
        shancoll.set_on_error("raise")  # an explicit choice overrides the variable
        out = np.empty_like(x)
        shancoll.allreduce(comm, x, out)
        assert np.all(out == 1)
    finally:
        comm.Free()
