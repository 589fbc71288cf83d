"""persistent_calls under another library with the preload: python plib.py LIB RULES COLLS "SIZE CALLS" ..."""
import subprocess, sys
from pathlib import Path
from shancoll.bench import mpi_envs
lib, rules, colls = sys.argv[1:4]
m = mpi_envs.load(lib)
env = m.environ()
prefix = Path(m.prefix)
exe = Path(f"/tmp/pc_{lib}")
if not exe.exists():
    subprocess.run([str(prefix / "bin" / "mpicc"), "-O2", "-o", str(exe),
                    "/work/main/benchmarks/c/persistent_calls.c"], env=env, check=True)
pmpi = next(prefix.glob("lib/python3.11/site-packages/shancoll/lib/libshancoll_pmpi.so"))
launcher = [a for a in m.mpiexec if a not in ("--bind-to", "none")]
bind = ["--bind-to", "core"] if lib == "openmpi" else ["-bind-to", "core"]
for s in sys.argv[4:]:
    size, calls = s.split()
    run_env = {**env, "LD_PRELOAD": str(pmpi), "SHANCOLL_RULES": rules}
    if lib == "openmpi":
        args = [*launcher, *bind, "-n", "2", "-x", "LD_PRELOAD", "-x", "SHANCOLL_RULES", str(exe), calls, "5", colls, size]
    else:
        args = [*launcher, *bind, "-n", "2", "-genv", "LD_PRELOAD", str(pmpi), "-genv", "SHANCOLL_RULES", rules, str(exe), calls, "5", colls, size]
    out = subprocess.run(["/tmp/timed.sh", *args], env=run_env, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if "<Coll>" in line:
            print(size, line)
    if out.returncode:
        print(out.stdout[-2000:], out.stderr[-2000:])
