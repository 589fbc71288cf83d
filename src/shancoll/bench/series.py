"""What a benchmark measures, in plain Python (no MPI, no numpy): the
collectives and their distributions, sizes in bytes, and series labels.

The sweep driver, the plots and the reports read these; the timing kernel
(:mod:`shancoll.bench.kernel`) turns them into MPI jobs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ALL_DISTRIBUTIONS",
    "COLLECTIVES",
    "DISTRIBUTIONS",
    "KINDS",
    "PERSISTENT_COLLECTIVES",
    "Series",
    "algorithms_of",
    "check_distribution",
    "distribution_bytes",
    "distributions_of",
    "format_bytes",
    "parse_series",
    "parse_size",
    "parse_sizes",
    "series_label",
    "split_series",
]

DISTRIBUTIONS = ("regular", "decreasing", "bcast")
# Intergroup allgather(v): the settings 1-8 of Kang, Traeff et al. (Section 5);
# "distributions" of the collective "intergroup".
INTER_SETTINGS = tuple(f"setting{s}" for s in range(1, 9))
ALL_DISTRIBUTIONS = DISTRIBUTIONS + INTER_SETTINGS
KINDS = ("shancoll", "shared", "native", "memcpy")
TRANSPORTS = ("auto", "two_sided", "rma")
# Keyword options a series may pass to its collective (shan's transport and
# block_size, allreduce's ports and consistent, release_gather's tree options);
# the collective itself checks the values. Listed here so that a typo in a
# config fails when it is read, not inside an MPI job.
ALGORITHM_OPTIONS = (
    "transport", "block_size", "ports", "consistent", "tree", "k", "skew", "buffer_size",
    "buffers", "inline", "read_from_parent", "data_copy", "single_copy", "inter_algorithm",
    "ring_window",
)  # fmt: skip
COLLECTIVES = ("allgatherv", "allgather", "allreduce", "bcast", "reduce", "intergroup", "barrier")
COLLECTIVES += ("scan", "exscan", "reduce_scatter_block")
# alltoall, alltoallv: blocks of `bytes_per_rank` bytes to every rank (regular only).
COLLECTIVES += ("alltoall", "alltoallv")
# One message of `bytes_per_rank` bytes (regular distribution only; root 0),
# op SUM; both sides timed by this kernel through Python.
MESSAGE_COLLECTIVES = ("allreduce", "bcast", "reduce", "barrier")  # barrier: one size, 0 bytes
MESSAGE_COLLECTIVES += ("scan", "exscan", "reduce_scatter_block")  # its block: bytes_per_rank
# gather, scatter: one block of `bytes_per_rank` per rank, root 0.
COLLECTIVES += ("gather", "scatter")
MESSAGE_COLLECTIVES += ("gather", "scatter")
# The persistent forms (<coll>_init, start + wait per call) of the regular
# collectives, with their persistent engine's name (rules.h, <coll>_init
# rows); the v-forms' rows hold at 0 bytes (no size every rank knows) and
# are not timed.
PERSISTENT_ENGINES = {"bcast": "release_gather", "reduce": "release_gather"} | dict.fromkeys(
    ("allreduce", "allgather", "alltoall", "gather", "scatter", "scan", "exscan",
     "reduce_scatter_block"), "shan")  # fmt: skip
PERSISTENT_COLLECTIVES = tuple(f"{c}_init" for c in PERSISTENT_ENGINES)
COLLECTIVES += PERSISTENT_COLLECTIVES

# ---------------------------------------------------------------------------
# sizes and distributions (pure: no MPI; also used by the sweep driver)

_UNITS = {
    "": 1,
    "B": 1,
    "K": 1 << 10,
    "KB": 1 << 10,
    "KIB": 1 << 10,
    "M": 1 << 20,
    "MB": 1 << 20,
    "MIB": 1 << 20,
    "G": 1 << 30,
    "GB": 1 << 30,
    "GIB": 1 << 30,
}


def parse_size(text: str | int) -> int:
    """Bytes from ``4096``, ``"4KiB"``, ``"4K"``, ``"16MiB"`` (binary units)."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"size: must be >= 0, got {text}")
        return text
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"size: cannot parse {text!r} (examples: 1024, 4KiB, 16MiB)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def parse_sizes(spec: str | Sequence[str | int]) -> list[int]:
    """Sizes from a list, a comma list ``"1KiB,1MiB"`` or a range ``"1KiB:16MiB:4"``.

    A range ``start:stop:factor`` is geometric and includes ``stop`` if hit.
    """
    if isinstance(spec, str):
        if ":" in spec:
            parts = spec.split(":")
            if len(parts) != 3:
                raise ValueError(f"sizes: a range is start:stop:factor, got {spec!r}")
            return size_range(parts[0], parts[1], int(parts[2]))
        spec = [s for s in spec.split(",") if s.strip()]
    sizes = [parse_size(s) for s in spec]
    if not sizes:
        raise ValueError("sizes: empty")
    return sizes


def size_range(start: str | int, stop: str | int, factor: int) -> list[int]:
    lo, hi = parse_size(start), parse_size(stop)
    if lo <= 0 or factor < 2 or hi < lo:
        raise ValueError(
            f"sizes: need 0 < start <= stop and factor >= 2 (got {start}, {stop}, {factor})"
        )
    out = []
    s = lo
    while s <= hi:
        out.append(s)
        s *= factor
    return out


def format_bytes(n: int) -> str:
    """``1024 -> '1KiB'``, ``1536 -> '1536B'``, ``16777216 -> '16MiB'``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def distribution_bytes(name: str, bytes_per_rank: int, ranks: int, itemsize: int = 8) -> list[int]:
    """Bytes contributed by each rank (the seed paper's formulas, in whole elements).

    ``regular``: m_i = c. ``decreasing``: m_i = 2c(P-1-i)/(P-1), so that the
    total is about P*c (m_0 = c when P = 1). ``bcast``: m_0 = P*c, the other
    ranks contribute nothing. ``c`` and every m_i are rounded down to a
    multiple of ``itemsize``.
    """
    if ranks < 1:
        raise ValueError(f"ranks: must be >= 1, got {ranks}")
    if bytes_per_rank < 0:
        raise ValueError(f"bytes_per_rank: must be >= 0, got {bytes_per_rank}")
    c = bytes_per_rank
    p = ranks

    def whole(nbytes: float) -> int:
        return int(nbytes // itemsize) * itemsize

    if name == "regular":
        return [whole(c)] * p
    if name == "decreasing":
        if p == 1:
            return [whole(c)]
        return [whole(2 * c * (p - 1 - i) / (p - 1)) for i in range(p)]
    if name == "bcast":
        return [whole(p * c)] + [0] * (p - 1)
    raise ValueError(f"distribution: unknown {name!r} (valid: {', '.join(DISTRIBUTIONS)})")


# ---------------------------------------------------------------------------
# series


@dataclass(frozen=True)
class Series:
    """One line of a plot: what is timed, under one name."""

    label: str
    kind: str  # shancoll | shared | native | memcpy
    algorithm: str = ""  # shancoll algorithm ("shan" for shared, "" otherwise)
    options: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def options_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))

    @property
    def needs_nodes(self) -> bool:
        """A transport only matters between nodes: such series are skipped on one node."""
        return "transport" in self.options


def series_label(name: str, options: dict) -> str:
    """``shan`` + {transport: rma, block_size: 65536} -> ``shan[rma,bs=64KiB]``."""
    parts = []
    if "transport" in options:
        parts.append(str(options["transport"]))
    if "block_size" in options:
        parts.append(f"bs={format_bytes(int(options['block_size']))}")
    parts += [f"{k}={v}" for k, v in options.items() if k not in ("transport", "block_size")]
    return f"{name}[{','.join(parts)}]" if parts else name


def _option_value(text: str) -> int | bool | str:
    if text.isdigit():
        return int(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def parse_series(text: str, algorithms: Iterable[str] | None = None) -> Series:
    """A series from its label (inverse of :func:`series_label`).

    ``algorithms``: the registered shancoll algorithms, to reject unknown names
    early (None: accept any name that is not a reserved one).
    """
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?::([\w.:-]+))?\s*(?:\[([^\]]*)\])?\s*", text)
    if not m:
        raise ValueError(f"series: cannot parse {text!r} (examples: shan, shan[rma], native)")
    name, native_job, opt_text = m.group(1), m.group(2), m.group(3)
    if native_job and name != "native":
        raise ValueError(f"series {text!r}: only native takes a ':<baseline>' suffix")
    options: dict[str, Any] = {}
    for opt in (o.strip() for o in (opt_text or "").split(",")):
        if not opt:
            continue
        if opt in TRANSPORTS:
            options["transport"] = opt
        elif opt.startswith(("bs=", "block_size=")):
            options["block_size"] = parse_size(opt.split("=", 1)[1])
        elif opt.startswith("transport="):
            options["transport"] = opt.split("=", 1)[1]
        elif opt.split("=", 1)[0] in ALGORITHM_OPTIONS and "=" in opt:  # e.g. ports=2
            key, value = opt.split("=", 1)
            options[key] = _option_value(value)
        else:
            raise ValueError(
                f"series {text!r}: unknown option {opt!r} "
                f"(transport: {', '.join(TRANSPORTS)}; block size: bs=64KiB; "
                f"key=value for {', '.join(ALGORITHM_OPTIONS[2:])})"
            )
    if "transport" in options and options["transport"] not in TRANSPORTS:
        raise ValueError(f"series {text!r}: unknown transport {options['transport']!r}")
    label = series_label(name, options)
    if name == "native" and native_job:
        label = f"native:{native_job}"
    if name in ("native", "memcpy"):
        if options:
            raise ValueError(f"series {text!r}: {name} takes no options")
        return Series(label, name)
    if name == "shan_shared":
        return Series(label, "shared", "shan", options)
    # auto: whatever shancoll picks for the call (its rule table, else built-in rules)
    if algorithms is not None and name not in algorithms and name != "auto":
        raise ValueError(
            f"series {text!r}: unknown algorithm {name!r} (registered: "
            f"{', '.join(algorithms)}; also auto, shan_shared, native, memcpy)"
        )
    return Series(label, "shancoll", name, options)


# ---------------------------------------------------------------------------
# collectives


def distributions_of(collective: str) -> tuple[str, ...]:
    """The distributions a collective takes."""
    if collective == "intergroup":
        return INTER_SETTINGS
    return DISTRIBUTIONS if collective == "allgatherv" else ("regular",)


def check_distribution(collective: str, distribution: str) -> None:
    """allgatherv takes every distribution, intergroup its settings, the others regular."""
    if collective not in COLLECTIVES:
        raise ValueError(f"collective: unknown {collective!r} (valid: {', '.join(COLLECTIVES)})")
    if collective == "intergroup" and distribution not in INTER_SETTINGS:
        raise ValueError(
            f"distribution: intergroup takes the settings {', '.join(INTER_SETTINGS)} "
            f"(got {distribution!r})"
        )
    if collective not in ("allgatherv", "intergroup") and distribution != "regular":
        raise ValueError(
            f"distribution: {collective} has equal contributions, only 'regular' "
            f"(got {distribution!r})"
        )


def algorithms_of(collective: str) -> list[str]:
    """shancoll's algorithms of a collective (intergroup: those of inter-communicators;
    <coll>_init: its persistent engine, and ``mpi``, which the kernel times as the MPI
    library's own persistent request: what ``mpi`` rows leave a call to)."""
    import shancoll

    if collective == "intergroup":
        return shancoll.algorithms("allgatherv", inter=True)
    if collective in PERSISTENT_COLLECTIVES:  # the engine, and the library's own persistent call
        return [PERSISTENT_ENGINES[collective.removesuffix("_init")], "mpi"]
    return shancoll.algorithms(collective)


def split_series(text: str) -> list[str]:
    """Splits ``"shan,shan[rma,bs=4KiB],native"`` at the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [s.strip() for s in out if s.strip()]
