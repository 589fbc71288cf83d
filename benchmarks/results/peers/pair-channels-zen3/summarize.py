import sys, glob, statistics, collections
# usage: ga_sum.py DIR_GLOB name1 name2 ...
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1])):
    name = f.split('/')[-1][:-4]
    for line in open(f):
        if line.startswith('#') or not line.strip(): continue
        p = line.split()
        if len(p) != 4: continue
        d[(p[0], int(p[1]))][name].append(float(p[3]))
names = sys.argv[2:]
print(f"{'coll':<22}{'bytes':>9} " + " ".join(f"{n:>22}" for n in names))
for k in sorted(d):
    cells = []
    for n in names:
        v = d[k][n]
        cells.append(f"{statistics.median(v):8.2f} [{min(v):6.2f}-{max(v):6.2f}]" if v else " "*22)
    print(f"{k[0]:<22}{k[1]:>9} " + " ".join(f"{c:>22}" for c in cells))
