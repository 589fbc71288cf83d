"""The nonblocking (``i<collective>``) and persistent (``<collective>_init``)
forms of the collectives, and the request they return (the core's
``coll/request/request.h``; allreduce's are in ``_allreduce.py``).

Each form takes exactly the arguments of its blocking collective and runs in
the same compiled entry, in another mode (``_core.<collective>_entry(signature,
mode)``: 1 nonblocking, 2 persistent). Their Python signature functions are
the blocking ones' under a new name and docstring, so the two cannot drift.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Any

from . import _core
from ._alltoall import alltoall, alltoallv
from ._barrier import barrier
from ._collectives import allgather, allgatherv
from ._core import Request
from ._gather import gather, gatherv
from ._reduce_scatter import reduce_scatter, reduce_scatter_block
from ._rooted import bcast, reduce
from ._scan import exscan, scan
from ._scatter import scatter, scatterv

_NONBLOCKING, _PERSISTENT = 1, 2


def startall(requests: Iterable[Request]) -> None:
    """Starts every persistent request of ``requests``, in order (``MPI_Startall``).

    Every rank starts the same requests in the same order. ``ValueError``
    (naming ``request``) for a request that is still active, freed, or not
    persistent; the requests before it in the list are started then.
    """
    _core.startall(requests)


_NONBLOCKING_DOC = """Nonblocking :func:`shancoll.{name}`: starts it and returns
its :class:`shancoll.Request`.

Arguments as for :func:`shancoll.{name}` (``timeout`` is the default of the
request's ``wait``). Algorithms: ``auto`` (``mpi``, unless
``SHANCOLL_I{upper}_ALGORITHM`` names another), ``mpi`` (the MPI
library's own nonblocking collective){schedule}; ``shancoll.algorithms("i{name}")``
lists them. The buffers must not be
touched until ``test()`` returned True or ``wait()`` returned. Every rank
starts its requests on a communicator in the same order; several may be
outstanding at once. Requests on inter-communicators are not offered
(``ValueError`` naming ``comm``).
"""

_PERSISTENT_DOC = """Persistent :func:`shancoll.{name}` (MPI-4's ``MPI_{title}_init``):
returns its :class:`shancoll.Request`, not started.

Arguments and algorithms as for :func:`shancoll.i{name}`. Everything the call
can decide once (the algorithm, the schedule and its scratch memory, or the
MPI library's own persistent request) is decided here; each ``start()``
replays it on the buffers' current contents (``shancoll.startall`` starts
several), ``wait()``/``test()`` complete the run, ``free()`` releases the
request (not while it is active). Starting a request that is still active
raises ``ValueError``. Every rank makes, starts and frees its persistent
requests in the same order.
"""


def _form(blocking: Any, mode: int) -> Callable[..., Request]:
    """The request form of `blocking` (a builtin entry) in `mode`."""
    base = blocking.__wrapped__
    name = base.__name__
    # the shancoll schedule its requests can run besides mpi, from the core's listing
    schedule = next((a for a, _ in _core.algorithms(f"i{name}") if a != "mpi"), None)
    fields = {
        "name": name,
        "title": name.capitalize(),
        "upper": name.upper(),
        "schedule": f", ``{schedule}`` (shancoll's point-to-point schedule)" if schedule else "",
    }
    if mode == _NONBLOCKING:
        new_name, doc = f"i{name}", _NONBLOCKING_DOC.format(**fields)
    else:
        new_name, doc = f"{name}_init", _PERSISTENT_DOC.format(**fields)
    signature = types.FunctionType(
        base.__code__, base.__globals__, new_name, base.__defaults__, base.__closure__
    )
    signature.__kwdefaults__ = base.__kwdefaults__
    signature.__annotations__ = {**base.__annotations__, "return": "Request"}
    signature.__qualname__ = new_name
    signature.__module__ = base.__module__
    signature.__doc__ = doc
    entry = getattr(_core, f"{name}_entry")
    return entry(signature, mode)


ibarrier = _form(barrier, _NONBLOCKING)
ibcast = _form(bcast, _NONBLOCKING)
ireduce = _form(reduce, _NONBLOCKING)
igather = _form(gather, _NONBLOCKING)
igatherv = _form(gatherv, _NONBLOCKING)
iscatter = _form(scatter, _NONBLOCKING)
iscatterv = _form(scatterv, _NONBLOCKING)
iallgather = _form(allgather, _NONBLOCKING)
iallgatherv = _form(allgatherv, _NONBLOCKING)
ialltoall = _form(alltoall, _NONBLOCKING)
ialltoallv = _form(alltoallv, _NONBLOCKING)
ireduce_scatter = _form(reduce_scatter, _NONBLOCKING)
ireduce_scatter_block = _form(reduce_scatter_block, _NONBLOCKING)
iscan = _form(scan, _NONBLOCKING)
iexscan = _form(exscan, _NONBLOCKING)

barrier_init = _form(barrier, _PERSISTENT)
bcast_init = _form(bcast, _PERSISTENT)
reduce_init = _form(reduce, _PERSISTENT)
gather_init = _form(gather, _PERSISTENT)
gatherv_init = _form(gatherv, _PERSISTENT)
scatter_init = _form(scatter, _PERSISTENT)
scatterv_init = _form(scatterv, _PERSISTENT)
allgather_init = _form(allgather, _PERSISTENT)
allgatherv_init = _form(allgatherv, _PERSISTENT)
alltoall_init = _form(alltoall, _PERSISTENT)
alltoallv_init = _form(alltoallv, _PERSISTENT)
reduce_scatter_init = _form(reduce_scatter, _PERSISTENT)
reduce_scatter_block_init = _form(reduce_scatter_block, _PERSISTENT)
scan_init = _form(scan, _PERSISTENT)
exscan_init = _form(exscan, _PERSISTENT)

__all__ = [
    "Request",
    "allgather_init",
    "allgatherv_init",
    "alltoall_init",
    "alltoallv_init",
    "barrier_init",
    "bcast_init",
    "exscan_init",
    "gather_init",
    "gatherv_init",
    "iallgather",
    "iallgatherv",
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
    "reduce_init",
    "reduce_scatter_block_init",
    "reduce_scatter_init",
    "scan_init",
    "scatter_init",
    "scatterv_init",
    "startall",
]
