"""Calibration on this machine: ``python -m shancoll.tune`` (shancoll.bench.tune)."""

import sys

from shancoll.bench.tune import main

if __name__ == "__main__":
    sys.exit(main())
