"""A /dev/shm too small for a segment is every rank's error, not a SIGBUS.

A container's /dev/shm is often 64 MiB (Docker's default). A shared-memory
object grown with ftruncate alone maps fine there and kills the process with
SIGBUS at the first touch past the space left; shm/segment.cc allocates the
pages when it makes the segment, so the shortage is an exception on every
rank (a failed call leaves its communicator unusable, comm.cc: the test
makes it on a dup), and the job goes on: the next call on another
communicator is right. The test mounts a 24 MiB tmpfs
on /dev/shm in a mount namespace of its own (unshare -m, as root, which CI
is) and asks for a persistent allreduce of 16 MiB, whose deposit areas need
64 MiB.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys
import numpy as np
from mpi4py import MPI
import shancoll
comm = MPI.COMM_WORLD
lines = []
a = np.full((16 << 20) // 8, comm.rank + 1.0)
b = np.empty_like(a)
try:
    shancoll.allreduce_init(comm.Dup(), a, b, algorithm="shan").start()
    lines.append("no error")
except Exception as e:
    lines.append(f"{type(e).__name__} {e}")
small = np.arange(100.0) * (comm.rank + 1)
got = np.empty_like(small)
shancoll.allreduce(comm, small, got)
want = np.empty_like(small)
comm.Allreduce(small, want)
lines.append("after: " + ("equal" if np.array_equal(got, want) else "DIFFERENT"))
with open(f"{sys.argv[1]}.{comm.rank}", "w") as f:
    f.write("\\n".join(lines))
"""


def _can_mount_namespace() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(
    "PMI_RANK" in os.environ or "OMPI_COMM_WORLD_RANK" in os.environ,
    reason="launches its own mpiexec",
)
def test_small_dev_shm_is_an_error_on_every_rank(tmp_path):
    if not _can_mount_namespace():
        pytest.skip("needs root and unshare -m (CI has both) to mount a small /dev/shm")
    mpiexec = Path(sys.executable).parent / "mpiexec"
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHANCOLL_")}
    shell = (
        "mount -t tmpfs -o size=24m tmpfs /dev/shm && "
        f"{mpiexec} -n 2 {sys.executable} {script} {tmp_path / 'out'}"
    )
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", shell], env=env, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rank in (0, 1):
        error, after = (tmp_path / f"out.{rank}").read_text().splitlines()
        assert error.startswith("MPIError shared memory: the node leader could not make a segment")
        assert "No space left on device" in error and "--shm-size" in error
        assert after == "after: equal"
