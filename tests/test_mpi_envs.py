"""Per-MPI envs (shancoll.bench.mpi_envs) and the native baseline series (shancoll.bench.baselines).

The tests that run jobs in the MPICH / Open MPI / Intel MPI envs skip unless
``python -m shancoll.bench.mpi_envs ensure LIB`` has built that env and it is
current; in CI, where `make setup` builds them, they fail instead.
"""

from __future__ import annotations

import sys
import time

import pytest
from _ci import missing

from shancoll.bench import baselines, mpi_envs
from shancoll.bench.baselines import COLLECTIVES, LIBS, native_series

PREFIX = {"mpich": "MPIR_CVAR_", "openmpi": "OMPI_MCA_", "impi": "I_MPI_ADJUST_"}


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("coll", COLLECTIVES)
def test_native_series_shape(lib, coll):
    series = native_series(lib, coll)
    names = [s.name for s in series]
    assert len(names) == len(set(names)), "series names must be unique"
    assert series[0].name == lib and series[0].env == {}  # the library's own selection
    forced = [s for s in series if s.algorithm]
    assert len(forced) >= 2
    for s in forced:
        assert s.name == f"{lib}:{s.algorithm}"
        assert s.lib == lib and s.coll == coll and s.value and s.description
        assert s.env and all(k.startswith(PREFIX[lib]) for k in s.env)
        assert all(isinstance(v, str) for v in s.env.values())


def test_impi_ranges_match_the_papers():
    def values(coll):
        return [int(s.value) for s in native_series("impi", coll) if s.value]

    assert values("allgatherv") == [1, 2, 3, 4]
    assert values("allreduce") == list(range(1, 13))
    assert native_series("impi", "allgatherv")[3].env == {"I_MPI_ADJUST_ALLGATHERV": "3"}


def test_openmpi_forcing_needs_dynamic_rules():
    for coll in COLLECTIVES:
        for s in (s for s in native_series("openmpi", coll) if s.algorithm):
            assert s.env["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
            assert s.env[f"OMPI_MCA_coll_tuned_{coll}_algorithm"] == s.value


def test_mpich_release_gather_on_and_off():
    for coll in ("bcast", "reduce", "allreduce"):
        by_name = {s.name: s.env for s in native_series("mpich", coll)}
        var = f"MPIR_CVAR_{coll.upper()}_POSIX_INTRA_ALGORITHM"
        assert by_name["mpich:release_gather"][var] == "release_gather"
        assert by_name["mpich:release_gather_off"] == {var: "mpir"}
        # A forced MPIR algorithm must not be bypassed by release_gather.
        assert by_name["mpich:binomial" if coll != "allreduce" else "mpich:ring"][var] == "mpir"
    names = [s.name for s in native_series("mpich", "allgatherv")]
    assert "mpich:ring" in names and "mpich:release_gather" not in names


def test_defaults_series_removes_the_tuned_settings():
    for lib in LIBS:
        tuned = baselines.tuned_settings(lib)
        by_name = {s.name: s.env for s in native_series(lib, "allreduce")}
        if tuned:
            assert by_name[f"{lib}:defaults"] == dict.fromkeys(tuned)
        else:
            assert f"{lib}:defaults" not in by_name


def test_series_env_by_name():
    assert baselines.series_env("impi:ring", "allgatherv") == {"I_MPI_ADJUST_ALLGATHERV": "3"}
    with pytest.raises(ValueError, match="no native series"):
        baselines.series_env("impi:nonexistent", "allgatherv")


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: native_series("lam", "allreduce"), "lib"),
        (lambda: native_series("mpich", "alltoallw"), "coll"),
        (lambda: baselines.tuned_settings("mvapich"), "lib"),
        (lambda: mpi_envs.ensure("mvapich"), "lib"),
        (lambda: mpi_envs.venv_dir("default"), "lib"),
    ],
)
def test_bad_names_are_value_errors(call, word):
    with pytest.raises(ValueError, match=word):
        call()


def test_ensure_default_is_this_interpreter():
    env = mpi_envs.ensure("default")
    assert env.name in LIBS and env.version
    assert env.python == sys.executable and env.prefix == ""
    cmd = env.command(3, [env.python, "-c", "pass"])
    assert cmd[: len(env.mpiexec)] == env.mpiexec
    assert cmd[len(env.mpiexec) :] == ["-n", "3", sys.executable, "-c", "pass"]
    with pytest.raises(ValueError, match="nranks"):
        env.command(0, ["true"])


def test_run_in_default_env():
    env = mpi_envs.ensure("default")
    # One write per rank: the ranks share the pipe, print() may interleave.
    code = "import sys; from mpi4py import MPI; sys.stdout.write(f'size={MPI.COMM_WORLD.size}\\n')"
    res = env.run(2, [env.python, "-c", code], timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.count("size=2") == 2


def test_run_kills_the_whole_job_on_timeout():
    # A stand-in launcher whose child outlives it, as Open MPI's prterun does.
    env = mpi_envs.MpiEnv("mpich", "x", sys.executable, ["sh", "-c", "sleep 60 & wait"])
    t0 = time.monotonic()
    res = env.run(2, ["ignored"], timeout=0.5)
    assert res.returncode == -9 and "timeout" in res.stderr
    assert time.monotonic() - t0 < 10


def test_environ_merges_and_removes():
    env = mpi_envs.MpiEnv("mpich", "x", "python", ["mpiexec"], env={"A_SHANCOLL_T": "1"})
    merged = env.environ({"B_SHANCOLL_T": "2", "A_SHANCOLL_T": None})
    assert merged["B_SHANCOLL_T"] == "2" and "A_SHANCOLL_T" not in merged


def test_available_lists_only_built_envs():
    assert set(mpi_envs.available()) <= set(LIBS)


_SMOKE = """
import numpy as np
import shancoll
from mpi4py import MPI

comm = MPI.COMM_WORLD
r, p = comm.rank, comm.size
counts = [1000 * (i + 1) + 3 for i in range(p)]
mine = np.arange(counts[r], dtype="f8") + 1000.0 * r
out, ref = np.full(sum(counts), np.nan), np.full(sum(counts), np.nan)
shancoll.allgatherv(comm, mine, [out, counts])
comm.Allgatherv(mine, [ref, counts])
assert np.array_equal(out, ref), "allgatherv differs from MPI_Allgatherv"
x = np.arange(1 << 15, dtype="f8") * (r + 1)  # integer-valued: exact sums
y, z = np.full_like(x, np.nan), np.full_like(x, np.nan)
shancoll.allreduce(comm, x, y)
comm.Allreduce(x, z)
assert np.array_equal(y, z), "allreduce differs from MPI_Allreduce"
if r == 0:
    print("OK", MPI.Get_library_version().splitlines()[0])
"""


# The MPICH env is left out: it is the development .venv's library, and the
# same build in a fresh venv is tests/test_pip_install.py's first scenario.
@pytest.mark.parametrize("lib", mpi_envs.OTHER_LIBS)
def test_shancoll_in_each_mpi_env(lib, tmp_path):
    if lib not in mpi_envs.available():
        missing(f"no {lib} env built (python -m shancoll.bench.mpi_envs ensure {lib})")
    if not mpi_envs.is_current(lib):
        missing(f"{lib} env is stale: sources changed (mpi_envs ensure {lib})")
    env = mpi_envs.load(lib)
    script = tmp_path / "smoke.py"
    script.write_text(_SMOKE, encoding="utf-8")
    res = env.run(2, [env.python, str(script)], timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "OK" in res.stdout and env.version.split()[0] in res.stdout
