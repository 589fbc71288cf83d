"""Small messages back to back: the inlined paths (data in its flag's cache
line, a few lines per rank reused in turn) must never let a writer overwrite a
line a reader has not read yet, nor let a reader take a later call's data.

Every call carries data of its own (the call's index), ranks lag in turn (a
short sleep every few calls, so writers run ahead of readers as far as the
protocol lets them), in runs of one size (a change of size or root may
drain the node: within a run nothing does) that cross the inline limit (56
bytes), so the paths alternate on one layout. Results
are checked locally against their closed form and made collective once.
"""

from __future__ import annotations

import time

import numpy as np
from _mpi_util import REDUCED, assert_all, physical_node, raises_all, run_all
from mpi4py import MPI

import shancoll

CALLS = 120 if REDUCED else 400
# int64 elements: 8 and 56 bytes in a flag's line, 64 and 312 B in the lines
# after it too (release_gather), 320 B, 24 B, 2.4 KiB
COUNTS = [1, 7, 8, 39, 40, 3, 300]
RUN = 20  # calls of one size in a row


def lag(comm, i):
    """Rank i mod size sleeps now and then, so the others run ahead of it."""
    if i % 7 == 0 and comm.rank == (i // 7) % comm.size:
        time.sleep(0.0002)


def back_to_back(comm, call):
    failures: list[str] = []

    def body():
        for i in range(CALLS):
            n = COUNTS[i // RUN % len(COUNTS)]
            lag(comm, i)
            problem = call(i, n)
            if problem:
                failures.append(f"call {i} n={n}: {problem}")

    run_all(comm, body)
    assert_all(comm, not failures, f"{failures[:5]}")


def allreduce_case(comm, algorithm):
    def call(i, n):
        out = np.zeros(n, np.int64)
        send = np.arange(n, dtype=np.int64) + i * (comm.rank + 1)
        shancoll.allreduce(comm, send, out, MPI.SUM, algorithm)
        want = np.arange(n, dtype=np.int64) * comm.size + i * comm.size * (comm.size + 1) // 2
        return None if np.array_equal(out, want) else f"got {out[:3]} want {want[:3]}"

    back_to_back(comm, call)


def test_shan_allreduce(comm):
    allreduce_case(comm, "shan")


def test_release_gather_allreduce(comm):
    allreduce_case(comm, "release_gather")


def test_release_gather_bcast_changing_roots(comm):
    def call(i, n):
        root = (i // RUN + i % 2) % comm.size  # runs of one size, root alternating
        buf = np.arange(n, dtype=np.int64) + i if comm.rank == root else np.zeros(n, np.int64)
        shancoll.bcast(comm, buf, root, "release_gather")
        want = np.arange(n, dtype=np.int64) + i
        return None if np.array_equal(buf, want) else f"root {root} got {buf[:3]}"

    back_to_back(comm, call)


def test_release_gather_bcast_one_root(comm):
    def call(i, n):
        buf = np.full(n, i, np.int64) if comm.rank == 0 else np.zeros(n, np.int64)
        shancoll.bcast(comm, buf, 0, "release_gather")
        return None if np.all(buf == i) else f"got {buf[:3]}"

    back_to_back(comm, call)


def test_release_gather_reduce(comm):
    def call(i, n):
        root = comm.size - 1
        out = np.zeros(n, np.int64)
        shancoll.reduce(comm, np.full(n, i + comm.rank, np.int64), out, MPI.SUM, root,
                        "release_gather")  # fmt: skip
        want = i * comm.size + comm.size * (comm.size - 1) // 2
        if comm.rank != root or np.all(out == want):
            return None
        return f"got {out[:3]} want {want}"

    back_to_back(comm, call)


def test_shan_allgatherv(comm):
    def call(i, n):
        counts = [(n + r) % 8 * 7 for r in range(comm.size)]  # 0 to 49 bytes, some empty
        mine = (np.arange(counts[comm.rank]) + i + comm.rank).astype(np.uint8)
        out = np.zeros(sum(counts), np.uint8)
        shancoll.allgatherv(comm, mine, [out, counts], algorithm="shan")
        want = np.concatenate([(np.arange(c) + i + r).astype(np.uint8)
                               for r, c in enumerate(counts)])  # fmt: skip
        return None if np.array_equal(out, want) else f"got {out[:8]} want {want[:8]}"

    back_to_back(comm, call)


def test_shan_allgatherv_blocks_of_several_lines(comm):
    """Blocks of up to 336 bytes travel as up to 6 lines of 56 (a line boundary
    in every place: 55, 56, 57, 112, 113, 335, 336), beyond that the segment
    path; runs of one size cross from one to the other on one layout."""
    sizes = [57, 113, 335, 336, 337, 200, 0, 1000]

    def call(i, n):
        n = sizes[i // RUN % len(sizes)]
        counts = [(n + 55 * r) % 337 if n <= 336 else n + r for r in range(comm.size)]
        mine = (np.arange(counts[comm.rank]) * 3 + i + comm.rank).astype(np.uint8)
        out = np.zeros(sum(counts), np.uint8)
        shancoll.allgatherv(comm, mine, [out, counts], algorithm="shan")
        want = np.concatenate([(np.arange(c) * 3 + i + r).astype(np.uint8)
                               for r, c in enumerate(counts)])  # fmt: skip
        return None if np.array_equal(out, want) else f"got {out[:8]} want {want[:8]}"

    back_to_back(comm, call)


def test_shan_allgatherv_inline_path_up_to_336_bytes(comm):
    """On one node, a block of 336 bytes is one line store per 56 bytes and a
    line transfer per 56 bytes of each other rank (1 + (n - 1) messages), 337
    bytes take the segment path."""
    node = physical_node(comm)
    messages = []
    for n in (336, 337):
        out = np.zeros(n * node.size, np.uint8)
        run_all(node, shancoll.allgatherv, node, np.full(n, node.rank, np.uint8),
                [out, [n] * node.size], algorithm="shan", ranks_per_node=0)  # fmt: skip
        messages.append(shancoll.last_stats(node).intra_messages)
        assert_all(comm, np.array_equal(out, np.repeat(np.arange(node.size), n)), f"n={n}")
    inline = node.size == 1 or messages[0] == node.size
    node.Free()
    assert_all(comm, inline, f"intra messages at 336 and 337 B: {messages}")


def test_shan_allgatherv_counts_that_differ_are_refused_everywhere(comm):
    """On one node every rank reads every flag, and so sees any difference."""
    node = physical_node(comm)
    if node.size > 1:
        counts = [8] * node.size
        if node.rank == 0:
            counts[1] = 300  # rank 0 expects 300 bytes (6 lines) of rank 1, which sends 8
        out = np.zeros(sum(counts), np.uint8)
        raises_all(node, ValueError, shancoll.allgatherv, node,
                   np.zeros(counts[node.rank], np.uint8), [out, counts], algorithm="shan",
                   ranks_per_node=0, match="recvcounts")  # fmt: skip
        out = np.zeros(8 * node.size, np.uint8)  # still usable
        run_all(node, shancoll.allgatherv, node, np.full(8, node.rank, np.uint8),
                [out, [8] * node.size], algorithm="shan", ranks_per_node=0)  # fmt: skip
        ok = np.array_equal(out, np.repeat(np.arange(node.size), 8))
    else:
        ok = True
    node.Free()
    assert_all(comm, ok, "allgatherv after the refused call")


def test_release_gather_calls_of_nothing_in_between(comm):
    """A call of zero bytes from another root works out that root's tree and
    moves no data: the next call like the one before it must not run on it."""

    def call(i, n):
        root = i % comm.size
        other = (root + 1) % comm.size
        buf = np.full(n, i, np.int64) if comm.rank == root else np.zeros(n, np.int64)
        shancoll.bcast(comm, buf, root, "release_gather")
        shancoll.bcast(comm, np.zeros(0, np.int64), other, "release_gather")
        shancoll.reduce(comm, np.zeros(0, np.int64), np.zeros(0, np.int64), MPI.SUM, other,
                        "release_gather")  # fmt: skip
        again = np.full(n, i + 1, np.int64) if comm.rank == root else np.zeros(n, np.int64)
        shancoll.bcast(comm, again, root, "release_gather")
        if not (np.all(buf == i) and np.all(again == i + 1)):
            return f"root {root}: {buf[:2]} then {again[:2]}"
        return None

    back_to_back(comm, call)
