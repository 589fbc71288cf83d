"""Repeated calls through the entries' repeat path (src/cpp/bindings/entry.h):
a call with the same arguments as the entry's last one runs its kept call on
the arrays' current addresses; any argument that differs (another array or
dtype or size, a read-only or non-contiguous recvbuf, in place, another
communicator, op, root or keyword) takes the arguments again. Every result
is checked against mpi4py's own collective; every refusal must be the one
the first call of those arguments gets.

What a kept call holds (the arguments' objects) shows in their reference
counts (sys.getrefcount): a user-defined op is never kept, and a kept call
whose communicator has been freed is dropped (on its entry's next call, and
all of them by shancoll._core._drop_kept_calls, at interpreter exit).
test_mpi_zz_exit.py ends the suite with kept calls live.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from _mpi_util import assert_all, raises_all, run_all
from mpi4py import MPI

import shancoll

COMM = MPI.COMM_WORLD


def expected_allreduce(comm, send, op=MPI.SUM):
    out = np.empty_like(send)
    comm.Allreduce(send, out, op=op)
    return out


def check_allreduce(comm, send, recv, **kwargs):
    send[...] = np.arange(send.size, dtype=send.dtype).reshape(send.shape) + comm.rank
    recv[...] = 0
    shancoll.allreduce(comm, send, recv, **kwargs)
    want = expected_allreduce(comm, send, kwargs.get("op", MPI.SUM))
    ok = np.array_equal(recv.ravel(), want.ravel())
    assert_all(comm, ok, f"{send.dtype} {kwargs}: {recv} != {want}")


def test_allreduce_same_arrays_new_data_every_call():
    a, b = np.zeros(3), np.zeros(3)
    for i in range(10):
        a[:] = i + COMM.rank
        shancoll.allreduce(COMM, a, b)
        assert_all(COMM, np.array_equal(b, expected_allreduce(COMM, a)), f"call {i}: {b}")


def test_allreduce_new_arrays_of_the_same_shape():
    for i in range(10):  # temporaries: a freed array's address may come back
        check_allreduce(COMM, np.empty(4), np.empty(4))
        check_allreduce(COMM, np.full(4, float(i)), np.ones(4))


def test_allreduce_dtype_size_and_shape_changes():
    for dtype in (np.float64, np.float32, np.int64, np.int32, np.float64, np.complex128):
        for n in (1, 5, 1):
            check_allreduce(COMM, np.empty(n, dtype), np.empty(n, dtype))
    check_allreduce(COMM, np.empty((2, 3)), np.empty((2, 3)))
    check_allreduce(COMM, np.empty((2, 3)), np.empty((3, 2)))


@pytest.mark.parametrize("op", [MPI.SUM, MPI.PROD])
def test_allreduce_dtype_reassigned_in_place(op):
    """The product tells integers from floats (a sum of small integers as
    float64 denormals is their integer sum, bit for bit)."""
    a, b = np.ones(2), np.zeros(2)
    check_allreduce(COMM, a, b, op=op)
    a.dtype = b.dtype = np.int64  # the same arrays, the same bytes: now integers
    check_allreduce(COMM, a, b, op=op)
    a.dtype = b.dtype = np.float64
    check_allreduce(COMM, a, b, op=op)


def test_allreduce_array_resized_in_place():
    a, b = np.ones(2), np.zeros(2)
    check_allreduce(COMM, a, b)
    a.resize(7, refcheck=False)
    b.resize(7, refcheck=False)
    check_allreduce(COMM, a, b)
    a.resize(1, refcheck=False)
    raises_all(COMM, shancoll.ArgumentError, shancoll.allreduce, COMM, a, b, match="sendbuf")


def test_allreduce_recvbuf_made_read_only_and_writable_again():
    a, b = np.ones(2), np.zeros(2)
    check_allreduce(COMM, a, b)
    b.flags.writeable = False
    raises_all(COMM, shancoll.ArgumentError, shancoll.allreduce, COMM, a, b, match="read-only")
    b.flags.writeable = True
    check_allreduce(COMM, a, b)


def test_allreduce_non_contiguous_recvbuf():
    a, b = np.ones(3), np.zeros(6)
    check_allreduce(COMM, a, b[:3])
    raises_all(COMM, shancoll.ArgumentError, shancoll.allreduce, COMM, a, b[::2], match="contig")
    check_allreduce(COMM, a, b[:3])


def test_allreduce_in_place_between_plain_calls():
    a, b = np.ones(3), np.zeros(3)
    for in_place in (None, MPI.IN_PLACE, None, False, None, False, MPI.IN_PLACE):
        if in_place is False:
            check_allreduce(COMM, a, b)
            continue
        b[:] = COMM.rank + 1
        want = expected_allreduce(COMM, b.copy())
        shancoll.allreduce(COMM, in_place, b)
        assert_all(COMM, np.array_equal(b, want), f"in place ({in_place}): {b} != {want}")


def test_allreduce_other_communicators():
    a, b = np.ones(2), np.zeros(2)
    dup = COMM.Dup()
    half = COMM.Split(COMM.rank % 2, COMM.rank)
    try:
        for comm in (COMM, dup, COMM, half, half, dup, MPI.COMM_SELF, COMM):
            check_allreduce(comm, a, b)
    finally:
        half.Free()
    check_allreduce(dup, a, b)
    check_allreduce(dup, a, b)
    dup.Free()  # the same object, now MPI.COMM_NULL: refused as on a first call
    raises_all(COMM, shancoll.ArgumentError, shancoll.allreduce, dup, a, b, match="COMM_NULL")


def test_allreduce_op_and_keyword_changes():
    a, b = np.ones(3), np.zeros(3)
    variants = [
        {}, {"op": MPI.MAX}, {}, {"op": MPI.MIN}, {"op": MPI.MIN},
        {"algorithm": "mpi"}, {"algorithm": "auto"}, {"timeout": 5}, {"timeout": 5.0}, {},
        {"consistent": False}, {"commute": True}, {"ranks_per_node": 1}, {},
    ]  # fmt: skip
    for kwargs in variants:
        check_allreduce(COMM, a, b, **kwargs)
    raises_all(COMM, shancoll.ArgumentError, shancoll.allreduce, COMM, a, b, algorithm="nope")
    check_allreduce(COMM, a, b)


def test_allreduce_buffers_by_keyword_and_by_position():
    a, b, c = np.ones(3), np.zeros(3), np.zeros(3)
    forms = [  # (positional, keyword) names of comm, sendbuf, recvbuf
        (("comm", "sendbuf", "recvbuf"), ()), (("comm",), ("sendbuf", "recvbuf")),
        (("comm",), ("recvbuf", "sendbuf")), ((), ("comm", "sendbuf", "recvbuf")),
    ]  # fmt: skip
    for _ in range(2):
        for send, recv in ((a, b), (a, c), (c, a)):
            send[:] = COMM.rank + 1
            want = expected_allreduce(COMM, send)
            values = {"comm": COMM, "sendbuf": send, "recvbuf": recv}
            for positional, keywords in forms:
                recv[:] = 0
                args = [values[name] for name in positional]
                shancoll.allreduce(*args, **{name: values[name] for name in keywords})
                assert_all(COMM, np.array_equal(recv, want), f"{positional}: {recv} != {want}")


def test_allreduce_op_by_position_and_a_python_callable():
    a, b = np.ones(3), np.zeros(3)
    for _ in range(3):
        a[:] = COMM.rank
        shancoll.allreduce(COMM, a, b, MPI.MAX)
        assert_all(COMM, np.array_equal(b, np.full(3, COMM.size - 1.0)), f"{b}")
        shancoll.allreduce(COMM, a, b, op=lambda x, y: np.maximum(x, y), commute=True)
        assert_all(COMM, np.array_equal(b, np.full(3, COMM.size - 1.0)), f"callable op: {b}")


def test_bcast_repeated_with_roots_and_buffers_changing():
    for root in [0, COMM.size - 1, 0, 0]:
        for n in (1, 1, 4):
            buf = np.full(n, -1.0) if COMM.rank != root else np.arange(n) + 10.0 * root
            shancoll.bcast(COMM, buf, root=root)
            assert_all(COMM, np.array_equal(buf, np.arange(n) + 10.0 * root), f"root {root}: {buf}")


def test_reduce_repeated_with_roots_and_recvbuf_none_elsewhere():
    a = np.zeros(3)
    for root in [0, COMM.size - 1, COMM.size - 1, 0]:
        for _ in range(2):
            a[:] = COMM.rank + 1
            b = np.zeros(3) if COMM.rank == root else None
            shancoll.reduce(COMM, a, b, root=root)
            if COMM.rank == root:
                want = np.full(3, COMM.size * (COMM.size + 1) / 2)
                assert_all(COMM, np.array_equal(b, want), f"root {root}: {b}")
            else:
                assert_all(COMM, True)


def test_reduce_in_place_at_the_root():
    for _ in range(3):
        b = np.full(2, COMM.rank + 1.0)
        send = MPI.IN_PLACE if COMM.rank == 0 else b
        shancoll.reduce(COMM, send, b if COMM.rank == 0 else None)
        if COMM.rank == 0:
            want = np.full(2, COMM.size * (COMM.size + 1) / 2)
            assert_all(COMM, np.array_equal(b, want), f"{b}")
        else:
            assert_all(COMM, True)


def test_barrier_repeated_with_keywords_changing():
    for kwargs in ({}, {}, {"timeout": 10}, {"timeout": 10}, {"algorithm": "mpi"}, {}):
        shancoll.barrier(COMM, **kwargs)
    raises_all(COMM, shancoll.ArgumentError, shancoll.barrier, COMM, algorithm="nope")
    shancoll.barrier(COMM)


def _max_into(inbuf, inoutbuf, datatype):
    b = np.frombuffer(inoutbuf, "f8")
    np.maximum(np.frombuffer(inbuf, "f8"), b, out=b)


def _min_into(inbuf, inoutbuf, datatype):
    b = np.frombuffer(inoutbuf, "f8")
    np.minimum(np.frombuffer(inbuf, "f8"), b, out=b)


def check_reduce(comm, op, want, root=0, calls=3):
    """`calls` reduces of rank + 1 to `root`; the root's result must be `want`."""
    a = np.zeros(3)
    for i in range(calls):
        a[:] = comm.rank + 1
        b = np.zeros(3) if comm.rank == root else None
        shancoll.reduce(comm, a, b, op, root)
        ok = comm.rank != root or np.array_equal(b, np.full(3, float(want)))
        assert_all(comm, ok, f"call {i} with {op}: {b} != {want}")


def test_user_op_never_kept_then_freed_and_another_made():
    """A user-defined op may be freed while a kept call holds it, and its handle
    come back as another op: it is never kept. After it is freed, another user op
    (MPI hands out the freed handle again) and a predefined op take their own."""
    size = COMM.size
    op = MPI.Op.Create(_max_into, commute=True)
    unheld = sys.getrefcount(op)
    check_reduce(COMM, op, size)
    a, b = np.ones(3), np.zeros(3)
    for _ in range(3):
        shancoll.allreduce(COMM, a, b, op)
    assert_all(COMM, sys.getrefcount(op) == unheld, "a kept call holds the user-defined op")
    op.Free()
    other = MPI.Op.Create(_min_into, commute=True)
    try:
        check_reduce(COMM, other, 1)
        check_reduce(COMM, other, 1, root=size - 1)
    finally:
        other.Free()
    check_reduce(COMM, MPI.SUM, size * (size + 1) // 2)
    check_reduce(COMM, MPI.MAX, size, root=size - 1)
    check_allreduce(COMM, a, b, op=MPI.MAX)


def _unkept_calls(comm):
    """One call of each kept entry that cannot be kept (a buffer spec, a float
    subclass): each entry's next call, which drops a stale kept call."""
    a, b = np.ones(2), np.zeros(2)
    shancoll.allreduce(comm, [a, MPI.DOUBLE], [b, MPI.DOUBLE])
    shancoll.bcast(comm, [b, MPI.DOUBLE], 0)
    shancoll.reduce(comm, [a, MPI.DOUBLE], [b, MPI.DOUBLE] if comm.rank == 0 else None)
    shancoll.barrier(comm, timeout=np.float64(60))


def _kept_calls(comm, calls=3):
    """Repeated calls of each kept entry on `comm` (each kept after the first)."""
    a, b = np.ones(2), np.zeros(2)
    for _ in range(calls):
        shancoll.allreduce(comm, a, b)
        shancoll.bcast(comm, b, 0)
        shancoll.reduce(comm, a, b if comm.rank == 0 else None)
        shancoll.barrier(comm)


def test_kept_calls_dropped_when_their_communicator_is_freed():
    """Four kept calls hold the communicator; once it is freed, each entry's
    next call drops its kept call (whatever that call is), and calls on a new
    communicator (MPI hands out the freed handle again) run as first calls."""
    dup = COMM.Dup()
    unheld = sys.getrefcount(dup)
    _kept_calls(dup)
    held = sys.getrefcount(dup) - unheld
    assert_all(COMM, held == 4, f"the 4 repeated calls on a dup: {held} references held")
    dup.Free()
    _unkept_calls(COMM)
    held = sys.getrefcount(dup) - unheld
    assert_all(COMM, held == 0, f"{held} kept calls still hold a freed communicator")
    for _ in range(2):
        new = COMM.Dup()
        try:
            a, b = np.ones(3), np.zeros(3)
            for _ in range(3):
                check_allreduce(new, a, b)
                check_allreduce(new, a, b, op=MPI.MAX)
            check_reduce(new, MPI.SUM, new.size * (new.size + 1) // 2, root=new.size - 1)
            for root in (0, new.size - 1, new.size - 1):
                buf = np.full(4, float(root)) if new.rank == root else np.zeros(4)
                shancoll.bcast(new, buf, root)
                assert_all(new, np.array_equal(buf, np.full(4, float(root))), f"bcast {buf}")
            for _ in range(3):
                shancoll.barrier(new)
        finally:
            new.Free()


def test_kept_calls_dropped_when_another_communicator_is_freed():
    """A kept call is stale once any communicator's shancoll state is freed (its
    own handle may have been freed behind the Comm object it holds): its
    entry's next call drops it; calls then run and are kept again."""
    _kept_calls(COMM)
    other = COMM.Dup()
    shancoll.barrier(other)  # its shancoll state (freed with it); barrier's kept call
    before = sys.getrefcount(COMM)  # allreduce, bcast and reduce's kept calls hold COMM
    other.Free()
    a, b = np.ones(2), np.zeros(2)
    shancoll.allreduce(COMM, [a, MPI.DOUBLE], [b, MPI.DOUBLE])  # cannot be kept
    dropped = before - sys.getrefcount(COMM)
    assert_all(COMM, dropped == 1, f"allreduce's stale kept call: {dropped} references dropped")
    for _ in range(3):
        check_allreduce(COMM, a, b)
    _kept_calls(COMM)
    check_reduce(COMM, MPI.SUM, COMM.size * (COMM.size + 1) // 2)


def test_drop_kept_calls():
    """shancoll._core._drop_kept_calls (run at interpreter exit, before mpi4py's
    MPI_Finalize) drops every kept call; calls are kept again afterwards."""
    dup = COMM.Dup()
    try:
        unheld = sys.getrefcount(dup)
        _kept_calls(dup)
        shancoll._core._drop_kept_calls()
        assert_all(COMM, sys.getrefcount(dup) == unheld, "kept calls left after dropping all")
        _kept_calls(dup)
        assert_all(COMM, sys.getrefcount(dup) == unheld + 4, "not kept again")
        _kept_calls(COMM, calls=1)
    finally:
        dup.Free()


# A loop of one small call (or of barriers) replays its door's plan through
# release_gather's express (src/cpp/shancoll/coll/door.h, Express) from the third call on:
# longer than the 8 inlined lines (4 slots) a root or writer cycles through (its
# "would wait" calls go the usual way), interleaved with calls that change
# the region's plan (another size, the other of scan and exscan, bcast on the
# lines exscan's pair uses). Every result against mpi4py; every call's stats
# equal to the first call's of its shape (the replay counts what the usual
# path counts).
EXPRESS_CALLS = 40


def _rooted_call(comm, which, n, i):
    send = np.arange(n, dtype=np.float64) + 10 * comm.rank + i
    got = np.full(n, -1.0)
    want = np.full(n, -1.0)
    if which == "barrier":
        shancoll.barrier(comm)
        return True
    if which == "bcast":
        got[...] = send if comm.rank == 0 else -1.0
        shancoll.bcast(comm, got)
        want[...] = send
        comm.Bcast(want, root=0)
    elif which == "reduce":
        shancoll.reduce(comm, send, got if comm.rank == 0 else None)
        comm.Reduce(send, want if comm.rank == 0 else None, root=0)
    elif which == "scan_in_place":
        got[...] = send
        shancoll.scan(comm, MPI.IN_PLACE, got)
        comm.Scan(send, want)
    else:
        getattr(shancoll, which)(comm, send, got)
        getattr(comm, which.capitalize())(send, want)
    if (which == "exscan" and comm.rank == 0) or (which == "reduce" and comm.rank != 0):
        return True  # no result there
    return np.array_equal(got, want)


# 8 B, 56 B (one line), 312 B (the lines after the flag's), 320 B and 5.6 KiB
# (one chunk through a slot of the node buffer)
@pytest.mark.parametrize("n", [1, 7, 39, 40, 700])
def test_express_replays_match_the_usual_path(n, monkeypatch):
    monkeypatch.setenv("SHANCOLL_SCAN_ALGORITHM", "shan")
    monkeypatch.setenv("SHANCOLL_EXSCAN_ALGORITHM", "shan")
    shancoll.reload_environment()
    wrong: list[str] = []
    first: dict = {}
    order = ["bcast", "reduce", "scan", "exscan", "scan_in_place", "barrier"]

    def body():
        for _ in range(2):
            for which in order + ["bcast", "exscan"]:  # bcast and exscan share the lines
                for i in range(EXPRESS_CALLS):
                    if not _rooted_call(COMM, which, n, i):
                        wrong.append(f"{which} n={n} call {i}")
                    stats = shancoll.last_stats(COMM)
                    if first.setdefault(which, stats) != stats:
                        wrong.append(f"{which} n={n} call {i}: {stats} != {first[which]}")
                _rooted_call(COMM, which, n + 1, 0)  # another size in between

    try:
        run_all(COMM, body)
    finally:
        monkeypatch.delenv("SHANCOLL_SCAN_ALGORITHM")
        monkeypatch.delenv("SHANCOLL_EXSCAN_ALGORITHM")
        shancoll.reload_environment()
    assert_all(COMM, not wrong, f"{wrong[:5]}")
