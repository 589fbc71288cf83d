"""The results schema of a sweep: what ``results.csv`` and ``meta.json`` hold.

The sweep writes them (:mod:`shancoll.bench.sweep`); the plots and reports
read them (:mod:`shancoll.bench.plot`, :mod:`shancoll.bench.report`). The
columns are documented in ``benchmarks/README.md`` (a test keeps both equal).

A *row* is one point (series, size) of one run: a dict keyed by
:data:`CSV_COLUMNS`, numbers as numbers (:func:`read_results` converts them
back). ``meta.json`` describes the sweep (:func:`new_meta`) and records one
entry per run (:func:`run_record`), keyed by the run's id.
"""

from __future__ import annotations

import csv
import datetime
import json
import math
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CSV_COLUMNS",
    "Row",
    "failed_runs",
    "group_key",
    "layout_name",
    "on_hosts",
    "new_meta",
    "read_results",
    "row_hosts",
    "run_record",
    "write_json",
    "write_results",
]

Row = dict[str, Any]

CSV_COLUMNS = [
    "sweep", "run_id", "collective", "distribution", "ranks", "ranks_per_node", "nodes",
    "hosts", "series", "kind", "algorithm", "options", "bytes_per_rank", "total_bytes", "max_bytes",
    "dtype", "warmup", "repeats", "iterations", "time_median_s", "time_min_s", "time_max_s",
    "bandwidth_gbs", "check", "status", "error", "mpi_library", "hostname", "date",
    "library", "baseline", "kernel",
]  # fmt: skip
INT_COLUMNS = {
    "ranks",
    "ranks_per_node",
    "nodes",
    "hosts",
    "bytes_per_rank",
    "total_bytes",
    "max_bytes",
    "warmup",
    "repeats",
    "iterations",
}
FLOAT_COLUMNS = {"time_median_s", "time_min_s", "time_max_s", "bandwidth_gbs"}


def layout_name(ranks_per_node: int, hosts: int = 1) -> str:
    """The node layout in run ids and file names: ``physical``, ``rpn<n>`` (virtual
    nodes of n ranks), ``hosts<h>`` (h real MPI nodes, :mod:`shancoll.bench.hosts`)
    or ``hosts<h>-rpn<n>``."""
    if hosts <= 1:
        return "physical" if ranks_per_node == 0 else f"rpn{ranks_per_node}"
    return f"hosts{hosts}" + (f"-rpn{ranks_per_node}" if ranks_per_node else "")


def row_hosts(r: Row) -> int:
    """The real MPI nodes (hosts) of a row's run; 1 in results from before the column."""
    return int(r.get("hosts") or 1)


def on_hosts(rows: Sequence[Row], layout: str) -> str:
    """A layout's words with the real MPI nodes first, when the rows ran on several."""
    hosts = row_hosts(rows[0])
    return layout if hosts <= 1 else f"{hosts} hosts (real MPI nodes), {layout}"


def group_key(r: Row) -> tuple:
    """The rows of one table block or one figure: (collective, ranks, ranks_per_node,
    hosts, library)."""
    rpn = int(r["ranks_per_node"])
    return (r["collective"], int(r["ranks"]), rpn, row_hosts(r), r.get("library") or "")


# ---------------------------------------------------------------------------
# results.csv


def read_results(path: str | os.PathLike) -> list[Row]:
    """Rows of a ``results.csv`` with numeric columns converted (empty -> None / NaN)."""
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            for k in INT_COLUMNS:
                if k in r:
                    r[k] = int(r[k]) if r[k] not in ("", None) else None
            for k in FLOAT_COLUMNS:
                if k in r:
                    r[k] = float(r[k]) if r[k] not in ("", None) else math.nan
            rows.append(r)
    return rows


def write_results(path: Path, rows: Iterable[Row]) -> None:
    """Writes ``results.csv`` whole (through a temporary file: a reader never sees half)."""
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _csv_value(r.get(k)) for k in CSV_COLUMNS})
    os.replace(tmp, path)


def _csv_value(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


# ---------------------------------------------------------------------------
# meta.json


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def new_meta(name: str, description: str, config: dict, mpiexec: str, runs: dict) -> dict:
    """``meta.json`` of a sweep as it starts: ``finished`` and ``elapsed_s`` come at its end."""
    return {
        "sweep": name,
        "description": description,
        "config": config,
        "argv": list(sys.argv),
        "cwd": str(Path.cwd()),
        "mpiexec": mpiexec,
        "started": now_utc(),
        "finished": None,
        "runs": runs,
    }


def run_record(
    *,
    status: str,
    library: str,
    baseline: str,
    returncode: int | None = None,
    elapsed_s: float = 0.0,
    command: str = "",
    mpi_env: dict | None = None,
    env_overrides: dict | None = None,
    environment: dict | None = None,
    skipped: dict | None = None,
    hung_at: dict | None = None,
    stderr_tail: str = "",
    stdout_tail: str | None = None,
) -> dict:
    """One run's entry in ``meta.json``; a run that never started has no ``mpi_env``,
    ``env_overrides`` or ``stdout_tail``."""
    record: dict[str, Any] = {
        "status": status,
        "returncode": returncode,
        "elapsed_s": elapsed_s,
        "command": command,
        "library": library,
    }
    if mpi_env is not None:
        record["mpi_env"] = mpi_env
    record["baseline"] = baseline
    if env_overrides is not None:
        record["env_overrides"] = env_overrides
    record.update(
        environment=environment or {},
        skipped=skipped or {},
        hung_at=hung_at,
        stderr_tail=stderr_tail,
    )
    if stdout_tail is not None:
        record["stdout_tail"] = stdout_tail
    return record


def failed_runs(meta: dict) -> list[str]:
    """The ids of the runs in ``meta`` that did not end ``ok``."""
    return [k for k, v in meta["runs"].items() if v["status"] != "ok"]


def write_json(path: Path, data: dict) -> None:
    """Writes ``meta.json`` whole, as :func:`write_results` does."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
