"""Allreduce and its split-phase form.

Both are collective over ``comm``: every rank calls them, in the same order,
with the same count, dtype, op, algorithm and options.

The Python functions below give the signatures and docstrings; the calls run
in compiled builtin functions (``_core.allreduce_entry``), which parse the
buffer specs and options themselves (``src/cpp/bindings/bufspec.h``).
"""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from . import _core

__all__ = ["allreduce", "allreduce_init", "iallreduce", "reduction_kernels"]


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
    single_copy: bool | None = None,
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
        - ``pieces`` -- one node: reduce-scatter + allgather through the
          node's shared segment, as Intel MPI's shm allreduce does: each
          rank's inputs copied in pieces of ``block_size`` bytes (default
          64 KiB) with a flag each, each fraction reduced by its owner in
          rank order, the results copied out a piece behind; several nodes:
          ``shan``;
        - ``mpi`` -- the MPI library's own ``MPI_Allreduce``.

        ``dissemination``, ``nway_dissemination`` and ``bruck`` combine in a
        rotated order on each rank: for floating point with P > 2 the ranks'
        results may differ in the last bits, and they refuse non-commutative
        ops. ``binomial`` and ``mpi`` take non-commutative ops at every P,
        ``pairwise_exchange`` when P is a power of two, ``shan`` and
        ``pieces`` when every node holds a contiguous range of ranks
        (virtual nodes do).
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
    single_copy : bool or None
        ``release_gather``'s option (below; it implies that algorithm). For
        :func:`allreduce_init`: True makes ``shan``'s persistent allreduce
        on a node of two ranks past 56 bytes copy straight between the two
        ranks' buffers (cross-memory attach), each half read, combined and
        written back by its rank (or by the other if that one is not
        there), instead of through the request's deposits; None: as the
        rule table's
        ``allreduce_init`` row says (off where it says nothing).
    timeout : float or None
        Seconds a single wait may last before ``TimeoutError``; None: the
        environment variable ``SHANCOLL_TIMEOUT``, else 120 s.
    **options :
        ``block_size`` (``pieces``: bytes per piece, 0 chooses);
        ``ring_window`` (``pieces``: the bytes of each rank's two rings in the
        node's shared memory, at least 65536, through which the rounds go
        back to back; default: two rounds of the call's size, reused call
        after call, which the caches keep; larger than the caches was
        faster on the Zen 4 VM, see ``docs/performance.md``);
        ``release_gather``'s options (``tree``, ``k``, ``skew``,
        ``topology``, their ``bcast_``/``reduce_`` forms for one phase,
        ``sockets``, ``buffer_size``, ``buffers``, ``inline``,
        ``read_from_parent``, ``data_copy``, ``inter_algorithm``; see
        ``shancoll._rooted``); they imply ``algorithm="release_gather"``.
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
    raise AssertionError("unreachable: the builtin function below runs the call")


AllreduceRequest = _core.Request  # the old name of shancoll.Request


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
    single_copy: bool | None = None,
    timeout: float | None = None,
) -> _core.Request:
    """Starts a split-phase allreduce and returns its :class:`shancoll.Request`.

    Arguments as for :func:`allreduce`; algorithms: the schedule-driven ones
    (``dissemination``, ``nway_dissemination``, ``bruck``,
    ``pairwise_exchange``, ``binomial``) and ``mpi`` (``MPI_Iallreduce``);
    ``ring`` and ``shan`` have no split-phase version (``ValueError`` naming
    ``algorithm``). Several requests may be outstanding
    on one communicator (at most 128); every rank must start them in the
    same order. The first round's messages are sent before this returns.
    ``timeout`` is the default of the request's ``wait``.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def allreduce_init(
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
    single_copy: bool | None = None,
    timeout: float | None = None,
) -> _core.Request:
    """Makes a persistent allreduce (MPI-4's ``MPI_Allreduce_init``) and
    returns its :class:`shancoll.Request`, not started.

    Arguments and algorithms as for :func:`iallreduce`. The algorithm, the
    schedule and its scratch memory (or, for ``mpi``, the MPI library's own
    persistent request) are set up here, once; each ``start()`` replays them
    on the buffers' current contents, ``wait()``/``test()`` complete the run,
    ``free()`` releases the request. Collective over ``comm``: every rank
    makes, starts and frees its persistent requests in the same order.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public functions: builtins with the signatures' names and docstrings.
allreduce = _core.allreduce_entry(allreduce, 0)
iallreduce = _core.allreduce_entry(iallreduce, 1)
allreduce_init = _core.allreduce_entry(allreduce_init, 2)
