"""Calibration on this machine: measure, fit and install the rule table of ``auto``.

    python -m shancoll.tune [--ranks 2] [--quick] [--dry-run]
    python -m shancoll.tune --from-results DIR   # fit only, no timing

(``python -m shancoll.bench.tune`` is the same.) It starts its ranks itself:
under ``mpiexec`` it says so and stops, instead of every rank starting a
sweep of its own.

Times every shancoll algorithm of every collective the tables hold
(allgatherv, allreduce, bcast, reduce, gather, scatter, alltoall,
reduce_scatter_block, scan, exscan, barrier; the v-forms and reduce_scatter
get the rows of their regular siblings), and the persistent engine of each
regular collective's persistent form
(``<coll>_init``, start + wait), the MPI library's own call among them
(``mpi``; for a persistent form its own persistent request), side by side on one node
at ``--ranks`` ranks and every power of two from 8 B to 4 MiB, to 16 MiB for
allgatherv, allreduce, bcast and reduce (a sweep, ``shancoll.bench.sweep``, with the same
kernel and method), fits the rule table (the fastest algorithm per size
range, ``shancoll.bench.report.rule_table``), adds this machine's match
lines (CPU model, family and model, caches, MPI library:
``shancoll.rules_info()``) and writes it
into the user's table directory (``shancoll._rules.user_rules_dir()``),
where ``auto`` looks before the tables shipped in the package. Every
process of this user on a machine of the same CPU, caches and MPI library then
uses it; ``shancoll.rules_info()`` (and ``SHANCOLL_PMPI_VERBOSE``) says so.

Every algorithm runs with its default options, and release_gather (bcast,
reduce, allreduce) and shan (allgatherv, gather, scatter, alltoall, scan,
exscan) also with single copy forced off and on,
shan's shared-memory ring and pair channels also at 2 MiB per rank and
release_gather's reduce also with 2 MiB buffers: the mechanism that wins
differs between machines (on the Zen 3 and Zen 5 EPYC VMs the shared segment
beat cross-memory attach, on the Intel Xeon and the Zen 4 VM the reverse; on
Zen 4 a ring larger than the L2 caches beat both), and a rule that chose one
carries it (``single_copy=0``) into calls made without options.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .report import rule_table
from .results import read_results
from .series import PERSISTENT_ENGINES
from .sweep import load_config, run_sweep

COLLECTIVES = ["allgatherv", "allreduce", "bcast", "reduce", "gather", "scatter", "alltoall"]
COLLECTIVES += ["reduce_scatter_block", "scan", "exscan", "barrier"]
# The persistent forms (rules.h, <coll>_init rows): each collective's persistent
# engine against the MPI library's own persistent request (``mpi``), the
# engines that may copy straight between the ranks' buffers also with that
# off (single_copy=0: their shared-segment deposits alone), and those whose
# single copy runs only where asked, or before their deposits where asked
# (allreduce and reduce on a node of two ranks; bcast and allgather), with it
# asked for (single_copy=1).
PERSISTENT = [f"{c}_init" for c in PERSISTENT_ENGINES]
_OFF, _ASKED = "[single_copy=false]", "[single_copy=true]"
PERSISTENT_MECHANISMS = {
    f"{c}_init": [PERSISTENT_ENGINES[c] + option for option in options]
    for c, options in {
        "bcast": (_OFF, _ASKED),
        "allgather": (_OFF, _ASKED),
        "alltoall": (_OFF,),
        "gather": (_OFF,),
        "scatter": (_OFF,),
        "allreduce": (_ASKED,),
        "reduce": (_ASKED,),
    }.items()
}
# The mechanism variants timed beside the defaults (report.TUNED_OPTIONS).
MECHANISMS = ["release_gather[single_copy=false]", "release_gather[single_copy=true]"]
# reduce: also release_gather's segment with 2 MiB buffers in 64 slots
# (larger than an L2 cache: twice as fast on the Zen 4 VM from 64 KiB).
REDUCE_MECHANISMS = [
    *MECHANISMS,
    "release_gather[single_copy=false,buffer_size=2097152,buffers=64]",
]
# allreduce: also pieces through a 2 MiB ring (larger than an L2 cache:
# two to three times faster at 4-256 KiB on the Zen 4 VM).
ALLREDUCE_MECHANISMS = [*MECHANISMS, "pieces[ring_window=2097152]"]
# allgather(v) on one node: single copy off and on, and the shared-memory
# ring at its default and at 2 MiB per rank (larger than an L2 cache).
ALLGATHER_MECHANISMS = [
    "shan[single_copy=false]",
    "shan[single_copy=true]",
    "shan[single_copy=false,ring_window=2097152]",
]
# gather, scatter, alltoall, reduce_scatter_block on one node: shan's pair
# channels, with single copy off and on, and through a 2 MiB ring per pair
# (on the Zen 4 VM up to eight times faster than the default ring at 64 KiB-4 MiB).
PAIR_MECHANISMS = [*ALLGATHER_MECHANISMS[:2], "shan[ring_window=2097152]"]
# scan and exscan on one node of two ranks: shan's pair paths, single copy off and on.
SCAN_MECHANISMS = ALLGATHER_MECHANISMS[:2]


# The collectives whose bar is set to 16 MiB (issue 24: allgather(v), allreduce,
# bcast, reduce, every power of two from 8 B to 16 MiB): timed to 16 MiB, the
# others to 4 MiB. Past 4 MiB the working set leaves the caches and the
# mechanism that wins can change (Zen 3 VM: allgather of 16 MiB through the
# shared segment under MPICH and by Intel MPI's own exchange under Intel MPI,
# where single copy won at 4 MiB); a table fitted to 4 MiB carried its 4 MiB
# choice beyond.
TIMED_TO_16_MIB = ("allgatherv", "allreduce", "bcast", "reduce")


# The fingerprint's keys, in the order of a table's match lines (src/cpp/shancoll/rules.h).
FINGERPRINT = ("cpu", "cpuid", "caches", "mpi")


def machine() -> dict[str, str]:
    """This process's CPU model, family and model, caches and MPI library, as a
    table's match lines name them."""
    from mpi4py import MPI  # noqa: F401  (MPI initialised: the library's version)

    import shancoll

    info = shancoll.rules_info()
    return {key: info[key] for key in FINGERPRINT}


def table_name(fingerprint: dict[str, str]) -> str:
    """A file name for the machine's table: its CPU, family and model, caches and
    MPI library, slugged (one model name, "AMD EPYC" in a VM, covers CPUs that
    differ in caches: their tables must not overwrite each other)."""
    known = [fingerprint[k] for k in FINGERPRINT if fingerprint.get(k, "unknown") != "unknown"]
    slug = re.sub(r"[^a-z0-9.]+", "-", " ".join(known).lower())
    return slug.strip("-") + ".tsv"


def matched_table(rows: Sequence[dict], fingerprint: dict[str, str], source: str) -> str:
    """The fitted table, with the match lines that make it this machine's (a
    value the machine could not tell, "unknown", makes no line)."""
    header = [
        f"match\t{key}\t{fingerprint[key]}"
        for key in FINGERPRINT
        if fingerprint.get(key, "unknown") != "unknown"
    ]
    return "\n".join(header) + "\n" + rule_table(rows, source)


def install(text: str, fingerprint: dict[str, str], directory: Path | None = None) -> Path:
    """Writes the table into the user's directory (or `directory`); its path."""
    from shancoll._rules import user_rules_dir

    target = (directory or user_rules_dir()) / table_name(fingerprint)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def sweep_config(ranks: int, quick: bool):
    """The calibration sweep: every collective and mechanism, at ``ranks`` on one node."""
    return load_config(
        "quick",
        name="tune",
        ranks=[ranks],
        ranks_per_node=[0],
        # every power of two: the fit splits between measured sizes at their
        # geometric mean, and on the Xeon VM gather's and scatter's single copy
        # overtook at 32 KiB, which powers of four (8 and 32 KiB) put at 16.
        sizes="8:4MiB:8" if quick else "8:4MiB:2",
        collective_sizes=dict.fromkeys(TIMED_TO_16_MIB, "8:16MiB:8" if quick else "8:16MiB:2"),
        distributions=["regular"],
        series="*",
        collective_series={"allreduce": ALLREDUCE_MECHANISMS, "bcast": MECHANISMS}
        | {"reduce": REDUCE_MECHANISMS, "allgatherv": ALLGATHER_MECHANISMS}
        | dict.fromkeys(("gather", "scatter", "alltoall", "reduce_scatter_block"), PAIR_MECHANISMS)
        | dict.fromkeys(("scan", "exscan"), SCAN_MECHANISMS)
        | PERSISTENT_MECHANISMS,
    ).replace(collectives=COLLECTIVES + PERSISTENT)


def measure(ranks: int, quick: bool, out: Path, dry_run: bool) -> Path | None:
    """Runs the calibration sweep into `out`; None for a dry run."""
    cfg = sweep_config(ranks, quick)
    if dry_run:
        print(f"would time {', '.join(cfg.collectives)} at {ranks} ranks on one node into {out}")
        return None
    run_sweep(cfg, out, plots=False)
    return out


def launched_ranks() -> tuple[int, int]:
    """(rank, size) when this process was started by an MPI launcher
    (mpiexec of MPICH, Intel MPI or Open MPI), else (0, 1)."""
    for rank, size in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if os.environ.get(size, "").isdigit():
            return int(os.environ.get(rank, "0") or 0), int(os.environ[size])
    return 0, 1


def default_out() -> Path:
    """Where the sweep writes by default: beside the user's tables, not the working directory."""
    from shancoll._rules import user_rules_dir

    return user_rules_dir().parent / "tune"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m shancoll.tune", description=__doc__)
    ap.add_argument("--ranks", type=int, default=2, help="ranks on the node (default 2)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes (powers of 8, not of 2)")
    ap.add_argument("--out", help="where the sweep writes (default ~/.cache/shancoll/tune)")
    ap.add_argument("--from-results", metavar="DIR", help="fit from an earlier sweep, no timing")
    ap.add_argument("--rules-dir", metavar="DIR", help="install here instead of the user's")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    rank, size = launched_ranks()
    if size > 1 and not args.from_results:
        # Every rank would start a sweep of its own (each launching its ranks): refuse, once.
        if rank == 0:
            print(
                f"python -m shancoll.tune starts its own {args.ranks} ranks: run it without "
                f"mpiexec (for {size} ranks: python -m shancoll.tune --ranks {size})",
                file=sys.stderr,
            )
        return 2
    out = Path(args.from_results or args.out or default_out())
    if not args.from_results and measure(args.ranks, args.quick, out, args.dry_run) is None:
        return 0
    rows = read_results(out / "results.csv")
    fingerprint = machine()
    text = matched_table(rows, fingerprint, str(out))
    directory = Path(args.rules_dir) if args.rules_dir else None
    print(f"wrote {install(text, fingerprint, directory)}")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
