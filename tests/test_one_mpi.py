"""shancoll refuses to import beside another MPI library than mpi4py's, and
says which two it found and how to rebuild (shancoll/_one_mpi.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _ci import missing

SYSTEM_MPICH = Path("/usr/lib/x86_64-linux-gnu/libmpich.so.12")

SCRIPT = f"""
import ctypes
from mpi4py import MPI
import shancoll
from shancoll import _one_mpi
mine = _one_mpi.mapped_mpi_libraries()
print("one library:", len(mine))
ctypes.CDLL("{SYSTEM_MPICH}")  # as an extension linked against it would
try:
    _one_mpi.check(mine)
    print("no error")
except ImportError as e:
    print(e)
"""


def test_a_second_mpi_library_is_an_import_error():
    if not SYSTEM_MPICH.exists():
        missing("Debian's libmpich (a second MPI library) is not installed: make setup as root")
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    out = run.stdout + run.stderr
    assert "one library: 1" in out, out
    assert "two MPI libraries in one process" in out, out
    assert str(SYSTEM_MPICH.resolve()) in out in out, out
    assert f"{sys.executable} -m pip install --force-reinstall" in out, out
