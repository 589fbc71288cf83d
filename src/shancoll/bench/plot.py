"""Plots of sweep results: time and speedup over native against size.

``python -m shancoll.bench.plot benchmarks/results/quick/results.csv [--out DIR]``

For every (collective, ranks, ranks_per_node, hosts, library) group of a
``results.csv`` two figures, each as PNG and SVG:
``<collective>_P<ranks>_<layout>[_<library>]_time`` (median time per call of
the slowest rank, min-max over repeats shaded) and ``..._speedup`` (native
time / series time; above 1 is faster than the MPI library's default
collective called from mpi4py; forced native algorithms are the dashed grey
``native:<name>`` lines). One panel per distribution, one line per series, log
axes; the title names the MPI library, ranks, node layout and host.

Matplotlib's object API is used (no pyplot, no global backend switch): the
files are rendered by the Agg backend, and the functions also work inside a
notebook whatever its backend.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .results import group_key, layout_name, on_hosts, read_results
from .series import ALL_DISTRIBUTIONS, format_bytes

__all__ = ["figure", "plot_results", "style", "main"]

_ALG_COLORS = {
    "shan": "C0",
    "ring": "C1",
    "bruck": "C2",
    "recursive_doubling": "C3",
    "mpi": "C4",
    "gatherv_bcast": "C5",
}
_EXTRA_COLORS = ["C6", "C8", "C9", "C7", "C5"]


def style(label: str) -> dict:
    """Line style of a series: same colour per algorithm, dashes for variants."""
    if label == "native":
        return {"color": "black", "linestyle": "-", "marker": "o", "linewidth": 2.0}
    if label.startswith("native:"):  # the library's collective with a forced algorithm
        marker = "v^<>phH*"[sum(map(ord, label)) % 8]
        return {"color": "0.3", "linestyle": "--", "marker": marker, "linewidth": 1.2}
    if label == "memcpy":
        return {"color": "0.55", "linestyle": ":", "marker": "", "linewidth": 2.0}
    base, _, opts = label.partition("[")
    if base == "shan_shared":
        return {"color": "C0", "linestyle": "--", "marker": "D", "linewidth": 1.6}
    color = _ALG_COLORS.get(base)
    if color is None:
        color = _EXTRA_COLORS[sum(map(ord, base)) % len(_EXTRA_COLORS)]
    if opts:
        markers = {"rma": "^", "two_sided": "v"}
        key = opts.rstrip("]").split(",")[0]
        return {
            "color": color,
            "linestyle": "-.",
            "marker": markers.get(key, "x"),
            "linewidth": 1.3,
        }
    return {"color": color, "linestyle": "-", "marker": "s", "linewidth": 1.6}


def _title(rows: Sequence[dict]) -> str:
    r = rows[0]
    nodes = next((x["nodes"] for x in rows if x.get("nodes")), None)
    rpn = int(r["ranks_per_node"])
    if rpn == 0:
        layout = (
            f"{nodes} node{'s' if nodes != 1 else ''} (physical)" if nodes else "physical nodes"
        )
    else:
        layout = f"{nodes} virtual nodes x {rpn} rank{'s' if rpn != 1 else ''}"
    layout = on_hosts(rows, layout)
    lib = next((x["mpi_library"] for x in rows if x.get("mpi_library")), "MPI")
    host = next((x["hostname"] for x in rows if x.get("hostname")), "")
    date = next((x["date"][:10] for x in rows if x.get("date")), "")
    reps = r.get("repeats") or "?"
    return (
        f"{r['collective']} - {lib} - {r['ranks']} ranks, {layout}\n"
        f"{host} {date}, median of {reps} repeats, slowest rank per call, float64"
    )


def figure(rows: Sequence[dict], what: str = "time"):
    """A Figure (one panel per distribution) for the rows of one group."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    if what not in ("time", "speedup"):
        raise ValueError(f"what: 'time' or 'speedup', got {what!r}")
    good = [
        r
        for r in rows
        if r.get("status") == "ok" and r.get("check") != "fail" and r.get("time_median_s")
    ]
    dists = [d for d in ALL_DISTRIBUTIONS if any(r["distribution"] == d for r in good)]
    fig = Figure(figsize=(4.6 * max(1, len(dists)) + 1.8, 4.4), layout="constrained")
    axes = fig.subplots(1, max(1, len(dists)), squeeze=False, sharey=True)[0]
    labels = list(dict.fromkeys(r["series"] for r in good))
    sizes = sorted({r["bytes_per_rank"] for r in good})
    for ax, dist in zip(axes, dists, strict=False):
        _draw_lines(ax, [r for r in good if r["distribution"] == dist], labels, what)
        _dress_panel(ax, dist, sizes, what)
    axes[0].set_ylabel(
        "time per call [s]" if what == "time" else "speedup over native (native / series)"
    )
    if what == "speedup":
        axes[0].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    _legend(fig, axes)
    kind = "time per call" if what == "time" else "speedup over the MPI library's default (native)"
    fig.suptitle(f"{_title(rows)} - {kind}" if rows else kind, fontsize="medium")
    return fig


def _draw_lines(ax, rows: Sequence[dict], labels: Sequence[str], what: str) -> None:
    """One line per series of one distribution's rows: its times, or its speedups."""
    native = {r["bytes_per_rank"]: r["time_median_s"] for r in rows if r["series"] == "native"}
    for label in labels:
        pts = sorted(
            ((r["bytes_per_rank"], r) for r in rows if r["series"] == label),
            key=lambda xr: xr[0],
        )
        if what == "speedup":
            if label == "native":
                continue
            pts = [(x, r) for x, r in pts if x in native]
        if not pts:
            continue
        xs = [x for x, _ in pts]
        if what == "time":
            ys = [r["time_median_s"] for _, r in pts]
            lo = [r.get("time_min_s") or r["time_median_s"] for _, r in pts]
            hi = [r.get("time_max_s") or r["time_median_s"] for _, r in pts]
        else:
            ys = [native[x] / r["time_median_s"] for x, r in pts]
        st = style(label)
        ax.plot(xs, ys, label=label, markersize=4, **st)
        if what == "time":  # min-max over repeats (on speedups it only adds clutter)
            ax.fill_between(xs, lo, hi, color=st["color"], alpha=0.10, linewidth=0)


def _dress_panel(ax, dist: str, sizes: Sequence[int], what: str) -> None:
    """Log axes with the measured sizes as ticks, the title, grid (and 1x for speedups)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    if what == "speedup":
        ax.axhline(1.0, color="black", linewidth=0.8)
    if min(sizes) > 0:  # barrier's one point is 0 bytes: a linear axis
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(int(round(v)))))
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_title(dist)
    ax.set_xlabel("bytes per rank (c)")
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", axis="y", alpha=0.1)


def _legend(fig, axes) -> None:
    """One legend for all panels: every series once, in the order first drawn."""
    handles, names = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        for h, n in zip(*ax.get_legend_handles_labels(), strict=True):
            if n not in names:
                handles.append(h)
                names.append(n)
    if handles:
        fig.legend(handles, names, loc="outside right center", fontsize="small")


def plot_results(
    rows: Sequence[dict], out_dir, formats: Sequence[str] = ("png", "svg"), dpi: int = 120
) -> list[Path]:
    """Writes the time and speedup figures of every group; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(group_key(r), []).append(r)
    paths = []
    for (coll, ranks, rpn, hosts, lib), g in sorted(groups.items()):
        if not any(r.get("status") == "ok" for r in g):
            continue
        stem = f"{coll}_P{ranks}_{layout_name(rpn, hosts)}"
        if lib not in ("", "default"):
            stem += f"_{lib}"
        for what in ("time", "speedup"):
            fig = figure(g, what)
            for ext in formats:
                p = out / f"{stem}_{what}.{ext}"
                fig.savefig(p, dpi=dpi)
                paths.append(p)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m shancoll.bench.plot",
        description="Plot a sweep's results.csv (PNG and SVG).",
    )
    ap.add_argument("csv", help="results.csv written by python -m shancoll.bench.sweep")
    ap.add_argument("--out", default=None, help="output directory (default: the CSV's)")
    ap.add_argument("--formats", default="png,svg")
    args = ap.parse_args(argv)
    rows = read_results(args.csv)
    out = args.out or Path(args.csv).parent
    for p in plot_results(rows, out, formats=args.formats.split(",")):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
