"""The script behind docs/performance.md, "The route to shancoll" (2026-11-25):
interleaved repeats of benchmarks/c/osu_style.c (one job per spec, collective
and repeat; every spec of a repeat before the next), raw output kept.

    OMPI=<Open MPI prefix> MPICH=<MPICH venv> BIN=<dir> OLD=<old libshancoll_pmpi.so> \\
    PRELOAD=<new libshancoll_pmpi.so> python run.py OUTDIR REPEATS bcast,reduce 2048 \\
        ompi-collsm mpich-release-gather mpich-preload-old mpich-preload

BIN holds osu_style.c built with each library's mpicc (osu_ompi, osu_mpich).
Every job runs through TIMED (default /tmp/timed.sh: one timing at a time,
other work stopped).
"""

import json
import os
import statistics
import subprocess
import sys

out, reps, colls, maxb = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4]
BIN, TIMED = os.environ["BIN"], os.environ.get("TIMED", "/tmp/timed.sh")
OMPI = f"{os.environ['OMPI']}/bin/mpiexec --oversubscribe --bind-to core -n 2 -x OMPI_MCA_osc=^ucx"
MPICH = f"{os.environ['MPICH']}/bin/mpiexec -bind-to core -n 2"
RG = " ".join(
    f"-env MPIR_CVAR_{c}_POSIX_INTRA_ALGORITHM release_gather"
    for c in ("BCAST", "REDUCE", "ALLREDUCE", "BARRIER")
)
SPECS = {
    "ompi-collsm": f"{OMPI} --mca coll_sm_priority 100 {BIN}/osu_ompi",
    "ompi-default": f"{OMPI} {BIN}/osu_ompi",
    "mpich-default": f"{MPICH} {BIN}/osu_mpich",
    "mpich-release-gather": f"{MPICH} {RG} -env MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD 0 "
    f"{BIN}/osu_mpich",
    "mpich-preload": f"{MPICH} -env LD_PRELOAD {os.environ.get('PRELOAD', '')} {BIN}/osu_mpich",
    "mpich-preload-old": f"{MPICH} -env LD_PRELOAD {os.environ.get('OLD', '')} {BIN}/osu_mpich",
}
names = sys.argv[5:]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
os.makedirs(out, exist_ok=True)
res = {}
for rep in range(reps):
    for n in names:
        for c in colls:
            cmd = f"{TIMED} {SPECS[n]} -c {c} -m {maxb}"
            p = subprocess.run(cmd.split(), capture_output=True, text=True, env=env, timeout=200)
            with open(f"{out}/{n}.{c}.{rep}.txt", "w") as f:
                f.write(cmd + "\n" + p.stdout + p.stderr[-2000:])
            for line in p.stdout.splitlines():
                if line and not line.startswith("#"):
                    cc, size, _a, med = line.split()
                    res.setdefault((cc, int(size), n), []).append(float(med))
with open(f"{out}/all.json", "w") as f:
    json.dump({"|".join(map(str, k)): v for k, v in res.items()}, f)
for c in colls:
    print(f"{c:<8}" + "".join(f"{n[:22]:>24}" for n in names))
    for size in sorted({k[1] for k in res if k[0] == c}):
        cells = []
        for n in names:
            v = res.get((c, size, n), [])
            cells.append(f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]" if v else "-")
        print(f"{size:<8}" + "".join(f"{x:>24}" for x in cells))
