"""The rooted collectives, bcast and reduce (the core's coll/rooted.h), and
the options of their ``release_gather`` algorithm.

``release_gather`` (Jain et al., "Framework for Scalable Intra-Node
Collective Operations using Shared Memory") moves data through a node-wide
shared segment, synchronised by one release and one gather flag per rank,
each in a cache line of its own. Its optimisations are keyword options of
:func:`bcast`, :func:`reduce` and :func:`shancoll.allreduce`:

``tree``
    ``"auto"`` (default: the paper's choice -- flat for bcast; for reduce a
    K-nomial tree with K=4 below 512 bytes, right-skewed K-ary trees with
    K=3 below 8 KiB and K=2 from 8 KiB), ``"flat"``, ``"kary"`` or
    ``"knomial"``.
``k``
    The branching factor of ``kary``/``knomial`` (default by size: K-ary
    as above; K-nomial K=4 up to 16 KiB, K=2 above).
``skew``
    ``"auto"`` (bcast left, reduce right), ``"left"`` (children served in
    increasing rank order) or ``"right"`` (the mirror image).
``topology``
    ``"auto"`` (default: ``socket_leader_last`` for reduce from 512 bytes,
    ``none`` otherwise, as the paper chose), ``"none"`` (one tree over the
    node's ranks), ``"socket_leader_first"`` or ``"socket_leader_last"``:
    a tree of the chosen kind, K and skew per socket, rooted at the socket's
    leader (the root on its own socket, else the socket's lowest rank), the
    leaders joined by a tree of the same shape; a leader serves the other
    sockets' leaders before (first) or after (last) its own socket's
    children. With one socket it is the plain tree, at no cost.
``bcast_tree``, ``bcast_k``, ``bcast_skew``, ``bcast_topology``, ``reduce_tree``, ...
    The same for one phase only (allreduce runs a reduce and a bcast: each
    its own tree), over the plain option.
``sockets``
    The socket map of the topology-aware trees: ``"auto"`` (default:
    ``SHANCOLL_SOCKETS`` if set, else hwloc and each rank's CPU binding;
    one socket when hwloc is missing or a rank is not bound within one
    socket), a count ``n`` (each node's ranks split into ``n`` consecutive
    groups of near-equal size) or a socket per local rank (``[0, 1, 0, 1]``,
    as many entries as the largest node has ranks). A synthetic map tests the
    trees' shapes on a one-socket machine. :func:`shancoll.topology` shows
    the automatic map, ``last_stats(comm).reduce_tree`` the tree a call used.
``buffer_size``, ``buffers``
    Bytes of the bcast buffer and of each rank's reduce buffer, split into
    ``buffers`` slots: chunks pipelined through the slots; larger messages
    go through in chunks. Default (0): by message size, the paper's 32 KiB
    in 4 slots (8 KiB chunks) below 64 KiB, 256 KiB in 8 slots (32 KiB
    chunks) from 64 KiB on, where 8 KiB chunks measured about half as fast,
    and for a bcast from 2 MiB 1 MiB in 8 slots (128 KiB chunks: fewer flag
    hand-offs per byte; docs/performance.md).
``inline``
    Messages of at most 312 bytes travel beside their flag, in its cache
    line and the 4 after it (a bcast on a node of more than 8 ranks: 56
    bytes, the flag's line alone), in 8 such slots used in turn (default
    True): the reader loads the lines while it polls the flag, so its wait
    and its read are one cache-line transfer's wait, and a writer checks
    that its readers are done once per 8 calls, not on every call.
``read_from_parent``
    Children read their parent's release flag instead of the parent writing
    one flag per child (default True).
``data_copy``
    The reduce root combines straight into its ``recvbuf`` instead of its
    shared buffer followed by a copy (default True).
``single_copy``
    Data move straight between the ranks' own buffers (Linux cross-memory
    attach: one copy) instead of through the node's shared buffer (the
    root's copy in, every child's copy out). Bcast: a parent writes a share
    of each chunk into each child's buffer while the child reads the rest
    from the parent's. Reduce on a node of two ranks: the root computes 60%
    of the result, the other rank the rest (written into the root's
    ``recvbuf``); allreduce there: each computes half, written to both.
    Default: from 32 KiB where the node allows it
    (``SHANCOLL_SINGLE_COPY``; docs/performance.md has the measurement);
    True: at every size where available; False: never. An addition to the
    paper. :func:`bcast_init`: True runs the persistent single-copy engine
    from any size past 56 bytes instead of the request's deposit; None from
    128 KiB, or where the rule table's ``bcast_init`` row says
    ``single_copy=1``.
``inter_algorithm``
    Allreduce over several (virtual) nodes: the allreduce algorithm the node
    leaders run among themselves (default ``"auto"``).

Several nodes (``ranks_per_node`` or ``SHANCOLL_RANKS_PER_NODE``): bcast and
reduce go between nodes over a binomial tree of one rank per node, allreduce
is intra-node reduce, leaders' allreduce, intra-node bcast.
"""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from . import _core

ArgumentError = _core.ArgumentError

__all__ = ["bcast", "reduce"]


def bcast(
    comm: MPI.Comm,
    buf: Any,
    root: int = 0,
    algorithm: str = "auto",
    *,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Broadcasts ``buf`` from ``root`` to every rank (``comm.Bcast(buf, root)``).

    Collective over ``comm``; every rank passes a buffer of the same size.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        An intra-communicator.
    buf :
        A contiguous NumPy array (or buffer-protocol object) or a simple mpi4py
        spec (``[buf, count]``, ``[buf, count, datatype]``, ...); written on
        every rank but the root.
    root : int
        The rank whose data is broadcast.
    algorithm : str
        ``"auto"`` (``SHANCOLL_BCAST_ALGORITHM`` if set, else ``release_gather``)
        or one of ``algorithms("bcast")``: ``release_gather``, ``binomial``
        (point-to-point binomial tree), ``mpi`` (``MPI_Bcast``).
    ranks_per_node, timeout :
        As for :func:`shancoll.allgatherv`.
    **options :
        ``release_gather``'s options (module docstring): ``tree``, ``k``,
        ``skew``, ``topology`` (and their ``bcast_`` forms), ``sockets``,
        ``buffer_size``, ``buffers``, ``inline``, ``read_from_parent``.

    Raises
    ------
    ValueError (shancoll.ArgumentError)
        Bad arguments, naming the argument and the rank.
    TimeoutError (shancoll.CollectiveTimeout)
        A wait exceeded ``timeout``.

    Statistics of the call: :func:`shancoll.last_stats`.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def reduce(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    op: Any = MPI.SUM,
    root: int = 0,
    algorithm: str = "auto",
    *,
    commute: bool = False,
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> None:
    """Reduces every rank's ``sendbuf`` elementwise into ``recvbuf`` at ``root``
    (``comm.Reduce(sendbuf, recvbuf, op, root)``).

    Collective over ``comm``. ``sendbuf`` as for :func:`shancoll.allreduce`;
    ``MPI.IN_PLACE`` at the root means its input is in ``recvbuf``.
    ``recvbuf`` matters at the root only (None elsewhere is fine). ``op``,
    ``commute``, ``ranks_per_node``, ``timeout`` as for :func:`shancoll.allreduce`.

    ``algorithm``: ``"auto"`` (``SHANCOLL_REDUCE_ALGORITHM`` if set, else
    ``release_gather`` for commutative ops and ``mpi`` otherwise) or one of
    ``algorithms("reduce")``: ``release_gather`` (commutative ops only: it
    combines in tree order), ``binomial`` (point-to-point binomial tree, rank
    order for non-commutative ops), ``mpi`` (``MPI_Reduce``). ``**options``:
    ``release_gather``'s options (module docstring).

    Raises ValueError (shancoll.ArgumentError) naming the argument and the
    rank, TimeoutError (shancoll.CollectiveTimeout) when a wait exceeds ``timeout``.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public functions: builtins with the signatures' names and docstrings
# (src/cpp/bindings/rooted.cc); the core's option table checks **options.
bcast = _core.bcast_entry(bcast)
reduce = _core.reduce_entry(reduce)
