"""alltoall and alltoallv (the core's coll/alltoallv/alltoallv.h)."""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from . import _core

__all__ = ["alltoall", "alltoallv"]


def alltoall(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    algorithm: str = "auto",
    *,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Every rank sends block j of ``sendbuf`` to rank j, which receives it as
    block i (i the sender) of ``recvbuf`` (``comm.Alltoall(sendbuf, recvbuf)``).

    Collective over ``comm`` (an intra-communicator). Buffers as mpi4py's:
    ``buf``, ``[buf, datatype]``, ``[buf, count]``, ``[buf, count, datatype]``
    with ``count`` elements per rank (inferred: the buffer split into P equal
    blocks); ``sendbuf`` may be ``MPI.IN_PLACE`` (the blocks are taken from
    ``recvbuf`` and replaced). Every NumPy numeric dtype; ``MPI.BYTE`` counts
    bytes.

    Parameters
    ----------
    algorithm : str
        ``"auto"`` (``SHANCOLL_ALLTOALL_ALGORITHM``, else
        ``SHANCOLL_ALLTOALLV_ALGORITHM``, else the rule table's choice, else
        ``shan`` for blocks up to 4 KiB on one node and ``mpi`` otherwise) or
        one of ``algorithms("alltoall")``: ``shan`` (node aggregation: every
        rank writes its blocks into the node's shared segment, the local ranks
        share the node-to-node exchange, N - 1 messages per node, then read
        their blocks; one node: one hop through the segment, or single copy
        from the senders' buffers for large blocks), ``pairwise`` (P - 1
        rounds), ``bruck`` (ceil(log2 P) rounds, small blocks), ``mpi``
        (``MPI_Alltoall``; it blocks inside the MPI library, without
        ``timeout``).
    ranks_per_node, timeout :
        As for :func:`shancoll.allgatherv`.
    **options :
        ``check`` (checked mode: the ranks compare their calls first).

    Raises
    ------
    ValueError (shancoll.ArgumentError)
        Bad arguments, naming the argument and the rank.
    TimeoutError (shancoll.CollectiveTimeout)
        A wait exceeded ``timeout``.

    Notes
    -----
    Statistics of the call: :func:`shancoll.last_stats`. Its ``inter_messages``
    are the messages this rank sent to other nodes; summed over a node's
    ranks, N - 1 with ``shan`` and n (P - n) with ``pairwise``.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def alltoallv(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    algorithm: str = "auto",
    *,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Every rank sends its block j (``sendcounts[j]`` elements at
    ``sdispls[j]``) to rank j, which receives it at ``rdispls[i]``
    (``comm.Alltoallv(sendbuf, recvbuf)``).

    Buffers as mpi4py's: ``[buf, counts, displs, datatype]`` and its shorter
    forms (``[buf, counts]``: displacements the prefix sums; ``buf``: split
    evenly); ``sendbuf`` may be ``MPI.IN_PLACE`` (the blocks are taken from
    ``recvbuf``, laid out by its counts, and replaced). What rank i sends
    rank j must be what j expects from i (MPI's rule; ``check=True`` checks
    it). Zero counts, gaps and any order of the displacements are fine.

    Parameters and errors as :func:`alltoall`; ``algorithm="auto"``
    (``SHANCOLL_ALLTOALLV_ALGORITHM``, else the rule table's, else ``mpi``:
    the counts differ from rank to rank, so no size can choose alike on
    every rank).
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public functions: builtins with the signatures' names and docstrings
# (src/cpp/bindings/alltoallv.cc); the core's option table checks **options.
alltoall = _core.alltoall_entry(alltoall)
alltoallv = _core.alltoallv_entry(alltoallv)
