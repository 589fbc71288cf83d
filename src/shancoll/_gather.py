"""gather and gatherv (the core's coll/gather/gather.h)."""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from . import _core

__all__ = ["gather", "gatherv"]


def gather(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any = None,
    root: int = 0,
    algorithm: str = "auto",
    *,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Gathers every rank's ``sendbuf`` into ``recvbuf`` at ``root``, in rank
    order (``comm.Gather(sendbuf, recvbuf, root)``).

    Collective over ``comm``; every rank sends the same number of elements.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        An intra-communicator (an inter-communicator goes to mpi4py's own
        ``Gather``, with its root rules).
    sendbuf :
        A contiguous NumPy array (or buffer-protocol object) or a simple mpi4py
        spec; at the root ``MPI.IN_PLACE`` (its block is already in ``recvbuf``).
    recvbuf :
        The root's: P blocks of the send buffer's length (a simple spec; its
        count, if given, is per block). Ignored elsewhere (``None`` is fine).
    root : int
        The rank that receives.
    algorithm : str
        ``"auto"`` (``SHANCOLL_GATHER_ALGORITHM``, else
        ``SHANCOLL_GATHERV_ALGORITHM``, else the rule table's choice, else
        ``shan`` on one node of one host and ``mpi`` otherwise) or one of
        ``algorithms("gather")``: ``shan`` (every rank's block through its
        node's shared segment, or on the root's node read straight from its
        owner's buffer from 32 KiB: one copy; one message per node up a
        binomial tree of nodes), ``binomial`` (point-to-point binomial tree of
        ranks), ``mpi`` (``MPI_Gather``; it blocks inside the MPI library,
        without ``timeout``).
    ranks_per_node, timeout :
        As for :func:`shancoll.allgatherv`.
    **options :
        ``check`` (checked mode: the ranks compare their calls first).

    Raises
    ------
    ValueError (shancoll.ArgumentError)
        Bad arguments, naming the argument and the rank; at the root, a block
        whose size differs from its receive count (after the call's
        communication: the communicator stays usable).
    TimeoutError (shancoll.CollectiveTimeout)
        A wait exceeded ``timeout``.

    Statistics of the call: :func:`shancoll.last_stats`.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def gatherv(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any = None,
    root: int = 0,
    algorithm: str = "auto",
    *,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Gathers every rank's ``sendbuf`` into ``recvbuf`` at ``root``, rank r's
    block at its displacement (``comm.Gatherv(sendbuf, recvbuf, root)``).

    As :func:`gather`, but ``recvbuf`` is the root's vector spec
    (``[buf, counts]``, ``[buf, counts, displs]``, ``[buf, (counts, displs),
    datatype]``, ...; a bare buffer is split evenly): counts of any size (zero
    included) and displacements with gaps, which are never written. Only the
    root knows the counts; the algorithms carry them with the blocks and the
    root checks each against its own (``SHANCOLL_GATHERV_ALGORITHM``;
    ``algorithms("gatherv")``).
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public functions: builtins with the signatures' names and docstrings
# (src/cpp/bindings/gather.cc); the core's option table checks **options.
gather = _core.gather_entry(gather)
gatherv = _core.gatherv_entry(gatherv)
