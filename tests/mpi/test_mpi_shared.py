"""allgatherv_shared / allgather_shared: node-shared, read-only results."""

from __future__ import annotations

import numpy as np
import pytest
from _mpi_util import (
    REDUCED,
    assert_all,
    fill,
    make_counts,
    prefix,
    raises_all,
    reference_allgatherv,
    run_all,
    same,
)
from mpi4py import MPI

import shancoll

TRANSPORTS = ["two_sided", "rma"]
LAYOUTS = [None, 1, 2] if not REDUCED else [None, 2]


@pytest.mark.parametrize("ranks_per_node", LAYOUTS)
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("dist", ["regular", "decreasing", "broadcast", "random"])
def test_shared_view_matches_reference(comm, dist, transport, ranks_per_node):
    r = comm.rank
    for m, dtype in [(0, np.float64), (1, np.int8), (37, np.complex64), (3000, np.float64)]:
        counts = make_counts(dist, comm.size, m)
        send = fill(dtype, counts[r], r)
        ref = reference_allgatherv(comm, send, counts, prefix(counts), dtype, sum(counts))
        view = run_all(
            comm,
            shancoll.allgatherv_shared,
            comm,
            send,
            counts,
            transport=transport,
            ranks_per_node=ranks_per_node,
        )
        ok = same(view, ref) and not view.flags.writeable
        assert_all(
            comm, ok, f"shared {dist} m={m} {np.dtype(dtype)} {transport} rpn={ranks_per_node}"
        )


def test_shared_view_is_read_only(comm):
    counts = [4] * comm.size
    view = run_all(comm, shancoll.allgatherv_shared, comm, np.ones(4), counts)
    try:
        view[0] = 5.0
        wrote = True
    except ValueError:
        wrote = False
    assert_all(comm, not wrote and not view.flags.writeable, "the shared view accepted a write")
    # numpy refuses to make it writable again
    try:
        view.flags.writeable = True
        flipped = True
    except ValueError:
        flipped = False
    assert_all(comm, not flipped, "the shared view could be made writable")


def test_shared_with_displs_and_dtype(comm):
    p, r = comm.size, comm.rank
    counts = [2 + i % 2 for i in range(p)]
    displs = [5 * i + 1 for i in range(p)]
    send = fill(np.uint16, counts[r], r)
    view = run_all(comm, shancoll.allgatherv_shared, comm, send, counts, displs, dtype=np.uint16)
    ok = view.dtype == np.uint16 and view.size == displs[-1] + counts[-1]
    for rank in range(p):
        ok = ok and same(
            view[displs[rank] : displs[rank] + counts[rank]], fill(np.uint16, counts[rank], rank)
        )
    assert_all(comm, ok, "shared result with displs")
    # an MPI datatype as dtype, and an integer count for every rank
    view = run_all(
        comm, shancoll.allgatherv_shared, comm, [np.full(3, r, "i4"), MPI.INT], 3, dtype=MPI.INT
    )
    assert_all(comm, same(view, np.repeat(np.arange(p, dtype="i4"), 3)), "integral counts")


@pytest.mark.parametrize("shape", [(0,), (1,), (4, 3), (5000,)])
def test_allgather_shared_shape(comm, shape):
    p, r = comm.size, comm.rank
    send = fill(np.float32, int(np.prod(shape)), r).reshape(shape)
    ref = np.zeros((p, *shape), dtype=np.float32)
    comm.Allgather(send, ref)
    view = run_all(comm, shancoll.allgather_shared, comm, send)
    ok = view.shape == (p, *shape) and same(view, ref) and not view.flags.writeable
    assert_all(comm, ok, f"allgather_shared {shape}: got shape {view.shape}")


def test_old_view_stays_mapped_after_growth(comm):
    """A view's memory stays mapped when a later, larger call grows the segment."""
    r = comm.rank
    small = run_all(comm, shancoll.allgatherv_shared, comm, np.full(2, r, "i8"), [2] * comm.size)
    kept = np.array(small)  # contents are valid only until the next call: copy them
    for m in (10_000, 200_000):
        run_all(comm, shancoll.allgatherv_shared, comm, np.zeros(m, "u1"), [m] * comm.size)
    total = int(small.sum())  # reading the old view must not crash (contents unspecified)
    assert_all(comm, isinstance(total, int), "old view readable")
    assert_all(comm, same(kept, np.repeat(np.arange(comm.size, dtype="i8"), 2)), "copy kept")


def test_shared_alternates_with_private_results(comm):
    r = comm.rank
    for i in range(4):
        counts = make_counts("random", comm.size, 50 * (i + 1), seed=i)
        send = fill(np.int64, counts[r], r, seed=i)
        ref = reference_allgatherv(comm, send, counts, prefix(counts), np.int64, sum(counts))
        view = run_all(comm, shancoll.allgatherv_shared, comm, send, counts)
        ok = same(view, ref)
        out = np.zeros(sum(counts), "i8")
        run_all(comm, shancoll.allgatherv, comm, send, [out, counts], algorithm="shan")
        assert_all(comm, ok and same(out, ref), f"iteration {i}")


def test_shared_rejects_in_place(comm):
    raises_all(
        comm,
        ValueError,
        shancoll.allgatherv_shared,
        comm,
        MPI.IN_PLACE,
        [1] * comm.size,
        match="IN_PLACE",
    )
    raises_all(comm, ValueError, shancoll.allgather_shared, comm, MPI.IN_PLACE)


def test_plain_calls(comm):
    """allgatherv_shared with counts and displs as ints or lists of ints (or
    displs None), and allgather_shared of an ndarray: the same views as
    mpi4py's result."""
    p, r = comm.size, comm.rank
    failures: list[str] = []

    def blocks_match(view, ref, counts, displs) -> bool:  # gaps hold whatever the segment held
        return view.size == ref.size and all(
            same(view[d : d + c], ref[d : d + c]) for c, d in zip(counts, displs, strict=True)
        )

    for dtype in (np.float64, np.int16):
        counts = make_counts("decreasing", p, 37)
        send = fill(dtype, counts[r], r)
        gapped = [3 * d for d in prefix(counts)]
        for displs in (None, gapped):
            want = prefix(counts) if displs is None else displs
            extent = max((d + c for c, d in zip(counts, want, strict=True) if c), default=0)
            ref = reference_allgatherv(comm, send, counts, want, dtype, extent)
            view = shancoll.allgatherv_shared(comm, send, counts, displs, ranks_per_node=None)
            if not blocks_match(view, ref, counts, want) or view.flags.writeable:
                failures.append(f"{np.dtype(dtype)} displs {displs is not None}")
        send = fill(dtype, 5, r)
        strided = [8 * i for i in range(p)]
        ref = reference_allgatherv(comm, send, [5] * p, strided, dtype, 8 * p - 3)
        view = shancoll.allgatherv_shared(comm, send, 5, 8, timeout=None)  # a count, a stride
        if not blocks_match(view, ref, [5] * p, strided):
            failures.append(f"{np.dtype(dtype)} int count and stride")
        block = fill(dtype, 6, r).reshape(2, 3)
        ref = np.zeros((p, 2, 3), dtype)
        comm.Allgather(block, ref)
        if not same(shancoll.allgather_shared(comm, block), ref):
            failures.append(f"{np.dtype(dtype)} allgather_shared shape (P, 2, 3)")
    assert_all(comm, not failures, f"{failures[:4]}")
