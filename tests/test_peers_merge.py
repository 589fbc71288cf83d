"""benchmarks/peers.py --merge: pieces of one measurement (split by library or
collective to fit a time limit per run) reported as one (no timing)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import peers  # noqa: E402


def piece(directory: Path, rows: list[tuple[str, str, int, float]]) -> Path:
    directory.mkdir(parents=True)
    runs: dict[str, list[dict]] = {}
    for config, coll, size, us in rows:
        runs.setdefault(config, [{}])[0][(coll, size)] = us
    peers.write_csv(directory / "amd-epyc.csv", runs)
    return directory


def test_pieces_merge_into_repeats_per_config(tmp_path):
    first = piece(tmp_path / "a-1", [("mpich:default", "bcast", 8, 1.0),
                                     ("mpich:shancoll", "bcast", 8, 0.5),
                                     ("openmpi:default", "bcast", 8, 0.9)])  # fmt: skip
    second = piece(tmp_path / "a-2", [("mpich:default", "bcast", 8, 3.0),
                                      ("mpich:shancoll", "bcast", 8, 0.7),
                                      ("openmpi:default", "bcast", 8, 0.8)])  # fmt: skip
    other = piece(tmp_path / "b-1", [("mpich:default", "reduce", 8, 2.0),
                                     ("mpich:shancoll", "reduce", 8, 1.0),
                                     ("openmpi:default", "reduce", 8, 2.5)])  # fmt: skip
    configs, runs = peers.merged([first, second])
    assert [c.name for c in configs][-1] == "mpich:shancoll" and configs[-1].preload
    assert [r[("bcast", 8)] for r in runs["mpich:default"]] == [1.0, 3.0]
    configs, runs = peers.merged([first, second, other])
    assert runs["openmpi:default"][0] == {("bcast", 8): 0.9, ("reduce", 8): 2.5}
    assert len(runs["mpich:shancoll"]) == 1  # reduce has one repeat: the fewest decide


def test_rows_give_the_fastest_repeats_ratio_beside_the_medians(tmp_path):
    runs = {
        "mpich:default": [{("bcast", 8): 1.0}, {("bcast", 8): 3.0}, {("bcast", 8): 3.2}],
        "openmpi:default": [{("bcast", 8): 2.0}, {("bcast", 8): 2.1}, {("bcast", 8): 2.2}],
        "mpich:shancoll": [{("bcast", 8): 1.6}, {("bcast", 8): 1.0}, {("bcast", 8): 1.1}],
    }
    configs = [peers.Config("mpich", "default", {}, False),
               peers.Config("openmpi", "default", {}, False),
               peers.Config("mpich", "shancoll", {}, True)]  # fmt: skip
    [row] = peers.report_rows(configs, runs, {})
    ratio, key, best_peer, fastest = row[0], row[1], row[2], row[9]
    assert key == ("bcast", 8) and best_peer == "openmpi:default"
    assert ratio == 2.1 / 1.1  # medians: Open MPI's 2.1 against 1.1
    assert fastest == 1.0 / 1.0  # fastest repeats: MPICH's 1.0 against 1.0
