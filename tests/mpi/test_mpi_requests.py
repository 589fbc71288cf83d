"""The nonblocking (i<coll>) and persistent (<coll>_init) forms of every
collective against mpi4py's own blocking collective on the same inputs:
every request algorithm (auto, mpi, the collective's schedule), in place,
zero counts, roots other than 0, repeated starts with the inputs changed
between starts, startall, free before the first start and after completion,
and the errors (a start while active, a nonblocking request started, a
freed request used, a free while active).

Each case builds its buffers once; `refill(k)` writes run k's inputs, and
`expected()` computes run k's answer with mpi4py's collective on copies,
before shancoll's run starts.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, physical_node
from mpi4py import MPI

import shancoll

SCHEDULES = {
    "barrier": "dissemination",
    "bcast": "binomial",
    "allgather": "ring",
    "allgatherv": "ring",
    "alltoall": "pairwise",
    "alltoallv": "pairwise",
    "allreduce": "binomial",
    "gather": "binomial",
    "gatherv": "binomial",
    "scatter": "binomial",
    "scatterv": "binomial",
    "reduce": "binomial",
    "reduce_scatter": "pairwise",
    "reduce_scatter_block": "pairwise",
    "scan": "recursive_doubling",
    "exscan": "recursive_doubling",
}
COLLECTIVES = [
    "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
    "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter",
    "reduce_scatter_block", "scan", "exscan",
]  # fmt: skip
IN_PLACE = {"reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv", "allgather",
            "allgatherv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block",
            "scan", "exscan"}  # fmt: skip
TIMEOUT = 30.0


def algorithms(name):
    return ["auto", "mpi"] + ([SCHEDULES[name]] if name in SCHEDULES else [])


def counts_of(p, n):
    """Irregular counts with zeros for n <= 1: rank q gets max(0, n + q - 1)."""
    return [max(0, n + q - 1) for q in range(p)]


class Case:
    """One collective's buffers, shancoll arguments and mpi4py reference."""

    def __init__(self, name, comm, n, root, in_place):
        self.name, self.comm, self.n, self.root, self.in_place = name, comm, n, root, in_place
        p, r = comm.size, comm.rank
        self.p, self.r, self.at_root = p, r, r == root
        self.outs = []  # (array, expected index) pairs compared after each run
        getattr(self, "setup_" + name.replace("reduce_scatter_block", "rsb"))()

    def values(self, k, size, salt=0):
        return (np.arange(size) % 97 + 100 * self.r + 10 * k + salt).astype(np.float64)

    # ---- each collective: buffers, args, reference
    def setup_barrier(self):
        self.args, self.refill, self.expected = (), lambda k: None, lambda: []

    def setup_bcast(self):
        self.buf = np.empty(self.n)

        def refill(k):
            self.buf[:] = self.values(k, self.n) if self.at_root else -1

        def expected():
            ref = self.buf.copy()
            self.comm.Bcast(ref, root=self.root)
            return [ref]

        self.refill, self.expected, self.args = refill, expected, (self.buf, self.root)
        self.outs = [self.buf]

    def reduction(self, send_len, recv_len, in_place_ok):
        self.send = np.empty(send_len)
        self.recv = np.empty(recv_len)
        place = self.in_place and in_place_ok

        def refill(k):
            self.send[:] = self.values(k, send_len)
            self.recv[:] = -1
            if place:
                self.recv[:send_len] = self.send

        self.refill = refill
        return (MPI.IN_PLACE if place else self.send), self.recv

    def setup_reduce(self):
        send, recv = self.reduction(self.n, self.n, self.at_root)

        def expected():
            ref = np.full(self.n, -1.0)
            self.comm.Reduce(self.send, ref, op=MPI.SUM, root=self.root)
            return [ref if self.at_root else self.recv.copy()]

        self.args, self.expected, self.outs = (
            (send, recv, MPI.SUM, self.root),
            expected,
            [self.recv],
        )

    def setup_allreduce(self):
        send, recv = self.reduction(self.n, self.n, True)

        def expected():
            ref = np.empty(self.n)
            self.comm.Allreduce(self.send, ref, op=MPI.SUM)
            return [ref]

        self.args, self.expected, self.outs = (send, recv, MPI.SUM), expected, [self.recv]

    def setup_scan(self, exclusive=False):
        send, recv = self.reduction(self.n, self.n, True)

        def expected():
            ref = np.empty(self.n)
            if exclusive:
                self.comm.Exscan(self.send, ref, op=MPI.SUM)
            else:
                self.comm.Scan(self.send, ref, op=MPI.SUM)
            return [ref]

        self.args, self.expected, self.outs = (send, recv, MPI.SUM), expected, [self.recv]
        self.skip_rank0 = exclusive

    def setup_exscan(self):
        self.setup_scan(exclusive=True)

    def setup_rsb(self):
        send, recv = self.reduction(
            self.n * self.p, self.n * self.p if self.in_place else self.n, True
        )

        def expected():
            ref = np.empty(self.n)
            self.comm.Reduce_scatter_block(self.send, ref, op=MPI.SUM)
            return [ref]

        self.args, self.expected = (send, recv, MPI.SUM), expected
        self.outs = [self.recv[: self.n]]

    def setup_reduce_scatter(self):
        counts = counts_of(self.p, self.n)
        total, mine = sum(counts), counts[self.r]
        send, recv = self.reduction(total, total if self.in_place else mine, True)

        def expected():
            ref = np.empty(mine)
            self.comm.Reduce_scatter(self.send, ref, counts, op=MPI.SUM)
            return [ref]

        self.args, self.expected = (send, recv, counts, MPI.SUM), expected
        self.outs = [self.recv[:mine]]

    def setup_gather(self, vector=False):
        counts = counts_of(self.p, self.n) if vector else [self.n] * self.p
        displs = list(np.cumsum([0] + counts[:-1]))
        mine = counts[self.r]
        self.send = np.empty(mine)
        self.recv = np.empty(sum(counts)) if self.at_root else None
        place = self.in_place and self.at_root

        def refill(k):
            self.send[:] = self.values(k, mine)
            if self.at_root:
                self.recv[:] = -1
                if place:
                    self.recv[displs[self.r] : displs[self.r] + mine] = self.send

        def expected():
            ref = np.full(sum(counts), -1.0) if self.at_root else None
            if vector:
                self.comm.Gatherv(self.send, [ref, counts] if self.at_root else None, self.root)
            else:
                self.comm.Gather(self.send, ref, self.root)
            return [ref] if self.at_root else []

        recv = [self.recv, counts] if vector and self.at_root else self.recv
        self.refill, self.expected = refill, expected
        self.args = (MPI.IN_PLACE if place else self.send, recv, self.root)
        self.outs = [self.recv] if self.at_root else []

    def setup_gatherv(self):
        self.setup_gather(vector=True)

    def setup_scatter(self, vector=False):
        counts = counts_of(self.p, self.n) if vector else [self.n] * self.p
        displs = list(np.cumsum([0] + counts[:-1]))
        mine = counts[self.r]
        self.send = np.empty(sum(counts)) if self.at_root else None
        self.recv = np.empty(mine)
        place = self.in_place and self.at_root

        def refill(k):
            if self.at_root:
                self.send[:] = self.values(k, sum(counts))
            self.recv[:] = -1

        def expected():
            ref = np.empty(mine)
            if vector:
                self.comm.Scatterv([self.send, counts] if self.at_root else None, ref, self.root)
            else:
                self.comm.Scatter(self.send, ref, self.root)
            return (
                [ref] if not place else [self.send[displs[self.r] : displs[self.r] + mine].copy()]
            )

        send = [self.send, counts] if vector and self.at_root else self.send
        self.refill, self.expected = refill, expected
        self.args = (send, MPI.IN_PLACE if place else self.recv, self.root)
        self.outs = [self.send[displs[self.r] : displs[self.r] + mine]] if place else [self.recv]

    def setup_scatterv(self):
        self.setup_scatter(vector=True)

    def setup_allgather(self, vector=False):
        counts = counts_of(self.p, self.n) if vector else [self.n] * self.p
        displs = list(np.cumsum([0] + counts[:-1]))
        mine = counts[self.r]
        self.send = np.empty(mine)
        self.recv = np.empty(sum(counts))

        def refill(k):
            self.send[:] = self.values(k, mine)
            self.recv[:] = -1
            if self.in_place:
                self.recv[displs[self.r] : displs[self.r] + mine] = self.send

        def expected():
            ref = np.empty(sum(counts))
            if vector:
                self.comm.Allgatherv(self.send, [ref, counts])
            else:
                self.comm.Allgather(self.send, ref)
            return [ref]

        recv = [self.recv, counts] if vector else self.recv
        self.refill, self.expected = refill, expected
        self.args = (MPI.IN_PLACE if self.in_place else self.send, recv)
        self.outs = [self.recv]

    def setup_allgatherv(self):
        self.setup_allgather(vector=True)

    def setup_alltoall(self, vector=False):
        p = self.p
        # send counts: to rank q, (n + r + q) % 3 * n // 2 ... ; receive: the transpose
        if vector:
            scounts = [max(0, self.n + (self.r + q) % 3 - 1) for q in range(p)]
            rcounts = [max(0, self.n + (q + self.r) % 3 - 1) for q in range(p)]
        else:
            scounts = rcounts = [self.n] * p
        if self.in_place:
            scounts = rcounts
        self.send = np.empty(sum(scounts))
        self.recv = np.empty(sum(rcounts))

        def refill(k):
            self.send[:] = self.values(k, sum(scounts))
            self.recv[:] = self.send if self.in_place else -1

        def expected():
            ref = np.empty(sum(rcounts))
            if vector:
                self.comm.Alltoallv([self.send, scounts], [ref, rcounts])
            else:
                self.comm.Alltoall(self.send, ref)
            return [ref]

        send = [self.send, scounts] if vector else self.send
        recv = [self.recv, rcounts] if vector else self.recv
        self.refill, self.expected = refill, expected
        self.args = (MPI.IN_PLACE if self.in_place else send, recv)
        self.outs = [self.recv]

    def setup_alltoallv(self):
        self.setup_alltoall(vector=True)

    # ---- running
    def form(self, persistent):
        return getattr(shancoll, f"{self.name}_init" if persistent else f"i{self.name}")

    def check(self, want, what):
        got = [o.copy() for o in self.outs]
        ok = len(got) == len(want)
        ok = ok and all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
        if getattr(self, "skip_rank0", False) and self.r == 0:
            ok = True  # exscan: undefined at rank 0
        assert_all(self.comm, ok, f"{what}: got {got}, want {want}")


def cases():
    sizes = [0, 5] if REDUCED else [0, 1, 5, 300]
    for name in COLLECTIVES:
        for n in sizes if name != "barrier" else [0]:
            for in_place in [False, True] if name in IN_PLACE else [False]:
                yield name, n, in_place


@pytest.mark.parametrize(("name", "n", "in_place"), list(cases()))
def test_nonblocking_matches_mpi4py(comm, name, n, in_place):
    root = comm.size - 1
    case = Case(name, comm, n, root, in_place)
    for algorithm in algorithms(name):
        for k in range(2):
            case.refill(k)
            want = case.expected()
            req = case.form(False)(comm, *case.args, algorithm=algorithm)
            assert not req.persistent
            if k % 2:
                while not req.test():
                    pass
            else:
                req.wait(timeout=TIMEOUT)
            assert req.done
            case.check(want, f"i{name} {algorithm} n={n} in_place={in_place} run {k}")


@pytest.mark.parametrize(("name", "n", "in_place"), list(cases()))
def test_persistent_matches_mpi4py_over_repeated_starts(comm, name, n, in_place):
    root = 1 % comm.size
    case = Case(name, comm, n, root, in_place)
    for algorithm in algorithms(name):
        req = case.form(True)(comm, *case.args, algorithm=algorithm)
        assert req.persistent and req.done  # made, not started
        for k in range(3):  # the inputs change between starts
            case.refill(k)
            want = case.expected()
            req.start()
            req.wait(timeout=TIMEOUT)
            case.check(want, f"{name}_init {algorithm} n={n} in_place={in_place} start {k}")
        req.free()


def test_startall_runs_several_persistent_requests(comm):
    cases_ = [Case(name, comm, 5, 0, False) for name in ("bcast", "allreduce", "alltoall")]
    algos = ["binomial", "mpi", "pairwise"]
    reqs = [c.form(True)(comm, *c.args, algorithm=a) for c, a in zip(cases_, algos, strict=True)]
    for k in range(3):
        wants = []
        for c in cases_:
            c.refill(k)
            wants.append(c.expected())
        shancoll.startall(reqs)
        for r in reversed(reqs):
            r.wait(timeout=TIMEOUT)
        for c, w in zip(cases_, wants, strict=True):
            c.check(w, f"startall {c.name} start {k}")
    for r in reqs:
        r.free()


def test_free_before_the_first_start(comm):
    buf = np.zeros(3)
    for algorithm in ("mpi", "binomial"):
        req = shancoll.bcast_init(comm, buf, 0, algorithm=algorithm)
        req.free()
        with pytest.raises(ValueError, match="already freed"):
            req.start()
    comm.Barrier()


def test_misuse_is_refused_clearly(comm):
    """Rank 0 starts first and misuses its request while the others wait in
    a barrier, so the request is certainly still active (size > 1)."""
    send, recv = np.ones(4), np.zeros(4)
    req = shancoll.allreduce_init(comm, send, recv, algorithm="binomial")
    if comm.rank == 0:
        req.start()
        if comm.size > 1:
            with pytest.raises(ValueError, match="still active"):
                req.start()
            with pytest.raises(ValueError, match="still active"):
                req.free()
    comm.Barrier()
    if comm.rank != 0:
        req.start()
    req.wait(timeout=TIMEOUT)
    assert np.all(recv == comm.size)
    req.free()
    with pytest.raises(ValueError, match="already freed"):
        req.wait()
    nb = shancoll.ibarrier(comm)
    nb.wait(timeout=TIMEOUT)
    with pytest.raises(ValueError, match="only a persistent request is started"):
        nb.start()
    with pytest.raises(ValueError, match=r"algorithm: 'ring' has no request form for bcast"):
        shancoll.ibcast(comm, send, 0, algorithm="ring")
    with pytest.raises(ValueError, match="root"):
        shancoll.bcast_init(comm, send, comm.size, algorithm="mpi")
    comm.Barrier()


def test_virtual_nodes_schedules(comm):
    """The schedules count their messages by (virtual) node."""
    send = np.arange(4.0) + comm.rank
    recv = np.empty(4 * comm.size)
    req = shancoll.iallgather(comm, send, recv, algorithm="ring", ranks_per_node=2)
    req.wait(timeout=TIMEOUT)
    want = np.empty_like(recv)
    comm.Allgather(send, want)
    assert_all(comm, np.array_equal(recv, want), "iallgather ring on virtual nodes")
    stats = shancoll.last_stats(comm)
    assert_all(comm, stats.rounds == comm.size - 1, f"rounds {stats.rounds}")
    node = physical_node(comm)  # virtual nodes of 2 subdivide each physical node
    nodes = comm.allreduce((node.size + 1) // 2 if node.rank == 0 else 0)
    assert_all(comm, stats.node_count == nodes, f"nodes {stats.node_count}, want {nodes}")


def test_persistent_inline_allreduce_on_one_node(comm):
    """shan's persistent small-message engine (lines of the node segment,
    two per rank used in turn): many starts, the input changed each time,
    auto picks it where it fits."""
    one_node = shancoll.topology(comm)["node_count"] == 1 and comm.size > 1
    for n in (0, 1, 7):
        send, recv = np.empty(n), np.empty(n)
        if not one_node:
            with pytest.raises(ValueError, match="'shan' as a request"):
                shancoll.allreduce_init(comm, send, recv, algorithm="shan")
            continue
        req = shancoll.allreduce_init(comm, send, recv, algorithm="shan")
        auto = shancoll.allreduce_init(comm, send, recv)
        assert req.algorithm == "shan" and auto.algorithm == "shan"
        auto.free()
        for k in range(25):  # more than the two lines per rank
            send[:] = np.arange(n) * (comm.rank + 1) + k
            want = np.empty(n)
            comm.Allreduce(send, want, op=MPI.SUM)
            req.start()
            req.wait(timeout=TIMEOUT)
            assert_all(comm, np.array_equal(recv, want), f"shan persistent n={n} start {k}")
        req.free()
    with pytest.raises(ValueError, match="unknown iallreduce algorithm 'shan'"):
        shancoll.iallreduce(comm, np.ones(1), np.ones(1), algorithm="shan")


def compose_affine(a, b):
    """Affine maps x -> m x + c stored as m + c j: 'a, then b'. Associative, not commutative."""
    return (a.real * b.real) + 1j * (b.real * a.imag + b.imag)


def affine_op(inbuf, inoutbuf, datatype):
    """MPI.Op.Create's form of compose_affine: inout = in o inout."""
    a = np.frombuffer(inbuf, dtype=np.complex128)
    b = np.frombuffer(inoutbuf, dtype=np.complex128)
    b[:] = compose_affine(a, b)


def affine_data(n, rank, k):
    rng = np.random.default_rng(99 + 7 * rank + k)
    return (rng.integers(1, 3, size=n) + 1j * rng.integers(-3, 4, size=n)).astype(np.complex128)


REDUCTIONS = ["reduce", "reduce_scatter", "reduce_scatter_block", "scan", "exscan"]


def reduction_call(name, comm, n, send, recv, op, root):
    """(shancoll's arguments, mpi4py's reference into ref) of a reduction of n
    (reduce_scatter: blocks counts_of(p, n))."""
    counts = counts_of(comm.size, n) if name == "reduce_scatter" else None

    def reference(ref):
        if name == "reduce":
            comm.Reduce(send, ref, op=op, root=root)
        elif name == "scan":
            comm.Scan(send, ref, op=op)
        elif name == "exscan":
            comm.Exscan(send, ref, op=op)
        elif name == "reduce_scatter":
            comm.Reduce_scatter(send, ref, counts, op=op)
        else:
            comm.Reduce_scatter_block(send, ref, op=op)

    args = {"reduce": (send, recv, op, root), "reduce_scatter": (send, recv, counts, op)}
    return args.get(name, (send, recv, op)), reference


def reduction_lengths(name, comm, n):
    """(send, recv) lengths: reduce_scatter's blocks are counts_of(p, n)."""
    if name == "reduce_scatter":
        counts = counts_of(comm.size, n)
        return sum(counts), counts[comm.rank]
    return (n * comm.size, n) if name == "reduce_scatter_block" else (n, n)


@pytest.mark.parametrize("name", REDUCTIONS)
def test_schedules_keep_rank_order_for_non_commutative_ops(comm, name):
    """A user op with commute=False: the schedule's result equals mpi4py's,
    nonblocking and persistent (restarted with new inputs), on virtual nodes
    of 1 and 2 ranks, rooted at the last rank and at 1."""
    created = MPI.Op.Create(affine_op, commute=False)
    try:
        for n in (1, 9):
            for root in {comm.size - 1, 1 % comm.size}:
                send_len, recv_len = reduction_lengths(name, comm, n)
                send, recv = np.empty(send_len, np.complex128), np.empty(recv_len, np.complex128)
                args, reference = reduction_call(name, comm, n, send, recv, created, root)
                persistent = getattr(shancoll, f"{name}_init")(
                    comm, *args, algorithm=SCHEDULES[name], ranks_per_node=2
                )
                for k in range(3):
                    send[:] = affine_data(send_len, comm.rank, k)
                    want = np.zeros(recv_len, np.complex128)
                    reference(want)
                    for req in (persistent, None):
                        recv[:] = 0
                        if req is None:
                            req = getattr(shancoll, f"i{name}")(
                                comm, *args, algorithm=SCHEDULES[name], ranks_per_node=1
                            )
                        else:
                            req.start()
                        req.wait(timeout=TIMEOUT)
                        ok = (name == "reduce" and comm.rank != root) or (
                            name == "exscan" and comm.rank == 0
                        )
                        ok = ok or np.array_equal(recv, want)
                        assert_all(comm, ok, f"i{name} n={n} root={root} run {k}: {recv} {want}")
                persistent.free()
    finally:
        created.Free()


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8, np.complex64])
def test_schedules_of_other_dtypes(comm, dtype):
    """Reductions (MAX for the real types, SUM for complex), gather and
    scatter of 1-byte to 8-byte elements against mpi4py."""
    op = MPI.SUM if np.dtype(dtype).kind == "c" else MPI.MAX
    for name in REDUCTIONS:
        send_len, recv_len = reduction_lengths(name, comm, 7)
        send = ((np.arange(send_len) * 5 + 3 * comm.rank) % 50).astype(dtype)
        recv, want = np.zeros(recv_len, dtype), np.zeros(recv_len, dtype)
        args, reference = reduction_call(name, comm, 7, send, recv, op, comm.size - 1)
        reference(want)
        getattr(shancoll, f"i{name}")(comm, *args, algorithm=SCHEDULES[name]).wait(timeout=TIMEOUT)
        skip = (name == "reduce" and comm.rank != comm.size - 1) or (
            name == "exscan" and comm.rank == 0
        )
        assert_all(comm, skip or np.array_equal(recv, want), f"i{name} {dtype}")
    block = (np.arange(3) + 10 * comm.rank).astype(dtype)
    got = np.zeros(3 * comm.size, dtype) if comm.rank == 0 else None
    want = np.zeros(3 * comm.size, dtype) if comm.rank == 0 else None
    comm.Gather(block, want, root=0)
    shancoll.igather(comm, block, got, 0, algorithm="binomial").wait(timeout=TIMEOUT)
    assert_all(comm, comm.rank != 0 or np.array_equal(got, want), f"igather {dtype}")
    part, ref = np.zeros(3, dtype), np.zeros(3, dtype)
    comm.Scatter(want, ref, root=0)
    shancoll.iscatter(comm, want, part, 0, algorithm="binomial").wait(timeout=TIMEOUT)
    assert_all(comm, np.array_equal(part, ref), f"iscatter {dtype}")


REQUEST_FORMS = ["barrier", "bcast", "reduce", "gather", "gatherv", "scatter", "scatterv",
                 "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter",
                 "reduce_scatter_block", "scan", "exscan"]  # fmt: skip


@pytest.mark.parametrize("name", REQUEST_FORMS)
def test_algorithms_lists_the_request_forms(name):
    schedule = [SCHEDULES[name]] if name in SCHEDULES else []
    # the persistent engines' name (persistent only): every request form has one
    persistent = "release_gather" if name in ("barrier", "bcast", "reduce") else "shan"
    want = [*schedule, "mpi", persistent]
    assert shancoll.algorithms(f"i{name}") == want


def test_environment_chooses_the_request_algorithm(comm, monkeypatch):
    """SHANCOLL_I<COLL>_ALGORITHM where the call names none (ialltoall: else
    SHANCOLL_IALLTOALLV_ALGORITHM's); an unknown name is refused naming the
    variable; the call's own name wins."""
    buf = np.arange(4.0)
    monkeypatch.setenv("SHANCOLL_IBCAST_ALGORITHM", "binomial")
    monkeypatch.setenv("SHANCOLL_IALLTOALLV_ALGORITHM", "pairwise")
    monkeypatch.setenv("SHANCOLL_ISCAN_ALGORITHM", "ring")
    shancoll.reload_environment()
    try:
        req = shancoll.ibcast(comm, buf, 0)
        req.wait(timeout=TIMEOUT)
        assert req.algorithm == "binomial"
        req = shancoll.ibcast(comm, buf, 0, algorithm="mpi")
        req.wait(timeout=TIMEOUT)
        assert req.algorithm == "mpi"
        send, recv = np.ones(comm.size), np.zeros(comm.size)
        req = shancoll.ialltoall(comm, send, recv)
        req.wait(timeout=TIMEOUT)
        assert req.algorithm == "pairwise" and np.all(recv == 1)
        with pytest.raises(ValueError, match=r"SHANCOLL_ISCAN_ALGORITHM: 'ring' has no request"):
            shancoll.iscan(comm, send, recv, MPI.SUM)
    finally:
        monkeypatch.undo()
        shancoll.reload_environment()
    comm.Barrier()


def test_a_short_message_is_an_error_not_a_silent_result(comm):
    """Counts that differ between ranks (erroneous in MPI): the last rank
    sends one element fewer to a binomial igather; the rank that receives it
    raises ArgumentError naming the counts once the run is over, and the
    communicator stays usable."""
    if comm.size == 1:
        pytest.skip("needs a peer")
    n = 4 - (comm.rank == comm.size - 1)
    recv = np.zeros(4 * comm.size) if comm.rank == 0 else None
    raised = False
    try:
        shancoll.igather(comm, np.ones(n), recv, 0, algorithm="binomial").wait(timeout=TIMEOUT)
    except ValueError as e:
        raised = "counts: rank" in str(e) and "the ranks' counts differ" in str(e)
    assert_all(comm, comm.allreduce(int(raised)) == 1, f"raised={raised}")
    out = np.zeros(comm.size) if comm.rank == 0 else None
    shancoll.igather(comm, np.ones(1), out, 0, algorithm="binomial").wait(timeout=TIMEOUT)
    assert_all(comm, comm.rank != 0 or np.all(out == 1), "igather after the error")


def gapped_layout(p):
    """Irregular counts (zeros among them) and displacements in reverse rank
    order with a gap of 2 elements before each block."""
    counts = [(3 * q + 1) % 4 for q in range(p)]
    displs, at = [0] * p, 0
    for q in reversed(range(p)):
        displs[q], at = at + 2, at + 2 + counts[q]
    return counts, displs, at


def test_binomial_gatherv_scatterv_gaps_roots_in_place_virtual_nodes(comm):
    """igatherv / iscatterv `binomial`: irregular counts with zeros,
    displacements with gaps in reverse rank order, in place at the root,
    roots other than 0, virtual nodes of 1 and 2 ranks, persistent restarts
    with new contents; against mpi4py's Gatherv / Scatterv."""
    p, r = comm.size, comm.rank
    counts, displs, extent = gapped_layout(p)
    for root in sorted({0, p - 1, p // 2}):
        for in_place in (False, True):
            place = in_place and r == root
            for rpn in (1, 2):
                send = np.empty(counts[r])
                got = np.full(extent, -1.0) if r == root else None
                layout = [got, (counts, displs)] if r == root else None
                gat = shancoll.gatherv_init(comm, MPI.IN_PLACE if place else send, layout, root,
                                            algorithm="binomial", ranks_per_node=rpn)  # fmt: skip
                for k in range(2):
                    send[:] = np.arange(counts[r]) + 100 * r + 10 * k
                    want = np.full(extent, -1.0) if r == root else None
                    comm.Gatherv(send, [want, (counts, displs)] if r == root else None, root)
                    if r == root:
                        got[:] = -1
                        if place:
                            got[displs[r] : displs[r] + counts[r]] = send
                    gat.start()
                    gat.wait(timeout=TIMEOUT)
                    what = f"igatherv root {root} in place {in_place} rpn {rpn} run {k}"
                    assert_all(comm, r != root or np.array_equal(got, want), what)
                gat.free()
                whole = np.arange(extent, dtype=np.float64) + 1000 * root
                part = np.full(counts[r], -1.0)
                source = [whole, (counts, displs)] if r == root else None
                want = np.full(counts[r], -1.0)
                comm.Scatterv(source, want, root)
                req = shancoll.iscatterv(comm, source, MPI.IN_PLACE if place else part, root,
                                         algorithm="binomial", ranks_per_node=rpn)  # fmt: skip
                req.wait(timeout=TIMEOUT)
                what = f"iscatterv root {root} in place {in_place} rpn {rpn}"
                kept = np.array_equal(whole, np.arange(extent) + 1000 * root)
                assert_all(comm, kept if place else np.array_equal(part, want), what)


def test_binomial_gatherv_count_unlike_the_root_s_is_an_error(comm):
    """The last rank sends one element more than the root's count for it
    (erroneous in MPI): it raises naming both counts, the tree completes
    (nothing hangs, no rank reads past its buffer) and the communicator
    stays usable."""
    if comm.size == 1:
        pytest.skip("needs a peer")
    p, r = comm.size, comm.rank
    counts = [2] * p
    mine = np.ones(2 + (r == p - 1))
    out = np.zeros(2 * p) if r == 0 else None
    raised = ""
    try:
        shancoll.igatherv(comm, mine, [out, counts] if r == 0 else None, 0,
                          algorithm="binomial").wait(timeout=TIMEOUT)  # fmt: skip
    except (ValueError, RuntimeError) as e:
        raised = str(e)
    ok = ("recvcounts[" in raised and "the ranks' counts differ" in raised) == (r == p - 1)
    assert_all(comm, ok, f"rank {r}: {raised!r}")
    out = np.zeros(p) if r == 0 else None
    shancoll.igatherv(comm, np.ones(1), [out, [1] * p] if r == 0 else None, 0,
                      algorithm="binomial").wait(timeout=TIMEOUT)  # fmt: skip
    assert_all(comm, r != 0 or np.all(out == 1), "igatherv after the error")


@pytest.mark.parametrize("extra", [1, -1])
def test_binomial_gather_middle_rank_s_count_is_an_error_and_the_comm_survives(comm, extra):
    """A binomial igather whose middle rank (rank 2 at 4 ranks: it forwards
    rank 3's block; the last rank below 4) passes one element more or fewer
    than the others (erroneous in MPI). Whatever it receives or sends is too
    long or too short somewhere: the ranks that see it (the root always)
    raise ValueError naming the counts and a rank, the others finish, no
    rank raises anything else (no MPIError, no timeout), and the
    communicator gives mpi4py's answer to the next igather."""
    if comm.size == 1:
        pytest.skip("needs a peer")
    p, r = comm.size, comm.rank
    offender = 2 if p >= 4 else p - 1
    n = 4 + extra * (r == offender)
    recv = np.zeros(4 * p) if r == 0 else None
    raised = ""
    try:
        shancoll.igather(comm, np.ones(n), recv, 0, algorithm="binomial").wait(timeout=10.0)
    except Exception as e:  # noqa: BLE001 (every kind is checked below)
        raised = f"{'ValueError' if isinstance(e, ValueError) else type(e).__name__}: {e}"
    clear = raised == "" or (
        raised.startswith("ValueError: counts: rank") and "the ranks' counts differ" in raised
    )
    assert_all(comm, clear, f"rank {r}: {raised!r}")
    told = comm.allgather(bool(raised))
    assert_all(comm, told[0], f"the root raised nothing (raised on {told})")
    block = np.arange(3.0) + 10 * r
    got = np.zeros(3 * p) if r == 0 else None
    want = np.zeros(3 * p) if r == 0 else None
    comm.Gather(block, want, 0)
    shancoll.igather(comm, block, got, 0, algorithm="binomial").wait(timeout=TIMEOUT)
    assert_all(comm, r != 0 or np.array_equal(got, want), "igather after the error")


@contextlib.contextmanager
def ranks_0_and_1(comm):
    """The communicator of ranks 0 and 1, freed after; None on the other
    ranks and when there is one rank only."""
    pair = comm.Split(0 if comm.rank < 2 else MPI.UNDEFINED, comm.rank)
    try:
        yield pair if pair != MPI.COMM_NULL and pair.size == 2 else None
    finally:
        if pair != MPI.COMM_NULL:
            pair.Free()


def test_a_request_dropped_in_flight_keeps_its_buffers(comm):
    """A nonblocking collective dropped before it completes (its wait timed
    out, say): the MPI library completes it on its own and writes into its
    buffers later, so the request's buffers stay referenced for the rest of
    the process instead of going back to NumPy (whose reuse of them corrupted
    the heap); a request dropped once complete lets them go."""
    import sys

    with ranks_0_and_1(comm) as pair:
        if pair is None:
            return
        done = np.zeros(64, np.uint8)
        base = sys.getrefcount(done)
        shancoll.ibcast(pair, done, root=0, algorithm="mpi").wait(timeout=30)
        assert sys.getrefcount(done) == base, "a completed request kept its buffer"
        buf = np.zeros(1 << 16, np.uint8)
        base = sys.getrefcount(buf)
        if pair.rank == 0:
            req = shancoll.ibcast(pair, buf, root=1, algorithm="mpi")
            with pytest.raises(TimeoutError):
                req.wait(timeout=0.05)  # rank 1 joins only after the next message
            del req
            held = sys.getrefcount(buf) - base
            pair.send("dropped", dest=1)
            pair.recv(source=1)  # progresses MPI: the freed bcast lands in buf
            assert held == 1, f"the dropped request's buffer: {held} references kept"
            assert (buf == 7).all(), "the bcast did not land in the kept buffer"
        else:
            pair.recv(source=0)
            buf[:] = 7
            shancoll.ibcast(pair, buf, root=1, algorithm="mpi").wait(timeout=30)
            pair.send("sent", dest=0)


def test_a_run_left_in_flight_keeps_its_scratch(comm):
    """A split-phase run dropped before it completes (here: its wait timed
    out, the other rank not yet in the call) leaves messages in flight: its
    receives are cancelled, its sends freed, and the engine's own scratch,
    into which a receive matched before the cancel may still be written and
    from which a send may still be read, is kept for the rest of the process
    instead of freed; the late rank's run completes, and the next calls are
    right."""
    with ranks_0_and_1(comm) as pair:
        if pair is None:
            return
        starts = {
            "iallreduce dissemination": lambda buf: shancoll.iallreduce(
                pair, MPI.IN_PLACE, buf, MPI.SUM, "dissemination"),
            "ialltoall pairwise": lambda buf: shancoll.ialltoall(
                pair, buf.copy(), buf, "pairwise"),
        }  # fmt: skip
        for what, start in starts.items():
            buf = np.ones(64, np.float64)
            start(buf).wait(timeout=30)  # the communicator's set-up (collective) done
            if pair.rank == 0:
                before = shancoll._core._kept_for_freed_requests()
                req = start(buf)
                with pytest.raises(TimeoutError):
                    req.wait(timeout=0.05)  # rank 1 starts only after the next message
                del req
                kept = shancoll._core._kept_for_freed_requests() - before
                pair.send("dropped", dest=1)
                assert kept == 1, f"{what}: {kept} scratch buffers kept"
            else:
                pair.recv(source=0)
                start(buf).wait(timeout=30)  # rank 0's freed sends reach it
            ok = np.arange(8.0)
            out = np.empty(8)
            shancoll.allreduce(pair, ok, out, MPI.SUM, timeout=30)
            assert (out == 2 * ok).all(), f"{what}: the call after the dropped run"
