"""Chosen settings side by side, repeats interleaved: a subset of peers.py.

    .venv/bin/python benchmarks/peers_select.py COLLECTIVE[,COLLECTIVE...] MAX_BYTES REPEATS SPEC...

SPEC is ``lib:setting[:preload][:KEY=VALUE,...]``: a library of peers.py
(mpich, openmpi, impi), one of its settings in ``peers.SETTINGS`` (e.g.
``"openmpi:smsc ^cma"``), ``preload`` to run with libshancoll_pmpi.so, and
extra environment variables (e.g. ``SHANCOLL_SINGLE_COPY=0`` or
``SHANCOLL_RULES=table.tsv``). Every spec runs shancoll_osu_style once per
repeat, all specs of a repeat before the next; printed per size: the median
of the repeats' per-call medians (us) and their range. On the AMD EPYC VM
every mpiexec job falls in a fast or a slow mode (up to 2x apart, small and
large messages alike), so read the ranges, not only the medians. Several
collectives (comma-separated) run in the same job, one table each: at small
sizes a job of every collective takes little longer than a job of one.
"""

from __future__ import annotations

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


def main() -> None:
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    colls, max_bytes = sys.argv[1].split(","), sys.argv[2]
    repeats, specs = int(sys.argv[3]), sys.argv[4:]
    only = ["-c", colls[0]] if len(colls) == 1 else []
    configs = [config(s) for s in specs]
    envs = {
        lib: mpi_envs.ensure("default") if lib == "mpich" else mpi_envs.load(lib)
        for lib in {c.lib for c in configs}
    }
    runs: dict[str, list[dict]] = {s: [] for s in specs}
    for _ in range(repeats):
        for spec, c in zip(specs, configs, strict=True):
            runs[spec].append(peers.run_once(envs[c.lib], c, 2, [*only, "-m", max_bytes]))
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
