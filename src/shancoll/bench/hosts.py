"""Two real MPI nodes on one machine: their host names, and the launcher
arguments that place ranks on them under MPICH, Open MPI and Intel MPI.

``scripts/setup.sh`` maps :data:`HOSTS` to 127.0.0.1 in /etc/hosts. The MPI
library then sees one node per host name (``MPI_Comm_split_type`` gives two
nodes) and its network module carries the traffic between them, with its
own protocols and progress rules, as between machines; only the wire is this
machine's loopback or its own interface.

- MPICH (hydra): ``-hosts a:n,b:n``; hydra starts a proxy per host name and
  runs a name that resolves to this machine locally.
- Open MPI (PRRTE): ``--host a:n,b:n`` with ``prte_do_not_resolve`` (else
  PRRTE takes a name that resolves to one of this machine's addresses for
  this machine itself, and both names become one node) and
  ``plm_ssh_agent`` set to ``host_agent.sh``, which starts each "remote"
  daemon here in a UTS namespace named after its host.
- Intel MPI (its own hydra): ``-hosts a,b -ppn n`` (it ignores ``a:n``'s
  count and put both ranks on ``a``) with the ssh bootstrap's program set to
  ``host_agent.sh``: unlike MPICH's hydra it runs ``ssh`` even for a name of
  this machine. Between the hosts it takes its ofi fabric, libfabric's tcp
  provider here (``I_MPI_DEBUG=5``: "libfabric provider: tcp").

The test suite's real-node runs (``tests/test_mpi_suites.py``) and the sweep
layout "2 hosts" (``hosts = [2]`` in a sweep config) use this module.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from pathlib import Path

__all__ = ["AGENT", "HOSTS", "LIBRARIES", "launch_args", "missing"]

HOSTS = ("shancoll-node-a", "shancoll-node-b")
AGENT = Path(__file__).resolve().parent / "host_agent.sh"
# The libraries whose launchers this module knows.
LIBRARIES = ("mpich", "openmpi", "impi")
# The libraries that start each host through AGENT, which needs UTS namespaces.
_THROUGH_AGENT = ("openmpi", "impi")


def missing(lib: str) -> str | None:
    """Why ``lib`` cannot run on the two hosts here, or None."""
    if lib not in LIBRARIES:
        return f"real hosts: launcher arguments known for {', '.join(LIBRARIES)} only, not {lib}"
    try:
        for host in HOSTS:
            socket.gethostbyname(host)
    except OSError:
        return (
            f"host names {', '.join(HOSTS)} do not resolve: run scripts/setup.sh as root "
            "(it maps them to 127.0.0.1 in /etc/hosts)"
        )
    if lib in _THROUGH_AGENT:
        probe = subprocess.run(["unshare", "--uts", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            return (
                f"{lib}'s two hosts need UTS namespaces (host_agent.sh runs `unshare --uts`), "
                f"unavailable here: {probe.stderr.strip() or f'exit {probe.returncode}'}"
            )
    return None


def executable_agent() -> Path:
    """AGENT, or when it lost its x bit (installed package files may) an executable
    copy of it: Intel's hydra runs its bootstrap program directly, not through a shell."""
    if os.access(AGENT, os.X_OK):
        return AGENT
    text = AGENT.read_bytes()
    copy = Path(tempfile.gettempdir()) / f"shancoll-host-agent-{os.getuid()}.sh"
    if not (copy.exists() and copy.read_bytes() == text and os.access(copy, os.X_OK)):
        part = copy.with_name(f"{copy.name}.{os.getpid()}")
        part.write_bytes(text)
        part.chmod(0o755)
        part.replace(copy)  # atomic: a concurrent launcher sees the old copy or this one
    return copy


def launch_args(lib: str, hosts: int, ranks: int) -> list[str]:
    """The mpiexec arguments that put ``ranks`` ranks on ``hosts`` host names, as many
    on each (none for one host: this machine as it is)."""
    if hosts == 1:
        return []
    if not 2 <= hosts <= len(HOSTS):
        raise ValueError(f"hosts: 1 or 2 on this machine ({', '.join(HOSTS)}), got {hosts}")
    if ranks % hosts:
        raise ValueError(f"hosts: {ranks} ranks do not split evenly over {hosts} hosts")
    why = missing(lib)
    if why:
        raise ValueError(why)
    spec = ",".join(f"{h}:{ranks // hosts}" for h in HOSTS[:hosts])
    if lib == "openmpi":
        agent = f"/bin/sh {AGENT}"  # through sh: installed package files may lose the x bit
        return ["--prtemca", "plm_ssh_agent", agent, "--prtemca", "prte_do_not_resolve", "1",
                "--host", spec]  # fmt: skip
    if lib == "impi":
        return ["-bootstrap", "ssh", "-bootstrap-exec", str(executable_agent()),
                "-hosts", ",".join(HOSTS[:hosts]), "-ppn", str(ranks // hosts)]  # fmt: skip
    return ["-hosts", spec]
