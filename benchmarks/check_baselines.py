"""Runs every native baseline series of every built MPI env and checks its result.

    .venv/bin/python benchmarks/check_baselines.py                 # every env in .venvs/
    .venv/bin/python benchmarks/check_baselines.py --libs impi --colls bcast,reduce
    .venv/bin/python benchmarks/check_baselines.py --ranks 4 --out /tmp/check.json

For each env built by ``python -m shancoll.bench.mpi_envs ensure LIB`` it

1. checks the series' variable names and values against what the installed
   library lists (MPICH ``mpivars``, Open MPI ``ompi_info``, Intel MPI
   ``impi_info``): a typo in a name that the library would silently ignore
   fails here;
2. launches one 2-rank job per series (``shancoll.bench.baselines.native_series``),
   runs that collective through mpi4py at 8 B, 8 KiB and 1 MiB, compares the
   result with NumPy's on every rank, and prints a smoke time for 1 MiB.

None of the three libraries reports the algorithm it ran from a release
build (Open MPI's coll_base_verbose output of the forced algorithm is
compiled out of the PyPI build; Intel's I_MPI_DEBUG names the tuning file,
not the per-call algorithm): the times per series are the evidence that the
forcing has an effect. They are smoke numbers from a shared machine, not
results.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

WORKER_SIZES = (1, 1024, 1 << 17)  # float64 elements: 8 B, 8 KiB, 1 MiB


# ------------------------------------------------------------------ the MPI worker


def worker(coll: str) -> None:
    """Runs ``coll`` under mpiexec at each size, checks it, prints the 1 MiB time (rank 0)."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    for n in WORKER_SIZES:
        mine = np.arange(n, dtype="f8") + 1000.0 * rank  # exact in float64
        every = [np.arange(n, dtype="f8") + 1000.0 * r for r in range(size)]
        if coll == "allgatherv":
            # Uneven blocks: rank r contributes n * (r + 1) // size elements.
            counts = [max(1, n * (r + 1) // size) for r in range(size)]
            mine, every = mine[: counts[rank]], [e[: counts[r]] for r, e in enumerate(every)]
            out = np.full(sum(counts), np.nan)
            call = lambda: comm.Allgatherv(mine, [out, counts])  # noqa: E731, B023
            want = np.concatenate(every)
        elif coll == "allgather":
            out = np.full(n * size, np.nan)
            call = lambda: comm.Allgather(mine, out)  # noqa: E731, B023
            want = np.concatenate(every)
        elif coll == "allreduce":
            out = np.full(n, np.nan)
            call = lambda: comm.Allreduce(mine, out)  # noqa: E731, B023
            want = np.sum(every, axis=0)
        elif coll == "bcast":
            out = mine.copy()
            call = lambda: comm.Bcast(out, root=0)  # noqa: E731, B023
            want = every[0]
        elif coll == "reduce":
            out = np.full(n, np.nan)
            call = lambda: comm.Reduce(mine, out, root=0)  # noqa: E731, B023
            want = np.sum(every, axis=0)
        else:
            raise SystemExit(f"unknown collective {coll!r}")
        times = []
        for _ in range(7):  # > 5 calls: MPICH's release_gather starts after 5 by default
            comm.Barrier()
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        # Reduce's result exists on the root only.
        if (coll != "reduce" or rank == 0) and not np.array_equal(out, want):
            raise SystemExit(f"rank {rank}: {coll} of {n} doubles gave a wrong result")
        slowest = comm.allreduce(sorted(times)[len(times) // 2], op=MPI.MAX)
    if rank == 0:
        print(json.dumps({"ok": True, "us_1MiB": round(slowest * 1e6, 1)}))


# ------------------------------------------------------------------ name checks


def _listing(env, argv: list[str]) -> str:
    res = subprocess.run(argv, env=env.environ(), capture_output=True, text=True, timeout=120)
    return res.stdout + res.stderr


def name_problems(env, coll: str, series) -> list[str]:
    """Variables (or values) of ``series`` that the installed library does not list."""
    bindir = Path(env.python).parent
    problems = []
    if env.name == "mpich":
        text = _listing(env, [str(bindir / "mpivars")])
        for s in series:
            for var, value in s.env.items():
                block = re.search(rf"^\s*{var}\s*=.*?(?=^\s*MPIR_CVAR_|\Z)", text, re.M | re.S)
                if block is None:
                    problems.append(f"{s.name}: {var} not listed by mpivars")
                elif value and not value.isdigit() and not re.search(rf"\b{value}\b", block[0]):
                    problems.append(f"{s.name}: {var}={value} not a listed value")
    elif env.name == "openmpi":
        text = _listing(
            env,
            [str(bindir / "ompi_info"), "--parsable", "--param", "coll", "tuned", "--level", "9"],
        )
        key = f"coll_tuned_{coll}_algorithm:enumerator:value:"
        listed = dict(re.findall(rf"{key}(\d+):(\S+)", text))
        for s in series:
            if s.value and s.value not in listed:
                problems.append(f"{s.name}: algorithm {s.value} not listed by ompi_info")
    elif env.name == "impi":
        text = _listing(env, [str(bindir / "impi_info"), "-v", f"I_MPI_ADJUST_{coll.upper()}"])
        m = re.search(r"range:\s*(\d+)-(\d+)", text)
        if m is None:
            problems.append(f"impi_info lists no range for I_MPI_ADJUST_{coll.upper()}")
        for s in series:
            if m and s.value and int(s.value) > int(m[2]):
                problems.append(f"{s.name}: preset {s.value} > impi_info's {m[2]}")
    return problems


# ------------------------------------------------------------------ the driver


def run_series(env, coll: str, s, ranks: int, timeout: float) -> dict:
    argv = [env.python, str(Path(__file__).resolve()), "--worker", coll]
    t0 = time.time()
    res = env.run(ranks, argv, extra=s.env, timeout=timeout)
    rc, out, err = res.returncode, res.stdout, res.stderr
    line = next((x for x in out.splitlines()[::-1] if x.startswith("{")), "")
    if rc != 0 or not line:
        tail = (err or out).strip().splitlines()[-6:]
        return {"ok": False, "error": f"exit {rc}: " + " | ".join(tail)}
    return {**json.loads(line), "seconds": round(time.time() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", metavar="COLL", help=argparse.SUPPRESS)
    ap.add_argument("--libs", default="", help="comma-separated (default: every built env)")
    ap.add_argument("--colls", default="allgatherv,allgather,allreduce,bcast,reduce")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--out", help="write all results as JSON here")
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0

    from shancoll.bench import baselines, mpi_envs

    libs = args.libs.split(",") if args.libs else mpi_envs.available()
    if not libs:
        print("no MPI env built: python -m shancoll.bench.mpi_envs ensure mpich openmpi impi")
        return 1
    results, failed = [], 0
    for lib in libs:
        env = mpi_envs.load(lib)
        print(f"== {lib}: {env.version}", flush=True)
        for coll in args.colls.split(","):
            series = baselines.native_series(lib, coll)
            for p in name_problems(env, coll, series):
                print(f"   NAME  {coll:10s} {p}")
                failed += 1
            for s in series:
                r = run_series(env, coll, s, args.ranks, args.timeout)
                failed += not r["ok"]
                shown = f"{r['us_1MiB']:10.1f} us" if r["ok"] else "FAILED " + r["error"]
                print(f"   {coll:10s} {s.name:45s} {shown}", flush=True)
                results.append(
                    {
                        "lib": lib,
                        "version": env.version,
                        "coll": coll,
                        "series": s.name,
                        "env": s.env,
                        **r,
                    }
                )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
