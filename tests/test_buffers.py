"""Single-process tests: buffer-spec parsing, argument checking and the API surface.

No mpiexec needed: collectives run on COMM_SELF (one rank) and, for the
compiled parser (``_core._parse_message``), not at all.
"""

from __future__ import annotations

import array
import dataclasses

import numpy as np
import pytest
from mpi4py import MPI

import shancoll
from shancoll._core import _parse_message as parse_message

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
        "remote_sent_bytes", "remote_recv_messages", "remote_recv_bytes", "single_copy_bytes",
        "streamed_ring_bytes", "bcast_tree", "reduce_tree",
    }  # fmt: skip


def test_topology_self():
    t = shancoll.topology(SELF)
    assert t["node_count"] == 1 and t["node_of"] == [0] and t["ranks"] == [[0]]
    assert shancoll.topology(SELF, 1)["node_count"] == 1
    with pytest.raises(ValueError, match="ranks_per_node"):
        shancoll.topology(SELF, -3)


# ---------------------------------------------------------------------------
# the compiled buffer-spec parser (mpi4py's rules): _core._parse_message gives
# its reading of a spec; size > 0 reads a v-collective's receive spec


def simple(spec, name="sendbuf", writable=False, blocks=1):
    m = parse_message(spec, name, 0, writable, blocks)
    return m["count"], m["offset"]


def vector(spec, size, name="recvbuf"):
    m = parse_message(spec, name, size)
    return m["counts"], m["displs"], m["extent"]


buf = np.zeros(4)


@pytest.mark.parametrize(
    "spec, expected",
    [
        (buf, ([16, 16], [0, 16])),  # split evenly
        ([buf, MPI.DOUBLE], ([16, 16], [0, 16])),
        ([buf, "d"], ([16, 16], [0, 16])),
        ((buf, [1, 3]), ([8, 24], [0, 8])),
        ([buf, 2], ([16, 16], [0, 16])),
        ([buf, ([1, 3], [0, 1])], ([8, 24], [0, 8])),
        ([buf, (1, 3)], ([8, 8], [0, 24])),  # a tuple here is (counts, displs), as in mpi4py
        ([buf, [1, 3], MPI.DOUBLE], ([8, 24], [0, 8])),
        ([buf, ([1, 3], [0, 1]), MPI.DOUBLE], ([8, 24], [0, 8])),
        ([buf, [1, 3], [0, 1]], ([8, 24], [0, 8])),
        ([buf, [1, 3], [0, 1], MPI.DOUBLE], ([8, 24], [0, 8])),
        ([buf, [1, 3], None, MPI.DOUBLE], ([8, 24], [0, 8])),
    ],
)
def test_vector_specs(spec, expected):
    assert vector(spec, 2)[:2] == expected


@pytest.mark.parametrize(
    "spec, expected",
    [
        (buf, (4, 0)),
        ([buf, MPI.DOUBLE], (4, 0)),
        ([buf, 3], (3, 0)),
        ([buf, (2, 1)], (2, 8)),
        ([buf, [2, 1]], (2, 8)),
        ([buf, 3, MPI.DOUBLE], (3, 0)),
        ([buf, (2, 1), MPI.DOUBLE], (2, 8)),
        ([buf, 2, 1, MPI.DOUBLE], (2, 8)),
        ([buf, 2, 1, None], (2, 8)),
        ([buf, np.int64(3)], (3, 0)),
    ],
)
def test_simple_specs(spec, expected):
    assert simple(spec) == expected


def test_spec_errors():
    with pytest.raises(ValueError, match="recvbuf: a buffer spec has 2 to 4 items"):
        vector([buf], 1)
    with pytest.raises(ValueError, match="sendbuf: a buffer spec has 2 to 4 items"):
        simple([buf, 1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"\(counts, displs\) pair"):
        vector([buf, (1, 2, 3)], 1)
    with pytest.raises(ValueError, match="sendbuf: a buffer is required here"):
        simple(MPI.IN_PLACE)
    with pytest.raises(ValueError, match="sendbuf: expected a NumPy array"):
        simple([object(), 1])


def test_vector_layout_even_split_like_mpi4py():
    arr = np.zeros(10, dtype=np.int32)
    assert vector(arr, 4) == ([12, 12, 8, 8], [0, 12, 24, 32], 40)


def test_vector_layout_counts_displs_in_bytes():
    arr = np.zeros(20, dtype=np.float64)
    assert vector([arr, [1, 0, 3], [10, 0, 2], MPI.DOUBLE], 3) == ([8, 0, 24], [80, 0, 16], 88)
    assert vector([arr, 2, 5], 3)[:2] == ([16, 16, 16], [0, 40, 80])  # integral counts, stride
    assert vector([arr, np.array([1, 2, 3])], 3)[:2] == ([8, 16, 24], [0, 8, 24])
    with pytest.raises(ValueError, match="counts: expected 3 entries"):
        vector([arr, [1, 2]], 3)
    with pytest.raises(ValueError, match="counts: negative count -1 for rank 1"):
        vector([arr, [1, -1, 1]], 3)
    with pytest.raises(ValueError, match="recvbuf: too small"):
        vector([arr, [10, 10, 1]], 3)


def test_counts_changed_in_place_are_seen():
    counts = [1, 2, 3]
    arr = np.zeros(10)
    first = vector([arr, counts], 3)[0]
    counts[0] = 4  # the same list object, changed in place
    assert first == [8, 16, 24] and vector([arr, counts], 3)[0] == [32, 16, 24]


def test_simple_message_count_and_displ():
    arr = np.arange(10, dtype=np.int64)
    assert simple(arr) == (10, 0)
    assert simple([arr, (4, 3), MPI.INT64_T]) == (4, 24)
    assert simple(arr, "recvbuf", True, blocks=5) == (2, 0)
    with pytest.raises(ValueError, match="multiple of the 3 ranks"):
        simple(arr, "recvbuf", True, blocks=3)
    with pytest.raises(ValueError, match="exceeds the buffer"):
        simple([arr, 11])
    with pytest.raises(ValueError, match="past the end"):
        simple([arr, (0, 11), MPI.INT64_T])
    with pytest.raises(ValueError, match="negative count"):
        simple([arr, -1])
    with pytest.raises(ValueError, match="sendbuf count: expected an integer"):
        simple([arr, 2.0])


def test_buffers_of_every_kind():
    assert parse_message(b"abcd", "sendbuf")["bytes"] == 4
    assert parse_message(array.array("i", [1, 2, 3]), "sendbuf")["element"]["name"] == "int32"
    assert parse_message(np.zeros((2, 3), order="F"), "sendbuf")["count"] == 6
    assert parse_message(memoryview(np.zeros(3, "c16")), "sendbuf")["element"]["name"] == (
        "complex128"
    )
    with pytest.raises(ValueError, match="recvbuf: the array is read-only"):
        parse_message(b"abcd", "recvbuf", writable=True)
    with pytest.raises(ValueError, match=r"sendbuf: the array is not contiguous.*strides \(16\)"):
        parse_message(np.zeros(4)[::2], "sendbuf")
    with pytest.raises(ValueError, match="sendbuf: arrays of Python objects"):
        parse_message(np.array([None]), "sendbuf")


def test_send_is_checked_against_the_receive_side():
    arr = np.arange(10, dtype=np.int32)
    out = np.zeros(4, np.int32)
    shancoll.allgatherv(SELF, [arr, (4, 3), MPI.INT], [out, [4]])
    assert out.tolist() == arr[3:7].tolist()
    with pytest.raises(ValueError, match=r"counts\[0\]"):
        shancoll.allgatherv(SELF, arr, [np.zeros(9, np.int32), [9]])
    with pytest.raises(ValueError, match="does not match the receive"):
        shancoll.allgatherv(SELF, arr, np.zeros(10, np.float32))


# ---------------------------------------------------------------------------
# datatypes


def element(arr, datatype, name="recvbuf"):
    return parse_message([arr, datatype], name)["element"]


@pytest.mark.parametrize("dtype", NUMERIC)
def test_datatype_must_match_dtype(dtype):
    from mpi4py.util import dtlib

    arr = np.zeros(4, dtype=dtype)
    dt = dtlib.from_numpy_dtype(arr.dtype)
    assert element(arr, dt)["size"] == arr.dtype.itemsize
    assert element(arr, dt)["kind"] == arr.dtype.kind
    other = MPI.INT if np.dtype(dtype) != np.int32 else MPI.DOUBLE
    if np.dtype(dtype) == np.dtype("l") and other == MPI.INT:
        other = MPI.SHORT
    with pytest.raises(ValueError, match="recvbuf: the MPI datatype"):
        element(arr, other)


def test_datatype_byte_fits_any_array_and_typecodes():
    arr = np.zeros(3, dtype=np.float64)
    assert element(arr, MPI.BYTE)["size"] == 1 and element(arr, MPI.BYTE)["byte"]
    assert parse_message([arr, MPI.BYTE], "sendbuf")["count"] == 24
    assert element(arr, "d")["name"] == "float64"
    with pytest.raises(ValueError, match="typecode"):
        element(arr, "no such code")
    with pytest.raises(ValueError, match="DATATYPE_NULL"):
        element(arr, MPI.DATATYPE_NULL)


def test_contiguous_derived_datatype():
    triple = MPI.DOUBLE.Create_contiguous(3).Commit()
    try:
        arr = np.zeros(12)
        assert element(arr, triple)["size"] == 24
        out = np.zeros(6)
        shancoll.allgatherv(SELF, [np.arange(6.0), 2, triple], [out, [2], triple])
        assert np.array_equal(out, np.arange(6.0))
        summed = np.zeros(6)
        shancoll.allreduce(SELF, [np.arange(6.0), 2, triple], [summed, 2, triple])
        assert np.array_equal(summed, np.arange(6.0))
    finally:
        triple.Free()
    gappy = MPI.DOUBLE.Create_vector(2, 1, 2).Commit()
    try:
        with pytest.raises(ValueError, match="not contiguous"):
            element(np.zeros(8), gappy)
    finally:
        gappy.Free()


# ---------------------------------------------------------------------------
# one set of rules for every collective and every form of a call


def every_collective():
    """(name, call) for each Python collective on COMM_SELF, options passed on."""
    a, b = np.ones(2), np.zeros(2)
    return {
        "allreduce": lambda **o: shancoll.allreduce(SELF, a, b, **o),
        "bcast": lambda **o: shancoll.bcast(SELF, b, **o),
        "reduce": lambda **o: shancoll.reduce(SELF, a, b, **o),
        "allgatherv": lambda **o: shancoll.allgatherv(SELF, a, [b, [2]], **o),
        "allgather": lambda **o: shancoll.allgather(SELF, a, b, **o),
        "allgatherv_shared": lambda **o: shancoll.allgatherv_shared(SELF, a, [2], **o),
        "allgather_shared": lambda **o: shancoll.allgather_shared(SELF, a, **o),
        "topology": lambda **o: shancoll.topology(SELF, **o),
    }


@pytest.mark.parametrize("name", list(every_collective()))
def test_timeout_rules_are_the_same_everywhere(name):
    call = every_collective()[name]
    for seconds in [None, 5, 5.0, np.float64(5.0), np.int64(5)]:
        call(timeout=seconds)
    for bad in [True, "5", [5]]:
        with pytest.raises(ValueError, match="timeout: expected a number of seconds") as info:
            call(timeout=bad)
        assert "rank 0" in str(info.value)
    with pytest.raises(ValueError, match="timeout: must be a finite number of seconds >= 0"):
        call(timeout=-1)


@pytest.mark.parametrize("name", list(every_collective()))
def test_ranks_per_node_rules_are_the_same_everywhere(name):
    call = every_collective()[name]
    for rpn in [None, 0, 1, np.int32(1)]:
        call(ranks_per_node=rpn)
    for bad, match in [(True, "expected an integer"), (1.5, "expected an integer"),
                       (-2, "must be >= 0")]:  # fmt: skip
        with pytest.raises(ValueError, match=f"ranks_per_node: {match}"):
            call(ranks_per_node=bad)


def test_algorithm_must_be_a_string_everywhere():
    for name, call in every_collective().items():
        if name in ("topology", "allgatherv_shared", "allgather_shared"):
            continue
        with pytest.raises(ValueError, match="algorithm: expected a string"):
            call(algorithm=1)


@pytest.mark.parametrize(
    "send, recv",
    [
        (np.arange(3.0), np.zeros(3)),
        ([np.arange(3.0), MPI.DOUBLE], [np.zeros(3), MPI.DOUBLE]),
        ([np.arange(3.0), 3], [np.zeros(3), 3]),
        ([np.arange(3.0), "d"], [np.zeros(3), 3, "d"]),
        ([np.arange(5.0), (3, 0), MPI.DOUBLE], [np.zeros(3), (3, 0), MPI.DOUBLE]),
        ([np.arange(5.0), 3, 0, MPI.DOUBLE], [np.zeros(3), 3, 0, MPI.DOUBLE]),
        (array.array("d", [0.0, 1.0, 2.0]), np.zeros(3)),
    ],
)
def test_every_spec_form_through_allreduce(send, recv):
    shancoll.allreduce(SELF, send, recv, timeout=5)
    out = recv[0] if isinstance(recv, list) else recv
    assert out.tolist() == [0.0, 1.0, 2.0]


def test_signature_errors_are_type_errors():
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        shancoll.allgatherv(SELF, np.ones(1), np.zeros(1), colour=1)
    with pytest.raises(TypeError, match="missing required argument 'recvbuf'"):
        shancoll.allreduce(SELF, np.ones(1))
    with pytest.raises(TypeError, match="multiple values for argument 'sendbuf'"):
        shancoll.allreduce(SELF, np.ones(1), np.zeros(1), sendbuf=np.ones(1))
    with pytest.raises(TypeError, match="positional"):
        shancoll.allgatherv(SELF, np.ones(1), np.zeros(1), "ring")


def test_callable_ops_blocking_and_split_phase():
    out = np.zeros(3)
    shancoll.allreduce(SELF, np.arange(3.0), out, lambda a, b: a + b)
    assert out.tolist() == [0.0, 1.0, 2.0]
    req = shancoll.iallreduce(SELF, np.arange(3.0), out, np.maximum, commute=True)
    req.wait()
    assert out.tolist() == [0.0, 1.0, 2.0] and req.op_to_free is None


def test_non_native_byte_order_moves_but_does_not_reduce():
    send = np.arange(3, dtype=">f8")
    out = np.zeros(3, dtype=">f8")
    shancoll.allgatherv(SELF, send, out)
    assert out.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="recvbuf: elements of format '>d' cannot be reduced"):
        shancoll.allreduce(SELF, send, out)


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
