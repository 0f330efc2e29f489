#!/usr/bin/env python3
"""The 30 SASS instructions with the most stall samples in an Nsight Compute source page
exported as CSV (`ncu -i REP --page source --print-source sass --csv > FILE`), each with
its share of all samples: where a kernel's warps wait.

    python3 tools/gpu/ncu_stalls.py FILE.csv
"""
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
head = next((i for i, r in enumerate(rows) if any("Source" == c.strip() for c in r)), None)
if head is None:
    print("no SASS page:", " ".join(" ".join(r) for r in rows[:3])[:300]); sys.exit()
h = rows[head]
src = h.index("Source")
cols = [i for i, c in enumerate(h) if "Sampling" in c and "All" in c] or [i for i, c in enumerate(h) if "Sampling" in c]
print("columns:", [h[i] for i in cols])
if not cols: sys.exit()
c = cols[0]
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
body = [r for r in rows[head + 1:] if len(r) > max(src, c)]
total = sum(num(r[c]) for r in body) or 1
for i, r in sorted(enumerate(body), key=lambda t: -num(t[1][c]))[:30]:
    print("%5.1f%%  #%-4d %s" % (100 * num(r[c]) / total, i, r[src].strip()[:90]))
