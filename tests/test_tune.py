"""python -m shancoll.bench.tune: the table it writes is this machine's, and
auto reads it back (from a synthetic measurement file: no timing)."""

from __future__ import annotations

import os
import subprocess
import sys

from shancoll.bench import tune
from shancoll.bench.results import write_results


def row(collective, size, algorithm, t, options=""):
    """One sweep result: 2 ranks on one node, correct, `t` seconds per call."""
    return {
        "collective": collective, "kind": "shancoll", "algorithm": algorithm,
        "options": options, "status": "ok", "check": "ok", "time_median_s": t,
        "distribution": "regular", "ranks": 2, "nodes": 1, "bytes_per_rank": size,
        "ranks_per_node": 0,
    }  # fmt: skip


def synthetic_results(path):
    """bcast at 2 ranks on one node: binomial the fastest below 1 KiB, mpi above."""
    rows = []
    for size in (8, 64, 512, 4096, 32768):
        for algorithm, t in (("release_gather", 3e-6), ("binomial", 2e-6), ("mpi", 2.5e-6)):
            if size >= 4096 and algorithm == "mpi":
                t = 1e-6
            rows.append(row("bcast", size, algorithm, t))
    # gather_init (persistent): the engine below 4 KiB, the engine with single
    # copy off at 4 KiB, the library's own persistent request above.
    for size, times in ((64, (1e-7, 2e-7, 1e-6)), (4096, (2e-6, 1e-6, 3e-6)),
                        (32768, (5e-6, 6e-6, 4e-6))):  # fmt: skip
        for (algorithm, options), t in zip(
            (("shan", ""), ("shan", "single_copy=False"), ("mpi", "")), times, strict=True
        ):
            rows.append(row("gather_init", size, algorithm, t, options))
    # gather: binomial below 4 KiB, shan through a 2 MiB ring above; gatherv
    # (irregular: read at 0 bytes) gets gather's rows, not the built-in shan.
    for size in (64, 512, 4096, 32768):
        for (algorithm, options), t in (
            (("binomial", ""), 1e-6), (("shan", ""), 2e-6 if size < 4096 else 9e-7),
            (("shan", "ring_window=2097152"), 3e-6 if size < 4096 else 8e-7), (("mpi", ""), 4e-6),
        ):  # fmt: skip
            rows.append(row("gather", size, algorithm, t, options))
    path.mkdir(parents=True)
    write_results(path / "results.csv", rows)


def test_tune_writes_this_machine_s_table_and_auto_reads_it(tmp_path):
    synthetic_results(tmp_path / "sweep")
    cache = tmp_path / "cache"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    env.pop("SHANCOLL_RULES", None)
    run = subprocess.run(
        [sys.executable, "-m", "shancoll.bench.tune", "--from-results", str(tmp_path / "sweep")],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    written = list((cache / "shancoll" / "rules").glob("*.tsv"))
    assert len(written) == 1, run.stdout
    text = written[0].read_text()
    assert text.startswith("match\tcpu\t") and "\nmatch\tmpi\t" in text
    caches = open_sysfs_caches()
    if caches != "unknown":  # the table holds on these caches only
        assert f"\nmatch\tcaches\t{caches}\n" in text
        assert "-l2-" in written[0].name
    check = (
        "from mpi4py import MPI; import shancoll; from shancoll import _core\n"
        "info = shancoll.rules_info()\n"
        "print(info['path']); print(info['how'])\n"
        "print(_core.choose_auto('bcast', 64, 2, 1), _core.choose_auto('bcast', 32768, 2, 1))\n"
        "print(*(_core.persistent_choice('gather', n, 2) for n in (64, 4096, 32768)))\n"
        "print(*(_core.choose_auto(c, n, 2, 1) for c, n in"
        " (('gather', 64), ('gather', 32768), ('gatherv', 1 << 20))))\n"
    )
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env,
                         timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    path, how, choices, persistent, gather = out.stdout.splitlines()[:5]
    assert path == str(written[0]), out.stdout + out.stderr
    assert "measured on this machine" in how
    assert choices == "binomial mpi"
    assert persistent == "('shan', -1) ('shan', 0) ('mpi', -1)", text
    assert gather == "binomial shan binomial", text
    assert "\ngather\t1448\t*\t2\t2\t1\t1\tshan\tring_window=2097152\n" in text
    assert "\ngatherv\t0\t1448\t2\t2\t1\t1\tbinomial\t-\n" in text


def test_tune_times_every_collective_the_tables_hold():
    """Each collective a table row may name (rules.h's kCollectives, the v-forms
    and reduce_scatter through their regular siblings) is measured by tune."""
    from shancoll.bench.report import SIBLINGS

    measured = set(tune.COLLECTIVES) | set(tune.PERSISTENT) | {"allgather"}
    measured |= {SIBLINGS[c] for c in measured if c in SIBLINGS} | {"alltoallv"}
    for coll in ("allgatherv", "allreduce", "bcast", "reduce", "barrier", "scan", "exscan",
                 "reduce_scatter", "reduce_scatter_block", "alltoallv", "gather", "gatherv",
                 "scatter", "scatterv"):  # fmt: skip
        assert coll in measured, coll


def open_sysfs_caches() -> str:
    from shancoll import _core

    return _core.read_caches("/sys/devices/system/cpu/cpu0/cache")


def test_table_name_is_a_file_name():
    assert tune.table_name({"cpu": "AMD EPYC 7B13", "mpi": "MPICH Version: 5.0.2"}) == (
        "amd-epyc-7b13-mpich-version-5.0.2.tsv"
    )


def test_tables_of_two_cpus_of_one_model_name_get_two_names():
    """The Zen 3 and Zen 5 EPYC VMs both say "AMD EPYC": their caches tell them apart."""
    mpi = "MPICH Version: 5.0.2"
    zen3 = {"cpu": "AMD EPYC", "cpuid": "family 25 model 1", "caches": "L1d 32K L2 512K L3 32M"}
    zen5 = {"cpu": "AMD EPYC", "cpuid": "unknown", "caches": "L1d 48K L2 1M L3 32M"}
    assert tune.table_name({**zen3, "mpi": mpi}) == (
        "amd-epyc-family-25-model-1-l1d-32k-l2-512k-l3-32m-mpich-version-5.0.2.tsv"
    )
    assert tune.table_name({**zen5, "mpi": mpi}) == (
        "amd-epyc-l1d-48k-l2-1m-l3-32m-mpich-version-5.0.2.tsv"
    )


def test_the_written_match_lines_hold_for_the_machine_only():
    """Every known part of the fingerprint becomes a match line; "unknown" none."""
    machine = {"cpu": "AMD EPYC", "cpuid": "unknown", "caches": "L1d 32K L2 512K L3 32M",
               "mpi": "MPICH Version: 5.0.2"}  # fmt: skip
    text = tune.matched_table([], machine, "test")
    assert text.splitlines()[:3] == [
        "match\tcpu\tAMD EPYC", "match\tcaches\tL1d 32K L2 512K L3 32M",
        "match\tmpi\tMPICH Version: 5.0.2",
    ]  # fmt: skip


def test_under_mpiexec_tune_says_how_to_run_it_instead_of_a_sweep_per_rank(tmp_path):
    """`mpiexec -n 2 python -m shancoll.tune` had each rank start a sweep of its
    own (each launching 2 ranks) into the same directory."""
    for rank, says in (("0", True), ("1", False)):
        env = dict(os.environ, PMI_RANK=rank, PMI_SIZE="2", XDG_CACHE_HOME=str(tmp_path))
        run = subprocess.run(
            [sys.executable, "-m", "shancoll.tune", "--dry-run"], capture_output=True, text=True,
            env=env, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert run.returncode == 2, run.stdout + run.stderr
        assert ("without mpiexec" in run.stderr) == says, run.stderr
        assert "would time" not in run.stdout
    alone = subprocess.run(
        [sys.executable, "-m", "shancoll.tune", "--dry-run"], capture_output=True, text=True,
        env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)), timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert alone.returncode == 0 and "would time" in alone.stdout, alone.stdout + alone.stderr
    assert str(tmp_path / "shancoll" / "tune") in alone.stdout  # not the working directory


def test_tune_times_every_power_of_two():
    """The fit splits between measured sizes at their geometric mean: at powers
    of four gather's single copy, faster from 32 KiB on the Xeon VM, got a rule from 16."""
    cfg = tune.sweep_config(2, quick=False)
    assert list(cfg.sizes) == [8 << i for i in range(20)], cfg.sizes  # 8 B .. 4 MiB


def test_tune_times_the_bar_s_collectives_to_16_mib():
    """Issue 24's bar runs to 16 MiB for allgather(v), allreduce, bcast and reduce:
    a table fitted to 4 MiB carried its 4 MiB choice to every larger call."""
    cfg = tune.sweep_config(2, quick=False)
    for coll in ("allgatherv", "allreduce", "bcast", "reduce"):
        assert list(cfg.collective_sizes[coll]) == [8 << i for i in range(22)], coll
    assert "gather" not in cfg.collective_sizes  # 4 MiB: the others' sizes


def test_an_option_within_the_noise_leaves_the_algorithm_s_defaults():
    """single copy 5% faster at 64 bytes (where it changes nothing) is noise, not a rule;
    twice as fast at 64 KiB it is one."""
    from shancoll.bench.report import rule_table

    rows = [row("bcast", 64, "release_gather", 1.05e-6)]
    rows += [row("bcast", 64, "release_gather", 1e-6, "single_copy=True")]
    rows += [row("bcast", 65536, "release_gather", 2e-5)]
    rows += [row("bcast", 65536, "release_gather", 1e-5, "single_copy=True")]
    lines = [line for line in rule_table(rows).splitlines() if line.startswith("bcast")]
    assert lines == [
        "bcast\t0\t2048\t2\t2\t1\t1\trelease_gather\t-",
        "bcast\t2048\t*\t2\t2\t1\t1\trelease_gather\tsingle_copy=1",
    ]


def test_the_mpi_library_s_call_wins_its_ties():
    """shan ahead at 1 MiB; at 4 MiB shan within the margin of the fastest, but
    slower than the library's own call (allreduce: the library's the fastest;
    reduce: binomial the fastest): the rule takes the fastest there (never
    slower than the library), not the smaller size's shan."""
    from shancoll.bench.report import rule_table

    rows = []
    for coll, alternative in (("allreduce", []), ("reduce", [("binomial", 3.9e-4)])):
        rows += [row(coll, 1 << 20, "shan", 1e-4), row(coll, 1 << 20, "mpi", 2e-4)]
        for algorithm, t in [("shan", 4.12e-4), ("mpi", 4e-4), *alternative]:
            rows.append(row(coll, 4 << 20, algorithm, t))
    lines = [line for line in rule_table(rows).splitlines() if "reduce\t" in line]
    assert lines == [
        f"{coll}\t{lo}\t{hi}\t2\t2\t1\t1\t{algorithm}\t-"
        for coll, large in (("allreduce", "mpi"), ("reduce", "binomial"))
        for lo, hi, algorithm in ((0, 2097152, "shan"), (2097152, "*", large))
    ]


def test_several_runs_of_a_series_count_by_their_median():
    """Three tune runs concatenated: one fast run of release_gather does not
    outvote the two where the library's own call was faster."""
    from shancoll.bench.report import rule_table

    rows = [row("bcast", 64, "release_gather", t) for t in (1.0e-6, 1.02e-6, 0.6e-6)]
    rows += [row("bcast", 64, "mpi", t) for t in (0.9e-6, 0.95e-6, 0.9e-6)]
    assert "\nbcast\t0\t*\t2\t2\t1\t1\tmpi\t-\n" in rule_table(rows)
