"""allgatherv / allgather against mpi4py's own collectives, every algorithm."""

from __future__ import annotations

import types

import numpy as np
import pytest
from _mpi_util import (
    ALL_DTYPES,
    DISTRIBUTIONS,
    REDUCED,
    assert_all,
    fill,
    make_counts,
    mpi_datatype,
    prefix,
    raises_all,
    reference_allgatherv,
    run_all,
    same,
)
from mpi4py import MPI
from test_mpi_allreduce import two_rank_nodes

import shancoll

ALGORITHMS = shancoll.algorithms("allgatherv")
SIZE_CLASSES = ["zero", "one", "odd", "large"]
DTYPES = [np.float64] if REDUCED else [np.float64, np.int32, np.uint8, np.complex128]


def per_rank_count(size_class: str, size: int, itemsize: int) -> int:
    if size_class == "zero":
        return 0
    if size_class == "one":
        return 1
    if size_class == "odd":
        return 37
    return max(1, (1 << 20) // (size * itemsize))  # ~1 MiB in all


def check_allgatherv(comm, algorithm, counts, dtype, what, **options):
    """One allgatherv with a [buf, counts, displs, datatype] spec vs the reference."""
    dtype = np.dtype(dtype)
    r = comm.rank
    send = fill(dtype, counts[r], r)
    displs = prefix(counts)
    length = sum(counts)
    ref = reference_allgatherv(comm, send, counts, displs, dtype, length)
    out = np.zeros(length, dtype=dtype)
    run_all(
        comm,
        shancoll.allgatherv,
        comm,
        send,
        [out, counts, displs, mpi_datatype(dtype)],
        algorithm=algorithm,
        **options,
    )
    assert_all(comm, same(out, ref), f"{what}: result differs from comm.Allgatherv")
    return out


@pytest.mark.parametrize("size_class", SIZE_CLASSES)
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_matches_mpi(comm, algorithm, dist, size_class):
    dtypes = DTYPES if size_class != "large" else DTYPES[:1]
    for dtype in dtypes:
        m = per_rank_count(size_class, comm.size, np.dtype(dtype).itemsize)
        counts = make_counts(dist, comm.size, m)
        check_allgatherv(
            comm,
            algorithm,
            counts,
            dtype,
            f"{algorithm} {dist} {size_class} {np.dtype(dtype)} counts={counts}",
        )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_dtype(comm, algorithm):
    for dtype in ALL_DTYPES:
        counts = make_counts("random", comm.size, 5)
        # plain arrays: no datatype in the spec, the dtype is the array's
        r = comm.rank
        send = fill(dtype, counts[r], r, seed=3)
        ref = reference_allgatherv(comm, send, counts, prefix(counts), dtype, sum(counts))
        out = np.zeros(sum(counts), dtype=dtype)
        run_all(comm, shancoll.allgatherv, comm, send, [out, counts], algorithm=algorithm)
        assert_all(comm, same(out, ref), f"{algorithm} dtype {np.dtype(dtype)}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_in_place(comm, algorithm):
    for dist in ["regular", "random"]:
        counts = make_counts(dist, comm.size, 11)
        displs = prefix(counts)
        r = comm.rank
        mine = fill(np.int64, counts[r], r)
        ref = reference_allgatherv(comm, mine, counts, displs, np.int64, sum(counts))
        out = np.full(sum(counts), -1, dtype=np.int64)
        out[displs[r] : displs[r] + counts[r]] = mine
        run_all(
            comm,
            shancoll.allgatherv,
            comm,
            MPI.IN_PLACE,
            [out, counts, displs],
            algorithm=algorithm,
        )
        assert_all(comm, same(out, ref), f"{algorithm} in place, {dist}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_gapped_displs_leave_gaps_untouched(comm, algorithm):
    p = comm.size
    counts = make_counts("random", p, 7, seed=5)
    # reversed order with gaps of 3 elements between blocks and 2 in front
    displs = [0] * p
    pos = 2
    for rank in reversed(range(p)):
        displs[rank] = pos
        pos += counts[rank] + 3
    length = pos + 4
    r = comm.rank
    send = fill(np.float32, counts[r], r)
    sentinel = np.float32(-12345.5)
    ref = reference_allgatherv(comm, send, counts, displs, np.float32, length, sentinel)
    out = np.full(length, sentinel, dtype=np.float32)
    run_all(
        comm,
        shancoll.allgatherv,
        comm,
        send,
        [out, (counts, displs), MPI.FLOAT],
        algorithm=algorithm,
    )
    covered = np.zeros(length, dtype=bool)
    for c, d in zip(counts, displs, strict=True):
        covered[d : d + c] = True
    ok = same(out, ref) and bool(np.all(out[~covered] == sentinel))
    assert_all(comm, ok, f"{algorithm} gapped displs {displs} counts {counts}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_repeated_calls_changing_sizes(comm, algorithm):
    """Same communicator, sizes up and down (segments grow; cached layouts change)."""
    scales = [3, 0, 5000, 1, 40000, 17] if not REDUCED else [3, 0, 20000, 1]
    for i, m in enumerate(scales):
        for dist in ["regular", "decreasing"]:
            counts = make_counts(dist, comm.size, m)
            check_allgatherv(comm, algorithm, counts, np.float64, f"call {i} {dist} m={m}")
    # the same counts many times: the cached fast path
    counts = make_counts("random", comm.size, 9)
    r = comm.rank
    send = fill(np.int16, counts[r], r)
    ref = reference_allgatherv(comm, send, counts, prefix(counts), np.int16, sum(counts))
    ok = True
    for _ in range(20):
        out = np.zeros(sum(counts), dtype=np.int16)
        run_all(comm, shancoll.allgatherv, comm, send, [out, counts], algorithm=algorithm)
        ok = ok and same(out, ref)
    assert_all(comm, ok, f"{algorithm} repeated identical calls")


def test_algorithms_alternating_on_one_comm(comm):
    counts = make_counts("decreasing", comm.size, 300)
    for rep in range(2):
        for algorithm in ALGORITHMS:
            check_allgatherv(comm, algorithm, counts, np.uint8, f"rep {rep} {algorithm}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_dup_split_and_self(comm, algorithm):
    dup = comm.Dup()
    half = comm.Split(comm.rank % 2, comm.rank)
    try:
        for c, name in [(dup, "dup"), (half, "split"), (MPI.COMM_SELF, "self")]:
            counts = make_counts("random", c.size, 21, seed=c.size)
            r = c.rank
            send = fill(np.float64, counts[r], r)
            ref = reference_allgatherv(c, send, counts, prefix(counts), np.float64, sum(counts))
            out = np.zeros(sum(counts))
            run_all(comm, shancoll.allgatherv, c, send, [out, counts], algorithm=algorithm)
            assert_all(comm, same(out, ref), f"{algorithm} on {name} ({c.size} ranks)")
    finally:
        dup.Free()
        half.Free()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_interleaved_with_other_traffic(comm, algorithm):
    """A pending Isend/Irecv pair on the same communicator around the call."""
    p, r = comm.size, comm.rank
    right, left = (r + 1) % p, (r - 1) % p
    msg = np.arange(1000, dtype=np.int64) + r
    got = np.empty(1000, dtype=np.int64)
    rreq = comm.Irecv(got, source=left, tag=77)
    sreq = comm.Isend(msg, dest=right, tag=77)
    counts = make_counts("decreasing", p, 2000)
    out = check_allgatherv(comm, algorithm, counts, np.float64, f"{algorithm} interleaved")
    MPI.Request.Waitall([rreq, sreq])
    assert_all(comm, same(got, np.arange(1000, dtype=np.int64) + left), "point-to-point data")
    assert_all(comm, out.size == sum(counts), "result size")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_allgather_block(comm, algorithm):
    p, r = comm.size, comm.rank
    for shape in [(0,), (1,), (3, 5), (2000,)]:
        send = fill(np.int32, int(np.prod(shape)), r).reshape(shape)
        ref = np.zeros((p, *shape), dtype=np.int32)
        comm.Allgather(send, ref)
        out = np.zeros((p, *shape), dtype=np.int32)
        run_all(comm, shancoll.allgather, comm, send, out, algorithm=algorithm)
        assert_all(comm, same(out, ref), f"{algorithm} allgather shape {shape}")
        # in place
        out2 = np.zeros((p, *shape), dtype=np.int32)
        out2[r] = send
        run_all(comm, shancoll.allgather, comm, MPI.IN_PLACE, out2, algorithm=algorithm)
        assert_all(comm, same(out2, ref), f"{algorithm} allgather in place shape {shape}")


PLAIN_DTYPES = [np.float64] if REDUCED else [np.float64, np.int32, np.uint8, np.complex64]


def test_one_compiled_path():
    """The public functions are the compiled entries (no Python frame, no
    second parser): every form of a call below runs through them."""
    for fn in (shancoll.allgatherv, shancoll.allgather):
        assert type(fn) is type(shancoll.allreduce), fn  # the extension's entry type
        assert not isinstance(fn, types.FunctionType) and callable(fn), fn


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_plain_calls_match_mpi(comm, algorithm):
    """The common forms: ndarrays, [out, counts], [out, counts, displs] and
    (out, counts, None) with lists of ints, IN_PLACE, options passed as the
    sweep passes them. Every result as comm.Allgatherv's (gaps untouched)."""
    p, r = comm.size, comm.rank
    opts = dict(algorithm=algorithm, ranks_per_node=None, timeout=None, block_size=0)
    failures: list[str] = []

    def check(what, got, ref):
        if not same(got, ref):
            failures.append(what)

    for dtype in PLAIN_DTYPES:
        for dist in ["regular", "decreasing"]:
            counts = make_counts(dist, p, 37)
            displs = [2 * d + 1 for d in prefix(counts)]  # gaps, and none at the start
            length = displs[-1] + counts[-1] + 3
            send = fill(dtype, counts[r], r)
            ref = reference_allgatherv(comm, send, counts, displs, dtype, length, 7)
            out = np.full(length, 7, dtype)
            shancoll.allgatherv(comm, send, [out, counts, displs], **opts)
            check(f"{np.dtype(dtype)} {dist} [out, counts, displs]", out, ref)
            packed = reference_allgatherv(comm, send, counts, prefix(counts), dtype, sum(counts))
            for form in ("list", "tuple"):
                out = np.zeros(sum(counts), dtype)
                spec = [out, counts] if form == "list" else (out, counts, None)
                shancoll.allgatherv(comm, send, spec, **opts)
                check(f"{np.dtype(dtype)} {dist} packed {form}", out, packed)
            out = np.zeros(sum(counts), dtype)
            out[prefix(counts)[r] : prefix(counts)[r] + counts[r]] = send
            shancoll.allgatherv(comm, MPI.IN_PLACE, [out, counts], **opts)
            check(f"{np.dtype(dtype)} {dist} in place", out, packed)
        send = fill(dtype, 37, r)
        ref = np.zeros((p, 37), dtype)
        comm.Allgather(send, ref)
        for call in (shancoll.allgatherv, shancoll.allgather):
            out = np.zeros((p, 37), dtype)
            call(comm, send, out, **opts)
            check(f"{np.dtype(dtype)} {call.__name__} even split", out, ref)
        out = np.zeros((p, 37), dtype)
        out[r] = send
        shancoll.allgather(comm, MPI.IN_PLACE, out, **opts)
        check(f"{np.dtype(dtype)} allgather in place", out, ref)
    assert_all(comm, not failures, f"{algorithm}: {failures[:4]}")


def test_other_forms_match_too(comm):
    """The forms the entries once declined to a Python layer (a datatype,
    counts as an array, a (counts, displs) pair, an integer timeout, an
    uneven split) give the same results."""
    p, r = comm.size, comm.rank
    counts = [3] * p
    send = fill(np.float64, 3, r)
    ref = reference_allgatherv(comm, send, counts, prefix(counts), np.float64, 3 * p)
    calls = [
        lambda o: shancoll.allgatherv(comm, send, [o, counts, None, MPI.DOUBLE]),
        lambda o: shancoll.allgatherv(comm, send, [o, np.array(counts)]),
        lambda o: shancoll.allgatherv(comm, send, [o, (counts, prefix(counts))]),
        lambda o: shancoll.allgatherv(comm, send, o, timeout=30),
    ]
    for call in calls:
        out = np.zeros(3 * p)
        call(out)
        assert_all(comm, same(out, ref), "a declined form's result")
    if p > 1:  # mpi4py's even split of 3 p + 1 elements is uneven
        out = np.zeros(3 * p + 1)
        mine = fill(np.float64, 4 if r == 0 else 3, r)
        shancoll.allgatherv(comm, mine, out)
        ref = np.zeros(3 * p + 1)
        comm.Allgatherv(mine, ref)
        assert_all(comm, same(out, ref), "the uneven split")


SPEC_FORMS = [
    "buf",
    "buf_type",
    "buf_counts",
    "buf_counts_displs",
    "buf_pair",
    "buf_pair_type",
    "buf_counts_type",
    "buf_counts_displs_type",
    "buf_int_count",
]


@pytest.mark.parametrize("form", SPEC_FORMS)
def test_buffer_spec_forms_match_mpi4py(comm, form):
    """The same recvbuf spec given to comm.Allgatherv and to shancoll.allgatherv."""
    p, r = comm.size, comm.rank
    counts = [3 + (i % 3) for i in range(p)]
    if form in ("buf", "buf_type"):  # mpi4py's even split, remainder to the first ranks
        total = 4 * p + (p - 1)
        counts = [total // p + (1 if i < total % p else 0) for i in range(p)]
    if form == "buf_int_count":
        counts = [4] * p
    displs = [2 * d for d in prefix(counts)]  # gaps: displs given explicitly
    length = (displs[-1] + counts[-1] + 1) if "displs" in form or "pair" in form else sum(counts)
    dt = MPI.DOUBLE

    def spec(buf):
        return {
            "buf": buf,
            "buf_type": [buf, dt],
            "buf_counts": [buf, counts],
            "buf_counts_displs": [buf, counts, displs],
            "buf_pair": [buf, (counts, displs)],
            "buf_pair_type": [buf, (counts, displs), dt],
            "buf_counts_type": [buf, counts, dt],
            "buf_counts_displs_type": [buf, counts, displs, dt],
            "buf_int_count": [buf, 4, dt],
        }[form]

    send = fill(np.float64, counts[r], r)
    ref = np.full(length, -1.0)
    mpi_spec = spec(ref)
    if form == "buf_counts_displs":  # mpi4py reads a 3rd item as a datatype
        mpi_spec = [ref, counts, displs, dt]
    comm.Allgatherv(send, mpi_spec)
    out = np.full(length, -1.0)
    run_all(comm, shancoll.allgatherv, comm, send, spec(out))
    assert_all(comm, same(out, ref), f"spec form {form}")


def test_send_spec_forms(comm):
    p, r = comm.size, comm.rank
    counts = [4] * p
    base = fill(np.int32, 10, r)
    ref = np.zeros(4 * p, dtype=np.int32)
    comm.Allgatherv([base, (4, 3), MPI.INT], [ref, counts])
    for send in [
        [base, (4, 3), MPI.INT],
        [base, 4, 3, MPI.INT],
        [base[3:7], MPI.INT],
        [base[3:7], 4],
        [base[3:7], 4, MPI.INT],
        base[3:7],
        base[3:7].copy(),
    ]:
        out = np.zeros(4 * p, dtype=np.int32)
        run_all(comm, shancoll.allgatherv, comm, send, [out, counts])
        assert_all(comm, same(out, ref), f"send spec {type(send).__name__}")


def test_shan_single_copy_rule_option(comm, tmp_path):
    """A rule's single_copy=0 keeps a large block on the segment path (the AMD
    EPYC tables' choice: there it is the faster one); single_copy=1 takes the
    single-copy path below its size threshold, where cross-memory attach works."""
    pair = two_rank_nodes(comm)
    failures: list[str] = []

    def body():
        layout = shancoll.topology(pair)  # auto's layout (SHANCOLL_RANKS_PER_NODE or physical)
        if pair.size != 2 or layout["node_count"] != 1:
            return
        for total, option, direct in [(200_000, 0, False), (4_000, 1, layout["single_copy"])]:
            table = tmp_path / f"rules-{pair.rank}-{option}.tsv"
            table.write_text(f"allgatherv 0 * 2 2 1 * shan single_copy={option}\n")
            shancoll.set_rules(table)
            counts = [total // 2, total - total // 2]
            mine = fill(np.uint8, counts[pair.rank], pair.rank, seed=total)
            ref = reference_allgatherv(pair, mine, counts, prefix(counts), np.uint8, total)
            out = np.zeros(total, np.uint8)
            shancoll.allgatherv(pair, mine, [out, counts])  # no options: the rule's
            messages = shancoll.last_stats(pair).intra_messages
            if not same(out, ref):
                failures.append(f"{total} B single_copy={option}: differs from comm.Allgatherv")
            elif (messages == 2) != direct:  # the segment path: in, own copy, out (3)
                failures.append(f"{total} B single_copy={option}: {messages} intra messages")

    try:
        run_all(comm, body)
    finally:
        shancoll.set_rules(None)
    pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


def test_single_copy_and_ring_window_keywords(comm):
    """The rule options as Python keywords of allgather(v) and their request
    forms: single_copy=False keeps a large block on the segment's ring (three
    intra messages: in, own copy, out), True moves it straight between the
    buffers (two) where cross-memory attach works, ring_window sizes the
    ring; the results match mpi4py's. Bad values are refused naming the key
    and the rank."""
    pair = two_rank_nodes(comm)
    failures: list[str] = []

    def body():
        layout = shancoll.topology(pair)
        if pair.size != 2 or layout["node_count"] != 1:
            return
        counts = [150_001, 99_999]
        mine = fill(np.uint8, counts[pair.rank], pair.rank, seed=11)
        ref = reference_allgatherv(pair, mine, counts, prefix(counts), np.uint8, sum(counts))
        for kw, direct in [
            ({"single_copy": False}, False),
            ({"single_copy": False, "ring_window": 65536}, False),
            ({"ring_window": 4 << 20, "single_copy": False}, False),
            ({"single_copy": True}, layout["single_copy"]),
        ]:
            for form in ["blocking", "init"]:
                out = np.zeros(sum(counts), np.uint8)
                if form == "blocking":
                    shancoll.allgatherv(pair, mine, [out, counts], algorithm="shan", **kw)
                    messages = shancoll.last_stats(pair).intra_messages
                else:
                    req = shancoll.allgatherv_init(pair, mine, [out, counts], **kw)
                    req.start()
                    req.wait()
                    req.free()
                    messages = None
                if not same(out, ref):
                    failures.append(f"{kw} {form}: differs from comm.Allgatherv")
                elif messages is not None and (messages == 2) != direct:
                    failures.append(f"{kw}: {messages} intra messages")
        equal = np.zeros(2 * 70_000, np.uint8)
        shancoll.allgather(pair, mine[:70_000], equal, single_copy=False, ring_window=1 << 20)
        if not same(equal, np.concatenate(pair.allgather(mine[:70_000]))):
            failures.append("allgather ring_window=1 MiB: differs from comm.allgather")
        for key, value, want in [
            ("ring_window", 1000, "ring_window: must be >= 65536"),
            ("ring_window", "big", "ring_window: expected an integer"),
            ("single_copy", 2.5, "single_copy: expected a boolean"),
        ]:
            try:
                shancoll.allgather(pair, mine[:10], equal[:20], **{key: value})
                failures.append(f"{key}={value!r}: accepted")
            except ValueError as e:
                if want not in str(e) or f"rank {pair.rank}" not in str(e):
                    failures.append(f"{key}={value!r}: {e}")

    run_all(comm, body)
    pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_single_copy_on_two_rank_nodes(comm):
    """A node of two ranks (ranks_per_node=2, whatever the environment says), from
    64 KiB in all: each block goes straight into the other rank's recvbuf, its
    first half (in whole cache lines) read by the receiver, the rest written by
    the owner: two intra messages per rank. Every distribution, odd byte counts,
    in place, gapped and reversed displacements."""
    pair = two_rank_nodes(comm)
    failures: list[str] = []

    def one(counts, displs, length, in_place, what):
        r = pair.rank
        mine = fill(np.uint8, counts[r], r, seed=len(what))
        ref = reference_allgatherv(pair, mine, counts, displs, np.uint8, length, fill_value=7)
        out = np.full(length, 7, np.uint8)
        if in_place:
            out[displs[r] : displs[r] + counts[r]] = mine
        send = MPI.IN_PLACE if in_place else mine
        shancoll.allgatherv(pair, send, [out, counts, displs], algorithm="shan", ranks_per_node=2)
        st = shancoll.last_stats(pair)
        half = counts[1 - r] // 2 // 64 * 64
        moved = half + counts[r] - counts[r] // 2 // 64 * 64
        if not same(out, ref):
            failures.append(f"{what}: differs from comm.Allgatherv")
        elif (st.intra_messages, st.intra_bytes, st.node_count) != (2, moved, 1):
            failures.append(f"{what}: {st.intra_messages} messages, {st.intra_bytes} B")

    def body():
        if pair.size != 2:
            return
        for dist in ["regular", "decreasing", "broadcast", "random"]:
            for m in [40_011, 300_001]:
                counts = make_counts(dist, 2, m)
                if sum(counts) < 64 << 10:
                    continue
                for in_place in [False, True]:
                    one(counts, prefix(counts), sum(counts), in_place, f"{dist} m={m} {in_place}")
        counts = [60_000, 9_999]  # the second block first, gaps around both
        displs = [9_999 + 5, 3]
        one(counts, displs, sum(counts) + 9, False, "gapped reversed")

    run_all(comm, body)
    pair.Free()
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_chunk_ring_on_one_node(comm, tmp_path):
    """One node (auto's layout), single copy off by a rule: every block goes
    through its owner's ring of chunks (16 KiB to a quarter of the ring,
    back to back around it). Blocks that straddle the chunk sizes and take
    many more chunks than the ring holds (the ring wraps within a call),
    uneven and zero counts, in place, gapped displacements, and sizes that
    change from call to call with no barrier between the calls; under the
    default ring, the smallest (64 KiB), one of 2 MiB (a result large
    enough for the copies out to stream around the cache, and more calls of
    small blocks than it has ready lines) and back, the ring changing
    between calls."""
    failures: list[str] = []
    p, r = comm.size, comm.rank
    one_node = shancoll.topology(comm)["node_count"] == 1  # auto's layout

    def one(counts, displs, length, in_place, what):
        mine = fill(np.uint8, counts[r], r, seed=length % 251)
        ref = reference_allgatherv(comm, mine, counts, displs, np.uint8, length, fill_value=7)
        out = np.full(length, 7, np.uint8)
        if in_place:
            out[displs[r] : displs[r] + counts[r]] = mine
        send = MPI.IN_PLACE if in_place else mine
        shancoll.allgatherv(comm, send, [out, counts, displs])  # no options: the rule's
        st = shancoll.last_stats(comm)
        own = (counts[r] > 0) * (1 + (not in_place))
        if not same(out, ref):
            failures.append(f"{what}: differs from comm.Allgatherv")
        elif p > 1 and max(counts) > 336 and (st.intra_messages, st.node_count) != (own + p - 1, 1):
            failures.append(f"{what}: {st.intra_messages} intra messages")

    def body():
        if not one_node:
            return
        for window in ["", ",ring_window=65536", ",ring_window=2097152", ""]:
            table = tmp_path / f"rules-ring-{r}.tsv"
            table.write_text(f"allgatherv 0 * {p} {p} 1 * shan single_copy=0{window}\n")
            shancoll.set_rules(table)
            for m in [337, (16 << 10) - 1, (16 << 10) + 1, (256 << 10) + 3, 1_300_001]:
                for dist in ["regular", "decreasing", "broadcast", "random"]:
                    counts = make_counts(dist, p, m)
                    for in_place in [False, True]:
                        what = f"{dist} m={m} {in_place}{window}"
                        one(counts, prefix(counts), sum(counts), in_place, what)
            counts = [(100_000 * (q + 1)) % 170_000 for q in range(p)]  # zero for some p
            displs = [5 + sum(counts[q + 1 :]) + 3 * (p - 1 - q) for q in range(p)]  # gapped
            length = max(d + c for d, c in zip(displs, counts, strict=True)) + 4
            one(counts, displs, length, False, f"gapped{window}")
            if "2097152" in window:
                counts = make_counts("decreasing", p, 9_000_001)  # copies out stream (16 MiB)
                one(counts, prefix(counts), sum(counts), False, f"streamed{window}")
                for i in range(300):  # one chunk a call: the ready lines wrap
                    counts = make_counts("random", p, 400 + i)
                    one(counts, prefix(counts), sum(counts), False, f"small {i}{window}")

    try:
        run_all(comm, body)
    finally:
        shancoll.set_rules(None)
    assert_all(comm, not failures, f"{failures[:5]}")


def test_shan_chunk_ring_refuses_counts_that_differ_and_stays_in_step(comm, tmp_path):
    """One rank's recvcounts differ (its own block larger, so it sends more
    chunks than the others expect, or smaller): every rank refuses the call
    naming recvcounts, within the timeout, and the next calls on the same
    communicator, with other sizes and chunk counts, are right. The chunks
    are numbered across calls, so a rank that skipped or repeated one would
    hang or read a stale chunk here."""
    if comm.size < 2 or shancoll.topology(comm)["node_count"] != 1:
        pytest.skip("one node of several ranks")
    p, r = comm.size, comm.rank
    table = tmp_path / f"rules-ring-differ-{r}.tsv"
    table.write_text(f"allgatherv 0 * {p} {p} 1 * shan single_copy=0\n")
    failures: list[str] = []

    def agreed(m):
        counts = make_counts("random", p, m)
        mine = fill(np.uint8, counts[r], r, seed=m % 251)
        ref = reference_allgatherv(comm, mine, counts, prefix(counts), np.uint8, sum(counts))
        out = np.zeros(sum(counts), np.uint8)
        shancoll.allgatherv(comm, mine, [out, counts], timeout=5)
        if not same(out, ref):
            failures.append(f"m={m} after the refused calls: differs from comm.Allgatherv")

    shancoll.set_rules(table)
    try:
        for mine_bytes, others_bytes in [(200_000, 70_000), (20_000, 150_000), (0, 90_000)]:
            counts = [others_bytes] * p
            if r == 0:
                counts[0] = mine_bytes
            out = np.zeros(sum(counts), np.uint8)
            mine = np.full(counts[r], r, np.uint8)
            raises_all(comm, ValueError, shancoll.allgatherv, comm, mine, [out, counts],
                       timeout=5, match="recvcounts")  # fmt: skip
            for m in [70_001, 17_000, 600_003]:
                agreed(m)
    finally:
        shancoll.set_rules(None)
    assert_all(comm, not failures, f"{failures[:5]}")
