"""`pip install` as users do it builds shancoll against mpi4py's MPI library (issue 21).

Each scenario runs in a fresh venv (pip's cache keeps the downloads and the
mpi4py built from source), with a wrong MPI compiler wrapper first on PATH,
the one FindMPI alone would take:

* PyPI's mpich + mpi4py, then default ``pip install <repository>`` (build
  isolation on), with Debian's MPICH (/usr/bin/mpicxx) first on PATH;
* Debian's MPICH with mpi4py built from source, then ``python -m build``
  (an sdist, and a wheel built from it in build's own isolated venv) and
  ``pip install`` of that wheel, with the PyPI MPICH of the test run's .venv
  first on PATH;
* that wheel in the PyPI venv: ``import shancoll`` is an ImportError naming
  both libraries and the command that rebuilds shancoll.

The builds leave out the tools and the C API (SHANCOLL_TOOLS=OFF): the MPI
library is chosen before them, and they would double each build's time.
Marked ``pip_install`` (minutes): ``-m "not pip_install"`` leaves them out.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _ci import missing

REPO = Path(__file__).resolve().parents[1]
SYSTEM_MPICH = Path("/usr/lib/x86_64-linux-gnu/libmpich.so.12")
SYSTEM_MPICC = Path("/usr/bin/mpicc.mpich")
SYSTEM_MPIEXEC = Path("/usr/bin/mpiexec.mpich")
BUILD_TIMEOUT = 1800
NO_TOOLS = ["-C", "cmake.define.SHANCOLL_TOOLS=OFF"]

pytestmark = pytest.mark.pip_install

# Run in each venv: the MPI libraries mapped after importing shancoll, and an
# allreduce at 2 ranks checked against MPI_Allreduce.
SMOKE = """
import numpy as np
import shancoll
from mpi4py import MPI
from shancoll._mpi_library import mapped_mpi_libraries

comm = MPI.COMM_WORLD
x = np.arange(1000, dtype="f8") * (comm.rank + 1)
y, z = np.empty_like(x), np.empty_like(x)
shancoll.allreduce(comm, x, y)
comm.Allreduce(x, z)
assert np.array_equal(y, z), "allreduce differs from MPI_Allreduce"
if comm.rank == 0:
    print("libraries:", mapped_mpi_libraries())
"""


def path_without(directory: Path) -> str:
    return os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != directory)


def run(argv: list, env: dict[str, str], timeout: float = BUILD_TIMEOUT) -> str:
    """Runs argv outside the repository; its output, or a failure quoting its tail."""
    res = subprocess.run(
        list(map(str, argv)), env=env, cwd="/", capture_output=True, text=True,
        timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, f"{' '.join(map(str, argv))} failed:\n{out[-4000:]}"
    return out


def clean_env(path: str) -> dict[str, str]:
    """The test run's environment minus what points at its own venv and build."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPI", "PYTHON", "PIP_"))}
    env.pop("VIRTUAL_ENV", None)
    return {**env, "PATH": path, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


def fresh_venv(where: Path, packages: list[str], env: dict[str, str]) -> Path:
    run([sys.executable, "-m", "venv", where], env)
    run([where / "bin" / "python", "-m", "pip", "install", "-q", *packages], env)
    return where / "bin" / "python"


def smoke(python: Path, mpiexec: Path, env: dict[str, str], tmp: Path) -> list[str]:
    script = tmp / "smoke.py"
    script.write_text(SMOKE, encoding="utf-8")
    out = run([mpiexec, "-n", "2", python, script], env, timeout=300)
    line = next(ln for ln in out.splitlines() if ln.startswith("libraries:"))
    return ast.literal_eval(line.split(":", 1)[1].strip())


def require_system_mpich() -> None:
    if not (SYSTEM_MPICH.exists() and SYSTEM_MPICC.exists()):
        missing("Debian's MPICH (libmpich-dev) is not installed: make setup as root")


@pytest.fixture(scope="module")
def pypi_venv(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """PyPI's mpich + mpi4py, shancoll installed by default pip from the repository."""
    require_system_mpich()
    env = clean_env(path_without(Path(sys.executable).parent))
    # The scenario of issue 21: FindMPI alone would take Debian's wrapper.
    assert Path(run(["sh", "-c", "command -v mpicxx"], env).strip()).resolve().parent == Path(
        "/usr/bin"
    ), "Debian's mpicxx must be first on PATH"
    python = fresh_venv(tmp_path_factory.mktemp("pypi") / "venv", ["mpich", "mpi4py", "numpy"], env)
    run([python, "-m", "pip", "install", *NO_TOOLS, REPO], env)
    return python, env


@pytest.fixture(scope="module")
def system_wheel(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """Debian's MPICH, mpi4py built from source, a wheel from `python -m build`, installed."""
    require_system_mpich()
    # The test run's own venv (PyPI MPICH) first on PATH: its mpicxx is the wrong one here.
    env = clean_env(os.environ["PATH"])
    where = tmp_path_factory.mktemp("system")
    python = fresh_venv(where / "venv", ["numpy", "build"], env)
    run([python, "-m", "pip", "install", "-q", "--no-binary", "mpi4py", "mpi4py"],
        {**env, "MPICC": str(SYSTEM_MPICC)})  # fmt: skip
    dist = where / "dist"
    run([python, "-m", "build", "--outdir", dist, *NO_TOOLS, REPO], env)
    assert len(list(dist.glob("*.tar.gz"))) == 1, "python -m build made no sdist"
    wheel = next(dist.glob("*.whl"))
    run([python, "-m", "pip", "install", wheel], env)
    return python, wheel, env


def test_pip_install_builds_against_mpi4pys_mpi_library(pypi_venv, tmp_path):
    python, env = pypi_venv
    libraries = smoke(python, python.parent / "mpiexec", env, tmp_path)
    assert libraries == [str((python.parents[1] / "lib" / "libmpi.so.12").resolve())], libraries


def test_python_m_build_wheel_uses_the_system_mpi(system_wheel, tmp_path):
    python, _, env = system_wheel
    libraries = smoke(python, SYSTEM_MPIEXEC, env, tmp_path)
    assert libraries == [str(SYSTEM_MPICH.resolve())], libraries


def test_the_other_librarys_wheel_is_an_import_error(pypi_venv, system_wheel):
    python, env = pypi_venv
    _, wheel, _ = system_wheel
    run([python, "-m", "pip", "install", "--force-reinstall", "--no-deps", wheel], env)
    res = subprocess.run([python, "-c", "import shancoll"], env=env, cwd="/", capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    assert res.returncode != 0 and "ImportError" in res.stderr, res.stdout + res.stderr
    message = res.stderr
    assert str((python.parents[1] / "lib" / "libmpi.so.12").resolve()) in message, message
    assert str(SYSTEM_MPICH.resolve()) in message, message
    assert f"{python} -m pip install --force-reinstall --no-deps --no-cache-dir" in message, message
