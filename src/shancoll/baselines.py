"""The MPI libraries' native collectives as benchmark series (placeholder
until mpienv lands).

The ``mpienv`` branch lists, per library and collective, the default and
every forced algorithm (``MPIR_CVAR_*``, ``coll_tuned_*``, ``I_MPI_ADJUST_*``);
this placeholder gives only the library's default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["COLLECTIVES", "Series", "native_series"]

COLLECTIVES = ("allgatherv", "allgather", "allreduce", "bcast", "reduce")


@dataclass(frozen=True)
class Series:
    """One native series: a name and the environment that selects it."""

    name: str
    env: dict[str, str] = field(default_factory=dict, hash=False)


def native_series(lib: str, coll: str) -> list[Series]:
    if coll not in COLLECTIVES:
        raise ValueError(f"coll: unknown collective {coll!r} (valid: {', '.join(COLLECTIVES)})")
    return [Series("default", {})]
