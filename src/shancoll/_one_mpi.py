"""One MPI library per process: shancoll's extension and mpi4py must use the same.

A build of shancoll linked against another MPI library than the one mpi4py
loads (say Debian's libmpich.so.12 beside the PyPI wheel's libmpi.so.12)
puts two MPI libraries in the process, and the first collective dies inside
the one that was never initialised ("Attempting to use an MPI routine ...
before initializing"). This check turns that into an ImportError naming both
libraries and the command that rebuilds shancoll against mpi4py's.
"""

from __future__ import annotations

import sys

from ._mpi_library import mapped_mpi_libraries


def check(mpi4py_libraries: list[str]) -> None:
    """ImportError when shancoll's extension brought another MPI library in
    than the ones mapped (by mpi4py) before it was imported."""
    extra = [p for p in mapped_mpi_libraries() if p not in mpi4py_libraries]
    if not mpi4py_libraries or not extra:
        return
    raise ImportError(
        "shancoll: two MPI libraries in one process: mpi4py uses "
        f"{mpi4py_libraries[0]}, shancoll's extension was built against {extra[0]}. "
        "Rebuild shancoll; its build follows the MPI library of this environment's "
        "mpi4py (MPICC=/path/to/mpicc names another):\n"
        f"    {sys.executable} -m pip install --force-reinstall --no-deps --no-cache-dir "
        "<shancoll source directory or sdist>"
    )


# Imported first by the package: mpi4py's library, then the extension's.
from mpi4py import MPI  # noqa: E402, F401

_mpi4py_libraries = mapped_mpi_libraries()
from . import _core  # noqa: E402, F401

check(_mpi4py_libraries)
