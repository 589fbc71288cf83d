"""Benchmark sweeps: ``python -m shancoll.bench.sweep [CONFIG] [--quick] [options]``.

A sweep is described by a TOML config (``benchmarks/configs/*.toml``; see
``benchmarks/README.md``): collectives, series (algorithms with options,
``shan_shared``, ``native``, ``memcpy``), sizes in bytes per rank, the
distributions, rank counts, node layouts and timing parameters. The sweep
plans one *run* per (collective, ranks, hosts, ranks_per_node, distribution),
launches each as ``mpiexec -n P python -m shancoll.bench.kernel ...`` (all
series of a run side by side in one MPI job), and

* prints one progress line per run (k/total, what runs, status, elapsed);
* survives failed and hung runs (``run_timeout``; the process group is
  killed, the status recorded, the point that hung named);
* writes ``results.csv`` (schema: :mod:`shancoll.bench.results`,
  ``benchmarks/README.md``) and
  ``meta.json`` (config, command lines, every run's status and environment:
  MPI library and version, mpi4py, shancoll, hosts, cores, CPU) to
  ``benchmarks/results/<name>/`` after every run;
* with ``--resume`` skips the runs already complete in that directory;
* prints the speedup table (native time / series time, per size and
  distribution; :mod:`shancoll.bench.report`) and writes the plots
  (:mod:`shancoll.bench.plot`).

``--quick`` is the README's main job (``make bench``; its config is
``configs/quick.toml`` next to this module): 2 ranks, allgatherv from 1 KiB
to 4 MiB per rank and allreduce, bcast, reduce from 8 B to 256 KiB, the
three distributions, every algorithm plus ``shan_shared``, ``native`` and
``memcpy``, on one node and on two virtual nodes of one rank (where shan's
inter-node pipeline and its transports ``shan[two_sided]``, ``shan[rma]``
run); about a minute on 2 quiet cores.

Three node layouts: ``ranks_per_node = [0]`` (the machine as the MPI library
sees it: one physical node here), ``[n]`` (virtual nodes of n ranks: shancoll
treats groups of ranks as nodes while MPI still moves their messages through
shared memory), and ``hosts = [2]``, the layout "2 hosts": the ranks on two
real MPI nodes (:mod:`shancoll.bench.hosts`: two host names of this machine,
MPI's network module between them), so the native collectives too see two
nodes. ``python -m shancoll.bench.sweep hosts`` prints the tables for it.

From Python (the notebooks do this)::

    from shancoll.bench.sweep import load_config, run_sweep
    result = run_sweep(load_config("quick", sizes=[1024, 65536]), "/tmp/out")
    print(result.table)
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import baselines, hosts, mpi_envs
from .plot import plot_results
from .report import performance_sections, rule_table, speedup_table, update_markdown
from .results import (
    failed_runs,
    layout_name,
    new_meta,
    now_utc,
    read_results,
    run_record,
    write_json,
    write_results,
)
from .series import (
    ALL_DISTRIBUTIONS,
    COLLECTIVES,
    DISTRIBUTIONS,
    algorithms_of,
    distributions_of,
    format_bytes,
    parse_series,
    parse_sizes,
    series_label,
    split_series,
)

__all__ = [
    "Config",
    "Run",
    "SweepResult",
    "default_out_dir",
    "find_config",
    "load_config",
    "plan",
    "run_sweep",
    "main",
]

# The names shancoll.bench.mpi_envs.ensure takes.
MPI_LIBRARIES = ("default", "mpich", "openmpi", "impi")

RESULTS_ROOT = Path("benchmarks") / "results"
CONFIG_DIR = Path("benchmarks") / "configs"

# Configs shipped in the package (the quick sweep), for a run outside a checkout.
PACKAGED_CONFIGS = Path(__file__).resolve().parent / "configs"

# ---------------------------------------------------------------------------
# config


@dataclass
class Config:
    """A sweep. Field names are the TOML keys (``[timing]``/``[launch]`` tables flattened)."""

    name: str = "sweep"
    description: str = ""
    collectives: list[str] = field(default_factory=lambda: ["allgatherv"])
    ranks: list[int] = field(default_factory=lambda: [2])
    ranks_per_node: list[int] = field(default_factory=lambda: [0])
    # real MPI nodes (shancoll.bench.hosts): 1 = this machine as it is, 2 = two host names
    hosts: list[int] = field(default_factory=lambda: [1])
    distributions: list[str] = field(default_factory=lambda: list(DISTRIBUTIONS))
    sizes: list[int] = field(default_factory=lambda: parse_sizes("1KiB:1MiB:4"))
    # per-collective sizes ([collective_sizes] table), e.g. allreduce = "8:256KiB:8"
    collective_sizes: dict[str, list[int]] = field(default_factory=dict)
    dtype: str = "float64"
    # series labels; "*" = every registered algorithm with default options
    series: list[str] = field(default_factory=lambda: ["*", "shan_shared", "native", "memcpy"])
    # series of [[algorithms]] entries with `collectives = [...]`: only for those
    collective_series: dict[str, list[str]] = field(default_factory=dict)
    # MPI libraries (shancoll.bench.mpi_envs names); each runs shancoll's series and its own
    # native series (default + forced algorithms, shancoll.bench.baselines)
    libraries: list[str] = field(default_factory=lambda: ["default"])
    forced_baselines: bool = True
    # [timing]
    warmup: int = 2
    repeats: int = 5
    iterations: int | None = None  # None = auto
    target_seconds: float = 0.1
    max_iterations: int = 1000
    run_timeout: float = 600.0
    call_timeout: float | None = 60.0
    # [launch]
    mpiexec: str | None = None
    mpiexec_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    source: str = ""  # where the config came from (not a TOML key)

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **_normalise(changes))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _series_from_algorithms(tables: Sequence[dict]) -> tuple[list[str], dict[str, list[str]]]:
    """``[[algorithms]]`` tables -> series labels (list-valued options expand): those
    for every collective, and those of entries restricted by ``collectives``."""
    labels: list[str] = []
    scoped: dict[str, list[str]] = {}
    for t in tables:
        t = dict(t)
        if "name" not in t:
            raise ValueError(f"algorithms: an entry without 'name': {t}")
        name = str(t.pop("name"))
        only = _as_list(t.pop("collectives", []))
        combos: list[dict] = [{}]
        for key, value in t.items():  # the algorithm's keyword options (list values expand)
            vals = _as_list(value)
            if key == "block_size":
                vals = [parse_sizes([v])[0] for v in vals]
            combos = [{**c, key: v} for c in combos for v in vals]
        for c in combos:
            if name == "*" and c:
                raise ValueError("algorithms: name '*' takes no options")
            label = name if name == "*" else series_label(name, c)
            for coll in only:
                scoped.setdefault(str(coll), []).append(label)
            if not only:
                labels.append(label)
    return labels, scoped


def _normalise(d: dict) -> dict:
    """Parses/validates config values given as TOML or Python values."""
    out = dict(d)
    for key in (
        "collectives",
        "distributions",
        "ranks",
        "ranks_per_node",
        "hosts",
        "mpiexec_args",
        "libraries",
    ):
        if key in out and out[key] is not None:
            out[key] = _as_list(out[key])
    if (
        isinstance(out.get("mpiexec_args"), list)
        and len(out["mpiexec_args"]) == 1
        and " " in str(out["mpiexec_args"][0])
    ):
        out["mpiexec_args"] = shlex.split(out["mpiexec_args"][0])
    if "sizes" in out:
        out["sizes"] = parse_sizes(out["sizes"])
    if "collective_sizes" in out:
        out["collective_sizes"] = {
            str(c): parse_sizes(v) for c, v in dict(out["collective_sizes"]).items()
        }
    if "series" in out and isinstance(out["series"], str):
        out["series"] = split_series(out["series"])
    if out.get("iterations") in ("auto", 0):
        out["iterations"] = None
    scoped = [*out.get("collective_sizes", {}), *out.get("collective_series", {})]
    for c in [*out.get("collectives", []), *scoped]:
        if c not in COLLECTIVES:
            raise ValueError(f"collectives: unknown {c!r} (valid: {', '.join(COLLECTIVES)})")
    for lib in out.get("libraries", []):
        if lib not in MPI_LIBRARIES:
            raise ValueError(f"libraries: unknown {lib!r} (valid: {', '.join(MPI_LIBRARIES)})")
    for dist in out.get("distributions", []):
        if dist not in ALL_DISTRIBUTIONS:
            raise ValueError(
                f"distributions: unknown {dist!r} (valid: {', '.join(ALL_DISTRIBUTIONS)})"
            )
    for p in out.get("ranks", []):
        if not isinstance(p, int) or p < 1:
            raise ValueError(f"ranks: positive integers, got {p!r}")
    for k in out.get("ranks_per_node", []):
        if not isinstance(k, int) or k < 0:
            raise ValueError(f"ranks_per_node: 0 (physical nodes) or a node size, got {k!r}")
    for h in out.get("hosts", []):
        if h not in (1, 2):
            raise ValueError(f"hosts: 1 (this machine) or 2 (two real MPI nodes), got {h!r}")
    for s in out.get("series", []):
        if s != "*":
            parse_series(s)  # syntax check; algorithm names are checked when planning
    if "env" in out:
        out["env"] = {str(k): str(v) for k, v in out["env"].items()}
    return out


def parse_config(text: str, source: str = "<string>") -> Config:
    """A :class:`Config` from TOML text."""
    data = tomllib.loads(text)
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key == "collective_sizes":
            flat[key] = value
        elif key in ("timing", "launch"):
            if not isinstance(value, dict):
                raise ValueError(f"{source}: [{key}] must be a table")
            flat.update(value)
        elif key == "algorithms":
            flat["series"], flat["collective_series"] = _series_from_algorithms(value)
        else:
            flat[key] = value
    names = {f.name for f in dataclasses.fields(Config)} - {"source"}
    unknown = set(flat) - names
    if unknown:
        raise ValueError(f"{source}: unknown key(s) {sorted(unknown)}")
    try:
        return Config(**_normalise(flat), source=source)
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None


def project_root() -> Path | None:
    """The nearest directory, from the current one up, that holds ``benchmarks/configs``."""
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / CONFIG_DIR).is_dir():
            return d
    return None


def find_config(name: str) -> Path | None:
    """``benchmarks/configs/<name>.toml`` of :func:`project_root`, else the package's own
    ``configs/<name>.toml`` (the quick sweep, so that ``--quick`` runs outside a checkout)."""
    root = project_root()
    in_checkout = root / CONFIG_DIR / f"{name}.toml" if root else None
    for p in (in_checkout, PACKAGED_CONFIGS / f"{name}.toml"):
        if p is not None and p.is_file():
            return p
    return None


def default_out_dir(name: str) -> Path:
    """``benchmarks/results/<name>`` of :func:`project_root`, else of the current directory."""
    return (project_root() or Path.cwd()) / RESULTS_ROOT / name


def load_config(name_or_path: str | os.PathLike = "quick", **overrides: Any) -> Config:
    """A config by file path or by name (:func:`find_config`), with overrides."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.is_file():
        if not p.is_file():
            raise FileNotFoundError(f"config: no such file {p}")
        cfg = parse_config(p.read_text(encoding="utf-8"), str(p))
    else:
        found = find_config(str(name_or_path))
        if found is None:
            raise FileNotFoundError(
                f"config: no {CONFIG_DIR / (str(name_or_path) + '.toml')} "
                f"in {Path.cwd()} or its parents, and none of that name in the package"
            )
        cfg = parse_config(found.read_text(encoding="utf-8"), str(found))
    return cfg.replace(**{k: v for k, v in overrides.items() if v is not None})


# ---------------------------------------------------------------------------
# planning


@dataclass(frozen=True)
class Run:
    """One MPI job: every series and size of one distribution, one MPI library.

    The job of a library's ``default`` baseline times shancoll's series and
    the native collective side by side; each forced native algorithm
    (``baseline``, selected by ``env``, which MPI reads once per process)
    gets a job of its own with the native series only, labelled
    ``native:<baseline>``.
    """

    collective: str
    ranks: int
    ranks_per_node: int
    distribution: str
    series: tuple[str, ...]
    sizes: tuple[int, ...] = ()
    library: str = "default"
    baseline: str = "default"
    env: tuple[tuple[str, str], ...] = ()
    hosts: int = 1

    @property
    def run_id(self) -> str:
        layout = layout_name(self.ranks_per_node, self.hosts)
        rid = f"{self.collective}-P{self.ranks}-{layout}-{self.distribution}"
        if self.library != "default":
            rid += f"-{self.library}"
        return rid if self.baseline == "default" else f"{rid}-{self.baseline}"

    def describe(self) -> str:
        layout = layout_name(self.ranks_per_node, self.hosts)
        what = f"{self.collective} P={self.ranks} {layout} {self.distribution}"
        if self.library != "default":
            what += f" {self.library}"
        return what if self.baseline == "default" else f"{what} native:{self.baseline}"


def expand_series(labels: Sequence[str], algorithms: Sequence[str]) -> list[str]:
    """``*`` -> the registered algorithms; duplicates dropped, order kept; names checked."""
    out: list[str] = []
    for lb in labels:
        for x in algorithms if lb == "*" else [lb]:
            parse_series(x, algorithms)
            if x not in out:
                out.append(x)
    return out


def native_series(lib: str, coll: str) -> list[Any]:
    """``shancoll.bench.baselines.native_series``: the library's default first, then each
    forced algorithm. The ``default`` MPI (whichever the running Python has) has
    its default only: which forced settings would apply to it is not known."""
    if lib == "default":
        return [baselines.Series("default", {})]
    return baselines.native_series(lib, coll)


def _short(lib: str, name: str) -> str:
    """A forced series' name without its library prefix: ``mpich:ring`` -> ``ring``."""
    return name.removeprefix(f"{lib}:")


def plan(
    cfg: Config,
    algorithms: Callable[[str], Sequence[str]] = algorithms_of,
    baselines: Callable[[str, str], Sequence[Any]] | None = None,
) -> list[Run]:
    """The runs of a sweep, in execution order (only allgatherv takes every distribution).

    Per library: the job of its default baseline (the first of ``baselines``;
    every series of the config), then, with ``forced_baselines``, one job per
    forced native algorithm.
    """
    baselines = baselines or native_series
    runs = []
    for coll in cfg.collectives:
        labels = [*cfg.series, *cfg.collective_series.get(coll, [])]
        series = tuple(expand_series(labels, list(algorithms(coll))))
        dists = [d for d in cfg.distributions if d in distributions_of(coll)]
        # barrier moves no data: one point, 0 bytes
        sizes = (0,) if coll == "barrier" else tuple(cfg.collective_sizes.get(coll, cfg.sizes))
        for p, h, rpn, dist, lib in itertools.product(
            cfg.ranks, cfg.hosts, cfg.ranks_per_node, dists, cfg.libraries
        ):
            if p % h:
                raise ValueError(f"hosts: {p} ranks do not split evenly over {h} hosts")
            default, *forced = baselines(lib, "allgatherv" if coll == "intergroup" else coll)
            env = tuple(sorted(default.env.items()))
            runs.append(Run(coll, p, rpn, dist, series, sizes, lib, "default", env, h))
            # Forced intra-communicator algorithms say nothing of intergroup calls.
            if not cfg.forced_baselines or "native" not in series or coll == "intergroup":
                continue
            for b in forced:
                env = tuple(sorted(b.env.items()))
                name = _short(lib, b.name)
                runs.append(Run(coll, p, rpn, dist, ("native",), sizes, lib, name, env, h))
    return runs


# ---------------------------------------------------------------------------
# running


def launcher(cfg: Config, lib: str, mpiexec: str | None = None):
    """The :class:`shancoll.bench.mpi_envs.MpiEnv` of ``lib`` (built if needed), with the
    sweep's ``mpiexec`` (default library only) and ``mpiexec_args`` applied."""
    menv = mpi_envs.ensure(lib)
    if lib == "default" and mpiexec:
        menv = dataclasses.replace(menv, mpiexec=[mpiexec])
    return dataclasses.replace(menv, mpiexec=[*menv.mpiexec, *cfg.mpiexec_args])


def bench_command(cfg: Config, run: Run, jsonl: Path, menv: Any) -> list[str]:
    argv = [
        menv.python,
        "-m",
        "shancoll.bench.kernel",
        "--collective",
        run.collective,
        "--distribution",
        run.distribution,
        "--sizes",
        ",".join(str(s) for s in run.sizes),
        "--series",
        ",".join(run.series),
        "--ranks-per-node",
        str(run.ranks_per_node),
        "--warmup",
        str(cfg.warmup),
        "--repeats",
        str(cfg.repeats),
        "--iterations",
        "auto" if cfg.iterations is None else str(cfg.iterations),
        "--target-seconds",
        str(cfg.target_seconds),
        "--max-iterations",
        str(cfg.max_iterations),
        "--dtype",
        cfg.dtype,
    ]
    if run.baseline != "default":
        argv += ["--native-job", run.baseline]
    if cfg.call_timeout:
        argv += ["--call-timeout", str(cfg.call_timeout)]
    on_hosts = hosts.launch_args(menv.name, run.hosts, run.ranks)
    menv = dataclasses.replace(menv, mpiexec=[*menv.mpiexec, *on_hosts])
    return menv.command(run.ranks, [*argv, "--jsonl", str(jsonl), "--quiet"])


def _kill_group(proc: subprocess.Popen) -> None:
    """Ends the run's process group (mpiexec and its ranks), TERM first, then KILL."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        data = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return data[-limit:]


def _wait_job(
    cmd: list[str], env: dict[str, str], timeout: float, out_path: Path, err_path: Path
) -> tuple[str, int | None]:
    """Runs one job to its end or its timeout: (status, return code)."""
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            # A session of its own: a kill of its process group reaches every rank.
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as e:
            err.write(f"could not start {cmd[0]}: {e}\n".encode())
            return "failed", None
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return "timeout", None
        except BaseException:  # Ctrl-C: take the job down with us
            _kill_group(proc)
            raise
    return ("ok" if rc == 0 else "failed"), rc


def _read_events(jsonl: Path) -> list[dict]:
    """The kernel's JSON lines (``{"event": ...}``, see :mod:`shancoll.bench.kernel`)."""
    events = []
    if jsonl.exists():
        for line in jsonl.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line cut by a kill
    return events


def _measured_rows(events: Sequence[dict], common: dict) -> list[dict]:
    """The rows the kernel measured, with the run's columns and the bandwidth added."""
    rows = [
        {**common, **{k: v for k, v in e.items() if k != "event"}}
        for e in events
        if e["event"] == "row"
    ]
    for r in rows:
        t = r.get("time_median_s")
        r["bandwidth_gbs"] = r["total_bytes"] / t / 1e9 if t else None
    return rows


def _hung_point(events: Sequence[dict], rows: Sequence[dict]) -> dict | None:
    """The point a job that died or timed out was in: its last start without a row."""
    starts = [e for e in events if e["event"] == "start"]
    if not starts:
        return None
    last = starts[-1]
    measured = {(r["series"], r["bytes_per_rank"]) for r in rows}
    return None if (last["series"], last["bytes_per_rank"]) in measured else last


def _hung_row(
    cfg: Config, run: Run, common: dict, nodes: Any, hung: dict, status: str, elapsed: float
) -> dict:
    """A row for the point that hung, so that the CSV shows where the job ended."""
    what = "timed out" if status == "timeout" else "died"
    return {
        **common,
        "collective": run.collective,
        "distribution": run.distribution,
        "ranks": run.ranks,
        "ranks_per_node": run.ranks_per_node,
        "nodes": nodes,
        "hosts": run.hosts,
        "series": hung["series"],
        "bytes_per_rank": hung["bytes_per_rank"],
        "dtype": cfg.dtype,
        "status": status,
        "error": f"the job {what} during this point after {elapsed:.0f} s",
    }


def execute_run(
    cfg: Config, run: Run, sweep_name: str, menv: Any, workdir: Path
) -> tuple[list[dict], dict]:
    """Runs one MPI job; returns (rows, run record for meta.json). Never raises for the job."""
    jsonl = workdir / f"{run.run_id}.jsonl"
    jsonl.unlink(missing_ok=True)
    out_path, err_path = workdir / f"{run.run_id}.out", workdir / f"{run.run_id}.err"
    try:
        cmd = bench_command(cfg, run, jsonl, menv)
    except ValueError as e:  # a layout this machine cannot launch (no real hosts)
        return [], _unavailable(run, f"cannot launch {run.describe()}: {e}")
    # Precedence: the library's tuned settings, the config's, the forced algorithm.
    job_env = {**menv.env, **cfg.env, **dict(run.env)}  # a value None removes the variable
    env = {k: v for k, v in {**os.environ, **job_env}.items() if v is not None}
    env["PYTHONUNBUFFERED"] = "1"
    t0 = time.monotonic()
    status, rc = _wait_job(cmd, env, cfg.run_timeout, out_path, err_path)
    elapsed = time.monotonic() - t0
    events = _read_events(jsonl)
    env_rec = next((e for e in events if e["event"] == "env"), {})
    if status == "ok" and not any(e["event"] == "done" for e in events):
        status = "failed"
    common = {
        "sweep": sweep_name,
        "run_id": run.run_id,
        "mpi_library": env_rec.get("mpi_library", ""),
        "hostname": env_rec.get("hostname", ""),
        "date": env_rec.get("date", ""),
        "library": run.library,
        "baseline": run.baseline,
    }
    rows = _measured_rows(events, common)
    hung = _hung_point(events, rows) if status != "ok" else None
    if hung is not None:
        nodes = env_rec.get("nodes")
        rows.append(_hung_row(cfg, run, common, nodes, hung, status, elapsed))
    failed = status != "ok"
    record = run_record(
        status=status,
        returncode=rc,
        elapsed_s=round(elapsed, 2),
        command=shlex.join(cmd),
        library=run.library,
        mpi_env={"name": menv.name, "version": menv.version, "python": menv.python},
        baseline=run.baseline,
        env_overrides=job_env,
        environment=env_rec,
        skipped={e["series"]: e["reason"] for e in events if e["event"] == "skip"},
        hung_at=None if hung is None else {k: hung[k] for k in ("series", "bytes_per_rank")},
        stderr_tail=_tail(err_path) if failed else "",
        stdout_tail=_tail(out_path) if failed else None,
    )
    return rows, record


def _complete(run: Run, rows: Sequence[dict], record: dict | None) -> bool:
    if not record or record.get("status") != "ok":
        return False
    have = {(r["series"], r["bytes_per_rank"]) for r in rows if r["run_id"] == run.run_id}
    skipped = set(record.get("skipped") or {})
    labels = [f"native:{run.baseline}" if run.baseline != "default" else s for s in run.series]
    return all((s, size) in have for s in labels if s not in skipped for size in run.sizes)


def _show(p: Path) -> str:
    """A path relative to the current directory when it is below it."""
    try:
        return str(Path(p).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def _fmt_elapsed(s: float) -> str:
    m, s = divmod(int(round(s)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def progress_bar(done: int, total: int, elapsed: float, width: int = 20) -> str:
    """``[3/10 ######-------------- left 7, ~1m10s]``: runs done, left, and the time left
    estimated from the mean run so far."""
    filled = width * done // max(total, 1)
    eta = f", ~{_fmt_elapsed(elapsed / done * (total - done))}" if done else ""
    return f"[{done + 1}/{total} {'#' * filled}{'-' * (width - filled)} left {total - done}{eta}]"


def _launcher_or_error(cfg: Config, lib: str, mpiexec: str | None) -> Any:
    """The library's launcher, or why it cannot be had (its runs are then recorded failed)."""
    try:
        return launcher(cfg, lib, mpiexec)
    except Exception as e:  # not installed, setup failed: the other libraries go on
        return f"{type(e).__name__}: {e}"


def _unavailable(run: Run, why: str) -> dict:
    return run_record(status="failed", library=run.library, baseline=run.baseline, stderr_tail=why)


@dataclass
class SweepResult:
    out_dir: Path
    rows: list[dict]
    meta: dict
    table: str
    plots: list[Path]

    @property
    def csv(self) -> Path:
        return self.out_dir / "results.csv"

    @property
    def failed_runs(self) -> list[str]:
        return failed_runs(self.meta)


def _previous_results(out: Path) -> tuple[list[dict], dict]:
    """The rows and run records of an earlier sweep in ``out`` (none if it left no files)."""
    csv_path, meta_path = out / "results.csv", out / "meta.json"
    if not (csv_path.exists() and meta_path.exists()):
        return [], {}
    return read_results(csv_path), json.loads(meta_path.read_text(encoding="utf-8")).get("runs", {})


def _say_outcome(say: Callable[..., None], record: dict, rows: Sequence[dict], t_start: float):
    """Ends a run's progress line: status, the point that hung, the points in error, time;
    then the last lines of a failed job's stderr."""
    note = ""
    if record["hung_at"]:
        h = record["hung_at"]
        note = f" at {h['series']} {format_bytes(h['bytes_per_rank'])}"
    bad = [r for r in rows if r.get("status") == "error" or r.get("check") == "fail"]
    if bad:
        note += f" ({len(bad)} points with errors/failed checks)"
    say(
        f" {record['status']}{note} {record['elapsed_s']:.1f}s "
        f"(elapsed {_fmt_elapsed(time.monotonic() - t_start)})",
        flush=True,
    )
    if record["status"] != "ok" and record["stderr_tail"]:
        tail = record["stderr_tail"].strip().splitlines()[-5:]
        say("    " + "\n    ".join(tail))


def _run_jobs(
    cfg: Config,
    todo: Sequence[Run],
    out: Path,
    rows: list[dict],
    meta: dict,
    mpiexec: str | None,
    say: Callable[..., None],
) -> list[dict]:
    """Runs the jobs in turn, rewriting results.csv and meta.json after each; returns
    the rows, each run's replacing those of an earlier attempt."""
    t_start = time.monotonic()
    launchers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="shancoll-sweep-") as tmp:
        for k, run in enumerate(todo, 1):
            bar = progress_bar(k - 1, len(todo), time.monotonic() - t_start)
            say(f"{bar} {run.describe()} ...", end="", flush=True)
            if run.library not in launchers:
                launchers[run.library] = _launcher_or_error(cfg, run.library, mpiexec)
            menv = launchers[run.library]
            if isinstance(menv, str):
                why = f"MPI library {run.library!r} unavailable: {menv}"
                new_rows, record = [], _unavailable(run, why)
            else:
                new_rows, record = execute_run(cfg, run, cfg.name, menv, Path(tmp))
            rows = [r for r in rows if r["run_id"] != run.run_id] + new_rows
            meta["runs"][run.run_id] = record
            write_results(out / "results.csv", rows)
            write_json(out / "meta.json", meta)
            _say_outcome(say, record, new_rows, t_start)
    return rows


def run_sweep(
    cfg: Config,
    out_dir: str | os.PathLike | None = None,
    *,
    resume: bool = False,
    plots: bool = True,
    progress: Callable[..., None] | None = print,
    mpiexec: str | None = None,
) -> SweepResult:
    """Runs (or resumes) a sweep; writes results.csv, meta.json, table.txt and plots."""
    out = Path(out_dir) if out_dir is not None else default_out_dir(cfg.name)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda *a, **k: None)
    # The default library's launcher; the others' come from their envs (mpi_envs).
    mpiexec = mpiexec or cfg.mpiexec or os.environ.get("SHANCOLL_MPIEXEC") or None
    runs = plan(cfg)
    rows, old_runs = _previous_results(out) if resume else ([], {})
    planned = {r.run_id for r in runs}
    kept = {k: v for k, v in old_runs.items() if k not in planned}
    shown_mpiexec = mpiexec or "(per library: shancoll.bench.mpi_envs)"
    meta = new_meta(cfg.name, cfg.description, cfg.to_dict(), shown_mpiexec, kept)
    t_start = time.monotonic()
    todo = []
    for run in runs:
        if resume and _complete(run, rows, old_runs.get(run.run_id)):
            meta["runs"][run.run_id] = old_runs[run.run_id]
        else:
            todo.append(run)
    if resume and len(todo) < len(runs):
        say(f"resume: {len(runs) - len(todo)} of {len(runs)} runs already complete in {out}")
    say(
        f"sweep {cfg.name!r}: {len(todo)} runs of {', '.join(cfg.collectives)} "
        f"({format_bytes(cfg.sizes[0])}..{format_bytes(cfg.sizes[-1])} per rank), "
        f"libraries: {', '.join(cfg.libraries)}"
    )
    rows = _run_jobs(cfg, todo, out, rows, meta, mpiexec, say)
    meta["finished"] = now_utc()
    meta["elapsed_s"] = round(time.monotonic() - t_start, 1)
    write_results(out / "results.csv", rows)
    write_json(out / "meta.json", meta)
    table = speedup_table(rows, meta)
    (out / "table.txt").write_text(table + "\n", encoding="utf-8")
    (out / "rules.tsv").write_text(rule_table(rows, _show(out)), encoding="utf-8")
    written: list[Path] = []
    if plots and any(r.get("status") == "ok" for r in rows):
        written = plot_results(rows, out)
    return SweepResult(out, rows, meta, table, written)


# ---------------------------------------------------------------------------
# command line


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m shancoll.bench.sweep",
        description="Run a benchmark sweep (mpiexec jobs of shancoll.bench.kernel); write CSV, "
        "JSON, a speedup table and plots to benchmarks/results/<name>/.",
    )
    ap.add_argument(
        "config",
        nargs="?",
        default=None,
        help="config file or name in benchmarks/configs/ (default: quick)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="the quick sweep (benchmarks/configs/quick.toml): make bench",
    )
    ap.add_argument(
        "--out", default=None, help="output directory (default: benchmarks/results/<name>)"
    )
    ap.add_argument("--name", default=None, help="sweep name (default: the config's)")
    ap.add_argument(
        "--resume", action="store_true", help="skip runs already complete in the output directory"
    )
    ap.add_argument(
        "--report",
        action="store_true",
        help="run nothing: print the table and redraw the plots of existing results",
    )
    ap.add_argument("--dry-run", action="store_true", help="print the planned runs and exit")
    ap.add_argument(
        "--write-rules",
        metavar="PATH",
        default=None,
        help="run nothing: write the auto rule table fitted from the existing results to PATH "
        "(e.g. src/shancoll/rules/intel-xeon-emr-mpich-5.0.2.tsv, or a file for SHANCOLL_RULES)",
    )
    ap.add_argument(
        "--update-docs",
        metavar="PATH",
        default=None,
        help="run nothing: regenerate the marked blocks of PATH (docs/performance.md) from the "
        "existing results",
    )
    ap.add_argument("--ranks", default=None, help="comma list, e.g. 1,2")
    ap.add_argument("--libraries", default=None, help="comma list of " + ", ".join(MPI_LIBRARIES))
    ap.add_argument(
        "--ranks-per-node",
        default=None,
        help="comma list; 0 = physical nodes, n = virtual nodes of n ranks",
    )
    ap.add_argument(
        "--hosts",
        default=None,
        help="comma list; 1 = this machine, 2 = two real MPI nodes (shancoll.bench.hosts)",
    )
    ap.add_argument("--sizes", default=None, help="bytes per rank: 1KiB,1MiB or 1KiB:16MiB:4")
    ap.add_argument(
        "--distributions", default=None, help="comma list of " + ", ".join(DISTRIBUTIONS)
    )
    ap.add_argument(
        "--series",
        default=None,
        help="comma list of series labels (*, shan, shan[rma], shan_shared, native, memcpy, ...)",
    )
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--target-seconds", type=float, default=None)
    ap.add_argument("--timeout", type=float, default=None, help="seconds per run (run_timeout)")
    ap.add_argument(
        "--mpiexec",
        default=None,
        help="mpiexec to launch with (default: the config's, else $SHANCOLL_MPIEXEC, else "
        "the one next to this Python)",
    )
    ap.add_argument("--mpiexec-args", default=None, help="extra mpiexec arguments (one string)")
    ap.add_argument("--no-plots", action="store_true")
    return ap


def _ints(text: str | None) -> list[int] | None:
    return None if text is None else [int(x) for x in text.split(",") if x.strip()]


def _from_results(args: argparse.Namespace, cfg: Config, out: Path) -> int:
    """--report, --write-rules, --update-docs: work on existing results only."""
    if not (out / "results.csv").exists():
        print(f"error: no {out / 'results.csv'}", file=sys.stderr)
        return 2
    rows = read_results(out / "results.csv")
    meta_path = out / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    if args.write_rules:
        Path(args.write_rules).write_text(rule_table(rows, _show(out)), encoding="utf-8")
        print(f"wrote {args.write_rules}")
    if args.update_docs:
        source = Path(cfg.source).stem if cfg.source.endswith(".toml") else cfg.name
        command = f"python -m shancoll.bench.sweep {source} --out {_show(out)}"
        update_markdown(args.update_docs, performance_sections(rows, command))
        print(f"updated {args.update_docs}")
    if args.report:
        print(speedup_table(rows, meta))
        if not args.no_plots:
            for p in plot_results(rows, out):
                print(f"wrote {_show(p)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    name = "quick" if args.quick or args.config is None else args.config
    try:
        cfg = load_config(
            name,
            name=args.name,
            ranks=_ints(args.ranks),
            libraries=None if args.libraries is None else args.libraries.split(","),
            ranks_per_node=_ints(args.ranks_per_node),
            hosts=_ints(args.hosts),
            sizes=args.sizes,
            collective_sizes=None if args.sizes is None else {},
            distributions=None if args.distributions is None else args.distributions.split(","),
            series=args.series,
            collective_series=None if args.series is None else {},
            repeats=args.repeats,
            target_seconds=args.target_seconds,
            run_timeout=args.timeout,
            mpiexec=args.mpiexec,
            mpiexec_args=None if args.mpiexec_args is None else shlex.split(args.mpiexec_args),
        )
    except (ValueError, FileNotFoundError, tomllib.TOMLDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out_dir(cfg.name)
    if not (args.report or args.write_rules or args.update_docs):
        try:
            runs = plan(cfg)  # names checked against the registries before anything runs
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if args.dry_run:
        print(f"config: {_show(Path(cfg.source))}; output: {_show(out)}")
        for k, run in enumerate(runs, 1):
            print(f"[{k}] {run.describe()}: {', '.join(run.series)}")
        return 0
    if args.report or args.write_rules or args.update_docs:
        return _from_results(args, cfg, out)
    try:
        result = run_sweep(cfg, out, resume=args.resume, plots=not args.no_plots)
    except KeyboardInterrupt:
        print(
            f"\ninterrupted; results so far are in {_show(out)} (continue with --resume)",
            file=sys.stderr,
        )
        return 130
    print()
    print(result.table)
    print()
    print(f"wrote {_show(result.csv)}, meta.json, table.txt")
    for p in result.plots:
        print(f"wrote {_show(p)}")
    print(f"sweep {cfg.name!r} finished in {_fmt_elapsed(result.meta['elapsed_s'])}")
    failed = result.failed_runs
    if failed:
        print(f"{len(failed)} run(s) did not complete: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
