"""Single-process tests: buffer-spec parsing, argument checking and the API surface.

No mpiexec needed: collectives run on COMM_SELF (one rank) and, for the
parsing helpers, not at all.
"""

from __future__ import annotations

import array
import dataclasses

import numpy as np
import pytest
from mpi4py import MPI

import shancoll
from shancoll import _buffers as B

SELF = MPI.COMM_SELF
NUMERIC = [
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
    np.uint64, np.float16, np.float32, np.float64, np.longdouble, np.complex64,
    np.complex128, np.clongdouble,
]  # fmt: skip


# ---------------------------------------------------------------------------
# API surface


def test_public_names():
    for name in [
        "allgatherv",
        "allgather",
        "allgatherv_shared",
        "allgather_shared",
        "algorithms",
        "last_stats",
        "topology",
        "Stats",
        "__version__",
    ]:
        assert hasattr(shancoll, name), name
        assert name in shancoll.__all__
    assert isinstance(shancoll.__version__, str) and shancoll.__version__[0].isdigit()


def test_docstrings():
    for fn in [
        shancoll.allgatherv,
        shancoll.allgather,
        shancoll.allgatherv_shared,
        shancoll.allgather_shared,
        shancoll.algorithms,
        shancoll.last_stats,
        shancoll.topology,
        shancoll.Stats,
    ]:
        assert fn.__doc__ and len(fn.__doc__) > 80, fn.__name__
    for fn in [shancoll.allgatherv_shared, shancoll.allgather_shared]:
        doc = fn.__doc__
        assert "read-only" in doc and "next shancoll call" in doc and "freed" in doc
    for name in ["shan", "ring", "bruck", "recursive_doubling", "mpi"]:
        assert name in shancoll.allgatherv.__doc__


def test_exceptions():
    assert issubclass(shancoll.ArgumentError, ValueError)
    assert issubclass(shancoll.CollectiveTimeout, TimeoutError)
    assert issubclass(shancoll.MPIError, RuntimeError)


def test_algorithms():
    names = shancoll.algorithms("allgatherv")
    assert names == shancoll.algorithms("allgather")
    assert {"shan", "ring", "bruck", "recursive_doubling", "mpi"} <= set(names)
    assert "auto" not in names
    names.append("mutated")  # a copy: the cache is not affected
    assert "mutated" not in shancoll.algorithms("allgatherv")
    with pytest.raises(ValueError, match="collective"):
        shancoll.algorithms("alltoallw")


def test_stats_is_frozen():
    shancoll.allgather(SELF, np.ones(3), np.zeros(3), algorithm="ring")
    s = shancoll.last_stats(SELF)
    assert isinstance(s, shancoll.Stats) and s.algorithm == "ring"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.rounds = 5
    assert {f.name for f in dataclasses.fields(s)} == {
        "algorithm", "rounds", "inter_messages", "inter_bytes", "intra_messages",
        "intra_bytes", "forwarded", "node_count", "block_count", "remote_sent_messages",
        "remote_sent_bytes", "remote_recv_messages", "remote_recv_bytes", "bcast_tree",
        "reduce_tree",
    }  # fmt: skip


def test_topology_self():
    t = shancoll.topology(SELF)
    assert t["node_count"] == 1 and t["node_of"] == [0] and t["ranks"] == [[0]]
    assert shancoll.topology(SELF, 1)["node_count"] == 1
    with pytest.raises(ValueError, match="ranks_per_node"):
        shancoll.topology(SELF, -3)


# ---------------------------------------------------------------------------
# spec unpacking (mpi4py's rules)

buf = np.zeros(4)


@pytest.mark.parametrize(
    "spec, expected",
    [
        (buf, (buf, None, None, None)),
        ([buf, MPI.DOUBLE], (buf, None, None, MPI.DOUBLE)),
        ([buf, "d"], (buf, None, None, "d")),
        ((buf, [1, 3]), (buf, [1, 3], None, None)),
        ([buf, 2], (buf, 2, None, None)),
        ([buf, ([1, 3], [0, 1])], (buf, [1, 3], [0, 1], None)),
        ([buf, (1, 3)], (buf, 1, 3, None)),  # a tuple here is (counts, displs), as in mpi4py
        ([buf, [1, 3], MPI.DOUBLE], (buf, [1, 3], None, MPI.DOUBLE)),
        ([buf, ([1, 3], [0, 1]), MPI.DOUBLE], (buf, [1, 3], [0, 1], MPI.DOUBLE)),
        ([buf, [1, 3], [0, 1]], (buf, [1, 3], [0, 1], None)),
        ([buf, [1, 3], [0, 1], MPI.DOUBLE], (buf, [1, 3], [0, 1], MPI.DOUBLE)),
    ],
)
def test_unpack_vector(spec, expected):
    got = B.unpack_vector(spec, "recvbuf")
    assert got[0] is expected[0]
    assert got[1:] == expected[1:]


@pytest.mark.parametrize(
    "spec, expected",
    [
        (buf, (buf, None, None, None)),
        ([buf, MPI.DOUBLE], (buf, None, None, MPI.DOUBLE)),
        ([buf, 3], (buf, 3, None, None)),
        ([buf, (2, 1)], (buf, 2, 1, None)),
        ([buf, [2, 1]], (buf, 2, 1, None)),
        ([buf, 3, MPI.DOUBLE], (buf, 3, None, MPI.DOUBLE)),
        ([buf, (2, 1), MPI.DOUBLE], (buf, 2, 1, MPI.DOUBLE)),
        ([buf, 2, 1, MPI.DOUBLE], (buf, 2, 1, MPI.DOUBLE)),
    ],
)
def test_unpack_simple(spec, expected):
    got = B.unpack_simple(spec, "sendbuf")
    assert got[0] is expected[0]
    assert got[1:] == expected[1:]


def test_unpack_errors():
    with pytest.raises(ValueError, match="recvbuf: a buffer spec has 2 to 4 items"):
        B.unpack_vector([buf], "recvbuf")
    with pytest.raises(ValueError, match="sendbuf: a buffer spec has 2 to 4 items"):
        B.unpack_simple([buf, 1, 2, 3, 4], "sendbuf")
    with pytest.raises(ValueError, match=r"\(counts, displs\) pair"):
        B.unpack_vector([buf, (1, 2, 3)], "recvbuf")


# ---------------------------------------------------------------------------
# layouts


def test_vector_layout_even_split_like_mpi4py():
    arr = np.zeros(10, dtype=np.int32)
    a, el, c, d, extent = B.vector_message(arr, 4)
    assert a is arr and el == np.int32
    assert c == [12, 12, 8, 8] and d == [0, 12, 24, 32] and extent == 40


def test_vector_layout_counts_displs_in_bytes():
    arr = np.zeros(20, dtype=np.float64)
    _, _, c, d, extent = B.vector_message([arr, [1, 0, 3], [10, 0, 2], MPI.DOUBLE], 3)
    assert c == [8, 0, 24] and d == [80, 0, 16] and extent == 88
    _, _, c, d, _ = B.vector_message([arr, 2, 5], 3)  # integral counts and stride
    assert c == [16, 16, 16] and d == [0, 40, 80]
    _, _, c, d, _ = B.vector_message([arr, np.array([1, 2, 3])], 3)
    assert c == [8, 16, 24] and d == [0, 8, 24]


def test_layout_cache_is_reused_and_bounded():
    arr = np.zeros(100, dtype=np.int16)
    first = B.vector_message([arr, [1, 2, 3]], 3)
    again = B.vector_message([arr, [1, 2, 3]], 3)
    assert first[2] is again[2]  # same cached list
    for i in range(B._LAYOUT_CACHE_MAX + 10):
        B.vector_message([np.zeros(10**4, dtype=np.int8), [i, 1, 1]], 3)
    assert len(B._layout_cache) <= B._LAYOUT_CACHE_MAX


def test_simple_message_count_and_displ():
    arr = np.arange(10, dtype=np.int64)
    a, el, count, offset = B.simple_message(arr, "sendbuf", False)
    assert (count, offset) == (10, 0)
    _, _, count, offset = B.simple_message([arr, (4, 3), MPI.INT64_T], "sendbuf", False)
    assert (count, offset) == (4, 3)
    _, _, count, _ = B.simple_message(arr, "recvbuf", True, blocks=5)
    assert count == 2
    with pytest.raises(ValueError, match="multiple of the 3 ranks"):
        B.simple_message(arr, "recvbuf", True, blocks=3)
    with pytest.raises(ValueError, match="exceeds the buffer"):
        B.simple_message([arr, 11], "sendbuf", False)
    with pytest.raises(ValueError, match="past the end"):
        B.simple_message([arr, (0, 11), MPI.INT64_T], "sendbuf", False)
    with pytest.raises(ValueError, match="negative count"):
        B.simple_message([arr, -1], "sendbuf", False)


def test_send_array_views_and_fast_path():
    arr = np.arange(10, dtype=np.int32)
    assert B.send_array(arr, np.dtype(np.int32), 10, 0) is arr
    view = B.send_array([arr, (4, 3), MPI.INT], np.dtype(np.int32), 4, 0)
    assert view.dtype == np.uint8 and view.nbytes == 16
    assert np.array_equal(view.view(np.int32), arr[3:7])
    with pytest.raises(ValueError, match=r"counts\[2\]"):
        B.send_array(arr, np.dtype(np.int32), 9, 2)
    with pytest.raises(ValueError, match="does not match the receive"):
        B.send_array(arr, np.dtype(np.float32), 10, 0)


# ---------------------------------------------------------------------------
# datatypes


@pytest.mark.parametrize("dtype", NUMERIC)
def test_datatype_must_match_dtype(dtype):
    from mpi4py.util import dtlib

    arr = np.zeros(4, dtype=dtype)
    dt = dtlib.from_numpy_dtype(arr.dtype)
    assert B.element_dtype(arr, dt, "recvbuf") == arr.dtype
    other = MPI.INT if np.dtype(dtype) != np.int32 else MPI.DOUBLE
    if np.dtype(dtype) == np.dtype("l") and other == MPI.INT:
        other = MPI.SHORT
    with pytest.raises(ValueError, match="recvbuf: the MPI datatype"):
        B.element_dtype(arr, other, "recvbuf")


def test_datatype_byte_fits_any_array_and_typecodes():
    arr = np.zeros(3, dtype=np.float64)
    assert B.element_dtype(arr, MPI.BYTE, "recvbuf").itemsize == 1
    assert B.element_dtype(arr, "d", "recvbuf") == np.float64
    with pytest.raises(ValueError, match="typecode"):
        B.element_dtype(arr, "no such code", "recvbuf")
    with pytest.raises(ValueError, match="DATATYPE_NULL"):
        B.element_dtype(arr, MPI.DATATYPE_NULL, "recvbuf")


def test_contiguous_derived_datatype():
    triple = MPI.DOUBLE.Create_contiguous(3).Commit()
    try:
        arr = np.zeros(12)
        el = B.element_dtype(arr, triple, "recvbuf")
        assert el.itemsize == 24
        out = np.zeros(6)
        shancoll.allgatherv(SELF, [np.arange(6.0), 2, triple], [out, [2], triple])
        assert np.array_equal(out, np.arange(6.0))
    finally:
        triple.Free()
    gappy = MPI.DOUBLE.Create_vector(2, 1, 2).Commit()
    try:
        with pytest.raises(ValueError, match="not contiguous"):
            B.element_dtype(np.zeros(8), gappy, "recvbuf")
    finally:
        gappy.Free()


# ---------------------------------------------------------------------------
# collectives on COMM_SELF, against mpi4py


@pytest.mark.parametrize("algorithm", shancoll.algorithms("allgatherv"))
@pytest.mark.parametrize("dtype", NUMERIC)
def test_self_allgatherv_every_dtype(algorithm, dtype):
    rng = np.random.default_rng(1)
    send = rng.integers(0, 100, size=7).astype(dtype)
    ref = np.zeros(7, dtype=dtype)
    SELF.Allgatherv(send, [ref, [7]])
    out = np.zeros(7, dtype=dtype)
    shancoll.allgatherv(SELF, send, [out, [7]], algorithm=algorithm)
    assert out.tobytes() == ref.tobytes()
    out2 = np.zeros(7, dtype=dtype)
    shancoll.allgather(SELF, send, out2, algorithm=algorithm)
    assert out2.tobytes() == ref.tobytes()


def test_self_shared():
    send = np.arange(5, dtype=np.int16)
    view = shancoll.allgatherv_shared(SELF, send, [5])
    assert np.array_equal(view, send) and not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 1
    rows = shancoll.allgather_shared(SELF, np.arange(6.0).reshape(2, 3))
    assert rows.shape == (1, 2, 3) and np.array_equal(rows[0], np.arange(6.0).reshape(2, 3))
    empty = shancoll.allgatherv_shared(SELF, np.zeros(0), [0])
    assert empty.shape == (0,) and empty.dtype == np.float64


def test_self_other_buffer_kinds():
    out = bytearray(4)
    shancoll.allgatherv(SELF, b"abcd", out)
    assert out == bytearray(b"abcd")
    out = array.array("i", [0, 0, 0])
    shancoll.allgatherv(SELF, array.array("i", [1, 2, 3]), [out, [3]])
    assert list(out) == [1, 2, 3]
    fortran = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    out = np.zeros((3, 2), order="F")
    shancoll.allgather(SELF, fortran, out)
    assert out.tobytes(order="A") == fortran.tobytes(order="A")


def test_self_in_place_and_gaps():
    out = np.array([9.0, 1.0, 2.0, 9.0])
    shancoll.allgatherv(SELF, MPI.IN_PLACE, [out, [2], [1]])
    assert out.tolist() == [9.0, 1.0, 2.0, 9.0]
    out = np.full(6, -1, dtype=np.int8)
    shancoll.allgatherv(SELF, np.array([5, 6], np.int8), [out, ([2], [3])])
    assert out.tolist() == [-1, -1, -1, 5, 6, -1]
    shancoll.allgatherv(SELF, None, [out, [2], [3]])  # None means in place (mpi4py's rule)


@pytest.mark.parametrize(
    "send, recv, options, match",
    [
        (np.ones(2), [np.zeros(2), [2, 0]], {}, "counts: expected 1 entries"),
        (np.ones(2), [np.zeros(2), [-2]], {}, "counts: negative"),
        (np.ones(2), [np.zeros(2), [2], [-1]], {}, "displs: negative"),
        (np.ones(2), [np.zeros(2), [2], [1]], {}, "recvbuf: too small"),
        (np.ones(2), [np.zeros(2), ["2"]], {}, "counts"),
        (np.ones(2), [np.zeros(2), [2.5]], {}, "counts"),
        (np.ones(2), [np.zeros(4)[::2], [2]], {}, "recvbuf: the array is not contiguous"),
        (np.ones(2), [np.zeros(2, "f4"), [2]], {}, "sendbuf: element type float64"),
        (np.ones(3), [np.zeros(4), [2]], {}, "sendbuf: sends 3 elements"),
        (np.ones(2), [np.zeros(2), [2], MPI.FLOAT], {}, "recvbuf: the MPI datatype"),
        ([np.ones(2), MPI.INT], [np.zeros(2), [2]], {}, "sendbuf: the MPI datatype"),
        (np.ones(2), [42, [2]], {}, "recvbuf: expected a NumPy array"),
        (np.ones(2), np.frombuffer(b"0123456789abcdef"), {}, "recvbuf: the array is read-only"),
        (np.ones(2), np.zeros(2), {"algorithm": "fastest"}, "algorithm: unknown"),
        (np.ones(2), np.zeros(2), {"algorithm": None}, "algorithm"),
        (np.ones(2), np.zeros(2), {"transport": "smoke"}, "transport: unknown"),
        (np.ones(2), np.zeros(2), {"block_size": -5}, "block_size"),
        (np.ones(2), np.zeros(2), {"block_size": "big"}, "block_size"),
        (np.ones(2), np.zeros(2), {"timeout": -1}, "timeout"),
        (np.ones(2), np.zeros(2), {"timeout": "soon"}, "timeout"),
        (np.ones(2), np.zeros(2), {"ranks_per_node": -2}, "ranks_per_node"),
        (np.ones(2), np.zeros(2), {"ranks_per_node": 1.5}, "ranks_per_node"),
    ],
)
def test_self_bad_input(send, recv, options, match):
    with pytest.raises(ValueError, match=match) as info:
        shancoll.allgatherv(SELF, send, recv, **options)
    assert isinstance(info.value, shancoll.ArgumentError)
    assert "rank 0" in str(info.value)
    # still usable
    out = np.zeros(2)
    shancoll.allgatherv(SELF, np.ones(2), out)
    assert out.tolist() == [1.0, 1.0]


def test_bad_comm():
    with pytest.raises(ValueError, match="comm: expected an mpi4py communicator"):
        shancoll.allgatherv(None, np.ones(1), np.zeros(1))
    with pytest.raises(ValueError, match="COMM_NULL"):
        shancoll.allgather(MPI.COMM_NULL, np.ones(1), np.zeros(1))
    dup = SELF.Dup()
    shancoll.allgather(dup, np.ones(1), np.zeros(1))
    dup.Free()
    with pytest.raises(ValueError, match="comm"):
        shancoll.allgather(dup, np.ones(1), np.zeros(1))
    with pytest.raises(ValueError, match="comm"):
        shancoll.last_stats(MPI.COMM_NULL)


def test_object_arrays_refused():
    with pytest.raises(ValueError, match="objects"):
        shancoll.allgather(SELF, np.array([None]), np.array([None]))


def test_kernel_set_from_the_environment(monkeypatch):
    kernels = shancoll.reduction_kernels()
    assert kernels["runnable"][0] == "generic" and kernels["active"] in kernels["runnable"]
    try:
        monkeypatch.setenv("SHANCOLL_KERNELS", "generic")
        shancoll.reload_environment()
        assert shancoll.reduction_kernels()["active"] == "generic"
        out = np.zeros(3)
        shancoll.allreduce(SELF, np.arange(3.0), out)
        assert out.tolist() == [0.0, 1.0, 2.0]
        monkeypatch.setenv("SHANCOLL_KERNELS", "sse9")
        shancoll.reload_environment()
        with pytest.raises(ValueError, match="SHANCOLL_KERNELS=sse9.*generic"):
            shancoll.reduce(SELF, np.arange(3.0), out)
        with pytest.raises(ValueError, match="SHANCOLL_KERNELS=sse9"):
            shancoll.reduction_kernels()
    finally:
        monkeypatch.delenv("SHANCOLL_KERNELS")
        shancoll.reload_environment()
    assert shancoll.reduction_kernels() == kernels


def test_auto_honours_environment_override(monkeypatch):
    monkeypatch.setenv("SHANCOLL_ALLGATHERV_ALGORITHM", "bruck")
    shancoll.allgatherv(SELF, np.ones(2), np.zeros(2))
    assert shancoll.last_stats(SELF).algorithm != "bruck"  # read once, at first use
    shancoll.reload_environment()
    shancoll.allgatherv(SELF, np.ones(2), np.zeros(2))
    assert shancoll.last_stats(SELF).algorithm == "bruck"
    shancoll.allgatherv(SELF, np.ones(2), np.zeros(2), algorithm="ring")  # explicit wins
    assert shancoll.last_stats(SELF).algorithm == "ring"
    monkeypatch.delenv("SHANCOLL_ALLGATHERV_ALGORITHM")
    shancoll.reload_environment()
    shancoll.allgatherv(SELF, np.ones(2), np.zeros(2))
    assert shancoll.last_stats(SELF).algorithm in shancoll.algorithms("allgatherv")


def test_layout_memo_sees_in_place_changes():
    counts = [1, 2, 3]
    arr = np.zeros(10)
    first = B.vector_message([arr, counts], 3)[2]
    counts[0] = 4  # the same list object, changed in place
    second = B.vector_message([arr, counts], 3)[2]
    assert first == [8, 16, 24] and second == [32, 16, 24]
