"""Side by side: every MPI library in its documented settings, and shancoll preloaded.

    .venv/bin/python benchmarks/peers.py [--libs mpich,openmpi,impi] [--build]
        [-n 2] [--repeats 5] [--max-bytes 4194304] [--collectives allreduce,bcast]
        [--out benchmarks/results/peers] [--no-floor] [--floor-file FILE]
    .venv/bin/python benchmarks/peers.py --merge DIR [DIR...] [--out DIR] [--floor-file FILE]

The bar of issue 24: the best library in its best documented setting, at
every size, on the machine at hand. For each library (``mpich`` is the
running environment's; ``openmpi`` and ``impi`` are the environments of
``python -m shancoll.bench.mpi_envs``, used when built, built first with
``--build``) this runs ``shancoll_osu_style`` (benchmarks/c/osu_style.c: a
plain MPI benchmark that knows nothing of shancoll, built against that
library) natively in each setting of :data:`SETTINGS`, and once more with
``LD_PRELOAD=libshancoll_pmpi.so`` built for that library, all runs of a
repeat before any run of the next (interleaved), ranks bound to cores.

Printed per collective and size, worst ratio first: the best peer (library
and setting) and its time, shancoll's best time (and under which library),
their ratio (peer / shancoll: above 1 shancoll is faster), the spread of
shancoll's repeats, the ratio of the fastest repeats (any peer's against
shancoll's: where jobs run in a fast or a slow mode, both the fast mode's),
per library the ratio against that library's own best setting, and the
machine's floor where ``benchmarks/c/pair_floor.c`` measures one (single
copy by cross-memory attach; "flags": a cache-line round trip).
The same table goes to ``<out>/<cpu>.md`` with the CPU model, caches, the
libraries' versions and this command; every run's numbers to ``<out>/<cpu>.csv``.

A measurement too long for one job (a time limit per timed run) runs in
pieces, each with its own ``--out`` (e.g. one library or a few collectives,
``--repeats 1``, the pieces of a repeat before those of the next), and
``--merge`` reports them as one: a config's repeats are its values over the
pieces' CSVs.
"""

from __future__ import annotations

import argparse
import csv
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from shancoll.bench import mpi_envs

ROOT = Path(__file__).resolve().parent.parent

_RELEASE_GATHER = {
    f"MPIR_CVAR_{c}_POSIX_INTRA_ALGORITHM": "release_gather"
    for c in ("BCAST", "REDUCE", "ALLREDUCE", "BARRIER")
}
# Each library's documented settings (issue 24's table); None removes a variable
# the environment sets (Open MPI's env turns CMA off as its tuned setting).
SETTINGS: dict[str, list[tuple[str, dict[str, str | None]]]] = {
    "mpich": [
        ("default", {}),
        ("release_gather", {**_RELEASE_GATHER, "MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD": "0"}),
        (
            "ring allgather",
            {
                "MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM": "ring",
                "MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM": "ring",
            },
        ),
    ],
    "openmpi": [
        ("default", {"OMPI_MCA_smsc": None}),
        ("smsc ^cma", {"OMPI_MCA_smsc": "^cma"}),
        ("coll_sm_priority 100", {"OMPI_MCA_smsc": None, "OMPI_MCA_coll_sm_priority": "100"}),
        ("coll_han_priority 100", {"OMPI_MCA_smsc": None, "OMPI_MCA_coll_han_priority": "100"}),
    ],
    "impi": [
        ("default", {}),
        ("I_MPI_COLL_INTRANODE=shm", {"I_MPI_COLL_INTRANODE": "shm"}),
        ("I_MPI_COLL_INTRANODE=pt2pt", {"I_MPI_COLL_INTRANODE": "pt2pt"}),
    ],
}
SHANCOLL = "shancoll"  # the setting name of the preloaded runs


@dataclass
class Config:
    lib: str
    setting: str
    extra: dict[str, str | None] = field(default_factory=dict)
    preload: bool = False

    @property
    def name(self) -> str:
        return f"{self.lib}:{self.setting}"


def site_file(env: mpi_envs.MpiEnv, relative: str) -> Path | None:
    """A file shancoll installs (bin/, lib/) in ``env``'s interpreter, None if not installed."""
    code = "import shancoll, pathlib; print(pathlib.Path(shancoll.__file__).parent)"
    out = subprocess.run(
        [env.python, "-c", code], env=env.environ(), capture_output=True, text=True, cwd="/"
    )
    path = Path(out.stdout.strip()) / relative
    return path if out.returncode == 0 and path.is_file() else None


def preload_library(env: mpi_envs.MpiEnv) -> Path:
    path = site_file(env, "lib/libshancoll_pmpi.so")
    if path is None:
        sys.exit(f"lib/libshancoll_pmpi.so is not installed in {env.name}'s environment")
    return path


def benchmark(env: mpi_envs.MpiEnv) -> Path:
    """shancoll_osu_style as installed with shancoll, else built here with the
    library's mpicc (native runs need only the library)."""
    installed = site_file(env, "bin/shancoll_osu_style")
    if installed:
        return installed
    exe = Path(tempfile.gettempdir()) / f"osu_style-{env.name}-{hash(env.prefix) & 0xFFFF:x}"
    if not exe.is_file():
        cc = str(Path(env.prefix) / "bin" / "mpicc")
        source = str(ROOT / "benchmarks/c/osu_style.c")
        subprocess.run([cc, "-O2", "-o", str(exe), source], env=env.environ(), check=True)
    return exe


def bound(env: mpi_envs.MpiEnv) -> list[str]:
    """The launcher with ranks bound to cores (hydra's and Open MPI's flag)."""
    launcher = [a for a in env.mpiexec if a not in ("--bind-to", "none")]
    return (
        [*launcher, "--bind-to", "core"]
        if env.name == "openmpi"
        else [*launcher, "-bind-to", "core"]
    )


def run_once(env, config: Config, ranks: int, bench_args: list[str]) -> dict:
    """One job: {(collective, bytes): median microseconds per call}."""
    extra = dict(config.extra)
    if config.preload:
        extra["LD_PRELOAD"] = str(preload_library(env))
    binary = benchmark(env)
    command = [*bound(env), "-n", str(ranks), str(binary), *bench_args]
    out = subprocess.run(
        command, env=env.environ(extra), capture_output=True, text=True, cwd="/",
        stdin=subprocess.DEVNULL, timeout=1800,
    )  # fmt: skip
    if out.returncode != 0:
        sys.exit(f"{config.name} failed:\n{' '.join(command)}\n{out.stderr[-3000:]}")
    times = {}
    for line in out.stdout.splitlines():
        if line and not line.startswith("#"):
            coll, size, _avg, median = line.split()
            times[(coll, int(size))] = float(median)
    return times


def machine() -> dict[str, str]:
    """CPU model and caches (lscpu), for the report and the file name."""
    info = {"cpu": platform.processor() or "unknown"}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu"] = " ".join(line.split(":", 1)[1].split())
                break
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    caches = [" ".join(row.split()) for row in lscpu.splitlines() if "cache" in row.lower()]
    # lscpu sums the instances ("L2 cache: 1 MiB (2 instances)"); one core's, as the
    # rule tables' match lines name them:
    caches.append(f"per instance (sysfs, cpu0): {sysfs_caches()}")
    info["caches"] = "; ".join(caches)
    return info


def sysfs_caches() -> str:
    """cpu0's data and unified caches by level, "L1d 32K L2 512K L3 32768K"."""
    found = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind, size = (
                (index / name).read_text().strip() for name in ("level", "type", "size")
            )
        except OSError:
            continue
        if kind != "Instruction":
            found.setdefault(int(level), size)
    return " ".join(f"L{lv}{'d' if lv == 1 else ''} {found[lv]}" for lv in sorted(found)) or "?"


def parse_floors(text: str) -> dict[tuple[str, int], float]:
    """pair_floor's output: {(mode, bytes): median us}."""
    found = {}
    for m in re.finditer(r"^(\w+)\s+(\d+) B:\s+([\d.]+) us", text, re.MULTILINE):
        found[(m.group(1), int(m.group(2)))] = float(m.group(3))
    return found


def floors() -> dict[tuple[str, int], float]:
    """pair_floor's medians (single copy by cross-memory attach; flags), if a C compiler exists."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "pair_floor"
        build = [
            cc,
            "-O3",
            "-march=native",
            "-o",
            str(exe),
            str(ROOT / "benchmarks/c/pair_floor.c"),
        ]
        if subprocess.run(build, capture_output=True).returncode != 0:
            return {}
        out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600).stdout
    return parse_floors(out)


def merged(dirs: list[Path]) -> tuple[list[Config], dict[str, list[dict]]]:
    """The configs and runs of several earlier runs' CSVs (every ``*.csv`` of
    each directory): pieces of one measurement split by library or collective
    to fit a time limit. A config's n-th repeat of a (collective, bytes) is
    its n-th value over the files, in the order given; a config has as many
    repeats as the (collective, bytes) with the fewest."""
    samples: dict[str, dict[tuple[str, int], list[float]]] = {}
    for d in dirs:
        for path in sorted(d.glob("*.csv")):
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    key = (row["collective"], int(row["bytes"]))
                    samples.setdefault(row["config"], {}).setdefault(key, []).append(
                        float(row["median_us"])
                    )
    configs, runs = [], {}
    for name, by_key in samples.items():
        lib, setting = name.split(":", 1)
        extra = dict(SETTINGS.get(lib, [])).get(setting, {})
        configs.append(Config(lib, setting, extra, preload=setting == SHANCOLL))
        repeats = min(len(v) for v in by_key.values())
        runs[name] = [{k: v[i] for k, v in by_key.items()} for i in range(repeats)]
    configs.sort(key=lambda c: c.preload)  # the settings first, as a run lists them
    return configs, runs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--libs", default="mpich,openmpi,impi")
    p.add_argument("--build", action="store_true", help="build missing library environments")
    p.add_argument("-n", "--ranks", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--max-bytes", type=int, default=4 << 20)
    p.add_argument("--collectives", default="", help="comma-separated (default: all)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/peers")
    p.add_argument("--no-floor", action="store_true", help="skip pair_floor (the machine's floor)")
    p.add_argument(
        "--native-only", action="store_true",
        help="the libraries' settings only, no preload (an env whose shancoll is not built will "
        "do: the benchmark is built with its mpicc); a piece for --merge",
    )  # fmt: skip
    p.add_argument("--floor-file", type=Path, help="pair_floor's output, instead of running it")
    p.add_argument(
        "--merge", type=Path, nargs="+", metavar="DIR",
        help="no run: the report of earlier runs' --out directories (pieces of one measurement)",
    )  # fmt: skip
    args = p.parse_args()
    floor = {}
    if args.floor_file:
        floor = parse_floors(args.floor_file.read_text())
    if args.merge:
        configs, runs = merged(args.merge)
        libs = list(dict.fromkeys(c.lib for c in configs))
        envs = {
            lib: mpi_envs.ensure("default")
            if lib == "mpich"
            else mpi_envs.load(lib)
            if lib in mpi_envs.available()
            else mpi_envs.mpi_only(lib)
            for lib in libs
        }
        args.repeats = min(len(r) for r in runs.values())
        report(args, envs, configs, runs, floor)
        return

    envs = {}
    for lib in args.libs.split(","):
        if lib == "mpich":
            envs[lib] = mpi_envs.ensure("default")
        elif args.build:
            envs[lib] = mpi_envs.ensure(lib, quiet=True)
        elif lib in mpi_envs.available():
            envs[lib] = mpi_envs.load(lib)  # as built: --build rebuilds it from these sources
            if not mpi_envs.is_current(lib):
                print(f"# {lib}: its shancoll was built from older sources (--build rebuilds)")
        elif args.native_only:
            envs[lib] = mpi_envs.mpi_only(lib)
        else:
            how = f"python -m shancoll.bench.mpi_envs ensure {lib}, or --build"
            print(f"# {lib}: no environment ({how})")
    configs = [
        Config(lib, setting, extra) for lib in envs for setting, extra in SETTINGS[envs[lib].name]
    ] + [Config(lib, SHANCOLL, {}, preload=True) for lib in envs if not args.native_only]
    bench_args = ["-m", str(args.max_bytes)]
    colls = [c for c in args.collectives.split(",") if c]
    runs: dict[str, list[dict]] = {c.name: [] for c in configs}
    for r in range(args.repeats):  # interleaved: the machine's drifts hit every config alike
        for c in configs:
            result: dict = {}
            for coll in colls or [""]:
                only = ["-c", coll] if coll else []
                result.update(run_once(envs[c.lib], c, args.ranks, bench_args + only))
            runs[c.name].append(result)
        print(f"# repeat {r + 1}/{args.repeats} done", flush=True)
    if args.native_only:  # no preload to compare: the numbers, for --merge
        args.out.mkdir(parents=True, exist_ok=True)
        write_csv(args.out / "native.csv", runs)
        return
    report(args, envs, configs, runs, floor or ({} if args.no_floor else floors()))


def report_rows(configs, runs, floor) -> list[tuple]:
    """Per (collective, bytes), worst median ratio first: (ratio, key, best peer, its us,
    shancoll's best library, its us, its fastest and slowest repeat, per-library text,
    fastest ratio, floor). The fastest ratio compares the fastest repeat of the fastest
    peer with shancoll's fastest repeat: on a machine whose jobs run in a fast or a slow
    mode, a median of few repeats can be either mode's, the fastest repeats are both the
    fast mode's (docs/performance.md, Zen 4)."""
    keys = list(runs[configs[0].name][0])
    median = {n: {k: statistics.median(r[k] for r in rs) for k in keys} for n, rs in runs.items()}
    fastest = {n: {k: min(r[k] for r in rs) for k in keys} for n, rs in runs.items()}
    rows = []
    for key in keys:
        peers = {c.name: median[c.name][key] for c in configs if not c.preload}
        ours = {c.lib: median[c.name][key] for c in configs if c.preload}
        best_peer = min(peers, key=peers.get)
        best_lib = min(ours, key=ours.get)
        samples = [r[key] for r in runs[f"{best_lib}:{SHANCOLL}"]]
        per_lib = []
        for lib in ours:
            own = min(v for n, v in peers.items() if n.startswith(lib + ":"))
            per_lib.append(f"{lib} {own / ours[lib]:.2f}")
        peer_fastest = min(fastest[c.name][key] for c in configs if not c.preload)
        ours_fastest = min(fastest[c.name][key] for c in configs if c.preload)
        rows.append(
            (
                peers[best_peer] / ours[best_lib], key, best_peer, peers[best_peer],
                best_lib, ours[best_lib], min(samples), max(samples), ", ".join(per_lib),
                peer_fastest / ours_fastest,
                floor.get(key, floor.get(("flags", 8)) if key[1] <= 64 else None),
            )
        )  # fmt: skip
    rows.sort(key=lambda row: row[0])
    return rows


def report(args, envs, configs, runs, floor) -> None:
    rows = report_rows(configs, runs, floor)
    head = (
        "| collective | bytes | best peer | peer us | shancoll us (under) | spread | ratio "
        "| fastest ratio | per library | floor us |\n"
        "|---|---:|---|---:|---:|---:|---:|---:|---|---:|"
    )
    lines = [head]
    for ratio, key, peer, peer_us, lib, us, lo, hi, per_lib, fast, fl in rows:
        fl_text = f"{fl:.2f}" if fl else ""
        lines.append(
            f"| {key[0]} | {key[1]} | {peer} | {peer_us:.2f} | {us:.2f} ({lib}) | "
            f"{lo:.2f}-{hi:.2f} | {ratio:.2f} | {fast:.2f} | {per_lib} | {fl_text} |"
        )
    table = "\n".join(lines)
    print(table)
    m = machine()
    slug = re.sub(r"[^a-z0-9]+", "-", m["cpu"].lower()).strip("-")
    args.out.mkdir(parents=True, exist_ok=True)
    versions = "\n".join(f"- {lib}: {env.version}" for lib, env in envs.items())
    command = " ".join(["python", "benchmarks/peers.py", *sys.argv[1:]])
    (args.out / f"{slug}.md").write_text(
        f"# Peers on {m['cpu']}\n\nCaches: {m['caches']}\n\nLibraries:\n{versions}\n\n"
        f"Command: `{command}` ({args.ranks} ranks bound to cores, {args.repeats} repeats "
        f"interleaved, the median of each run's per-call medians; ratio = best peer / shancoll, "
        f"worst first; fastest ratio: the fastest repeat of any peer / shancoll's fastest "
        f"repeat; per library: that library's best setting / shancoll under it; spread: "
        f"shancoll's repeats)\n\n{table}\n"
    )
    write_csv(args.out / f"{slug}.csv", runs)


def write_csv(path: Path, runs: dict[str, list[dict]]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "repeat", "collective", "bytes", "median_us"])
        for name, rs in runs.items():
            for i, r in enumerate(rs):
                for (coll, size), us in r.items():
                    w.writerow([name, i, coll, size, us])


if __name__ == "__main__":
    main()
