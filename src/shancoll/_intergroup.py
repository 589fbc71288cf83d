"""Allgather and allgatherv on inter-communicators (``mpi4py.MPI.Intercomm``).

:func:`shancoll.allgather` and :func:`shancoll.allgatherv` come here when
their communicator is an inter-communicator. MPI's rules for
inter-communicators apply (as in mpi4py's ``Intercomm.Allgather(v)``):

- every process of one group receives the blocks of every process of the
  other (remote) group, in the remote group's rank order; nothing is
  exchanged within a group;
- the receive spec describes the **remote** group: its counts and
  displacements have one entry per remote process; a plain array is split
  evenly over the remote processes;
- the send buffer is this process's block; its size is independent of the
  receive counts (the two groups may send blocks of different sizes; the
  remote group's receive counts must match what is sent);
- ``MPI.IN_PLACE`` is not allowed.

Algorithms (:func:`shancoll.algorithms` with ``inter=True``): ``segmented``
(the paper's Algorithm 1 for allgather, Algorithm 2 for allgatherv; what
``auto`` runs), ``root_gather`` (the MPICH/Open MPI baseline), ``mpi``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from . import _core
from ._buffers import ArgumentError, byte_view, simple_message, vector_message

_IN_PLACE = MPI.IN_PLACE
_Intracomm = MPI.Intracomm
_Intercomm = MPI.Intercomm


def is_intercomm(comm: Any) -> bool:
    """True for an inter-communicator (no MPI call for mpi4py's typed communicators)."""
    if isinstance(comm, _Intracomm):
        return False
    if isinstance(comm, _Intercomm):
        return True
    try:  # a plain MPI.Comm may wrap either kind
        return comm != MPI.COMM_NULL and comm.Is_inter()
    except Exception:
        return False  # not a usable communicator: the caller reports it


def _send_bytes(sendbuf: Any, el_recv: np.dtype, rank: int) -> np.ndarray:
    """This process's block as a flat byte view, checked against the receive element type."""
    if sendbuf is None or sendbuf is _IN_PLACE:
        raise ArgumentError(
            f"sendbuf: MPI.IN_PLACE is not allowed on an inter-communicator (rank {rank})"
        )
    arr, el, count, offset = simple_message(sendbuf, "sendbuf", False)
    if el != el_recv:
        raise ArgumentError(
            f"sendbuf: element type {el} does not match the receive buffer's {el_recv} "
            f"(rank {rank})"
        )
    return byte_view(arr, offset * el.itemsize, count * el.itemsize)


def _check_names(algorithm: Any, intra_algorithm: Any) -> None:
    for name, value in (("algorithm", algorithm), ("intra_algorithm", intra_algorithm)):
        if not isinstance(value, str):
            raise ArgumentError(f"{name}: expected a string, got {value!r}")


def _run(comm, send, arr, bcounts, bdispls, regular, algorithm, intra_algorithm, block_size,
         transport, ranks_per_node, timeout) -> None:  # fmt: skip
    _check_names(algorithm, intra_algorithm)
    _core.inter_allgatherv(
        comm, send, arr, bcounts, bdispls, regular,
        "" if algorithm == "auto" else algorithm,
        intra_algorithm,
        block_size, transport,
        -1 if ranks_per_node is None else ranks_per_node,
        0.0 if timeout is None else timeout,
    )  # fmt: skip


def allgatherv(comm: MPI.Intercomm, sendbuf: Any, recvbuf: Any, *options: Any) -> None:
    """Intergroup allgatherv; ``options`` as passed on by :func:`shancoll.allgatherv`."""
    arr, el, bcounts, bdispls, _ = vector_message(recvbuf, comm.Get_remote_size())
    send = _send_bytes(sendbuf, el, comm.Get_rank())
    _run(comm, send, arr, bcounts, bdispls, False, *options)


def allgather(comm: MPI.Intercomm, sendbuf: Any, recvbuf: Any, *options: Any) -> None:
    """Intergroup allgather; ``options`` as passed on by :func:`shancoll.allgather`."""
    remote = comm.Get_remote_size()
    arr, el, count, offset = simple_message(recvbuf, "recvbuf", True, remote)
    cbytes, obytes = count * el.itemsize, offset * el.itemsize
    send = _send_bytes(sendbuf, el, comm.Get_rank())
    bdispls = [obytes + i * cbytes for i in range(remote)]
    _run(comm, send, arr, [cbytes] * remote, bdispls, True, *options)


def last_stats(comm: MPI.Intercomm) -> dict[str, Any]:
    """The core's statistics of the last intergroup collective on ``comm`` (local)."""
    return dict(_core.inter_last_stats(comm))


def algorithms() -> list[str]:
    """Names of the intergroup algorithms (``auto`` not listed)."""
    return [name for name, _summary in _core.algorithms("intergroup")]
