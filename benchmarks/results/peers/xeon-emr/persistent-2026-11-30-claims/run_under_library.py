"""How the Open MPI and Intel MPI files beside it were made (2026-11-30).

benchmarks/c/persistent_calls.c built with the library's mpicc, run at 2 ranks
bound to cores under the preload built against that library, with a rule
table given by SHANCOLL_RULES (one asking for single copy in every
allreduce_init, reduce_init, bcast_init and allgather_init row, one asking
for none, alternating):

    python run_under_library.py LIB RULES COLLECTIVES "BYTES CALLS" ...

(each job ran alone on the machine, through a lock that paused other work).
"""

import subprocess
import sys
from pathlib import Path

from shancoll.bench import mpi_envs

REPO = Path(__file__).resolve().parents[5]


def main(lib: str, rules: str, collectives: str, *sizes: str) -> None:
    m = mpi_envs.load(lib)
    env = m.environ()
    prefix = Path(m.prefix)
    exe = Path(f"/tmp/persistent_calls_{lib}")
    if not exe.exists():
        source = REPO / "benchmarks" / "c" / "persistent_calls.c"
        subprocess.run([prefix / "bin" / "mpicc", "-O2", "-o", exe, source], env=env, check=True)
    pmpi = next(prefix.glob("lib/python3*/site-packages/shancoll/lib/libshancoll_pmpi.so"))
    launcher = [a for a in m.mpiexec if a not in ("--bind-to", "none")]
    if lib == "openmpi":
        start = [*launcher, "--bind-to", "core", "-n", "2", "-x", "LD_PRELOAD"]
        start += ["-x", "SHANCOLL_RULES"]
    else:
        start = [*launcher, "-bind-to", "core", "-n", "2", "-genv", "LD_PRELOAD", str(pmpi)]
        start += ["-genv", "SHANCOLL_RULES", rules]
    for size in sizes:
        nbytes, calls = size.split()
        run_env = {**env, "LD_PRELOAD": str(pmpi), "SHANCOLL_RULES": rules}
        argv = [*start, str(exe), calls, "5", collectives, nbytes]
        out = subprocess.run(argv, env=run_env, capture_output=True, text=True)
        for line in out.stdout.splitlines():
            if "<Coll>" in line:
                print(nbytes, line)
        if out.returncode:
            print(out.stdout[-2000:], out.stderr[-2000:])


if __name__ == "__main__":
    main(*sys.argv[1:])
