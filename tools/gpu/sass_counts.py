#!/usr/bin/env python3
"""Where a kernel's instructions go, from Nsight Compute's source page
(`ncu -i REPORT --page source --print-source sass --csv`, with the SourceCounters
section collected): total warp-level instructions executed, the opcodes weighted by
executed count, and the hottest instructions with their stall samples.

    python3 tools/gpu/sass_counts.py ncu-sass.csv [--top 30]
"""
import argparse
import collections
import csv
import sys


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    rows = list(csv.reader(open(a.csv, errors="replace")))
    head = next((i for i, r in enumerate(rows) if any(c.strip() == "Source" for c in r)), None)
    if head is None:
        print("no SASS page:", " ".join(" ".join(r) for r in rows[:3])[:300])
        return 1
    h = [c.strip() for c in rows[head]]
    src = h.index("Source")
    execc = next((i for i, c in enumerate(h) if c in ("Instructions Executed", "Warp Instructions Executed")), None)
    stall = next((i for i, c in enumerate(h) if "Sampling" in c and "All" in c), None)
    if execc is None:
        print("no executed-instruction column; columns:", h)
        return 1
    body = [r for r in rows[head + 1:] if len(r) > max(src, execc)]
    total = sum(num(r[execc]) for r in body)
    print(f"instructions executed (warp level): {total:,.0f} over {len(body)} SASS lines")
    ops = collections.Counter()
    for r in body:
        text = r[src].strip()
        words = [w for w in text.split() if not w.startswith("@")]
        op = words[0].split(".")[0] if words else "?"
        ops[op] += num(r[execc])
    print("by opcode:")
    for op, n in ops.most_common(20):
        print(f"  {op:10} {n:14,.0f}  {100 * n / (total or 1):5.1f}%")
    print(f"hottest {a.top} lines (executed, stall samples):")
    for i, r in sorted(enumerate(body), key=lambda t: -num(t[1][execc]))[: a.top]:
        s = num(r[stall]) if stall is not None and len(r) > stall else 0
        print(f"  #{i:<5} {num(r[execc]):12,.0f}  {s:6.0f}  {r[src].strip()[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
