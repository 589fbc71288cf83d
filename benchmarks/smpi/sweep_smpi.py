#!/usr/bin/env python3
"""Simulated sweep: shancoll's collectives against SMPI's own algorithms.

Runs the SMPI build of the benchmark driver (benchmarks/smpi, `make smpi`)
under `smpirun` on a platform file, for node counts 1..N at a fixed number
of ranks per node, and appends one CSV row per (algorithm, point):

    python benchmarks/smpi/sweep_smpi.py allgatherv \\
        --platform benchmarks/smpi/platforms/aries_dragonfly_32.xml \\
        --nodes 1,2,4,8,16,32 --ranks-per-node 32 --sizes 1024 \\
        --dists regular,decreasing,bcast \\
        --out benchmarks/results/smpi/allgatherv_aries.csv
    python benchmarks/smpi/sweep_smpi.py allreduce \\
        --platform benchmarks/smpi/platforms/fdr_fattree_32.xml \\
        --nodes 1,2,4,8,16,32 --counts 1,255 --dtypes int,double --ops sum,max \\
        --out benchmarks/results/smpi/allreduce_fdr.csv

Any platform file works whose first <cluster> (or <host> list) names the
hosts; rank r runs on host r // ranks_per_node. One smpirun runs all the
shancoll algorithms of a point side by side; each SMPI algorithm is its own
smpirun with `--cfg=smpi/<coll>:<name>` (SMPI picks the algorithm per run,
not per call), called through the driver's `mpi` algorithm and recorded as
`smpi_<name>`. Times are simulated (MPI_Wtime), deterministic: one warm-up
and a few timed calls suffice; `wall_s` is the wall time of the smpirun.
`--resume` skips points already in the CSV. `--check` instead runs every
algorithm once on real data against SMPI's MPI collective (no CSV).

`--timing` (column `timing`): `global` (default) starts every call on all
ranks at the same simulated instant and records the last rank's exit minus
that entry; `barrier` is the driver's portable method (a barrier before each
call, the slowest rank's own time), which adds the barrier's exit skew.
`--intra-overhead-us X` (column `intra_overhead_us`) charges X us of
software overhead per side to every intra-node MPI message (a sensitivity
study; 0, SMPI's default, otherwise). Rows of CSVs written before these
columns existed read `barrier` and 0.

Only the standard library: it must run where SimGrid is, without the venv.
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DRIVER = ROOT / "build" / "smpi" / "shancoll_bench_smpi"

# Yielding MPI_Iprobe/MPI_Test calls would otherwise inject 100 us each (and
# growing); code between MPI calls is not timed (local work is charged
# explicitly, src/cpp/shancoll/cost.h).
SMPI_CFG = [
    "--cfg=smpi/simulate-computation:no",
    "--cfg=smpi/iprobe:1e-8",
    "--cfg=smpi/test:1e-8",
    "--cfg=smpi/grow-injected-times:no",
    # The driver's own collectives (setup allgather, barriers, the timing
    # reduce) as MPICH does them: SMPI's default allgather waits on P - 1
    # requests with a linear scan each, hours of wall time at 1024 ranks.
    # Forced algorithms (--cfg=smpi/allgatherv:... below) override it.
    "--cfg=smpi/coll-selector:mpich",
    "--log=root.thres:warning",
]

# The papers' baselines as SMPI names them. Allgatherv: Intel MPI's four
# (I_MPI_ADJUST_ALLGATHERV 1-4) are recursive doubling, Bruck, ring and
# gatherv + bcast (GB). Allreduce: SMPI's algorithms that run on any rank
# count, and its impi / mpich / ompi selectors (each library's own choice).
DEFAULT_SMPI = {
    "allgatherv": "mpich_rdb,ompi_bruck,mpich_ring,GB",
    "allreduce": "rdb,rab1,rab_rdb,redbcast,smp_binomial,smp_rdb,mvapich2_two_level,"
    "ompi_ring_segmented,impi,mpich,ompi",
}
DEFAULT_SHANCOLL = {
    "allgatherv": "shan,ring,bruck,recursive_doubling",
    "allreduce": "shan,nway_dissemination,dissemination,bruck,pairwise_exchange,binomial,"
    "release_gather",
}

FIELDS = [
    "collective",
    "algorithm",
    "impl",
    "distribution",
    "nodes",
    "ranks_per_node",
    "ranks",
    "bytes_per_rank",
    "time_us",
    "wall_s",
    "platform",
    "timing",
    "intra_overhead_us",
]
# Values of the newer columns in rows written before they existed.
DEFAULTS = {"timing": "barrier", "intra_overhead_us": "0"}


def platform_hosts(platform: Path) -> list[str]:
    """Host names in platform order: clusters (prefix + radical + suffix), then hosts."""
    hosts: list[str] = []
    for el in ET.parse(platform).getroot().iter():
        if el.tag == "cluster":
            prefix, suffix = el.get("prefix", ""), el.get("suffix", "")
            for part in el.get("radical", "").split(","):
                lo, _, hi = part.partition("-")
                for i in range(int(lo), int(hi or lo) + 1):
                    hosts.append(f"{prefix}{i}{suffix}")
        elif el.tag == "host":
            hosts.append(el.get("id", ""))
    return hosts


def run_smpi(args, nodes: int, driver_args: list[str], cfg: list[str]) -> tuple[list[str], float]:
    hosts = platform_hosts(args.platform)
    if nodes > len(hosts):
        raise SystemExit(f"--nodes: {nodes} nodes but {args.platform} has {len(hosts)} hosts")
    ranks = nodes * args.ranks_per_node
    with tempfile.TemporaryDirectory(prefix="shancoll-smpi-") as tmp:
        hostfile = Path(tmp) / "hosts"
        hostfile.write_text("".join(f"{h}:{args.ranks_per_node}\n" for h in hosts[:nodes]))
        cmd = [
            args.smpirun,
            "-np",
            str(ranks),
            "-platform",
            str(args.platform),
            "-hostfile",
            str(hostfile),
            *SMPI_CFG,
            *cfg,
            *args.smpi_cfg,
            str(args.driver),
            *driver_args,
        ]
        env = dict(os.environ)
        # Waits time out in wall-clock seconds, and a 1024-rank simulation
        # runs one rank at a time: give them the run's whole budget.
        env.setdefault("SHANCOLL_TIMEOUT", str(args.run_timeout))
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=tmp,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=args.run_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # smpirun and its simulator, nothing else
            out, _ = proc.communicate()  # rows of the algorithms that finished are kept
            print(f"    timed out after {args.run_timeout} s: {' '.join(cmd)}", file=sys.stderr)
            return out.splitlines(), time.monotonic() - t0
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            print(
                f"    failed ({proc.returncode}): {' '.join(cmd)}\n{err[-2000:]}", file=sys.stderr
            )
    return out.splitlines(), wall


def row_key(r: dict) -> tuple:
    return (
        r["collective"],
        r["algorithm"],
        r["distribution"],
        int(r["nodes"]),
        int(r["bytes_per_rank"]),
        r.get("timing") or DEFAULTS["timing"],
        float(r.get("intra_overhead_us") or DEFAULTS["intra_overhead_us"]),
    )


def existing_keys(out: Path) -> set[tuple]:
    if not out.exists():
        return set()
    with out.open() as f:
        return {row_key(r) for r in csv.DictReader(f)}


def upgrade_header(out: Path) -> None:
    """Rewrite a CSV of an older sweep with the current columns (defaults filled in)."""
    if not out.exists() or out.stat().st_size == 0:
        return
    with out.open() as f:
        reader = csv.DictReader(f)
        if reader.fieldnames == FIELDS:
            return
        rows = [{**DEFAULTS, **{k: v for k, v in r.items() if k in FIELDS}} for r in reader]
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def points(args):
    """(distribution label, driver arguments, size list) per point."""
    if args.collective == "allgatherv":
        for dist in args.dists.split(","):
            yield dist, ["--coll", "allgatherv", "--dist", dist, "--sizes", args.sizes]
    else:
        for dtype in args.dtypes.split(","):
            for op in args.ops.split(","):
                yield (
                    f"{dtype}_{op}",
                    [
                        "--coll",
                        "allreduce",
                        "--dtype",
                        dtype,
                        "--op",
                        op,
                        "--sizes",
                        args.counts,
                    ],
                )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("collective", choices=["allgatherv", "allreduce"])
    ap.add_argument("--platform", type=Path, required=True, help="SimGrid platform XML")
    ap.add_argument("--nodes", default="1,2,4,8,16,32", help="node counts (comma list)")
    ap.add_argument("--ranks-per-node", type=int, default=32)
    ap.add_argument("--sizes", default="1024", help="allgatherv: bytes per rank (c)")
    ap.add_argument("--dists", default="regular,decreasing,bcast")
    ap.add_argument("--counts", default="1,255", help="allreduce: elements")
    ap.add_argument("--dtypes", default="int,double")
    ap.add_argument("--ops", default="sum,max")
    ap.add_argument("--shancoll", default=None, help="shancoll algorithms (comma list)")
    ap.add_argument("--smpi", default=None, help="SMPI algorithms (comma list, '' for none)")
    ap.add_argument("--transport", default="two_sided", help="shan's transport: two_sided|rma")
    ap.add_argument(
        "--shared", action="store_true", help="shan leaves the result in the node segment"
    )
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument(
        "--timing",
        choices=["global", "barrier"],
        default="global",
        help="global: common simulated start, last exit - entry; barrier: barrier + slowest rank",
    )
    ap.add_argument(
        "--intra-overhead-us",
        type=float,
        default=0.0,
        help="software overhead per side of every intra-node MPI message (sensitivity study)",
    )
    ap.add_argument("--out", type=Path, default=None, help="CSV to append to")
    ap.add_argument("--resume", action="store_true", help="skip points already in --out")
    ap.add_argument("--check", action="store_true", help="correctness on real data, no CSV")
    ap.add_argument("--run-timeout", type=int, default=3600, help="seconds per smpirun")
    ap.add_argument("--driver", type=Path, default=DRIVER)
    ap.add_argument("--smpirun", default="smpirun")
    ap.add_argument("--smpi-cfg", action="append", default=[], help="extra smpirun argument")
    args = ap.parse_args(argv)
    args.platform = args.platform.resolve()  # smpirun runs in a temporary directory
    args.driver = args.driver.resolve()
    if not args.driver.exists():
        raise SystemExit(f"{args.driver} missing: run `make smpi` first")
    shancoll_algos = (
        args.shancoll if args.shancoll is not None else DEFAULT_SHANCOLL[args.collective]
    )
    smpi_algos = args.smpi if args.smpi is not None else DEFAULT_SMPI[args.collective]

    def rename(algo: str) -> str:  # the paper's shan reads its result in place
        return f"{algo}_shared" if algo == "shan" and args.shared else algo

    common = ["--iters", str(args.iters), "--warmup", str(args.warmup), "--repeats", "1"]
    common += ["--timing", args.timing]
    if args.intra_overhead_us:
        common += ["--intra-overhead-us", repr(args.intra_overhead_us)]
    # shan's transport is an option of allgatherv only (allreduce refuses it).
    transport = ["--transport", args.transport] if args.collective == "allgatherv" else []
    common += transport + (["--shared"] if args.shared else [])

    if args.check:
        failed = 0
        for nodes in map(int, args.nodes.split(",")):
            for dist, drv in points(args):
                names = ",".join(filter(None, [shancoll_algos, "mpi"]))
                check = [*drv, "--algorithms", names, *transport, "--check"]
                lines, wall = run_smpi(args, nodes, check, [])
                rows = [ln for ln in lines if ln.startswith("check,")]
                bad = [ln for ln in rows if not ln.endswith(",ok")]
                failed += len(bad) + (0 if rows else 1)
                print(f"{nodes} nodes {dist}: {len(rows) - len(bad)}/{len(rows)} ok ({wall:.0f} s)")
                for ln in bad:
                    print("   ", ln)
        return 1 if failed else 0

    out = args.out or ROOT / "benchmarks" / "results" / "smpi" / f"{args.collective}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    upgrade_header(out)
    done = existing_keys(out) if args.resume else set()
    new_file = not out.exists() or out.stat().st_size == 0
    with out.open("a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        if new_file:
            writer.writeheader()
        for nodes in map(int, args.nodes.split(",")):
            for dist, drv in points(args):
                sizes = [int(s) for s in drv[-1].split(",")]
                runs = []
                if shancoll_algos:
                    runs.append(("shancoll", shancoll_algos.split(","), []))
                for name in filter(None, smpi_algos.split(",")):
                    runs.append(("smpi", [name], [f"--cfg=smpi/{args.collective}:{name}"]))
                for impl, names, cfg in runs:
                    label = [rename(n) if impl == "shancoll" else f"smpi_{n}" for n in names]
                    elem = 4 if dist.startswith("int") else 8
                    sizes_b = (
                        sizes if args.collective == "allgatherv" else [s * elem for s in sizes]
                    )
                    if all(
                        (args.collective, lab, dist, nodes, b, args.timing, args.intra_overhead_us)
                        in done
                        for lab in label
                        for b in sizes_b
                    ):
                        continue
                    # SMPI's collectives alone: --native skips shancoll's setup.
                    algos = ["--native"]
                    if impl == "shancoll":
                        algos = ["--algorithms", ",".join(names)]
                    lines, wall = run_smpi(args, nodes, [*drv, *algos, *common], cfg)
                    n_rows = 0
                    for row in csv.reader(lines):
                        if len(row) != 10 or row[0] != args.collective:
                            continue
                        algo = rename(row[1]) if impl == "shancoll" else f"smpi_{names[0]}"
                        writer.writerow(
                            {
                                "collective": args.collective,
                                "algorithm": algo,
                                "impl": impl,
                                "distribution": dist,
                                "nodes": nodes,
                                "ranks_per_node": args.ranks_per_node,
                                "ranks": int(row[4]),
                                "bytes_per_rank": int(row[6]),
                                "time_us": float(row[7]),
                                "wall_s": round(wall, 1),
                                "platform": args.platform.name,
                                "timing": args.timing,
                                "intra_overhead_us": args.intra_overhead_us,
                            }
                        )
                        n_rows += 1
                    f.flush()
                    print(
                        f"{args.collective} {dist} {nodes} nodes {impl}:{','.join(names)}: "
                        f"{n_rows} rows, {wall:.0f} s wall",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
