"""What a collective does when it fails during communication.

A timeout or an MPI error inside a collective leaves the ranks in different
calls, with messages in flight. ``"raise"`` (the default) raises
:class:`CollectiveTimeout` or :class:`MPIError` on the rank that failed, as
any Python error; ``"abort"`` prints one line to stderr (the rank, the
collective, its algorithm and the error, e.g. what it waited for) and calls
``MPI_Abort(MPI_COMM_WORLD, 1)``, so the whole job ends with a non-zero exit
status instead of leaving the other ranks waiting. Bad arguments
(:class:`ArgumentError`) are refused before any communication, leave the
communicator usable and are always raised.

The mode comes from :func:`set_on_error`, else ``$SHANCOLL_ON_ERROR`` (read
once, see :func:`reload_environment`), else ``"raise"``. The C API and the
PMPI library read the same variable.
"""

from __future__ import annotations

from . import _core

__all__ = ["on_error", "set_on_error"]


def set_on_error(mode: str | None) -> None:
    """Sets what a failed collective does in this process: ``"raise"`` or
    ``"abort"`` (``None``: back to ``$SHANCOLL_ON_ERROR``, else ``"raise"``).

    Raises ValueError (:class:`ArgumentError`, naming ``on_error``) for any
    other value.
    """
    if mode is None:
        _core.set_on_error("")
    elif isinstance(mode, str) and mode:
        _core.set_on_error(mode)  # ArgumentError for anything but raise and abort
    else:
        raise _core.ArgumentError(
            f"on_error: expected 'raise', 'abort' or None (SHANCOLL_ON_ERROR), got {mode!r}"
        )


def on_error() -> str:
    """The active mode, ``"raise"`` or ``"abort"``.

    Raises ValueError (:class:`ArgumentError`, naming ``SHANCOLL_ON_ERROR``)
    when that variable holds anything else and :func:`set_on_error` has not
    chosen.
    """
    return _core.on_error()
