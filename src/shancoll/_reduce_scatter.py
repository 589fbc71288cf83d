"""reduce_scatter and reduce_scatter_block (the core's coll/reduce_scatter/).

Both are collective over ``comm``: every rank calls them, in the same order,
with the same counts, dtype, op, algorithm and options. The Python functions
below give the signatures and docstrings; the calls run in compiled builtin
functions (``_core.reduce_scatter_entry``, ``_core.reduce_scatter_block_entry``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpi4py import MPI

from . import _core

__all__ = ["reduce_scatter", "reduce_scatter_block"]


def reduce_scatter_block(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    op: Any = MPI.SUM,
    algorithm: str = "auto",
    *,
    commute: bool = False,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Rank r's ``recvbuf`` gets block r of the elementwise reduction of every
    rank's ``sendbuf`` (P blocks of ``len(recvbuf)`` elements).

    Collective over ``comm``; the result equals
    ``comm.Reduce_scatter_block(sendbuf, recvbuf, op)`` up to the order of
    floating-point combination.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        An intra-communicator.
    sendbuf :
        P times as many elements as ``recvbuf``, of its type; ``MPI.IN_PLACE``
        (or None): the input is in ``recvbuf`` (all P blocks) and the result
        lands at its start.
    recvbuf, op, commute :
        As for :func:`shancoll.allreduce` (every NumPy numeric dtype with an
        MPI datatype; the predefined ops as typed kernels, any other
        ``MPI.Op``, a callable ``f(a, b)``).
    algorithm : str
        ``"auto"`` (``SHANCOLL_REDUCE_SCATTER_BLOCK_ALGORITHM`` if set, else
        the rule table's choice, else ``mpi``) or one of
        ``algorithms("reduce_scatter_block")``:

        - ``shan`` -- the inputs in the node's shared segment, the vector
          split into one fraction per local rank, each fraction reduced on the
          node in rank order, then reduce-scattered between nodes by
          ``pairwise`` among the ranks of the same local index; needs every
          node to be a contiguous range of ranks (virtual nodes are);
        - ``ring`` -- partial sums around the ring, P - 1 rounds of one block
          (commutative ops only);
        - ``pairwise`` -- P - 1 rounds of one block, folded in rank order;
        - ``mpi`` -- the MPI library's ``MPI_Reduce_scatter_block`` (it
          blocks inside the MPI library, without ``timeout``).

        ``shan``, ``pairwise`` and ``mpi`` keep rank order (non-commutative
        ops); ``ring`` refuses them with a ``ValueError`` naming ``op``.
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
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def reduce_scatter(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    recvcounts: Sequence[int] | None = None,
    op: Any = MPI.SUM,
    algorithm: str = "auto",
    *,
    commute: bool = False,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Rank r's ``recvbuf`` gets block r (``recvcounts[r]`` elements, the
    blocks consecutive in rank order) of the elementwise reduction of every
    rank's ``sendbuf`` (``sum(recvcounts)`` elements).

    As :func:`reduce_scatter_block` (``comm.Reduce_scatter(sendbuf, recvbuf,
    recvcounts, op)``, ``SHANCOLL_REDUCE_SCATTER_ALGORITHM``,
    ``algorithms("reduce_scatter")``: the same algorithms). ``recvcounts``
    is required: one count per rank (or one int for all), zeros allowed
    (mpi4py gathers it from the ranks' ``recvbuf`` when None, a
    communication shancoll does not make before checking its arguments).
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public functions: builtins with the signatures' names and docstrings
# (src/cpp/bindings/reduce_scatter.cc); the core's option table checks **options.
reduce_scatter = _core.reduce_scatter_entry(reduce_scatter)
reduce_scatter_block = _core.reduce_scatter_block_entry(reduce_scatter_block)
