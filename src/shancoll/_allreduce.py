"""Allreduce and its split-phase form: argument handling around the C++ core.

Both are collective over ``comm``: every rank calls them, in the same order,
with the same count, dtype, op, algorithm and options.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from mpi4py import MPI

from . import _core
from ._buffers import ArgumentError, is_in_place, simple_message
from ._collectives import _comm_info, _rank_error, _rpn

__all__ = ["AllreduceRequest", "allreduce", "iallreduce", "reduction_kernels"]


def reduction_kernels() -> dict[str, Any]:
    """The instruction sets of the typed reduction kernels (local, not collective).

    Returns ``{"active": name, "runnable": [names]}``: the set that
    allreduce, reduce and iallreduce combine with, and every set this build
    and CPU can run, among ``generic`` (the build's baseline, SSE2 on
    x86-64), ``avx2`` and ``avx512``. ``active`` is the widest runnable set,
    or ``$SHANCOLL_KERNELS`` when set (read once; see
    :func:`reload_environment`). Every set gives bitwise the same results
    (each element is one IEEE operation); only the speed differs. Complex and
    long double types always use ``generic``.

    Raises ArgumentError when ``SHANCOLL_KERNELS`` names a set this build or
    CPU cannot run (so does every reduction then).
    """
    return dict(_core.reduction_kernels())


def _op_handle(op: Any, commute: bool) -> tuple[MPI.Op, bool]:
    """(MPI op, whether it was created here and must be freed)."""
    if isinstance(op, MPI.Op):
        if op == MPI.OP_NULL:
            raise ArgumentError("op: MPI.OP_NULL is not a reduction")
        return op, False
    if callable(op):
        return MPI.Op.Create(_wrap_callable(op), commute=commute), True
    raise ArgumentError(f"op: expected an MPI.Op or a callable, got {type(op).__name__}")


def _wrap_callable(fn: Callable) -> Callable:
    """An MPI user function computing ``inout = fn(in, inout)`` on NumPy views."""
    from mpi4py.util import dtlib

    def user_function(inbuf, inoutbuf, datatype):
        dtype = dtlib.to_numpy_dtype(datatype)
        a = np.frombuffer(inbuf, dtype=dtype)
        b = np.frombuffer(inoutbuf, dtype=dtype)
        b[...] = fn(a, b)

    return user_function


def _buffers(sendbuf: Any, recvbuf: Any, rank: int):
    """(send array or None, receive array, element dtype), checked against each other."""
    fast = _plain_arrays(sendbuf, recvbuf)
    if fast is not None:
        return fast
    rarr, el, count, offset = simple_message(recvbuf, "recvbuf", True)
    recv = _flat(rarr, el, count, offset)
    if is_in_place(sendbuf):
        return None, recv, el
    sarr, sel, scount, soffset = simple_message(sendbuf, "sendbuf", False)
    if sel != el:
        raise ArgumentError(
            f"sendbuf: element type {sel} does not match the receive buffer's {el} (rank {rank})"
        )
    if scount != count:
        raise ArgumentError(
            f"sendbuf: {scount} elements but recvbuf has {count}: the lengths must match "
            f"(rank {rank})"
        )
    return _flat(sarr, sel, scount, soffset), recv, el


def _plain_arrays(sendbuf: Any, recvbuf: Any):
    """The common case, checked cheaply: contiguous NumPy arrays of one plain
    numeric dtype and size (or MPI.IN_PLACE). None: take the general path,
    which also words the errors."""
    if type(recvbuf) is not _ndarray:
        return None
    el = recvbuf.dtype
    flags = recvbuf.flags
    if not (flags.c_contiguous and flags.writeable) or el.hasobject or el.shape or not el.itemsize:
        return None
    if is_in_place(sendbuf):
        return None, recvbuf, el
    if (
        type(sendbuf) is not _ndarray
        or sendbuf.dtype != el
        or sendbuf.size != recvbuf.size
        or not sendbuf.flags.c_contiguous
    ):
        return None
    return sendbuf, recvbuf, el


_ndarray = np.ndarray


def _flat(arr: np.ndarray, el: np.dtype, count: int, offset: int) -> np.ndarray:
    """The ``count`` elements at ``offset`` as a flat array of the element's base type."""
    base = el.base if el.shape else el
    flat = arr.reshape(-1).view(base) if arr.dtype != base else arr.reshape(-1)
    n = int(np.prod(el.shape, dtype=np.int64)) if el.shape else 1
    return flat[offset * n : (offset + count) * n]


def _call(core_fn, comm, sendbuf, recvbuf, op, algorithm, ports, ranks_per_node, commute,
          consistent, **core_options):  # fmt: skip
    """The general path: parses the buffers and the op, then runs ``core_fn``.
    Returns (its result, the MPI op created here for a callable, or None)."""
    _, rank = _comm_info(comm)
    handle, created = None, False
    try:
        if not isinstance(algorithm, str):
            raise ArgumentError(f"algorithm: expected a string, got {algorithm!r}")
        if ports is not None and (isinstance(ports, bool) or not isinstance(ports, int)):
            raise ArgumentError(f"ports: expected an integer or None, got {ports!r}")
        if not isinstance(consistent, bool):
            raise ArgumentError(f"consistent: expected True or False, got {consistent!r}")
        send, recv, el = _buffers(sendbuf, recvbuf, rank)
        handle, created = _op_handle(op, commute)
        base = el.base if el.shape else el
        result = core_fn(
            comm, send, recv, base.kind, base.itemsize, handle,
            "" if algorithm == "auto" else algorithm,
            0 if ports is None else ports, _rpn(ranks_per_node),
            consistent=consistent, **core_options,
        )  # fmt: skip
        return result, handle if created else None
    except (ArgumentError, TypeError) as e:
        if created:
            handle.Free()
        raise _rank_error(ArgumentError(str(e)), rank) from None
    except BaseException:
        if created:
            handle.Free()
        raise


def _seconds(timeout: Any) -> float:
    """The core's timeout argument (0: the default)."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
        raise ArgumentError(f"timeout: expected seconds as a number, got {timeout!r}")
    return 0.0 if timeout is None else float(timeout)


def allreduce(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    op: Any = MPI.SUM,
    algorithm: str = "auto",
    *,
    ports: int | None = None,
    commute: bool = False,
    consistent: bool = True,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Reduces every rank's ``sendbuf`` elementwise into every rank's ``recvbuf``.

    Collective over ``comm``; the result equals ``comm.Allreduce(sendbuf, recvbuf, op)``
    up to the order of floating-point combination, and is bitwise identical
    on every rank for the algorithms ``auto`` may choose.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        An intra-communicator.
    sendbuf :
        A contiguous NumPy array (or buffer-protocol object) or an mpi4py
        spec ``[buf, count]``, ``[buf, datatype]``, ``[buf, count, datatype]``,
        ``[buf, (count, displ), datatype]``, ``[buf, count, displ, datatype]``;
        as many elements as ``recvbuf``, of the same type. ``MPI.IN_PLACE``
        (or None): the input is in ``recvbuf``.
    recvbuf :
        A writable contiguous array or simple spec, as for ``sendbuf``.
        Every NumPy numeric dtype with an MPI datatype (bool, all integer
        widths, float32/64, longdouble, complex64/128, clongdouble; not float16).
    op : mpi4py.MPI.Op or callable
        ``MPI.SUM``, ``PROD``, ``MIN``, ``MAX``, ``LAND``, ``LOR``, ``LXOR``,
        ``BAND``, ``BOR``, ``BXOR`` (fast typed kernels where MPI defines the
        op on the type), any other ``MPI.Op`` (``MPI.Op.Create`` included,
        through ``MPI_Reduce_local``), or a Python callable ``f(a, b)``
        returning ``a o b`` elementwise for NumPy arrays (``a`` holds the
        lower ranks' contributions).
    commute : bool
        For a callable ``op``: whether it is commutative (False: treated as
        non-commutative, as ``MPI.Op.Create`` does).
    consistent : bool
        True (default): floating-point results must be bitwise identical on
        all ranks, so ``auto`` (and the inter-node step of ``shan``) only
        picks algorithms that combine in the same order everywhere. False
        allows the rank-varying ones (``nway_dissemination``: fewer rounds),
        whose results may differ between ranks in the last bits. An
        explicitly named algorithm runs as named either way.
    algorithm : str
        ``"auto"`` (default: the environment variable
        ``SHANCOLL_ALLREDUCE_ALGORITHM`` if set, else a rule that never picks
        an algorithm whose floating-point result may differ between ranks
        unless ``consistent=False``, nor one that cannot take a
        non-commutative op; with every rank on one node it goes through
        shared memory with ``shan``), or one of
        ``algorithms("allreduce")``:

        - ``dissemination`` -- the GASPI paper's 2-way dissemination with
          partial reductions, floor(log2 P) rounds;
        - ``nway_dissemination`` -- the adapted n-way dissemination
          (butterfly paper, Theorem 1), ceil(log_{n+1} P) rounds;
        - ``bruck`` -- Bruck's global combine with n ports, ceil(log_{n+1} P) rounds;
        - ``pairwise_exchange`` -- butterfly, log2 P rounds (+2 when P is not a
          power of two);
        - ``binomial`` -- binomial tree reduce + broadcast, 2 ceil(log2 P) rounds;
        - ``ring`` -- pipelined ring reduce-scatter + allgather (large messages);
        - ``release_gather`` -- intra-node reduce and bcast through shared
          memory on release/gather flags (commutative ops), the node leaders'
          allreduce between nodes; see :func:`shancoll.bcast`;
        - ``shan`` -- hierarchical (GASPI paper): the inputs copied into the
          node's shared segment, the message split into one fraction per
          local rank, each fraction reduced on the node in rank order and then
          allreduced between the nodes by the ranks of the same local index
          (with the algorithm ``auto`` picks for the fraction), the result
          read from the segment; nodes from ``ranks_per_node``;
        - ``mpi`` -- the MPI library's own ``MPI_Allreduce``.

        ``dissemination``, ``nway_dissemination`` and ``bruck`` combine in a
        rotated order on each rank: for floating point with P > 2 the ranks'
        results may differ in the last bits, and they refuse non-commutative
        ops. ``binomial`` and ``mpi`` take non-commutative ops at every P,
        ``pairwise_exchange`` when P is a power of two, ``shan`` when every
        node holds a contiguous range of ranks (virtual nodes do).
    ports : int or None
        n, the messages per round of ``nway_dissemination``, ``bruck`` and
        ``dissemination`` (``shan``'s inter-node step uses its default).
        None: the smallest n for which a 5-tuple of Theorem 1 exists
        (``nway_dissemination``), else 1. Where no 5-tuple exists for (n, P),
        ``nway_dissemination`` falls back to the dissemination with
        partial reductions in radix n+1 (the paper's "additional data items").
    ranks_per_node : int or None
        Node layout (virtual nodes), as for :func:`allgatherv`: the nodes of
        ``shan``, and for the other algorithms the layout used for the
        statistics (intra/inter-node messages).
    timeout : float or None
        Seconds a single wait may last before ``TimeoutError``; None: the
        environment variable ``SHANCOLL_TIMEOUT``, else 120 s.
    **options :
        ``release_gather``'s options (``tree``, ``k``, ``skew``,
        ``topology``, their ``bcast_``/``reduce_`` forms for one phase,
        ``sockets``, ``buffer_size``, ``buffers``, ``inline``,
        ``read_from_parent``, ``data_copy``, ``single_copy``, ``inter_algorithm``; see
        ``shancoll._release_gather``); they imply ``algorithm="release_gather"``.
    Raises
    ------
    ValueError (shancoll.ArgumentError)
        Bad arguments, naming the argument and the rank: lengths or element
        types of sendbuf and recvbuf differ, an op not defined on the dtype,
        a non-contiguous or read-only buffer, an unknown algorithm, a
        non-commutative op with an algorithm that cannot keep rank order.
    TimeoutError (shancoll.CollectiveTimeout)
        A wait exceeded ``timeout``.

    Statistics of the call (rounds, messages and bytes sent): :func:`last_stats`;
    for ``shan``, rounds are the inter-node rounds of the fractions this rank
    allreduced, and the intra-node counts are its copies into and out of the
    node segment.
    """
    # Only the general forms arrive here: the plain call (ndarrays, an MPI.Op,
    # no options) ran in C++ already (allreduce_entry at the end of this file).
    if options:
        from ._release_gather import allreduce_with_options

        allreduce_with_options(comm, sendbuf, recvbuf, op, algorithm, commute, ranks_per_node,
                               timeout, options)  # fmt: skip
        return
    try:
        seconds = _seconds(timeout)
    except ArgumentError as e:
        raise _rank_error(e, _comm_info(comm)[1]) from None
    _, created = _call(_core.allreduce, comm, sendbuf, recvbuf, op, algorithm, ports,
                       ranks_per_node, commute, consistent, timeout=seconds)  # fmt: skip
    if created is not None:
        created.Free()


AllreduceRequest = _core.AllreduceRequest


def iallreduce(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    op: Any = MPI.SUM,
    algorithm: str = "auto",
    *,
    ports: int | None = None,
    commute: bool = False,
    consistent: bool = True,
    ranks_per_node: int | None = None,
) -> AllreduceRequest:
    """Starts a split-phase allreduce and returns its :class:`AllreduceRequest`.

    Arguments as for :func:`allreduce`; algorithms: the schedule-driven ones
    (``dissemination``, ``nway_dissemination``, ``bruck``,
    ``pairwise_exchange``, ``binomial``) and ``mpi`` (``MPI_Iallreduce``);
    ``ring`` and ``shan`` have no split-phase version (``ValueError`` naming
    ``algorithm``). Several requests may be outstanding
    on one communicator (at most 128); every rank must start them in the
    same order. The first round's messages are sent before this returns.
    The timeout is given to :meth:`AllreduceRequest.wait`.
    """
    req, created = _call(_core.iallreduce, comm, sendbuf, recvbuf, op, algorithm, ports,
                         ranks_per_node, commute, consistent)  # fmt: skip
    if created is not None:
        if req.done:
            created.Free()
        else:
            req.op_to_free = created  # freed when the request completes
    return req


# The public functions are builtin entries that run the plain call in C++ and
# pass any other call, unchanged, to the Python functions above.
allreduce = _core.allreduce_entry(allreduce, False)
iallreduce = _core.allreduce_entry(iallreduce, True)
