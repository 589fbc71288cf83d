"""MPI environments for the sweep (placeholder until mpienv lands).

The ``mpienv`` branch provides per-MPI-library venvs (MPICH, Open MPI,
Intel MPI) behind this interface; this placeholder knows only ``default``:
the MPI library of the running Python and the ``mpiexec`` next to it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

__all__ = ["MpiEnv", "available", "ensure"]

LIBRARIES = ("mpich", "openmpi", "impi", "default")


@dataclass
class MpiEnv:
    """How to launch Python ranks with one MPI library."""

    name: str
    version: str
    python: str
    mpiexec: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def command(self, nranks: int, argv: list[str]) -> list[str]:
        """``mpiexec ... -n nranks argv...``; argv usually starts with :attr:`python`."""
        return [*self.mpiexec, "-n", str(nranks), *argv]


def available() -> list[str]:
    return ["default"]


def ensure(lib: str) -> MpiEnv:
    if lib not in LIBRARIES:
        raise ValueError(f"lib: unknown MPI library {lib!r} (valid: {', '.join(LIBRARIES)})")
    if lib != "default":
        raise ValueError(f"lib: {lib!r} is not installed here (available: default)")
    from .sweep import default_mpiexec

    return MpiEnv("default", "", sys.executable, [default_mpiexec()])
