#!/usr/bin/env python3
"""Summarise an Nsight Systems GPU trace of decode steps (`nsys stats --report
cuda_gpu_trace --format csv`): the steps are cut at each embedding kernel; for the
last complete ones, the step's span, the time some kernel of it was running (their
union: with programmatic dependent launch kernels overlap), the idle gaps, and per
kernel name the count and the median and total durations.

    python3 tools/gpu/timeline_summary.py TRACE.csv [--steps 3]
"""
import argparse
import csv
import re
import statistics
from collections import defaultdict


def short(name):
    m = re.search(r"(\w+)\s*[<(]", name)  # the function's name: the first identifier before its arguments
    return m.group(1) if m else name[:40]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    rows = list(csv.DictReader(open(a.csv)))
    if not rows:
        print("no kernels in the trace")
        return
    cols = rows[0].keys()
    start = next(c for c in cols if c.startswith("Start"))
    dur = next(c for c in cols if c.startswith("Duration"))
    name = next(c for c in cols if c == "Name" or c.startswith("Name"))
    ks = sorted(((int(float(r[start])), int(float(r[dur])), r[name]) for r in rows if r[name] and "[CUDA" not in r[name]),
                key=lambda k: k[0])
    cuts = [i for i, k in enumerate(ks) if "embedKernel" in k[2]]
    if len(cuts) < 2:
        print("fewer than two steps found (no embedKernel boundaries)")
        return
    steps = [ks[cuts[i]:cuts[i + 1]] for i in range(len(cuts) - 1)][-a.steps:]
    per_name = defaultdict(list)
    for s in steps:
        t0, t1 = s[0][0], max(k[0] + k[1] for k in s)
        busy, gaps, end = 0, [], t0
        for k in s:
            if k[0] > end:
                gaps.append((k[0] - end, short(k[2])))
            busy += max(0, k[0] + k[1] - max(k[0], end))
            end = max(end, k[0] + k[1])
        gaps.sort(reverse=True)
        print("step: span %.1f us, kernels running %.1f us (%.1f%%), %d kernels, idle %.1f us in %d gaps; largest before: %s"
              % ((t1 - t0) / 1e3, busy / 1e3, 100.0 * busy / max(1, t1 - t0), len(s), sum(g for g, _ in gaps) / 1e3,
                 len(gaps), ", ".join("%s %.2f us" % (n, g / 1e3) for g, n in gaps[:5])))
        for k in s:
            per_name[short(k[2])].append(k[1])
    print("per kernel over those steps: name, launches per step, median us, total us per step")
    n = len(steps)
    for k, v in sorted(per_name.items(), key=lambda kv: -sum(kv[1])):
        print("  %-40s %5.1f %8.2f %9.1f" % (k, len(v) / n, statistics.median(v) / 1e3, sum(v) / 1e3 / n))


if __name__ == "__main__":
    main()
