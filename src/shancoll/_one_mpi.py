"""One MPI library per process: shancoll's extension and mpi4py must use the same.

A build of shancoll linked against another MPI library than the one mpi4py
loads (say Debian's libmpich.so.12 beside the PyPI wheel's libmpi.so.12)
puts two MPI libraries in the process, and the first collective dies inside
the one that was never initialised ("Attempting to use an MPI routine ...
before initializing"). This check turns that into an ImportError naming both
libraries and the command that rebuilds shancoll against mpi4py's.
"""

from __future__ import annotations

import os
import re
import sys

# libmpi.so.12, libmpich.so.12, libmpi.so.40: the MPI library itself, not its
# Fortran bindings (libmpifort, libmpi_mpifh) or helpers.
_MPI_LIBRARY = re.compile(r"lib(mpi|mpich)\.so(\.\d+)*")


def mapped_mpi_libraries() -> list[str]:
    """The MPI library files mapped into this process, in mapping order (Linux)."""
    found: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if path.startswith("/") and _MPI_LIBRARY.fullmatch(os.path.basename(path)):
                    real = os.path.realpath(path)
                    if real not in found:
                        found.append(real)
    except OSError:  # not Linux: nothing to compare
        return []
    return found


def check(mpi4py_libraries: list[str]) -> None:
    """ImportError when shancoll's extension brought another MPI library in
    than the ones mapped (by mpi4py) before it was imported."""
    extra = [p for p in mapped_mpi_libraries() if p not in mpi4py_libraries]
    if not mpi4py_libraries or not extra:
        return
    prefix = os.path.dirname(os.path.dirname(mpi4py_libraries[0]))
    raise ImportError(
        "shancoll: two MPI libraries in one process: mpi4py uses "
        f"{mpi4py_libraries[0]}, shancoll's extension was built against {extra[0]}. "
        "Rebuild shancoll against mpi4py's MPI library:\n"
        f'    CMAKE_ARGS="-DMPI_HOME={prefix}" {sys.executable} -m pip install '
        "--force-reinstall --no-deps <shancoll source directory or sdist>"
    )


# Imported first by the package: mpi4py's library, then the extension's.
from mpi4py import MPI  # noqa: E402, F401

_mpi4py_libraries = mapped_mpi_libraries()
from . import _core  # noqa: E402, F401

check(_mpi4py_libraries)
