"""The persistent inline engines of bcast, reduce and allgather(v) (at most 56
bytes per rank on one node of several ranks; coll/persistent_inline.h)
against mpi4py's own collectives: every root, the inputs changed between
starts, many starts in a row (more than the lines per rank, so that lines
are reused), ranks skewed (one rank sleeping between starts, so that a
rank that needs nothing from the others runs ahead: the rooted engines'
slot reuse rule), in place, virtual nodes (where `auto` must not choose
them and their name is refused), and a missing rank (TimeoutError within
the request's timeout, the run left active for a later wait).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from _mpi_util import REDUCED, assert_all, rule_table
from mpi4py import MPI

import shancoll

TIMEOUT = 30.0
INLINE = {"bcast": "release_gather", "reduce": "release_gather", "allgather": "shan",
          "allgatherv": "shan"}  # fmt: skip
STARTS = 12 if REDUCED else 40  # more than the rooted engines' 8 lines per rank


def one_node(comm, **kw) -> bool:
    return shancoll.topology(comm, **kw)["node_count"] == 1 and comm.size > 1


class Case:
    """One persistent call: its request, run k's inputs, and mpi4py's answer."""

    def __init__(self, comm, name, n, root=0, in_place=False, **kw):
        self.comm, self.name, self.n, self.root, self.in_place = comm, name, n, root, in_place
        p, r = comm.size, comm.rank
        at_root = r == root
        if name == "bcast":
            self.buf = np.zeros(n)
            self.req = shancoll.bcast_init(comm, self.buf, root, **kw)
        elif name == "reduce":
            self.send, self.recv = np.zeros(n, np.int64), np.zeros(n, np.int64)
            send = MPI.IN_PLACE if in_place and at_root else self.send
            self.req = shancoll.reduce_init(comm, send, self.recv, MPI.SUM, root, **kw)
        elif name == "allgather":
            self.send, self.recv = np.zeros(n), np.zeros(n * p)
            send = MPI.IN_PLACE if in_place else self.send
            self.req = shancoll.allgather_init(comm, send, self.recv, **kw)
        else:  # allgatherv: rank q has n - q elements (at least 0)
            self.counts = [max(0, n - q) for q in range(p)]
            self.displs = list(np.cumsum([0] + self.counts[:-1]))
            self.send, self.recv = np.zeros(self.counts[r]), np.zeros(sum(self.counts))
            send = MPI.IN_PLACE if in_place else self.send
            spec = [self.recv, self.counts]  # packed: displs are the counts' prefix sums
            self.req = shancoll.allgatherv_init(comm, send, spec, **kw)

    def data(self, k, rank=None):
        rank = self.comm.rank if rank is None else rank
        return np.arange(self.n, dtype=float) * (rank + 1) + 10 * k + rank

    def refill(self, k):
        """Run k's inputs, written after run k - 1 completed (MPI's rule)."""
        r = self.comm.rank
        if self.name == "bcast":
            if r == self.root:
                self.buf[:] = self.data(k)
            else:
                self.buf[:] = -1
        elif self.name == "reduce":
            mine = self.data(k).astype(np.int64)
            if self.in_place and r == self.root:
                self.recv[:] = mine
            else:
                self.send[:] = mine
                self.recv[:] = -1
        elif self.name == "allgather":
            if self.in_place:
                self.recv[:] = -1
                self.recv[r * self.n : (r + 1) * self.n] = self.data(k)
            else:
                self.send[:] = self.data(k)
                self.recv[:] = -1
        else:
            mine = np.arange(self.counts[r]) + 10 * k + r
            if self.in_place:
                self.recv[:] = -1
                self.recv[self.displs[r] : self.displs[r] + self.counts[r]] = mine
            else:
                self.send[:] = mine
                self.recv[:] = -1

    def expected(self, k):
        """Run k's answer on this rank (None: nothing to check), computed locally."""
        p, r = self.comm.size, self.comm.rank
        if self.name == "bcast":
            return self.data(k, self.root)
        if self.name == "reduce":
            if r != self.root:
                return None
            return sum(self.data(k, q).astype(np.int64) for q in range(p))
        if self.name == "allgather":
            return np.concatenate([self.data(k, q) for q in range(p)])
        return np.concatenate([np.arange(self.counts[q]) + 10 * k + q for q in range(p)])

    def result(self):
        return self.buf if self.name == "bcast" else self.recv

    def reference(self, k):
        """Run k's answer from mpi4py's own collective on run k's inputs."""
        c, r = self.comm, self.comm.rank
        if self.name == "bcast":
            out = self.data(k) if r == self.root else np.zeros(self.n)
            c.Bcast(out, self.root)
            return out
        if self.name == "reduce":
            out = np.zeros(self.n, np.int64) if r == self.root else None
            c.Reduce(self.data(k).astype(np.int64), out, MPI.SUM, self.root)
            return out
        if self.name == "allgather":
            out = np.zeros(self.n * c.size)
            c.Allgather(self.data(k), out)
            return out
        out = np.zeros(sum(self.counts))
        c.Allgatherv(np.arange(self.counts[r], dtype=float) + 10 * k + r,
                     [out, self.counts])  # fmt: skip
        return out


def cases(comm):
    """(name, n, root, in_place): every root, sizes up to 56 bytes per rank."""
    sizes = (0, 1, 7) if not REDUCED else (1, 7)
    for name in ("bcast", "reduce"):
        for root in range(comm.size):
            for n in sizes:
                yield name, n, root, False
        yield "reduce", 3, comm.size - 1, True
    for name in ("allgather", "allgatherv"):
        for n in sizes:
            for in_place in (False, True):
                yield name, n, 0, in_place


def test_inline_engines_against_mpi4py(comm):
    """auto without <coll>_init rows (the built-in rule) runs the inline engine
    on one node; every run equals mpi4py's."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    for name, n, root, in_place in cases(comm):
        with rule_table("builtin"):  # not this machine's table: its rows may say mpi
            case = Case(comm, name, n, root, in_place)
        what = f"{name} n={n} root={root} in_place={in_place}"
        assert_all(comm, case.req.algorithm == INLINE[name], f"{what}: {case.req.algorithm}")
        for k in range(STARTS if n == 7 else 3):
            case.refill(k)
            want = case.reference(k)
            case.req.start()
            case.req.wait(timeout=TIMEOUT)
            got = case.result()
            ok = want is None or np.array_equal(got, want)
            assert_all(comm, ok, f"{what} start {k}: {got} != {want}")
        case.req.free()


@pytest.mark.parametrize("name", ["bcast", "reduce", "allgather", "allgatherv"])
def test_inline_engines_with_ranks_skewed(comm, name):
    """Many starts in a row, one rank sleeping before each start: the ranks
    that need nothing from it run ahead up to their lines (the rooted
    engines' rule), and every run is still right (checked locally, gathered
    at the end)."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    for root, sleeper in {(0, comm.size - 1), (comm.size - 1, comm.size - 1), (0, 0)}:
        with rule_table("builtin"):  # the inline engines by the built-in rule
            case = Case(comm, name, 7, root)
        assert_all(comm, case.req.algorithm == INLINE[name], f"{name}: {case.req.algorithm}")
        bad = []
        for k in range(3 * STARTS):
            if comm.rank == sleeper:
                time.sleep(0.002)
            case.refill(k)
            case.req.start()
            case.req.wait(timeout=TIMEOUT)
            want = case.expected(k)
            if want is not None and not np.array_equal(case.result(), want):
                bad.append(k)
        case.req.free()
        assert_all(comm, not bad, f"{name} root={root}, rank {sleeper} late: wrong runs {bad}")


@pytest.mark.parametrize("name", ["bcast", "reduce", "allgather"])
def test_inline_engines_not_on_virtual_nodes(comm, name):
    """Several nodes (virtual ones of one rank): auto runs mpi, the inline
    name is refused; a nonblocking request refuses it too."""
    case = Case(comm, name, 2, ranks_per_node=1)
    assert_all(comm, case.req.algorithm == "mpi", f"{name} on virtual nodes: {case.req.algorithm}")
    case.req.free()
    with pytest.raises(ValueError, match=f"'{INLINE[name]}' as a request is the persistent {name}"):
        Case(comm, name, 2, algorithm=INLINE[name], ranks_per_node=1)
    buf = np.zeros(1)
    with pytest.raises(ValueError, match="as a request is the persistent bcast"):
        shancoll.ibcast(comm, buf, 0, algorithm="release_gather")


def test_inline_reduce_leaves_user_ops_and_big_messages(comm):
    """Where the engine does not fit (more than 56 bytes, a user op), auto
    runs mpi and the name is refused."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    big, out = np.ones(8), np.zeros(8)
    with rule_table("builtin"):  # no <coll>_init rows: the inline engines alone
        req = shancoll.reduce_init(comm, big, out, MPI.SUM, 0)
        assert_all(comm, req.algorithm == "mpi", f"reduce of 64 bytes: {req.algorithm}")
        req.free()
        req = shancoll.bcast_init(comm, big, 0)
        assert_all(comm, req.algorithm == "mpi", f"bcast of 64 bytes: {req.algorithm}")
        req.free()
    op = MPI.Op.Create(lambda a, b, t: None, commute=True)
    try:
        small = np.ones(2)
        req = shancoll.reduce_init(comm, small, np.zeros(2), op, 0)
        assert_all(comm, req.algorithm == "mpi", f"reduce with a user op: {req.algorithm}")
        req.free()
        with pytest.raises(ValueError, match="'release_gather' as a request"):
            shancoll.reduce_init(comm, small, np.zeros(2), op, 0, algorithm="release_gather")
    finally:
        op.Free()


def test_inline_counts_that_differ_are_refused(comm):
    """A reader whose count differs from the writer's line: ArgumentError naming
    the count (erroneous in MPI), not a silent wrong answer."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    buf = np.zeros(3 if comm.rank == 0 else 2)
    req = shancoll.bcast_init(comm, buf, 0, algorithm="release_gather", timeout=TIMEOUT)
    error = None
    try:  # a reader may see the root's line at its start already
        req.start()
        req.wait(timeout=TIMEOUT)
    except ValueError as e:
        error = str(e)
    if comm.rank == 0:
        assert_all(comm, error is None, f"root: {error}")
        req.free()
    else:
        assert_all(comm, error is not None and "count: rank 0 contributes 24 bytes" in error,
                   f"reader: {error}")  # fmt: skip


def _missing_rank(comm, name, root, absent, waiters):
    """Every rank makes the request and runs it once; then `absent` does not
    start: the `waiters` time out within the timeout, the run stays active,
    and once the absent rank starts, a second wait completes it."""
    c = comm.Dup()
    case = Case(c, name, 2, root, timeout=TIMEOUT)
    case.refill(0)
    case.req.start()
    case.req.wait(timeout=TIMEOUT)
    outcome = None
    if c.rank != absent:
        case.refill(1)
        case.req.start()
        began = time.monotonic()
        try:
            case.req.wait(timeout=0.3)
            outcome = "finished"
        except shancoll.CollectiveTimeout as e:
            took = time.monotonic() - began
            outcome = "timeout" if took < 5 and "wait" in str(e) else f"late {took:.1f}s: {e}"
        except Exception as e:
            outcome = f"{type(e).__name__}: {e}"
    outcomes = c.allgather(outcome)
    if c.rank == absent:
        case.refill(1)
        case.req.start()
    case.req.wait(timeout=TIMEOUT)  # the late start completes the run everywhere
    want = case.expected(1)
    ok = want is None or np.array_equal(case.result(), want)
    case.req.free()
    bad = {r: o for r, o in enumerate(outcomes) if r in waiters and o != "timeout"}
    assert_all(c, not bad and ok, f"{name} root={root}, rank {absent} missing: {bad}, ok={ok}")
    c.Free()


def test_inline_missing_rank_times_out(comm):
    """A rank missing from a run: the ranks that need its line raise
    CollectiveTimeout within the request's timeout; nothing hangs."""
    if not one_node(comm):
        pytest.skip("one node of several ranks only")
    last = comm.size - 1
    everyone_but = [r for r in range(comm.size) if r != last]
    _missing_rank(comm, "allgather", 0, last, everyone_but)
    _missing_rank(comm, "bcast", last, last, everyone_but)  # the root: every reader waits
    _missing_rank(comm, "reduce", 0, last, [0])  # a non-root: the root waits
