"""The socket map behind the topology-aware release_gather trees, from hwloc.

The development machine has one socket, so hwloc is shown a synthetic
machine of two single-core packages (HWLOC_SYNTHETIC, with HWLOC_THISSYSTEM=1
so that the ranks' real CPU bindings are still read): unbound, each rank's
binding spans both packages and the node falls back to one socket, saying
why; bound to a core each (MPICH's ``mpiexec -bind-to core``), the two ranks
are on two sockets and a default reduce of 8 KiB runs socket-leader-last
over them. SHANCOLL_SOCKETS overrides hwloc. Each case is one 2-rank job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import shancoll

TIMEOUT = 120
TWO_PACKAGES = {"HWLOC_SYNTHETIC": "pack:2 core:1 pu:1", "HWLOC_THISSYSTEM": "1"}

# Prints rank 0's topology and the trees of a checked default reduce of 8 KiB.
SCRIPT = """
import json
import numpy as np
from mpi4py import MPI
import shancoll
comm = MPI.COMM_WORLD
x = np.arange(1024, dtype=np.int64) + comm.rank
out, ref = np.zeros_like(x), np.zeros_like(x)
comm.Reduce(x, ref, MPI.SUM, 0)
shancoll.reduce(comm, x, out, MPI.SUM, 0, "release_gather", timeout=60)
t = shancoll.topology(comm)
if comm.rank == 0:
    print(json.dumps({"socket_of": t["socket_of"], "source": t["socket_source"],
                      "reduce_tree": shancoll.last_stats(comm).reduce_tree,
                      "ok": bool(np.array_equal(out, ref))}))
"""


def _mpiexec() -> Path:
    return Path(sys.executable).parent / "mpiexec"


def _run(*launcher_args: str, **env_vars: str) -> dict:
    env = dict(os.environ, **env_vars)
    for name in ("SHANCOLL_SOCKETS", "SHANCOLL_RANKS_PER_NODE"):
        if name not in env_vars:
            env.pop(name, None)
    command = [str(_mpiexec()), *launcher_args, "-n", "2", sys.executable, "-c", SCRIPT]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, env=env,
                             stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(command)} hung for {TIMEOUT} s")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _hydra() -> bool:
    if not _mpiexec().exists():
        return False
    version = subprocess.run([str(_mpiexec()), "--version"], capture_output=True, text=True)
    return "HYDRA" in version.stdout


needs_hwloc = pytest.mark.skipif(not shancoll._core.has_hwloc, reason="built without hwloc")
needs_hydra = pytest.mark.skipif(not _hydra(), reason="needs MPICH's mpiexec (-bind-to)")


@needs_hwloc
@needs_hydra
def test_unbound_ranks_fall_back_to_one_socket():
    got = _run(**TWO_PACKAGES)
    assert got == {
        "socket_of": [0, 0],
        "source": "one socket assumed: a rank is not bound within one socket",
        "reduce_tree": "kary k=2 right, socket_leader_last over 1 socket "
        "(one socket assumed: a rank is not bound within one socket)",
        "ok": True,
    }


@needs_hwloc
@needs_hydra
def test_bound_ranks_get_their_sockets():
    got = _run("-bind-to", "core", **TWO_PACKAGES)
    assert got == {
        "socket_of": [0, 1],
        "source": "hwloc",
        "reduce_tree": "kary k=2 right, socket_leader_last over 2 sockets (hwloc)",
        "ok": True,
    }


@needs_hydra
def test_environment_map_overrides_hwloc():
    got = _run(SHANCOLL_SOCKETS="1,0", **TWO_PACKAGES)
    assert got == {
        "socket_of": [0, 1],  # renumbered by lowest rank
        "source": "SHANCOLL_SOCKETS",
        "reduce_tree": "kary k=2 right, socket_leader_last over 2 sockets (SHANCOLL_SOCKETS)",
        "ok": True,
    }
