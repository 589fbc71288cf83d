"""barrier (the core's coll/barrier/barrier.h)."""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from . import _core

__all__ = ["barrier"]


def barrier(
    comm: MPI.Comm,
    algorithm: str = "auto",
    *,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Blocks until every rank of ``comm`` has called it (``comm.Barrier()``).

    Collective over ``comm``. Where shared memory carries the signal, what a
    rank wrote to shared memory before the call is visible to every rank of
    its node after it.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        An intra-communicator.
    algorithm : str
        ``"auto"`` (``SHANCOLL_BARRIER_ALGORITHM`` if set, else the rule
        table's choice, else ``release_gather`` on one host and ``mpi`` across
        hosts) or one of ``algorithms("barrier")``: ``release_gather`` (a gather
        step without data up a K-nomial tree of cache-line flags in the node's
        shared segment, then a release step from local rank 0, Jain et al.;
        several nodes: a dissemination barrier among the node leaders in
        between), ``dissemination`` (point-to-point dissemination barrier,
        ceil(log2 P) rounds), ``mpi`` (``MPI_Barrier``; it blocks inside the
        MPI library, without ``timeout``).
    ranks_per_node, timeout :
        As for :func:`shancoll.allgatherv`.
    **options :
        ``check`` (checked mode: the ranks compare their calls first).

    Raises
    ------
    ValueError (shancoll.ArgumentError)
        Bad arguments (an unknown algorithm or option), naming the argument
        and the rank.
    TimeoutError (shancoll.CollectiveTimeout)
        A wait exceeded ``timeout`` (a rank that never came).

    Statistics of the call: :func:`shancoll.last_stats` (``rounds``: the
    node's gather and release steps plus the dissemination rounds on a node
    leader; ``intra_messages``/``inter_messages``: signals sent).
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public function: a builtin with the signature's name and docstring
# (src/cpp/bindings/barrier.cc); the core's option table checks **options.
barrier = _core.barrier_entry(barrier)
