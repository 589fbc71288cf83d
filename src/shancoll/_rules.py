"""The rule table behind ``algorithm="auto"`` (read by the C++ core).

A table is measured data (``python -m shancoll.bench.sweep rules``): per
collective, message size range, rank and node counts, the fastest algorithm
and its options, on one kind of machine (its ``match`` lines: CPU model,
family and model, cache sizes, MPI library). The core reads it, so the C
API and the PMPI library choose alike; which table is active: :func:`set_rules` (this process), else
``$SHANCOLL_RULES`` (read once, see :func:`reload_environment`), else the
first table measured on this machine among the user's
(``$XDG_CACHE_HOME/shancoll/rules`` or ``~/.cache/shancoll/rules``) and the
package's (``shancoll/rules/``), else the package's conservative table
(choices that won on every machine measured), else the built-in rules.
:func:`rules_info` says which and why. A rule that names an algorithm unable to run the call
(unknown, a non-commutative op, rank-varying floating point where the caller
asked for the same result everywhere) is passed over for the built-in rule.
The format is described in ``src/cpp/shancoll/rules.h`` and
``benchmarks/README.md``.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import _core

__all__ = ["PACKAGE_RULES", "reload_environment", "rules_info", "rules_path", "set_rules",
           "user_rules_dir"]  # fmt: skip

PACKAGE_RULES = Path(__file__).resolve().parent / "rules"


def user_rules_dir() -> Path:
    """Where this user's calibrated tables live (searched before the package's)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "shancoll" / "rules"


def set_rules(path: str | os.PathLike | None) -> None:
    """Makes ``path`` the rule table of ``auto`` in this process (``None``: back to
    ``$SHANCOLL_RULES``, else the shipped table; ``"builtin"``: no table, the
    built-in rules only). Every rank must use the same one.

    Raises ValueError (naming ``rules``, the file and the line) for a file that
    cannot be read or parsed.
    """
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: a file path or None, got {type(path).__name__}")
    _core.set_rules("" if path is None else os.fspath(path))


def reload_environment() -> None:
    """Reads the ``SHANCOLL_*`` environment variables again.

    They are read once, at the first collective of the process (as MPI
    libraries read their control variables at start-up), because reading
    them on every call costs a measurable part of a small collective. Call
    this on every rank, between collectives, after changing ``os.environ``.
    """
    _core.reload_environment()


def rules_path() -> str:
    """The file of the active rule table ('' when only the built-in rules apply)."""
    return _core.rules_path()


def rules_info() -> dict[str, str | int | None]:
    """Which rule table ``auto`` uses in this process, and why (local; MPI initialised).

    Returns ``{"path": file ('' for none), "how": why this one (set_rules,
    SHANCOLL_RULES, the table measured on this machine, or the conservative
    table and how to measure one), "machine": this process's fingerprint as
    a table's match lines compare it, and its parts apart: "cpu" (the model
    name), "cpuid" ("family 25 model 1"), "caches" ("L1d 32K L2 512K L3
    32M", cpu0's in sysfs) and "mpi" (the library's version line); "network":
    the network module between hosts that a row's hosts field may name
    ("2@ucx": MPICH's netmod, ``$MPIR_CVAR_CH4_NETMOD`` else its build's
    first; "ofi" for Intel MPI; "unknown" elsewhere); and
    "stream_copy_from": the bytes from which shancoll's local copies use
    streaming stores (``SHANCOLL_STREAM_COPY``, else half the largest cache;
    None: never); "ring_stores": how ring writers store their chunks
    (``SHANCOLL_RING_STORES``: "auto", by their own timings, "plain" or
    "streamed")}``; a part the machine cannot tell is "unknown".
    ``python -m shancoll.bench.tune`` measures a table for this machine.
    """
    return dict(_core.rules_info())


_core.set_default_rules(f"{user_rules_dir()}:{PACKAGE_RULES}")
