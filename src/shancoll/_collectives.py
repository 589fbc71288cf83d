"""The public collectives of the allgather family, and introspection.

Every function here is collective over ``comm`` unless said otherwise: all
ranks must call it, in the same order, with matching arguments (the same
counts, displacements, algorithm and options on every rank), exactly as for
the MPI collective of the same name.

The collectives' Python functions give the signatures and docstrings; the
calls run in compiled builtin functions (``_core.allgatherv_entry``, ...),
which parse the buffer specs and options themselves
(``src/cpp/bindings/bufspec.h``), on intra- and inter-communicators.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from mpi4py import MPI

from . import _core, _intergroup

ArgumentError = _core.ArgumentError

__all__ = [
    "Stats",
    "algorithms",
    "allgather",
    "allgather_shared",
    "allgatherv",
    "allgatherv_shared",
    "last_stats",
    "topology",
]

_Intracomm = MPI.Intracomm


# ---------------------------------------------------------------------------
# helpers


def _comm_error(comm: Any) -> ArgumentError:
    where = f" (on rank {MPI.COMM_WORLD.Get_rank()} of COMM_WORLD)"
    if not isinstance(comm, MPI.Comm):
        return ArgumentError(
            f"comm: expected an mpi4py communicator, got {type(comm).__name__}{where}"
        )
    if comm == MPI.COMM_NULL:
        return ArgumentError(f"comm: the communicator is MPI.COMM_NULL (freed?){where}")
    return ArgumentError(f"comm: unusable communicator {comm!r}{where}")


def _comm_info(comm: Any) -> tuple[int, int]:
    try:
        return comm.Get_size(), comm.Get_rank()
    except Exception:
        raise _comm_error(comm) from None


def _rank_error(e: Exception, rank: int) -> Exception:
    """The core's error, with the rank added (the core does not always name it)."""
    msg = str(e)
    if f"rank {rank}" not in msg:
        msg = f"{msg} (on rank {rank})"
    return type(e)(msg)


# ---------------------------------------------------------------------------
# allgatherv / allgather


def allgatherv(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    *,
    algorithm: str = "auto",
    block_size: int = 0,
    transport: str = "auto",
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    intra_algorithm: str = "auto",
    single_copy: bool | None = None,
    ring_window: int | None = None,
) -> None:
    """Gathers every rank's contribution into every rank's ``recvbuf`` (``MPI_Allgatherv``).

    Collective over ``comm``; the result equals ``comm.Allgatherv(sendbuf, recvbuf)``.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        An intra-communicator (``COMM_WORLD``, a dup, a split, ``COMM_SELF``)
        or an inter-communicator (``mpi4py.MPI.Intercomm``). On an
        inter-communicator the result equals ``comm.Allgatherv(sendbuf,
        recvbuf)`` there: every process receives the blocks of the *remote*
        group, ``recvbuf``'s counts and displacements have one entry per
        remote process (a plain array is split evenly over them), the send
        block's size is free (the remote group's counts must match it) and
        ``MPI.IN_PLACE`` is not allowed.
    sendbuf :
        This rank's contribution: a contiguous NumPy array (or buffer-protocol
        object) or an mpi4py spec ``[buf, count]``, ``[buf, datatype]``,
        ``[buf, count, datatype]``, ``[buf, (count, displ), datatype]``,
        ``[buf, count, displ, datatype]``; its element count must equal
        ``counts[rank]``. ``MPI.IN_PLACE`` (or None): the contribution is
        already in ``recvbuf`` at ``displs[rank]``.
    recvbuf :
        A writable contiguous array, or an mpi4py spec ``[buf, counts]``,
        ``[buf, counts, displs]``, ``[buf, (counts, displs)]``,
        ``[buf, datatype]``, ``[buf, counts, datatype]``,
        ``[buf, (counts, displs), datatype]``, ``[buf, counts, displs, datatype]``.
        Counts and displacements are in elements; displs default to the
        exclusive prefix sum of counts; with no counts the buffer is split
        evenly (mpi4py's rule). A datatype must match the array's dtype
        (``MPI.BYTE`` fits any array: counts are then bytes). Bytes not
        covered by any rank's block (gaps between displacements) are left
        untouched.
    algorithm : str
        ``"auto"`` (default: the environment variable
        ``SHANCOLL_ALLGATHERV_ALGORITHM`` if set, else the rule table fitted
        from measured sweeps), or one of :func:`algorithms`:

        - ``shan`` -- shared notifications (seed paper): node-local gather into
          one shared segment, the node's blocks load-balanced over its ranks,
          a pipelined ring of nodes where any local rank forwards any block
          that arrives; every byte crosses each node boundary once, and the
          number of inter-node messages grows with nodes, not ranks.
        - ``ring`` -- flat ring, P-1 rounds, bandwidth optimal.
        - ``bruck`` -- Bruck's concatenation, ceil(log2 P) rounds.
        - ``recursive_doubling`` -- log2 P rounds (folding for P not a power of two).
        - ``mpi`` -- the MPI library's own ``MPI_Allgatherv``.

        On an inter-communicator (``algorithms("allgatherv", inter=True)``):

        - ``segmented`` (what ``auto`` runs; environment variable
          ``SHANCOLL_INTERGROUP_ALGORITHM``) -- Kang, Traeff et al.: a
          full-duplex exchange that keeps min(p, q) pairs of processes busy,
          the blocks cut into balanced segments so every byte crosses once
          and every process receives its share; then concurrent intragroup
          allgathervs (``intra_algorithm``). Algorithm 1 for allgather,
          Algorithm 2 (allreduce, exscan, segments of the global byte index,
          Theorem 3's receive order) for allgatherv.
        - ``root_gather`` -- gather at each group's root, exchange between the
          roots, broadcast: the MPICH and Open MPI algorithm, for comparison.
        - ``mpi`` -- the MPI library's own ``MPI_Allgatherv`` on the
          inter-communicator.
    block_size : int
        ``shan``: the largest block, in bytes, forwarded between nodes; a
        contribution larger than this is split and pipelined. 0 chooses:
        256 KiB, or smaller when one node holds at least half of the data
        on 3+ nodes (broadcast-shaped; ``pattern/shan_blocks.h``).
    transport : str
        ``shan``: how a notified write between nodes is emulated:
        ``"rma"`` (put, flush, put of the notification), ``"two_sided"``
        (receives pre-posted straight into the node segment) or ``"auto"``.
    ranks_per_node : int or None
        Node layout for the hierarchical algorithms. None: the environment
        variable ``SHANCOLL_RANKS_PER_NODE`` if set, else the physical nodes;
        0: the physical nodes; n > 0: *virtual nodes* of n consecutive ranks
        (the last one possibly smaller), intersected with the physical nodes,
        so that one machine runs the multi-node code paths.
    timeout : float or None
        Seconds any single wait inside the call may last before
        :class:`shancoll.CollectiveTimeout` (a ``TimeoutError``) is raised.
        None: the environment variable ``SHANCOLL_TIMEOUT``, else 120 s.
    intra_algorithm : str
        Inter-communicators only: the allgatherv algorithm of the intragroup
        phase of ``segmented`` (any name of ``algorithms("allgatherv")``, or
        ``"auto"``); ``block_size``, ``transport`` and ``ranks_per_node``
        apply to that phase. Anything but ``"auto"`` on an
        intra-communicator is an error.
    single_copy : bool or None
        ``shan`` on one node of two ranks with a private ``recvbuf``: True
        moves each block straight between the two ranks' buffers by
        cross-memory attach (``process_vm_readv``/``writev``), False through
        the node's shared memory (the ring below). None: by size, from
        64 KiB in all where the node allows it, unless a rule of ``auto``
        says otherwise (``SHANCOLL_SINGLE_COPY``). :func:`allgather_init`
        and :func:`allgatherv_init` on one node: True runs the persistent
        single-copy engine instead of the request's deposit at every size
        past 56 bytes per rank; None past the deposit's 1 MiB, or where the
        rule table's ``allgather_init`` row says ``single_copy=1``.
    ring_window : int or None
        ``shan`` on one node with a private ``recvbuf`` and no single copy:
        the bytes of each rank's ring of chunks in the node's shared memory
        (at least 65536). None: 256 KiB, unless a rule of ``auto`` says
        otherwise. A ring larger than the cores' L2 caches ran twice as
        fast on an AMD Zen 4 VM, where a line written by one core is slow
        to take from its cache (``docs/performance.md``).

    Raises
    ------
    ValueError (shancoll.ArgumentError)
        Bad arguments, naming the argument and the rank: wrong number of
        counts, negative counts, a receive buffer too small, read-only or not
        contiguous, mismatched dtypes, a freed communicator, ...
    TimeoutError (shancoll.CollectiveTimeout)
        A wait exceeded ``timeout`` (a rank did not join, or diverging arguments).
    RuntimeError (shancoll.MPIError)
        An MPI call failed.

    Statistics of the call: :func:`last_stats`.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def allgather(
    comm: MPI.Comm,
    sendbuf: Any,
    recvbuf: Any,
    *,
    algorithm: str = "auto",
    block_size: int = 0,
    transport: str = "auto",
    ranks_per_node: int | None = None,
    timeout: float | None = None,
    intra_algorithm: str = "auto",
    single_copy: bool | None = None,
    ring_window: int | None = None,
) -> None:
    """Gathers equal-sized contributions into every rank's ``recvbuf`` (``MPI_Allgather``).

    Collective over ``comm``; the result equals ``comm.Allgather(sendbuf, recvbuf)``:
    rank r's contribution lands at element ``r * count`` of ``recvbuf``,
    where ``count = recvbuf size / P`` (or the count of a ``[buf, count, ...]``
    spec). ``sendbuf`` must hold ``count`` elements, or be ``MPI.IN_PLACE``
    (each rank's block already in place). Specs as for :func:`allgatherv`
    (simple form: ``[buf, count]``, ``[buf, datatype]``, ``[buf, count, datatype]``,
    ``[buf, (count, displ), datatype]``, ``[buf, count, displ, datatype]``).
    Runs the :func:`allgatherv` algorithms (``algorithms("allgather")``);
    options (``algorithm``, ``block_size``, ``transport``, ``ranks_per_node``,
    ``timeout``, ``intra_algorithm``, ``single_copy``, ``ring_window``) and
    errors as for :func:`allgatherv`.

    On an inter-communicator the result equals ``comm.Allgather(sendbuf,
    recvbuf)``: every process receives one block per *remote* process (count
    = ``recvbuf`` size / remote size, or the spec's count); the send block
    may differ in size from the received ones (the remote group receives
    it); ``MPI.IN_PLACE`` is not allowed. ``segmented`` runs the paper's
    Algorithm 1 (``algorithms("allgather", inter=True)``).
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The public functions: builtins with the signatures' names and docstrings
# (src/cpp/bindings/allgatherv.cc).
allgatherv = _core.allgatherv_entry(allgatherv)
allgather = _core.allgather_entry(allgather)


# ---------------------------------------------------------------------------
# shared results


def allgatherv_shared(
    comm: MPI.Comm,
    sendbuf: Any,
    counts: Any,
    displs: Any = None,
    *,
    dtype: Any = None,
    block_size: int = 0,
    transport: str = "auto",
    ranks_per_node: int | None = None,
    timeout: float | None = None,
) -> np.ndarray:
    """Allgatherv (algorithm ``shan``) returning the node-shared result, without a copy.

    Collective over ``comm``. Returns a read-only 1-d array of ``dtype`` whose
    element ``displs[r] + i`` is element i of rank r's contribution; its
    length is ``max(displs[r] + counts[r])`` over ranks with a nonzero count.

    Parameters
    ----------
    sendbuf :
        This rank's contribution (array or simple mpi4py spec, as for
        :func:`allgatherv`); it must hold ``counts[rank]`` elements.
        ``MPI.IN_PLACE`` is not possible.
    counts : sequence of int, or int
        Elements contributed by each rank (one integer: the same for all).
    displs : sequence of int, int, or None
        Element displacements of the contributions in the result; None: the
        exclusive prefix sum of ``counts``; one integer: a stride.
    dtype :
        The element type (NumPy dtype-like or MPI datatype); None: the send
        buffer's. Must match the send buffer.
    block_size, transport, ranks_per_node, timeout :
        As for :func:`allgatherv` (algorithm is always ``shan``).

    The result is a **read-only view of the node-shared segment** in which
    algorithm ``shan`` assembles it: no copy into a private buffer is made,
    every rank of a node reads the same memory. Lifetime rule: the view's
    *contents* are valid only until the next shancoll call on ``comm`` (any
    collective on the same communicator may overwrite the segment; copy
    with ``numpy.array(view)`` to keep them); the *memory* stays mapped until
    ``comm`` is freed or MPI is finalized -- reading a view after that is
    undefined (it may crash).
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


def allgather_shared(
    comm: MPI.Comm,
    sendbuf: Any,
    *,
    dtype: Any = None,
    block_size: int = 0,
    transport: str = "auto",
    ranks_per_node: int | None = None,
    timeout: float | None = None,
) -> np.ndarray:
    """Allgather (algorithm ``shan``) returning the node-shared result, without a copy.

    Collective over ``comm``; every rank passes a contribution of the same
    shape and dtype. Returns a read-only array of shape
    ``(P, *sendbuf.shape)`` (for an mpi4py spec ``[buf, count, ...]``:
    ``(P, count)``) whose row r is rank r's contribution. Options as for
    :func:`allgatherv_shared`.

    The same lifetime rule holds: the view is read-only, its contents are
    valid only until the next shancoll call on ``comm``, its memory stays
    mapped until ``comm`` is freed or MPI is finalized.
    """
    raise AssertionError("unreachable: the builtin function below runs the call")


# The same for the node-shared results.
allgatherv_shared = _core.allgatherv_shared_entry(allgatherv_shared)
allgather_shared = _core.allgather_shared_entry(allgather_shared)


# ---------------------------------------------------------------------------
# introspection


@dataclass(frozen=True)
class Stats:
    """What the last collective on a communicator did, as counted by the calling rank.

    Attributes
    ----------
    algorithm : str
        The algorithm that ran (``auto`` resolved).
    rounds : int
        Communication rounds.
    inter_messages, inter_bytes : int
        Messages (and payload bytes) this rank sent to another node.
    intra_messages, intra_bytes : int
        Copies/messages within the node (e.g. into and out of the shared segment).
    forwarded : int
        ``shan``: blocks this rank forwarded on to the next node after
        receiving them (the pipelined ring).
    node_count : int
        Nodes (virtual nodes included) of the layout the call used.
    block_count : int
        ``shan``: blocks of the whole call (contributions split at ``block_size``).
    remote_sent_messages, remote_sent_bytes, remote_recv_messages, remote_recv_bytes : int
        Inter-communicators: messages and bytes this process sent to and
        received from the other group (the algorithms ``segmented`` and
        ``root_gather``; 0 for ``mpi``, whose traffic is not visible). The
        fields above then describe the intragroup phase, and ``rounds`` the
        exchange between the groups: the steps this process took in it (the
        larger of its messages sent and received there).
    single_copy_bytes : int
        Bytes this rank copied by cross-memory attach, straight between its
        buffer and another local rank's (Linux ``process_vm_readv``/``writev``;
        0 where the shared segment carried everything): which mechanism ran.
    streamed_ring_bytes : int
        Bytes this rank stored into a shared-memory ring (the pair channels,
        ``shan`` allgatherv's ring, ``release_gather``'s bcast slots and a
        reduce leaf's slot, allreduce ``pieces``' regions) by streaming stores, around the cache: chosen chunk by chunk by the
        writer's own timings, or fixed by ``SHANCOLL_RING_STORES``.
    bcast_tree, reduce_tree : str
        ``release_gather``: the tree each phase ran on this rank's node, e.g.
        ``"kary k=2 right, socket_leader_last over 2 sockets (hwloc)"``;
        where the socket map came from in parentheses (``hwloc``,
        ``SHANCOLL_SOCKETS``, ``sockets option``, or why one socket was
        assumed). Empty when the phase did not run (other algorithms, a
        node of one rank).
    """

    algorithm: str
    rounds: int = 0
    inter_messages: int = 0
    inter_bytes: int = 0
    intra_messages: int = 0
    intra_bytes: int = 0
    forwarded: int = 0
    node_count: int = 1
    block_count: int = 0
    remote_sent_messages: int = 0
    remote_sent_bytes: int = 0
    remote_recv_messages: int = 0
    remote_recv_bytes: int = 0
    single_copy_bytes: int = 0
    streamed_ring_bytes: int = 0
    bcast_tree: str = ""
    reduce_tree: str = ""


_STATS_FIELDS = tuple(f.name for f in fields(Stats))


def last_stats(comm: MPI.Comm) -> Stats:
    """Statistics of the last shancoll collective this rank ran on ``comm``.

    Local (no communication) once ``comm`` has been used with shancoll; on a
    communicator shancoll has never seen, the core first creates its state
    for it, which is collective: call it on every rank then.
    """
    _, rank = _comm_info(comm)
    try:
        if type(comm) is not _Intracomm and _intergroup.is_intercomm(comm):
            d = _intergroup.last_stats(comm)
        else:
            d = _core.last_stats(comm)
        return Stats(**{k: d[k] for k in _STATS_FIELDS if k in d})
    except ArgumentError as e:
        raise _rank_error(e, rank) from None


def topology(
    comm: MPI.Comm, ranks_per_node: int | None = None, *, timeout: float | None = None
) -> dict[str, Any]:
    """The node layout shancoll uses on ``comm``.

    Collective: every rank of ``comm`` must call it the first time a layout
    (``ranks_per_node``) is used on ``comm``, or the first time shancoll sees
    ``comm`` at all; the layout is built then, and afterwards cached. Like
    every collective it obeys the deadline: the build waits at most
    ``timeout`` seconds (None: ``SHANCOLL_TIMEOUT``, else 120 s) for every
    rank to join, and a rank that does not come is a
    :class:`shancoll.CollectiveTimeout` (a ``TimeoutError``) naming the wait,
    never a hang; shancoll then refuses further calls on ``comm``.

    Returns a dict: ``node`` (this rank's node), ``local_rank``,
    ``node_count``, ``hosts`` (the physical nodes ``comm`` spans: above 1,
    ``auto`` leaves calls to the MPI library unless a rule table says
    otherwise), ``node_of`` (node of every rank), ``ranks`` (ranks of
    every node), ``sockets`` and ``hwloc`` (the machine's sockets, whether
    hwloc found them), ``socket_of`` (the socket of every local rank of this
    rank's node, as the topology-aware trees see it), ``socket_count`` and
    ``socket_source`` (``"hwloc"``, ``"SHANCOLL_SOCKETS"``, or why one
    socket is assumed: hwloc missing, or a rank not bound within one socket),
    ``single_copy`` (whether the ranks of this rank's node may copy straight
    between each other's buffers: Linux cross-memory attach, probed when the
    layout is built; ``SHANCOLL_SINGLE_COPY=0`` turns it off),
    ``oversubscribed`` (whether this rank's physical node runs more ranks
    than CPUs they may use; then every shancoll wait spins 4 polls instead
    of 128 before it yields the core, in this process from then on).
    ``ranks_per_node`` and ``timeout`` as for :func:`allgatherv`.
    """
    _, rank = _comm_info(comm)
    try:
        return dict(_core.topology(comm, ranks_per_node, timeout))
    except ArgumentError as e:
        raise _rank_error(e, rank) from None


_algorithms_cache: dict[tuple[str, bool], list[str]] = {}


def algorithms(collective: str, *, inter: bool = False) -> list[str]:
    """Names of the algorithms registered for ``collective`` (``"allgatherv"``,
    ``"allgather"``, ``"allreduce"``, ``"iallreduce"``, ``"bcast"``, ``"reduce"``,
    ``"barrier"``, ``"scan"``, ``"exscan"``, ``"reduce_scatter"``,
    ``"reduce_scatter_block"``, ``"alltoall"``, ``"alltoallv"``, ``"gather"``,
    ``"gatherv"``, ``"scatter"``, ``"scatterv"``), or of its request forms
    (``"ibcast"``, ``"igatherv"``, ... every ``"i<collective>"``: the
    shancoll schedule where one exists, and ``"mpi"``).

    ``inter=True``: the algorithms for inter-communicators (``segmented``,
    ``root_gather``, ``mpi``); the intragroup phase of ``segmented`` runs any
    of the ``inter=False`` names (``intra_algorithm=``). Every name is valid
    as ``algorithm=`` for its kind of communicator; ``"auto"`` is accepted
    too but not listed. Local, no communication.
    """
    key = (collective, inter)
    names = _algorithms_cache.get(key)
    if names is None:
        if not isinstance(collective, str):
            raise ArgumentError(f"collective: expected a string, got {collective!r}")
        if inter and collective not in ("allgatherv", "allgather"):
            raise ArgumentError(f"inter: {collective} has no inter-communicator algorithms")
        listed = "intergroup" if inter else collective
        names = [name for name, _summary in _core.algorithms(listed)]  # checks the name
        _algorithms_cache[key] = names
    return list(names)
