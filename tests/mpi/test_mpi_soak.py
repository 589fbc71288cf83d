"""The short soak (benchmarks/soak.py): mixed collectives with every
algorithm, communicators created and freed, results checked against mpi4py,
no file descriptor or /dev/shm entry left behind, RSS within its allowance."""

from __future__ import annotations

import sys
from pathlib import Path

from _mpi_util import REDUCED, assert_all

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import soak  # noqa: E402


def test_short_soak(comm):
    calls = 200 if REDUCED else 800
    wrong, before, after = soak.soak(comm, calls, seed=7)
    assert_all(comm, wrong == 0, f"{wrong} wrong results in {calls} calls")
    grew = soak.growth(before, after, calls)
    assert_all(comm, not grew, f"resources grew: {grew}")
