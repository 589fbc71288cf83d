"""tune's series for the 16 MiB collectives at 8 and 16 MiB only: python /tmp/tune_large.py OUT"""

import sys
from pathlib import Path

from shancoll.bench import tune
from shancoll.bench.sweep import run_sweep

cfg = tune.sweep_config(2, quick=False)
large = list(tune.TIMED_TO_16_MIB)  # LARGE when these runs were taken
cfg = cfg.replace(collectives=large, collective_sizes=dict.fromkeys(large, [8 << 20, 16 << 20]))
run_sweep(cfg, Path(sys.argv[1]), plots=False)
