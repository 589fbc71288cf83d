"""Top-level test configuration.

``tests/mpi/`` holds the MPI suites: they run under ``mpiexec -n N python -m
pytest tests/mpi`` (``tests/test_mpi_suites.py`` launches them at several
rank counts). A plain ``pytest tests`` must not also import and run them
in-process, so they are collected only when the process runs under an MPI
launcher, when tests/mpi (or a file in it) is named on the command line, or
when SHANCOLL_COLLECT_MPI_TESTS=1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_LAUNCHER_VARS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MPI_LOCALRANKID")


def under_mpi_launcher() -> bool:
    return os.environ.get("SHANCOLL_COLLECT_MPI_TESTS") == "1" or any(
        v in os.environ for v in _LAUNCHER_VARS
    )


def _named_explicitly(config) -> bool:
    mpi_dir = HERE / "mpi"
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == mpi_dir or mpi_dir in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    if collection_path == HERE / "mpi" and not (under_mpi_launcher() or _named_explicitly(config)):
        return True
    return None


@pytest.fixture(autouse=True)
def _environment_read_again_after_test():
    """shancoll reads SHANCOLL_* once; a test that changed os.environ (and
    monkeypatch's undo, which runs before this teardown) must not leak into
    the next test."""
    yield
    if "shancoll" in sys.modules:
        sys.modules["shancoll"].reload_environment()
