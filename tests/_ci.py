"""What a test does when something it needs is missing: skip locally, fail in CI.

CI (CI=true, `bash .ci/run`) runs `make test` on a machine that `make setup`
prepared completely (as root: Debian's MPICH, gfortran, SimGrid, the Open MPI
and Intel MPI envs), so there a missing piece is a broken setup, never a
feature left untested.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def missing(why: str) -> None:
    """Skips the test (locally) or fails it (in CI), saying ``why``."""
    if in_ci():
        pytest.fail(f"CI: {why}", pytrace=False)
    pytest.skip(why)
