"""The benchmark machinery: configs, distributions, series labels, the CSV
schema, the table, plotting (Agg, temp dir), a tiny real sweep at 2 ranks,
failed and hung runs, resume, and the notebook (executed with nbclient).

Fast: the real runs time a few small sizes with short loops (seconds).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from shancoll.bench import hosts, kernel, plot, report, results, sweep
from shancoll.bench.series import (
    COLLECTIVES,
    check_distribution,
    distribution_bytes,
    format_bytes,
    parse_series,
    parse_sizes,
    split_series,
)

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "benchmarks" / "configs"
# The sweep notebooks; smpi_scaling plots committed simulator results and has
# its own test (tests/test_smpi_notebook.py).
NOTEBOOKS = sorted(p for p in (REPO / "notebooks").glob("*.ipynb") if p.stem != "smpi_scaling")
ALGS = ["shan", "ring", "bruck", "recursive_doubling", "mpi"]


def fake_algorithms(collective: str) -> list[str]:
    return list(ALGS)


# ---------------------------------------------------------------------------
# sizes, distributions, series


def test_sizes():
    assert parse_sizes("1KiB:16MiB:4") == [
        1 << 10,
        1 << 12,
        1 << 14,
        1 << 16,
        1 << 18,
        1 << 20,
        1 << 22,
        1 << 24,
    ]
    assert parse_sizes("1KiB,3K,1MiB") == [1024, 3072, 1 << 20]
    assert parse_sizes([8, "2KiB"]) == [8, 2048]
    assert parse_sizes("1KiB:1MiB:8") == [1024, 8192, 65536, 524288]
    assert format_bytes(1536) == "1536B" and format_bytes(16 << 20) == "16MiB"
    for bad in ("1XB", "-3", "1KiB:1MiB", "1MiB:1KiB:2", "1KiB:1MiB:1", ""):
        with pytest.raises(ValueError):
            parse_sizes(bad)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 7, 32])
@pytest.mark.parametrize("c", [0, 8, 1000, 1024, 1 << 20])
def test_distribution_formulas(p, c):
    reg = distribution_bytes("regular", c, p)
    dec = distribution_bytes("decreasing", c, p)
    bc = distribution_bytes("bcast", c, p)
    whole_c = c // 8 * 8
    assert reg == [whole_c] * p
    assert bc == [p * c // 8 * 8] + [0] * (p - 1)
    for m in (reg, dec, bc):
        assert len(m) == p and all(x >= 0 and x % 8 == 0 for x in m)
    # decreasing: m_i = 2c(P-1-i)/(P-1), rounded down to whole elements; total about P*c
    if p > 1:
        for i, m in enumerate(dec):
            exact = 2 * c * (p - 1 - i) / (p - 1)
            assert exact - 8 < m <= exact
        assert dec[-1] == 0 and dec == sorted(dec, reverse=True)
        assert p * c - 8 * p <= sum(dec) <= p * c
    else:
        assert dec == [whole_c]


def test_distribution_examples():
    assert distribution_bytes("decreasing", 1024, 4) == [2048, 1360, 680, 0]
    assert distribution_bytes("decreasing", 1024, 2) == distribution_bytes("bcast", 1024, 2)
    assert distribution_bytes("regular", 1024, 3, itemsize=4) == [1024] * 3
    with pytest.raises(ValueError, match="distribution"):
        distribution_bytes("zipf", 1024, 4)


def test_every_collective_is_timed_as_itself():
    """The kernel's point class per collective: scan, exscan and
    reduce_scatter_block once fell through to the allgatherv points (a merge
    had dropped them from MESSAGE_COLLECTIVES), so the sweep timed allgatherv
    under their names and refused their own algorithms."""
    expected = {"allgatherv": kernel.Point, "allgather": kernel.Point,
                "intergroup": kernel.InterPoint, "alltoall": kernel.AlltoallPoint,
                "alltoallv": kernel.AlltoallPoint}  # fmt: skip
    for collective in COLLECTIVES:
        persistent = collective.endswith("_init")  # its blocking collective's buffers inside
        want = (
            kernel.PersistentPoint if persistent else expected.get(collective, kernel.MessagePoint)
        )
        assert kernel.point_class(collective) is want, collective
        if persistent:
            base = collective.removesuffix("_init")
            assert kernel.point_class(base) is expected.get(base, kernel.MessagePoint), base
    with pytest.raises(ValueError, match="no benchmark point"):
        kernel.point_class("allgatherw")


def test_series_labels():
    s = parse_series("shan[rma]", ALGS)
    assert (s.label, s.kind, s.algorithm, s.options) == (
        "shan[rma]",
        "shancoll",
        "shan",
        {"transport": "rma"},
    )
    assert s.needs_nodes
    s = parse_series("shan[two_sided, bs=64KiB]", ALGS)
    assert s.label == "shan[two_sided,bs=64KiB]" and s.options["block_size"] == 65536
    assert parse_series(s.label, ALGS).options == s.options  # labels round-trip
    assert parse_series("shan_shared", ALGS).kind == "shared"
    assert parse_series("native").kind == "native"
    assert parse_series("memcpy").kind == "memcpy"
    assert not parse_series("ring", ALGS).needs_nodes
    s = parse_series("nway_dissemination[ports=2,inline=true]")
    assert s.options == {"ports": 2, "inline": True}
    assert parse_series(s.label).options == s.options
    assert parse_series("native:ring").label == "native:ring"
    for bad in ("native[rma]", "shan[tcp]", "nope", "shan[", "shan[foo=1]", "ring:x"):
        with pytest.raises(ValueError):
            parse_series(bad, ALGS)
    assert split_series("shan,shan[rma,bs=4KiB],native") == [
        "shan",
        "shan[rma,bs=4KiB]",
        "native",
    ]


def test_mpi_library_short():
    assert (
        kernel.mpi_library_short("MPICH Version:      5.0.2\nMPICH Release date: x")
        == "MPICH 5.0.2"
    )
    assert (
        kernel.mpi_library_short("Open MPI v4.1.4, package: Debian, ident: 4.1.4")
        == "Open MPI v4.1.4"
    )


# ---------------------------------------------------------------------------
# configs


def test_quick_config_one_file_found_in_and_out_of_a_checkout(tmp_path, monkeypatch):
    # One source of truth: the package ships it, benchmarks/configs links to it.
    packaged = sweep.PACKAGED_CONFIGS / "quick.toml"
    assert (REPO / "src/shancoll/bench/configs/quick.toml").samefile(CONFIGS / "quick.toml")
    in_checkout = sweep.load_config(CONFIGS / "quick.toml")
    monkeypatch.chdir(tmp_path)  # no benchmarks/configs here or above
    outside = sweep.load_config("quick")
    assert outside.source == str(packaged)
    assert {**outside.to_dict(), "source": ""} == {**in_checkout.to_dict(), "source": ""}
    assert outside.ranks == [2] and outside.sizes[0] == 1024


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.name)
def test_every_config_parses_and_plans(path):
    cfg = sweep.load_config(path)
    runs = sweep.plan(cfg, fake_algorithms)
    assert runs and cfg.name == path.stem
    for run in runs:
        assert "native" in run.series
        for label in run.series:
            parse_series(label, ALGS)


def test_config_parsing_and_errors():
    cfg = sweep.parse_config("""
        name = "t"
        collectives = ["allgatherv", "allgather"]
        ranks = [1, 2]
        ranks_per_node = [0, 1]
        distributions = ["regular", "bcast"]
        sizes = ["1KiB", 4096]
        [[algorithms]]
        name = "*"
        [[algorithms]]
        name = "shan"
        transport = ["two_sided", "rma"]
        block_size = [0, "64KiB"]
        [[algorithms]]
        name = "native"
        [timing]
        repeats = 3
        iterations = 10
        [launch]
        mpiexec_args = ["-launcher", "fork"]
        env = { MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM = "ring" }
    """)
    assert cfg.sizes == [1024, 4096] and cfg.repeats == 3 and cfg.iterations == 10
    assert cfg.env == {"MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM": "ring"}
    assert cfg.series[:2] == ["*", "shan[two_sided,bs=0B]"] and "shan[rma,bs=64KiB]" in cfg.series
    runs = sweep.plan(cfg, fake_algorithms)
    # allgatherv: 2 ranks x 2 layouts x 2 distributions; allgather: regular only
    assert len(runs) == 8 + 4
    assert runs[0].series[:5] == tuple(ALGS)
    assert len({r.run_id for r in runs}) == len(runs)
    assert runs[0].run_id == "allgatherv-P1-physical-regular"
    assert cfg.replace(sizes="1KiB:4KiB:2").sizes == [1024, 2048, 4096]
    for bad in (
        "bogus = 1",
        "ranks = [0]",
        'distributions = ["zipf"]',
        'sizes = "1KiB:2"',
        'collectives = ["alltoallw"]',  # not a shancoll collective
        '[[algorithms]]\nname = "shan"\ncolor = "red"',
        'libraries = ["lam"]',
        '[collective_sizes]\nalltoallw = "1KiB"',
        "[timing]\nfoo = 1",
    ):
        with pytest.raises(ValueError):
            sweep.parse_config(bad)
    with pytest.raises(ValueError, match="unknown algorithm"):
        sweep.plan(sweep.parse_config('[[algorithms]]\nname = "nope"'), fake_algorithms)


def forced(lib: str, coll: str) -> list:
    """A library default and one forced algorithm (MPICH's CVAR; ignored elsewhere)."""
    from shancoll.bench.baselines import Series

    var = f"MPIR_CVAR_{coll.upper()}_INTRA_ALGORITHM"
    value = {"bcast": "binomial", "reduce": "binomial", "allgatherv": "ring"}
    env = {var: value.get(coll, "recursive_doubling"), "SHANCOLL_TEST_DROP": None}
    rd = Series(f"{lib}:rd", env)
    return [Series(lib, {}), rd]


def test_plan_libraries_and_baselines(tmp_path):
    cfg = sweep.parse_config("""
        collectives = ["allgatherv", "allreduce"]
        libraries = ["default", "mpich"]
        distributions = ["regular", "bcast"]
        sizes = "1KiB"
        [collective_sizes]
        allreduce = [8, 64]
        [[algorithms]]
        name = "ring"
        [[algorithms]]
        name = "native"
        [[algorithms]]
        name = "shan_shared"
        collectives = ["allgatherv"]
    """)
    runs = sweep.plan(cfg, lambda coll: ["ring", "shan"], forced)
    ids = [r.run_id for r in runs]
    assert len(set(ids)) == len(ids) == (2 + 1) * 2 * 2  # (distributions) x libraries x jobs
    assert ids[:4] == [
        "allgatherv-P2-physical-regular",
        "allgatherv-P2-physical-regular-rd",
        "allgatherv-P2-physical-regular-mpich",
        "allgatherv-P2-physical-regular-mpich-rd",
    ]
    default, rd = runs[0], runs[1]
    assert default.series == ("ring", "native", "shan_shared") and default.env == ()
    assert rd.series == ("native",) and rd.baseline == "rd"
    assert dict(rd.env) == {
        "MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM": "ring",
        "SHANCOLL_TEST_DROP": None,  # None: removed from the job's environment
    }
    ar = [r for r in runs if r.collective == "allreduce"]
    assert {r.sizes for r in ar} == {(8, 64)} and {r.distribution for r in ar} == {"regular"}
    assert "shan_shared" not in ar[0].series
    menv = sweep.launcher(cfg, "default", "/x/mpiexec")
    cmd = sweep.bench_command(cfg, rd, tmp_path / "j.jsonl", menv)
    assert cmd[:4] == ["/x/mpiexec", "-n", "2", menv.python]
    assert cmd[cmd.index("--native-job") + 1] == "rd"
    only_default = sweep.plan(cfg.replace(forced_baselines=False), lambda c: ["ring"], forced)
    assert {r.baseline for r in only_default} == {"default"}


def test_the_layout_two_hosts(tmp_path):
    """hosts = [2] plans runs of their own ("hosts2"), whose jobs the launcher
    spreads over the two host names: hydra's host list, or Open MPI's and
    Intel MPI's with host_agent.sh as their ssh."""
    cfg = sweep.parse_config('collectives = ["allreduce"]\nhosts = [1, 2]\nsizes = "8"')
    runs = sweep.plan(cfg, lambda coll: ["ring"])
    assert [r.run_id for r in runs] == [
        "allreduce-P2-physical-regular",
        "allreduce-P2-hosts2-regular",
    ]
    assert results.layout_name(1, 2) == "hosts2-rpn1"
    with pytest.raises(ValueError, match="hosts: 1 .* or 2"):
        sweep.parse_config("hosts = [3]")
    with pytest.raises(ValueError, match="3 ranks do not split evenly over 2 hosts"):
        sweep.plan(cfg.replace(ranks=[3]), lambda coll: ["ring"])
    if hosts.missing("mpich"):
        pytest.skip(hosts.missing("mpich"))
    menv = sweep.launcher(cfg, "default", "/x/mpiexec")
    one, two = (sweep.bench_command(cfg, r, tmp_path / "j.jsonl", menv) for r in runs)
    assert one[:3] == ["/x/mpiexec", "-n", "2"]
    assert two[:5] == ["/x/mpiexec", "-hosts", "shancoll-node-a:1,shancoll-node-b:1", "-n", "2"]
    ompi = dataclasses.replace(menv, name="openmpi", mpiexec=["/y/mpiexec"])
    cmd = sweep.bench_command(cfg, runs[1], tmp_path / "j.jsonl", ompi)
    assert cmd[cmd.index("plm_ssh_agent") + 1] == f"/bin/sh {hosts.AGENT}"
    assert cmd[cmd.index("--host") + 1] == "shancoll-node-a:1,shancoll-node-b:1"
    impi = dataclasses.replace(menv, name="impi", mpiexec=["/z/mpiexec"])
    cmd = sweep.bench_command(cfg, runs[1], tmp_path / "j.jsonl", impi)
    agent = cmd[cmd.index("-bootstrap-exec") + 1]
    assert os.access(agent, os.X_OK), "Intel's hydra runs its bootstrap program directly"
    assert cmd[cmd.index("-hosts") + 1] == "shancoll-node-a,shancoll-node-b"
    assert cmd[cmd.index("-ppn") + 1] == "1"


def test_an_agent_without_its_x_bit_is_run_through_an_executable_copy(tmp_path, monkeypatch):
    """Installed package files may lose the x bit; Intel's hydra needs it."""
    agent = tmp_path / "host_agent.sh"
    agent.write_bytes(hosts.AGENT.read_bytes())
    agent.chmod(0o644)
    monkeypatch.setattr(hosts, "AGENT", agent)
    copy = hosts.executable_agent()
    assert copy != agent and os.access(copy, os.X_OK)
    assert copy.read_bytes() == agent.read_bytes()
    agent.chmod(0o755)
    assert hosts.executable_agent() == agent


@pytest.mark.timeout(300)
def test_a_real_sweep_on_two_hosts(tmp_path):
    """The layout "2 hosts" really gives the MPI library two nodes: its rows say
    hosts 2 and nodes 2, auto and native side by side."""
    if hosts.missing("mpich"):
        pytest.skip(hosts.missing("mpich"))
    cfg = tiny_config(collectives=["allreduce"], hosts=[2], sizes=[8], distributions=["regular"],
                      series=["auto", "native"])  # fmt: skip
    res = sweep.run_sweep(cfg, tmp_path, progress=None, plots=False)
    assert not res.failed_runs, res.meta
    rows = results.read_results(tmp_path / "results.csv")
    assert {r["series"] for r in rows} == {"auto", "native"}
    assert all(r["hosts"] == 2 and r["nodes"] == 2 and r["check"] == "ok" for r in rows), rows
    assert "2 hosts (real MPI nodes), 2 nodes" in res.table


def test_plan_intergroup_settings():
    cfg = sweep.parse_config("""
        collectives = ["intergroup", "allreduce"]
        distributions = ["regular", "setting1", "setting7"]
        [[algorithms]]
        name = "segmented"
        [[algorithms]]
        name = "native"
    """)
    runs = sweep.plan(cfg, lambda coll: ["segmented", "root_gather", "mpi"], forced)
    assert [r.run_id for r in runs] == [
        "intergroup-P2-physical-setting1",  # forced intra algorithms: no intergroup baseline
        "intergroup-P2-physical-setting7",
        "allreduce-P2-physical-regular",
        "allreduce-P2-physical-regular-rd",
    ]
    assert [kernel.setting_block(s, True, 0, 4, 1024) for s in range(1, 9)] == [
        1024, 1024, 1024, 256, 1024, 0, 1024, 0,
    ]  # fmt: skip
    assert kernel.setting_block(3, False, 1, 2, 1024) == 256
    assert kernel.setting_block(8, False, 3, 4, 1024) == 1024
    with pytest.raises(ValueError, match="settings"):
        check_distribution("intergroup", "regular")


def test_progress_bar():
    assert sweep.progress_bar(0, 4, 0.0, width=8) == "[1/4 -------- left 4]"
    assert sweep.progress_bar(2, 4, 60.0, width=8) == "[3/4 ####---- left 2, ~1m00s]"


# ---------------------------------------------------------------------------
# CSV schema, table, plots (synthetic rows)


def synthetic_rows() -> list[dict]:
    rows = []
    for rpn in (0, 1):
        for dist in ("regular", "bcast"):
            for size in (1024, 65536, 1 << 20):
                for k, series in enumerate(
                    ["shan", "ring", "shan[rma]", "shan_shared", "native", "memcpy"]
                ):
                    if rpn == 0 and series == "shan[rma]":
                        continue
                    t = 1e-6 * size**0.8 * (1 + k / 3)
                    rows.append(
                        {
                            "sweep": "t",
                            "run_id": f"allgatherv-P2-{results.layout_name(rpn)}-{dist}",
                            "collective": "allgatherv",
                            "distribution": dist,
                            "ranks": 2,
                            "ranks_per_node": rpn,
                            "nodes": 1 if rpn == 0 else 2,
                            "series": series,
                            "kind": "x",
                            "algorithm": series,
                            "options": "",
                            "bytes_per_rank": size,
                            "total_bytes": 2 * size,
                            "max_bytes": size,
                            "dtype": "float64",
                            "warmup": 1,
                            "repeats": 3,
                            "iterations": 5,
                            "time_median_s": t,
                            "time_min_s": 0.9 * t,
                            "time_max_s": 1.2 * t,
                            "bandwidth_gbs": 2 * size / t / 1e9,
                            "check": "ok",
                            "status": "ok",
                            "error": "",
                            "mpi_library": "MPICH 5.0.2",
                            "hostname": "h",
                            "date": "2026-01-01T00:00:00+00:00",
                        }
                    )
    rows[0].update(status="error", error="ValueError: boom", time_median_s=None)
    rows[1].update(check="fail")
    return rows


def test_csv_schema_roundtrip_and_documented(tmp_path):
    rows = synthetic_rows()
    path = tmp_path / "results.csv"
    results.write_results(path, rows)
    header = path.read_text().splitlines()[0].split(",")
    assert header == results.CSV_COLUMNS
    back = results.read_results(path)
    assert len(back) == len(rows)
    assert back[2]["bytes_per_rank"] == rows[2]["bytes_per_rank"]
    assert math.isclose(back[2]["time_median_s"], rows[2]["time_median_s"], rel_tol=1e-5)
    assert math.isnan(back[0]["time_median_s"]) and back[0]["error"] == "ValueError: boom"
    # benchmarks/README.md documents every column, in order
    readme = (REPO / "benchmarks" / "README.md").read_text()
    section = readme.split("### `results.csv` columns", 1)[1]
    documented = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M)
    assert documented == results.CSV_COLUMNS


def test_speedup_table():
    table = report.speedup_table(synthetic_rows())
    assert "== allgatherv: 2 ranks, 1 node, MPICH 5.0.2" in table
    assert "2 virtual nodes of 1" in table
    assert "-- regular" in table and "-- bcast" in table
    assert "err" in table and "FAIL" in table
    line = next(x for x in table.splitlines() if x.strip().startswith("1MiB"))
    # times grow by 1/3 per series: native (4th) / shan (0th) = 7/3, / ring = 7/4
    assert line.split()[2:4] == ["2.33x", "1.75x"]


def test_plots_agg(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    paths = plot.plot_results(synthetic_rows(), tmp_path)
    names = sorted(p.name for p in paths)
    assert names == sorted(
        f"allgatherv_P2_{lay}_{what}.{ext}"
        for lay in ("physical", "rpn1")
        for what in ("time", "speedup")
        for ext in ("png", "svg")
    )
    for p in paths:
        assert p.stat().st_size > 5000
    png = (tmp_path / "allgatherv_P2_rpn1_speedup.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "allgatherv_P2_rpn1_speedup.svg").read_text()
    assert "shan[rma]" in svg and "MPICH 5.0.2" in svg and "bcast" in svg
    fig = plot.figure([r for r in synthetic_rows() if r["ranks_per_node"] == 1], "time")
    assert len(fig.axes) == 2


# ---------------------------------------------------------------------------
# real runs


def tiny_config(**changes) -> sweep.Config:
    base = dict(
        name="tiny",
        collectives=["allgatherv"],
        collective_sizes={},
        collective_series={},
        ranks=[2],
        ranks_per_node=[0],
        sizes=[1024, 8192],
        distributions=["regular", "bcast"],
        series=["*", "shan[rma]", "shan_shared", "native", "memcpy"],
        warmup=1,
        repeats=2,
        target_seconds=0.002,
        max_iterations=20,
        run_timeout=120,
        call_timeout=30,
    )
    base.update(changes)
    return sweep.load_config("quick").replace(**base)


@pytest.mark.timeout(300)
def test_tiny_real_sweep_and_resume(tmp_path):
    lines: list[str] = []

    def progress(*args, end="\n", flush=False):
        lines.append(" ".join(map(str, args)) + end)

    cfg = tiny_config()
    res = sweep.run_sweep(cfg, tmp_path, progress=progress)
    log = "".join(lines)
    assert not res.failed_runs, (log, res.meta)
    assert re.search(r"\[1/2 -+ left 2\] allgatherv P=2 physical regular \.\.\. ok", log)
    assert re.search(r"\[2/2 #+-+ left 1.*\] allgatherv P=2 physical bcast \.\.\. ok", log)
    rows = results.read_results(tmp_path / "results.csv")
    import shancoll

    expected = set(shancoll.algorithms("allgatherv")) | {"shan_shared", "native", "memcpy"}
    assert {r["series"] for r in rows} == expected  # shan[rma]: skipped on one node
    assert len(rows) == len(expected) * 2 * 2
    for r in rows:
        assert r["status"] == "ok" and r["check"] == "ok", r
        assert r["time_min_s"] <= r["time_median_s"] <= r["time_max_s"]
        assert r["ranks"] == 2 and r["nodes"] == 1 and r["mpi_library"]
    bc = [r for r in rows if r["distribution"] == "bcast" and r["bytes_per_rank"] == 8192]
    assert {r["max_bytes"] for r in bc} == {16384} and {r["total_bytes"] for r in bc} == {16384}
    meta = res.meta
    run = meta["runs"]["allgatherv-P2-physical-regular"]
    assert run["skipped"] == {"shan[rma]": "transport option is irrelevant on a single node"}
    env = run["environment"]
    for key in (
        "mpi_library_version",
        "mpi4py",
        "shancoll",
        "hostname",
        "cores",
        "cpu_model",
        "date",
        "ranks",
        "ranks_per_node",
    ):
        assert env.get(key) not in (None, ""), key
    assert (tmp_path / "table.txt").read_text().startswith("== allgatherv: 2 ranks")
    assert {p.name for p in res.plots} >= {"allgatherv_P2_physical_speedup.png"}

    # resume: nothing left to run; a new layout runs only its own jobs
    lines.clear()
    res2 = sweep.run_sweep(
        cfg.replace(ranks_per_node=[0, 1], distributions=["regular"]),
        tmp_path,
        resume=True,
        plots=False,
        progress=progress,
    )
    log = "".join(lines)
    assert "resume: 1 of 2 runs already complete" in log and "allgatherv P=2 rpn1" in log
    assert "[1/1 " in log
    new = [r for r in res2.rows if r["ranks_per_node"] == 1]
    assert {r["series"] for r in new} == expected | {"shan[rma]"}
    assert all(r["nodes"] == 2 and r["status"] == "ok" and r["check"] == "ok" for r in new)
    assert len(res2.rows) == len(rows) + len(new)  # the earlier bcast rows are kept


@pytest.mark.timeout(300)
def test_real_sweep_libraries_and_baselines(tmp_path, monkeypatch):
    """allreduce and bcast, two algorithms, two sizes, a forced native baseline in a job
    of its own, every installed MPI library plus one that is not (recorded, skipped)."""
    from shancoll.bench import mpi_envs

    monkeypatch.setattr(sweep, "native_series", forced)
    monkeypatch.setenv("SHANCOLL_TEST_DROP", "1")
    installed = ["default", *(lib for lib in mpi_envs.available() if lib != "default")]
    absent = [lib for lib in ("impi", "openmpi", "mpich") if lib not in installed]
    build = mpi_envs.ensure

    def ensure_built_only(lib, **kw):  # a test never builds an env (minutes each)
        if lib not in installed:
            raise RuntimeError(f"{lib}: not built (the test does not build envs)")
        current = lib == "default" or mpi_envs.is_current(lib)
        return build(lib, **kw) if current else mpi_envs.load(lib)  # stale: as built

    monkeypatch.setattr(mpi_envs, "ensure", ensure_built_only)
    missing = absent[0] if absent else None
    libs = installed + absent[:1]
    cfg = tiny_config(
        collectives=["allreduce", "bcast"], series=["binomial", "mpi", "native"],
        sizes=[8, 4096], distributions=["regular"], libraries=libs,
    )  # fmt: skip
    res = sweep.run_sweep(cfg, tmp_path, progress=None)
    runs = res.meta["runs"]
    assert len(runs) == 2 * 2 * len(libs)
    for rid, rec in runs.items():
        assert rec["status"] == ("failed" if missing and missing in rid else "ok"), (rid, rec)
    if missing:
        assert "unavailable" in runs[f"allreduce-P2-physical-regular-{missing}"]["stderr_tail"]
    rd = runs["allreduce-P2-physical-regular-rd"]
    rd_env = rd["environment"]["env"]
    assert rd_env["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "recursive_doubling"
    default_env = runs["allreduce-P2-physical-regular"]["environment"]["env"]
    assert "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" not in default_env
    assert default_env["SHANCOLL_TEST_DROP"] == "1" and "SHANCOLL_TEST_DROP" not in rd_env
    rows = [r for r in res.rows if r["library"] == "default"]
    assert {(r["collective"], r["series"]) for r in rows} == {
        (c, s) for c in ("allreduce", "bcast") for s in ("binomial", "mpi", "native", "native:rd")
    }
    for r in rows:
        assert r["status"] == "ok" and r["check"] == "ok" and r["kernel"] == "python", r
    assert "native:rd" in res.table
    assert {p.name for p in res.plots} >= {"allreduce_P2_physical_speedup.svg"}
    rules = (tmp_path / "rules.tsv").read_text()
    assert "allreduce\t0\t" in rules and "bcast\t0\t" in rules

    # resume runs only what did not complete: the missing library's jobs
    lines: list[str] = []
    sweep.run_sweep(
        cfg,
        tmp_path,
        resume=True,
        plots=False,
        progress=lambda *a, **k: lines.append(" ".join(map(str, a))),
    )
    assert f"resume: {2 * 2 * len(installed)} of {len(runs)} runs already complete" in lines[0]


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.timeout(120)
def test_failed_and_hung_runs_are_recorded(tmp_path):
    cfg = tiny_config(distributions=["regular"], run_timeout=2)
    hang = _script(tmp_path / "hang.sh", "sleep 60")
    res = sweep.run_sweep(cfg, tmp_path / "hang", mpiexec=hang, progress=None)
    rec = res.meta["runs"]["allgatherv-P2-physical-regular"]
    assert rec["status"] == "timeout" and res.failed_runs and rec["elapsed_s"] < 30
    fail = _script(tmp_path / "fail.sh", "echo 'no such launcher' >&2; exit 3")
    res = sweep.run_sweep(cfg, tmp_path / "fail", mpiexec=fail, progress=None)
    rec = res.meta["runs"]["allgatherv-P2-physical-regular"]
    assert rec["status"] == "failed" and rec["returncode"] == 3
    assert "no such launcher" in rec["stderr_tail"]
    assert "!! run allgatherv-P2-physical-regular: failed" in res.table


def test_shancoll_mpiexec_launches_the_jobs(tmp_path, monkeypatch):
    """$SHANCOLL_MPIEXEC is the default library's launcher unless one is given."""
    cfg = tiny_config(distributions=["regular"])
    fail = _script(tmp_path / "fail.sh", "echo 'launched by SHANCOLL_MPIEXEC' >&2; exit 3")
    monkeypatch.setenv("SHANCOLL_MPIEXEC", fail)
    res = sweep.run_sweep(cfg, tmp_path / "env", progress=None, plots=False)
    rec = res.meta["runs"]["allgatherv-P2-physical-regular"]
    assert res.meta["mpiexec"] == fail and rec["command"].startswith(fail)
    assert "launched by SHANCOLL_MPIEXEC" in rec["stderr_tail"]
    given = _script(tmp_path / "given.sh", "exit 4")
    res = sweep.run_sweep(cfg, tmp_path / "given", mpiexec=given, progress=None, plots=False)
    assert res.meta["runs"]["allgatherv-P2-physical-regular"]["returncode"] == 4


@pytest.mark.timeout(120)
def test_hung_point_is_named(tmp_path):
    """A job that hangs inside a point: killed at run_timeout, the point recorded."""
    cfg = tiny_config(
        distributions=["regular"], series=["native", "shan"], sizes=[1024], run_timeout=3
    )
    row = {
        "event": "row",
        "collective": "allgatherv",
        "series": "native",
        "kind": "native",
        "algorithm": "",
        "options": "",
        "distribution": "regular",
        "ranks": 2,
        "ranks_per_node": 0,
        "nodes": 1,
        "bytes_per_rank": 1024,
        "total_bytes": 2048,
        "max_bytes": 1024,
        "dtype": "float64",
        "warmup": 1,
        "repeats": 2,
        "iterations": 5,
        "time_median_s": 1e-5,
        "time_min_s": 1e-5,
        "time_max_s": 2e-5,
        "check": "ok",
        "status": "ok",
        "error": "",
    }
    events = [
        {"event": "env", "mpi_library": "FakeMPI 1", "hostname": "h", "nodes": 1},
        {"event": "start", "series": "native", "bytes_per_rank": 1024},
        row,
        {"event": "start", "series": "shan", "bytes_per_rank": 1024},
    ]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    # A launcher that writes what a job measured before it hung, then hangs.
    launcher = _script(
        tmp_path / "mpiexec.sh",
        f"""
jsonl=""; prev=""
for a in "$@"; do [ "$prev" = "--jsonl" ] && jsonl="$a"; prev="$a"; done
cat "{tmp_path / "events.jsonl"}" > "$jsonl"
sleep 60""",
    )
    res = sweep.run_sweep(cfg, tmp_path / "out", mpiexec=launcher, progress=None, plots=False)
    rec = res.meta["runs"]["allgatherv-P2-physical-regular"]
    assert rec["status"] == "timeout" and rec["elapsed_s"] < 30
    assert rec["hung_at"] == {"series": "shan", "bytes_per_rank": 1024}
    assert [(r["series"], r["status"]) for r in res.rows] == [("native", "ok"), ("shan", "timeout")]
    assert "timed out" in res.rows[1]["error"] and res.rows[1]["mpi_library"] == "FakeMPI 1"
    assert "timeout" in res.table


def test_cli_dry_run():
    out = subprocess.run(
        [sys.executable, "-m", "shancoll.bench.sweep", "--quick", "--dry-run"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "[3] allgatherv P=2 physical bcast" in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "shancoll.bench.sweep", "--sizes", "1XB"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "size" in bad.stderr


# ---------------------------------------------------------------------------
# the notebook


@pytest.mark.timeout(600)
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(notebook, tmp_path):
    """Runs a notebook as shipped, at its small defaults (results to a temp dir)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(notebook, as_version=4)
    # nbformat 4.5 wants an id on every cell (a missing one warns, and a
    # future nbformat refuses the file).
    # (nbformat.read adds missing ids with a warning, so look at the file.)
    cells = json.loads(notebook.read_text())["cells"]
    assert all("id" in c for c in cells), f"{notebook.name}: a cell without an id"
    idx = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(idx + 1, nbformat.v4.new_code_cell(f"out_dir = {str(tmp_path)!r}"))
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.parent)}},
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs)
    assert "speedup = native time / series time" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert list(tmp_path.rglob("results.csv")) and list(tmp_path.rglob("meta.json"))
