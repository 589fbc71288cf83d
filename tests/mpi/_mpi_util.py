"""Helpers shared by the MPI tests: collective assertions, data, references."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

import shancoll

REDUCED = os.environ.get("SHANCOLL_TEST_MODE", "full") == "reduced"

# Every NumPy numeric dtype (bool and long double included).
ALL_DTYPES = [
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
    np.uint64, np.float16, np.float32, np.float64, np.longdouble, np.complex64,
    np.complex128, np.clongdouble,
]  # fmt: skip


def _describe(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) < 2000 else text[:2000] + "..."


def sync_outcome(comm: MPI.Comm, what: str, error: BaseException | None) -> None:
    """Makes a test's outcome collective (called on every rank after the test).

    A skip counts as success. A rank that passed raises when another failed.
    """
    if error is not None and isinstance(error, pytest.skip.Exception):
        error = None
    errors = comm.allgather(None if error is None else _describe(error))
    failed = [r for r, e in enumerate(errors) if e is not None]
    if failed and error is None:
        first = errors[failed[0]]
        raise AssertionError(f"{what} failed on ranks {failed}; rank {failed[0]}: {first}")


def assert_all(comm: MPI.Comm, ok: bool, msg: str = "") -> None:
    """Collective assert: every rank fails together if any rank's ``ok`` is false."""
    oks = comm.allgather(bool(ok))
    if not all(oks):
        bad = [r for r, x in enumerate(oks) if not x]
        raise AssertionError(
            f"{msg} (false on ranks {bad} of {comm.size}; this is rank {comm.rank})"
        )


def run_all(comm: MPI.Comm, fn, *args, **kwargs):
    """Runs ``fn`` on every rank; if it raises on any rank, raises on all (no hang)."""
    err = None
    result = None
    try:
        result = fn(*args, **kwargs)
    except Exception as e:
        err = e
    errors = comm.allgather(None if err is None else _describe(err))
    failed = [r for r, e in enumerate(errors) if e is not None]
    if failed:
        raise AssertionError(
            f"{getattr(fn, '__name__', fn)} raised on ranks {failed}: {errors[failed[0]]}"
        ) from err
    return result


def raises_all(comm: MPI.Comm, exc_type, fn, *args, match: str | None = None, **kwargs):
    """Collective ``pytest.raises``: ``fn`` must raise ``exc_type`` on every rank."""
    got = None
    try:
        fn(*args, **kwargs)
        got = "no exception"
    except exc_type as e:
        if match is not None and match not in str(e):
            got = f"{type(e).__name__} without {match!r}: {e}"
    except Exception as e:
        got = _describe(e)
    results = comm.allgather(got)
    bad = {r: g for r, g in enumerate(results) if g is not None}
    if bad:
        r0 = min(bad)
        raise AssertionError(
            f"expected {exc_type.__name__} on every rank; ranks {sorted(bad)} differ, "
            f"rank {r0}: {bad[r0]}"
        )


# ---------------------------------------------------------------------------
# data

DISTRIBUTIONS = ["regular", "decreasing", "broadcast", "random"]


def make_counts(dist: str, size: int, m: int, seed: int = 0) -> list[int]:
    """Element counts per rank (identical on every rank). ``m``: the per-rank scale."""
    if dist == "regular":
        return [m] * size
    if dist == "decreasing":  # linearly decreasing: rank 0 the most, the last the least
        return [(m * (size - r) + size - 1) // size for r in range(size)]
    if dist == "broadcast":  # one rank has everything
        return [m * size if r == 0 else 0 for r in range(size)]
    if dist == "random":  # random, zeros included
        rng = np.random.default_rng(seed + 1000 * size + m)
        c = rng.integers(0, 2 * m + 1, size=size).tolist()
        if size > 1:
            c[int(rng.integers(0, size))] = 0
        return c
    raise ValueError(dist)


def fill(dtype, n: int, rank: int, seed: int = 0) -> np.ndarray:
    """Rank-specific, dtype-exercising data of n elements."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed * 7919 + rank * 104729 + n)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=n).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    if dtype.kind == "f":
        return (rng.standard_normal(n) * 1000).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    raise ValueError(dtype)


def mpi_datatype(dtype) -> MPI.Datatype:
    from mpi4py.util import dtlib

    return dtlib.from_numpy_dtype(np.dtype(dtype))


def reference_allgatherv(comm, send, counts, displs, dtype, length, fill_value=0):
    """mpi4py's own Allgatherv on the same inputs (as bytes: every dtype works)."""
    dtype = np.dtype(dtype)
    ref = np.full(length, fill_value, dtype=dtype)
    item = dtype.itemsize
    comm.Allgatherv(
        [np.ascontiguousarray(send).view(np.uint8), MPI.BYTE],
        [ref.view(np.uint8), [c * item for c in counts], [d * item for d in displs], MPI.BYTE],
    )
    return ref


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality (NaNs and -0.0 included)."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def prefix(counts: list[int]) -> list[int]:
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out


def physical_node(comm: MPI.Comm) -> MPI.Comm:
    """The ranks of ``comm`` on this rank's physical node (all of them on one
    machine; one node's in the real-node runs), for tests of one-node paths."""
    return comm.Split_type(MPI.COMM_TYPE_SHARED, comm.rank)


def read_only(n):
    a = np.zeros(n)
    a.flags.writeable = False
    return a


def one_rank_bad_calls(comm, persistent=False):
    """Every collective (barrier aside: it has no argument to refuse) with a
    bad argument on the last rank alone: MPI.IN_PLACE off the root (root 0)
    for the rooted ones, a read-only receive buffer for the others; as
    `i<coll>` or `<coll>_init`."""
    p, n = comm.size, 2
    bad = comm.rank == p - 1
    ones, zeros = np.ones, np.zeros
    recv = (lambda k: read_only(k)) if bad else zeros
    send = MPI.IN_PLACE if bad else ones(n)
    root0 = comm.rank == 0

    def form(name):
        return getattr(shancoll, f"{name}_init" if persistent else f"i{name}")

    return {
        "bcast": lambda: form("bcast")(comm, read_only(n) if bad else zeros(n), 0),
        "reduce": lambda: form("reduce")(comm, send, zeros(n), MPI.SUM, 0),
        "allreduce": lambda: form("allreduce")(comm, ones(n), recv(n)),
        "gather": lambda: form("gather")(comm, send, zeros(n * p) if root0 else None, 0),
        "gatherv": lambda: form("gatherv")(
            comm, send, [zeros(n * p), [n] * p] if root0 else None, 0),
        "scatter": lambda: form("scatter")(comm, ones(n * p) if root0 else None,
                                           MPI.IN_PLACE if bad else zeros(n), 0),
        "scatterv": lambda: form("scatterv")(
            comm, [ones(n * p), [n] * p] if root0 else None, MPI.IN_PLACE if bad else zeros(n),
            0),
        "allgather": lambda: form("allgather")(comm, ones(n), recv(n * p)),
        "allgatherv": lambda: form("allgatherv")(comm, ones(n), [recv(n * p), [n] * p]),
        "alltoall": lambda: form("alltoall")(comm, ones(n * p), recv(n * p)),
        "alltoallv": lambda: form("alltoallv")(comm, [ones(n * p), [n] * p],
                                               [recv(n * p), [n] * p]),
        "reduce_scatter_block": lambda: form("reduce_scatter_block")(comm, ones(n * p), recv(n)),
        "reduce_scatter": lambda: form("reduce_scatter")(comm, ones(n * p), recv(n), [n] * p),
        "scan": lambda: form("scan")(comm, ones(n), recv(n)),
        "exscan": lambda: form("exscan")(comm, ones(n), recv(n)),
    }  # fmt: skip


def start_and_time_out(req, timeout: float = 0.3) -> str:
    """Starts `req` and waits `timeout` seconds: "finished", "timeout" (a
    CollectiveTimeout within 5 s), or "late ..." (one that took longer)."""
    req.start()
    began = time.monotonic()
    try:
        req.wait(timeout=timeout)
        return "finished"
    except shancoll.CollectiveTimeout:
        took = time.monotonic() - began
        return "timeout" if took < 5 else f"late {took:.1f}s"


# Every persistent collective's engine wherever it fits (rules.h, <coll>_init rows).
ENGINES_TABLE = str(Path(__file__).parent.parent / "rules" / "persistent-engines.tsv")


@contextlib.contextmanager
def rule_table(path: str):
    """The rule table `path` ("builtin": none) for the block, then the process's
    own again (SHANCOLL_RULES, else the shipped table that matches)."""
    shancoll.set_rules(path)
    try:
        yield
    finally:
        shancoll.set_rules(None)
