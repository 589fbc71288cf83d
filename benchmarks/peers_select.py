"""Chosen settings side by side, repeats interleaved: a subset of peers.py.

    .venv/bin/python benchmarks/peers_select.py [--runs FILE] \
        COLLECTIVE[,COLLECTIVE...] MAX_BYTES REPEATS SPEC...

SPEC is ``lib:setting[:preload][:KEY=VALUE,...]``: a library of peers.py
(mpich, openmpi, impi), one of its settings in ``peers.SETTINGS`` (e.g.
``"openmpi:smsc ^cma"``), ``preload`` to run with libshancoll_pmpi.so, and
extra environment variables (e.g. ``SHANCOLL_SINGLE_COPY=0`` or
``SHANCOLL_RULES=table.tsv``). Every spec runs shancoll_osu_style once per
repeat, all specs of a repeat before the next; printed per size: the median
of the repeats' per-call medians (us) and their range. On the AMD EPYC VM
every mpiexec job falls in a fast or a slow mode (up to 2x apart, small and
large messages alike), so read the ranges, not only the medians. Several
collectives (comma-separated) run in the same job (and only they), one
table each.
With ``--runs FILE`` the runs are added to FILE (JSON) and the table is of
every run in it: repeats taken by separate invocations (each within a
time limit, as /tmp/timed.sh's on the shared machine) are summed up as one.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402

from shancoll.bench import mpi_envs  # noqa: E402


def config(spec: str) -> peers.Config:
    lib, setting, *rest = spec.split(":")
    extra = dict(dict(peers.SETTINGS[lib]).get(setting, {}))
    preload = False
    for part in rest:
        if part == "preload":
            preload = True
        elif part:
            extra.update(kv.split("=", 1) for kv in part.split(","))
    return peers.Config(lib, setting, extra, preload)


def load(path: Path | None, specs: list[str]) -> dict[str, list[dict]]:
    """Earlier runs of these specs from FILE: {spec: [{(coll, size): us}]}."""
    runs: dict[str, list[dict]] = {s: [] for s in specs}
    if path and path.exists():
        for spec, rs in json.loads(path.read_text()).items():
            runs.setdefault(spec, []).extend(
                {(k.split()[0], int(k.split()[1])): v for k, v in r.items()} for r in rs
            )
    return runs


def save(path: Path, runs: dict[str, list[dict]]) -> None:
    out = {s: [{f"{c} {n}": v for (c, n), v in r.items()} for r in rs] for s, rs in runs.items()}
    path.write_text(json.dumps(out))


def main() -> None:
    argv = sys.argv[1:]
    path = None
    if argv[:1] == ["--runs"]:
        path, argv = Path(argv[1]), argv[2:]
    if len(argv) < 4:
        sys.exit(__doc__)
    colls, max_bytes = argv[0].split(","), argv[1]
    repeats, specs = int(argv[2]), argv[3:]
    only = ["-c", ",".join(colls)]
    configs = [config(s) for s in specs]
    envs = {
        lib: mpi_envs.ensure("default") if lib == "mpich" else mpi_envs.load(lib)
        for lib in {c.lib for c in configs}
    }
    runs = load(path, specs)
    for _ in range(repeats):
        for spec, c in zip(specs, configs, strict=True):
            runs[spec].append(peers.run_once(envs[c.lib], c, 2, [*only, "-m", max_bytes]))
    if path:
        save(path, runs)
    for coll in colls:
        sizes = sorted({size for rs in runs.values() for r in rs for (k, size) in r if k == coll})
        print(f"{coll:<8} " + "  ".join(f"{s[:28]:>28}" for s in specs))
        for size in sizes:
            cells = []
            for spec in specs:
                v = [r[(coll, size)] for r in runs[spec] if (coll, size) in r]
                cells.append(f"{statistics.median(v):8.2f} [{min(v):6.2f}-{max(v):6.2f}]")
            print(f"{size:>8} " + "  ".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    main()
