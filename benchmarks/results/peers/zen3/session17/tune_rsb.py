"""tune's series for reduce_scatter_block alone (every size): python /tmp/tune_rsb.py OUT"""

import sys
from pathlib import Path

from shancoll.bench import tune
from shancoll.bench.sweep import run_sweep

cfg = tune.sweep_config(2, quick=False).replace(collectives=["reduce_scatter_block"])
run_sweep(cfg, Path(sys.argv[1]), plots=False)
