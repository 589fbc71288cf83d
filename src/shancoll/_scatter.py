"""scatter and scatterv (the core's coll/scatter/scatter.h)."""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from . import _core

__all__ = ["scatter", "scatterv"]


def scatter(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    root: int = 0,
    algorithm: str = "auto",
    *,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Sends block r of the root's ``sendbuf`` to rank r's ``recvbuf``
    (``comm.Scatter(sendbuf, recvbuf, root)``).

    Collective over ``comm``; every rank receives the same number of elements.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        An intra-communicator (an inter-communicator goes to mpi4py's own
        ``Scatter``, with its root rules).
    sendbuf :
        The root's: P blocks of the receive buffer's length (a simple spec;
        its count, if given, is per block). Ignored elsewhere (``None`` is fine).
    recvbuf :
        A contiguous, writable NumPy array (or buffer-protocol object) or a
        simple mpi4py spec; at the root ``MPI.IN_PLACE`` (its block stays in
        ``sendbuf``).
    root : int
        The rank that sends.
    algorithm : str
        ``"auto"`` (``SHANCOLL_SCATTER_ALGORITHM``, else
        ``SHANCOLL_SCATTERV_ALGORITHM``, else the rule table's choice, else
        ``shan`` on one node of one host and ``mpi`` otherwise) or one of
        ``algorithms("scatter")``: ``shan`` (one message per node down a
        binomial tree of nodes, then every rank copies its block out of its
        node's shared segment; on the root's node the root writes blocks of
        32 KiB and more straight into their receive buffers: one copy),
        ``binomial`` (point-to-point binomial tree of ranks), ``mpi``
        (``MPI_Scatter``; it blocks inside the MPI library, without ``timeout``).
    ranks_per_node, timeout :
        As for :func:`shancoll.allgatherv`.
    **options :
        ``check`` (checked mode: the ranks compare their calls first).

    Raises
    ------
    ValueError (shancoll.ArgumentError)
        Bad arguments, naming the argument and the rank; on a rank whose
        receive buffer differs from the size the root sends it (after the
        call's communication: the buffer is not written, the communicator
        stays usable).
    TimeoutError (shancoll.CollectiveTimeout)
        A wait exceeded ``timeout``.

    Statistics of the call: :func:`shancoll.last_stats`.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def scatterv(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    root: int = 0,
    algorithm: str = "auto",
    *,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Sends the root's block for rank r, at its displacement in ``sendbuf``,
    to rank r's ``recvbuf`` (``comm.Scatterv(sendbuf, recvbuf, root)``).

    As :func:`scatter`, but ``sendbuf`` is the root's vector spec
    (``[buf, counts]``, ``[buf, counts, displs]``, ``[buf, (counts, displs),
    datatype]``, ...; a bare buffer is split evenly; it may be read-only):
    counts of any size (zero included) and displacements with gaps. Only the
    root knows the counts; the algorithms carry them with the blocks and each
    rank checks its own (``SHANCOLL_SCATTERV_ALGORITHM``;
    ``algorithms("scatterv")``).
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public functions: builtins with the signatures' names and docstrings
# (src/cpp/bindings/scatter.cc); the core's option table checks **options.
scatter = _core.scatter_entry(scatter)
scatterv = _core.scatterv_entry(scatterv)
