"""What a sweep's results say: the speedup table, the rule table of
``algorithm="auto"`` and the generated sections of ``docs/performance.md``.

All read only ``results.csv`` rows (``shancoll.bench.results.read_results``):

* :func:`speedup_table` -> the text table a sweep prints and writes to
  ``table.txt``: native time / series time per size, a block per
  (collective, ranks, layout, library) and distribution.

* :func:`rule_table` -> the text format of ``src/cpp/shancoll/rules.h``: per
  (collective, ranks, nodes, hosts), the algorithm with the lowest median time at each
  measured size, over size ranges split at the geometric mean of neighbouring
  sizes, neighbours with the same winner merged. Only series of shancoll
  algorithms with their default options or with mechanism options
  (:data:`TUNED_OPTIONS`: a winner with them carries them into its row), a
  correct result and, for allgatherv, the regular distribution count (the
  table has no distribution). gatherv, scatterv and reduce_scatter get the
  rows of gather, scatter and reduce_scatter_block (:data:`SIBLINGS`).
* :func:`performance_sections` -> per collective a Markdown block: at each size
  the best shancoll algorithm and its speedup over the library's default
  collective (``native``) and over its best forced algorithm (``native:<name>``).
* :func:`update_markdown` replaces those blocks between
  ``<!-- BEGIN generated: <collective> -->`` and ``<!-- END generated: ... -->``
  markers, appending the blocks that have none; the rest is left as written.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from pathlib import Path

from .results import group_key, on_hosts, row_hosts
from .series import ALL_DISTRIBUTIONS, format_bytes

__all__ = ["performance_sections", "rule_table", "speedup_table", "update_markdown"]


def _good(r: dict) -> bool:
    t = r.get("time_median_s")
    return r.get("status") == "ok" and r.get("check") == "ok" and bool(t) and not math.isnan(t)


# Options that choose a mechanism, not a result: a rule may carry them
# (calls without options of their own then run with them, rules.h).
TUNED_OPTIONS = ("single_copy", "ring_window", "buffer_size", "buffers")


def _rule_options(text: str) -> str | None:
    """A series' options as a rule's options column ("-": none), or None when
    they are not all mechanism options. Booleans as 1/0, as rules.h reads them."""
    if not text:
        return "-"
    items = [item.split("=", 1) for item in text.split(",")]
    if any(len(kv) != 2 or kv[0] not in TUNED_OPTIONS for kv in items):
        return None
    value = {"True": "1", "False": "0"}
    return ",".join(f"{k}={value.get(v, v)}" for k, v in items)


# A choice must win by more than this to enter a rule: below it the
# algorithm's defaults are kept, and the choice of the next smaller size,
# unless the MPI library's own call is faster than they are. At
# sizes where an option changes nothing (single copy of 8 bytes), one run's
# series differ by up to 20% on these VMs; a table fitted without a margin
# flips "-" and "single_copy=0", or shan and pieces, from size to size.
MARGIN = 0.10


def _winners(rows: Sequence[dict]) -> dict[tuple, dict[int, tuple[str, str]]]:
    """(collective, ranks, nodes, hosts) -> {bytes_per_rank: (algorithm, options)}: the
    fastest at each size, else within :data:`MARGIN` of it (and no slower than ``mpi``)
    the smaller size's choice or the fastest algorithm's defaults."""
    times: dict[tuple, dict[int, dict[tuple[str, str], list[float]]]] = {}
    for r in rows:
        options = _rule_options(r.get("options") or "")
        if r.get("kind") != "shancoll" or options is None or not _good(r):
            continue
        if r["algorithm"] == "auto":
            continue  # the table's own choice: never a rule of its own
        if r["collective"] in ("allgatherv", "allgather") and r["distribution"] != "regular":
            continue
        if r["collective"] == "alltoallv":
            continue  # auto reads no alltoallv sizes: they differ from rank to rank
        coll = "allgatherv" if r["collective"] == "allgather" else r["collective"]
        key = (coll, int(r["ranks"]), int(r.get("nodes") or 0), row_hosts(r))
        at = times.setdefault(key, {}).setdefault(r["bytes_per_rank"], {})
        at.setdefault((r["algorithm"], options), []).append(float(r["time_median_s"]))
    # Several runs of one series (results concatenated): the median of their
    # medians, robust to one run's noise (the fastest of three put Open MPI's
    # exscan ahead at single sizes that shan won in two runs of three).
    return {
        key: _choices({s: {c: statistics.median(t) for c, t in at.items()} for s, at in v.items()})
        for key, v in times.items()
    }


def _choices(by_size: dict[int, dict[tuple[str, str], float]]) -> dict[int, tuple[str, str]]:
    chosen: dict[int, tuple[str, str]] = {}
    previous = None
    for size in sorted(by_size):
        at = by_size[size]
        fastest = min(at, key=at.get)
        # Never slower than the MPI library's own call: it wins its ties.
        bound = min(at[fastest] * (1 + MARGIN), at.get(("mpi", "-"), math.inf))
        plain = (fastest[0], "-")
        if previous in at and at[previous] <= bound:
            fastest = previous
        elif at.get(plain, math.inf) <= bound:
            fastest = plain
        chosen[size] = previous = fastest
    return chosen


# The collectives whose rows a sibling shares: the sweep times the regular
# forms, and auto reads a v-form's regular calls by its regular form's rows,
# its irregular ones at 0 bytes by its own, reduce_scatter's by its mean block.
SIBLINGS = {"gather": "gatherv", "scatter": "scatterv", "reduce_scatter_block": "reduce_scatter"}


def rule_table(rows: Sequence[dict], source: str = "") -> str:
    """The rule table (text) fitted from sweep rows; see the module docstring."""
    winners = _winners(rows)
    for (coll, *rest), by_size in list(winners.items()):
        if coll in SIBLINGS:
            winners.setdefault((SIBLINGS[coll], *rest), by_size)
    lines = [
        "# shancoll rule table for algorithm='auto' (format: src/cpp/shancoll/rules.h)",
        f"# fitted by python -m shancoll.bench.sweep from {source or 'a sweep'}",
        "# coll\tmin_bytes\tmax_bytes\tmin_ranks\tmax_ranks\tnodes\thosts\talgorithm\toptions",
    ]
    for (coll, ranks, nodes, hosts), by_size in sorted(winners.items()):
        sizes = sorted(by_size)
        bounds = [0] + [math.isqrt(a * b) for a, b in zip(sizes, sizes[1:], strict=False)] + [None]
        spans: list[list] = []  # [lo, hi, (algorithm, options)]
        for i, s in enumerate(sizes):
            if spans and spans[-1][2] == by_size[s]:
                spans[-1][1] = bounds[i + 1]
            else:
                spans.append([bounds[i], bounds[i + 1], by_size[s]])
        for lo, hi, (alg, options) in spans:
            hi_text = "*" if hi is None else str(hi)
            node_text = str(nodes) if nodes else "*"
            fields = (coll, lo, hi_text, ranks, ranks, node_text, hosts, alg, options)
            lines.append("\t".join(map(str, fields)))
    return "\n".join(lines) + "\n"


def _speedup(base: float | None, t: float) -> str:
    return "-" if base is None else f"{base / t:.2f}x"


def _section(coll: str, rows: Sequence[dict], command: str) -> str:
    out = [
        f"Generated by `python -m shancoll.bench.sweep --update-docs` from `{command}`; "
        "speedup = the library's time / shancoll's best (> 1: shancoll faster).",
        "",
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["collective"] == coll and _good(r):
            lib = r.get("mpi_library") or r.get("library") or "MPI"
            key = (lib, int(r["ranks"]), row_hosts(r), int(r["ranks_per_node"]), r["distribution"])
            groups.setdefault(key, []).append(r)
    order = {d: i for i, d in enumerate(ALL_DISTRIBUTIONS)}
    for (lib, ranks, _, rpn, dist), g in sorted(groups.items(), key=lambda kv: (
        *kv[0][:4], order.get(kv[0][4], len(order))
    )):  # fmt: skip
        layout = on_hosts(g, "physical nodes" if rpn == 0 else f"virtual nodes of {rpn}")
        out += [
            f"**{lib}, {ranks} ranks, {layout}, {dist}**",
            "",
            "| bytes/rank | best shancoll | time | vs default | best forced | vs best forced |",
            "|---:|---|---:|---:|---|---:|",
        ]
        for size in sorted({r["bytes_per_rank"] for r in g}):
            at = [r for r in g if r["bytes_per_rank"] == size]
            ours = [r for r in at if r.get("kind") == "shancoll"]
            if not ours:
                continue
            best = min(ours, key=lambda r: r["time_median_s"])
            t = best["time_median_s"]
            native = next((r["time_median_s"] for r in at if r["series"] == "native"), None)
            forced = [r for r in at if r["series"].startswith("native:")]
            bf = min(forced, key=lambda r: r["time_median_s"]) if forced else None
            out.append(
                f"| {format_bytes(size)} | {best['series']} | {t * 1e6:.1f} us | "
                f"{_speedup(native, t)} | {bf['series'] if bf else '-'} | "
                f"{_speedup(bf['time_median_s'] if bf else None, t)} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def performance_sections(rows: Sequence[dict], command: str) -> dict[str, str]:
    """Collective -> its generated Markdown block."""
    colls = list(dict.fromkeys(r["collective"] for r in rows))
    return {c: _section(c, rows, command) for c in colls}


def update_markdown(path: str | Path, sections: dict[str, str]) -> None:
    """Replaces (or appends) the marked block of every collective in ``path``."""
    p = Path(path)
    text = p.read_text(encoding="utf-8") if p.exists() else ""
    for coll, body in sections.items():
        begin, end = f"<!-- BEGIN generated: {coll} -->", f"<!-- END generated: {coll} -->"
        block = f"{begin}\n{body}{end}"
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
        if pattern.search(text):
            text = pattern.sub(lambda _, b=block: b, text)
        else:
            text = text.rstrip("\n") + f"\n\n### {coll} (generated)\n\n{block}\n"
    p.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------------
# the speedup table of a sweep


def describe_group(rows: Sequence[dict]) -> str:
    r = rows[0]
    nodes = next((x["nodes"] for x in rows if x.get("nodes")), None)
    rpn = int(r["ranks_per_node"])
    if rpn == 0:
        layout = f"{nodes} node{'s' if nodes != 1 else ''}" if nodes else "physical nodes"
    else:
        layout = f"{nodes} virtual nodes of {rpn}" if nodes else f"virtual nodes of {rpn}"
    lib = next((x["mpi_library"] for x in rows if x.get("mpi_library")), "MPI")
    return f"{r['collective']}: {r['ranks']} ranks, {on_hosts(rows, layout)}, {lib}"


def speedup_table(rows: Sequence[dict], meta: dict | None = None) -> str:
    """Speedup native/series of the median times, per size; one block per distribution.

    ``x`` marks a speedup; ``err`` an error, ``FAIL`` a wrong result, ``-`` no data.
    """
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(group_key(r), []).append(r)
    blocks = []
    for key in sorted(groups):
        g = groups[key]
        blocks.append(
            f"== {describe_group(g)}: speedup = native time / series time "
            f"(median of {g[0].get('repeats') or '?'} repeats; >1: faster than native)"
        )
        for dist in [d for d in ALL_DISTRIBUTIONS if any(r["distribution"] == d for r in g)]:
            blocks.append(_distribution_block(dist, [r for r in g if r["distribution"] == dist]))
    if meta:
        bad = {k: v for k, v in meta.get("runs", {}).items() if v.get("status") != "ok"}
        for k, v in bad.items():
            blocks.append(f"!! run {k}: {v['status']} (see meta.json)")
    return "\n".join(blocks) if blocks else "(no results)"


def _distribution_block(dist: str, rows: Sequence[dict]) -> str:
    """One distribution's lines of the speedup table: a row per size, a column per series."""
    labels = [s for s in dict.fromkeys(r["series"] for r in rows) if s != "native"]
    by = {(r["series"], r["bytes_per_rank"]): r for r in rows}
    widths = [max(7, len(s)) for s in labels]
    lines = [
        f"-- {dist}",
        f"{'bytes/rank':>10} {'native':>9} "
        + " ".join(f"{s:>{w}}" for s, w in zip(labels, widths, strict=True)),
    ]
    for size in sorted({r["bytes_per_rank"] for r in rows}):
        nat = by.get(("native", size))
        nat_t = nat["time_median_s"] if nat and nat.get("status") == "ok" else None
        cells = [_speedup_cell(by.get((s, size)), nat_t) for s in labels]
        lines.append(
            f"{format_bytes(size):>10} {_fmt_time(nat_t):>9} "
            + " ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
        )
    return "\n".join(lines)


def _speedup_cell(r: dict | None, native_time: float | None) -> str:
    if r is None:
        return "-"
    if r.get("status") != "ok":
        status = r.get("status") or "err"
        return "err" if status == "error" else status
    if r.get("check") == "fail":
        return "FAIL"
    if native_time is None or not r["time_median_s"]:
        return "-"
    return f"{native_time / r['time_median_s']:.2f}x"


def _fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.1f}us"
    if t < 1:
        return f"{t * 1e3:.2f}ms"
    return f"{t:.2f}s"
