"""shancoll: fast MPI collectives for mpi4py communicators and NumPy buffers.

The algorithms run in a C++ core (``shancoll._core``); this package exposes
one function per collective, compiled too: it parses mpi4py-style buffer
specs and checks its arguments itself::

    from mpi4py import MPI
    import numpy as np
    import shancoll

    comm = MPI.COMM_WORLD
    counts = [r + 1 for r in range(comm.size)]
    mine = np.full(counts[comm.rank], comm.rank, dtype="f8")
    out = np.empty(sum(counts), dtype="f8")
    shancoll.allgatherv(comm, mine, [out, counts])              # like comm.Allgatherv
    view = shancoll.allgatherv_shared(comm, mine, counts)       # node-shared, no copy

Algorithms (``shancoll.algorithms("allgatherv")``): ``shan`` (shared
notifications over node-wide shared segments, pipelined ring of nodes),
``ring``, ``bruck``, ``recursive_doubling`` and ``mpi`` (the MPI library's
own); ``auto`` chooses. :func:`barrier`, :func:`bcast`, :func:`reduce` and
:func:`allreduce` run the release/gather steps of Jain et al. on shared
memory among others (``shancoll.algorithms("barrier")``). ``allgather`` and
``allgatherv`` also take an inter-communicator (``mpi4py.MPI.Intercomm``,
receive counts of the remote group as in mpi4py), with the algorithms of
``shancoll.algorithms("allgatherv", inter=True)``: ``segmented`` (full-duplex
segmented exchange between the groups, then intragroup allgathers; the
default), ``root_gather`` and ``mpi``. :func:`alltoall` and :func:`alltoallv`
aggregate per node (``shan``: N - 1 messages per node between N nodes), or
run ``pairwise``, ``bruck`` or ``mpi`` (``shancoll.algorithms("alltoall")``).
Errors: :class:`ArgumentError` (a ``ValueError``),
:class:`CollectiveTimeout` (a ``TimeoutError``), :class:`MPIError` (a
``RuntimeError``).

Environment: ``SHANCOLL_RANKS_PER_NODE`` (virtual nodes of that many
consecutive ranks), ``SHANCOLL_TIMEOUT`` (seconds per wait, default 120),
``SHANCOLL_ALLGATHERV_ALGORITHM`` (what ``algorithm="auto"`` runs),
``SHANCOLL_INTERGROUP_ALGORITHM`` (the same on an inter-communicator),
``SHANCOLL_ON_ERROR`` (``raise``, the default, or ``abort``: a collective that
fails during communication aborts the job; :func:`set_on_error`).
"""

from __future__ import annotations

from . import _one_mpi  # noqa: F401  (first: the extension beside mpi4py's MPI library only)

# isort: split
from . import _core
from ._allreduce import (
    AllreduceRequest,  # noqa: F401  (the old name of Request, kept for callers)
    allreduce,
    allreduce_init,
    iallreduce,
    reduction_kernels,
)
from ._alltoall import alltoall, alltoallv
from ._barrier import barrier
from ._collectives import (
    Stats,
    algorithms,
    allgather,
    allgather_shared,
    allgatherv,
    allgatherv_shared,
    last_stats,
    topology,
)
from ._gather import gather, gatherv
from ._on_error import on_error, set_on_error
from ._reduce_scatter import reduce_scatter, reduce_scatter_block
from ._requests import (
    Request,
    allgather_init,
    allgatherv_init,
    alltoall_init,
    alltoallv_init,
    barrier_init,
    bcast_init,
    exscan_init,
    gather_init,
    gatherv_init,
    iallgather,
    iallgatherv,
    ialltoall,
    ialltoallv,
    ibarrier,
    ibcast,
    iexscan,
    igather,
    igatherv,
    ireduce,
    ireduce_scatter,
    ireduce_scatter_block,
    iscan,
    iscatter,
    iscatterv,
    reduce_init,
    reduce_scatter_block_init,
    reduce_scatter_init,
    scan_init,
    scatter_init,
    scatterv_init,
    startall,
)
from ._rooted import bcast, reduce
from ._rules import reload_environment, rules_info, rules_path, set_rules
from ._scan import exscan, scan
from ._scatter import scatter, scatterv

ArgumentError = _core.ArgumentError
CollectiveTimeout = _core.CollectiveTimeout
MPIError = _core.MPIError


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("shancoll")
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover
        pass
    return "0.1.0"


__version__: str = _version()

__all__ = [
    "ArgumentError",
    "CollectiveTimeout",
    "MPIError",
    "Request",
    "Stats",
    "__version__",
    "algorithms",
    "allgather",
    "allgather_init",
    "allgather_shared",
    "allgatherv",
    "allgatherv_init",
    "allgatherv_shared",
    "allreduce",
    "allreduce_init",
    "alltoall",
    "alltoall_init",
    "alltoallv",
    "alltoallv_init",
    "barrier",
    "barrier_init",
    "bcast",
    "bcast_init",
    "exscan",
    "exscan_init",
    "gather",
    "gather_init",
    "gatherv",
    "gatherv_init",
    "iallgather",
    "iallgatherv",
    "iallreduce",
    "ialltoall",
    "ialltoallv",
    "ibarrier",
    "ibcast",
    "iexscan",
    "igather",
    "igatherv",
    "ireduce",
    "ireduce_scatter",
    "ireduce_scatter_block",
    "iscan",
    "iscatter",
    "iscatterv",
    "last_stats",
    "on_error",
    "reduce",
    "reduce_init",
    "reduce_scatter",
    "reduce_scatter_block",
    "reduce_scatter_block_init",
    "reduce_scatter_init",
    "reduction_kernels",
    "reload_environment",
    "rules_info",
    "rules_path",
    "scan",
    "scan_init",
    "scatter",
    "scatter_init",
    "scatterv",
    "scatterv_init",
    "set_on_error",
    "set_rules",
    "startall",
    "topology",
]
