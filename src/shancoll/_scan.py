"""scan and exscan (the core's coll/scan/scan.h).

Both are collective over ``comm``: every rank calls them, in the same order,
with the same count, dtype, op, algorithm and options. The Python functions
below give the signatures and docstrings; the calls run in compiled builtin
functions (``_core.scan_entry``, ``_core.exscan_entry``), which parse the
buffer specs as :func:`shancoll.allreduce` does.
"""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from . import _core

__all__ = ["exscan", "scan"]


def scan(
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
    """Inclusive prefix reduction: rank r's ``recvbuf`` gets x_0 o x_1 o ... o x_r.

    Collective over ``comm``; the result equals ``comm.Scan(sendbuf, recvbuf, op)``
    up to the association of floating-point combination. Every algorithm
    combines in rank order, so non-commutative ops (``MPI.Op.Create(f,
    commute=False)``, a callable) give MPI's answer.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        An intra-communicator.
    sendbuf, recvbuf, op, commute :
        As for :func:`shancoll.allreduce`: ``MPI.IN_PLACE`` (or None) as
        ``sendbuf`` takes the input from ``recvbuf``; every NumPy numeric
        dtype with an MPI datatype; the predefined ops as typed kernels,
        any other ``MPI.Op`` through ``MPI_Reduce_local``, or a callable
        ``f(a, b)`` (``a`` holds the lower ranks' contributions).
    algorithm : str
        ``"auto"`` (``SHANCOLL_SCAN_ALGORITHM`` if set, else the rule table's
        choice, else ``mpi``) or one of ``algorithms("scan")``:

        - ``shan`` -- the inputs in the node's shared segment, the message
          split into one fraction per local rank, each fraction's node prefix
          computed by one rank in local rank order, the exclusive prefix of
          the node totals computed between nodes by recursive doubling (the
          ranks of the same local index), then combined; needs every node to
          be a contiguous range of ranks (virtual nodes are);
        - ``recursive_doubling`` -- point-to-point, ceil(log2 P) rounds;
        - ``mpi`` -- the MPI library's own ``MPI_Scan`` (it blocks inside
          the MPI library, without ``timeout``).
    ranks_per_node, timeout :
        As for :func:`shancoll.allgatherv`.
    **options :
        ``check`` (checked mode: the ranks compare their calls first).

    Raises
    ------
    ValueError (shancoll.ArgumentError)
        Bad arguments (buffers, op, algorithm, options), naming the argument
        and the rank.
    TimeoutError (shancoll.CollectiveTimeout)
        A wait exceeded ``timeout``.

    Statistics of the call: :func:`shancoll.last_stats`.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def exscan(
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
    """Exclusive prefix reduction: rank r > 0 gets x_0 o ... o x_(r-1).

    As :func:`scan` (``comm.Exscan(sendbuf, recvbuf, op)``), with
    ``SHANCOLL_EXSCAN_ALGORITHM`` and ``algorithms("exscan")`` (the same
    algorithms). Rank 0's ``recvbuf`` is not written (MPI leaves it
    undefined), in place or not.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public functions: builtins with the signatures' names and docstrings
# (src/cpp/bindings/scan.cc); the core's option table checks **options.
scan = _core.scan_entry(scan)
exscan = _core.exscan_entry(exscan)
