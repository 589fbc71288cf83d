"""The rule table behind ``algorithm="auto"`` (read by the C++ core).

A table is measured data (``python -m shancoll.bench.sweep rules``): per
collective, message size range, rank and node counts, the fastest algorithm.
The core reads it, so the C API and the PMPI library choose alike; which
table is active: :func:`set_rules` (this process), else ``$SHANCOLL_RULES``
(read once, see :func:`reload_environment`),
else the table shipped in the package (``shancoll/rules/default.tsv``), else
the built-in rules. A rule that names an algorithm unable to run the call
(unknown, a non-commutative op, rank-varying floating point where the caller
asked for the same result everywhere) is passed over for the built-in rule.
The format is described in ``src/cpp/shancoll/rules.h`` and
``benchmarks/README.md``.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import _core

__all__ = ["DEFAULT_RULES", "reload_environment", "rules_path", "set_rules"]

DEFAULT_RULES = Path(__file__).resolve().parent / "rules" / "default.tsv"


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


if DEFAULT_RULES.is_file():
    _core.set_default_rules(str(DEFAULT_RULES))
