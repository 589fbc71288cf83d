"""Median and range per collective, size and series of shancoll_osu_style outputs.

    python summarize.py "r*-{}.txt" native main_shan new_shan

(the pattern's {} is the series' name; one file per repeat and series).
"""

import collections
import glob
import statistics
import sys

times = collections.defaultdict(lambda: collections.defaultdict(list))
pattern, names = sys.argv[1], sys.argv[2:]
for name in names:
    for path in sorted(glob.glob(pattern.format(name))):
        for line in open(path):
            parts = line.split()
            if line.startswith("#") or len(parts) != 4:
                continue
            times[(parts[0], int(parts[1]))][name].append(float(parts[3]))
print(f"{'coll':<22}{'bytes':>9} " + " ".join(f"{n:>22}" for n in names))
for key in sorted(times):
    cells = []
    for name in names:
        v = times[key][name]
        cells.append(f"{statistics.median(v):8.2f} [{min(v):6.2f}-{max(v):6.2f}]" if v else "")
    print(f"{key[0]:<22}{key[1]:>9} " + " ".join(f"{c:>22}" for c in cells))
