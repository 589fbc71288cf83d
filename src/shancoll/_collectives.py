"""The public collectives: argument handling around the C++ core (``shancoll._core``).

Every function here is collective over ``comm`` unless said otherwise: all
ranks must call it, in the same order, with matching arguments (the same
counts, displacements, algorithm and options on every rank), exactly as for
the MPI collective of the same name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from mpi4py import MPI

from . import _core, _intergroup
from ._buffers import (
    ArgumentError,
    as_numpy_dtype,
    send_array,
    simple_message,
    vector_layout,
    vector_message,
)

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

_IN_PLACE = MPI.IN_PLACE
_Intracomm = MPI.Intracomm
_ndarray = np.ndarray
_core_allgatherv = _core.allgatherv
_core_allgatherv_shared = _core.allgatherv_shared


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


def _check_options(
    algorithm: Any, block_size: Any, transport: Any, ranks_per_node: Any, timeout: Any
) -> None:
    """Raises ArgumentError naming a badly typed option (slow path only)."""
    if not isinstance(algorithm, str):
        raise ArgumentError(f"algorithm: expected a string, got {algorithm!r}")
    if not isinstance(transport, str):
        raise ArgumentError(f"transport: expected a string, got {transport!r}")
    for name, value in (("block_size", block_size), ("ranks_per_node", ranks_per_node)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            try:
                value.__index__()
            except Exception:
                raise ArgumentError(f"{name}: expected an integer, got {value!r}") from None
    if timeout is not None and not isinstance(timeout, (int, float)):
        raise ArgumentError(f"timeout: expected seconds as a number, got {timeout!r}")


def _rpn(ranks_per_node: Any) -> int:
    if ranks_per_node is None:
        return -1
    if type(ranks_per_node) is not int:
        try:
            ranks_per_node = ranks_per_node.__index__()
        except Exception:
            raise ArgumentError(
                f"ranks_per_node: expected an integer or None, got {ranks_per_node!r}"
            ) from None
    if ranks_per_node < 0:
        raise ArgumentError(
            f"ranks_per_node: must be None (environment or physical nodes), 0 (physical "
            f"nodes) or a positive node size, got {ranks_per_node}"
        )
    return ranks_per_node


def _inter_options(options: tuple, intra_algorithm: Any) -> tuple:
    """The options of an intergroup call, in the order ``_intergroup._run`` takes them."""
    algorithm, block_size, transport, ranks_per_node, timeout = options
    rpn = None if ranks_per_node is None else _rpn(ranks_per_node)
    return (algorithm, intra_algorithm, block_size, transport, rpn, timeout)


def _intra_algorithm_error(intra_algorithm: Any) -> ArgumentError:
    return ArgumentError(
        f"intra_algorithm: only for inter-communicators (the intragroup phase), got "
        f"{intra_algorithm!r} with an intra-communicator; use algorithm="
    )


def _translate(e: Exception, rank: int, options: tuple) -> Exception:
    """The exception to raise for ``e`` (error path only): argument errors name the rank;
    a TypeError from the core's argument conversion becomes an ArgumentError naming the
    badly typed option."""
    if isinstance(e, TypeError):
        try:
            _check_options(*options)
        except ArgumentError as bad:
            e = bad
        else:
            return e
    return _rank_error(e, rank)


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
    size, rank = _comm_info(comm)
    options = (algorithm, block_size, transport, ranks_per_node, timeout)
    try:
        if type(comm) is not _Intracomm and _intergroup.is_intercomm(comm):
            inter_options = _inter_options(options, intra_algorithm)
            _intergroup.allgatherv(comm, sendbuf, recvbuf, *inter_options)
            return
        if intra_algorithm != "auto":
            raise _intra_algorithm_error(intra_algorithm)
        arr, el, bcounts, bdispls, _ = vector_message(recvbuf, size)
        send = _contribution(sendbuf, el, bcounts[rank] // el.itemsize, rank)
        _run_allgatherv(comm, send, arr, bcounts, bdispls, *options)
    except (ArgumentError, TypeError) as e:
        raise _translate(e, rank, options) from None


def _contribution(sendbuf: Any, el: np.dtype, count: int, rank: int):
    """The send array of this rank, or None for MPI.IN_PLACE (or None)."""
    if sendbuf is None or sendbuf is _IN_PLACE:
        return None
    return send_array(sendbuf, el, count, rank)


def _run_allgatherv(comm, send, arr, bcounts, bdispls, algorithm, block_size, transport,
                    ranks_per_node, timeout) -> None:  # fmt: skip
    """Calls the core with the public options translated to its conventions."""
    _core_allgatherv(
        comm, send, arr, bcounts, bdispls,
        "" if algorithm == "auto" else algorithm,
        block_size, transport,
        -1 if ranks_per_node is None else _rpn(ranks_per_node),
        0.0 if timeout is None else timeout,
    )  # fmt: skip


_block_cache: dict[tuple[int, int, int], tuple[list[int], list[int]]] = {}


def _block_layout(cbytes: int, obytes: int, size: int) -> tuple[list[int], list[int]]:
    key = (cbytes, obytes, size)
    hit = _block_cache.get(key)
    if hit is None:
        hit = ([cbytes] * size, [obytes + i * cbytes for i in range(size)])
        if len(_block_cache) >= 128:
            _block_cache.clear()
        _block_cache[key] = hit
    return hit


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
    ``timeout``, ``intra_algorithm``) and errors as for :func:`allgatherv`.

    On an inter-communicator the result equals ``comm.Allgather(sendbuf,
    recvbuf)``: every process receives one block per *remote* process (count
    = ``recvbuf`` size / remote size, or the spec's count); the send block
    may differ in size from the received ones (the remote group receives
    it); ``MPI.IN_PLACE`` is not allowed. ``segmented`` runs the paper's
    Algorithm 1 (``algorithms("allgather", inter=True)``).
    """
    size, rank = _comm_info(comm)
    options = (algorithm, block_size, transport, ranks_per_node, timeout)
    try:
        if type(comm) is not _Intracomm and _intergroup.is_intercomm(comm):
            inter_options = _inter_options(options, intra_algorithm)
            _intergroup.allgather(comm, sendbuf, recvbuf, *inter_options)
            return
        if intra_algorithm != "auto":
            raise _intra_algorithm_error(intra_algorithm)
        if type(recvbuf) is _ndarray and recvbuf.flags.c_contiguous and recvbuf.flags.writeable:
            arr = recvbuf
            el = arr.dtype
            esize = el.itemsize
            count, rem = divmod(arr.size, size)
            offset = 0
            if rem or el.hasobject or not esize:
                arr, el, count, offset = simple_message(recvbuf, "recvbuf", True, size)
                esize = el.itemsize
        else:
            arr, el, count, offset = simple_message(recvbuf, "recvbuf", True, size)
            esize = el.itemsize
        bcounts, bdispls = _block_layout(count * esize, offset * esize, size)
        send = _contribution(sendbuf, el, count, rank)
        _run_allgatherv(comm, send, arr, bcounts, bdispls, *options)
    except (ArgumentError, TypeError) as e:
        raise _translate(e, rank, options) from None


# The public functions are builtin entries that run the plain call in C++
# (ndarrays, or [ndarray, counts(, displs)] with lists of ints, and plain
# options) and pass any other call, unchanged, to the Python functions above.
allgatherv = _core.allgatherv_entry(allgatherv)
allgather = _core.allgather_entry(allgather)


# ---------------------------------------------------------------------------
# shared results


def _shared_result(mv: memoryview, el: np.dtype) -> np.ndarray:
    if el.shape:
        return np.frombuffer(mv, dtype=el.base).reshape((-1,) + el.shape)
    return np.frombuffer(mv, dtype=el)


def _shared_send(sendbuf: Any, dtype: Any, rank: int):
    """(send array, element dtype, count) of a shared collective's contribution."""
    if sendbuf is None or sendbuf is _IN_PLACE:
        raise ArgumentError(
            "sendbuf: MPI.IN_PLACE is not possible with a shared result (there is no receive "
            "buffer to take the contribution from)"
        )
    arr, el, count, offset = simple_message(sendbuf, "sendbuf", False)
    if dtype is not None:
        want = as_numpy_dtype(dtype)
        if want != el:
            raise ArgumentError(f"dtype: {want} does not match the send buffer's element type {el}")
    nbytes = count * el.itemsize
    if offset or arr.nbytes != nbytes:
        arr = arr.reshape(-1).view(np.uint8)[offset * el.itemsize : offset * el.itemsize + nbytes]
    return arr, el, count


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
    size, rank = _comm_info(comm)
    try:
        send, el, count = _shared_send(sendbuf, dtype, rank)
        bcounts, bdispls, _ = vector_layout(counts, displs, el.itemsize, size, 0)
        if count * el.itemsize != bcounts[rank]:
            raise ArgumentError(
                f"sendbuf: sends {count} elements but counts[{rank}] is "
                f"{bcounts[rank] // el.itemsize}"
            )
        mv = _core_allgatherv_shared(
            comm, send, bcounts, bdispls, block_size, transport,
            -1 if ranks_per_node is None else _rpn(ranks_per_node),
            0.0 if timeout is None else timeout,
        )  # fmt: skip
    except (ArgumentError, TypeError) as e:
        raise _translate(
            e, rank, ("shan", block_size, transport, ranks_per_node, timeout)
        ) from None
    return _shared_result(mv, el)


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
    size, rank = _comm_info(comm)
    try:
        send, el, count = _shared_send(sendbuf, dtype, rank)
        bcounts, bdispls = _block_layout(count * el.itemsize, 0, size)
        mv = _core_allgatherv_shared(
            comm, send, bcounts, bdispls, block_size, transport,
            -1 if ranks_per_node is None else _rpn(ranks_per_node),
            0.0 if timeout is None else timeout,
        )  # fmt: skip
    except (ArgumentError, TypeError) as e:
        raise _translate(
            e, rank, ("shan", block_size, transport, ranks_per_node, timeout)
        ) from None
    flat = _shared_result(mv, el)
    if type(sendbuf) is _ndarray:
        shape = (size, *sendbuf.shape)
    else:
        shape = (size, count, *el.shape)
    return flat.reshape(shape)


# The same for the node-shared results: an ndarray sendbuf, counts and
# displs as ints or lists of ints, dtype None.
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
        _check_options("auto", 0, "auto", ranks_per_node, timeout)
        return dict(_core.topology(comm, _rpn(ranks_per_node), 0.0 if timeout is None else timeout))
    except ArgumentError as e:
        raise _rank_error(e, rank) from None


_algorithms_cache: dict[tuple[str, bool], list[str]] = {}


def algorithms(collective: str, *, inter: bool = False) -> list[str]:
    """Names of the algorithms registered for ``collective`` (``"allgatherv"``,
    ``"allgather"``, ``"allreduce"``, ``"iallreduce"``, ``"bcast"``, ``"reduce"``).

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
