"""Allgather and allgatherv on inter-communicators (``mpi4py.MPI.Intercomm``).

:func:`shancoll.allgather` and :func:`shancoll.allgatherv` take
inter-communicators too (their compiled entries run the intergroup
algorithms; ``src/cpp/bindings/intergroup.cc``). MPI's rules for
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

from mpi4py import MPI

from . import _core

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


def last_stats(comm: MPI.Intercomm) -> dict[str, Any]:
    """The core's statistics of the last intergroup collective on ``comm`` (local)."""
    return dict(_core.inter_last_stats(comm))


def algorithms() -> list[str]:
    """Names of the intergroup algorithms (``auto`` not listed)."""
    return [name for name, _summary in _core.algorithms("intergroup")]
