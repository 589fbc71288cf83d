"""Python callables as reduction ops (the compiled entries call this for a callable ``op``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mpi4py import MPI


def op_from_callable(fn: Callable, commute: bool) -> MPI.Op:
    """An ``MPI.Op`` computing ``inout = fn(in, inout)`` on NumPy views; the caller frees it."""
    from mpi4py.util import dtlib

    def user_function(inbuf, inoutbuf, datatype):
        dtype = dtlib.to_numpy_dtype(datatype)
        a = np.frombuffer(inbuf, dtype=dtype)
        b = np.frombuffer(inoutbuf, dtype=dtype)
        b[...] = fn(a, b)

    return MPI.Op.Create(user_function, commute=commute)
