#!/usr/bin/env python3
"""Figures and ratio tables of the simulated sweeps (sweep_smpi.py CSVs).

    python benchmarks/smpi/plot_smpi.py [--timing global|barrier] [--markdown] \
        benchmarks/results/smpi/allgatherv_aries.csv ...

writes <csv stem>.png and .svg beside each CSV (time vs nodes, one line per
algorithm, one panel per distribution / datatype-op-size, as in the papers)
and prints, per panel and node count, the best shancoll and the best SMPI
algorithm and their ratio. A CSV may hold rows of both timing methods
(column `timing`, sweep_smpi.py --timing): figures and tables use one,
`global` where the CSV has it, else `barrier` (or the one --timing names),
and say which. notebooks/smpi_scaling.ipynb calls the same functions. Only
csv + matplotlib.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path


def load(path: Path) -> list[dict]:
    with Path(path).open() as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["nodes"] = int(r["nodes"])
        r["bytes_per_rank"] = int(r["bytes_per_rank"])
        r["time_us"] = float(r["time_us"])
        r["timing"] = r.get("timing") or "barrier"  # CSVs older than the column
        r["intra_overhead_us"] = float(r.get("intra_overhead_us") or 0)
    return rows


def select(rows: list[dict], timing: str | None = None) -> list[dict]:
    """The rows of one timing method: `timing`, else global if present, else barrier."""
    methods = {r["timing"] for r in rows}
    if timing is None:
        timing = "global" if "global" in methods else "barrier"
    return [r for r in rows if r["timing"] == timing]


def describe(rows: list[dict]) -> str:
    """The timing method and intra-node overhead of rows, for titles."""
    timing = "/".join(sorted({r["timing"] for r in rows}))
    text = f"timing: {timing}"
    overheads = sorted({r["intra_overhead_us"] for r in rows})
    if overheads != [0.0]:
        text += ", intra-node overhead " + "/".join(f"{o:g}" for o in overheads) + " us per side"
    return text


def panels(rows: list[dict]) -> dict[tuple[str, int], list[dict]]:
    """Rows grouped by (distribution label, bytes per rank); the label names a
    nonzero intra-node overhead (sensitivity rows get panels of their own)."""
    out: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in rows:
        dist = r["distribution"]
        if r["intra_overhead_us"]:
            dist += f" +{r['intra_overhead_us']:g}us intra"
        out[(dist, r["bytes_per_rank"])].append(r)
    return dict(sorted(out.items()))


def best(rows: list[dict], impl: str, nodes: int) -> dict | None:
    cands = [r for r in rows if r["impl"] == impl and r["nodes"] == nodes]
    return min(cands, key=lambda r: r["time_us"]) if cands else None


def ratio_table(rows: list[dict]) -> str:
    """Per panel and node count: best SMPI / best shancoll (> 1: shancoll faster)."""
    lines = ["panel | nodes | best shancoll (us) | best SMPI (us) | SMPI / shancoll"]
    for (dist, size), prow in panels(rows).items():
        for nodes in sorted({r["nodes"] for r in prow}):
            s, m = best(prow, "shancoll", nodes), best(prow, "smpi", nodes)
            if not s or not m:
                continue
            lines.append(
                f"{dist} {size} B | {nodes} | {s['algorithm']} {s['time_us']:.1f} | "
                f"{m['algorithm']} {m['time_us']:.1f} | {m['time_us'] / s['time_us']:.2f}x"
            )
    return "\n".join(lines)


def markdown_tables(rows: list[dict]) -> str:
    """Per panel: a row per algorithm, a column per node count (us), the ratio last."""
    out = []
    for (dist, size), prow in panels(rows).items():
        nodes = sorted({r["nodes"] for r in prow})
        t = {(r["algorithm"], r["nodes"]): r["time_us"] for r in prow}
        out.append(f"{dist}, {size} B per rank (simulated us per call)\n")
        out.append("| algorithm | " + " | ".join(f"{n} nodes" for n in nodes) + " |")
        out.append("|---" * (len(nodes) + 1) + "|")
        for algo in sorted({r["algorithm"] for r in prow}, key=lambda a: (a.startswith("smpi"), a)):
            cells = [f"{t[(algo, n)]:.1f}" if (algo, n) in t else "-" for n in nodes]
            out.append(f"| {algo} | " + " | ".join(cells) + " |")
        ratios = []
        for n in nodes:
            s, m = best(prow, "shancoll", n), best(prow, "smpi", n)
            ratios.append(f"{m['time_us'] / s['time_us']:.1f}x" if s and m else "-")
        out.append("| **best SMPI / best shancoll** | " + " | ".join(ratios) + " |\n")
    return "\n".join(out)


def plot(rows: list[dict], out_stem: Path | None = None, title: str = ""):
    import matplotlib

    if out_stem is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = panels(rows)
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.6), squeeze=False)
    for ax, ((dist, size), prow) in zip(axes[0], groups.items(), strict=True):
        for algo in sorted({r["algorithm"] for r in prow}):
            pts = sorted((r["nodes"], r["time_us"]) for r in prow if r["algorithm"] == algo)
            smpi = algo.startswith("smpi_")
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                marker="o" if not smpi else "x",
                linestyle="-" if not smpi else "--",
                linewidth=2.2 if algo == "shan" else 1.2,
                label=algo,
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        rpn = "/".join(sorted({str(r["ranks_per_node"]) for r in prow}))
        ax.set_xlabel(f"nodes ({rpn} ranks each)")
        ax.set_ylabel("simulated time per call (us)")
        ax.set_title(f"{dist}, {size} B per rank")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    platform = rows[0]["platform"] if rows else ""
    fig.suptitle(f"{title} (SimGrid SMPI 3.32, {platform}; {describe(rows)})".strip())
    fig.tight_layout()
    if out_stem is not None:
        fig.savefig(out_stem.with_suffix(".png"), dpi=110)
        fig.savefig(out_stem.with_suffix(".svg"))
    return fig


def main(argv: list[str]) -> int:
    timing = None
    if "--timing" in argv:
        i = argv.index("--timing")
        timing = argv[i + 1]
        argv = argv[:i] + argv[i + 2 :]
    flags = {a for a in argv if a.startswith("--")}
    for name in (a for a in argv if not a.startswith("--")):
        path = Path(name)
        rows = select(load(path), timing)
        plot(rows, path.with_suffix(""), title=rows[0]["collective"] if rows else "")
        print(f"# {path} ({describe(rows)})\n{ratio_table(rows)}\n")
        if "--markdown" in flags:
            print(markdown_tables(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
