"""Rule tables behind algorithm="auto": parsing, selection and the safety
rules (pure: the C++ core's choice for a described call, no ranks needed),
and the table a sweep fits from its results."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import shancoll
from shancoll import _core
from shancoll.bench import report

TABLE = """\
# coll  min_bytes max_bytes min_ranks max_ranks nodes algorithm options
allreduce  0     1024  4  4  1   nway_dissemination  -
allreduce  1024  *     4  4  1   ring                -
allreduce  0     *     3  3  *   ring                -
allgatherv 0     4096  2  *  2+  bruck               -
allgatherv 4096  *     2  *  *   no_such_algorithm   -
bcast      0     *     1  *  *   binomial            -
reduce     0     *     2  2  *   release_gather      -
"""


@pytest.fixture
def table(tmp_path, monkeypatch):
    monkeypatch.delenv("SHANCOLL_RULES", raising=False)
    path = tmp_path / "rules.tsv"
    path.write_text(TABLE)
    shancoll.set_rules(path)
    yield path
    shancoll.set_rules(None)


def test_parse():
    rules = _core.parse_rules(TABLE)
    assert len(rules) == 7
    no_limit = 2**31 - 1
    assert rules[0] == (
        "allreduce", 0, 1024, 4, 4, 1, 1, "nway_dissemination", "", 1, no_limit, ""
    )  # fmt: skip
    assert rules[1][2] == 2**63 - 1  # '*': no limit
    assert rules[3][5:7] == (2, no_limit)  # nodes 2+
    # hosts, the column after nodes (8-field rows, as above: '*')
    assert _core.parse_rules("bcast 0 * 2 2 2 2 binomial -")[0][7:] == ("binomial", "", 2, 2, "")
    assert _core.parse_rules("bcast 0 * 2 * 2+ 2+ mpi -")[0][9:] == (2, no_limit, "")
    # hosts with the network module that carries their messages
    assert _core.parse_rules("bcast 0 * 2 * 2 2@OFI mpi -")[0][9:] == (2, 2, "ofi")
    assert _core.parse_rules("bcast 0 * 2 * 2 *@ucx mpi -")[0][9:] == (1, no_limit, "ucx")
    assert _core.parse_rules("allgather 0 * 1 * * ring -")[0][0] == "allgatherv"
    assert _core.parse_rules("alltoall 0 * 1 * * bruck -")[0][0] == "alltoallv"
    for bad, what in (
        ("alltoallw 0 * 1 * * ring -", "unknown collective"),
        ("bcast 0 * 1 * * ring", "7 fields; 9 needed"),
        ("bcast 0 * 1 * * * ring - extra", "10 fields; 9 needed"),
        ("bcast 0 * 1 * * ring - -", "'ring' is not a count"),
        ("bcast x * 1 * * ring -", "not a count"),
        ("bcast 8 8 1 * * ring -", "empty range"),
        ("bcast 0 * 1 * * release_gather tree=oak", "unknown tree 'oak'"),
        ("allreduce 0 * 1 * * ring nope=1", "unknown option of allreduce"),
        ("allreduce 0 * 1 * 2 2@ ring -", "'2@' names no network module"),
        ("allreduce 0 * 1 * 2 2@a/b ring -", "'2@a/b' names no network module"),
        ("allreduce 0 * 1 * 2 x@ucx ring -", "'x' is not a count"),
    ):
        with pytest.raises(ValueError, match=what) as e:
            _core.parse_rules("# ok\n\n" + bad, "t.tsv")
        assert "rules: t.tsv:3:" in str(e.value)


def test_selection(table):
    assert shancoll.rules_path() == str(table)
    choose = _core.choose_auto
    # exact types take the rule; sizes are half-open ranges
    assert choose("allreduce", 8, 4, 1, inexact=False) == "nway_dissemination"
    assert choose("allreduce", 1024, 4, 1, inexact=False) == "ring"
    # rank-varying floating point only when the caller allows it (else the
    # built-in rule: shan on one node, the message rules on several)
    assert choose("allreduce", 8, 4, 1, inexact=True) == "shan"
    assert choose("allreduce", 8, 4, 1, inexact=True, consistent=False) == "nway_dissemination"
    # a non-commutative op never gets an algorithm that reorders it
    assert choose("allreduce", 1 << 20, 3, 1, commutative=False) == "shan"
    assert choose("allreduce", 1 << 20, 3, 3, commutative=False) == "binomial"
    assert choose("reduce", 64, 2, 1, commutative=False) == "mpi"
    assert choose("reduce", 64, 2, 1) == "release_gather"
    # ring needs an element per rank: 8 bytes at 3 ranks fall back
    assert choose("allreduce", 8, 3, 1, inexact=False) == "shan"
    assert choose("allreduce", 8, 3, 3, inexact=False) == "nway_dissemination"
    # nodes: '2+' holds for 2 and more, not for 1 nor for unknown (0)
    assert choose("allgatherv", 64, 4, 2) == "bruck"
    assert choose("allgatherv", 64, 4, 1) == "shan"
    assert choose("allgatherv", 64, 4, 0) != "bruck"
    # a node-shared result can only come from shan
    assert choose("allgatherv", 64, 4, 2, private_recv=False) == "shan"
    # an unknown algorithm in the table: the built-in rule
    assert choose("allgatherv", 4 << 20, 2, 1) == "ring"
    assert choose("bcast", 1, 7, 3) == "binomial"


def test_alltoall_rules(tmp_path, monkeypatch):
    """alltoall rows (alltoallv's table) decide alltoall calls by their block size;
    an alltoallv call, whose sizes differ from rank to rank, reads no size: the
    built-in rule (the MPI library's). Built in: shan for blocks up to 4 KiB on
    one node, else the MPI library's."""
    monkeypatch.delenv("SHANCOLL_RULES", raising=False)
    choose = _core.choose_auto
    path = tmp_path / "rules.tsv"
    path.write_text("alltoall 0 1024 2 * * bruck -\nalltoall 1024 * 2 * * pairwise -\n")
    try:
        shancoll.set_rules("builtin")
        assert choose("alltoall", 8, 4, 1) == "shan"
        assert choose("alltoall", 4096, 4, 1) == "shan"
        assert choose("alltoall", 4097, 4, 1) == "mpi"
        assert choose("alltoall", 8, 4, 2) == "mpi"  # several nodes: unmeasured
        assert choose("alltoall", 8, 4, 1, hosts=2) == "mpi"
        assert choose("alltoallv", 8, 4, 1) == "mpi"
        shancoll.set_rules(path)
        assert choose("alltoall", 8, 4, 2) == "bruck"
        assert choose("alltoall", 65536, 4, 1) == "pairwise"
        assert choose("alltoallv", 8, 4, 2) == "mpi"
    finally:
        shancoll.set_rules(None)


def test_sources(table, tmp_path, monkeypatch):
    other = tmp_path / "other.tsv"
    other.write_text("bcast 0 * 1 * * mpi -\n")
    shancoll.set_rules(None)
    monkeypatch.setenv("SHANCOLL_RULES", str(other))
    shancoll.reload_environment()
    assert shancoll.rules_path() == str(other)
    assert _core.choose_auto("bcast", 8, 2, 1) == "mpi"
    shancoll.set_rules(table)  # the explicit choice wins over the environment
    assert _core.choose_auto("bcast", 8, 2, 1) == "binomial"
    shancoll.set_rules("builtin")  # no table at all
    assert _core.choose_auto("bcast", 8, 2, 1) == "release_gather"
    with pytest.raises(ValueError, match="rules: cannot read"):
        shancoll.set_rules(tmp_path / "missing.tsv")
    with pytest.raises(TypeError, match="path"):
        shancoll.set_rules(3)
    monkeypatch.setenv("SHANCOLL_RULES", str(tmp_path / "missing.tsv"))
    shancoll.reload_environment()
    shancoll.set_rules(None)
    with pytest.raises(ValueError, match="SHANCOLL_RULES"):
        _core.choose_auto("bcast", 8, 2, 1)


def _row(coll, alg, size, t, **kw):
    return {
        "collective": coll, "distribution": "regular", "ranks": 2, "nodes": 1,
        "ranks_per_node": 0, "series": alg, "kind": "shancoll", "algorithm": alg,
        "options": "", "bytes_per_rank": size, "time_median_s": t, "status": "ok",
        "check": "ok", "mpi_library": "MPICH 5", **kw,
    }  # fmt: skip


def test_fitted_table_round_trips():
    rows = [
        _row("allreduce", "ring", 8, 2.0),
        _row("allreduce", "binomial", 8, 1.0),
        _row("allreduce", "binomial", 64, 1.0),
        _row("allreduce", "ring", 64, 3.0),
        _row("allreduce", "ring", 4096, 1.0),
        _row("allreduce", "binomial", 4096, 2.0),
        _row("allreduce", "shan", 4096, 0.1, check="fail"),  # wrong results never win
        _row("allreduce", "shan", 8, 0.1, options="k=2"),  # nor non-default options
        _row("bcast", "mpi", 8, 1.0),
    ]
    text = report.rule_table(rows, "test")
    parsed = _core.parse_rules(text)
    assert [(r[0], r[1], r[2], r[7]) for r in parsed] == [
        ("allreduce", 0, 512, "binomial"),  # 8 and 64 merged; split at sqrt(64 * 4096)
        ("allreduce", 512, 2**63 - 1, "ring"),
        ("bcast", 0, 2**63 - 1, "mpi"),
    ]
    assert all(r[3] == r[4] == 2 and r[5] == r[6] == 1 and r[9] == r[10] == 1 for r in parsed)
    # a real-node run's rows say hosts 2, and hold on hosts only
    rows = [_row("bcast", "binomial", 8, 1.0, nodes=2, hosts=2), _row("bcast", "mpi", 8, 2.0)]
    parsed = _core.parse_rules(report.rule_table(rows, "test"))
    assert [(r[7], r[5], r[9], r[10]) for r in parsed] == [("mpi", 1, 1, 1), ("binomial", 2, 2, 2)]


def test_a_winning_mechanism_option_goes_into_its_rule():
    """Single copy off or on is a mechanism choice: a series with it may win,
    and its row carries it (as rules.h reads booleans); other options never win."""
    rows = [
        _row("bcast", "release_gather", 8, 1.0),
        _row("bcast", "release_gather", 8, 2.0, options="single_copy=False"),
        _row("bcast", "release_gather", 65536, 3.0),
        _row("bcast", "release_gather", 65536, 2.0, options="single_copy=False"),
        _row("bcast", "release_gather", 65536, 2.5, options="single_copy=True"),
        _row("bcast", "release_gather", 65536, 0.5, options="single_copy=False,inline=False"),
        _row("bcast", "mpi", 65536, 2.2),
    ]
    parsed = _core.parse_rules(report.rule_table(rows, "test"))
    assert [(r[1], r[7], r[8]) for r in parsed] == [
        (0, "release_gather", ""),
        (724, "release_gather", "single_copy=0"),
    ], parsed


def test_ring_and_buffer_sizes_go_into_their_rules():
    """shan's ring_window (allgatherv), pieces' (allreduce) and
    release_gather's buffer_size and buffers (reduce) are mechanism choices
    too (tune times them): a winner with them carries them, and the row
    parses."""
    rows = [
        _row("allgatherv", "shan", 65536, 2.0, options="single_copy=False"),
        _row("allgatherv", "shan", 65536, 1.0, options="single_copy=False,ring_window=2097152"),
        _row("allgatherv", "mpi", 65536, 1.5),
        _row("allreduce", "pieces", 65536, 2.0),
        _row("allreduce", "pieces", 65536, 1.0, options="ring_window=2097152"),
        _row("allreduce", "shan", 65536, 1.5),
        _row("reduce", "release_gather", 65536, 2.0),
        _row(
            "reduce",
            "release_gather",
            65536,
            1.0,
            options="single_copy=False,buffer_size=2097152,buffers=64",
        ),  # fmt: skip
    ]
    parsed = _core.parse_rules(report.rule_table(rows, "test"))
    assert [(r[0], r[7], r[8]) for r in parsed] == [
        ("allgatherv", "shan", "single_copy=0,ring_window=2097152"),
        ("allreduce", "pieces", "ring_window=2097152"),
        ("reduce", "release_gather", "single_copy=0,buffer_size=2097152,buffers=64"),
    ], parsed


def test_shipped_tables_parse():
    from shancoll._rules import PACKAGE_RULES

    tables = sorted(PACKAGE_RULES.glob("*.tsv"))
    assert len(tables) >= 3  # one per machine measured, and the conservative one
    for table in tables:
        assert _core.parse_rules(table.read_text(), str(table)), table


def test_rule_options_parse():
    rule = _core.parse_rules("bcast 32768 * 2 2 1 release_gather single_copy=0,buffers=8")[0]
    assert rule[7:9] == ("release_gather", "single_copy=0,buffers=8")


def test_allgather_rules_may_turn_single_copy_off():
    """The AMD EPYC tables run shan allgather(v) on the segment path (faster
    there than cross-memory attach from 32 KiB to 1 MiB)."""
    rule = _core.parse_rules("allgatherv 16384 * 2 2 1 shan single_copy=0")[0]
    assert rule[7:9] == ("shan", "single_copy=0")


def test_a_table_that_cannot_be_used_is_read_once(tmp_path, monkeypatch):
    """Every auto call fails alike on a bad table, without reading the file
    again each time (it had cost 18 us per call): once the file is gone, the
    error is still the parse error, not 'cannot read'."""
    bad = tmp_path / "bad.tsv"
    bad.write_text("allgatherv 0 * 1 * * shan no_such_option=1\n")
    shancoll.set_rules(None)
    monkeypatch.setenv("SHANCOLL_RULES", str(bad))
    shancoll.reload_environment()
    for _ in range(2):
        with pytest.raises(ValueError, match="no_such_option"):
            _core.choose_auto("bcast", 8, 2, 1)
        bad.unlink(missing_ok=True)
    monkeypatch.delenv("SHANCOLL_RULES")
    shancoll.reload_environment()


def test_the_amd_epyc_mpich_table_runs_shan_for_scans_reduce_scatter_and_alltoall():
    """Measured idle (2026-11-24): shan 1.4-16x MPICH's own scan, exscan,
    reduce_scatter_block (to 256 KiB) and alltoall (to 256 KiB blocks)."""
    from shancoll._rules import PACKAGE_RULES

    shancoll.set_rules(PACKAGE_RULES / "amd-epyc-mpich-5.0.2.tsv")
    try:
        cases = [
            ("scan", 8, "shan"),
            ("exscan", 1 << 20, "shan"),
            ("reduce_scatter_block", 8, "shan"),
            ("reduce_scatter_block", 1 << 20, "mpi"),
            ("alltoall", 8192, "shan"),
            ("alltoall", 1 << 20, "mpi"),
        ]
        for coll, size, want in cases:
            assert _core.choose_auto(coll, size, 2, 1) == want, (coll, size)
    finally:
        shancoll.set_rules(None)


def test_persistent_rows():
    """<coll>_init rows: the persistent form's auto (rules.h); options '-',
    single_copy=0 or single_copy=1 only."""
    rows = _core.parse_rules(
        "gather_init 0 * 2 2 1 * shan single_copy=0\nalltoall_init 0 * 1 * * mpi -\n"
        "allreduce_init 0 * 2 2 1 * shan single_copy=1"
    )
    assert [r[0] for r in rows] == ["gather_init", "alltoallv_init", "allreduce_init"]
    assert rows[0][8] == "single_copy=0" and rows[2][8] == "single_copy=1"
    with pytest.raises(ValueError, match="on a persistent row"):
        _core.parse_rules("bcast_init 0 * 1 * * release_gather ring_window=65536")
    with pytest.raises(ValueError, match="unknown collective 'alltoallw_init'"):
        _core.parse_rules("alltoallw_init 0 * 1 * * mpi -")


def test_persistent_rows_by_machine():
    """The Zen 4 Intel MPI table leaves the persistent bcast past 16 KiB and
    alltoall past blocks of 4 KiB to Intel MPI's own (faster there); tune's
    Zen 3 tables keep MPICH's persistent bcast of 1 MiB on the segment and
    Intel MPI's on single copy, MPICH's persistent scan from 32 KiB and Intel
    MPI's alltoall from 8 KiB with the library's own; the
    conservative table, for a machine no table was measured on, has no
    persistent rows (the inline engines alone); only the Zen 4 MPICH table
    has rows for 3-4 ranks."""
    from shancoll._rules import PACKAGE_RULES

    cases = {
        "amd-epyc-zen4-impi-2021.18.tsv": [
            ("bcast", 16 << 10, "release_gather", ("release_gather", -1)),
            ("bcast", (16 << 10) + 1, "release_gather", ("mpi", -1)),
            ("alltoall", 4 << 10, "shan", ("shan", -1)),
            ("alltoall", 8 << 10, "shan", ("mpi", -1)),
            ("gather", 1 << 20, "shan", ("shan", -1)),
        ],
        "amd-epyc-zen4-mpich-5.0.2.tsv": [
            ("bcast", 8 << 20, "release_gather", ("release_gather", -1))
        ],
        # 3 and 4 ranks: measured under MPICH (the other tables have no rows there)
        "amd-epyc-zen4-mpich-5.0.2.tsv@4": [
            ("allreduce", 8, "shan", ("shan", -1)),
            ("scatter", 2048, "shan", ("shan", -1)),
            ("scatter", 4096, "shan", ("mpi", -1)),
            ("bcast", 64 << 10, "release_gather", ("mpi", -1)),
        ],
        "amd-epyc-zen3-mpich-5.0.2.tsv": [
            ("bcast", 1 << 20, "release_gather", ("release_gather", -1)),
            ("alltoall", 2 << 20, "shan", ("mpi", -1)),
            ("gather", 64, "shan", ("shan", -1)),
            ("scan", 64 << 10, "shan", ("mpi", -1)),
        ],
        "amd-epyc-zen3-impi-2021.18.tsv": [
            ("alltoall", 4 << 10, "shan", ("shan", -1)),
            ("alltoall", 64 << 10, "shan", ("mpi", -1)),
            ("bcast", 32 << 10, "release_gather", ("release_gather", 1)),
        ],
        "conservative.tsv": [
            ("allreduce", 800, "shan", ("", -1)),
            ("bcast", 8, "release_gather", ("", -1)),
        ],
    }
    try:
        for key, rows in cases.items():
            table, _, ranks = key.partition("@")
            shancoll.set_rules(PACKAGE_RULES / table)
            for coll, size, engine, want in rows:
                got = _core.persistent_choice(coll, size, int(ranks or 2), engine=engine)
                assert got == want, (key, coll, size)
            if table != "amd-epyc-zen4-mpich-5.0.2.tsv":  # measured at 2 ranks only
                assert _core.persistent_choice("allreduce", 8, 3) == ("", -1), table
    finally:
        shancoll.set_rules(None)


def test_the_amd_epyc_intel_mpi_table_bcast_on_the_segment_and_mid_allreduce_with_intel_mpi():
    """Measured idle (2026-11-25, peers_select.py): release_gather's bcast on
    the segment beat Intel MPI's best setting at 1 MiB (19.8 against 27.1 us)
    and, in 128 KiB chunks from 2 MiB, tied it to 16 MiB with a steadier
    spread; Intel MPI's allreduce won from 64 KiB to 2 MiB."""
    from shancoll._rules import PACKAGE_RULES

    shancoll.set_rules(PACKAGE_RULES / "amd-epyc-impi-2021.18.tsv")
    try:
        cases = [
            ("bcast", 1 << 20, "release_gather"),
            ("bcast", (2 << 20) - 8, "release_gather"),
            ("bcast", 2 << 20, "release_gather"),
            ("bcast", 16 << 20, "release_gather"),
            ("allreduce", 32 << 10, "release_gather"),
            ("allreduce", 1 << 20, "mpi"),
            ("allreduce", 4 << 20, "release_gather"),
        ]
        for coll, size, want in cases:
            assert _core.choose_auto(coll, size, 2, 1) == want, (coll, size)
    finally:
        shancoll.set_rules(None)


def machine() -> dict[str, str]:
    text = shancoll.rules_info()["machine"]  # "cpu=..., mpi=..."
    return dict(part.split("=", 1) for part in text.split(", "))


def test_the_table_of_this_machine_else_the_conservative_one(tmp_path, monkeypatch):
    """The default search takes the first table whose match lines hold here,
    else the first without match lines (the conservative table), and says so."""
    monkeypatch.delenv("SHANCOLL_RULES", raising=False)
    here = machine()
    rows = "bcast 0 * 1 * * binomial -\n"
    (tmp_path / "a-other.tsv").write_text("match cpu No Such CPU\n" + rows)
    match_here = f"match cpu {here['cpu']}\nmatch mpi {here['mpi']}\n"
    (tmp_path / "b-here.tsv").write_text(match_here + rows)
    (tmp_path / "c-generic.tsv").write_text(rows)
    from shancoll._rules import PACKAGE_RULES, user_rules_dir

    try:
        _core.set_default_rules(str(tmp_path))
        info = shancoll.rules_info()
        assert info["path"] == str(tmp_path / "b-here.tsv")
        assert "measured on this machine" in info["how"]
        (tmp_path / "b-here.tsv").unlink()
        shancoll.reload_environment()  # a new search
        info = shancoll.rules_info()
        assert info["path"] == str(tmp_path / "c-generic.tsv")
        assert "conservative" in info["how"] and "No Such CPU" not in info["how"]
    finally:
        _core.set_default_rules(f"{user_rules_dir()}:{PACKAGE_RULES}")


def test_a_shipped_table_for_this_machine_or_the_conservative_one(monkeypatch):
    """The process's own search agrees with the search on its fingerprint, and
    a machine without a table gets the conservative one, told how to measure its own."""
    from shancoll._rules import PACKAGE_RULES

    monkeypatch.delenv("SHANCOLL_RULES", raising=False)
    info = shancoll.rules_info()
    assert info["path"].endswith(".tsv"), info
    fingerprint = {key: info[key] for key in ("cpu", "cpuid", "caches", "mpi")}
    path, _how = _core.table_for(str(PACKAGE_RULES), fingerprint)
    assert Path(info["path"]).name == Path(path).name, info
    if Path(path).name == "conservative.tsv":
        assert "no table measured on this machine" in info["how"], info
        assert "python -m shancoll.bench.tune" in info["how"], info
    else:
        assert "measured on this machine" in info["how"], info


# Fingerprints of the machines measured (docs/performance.md): the KVM guests'
# model names do not tell the two AMD EPYC VMs apart, their caches do.
ZEN5 = {"cpu": "AMD EPYC", "cpuid": "family 26 model 2", "caches": "L1d 48K L2 1M L3 32M"}
ZEN3 = {"cpu": "AMD EPYC", "cpuid": "family 25 model 1", "caches": "L1d 32K L2 512K L3 32M"}
ZEN4 = {"cpu": "AMD EPYC", "cpuid": "family 25 model 17", "caches": "L1d 32K L2 1M L3 32M"}
# The Intel Xeon VM of 2026-11-29 (Emerald Rapids; lscpu's "L2 4 MiB" is two cores' sum).
XEON = {"cpu": "Intel(R) Xeon(R) Processor", "cpuid": "family 6 model 207",
        "caches": "L1d 48K L2 2M L3 300M"}  # fmt: skip
MPICH = "MPICH Version: 5.0.2"
LIBRARIES = {
    "mpich-5.0.2": MPICH,
    "openmpi-5.0.11": "Open MPI v5.0.11, package: Open MPI Distribution, ident: 5.0.11",
    "impi-2021.18": "Intel(R) MPI Library 2021.18 for Linux* OS",
}


def shipped_table_for(machine: dict[str, str]) -> str:
    from shancoll._rules import PACKAGE_RULES

    return Path(_core.table_for(str(PACKAGE_RULES), machine)[0]).name


def test_the_table_chosen_for_a_fingerprint():
    for library, mpi in LIBRARIES.items():
        assert shipped_table_for({**ZEN5, "mpi": mpi}) == f"amd-epyc-{library}.tsv"
    for library, mpi in LIBRARIES.items():
        assert shipped_table_for({**XEON, "mpi": mpi}) == f"intel-xeon-emr-{library}.tsv"
    for library, mpi in LIBRARIES.items():
        assert shipped_table_for({**ZEN3, "mpi": mpi}) == f"amd-epyc-zen3-{library}.tsv"
    for library, mpi in LIBRARIES.items():
        assert shipped_table_for({**ZEN4, "mpi": mpi}) == f"amd-epyc-zen4-{library}.tsv"


def test_the_conservative_table_leaves_large_gathers_to_the_library():
    """shan's default gather (pair channels) lost from 64 KiB to MPICH's and
    Intel MPI's on the Xeon VM, its single copy on the EPYC VMs; below 32 KiB
    shan won everywhere (built-in rule)."""
    from shancoll._rules import PACKAGE_RULES

    shancoll.set_rules(PACKAGE_RULES / "conservative.tsv")
    try:
        assert _core.choose_auto("gather", 16 << 10, 2, 1) == "shan"
        assert _core.choose_auto("gather", 64 << 10, 2, 1) == "mpi"
        assert _core.choose_auto("scatter", 64 << 10, 2, 1) == "mpi"
    finally:
        shancoll.set_rules(None)


def test_the_xeon_tables_hold_on_their_model_and_caches_only():
    """Measured on one Xeon model (family 6 model 207, 2 MiB L2 per core); its L3
    (what the VM reports) is not named. Another model or L2 gets the conservative table."""
    for mpi in LIBRARIES.values():
        assert "intel-xeon" in shipped_table_for(
            {**XEON, "caches": "L1d 48K L2 2M L3 105M", "mpi": mpi}
        )
        for other in ({**XEON, "cpuid": "family 6 model 143"}, {**XEON, "caches": "L1d 48K L2 4M"}):
            assert shipped_table_for({**other, "mpi": mpi}) == "conservative.tsv", other


def test_a_zen4_table_holds_on_zen4_only():
    """Zen 4 shares Zen 3's L1d and Zen 5's L2 and L3; its tables (single copy,
    which loses on both) name its family and model."""
    for mpi in LIBRARIES.values():
        for other in (ZEN3, ZEN5, {**ZEN4, "cpuid": "family 25 model 1"}):
            assert "zen4" not in shipped_table_for({**other, "mpi": mpi}), other


def test_the_zen4_tables_of_open_mpi_and_intel_mpi_cover_every_collective():
    """Measured on Zen 4 under each library (2026-11-29, oth-openmpi.txt,
    oth-impi.txt, ex-*.txt, pc-*.txt): Open MPI's alltoall below 512 B and
    Intel MPI's from 16 KiB beat shan, and the tables send them there; shan's
    scatter through a 2 MiB ring beats Open MPI's from 32 KiB, which beat the
    cached ring; shan's exscan (a bcast on one node of two ranks) beats both
    libraries' at every size. Before, the built-in rules decided every
    collective but the five."""
    from shancoll._rules import PACKAGE_RULES

    cases = {
        "amd-epyc-zen4-openmpi-5.0.11.tsv": [
            ("exscan", 8 << 10, "shan"),
            ("exscan", 64 << 10, "shan"),
            ("scatter", 1 << 20, "shan"),
            ("alltoall", 8, "shan"),
            ("alltoall", 64 << 10, "shan"),
            ("gather", 1 << 20, "shan"),
            ("reduce_scatter_block", 1 << 20, "shan"),
        ],
        "amd-epyc-zen4-impi-2021.18.tsv": [
            ("alltoall", 8, "shan"),
            ("alltoall", 64 << 10, "mpi"),
            ("gather", 64 << 10, "shan"),
            ("gather", 4 << 20, "mpi"),
            ("scan", 8 << 10, "shan"),
            ("scan", 64 << 10, "mpi"),
            ("scan", 1 << 20, "shan"),
            ("exscan", 64 << 10, "shan"),
            ("reduce_scatter_block", 256 << 10, "shan"),
        ],
    }
    for table, table_cases in cases.items():
        shancoll.set_rules(PACKAGE_RULES / table)
        try:
            for coll, size, want in table_cases:
                assert _core.choose_auto(coll, size, 2, 1) == want, (table, coll, size)
        finally:
            shancoll.set_rules(None)
    for table in cases:
        rows = (PACKAGE_RULES / table).read_text().splitlines()
        colls = {r.split("\t")[0] for r in rows if r and not r.startswith(("#", "match"))}
        assert {"gatherv", "scatterv", "reduce_scatter", "scan", "exscan"} <= colls, table


def test_the_zen4_tables_take_the_large_rings():
    """Measured on Zen 4 under each library (2026-11-29, ring-*.txt,
    rdbuf-mpich.txt, arring-all.txt): shan allgather(v) through a 2 MiB ring
    per rank, release_gather's reduce with 2 MiB buffers from 64 KiB and
    pieces' allreduce through a 2 MiB ring from 4 KiB beat every other
    mechanism there (Intel MPI's own allgather stays at 16-512 KiB; its
    allreduce, which the table took at 4-512 KiB, no longer)."""
    from shancoll._rules import PACKAGE_RULES

    def rule(table, coll, size):
        rows = _core.parse_rules((PACKAGE_RULES / table).read_text(), table)
        hits = [r for r in rows if r[0] == coll and r[1] <= size < r[2]]
        return hits[0][7:9]

    ring = ("shan", "single_copy=0,ring_window=2097152")
    buffers = ("release_gather", "single_copy=0,buffer_size=2097152,buffers=64")
    for library in LIBRARIES:
        table = f"amd-epyc-zen4-{library}.tsv"
        assert rule(table, "allgatherv", 1 << 20) == ring, table
        assert rule(table, "allgatherv", 16 << 20) == ring, table
        assert rule(table, "allgatherv", 8) == ("shan", ""), table
        assert rule(table, "reduce", 1 << 20) == buffers, table
        for size in (4 << 10, 64 << 10, 16 << 20):
            assert rule(table, "allreduce", size) == ("pieces", "ring_window=2097152"), table
    assert rule("amd-epyc-zen4-mpich-5.0.2.tsv", "allgatherv", 64 << 10) == ring
    assert rule("amd-epyc-zen4-impi-2021.18.tsv", "allgatherv", 64 << 10) == ("mpi", "")


def test_a_zen5_table_is_not_chosen_on_a_zen3_fingerprint():
    """Both VMs call their CPU "AMD EPYC"; the Zen 5 tables (48K L1d, 1M L2) were
    measured on one only."""
    for mpi in LIBRARIES.values():
        assert shipped_table_for({**ZEN3, "mpi": mpi}) != shipped_table_for({**ZEN5, "mpi": mpi})
        assert "48K" not in (Path(shancoll._rules.PACKAGE_RULES) / shipped_table_for(
            {**ZEN3, "mpi": mpi})).read_text()  # fmt: skip


def test_the_conservative_table_for_an_unknown_fingerprint():
    unknown = [
        {"cpu": "Ampere Altra", "cpuid": "unknown", "caches": "L1d 64K L2 1M", "mpi": MPICH},
        {**ZEN5, "mpi": "MPICH Version: 4.1"},  # a library not measured
        {**ZEN5, "caches": "unknown", "mpi": MPICH},  # no sysfs: the caches cannot be told
        {**ZEN5, "caches": "L1d 48K L2 1M L3 96M", "mpi": MPICH},  # an L3 of its own
    ]
    for machine in unknown:
        path, how = _core.table_for(str(shancoll._rules.PACKAGE_RULES), machine)
        assert Path(path).name == "conservative.tsv", machine
        assert "no table measured on this machine" in how and machine["cpu"] in how
        assert "python -m shancoll.bench.tune" in how


def test_a_cache_line_holds_per_named_cache_exactly(tmp_path):
    """Each cache a match line names must have that size (in any spelling);
    caches it leaves out are not compared; a misspelt name is an error."""
    (tmp_path / "a.tsv").write_text("match caches L2 512K L3 32768K\nbcast 0 * 1 * * binomial -\n")
    (tmp_path / "z.tsv").write_text("bcast 0 * 1 * * binomial -\n")
    assert _core.table_for(str(tmp_path), ZEN3)[0] == str(tmp_path / "a.tsv")
    for caches in ("L1d 32K L2 512K L3 3M", "L1d 32K L2 5M L3 32M", "L1d 32K L3 32M"):
        assert _core.table_for(str(tmp_path), {**ZEN3, "caches": caches})[0] == str(
            tmp_path / "z.tsv"), caches  # fmt: skip
    (tmp_path / "a.tsv").write_text("match caches L1 32K\n")
    with pytest.raises(ValueError, match="L1d <size>"):
        _core.table_for(str(tmp_path), ZEN3)


def write_cache(root: Path, index: int, level: int, kind: str, size: str) -> None:
    d = root / f"index{index}"
    d.mkdir(parents=True)
    for name, value in (("level", level), ("type", kind), ("size", size)):
        (d / name).write_text(f"{value}\n")


def test_caches_from_sysfs(tmp_path):
    write_cache(tmp_path, 0, 1, "Data", "32K")
    write_cache(tmp_path, 1, 1, "Instruction", "64K")
    write_cache(tmp_path, 2, 2, "Unified", "512K")
    write_cache(tmp_path, 3, 3, "Unified", "32768K")
    assert _core.read_caches(str(tmp_path)) == "L1d 32K L2 512K L3 32M"
    (tmp_path / "index3" / "size").unlink()  # a file missing: that cache is left out
    assert _core.read_caches(str(tmp_path)) == "L1d 32K L2 512K"
    assert _core.read_caches(str(tmp_path / "absent")) == "unknown"


def test_this_machine_s_fingerprint_names_its_caches():
    info = shancoll.rules_info()
    assert "caches=" in info["machine"] and "cpuid=" in info["machine"]
    assert info["caches"] == _core.read_caches("/sys/devices/system/cpu/cpu0/cache")


def test_across_hosts_auto_leaves_the_call_to_mpi():
    """Calls that span physical nodes go to the MPI library's own collective
    (the built-in rule: measured on two hosts, every shancoll algorithm was
    slower than MPICH's over its network module); one host keeps shancoll's."""
    shancoll.set_rules("builtin")
    try:
        for coll in ("allgatherv", "allreduce", "bcast", "reduce"):
            assert _core.choose_auto(coll, 64, 2, 2, hosts=2) == "mpi", coll
            assert _core.choose_auto(coll, 64, 2, 2, hosts=1) != "mpi", coll
        # a node-shared result has one way only
        assert _core.choose_auto("allgatherv", 64, 2, 2, private_recv=False, hosts=2) == "shan"
    finally:
        shancoll.set_rules(None)


def test_hosts_tell_real_nodes_from_virtual_ones(tmp_path, monkeypatch):
    """A rule measured on two real nodes (hosts 2) decides calls across hosts only;
    two virtual nodes on one host keep their own rules (here the built-in one),
    and a rule without hosts ('*', or an 8-field row) holds on both."""
    monkeypatch.delenv("SHANCOLL_RULES", raising=False)
    path = tmp_path / "rules.tsv"
    path.write_text(
        "bcast 0 1024 2 2 2 2 binomial -\n"
        "bcast 1024 * 2 2 2 * binomial -\n"
        "reduce 0 * 2 2 2 binomial -\n"  # 8 fields: hosts '*'
    )
    shancoll.set_rules(path)
    try:
        choose = _core.choose_auto
        assert choose("bcast", 64, 2, 2, hosts=2) == "binomial"
        assert choose("bcast", 64, 2, 2, hosts=1) == "release_gather"  # the built-in rule
        assert choose("bcast", 64, 2, 2, hosts=0) == "release_gather"  # unknown: '*' only
        assert choose("bcast", 4096, 2, 2, hosts=1) == "binomial"
        assert choose("bcast", 4096, 2, 2, hosts=2) == "binomial"
        assert choose("reduce", 64, 2, 2, hosts=1) == choose("reduce", 64, 2, 2, hosts=2)
        assert choose("reduce", 64, 2, 2, hosts=1) == "binomial"
    finally:
        shancoll.set_rules(None)


def test_a_row_may_name_the_network_between_hosts(tmp_path, monkeypatch):
    """A hosts field N@<network> holds only under that network module (this
    process's, rules_info()["network"]), so one table carries UCX's and OFI's
    choices for one layout; a row without one holds under any."""
    monkeypatch.delenv("SHANCOLL_RULES", raising=False)
    here = shancoll.rules_info()["network"]
    assert here in ("ucx", "ofi")  # the PyPI MPICH: ch4:ucx ofi
    other = "ofi" if here == "ucx" else "ucx"
    path = tmp_path / "rules.tsv"
    path.write_text(
        f"allreduce 0 * 2 2 2 2@{other} ring -\n"
        f"allreduce 0 1024 2 2 2 2@{here.upper()} pairwise_exchange -\n"
        "allreduce 0 * 2 2 2 2 binomial -\n"
    )
    shancoll.set_rules(path)
    try:
        choose = _core.choose_auto
        assert choose("allreduce", 64, 2, 2, hosts=2) == "pairwise_exchange"
        assert choose("allreduce", 4096, 2, 2, hosts=2) == "binomial"
    finally:
        shancoll.set_rules(None)


def test_the_network_module_of_each_library():
    """MPICH's netmod: its CVAR where set, else its build's first; Intel MPI's
    is libfabric's; a library whose module is not known names none."""
    from mpi4py import MPI

    mpich = "MPICH Version:      5.0.2\nMPICH Device:       ch4:ucx ofi\nMPICH CC: cc\n"
    assert _core.network_of(mpich) == "ucx"
    assert _core.network_of(mpich, "OFI") == "ofi"
    assert _core.network_of("MPICH Version: 4.2.0\nMPICH Device: ch4:ofi\n") == "ofi"
    assert _core.network_of("MPICH Version: 3.4\nMPICH Device: ch3:nemesis\n") == "unknown"
    assert _core.network_of("Intel(R) MPI Library 2021.18 for Linux* OS\n") == "ofi"
    assert _core.network_of("Open MPI v5.0.11, package: Open MPI", "ucx") == "unknown"
    netmod = os.environ.get("MPIR_CVAR_CH4_NETMOD", "")
    assert shancoll.rules_info()["network"] == _core.network_of(MPI.Get_library_version(), netmod)


def test_the_amd_epyc_mpich_table_leaves_two_hosts_to_mpi():
    """Measured on 2 hosts x 1 rank under UCX, the point-to-point algorithms the
    table used to name there (pairwise_exchange, binomial) ran 0.22-0.59x the
    library's own call: across hosts the table has no rows, and auto runs the
    library's; two virtual nodes keep their own choices."""
    from shancoll._rules import PACKAGE_RULES

    shancoll.set_rules(str(Path(PACKAGE_RULES) / "amd-epyc-mpich-5.0.2.tsv"))
    try:
        for coll in ("allgatherv", "allreduce", "bcast", "reduce"):
            for size in (8, 4096, 65536, 4 << 20):
                assert _core.choose_auto(coll, size, 2, 2, hosts=2) == "mpi", (coll, size)
        assert _core.choose_auto("bcast", 64, 2, 2, hosts=1) == "release_gather"
    finally:
        shancoll.set_rules(None)


def test_the_conservative_table_leaves_mid_and_large_sizes_to_mpi():
    """Without a table of its own, a machine gets shancoll's algorithms only
    where they won on every machine and library measured, and MPI's call above."""
    from shancoll._rules import PACKAGE_RULES

    shancoll.set_rules(str(Path(PACKAGE_RULES) / "conservative.tsv"))
    try:
        for coll, fast, limit in [("allgatherv", "shan", 8192), ("allreduce", "shan", 2048),
                                  ("bcast", "release_gather", 2048),
                                  ("reduce", "release_gather", 32768)]:  # fmt: skip
            assert _core.choose_auto(coll, 8, 2, 1) == fast, coll
            assert _core.choose_auto(coll, limit - 1, 2, 1) == fast, coll
            assert _core.choose_auto(coll, limit, 2, 1) == "mpi", coll
            assert _core.choose_auto(coll, 16 << 20, 2, 1) == "mpi", coll
        assert _core.choose_auto("scatter", 16384, 2, 1) == "shan"  # the segment path
        assert _core.choose_auto("scatter", 32768, 2, 1) == "mpi"  # single copy lost
    finally:
        shancoll.set_rules(None)
