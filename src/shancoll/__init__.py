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
from ._allreduce import AllreduceRequest, allreduce, iallreduce, reduction_kernels
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
    "AllreduceRequest",
    "ArgumentError",
    "CollectiveTimeout",
    "MPIError",
    "Stats",
    "__version__",
    "algorithms",
    "allgather",
    "allgather_shared",
    "allgatherv",
    "allgatherv_shared",
    "allreduce",
    "alltoall",
    "alltoallv",
    "barrier",
    "bcast",
    "exscan",
    "gather",
    "gatherv",
    "iallreduce",
    "last_stats",
    "on_error",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_block",
    "reduction_kernels",
    "reload_environment",
    "rules_info",
    "rules_path",
    "scan",
    "scatter",
    "scatterv",
    "set_on_error",
    "set_rules",
    "topology",
]
