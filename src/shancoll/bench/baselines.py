"""The native collectives of MPICH, Open MPI and Intel MPI as benchmark series.

Each library's collective is a baseline, as in the papers: once with its own
algorithm selection and once per algorithm, forced through the library's own
environment variables. A :class:`Series` is a name and the environment that
selects it, to be added to the job's environment (:meth:`MpiEnv.environ`):

===================  ==================================================
series name          what runs
===================  ==================================================
``<lib>``            the library tuned as here (:func:`tuned_settings`),
                     choosing its own algorithm
``<lib>:defaults``   the library out of the box: the tuned settings
                     removed (only where there are any)
``<lib>:<alg>``      tuned settings + algorithm ``<alg>`` forced
===================  ==================================================

``<lib>`` is ``mpich``, ``openmpi`` or ``impi``; ``<alg>`` is the library's
own name for the algorithm in snake_case (``mpich:ring``,
``openmpi:recursive_doubling``, ``impi:topo_shm_knary``). Every forced series
also records the raw setting (``Series.value``: the cvar value, the Open MPI
algorithm number, the ``I_MPI_ADJUST`` preset) so that a figure can cite it as
the papers do (``I_MPI_ADJUST_ALLGATHERV=3``).

The tables hold the values valid for the versions installed by
:mod:`shancoll.bench.mpi_envs` (MPICH 5.0, Open MPI 5.0, Intel MPI 2021): MPICH from
``mpivars``, Open MPI from ``ompi_info --param coll tuned --level 9``, Intel
MPI from its Developer Reference (``I_MPI_ADJUST`` family).
``benchmarks/check_baselines.py`` runs every series and checks the names
against what the installed library lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LIBS = ("mpich", "openmpi", "impi")
COLLECTIVES = ("allgatherv", "allgather", "allreduce", "bcast", "reduce", "barrier")
COLLECTIVES += ("scan", "exscan")
COLLECTIVES += ("reduce_scatter_block",)
COLLECTIVES += ("alltoall", "alltoallv")
COLLECTIVES += ("gather", "scatter")


@dataclass(frozen=True)
class Series:
    """One native baseline: a name and the environment variables that select it."""

    name: str
    env: dict[str, str | None] = field(default_factory=dict, hash=False)  # None: unset it
    lib: str = ""
    coll: str = ""
    algorithm: str = ""  # "" for the library's own selection
    value: str = ""  # the raw setting that forces it
    description: str = ""


# ----------------------------------------------------------------------- MPICH
# MPIR_CVAR_<COLL>_INTRA_ALGORITHM values of MPICH 5.0.2 (`mpivars`), except
# "auto" (the default series) and "ccl" (needs oneCCL).
MPICH_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allgatherv": ("brucks", "recursive_doubling", "ring", "nb"),
    "allgather": (
        "brucks",
        "k_brucks",
        "recursive_doubling",
        "ring",
        "recexch_doubling",
        "recexch_halving",
        "nb",
    ),
    "allreduce": (
        "recursive_doubling",
        "recursive_multiplying",
        "reduce_scatter_allgather",
        "k_reduce_scatter_allgather",
        "tree",
        "recexch",
        "ring",
        "smp",
        "nb",
    ),
    "bcast": (
        "binomial",
        "scatter_recursive_doubling_allgather",
        "scatter_ring_allgather",
        "pipelined_tree",
        "tree",
        "smp",
        "nb",
    ),
    "reduce": ("binomial", "reduce_scatter_gather", "smp", "nb"),
    "barrier": ("nb", "smp", "k_dissemination", "recexch"),
    "scan": ("nb", "smp", "recursive_doubling"),
    "exscan": ("nb", "recursive_doubling"),
    "reduce_scatter_block": (
        "noncommutative",
        "recursive_doubling",
        "pairwise",
        "recursive_halving",
        "nb",
    ),
    # pairwise_sendrecv_replace left out: MPICH runs it in place only.
    "alltoall": ("brucks", "k_brucks", "pairwise", "scattered", "nb"),
    "alltoallv": ("scattered", "nb"),
    # MPICH 5's MPIR_CVAR_GATHER/SCATTER_INTRA_ALGORITHM (not yet checked
    # against an installed mpivars here).
    "gather": ("binomial", "nb"),
    "scatter": ("binomial", "nb"),
}
# Collectives with CH4's POSIX shared-memory release/gather path (the seed
# paper's algorithms, in MPICH). Left on "auto" it may take a call before the
# MPIR algorithm is reached, so forcing an MPIR algorithm turns it off.
MPICH_RELEASE_GATHER = ("allreduce", "bcast", "reduce", "barrier")

# ---------------------------------------------------------------------- Open MPI
# coll_tuned_<coll>_algorithm enumerators of Open MPI 5.0.11 (ompi_info), 0
# ("ignore", the default series) left out. Names as ompi_info spells them,
# except allgatherv 1, which ompi_info calls "default": gatherv + bcast.
OPENMPI_ALGORITHMS: dict[str, dict[int, str]] = {
    "allgatherv": {
        1: "gatherv_bcast",
        2: "bruck",
        3: "ring",
        4: "neighbor",
        5: "two_proc",
        6: "sparbit",
    },
    "allgather": {
        1: "linear",
        2: "bruck",
        3: "recursive_doubling",
        4: "ring",
        5: "neighbor",
        6: "two_proc",
        7: "sparbit",
    },
    "allreduce": {
        1: "basic_linear",
        2: "nonoverlapping",
        3: "recursive_doubling",
        4: "ring",
        5: "segmented_ring",
        6: "rabenseifner",
    },
    "bcast": {
        1: "basic_linear",
        2: "chain",
        3: "pipeline",
        4: "split_binary_tree",
        5: "binary_tree",
        6: "binomial",
        7: "knomial",
        8: "scatter_allgather",
        9: "scatter_allgather_ring",
    },
    "reduce": {
        1: "linear",
        2: "chain",
        3: "pipeline",
        4: "binary",
        5: "binomial",
        6: "in_order_binary",
        7: "rabenseifner",
    },
    # Open MPI 5's coll_tuned_barrier_algorithm (coll_tuned_barrier_decision.c;
    # not yet checked against an installed ompi_info here).
    "barrier": {
        1: "linear",
        2: "double_ring",
        3: "recursive_doubling",
        4: "bruck",
        5: "two_proc",
        6: "tree",
    },
    # coll_tuned_scan_algorithm / _exscan_ (coll_tuned_scan_decision.c,
    # coll_tuned_exscan_decision.c; not checked against an installed ompi_info here).
    "scan": {1: "linear", 2: "recursive_doubling"},
    "exscan": {1: "linear", 2: "recursive_doubling"},
    # coll_tuned_reduce_scatter_block_algorithm (not checked against an
    # installed ompi_info here).
    "reduce_scatter_block": {
        1: "basic_linear",
        2: "recursive_doubling",
        3: "recursive_halving",
        4: "butterfly",
    },
    # Open MPI 5's coll_tuned_alltoall(v)_algorithm (coll_tuned_alltoall(v).c;
    # not yet checked against an installed ompi_info here).
    "alltoall": {1: "linear", 2: "pairwise", 3: "modified_bruck", 4: "linear_sync", 5: "two_proc"},
    "alltoallv": {1: "basic_linear", 2: "pairwise"},
    # coll_tuned_gather_algorithm / coll_tuned_scatter_algorithm (Open MPI 5;
    # not yet checked against an installed ompi_info here).
    "gather": {1: "basic_linear", 2: "binomial", 3: "linear_sync"},
    "scatter": {1: "basic_linear", 2: "binomial", 3: "linear_nb"},
}

# -------------------------------------------------------------------- Intel MPI
# I_MPI_ADJUST_<COLL> algorithms of the Intel MPI Developer Reference (2021).
# Intel MPI 2021.18 accepts more numbers (impi_info: allgatherv 0-5,
# allgather 0-6, allreduce 0-32, bcast 0-22, reduce 0-19): "presets", which it
# calls algorithmic derivatives; only the documented algorithms are series.
IMPI_ALGORITHMS: dict[str, dict[int, str]] = {
    "allgatherv": {1: "recursive_doubling", 2: "bruck", 3: "ring", 4: "topo_gatherv_bcast"},
    "allgather": {
        1: "recursive_doubling",
        2: "bruck",
        3: "ring",
        4: "topo_gatherv_bcast",
        5: "knomial",
    },
    "allreduce": {
        1: "recursive_doubling",
        2: "rabenseifner",
        3: "reduce_bcast",
        4: "topo_reduce_bcast",
        5: "binomial_gather_scatter",
        6: "topo_binomial_gather_scatter",
        7: "shumilin_ring",
        8: "ring",
        9: "knomial",
        10: "topo_shm_flat",
        11: "topo_shm_knomial",
        12: "topo_shm_knary",
    },
    "bcast": {
        1: "binomial",
        2: "recursive_doubling",
        3: "ring",
        4: "topo_binomial",
        5: "topo_recursive_doubling",
        6: "topo_ring",
        7: "shumilin",
        8: "knomial",
        9: "topo_shm_flat",
        10: "topo_shm_knomial",
        11: "topo_shm_knary",
        12: "numa_shm_sse42",
        13: "numa_shm_avx2",
        14: "numa_shm_avx512",
    },
    "reduce": {
        1: "shumilin",
        2: "binomial",
        3: "topo_shumilin",
        4: "topo_binomial",
        5: "rabenseifner",
        6: "topo_rabenseifner",
        7: "knomial",
        8: "topo_shm_flat",
        9: "topo_shm_knomial",
        10: "topo_shm_knary",
        11: "topo_shm_binomial",
    },
    # I_MPI_ADJUST_BARRIER (Intel MPI reference; its SHM-based 7+ left out,
    # not checked against an installed library here).
    "barrier": {
        1: "dissemination",
        2: "recursive_doubling",
        3: "topo_dissemination",
        4: "topo_recursive_doubling",
        5: "binomial_gather_scatter",
        6: "topo_binomial_gather_scatter",
    },
    # I_MPI_ADJUST_SCAN / _EXSCAN (Intel MPI reference; not checked against an
    # installed library here).
    "scan": {1: "partial_results", 2: "topo_partial_results"},
    "exscan": {1: "partial_results", 2: "topo_partial_results"},
    # I_MPI_ADJUST_REDUCE_SCATTER_BLOCK (Intel MPI reference; not checked
    # against an installed library here).
    "reduce_scatter_block": {
        1: "recursive_halving",
        2: "pairwise",
        3: "recursive_doubling",
        4: "reduce_scatterv",
        5: "reduce_scatter",
    },
    # I_MPI_ADJUST_ALLTOALL(V) (Intel MPI reference; not checked against an
    # installed library here).
    "alltoall": {1: "bruck", 2: "isend_irecv_waitall", 3: "pairwise", 4: "plum"},
    "alltoallv": {1: "isend_irecv_waitall", 2: "plum"},
    # I_MPI_ADJUST_GATHER / I_MPI_ADJUST_SCATTER (Intel MPI reference; not
    # checked against an installed library here).
    "gather": {1: "binomial", 2: "topo_binomial", 3: "shumilin"},
    "scatter": {1: "binomial", 2: "topo_binomial", 3: "shumilin"},
}

# ------------------------------------------------------------------ tuned settings
# The fastest configuration of each library measured on this VM (2 cores,
# oversubscribed), with the reason; benchmarks/README.md has the numbers.
TUNED_SETTINGS: dict[str, dict[str, str]] = {
    # MPICH: none of its yield/throttle cvars helped when oversubscribed
    # (docs/performance.md, "MPICH when oversubscribed"), and turning CMA off
    # (MPIR_CVAR_CH4_CMA_ENABLE=0) made 1-8 MiB 1.5-3x slower: its defaults are its best.
    "mpich": {},
    # Open MPI: kernel single copy (CMA, the only smsc component) off, so btl/sm
    # copies through shared memory: 1 MiB allreduce ~0.6x, 8 MiB allgather
    # ~0.2x the time with CMA on this VM (as Open MPI 4's
    # btl_vader_single_copy_mechanism=none was, DESIGN.md).
    "openmpi": {"OMPI_MCA_smsc": "^cma"},
    # Intel MPI: neither I_MPI_SHM_CMA=0 nor I_MPI_PIN=0 beat its defaults
    # beyond the noise of this VM.
    "impi": {},
}


def _check(lib: str, coll: str) -> None:
    if lib not in LIBS:
        raise ValueError(f"lib must be one of {', '.join(LIBS)}; got {lib!r}")
    if coll not in COLLECTIVES:
        raise ValueError(f"coll must be one of {', '.join(COLLECTIVES)}; got {coll!r}")


def tuned_settings(lib: str) -> dict[str, str]:
    """Environment of ``lib``'s fastest configuration measured here (a copy)."""
    if lib not in LIBS:
        raise ValueError(f"lib must be one of {', '.join(LIBS)}; got {lib!r}")
    return dict(TUNED_SETTINGS[lib])


def _mpich(coll: str) -> list[Series]:
    cvar = f"MPIR_CVAR_{coll.upper()}_INTRA_ALGORITHM"
    posix = f"MPIR_CVAR_{coll.upper()}_POSIX_INTRA_ALGORITHM"
    off = {posix: "mpir"} if coll in MPICH_RELEASE_GATHER else {}
    out = [
        Series(f"mpich:{alg}", {cvar: alg, **off}, "mpich", coll, alg, alg, f"{cvar}={alg}")
        for alg in MPICH_ALGORITHMS[coll]
    ]
    if coll in MPICH_RELEASE_GATHER:
        # The threshold makes release_gather start at the first call, not the sixth.
        on = {posix: "release_gather", "MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD": "0"}
        rg, rg_off = "release_gather", "release_gather_off"
        out.append(Series(f"mpich:{rg}", on, "mpich", coll, rg, rg, f"{posix}={rg}"))
        out.append(Series(f"mpich:{rg_off}", off, "mpich", coll, rg_off, "mpir", f"{posix}=mpir"))
    return out


def _openmpi(coll: str) -> list[Series]:
    var = f"OMPI_MCA_coll_tuned_{coll}_algorithm"
    dyn = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}
    return [
        Series(f"openmpi:{a}", {**dyn, var: str(n)}, "openmpi", coll, a, str(n), f"{var}={n}")
        for n, a in OPENMPI_ALGORITHMS[coll].items()
    ]


def _impi(coll: str) -> list[Series]:
    var = f"I_MPI_ADJUST_{coll.upper()}"
    return [
        Series(f"impi:{alg}", {var: str(n)}, "impi", coll, alg, str(n), f"{var}={n} ({alg})")
        for n, alg in IMPI_ALGORITHMS[coll].items()
    ]


_FORCED = {"mpich": _mpich, "openmpi": _openmpi, "impi": _impi}


def native_series(lib: str, coll: str) -> list[Series]:
    """``lib``'s own ``coll``: its default selection first, then each forced algorithm."""
    _check(lib, coll)
    out = [Series(lib, {}, lib, coll, "", "", "the library's own selection (tuned settings)")]
    tuned = TUNED_SETTINGS[lib]
    if tuned:
        untuned = dict.fromkeys(tuned)  # None: drop the variable from the job's environment
        out.append(Series(f"{lib}:defaults", untuned, lib, coll, "", "", "tuned settings removed"))
    return out + _FORCED[lib](coll)


def series_env(name: str, coll: str) -> dict[str, str | None]:
    """The environment of the series called ``name`` (``"impi:ring"``) for ``coll``."""
    lib = name.split(":", 1)[0]
    for s in native_series(lib, coll):
        if s.name == name:
            return dict(s.env)
    raise ValueError(f"no native series {name!r} for {coll} (see native_series({lib!r}, ...))")
