#!/usr/bin/env python3
"""Fits the spMspV column kernels' times in a `sdw-cli bench kernels --activation-sparsity ...`
JSON two ways, a straight line per layout and activation sparsity:
  time = F + c * bytes                                   (the weights alone)
  time = F + c * ceil(blocks / SMs) * bytes / blocks     (the busiest SM's share)
where blocks = row tiles x split-K slices of the row's launch (its `config`: "s<slices>").
Prints each fit's fixed cost, rms and largest relative error (docs/kernels.md, waveFit).
Usage: tools/spmspv-busiest-fit.py FILE [SMS=132]"""
import json
import math
import re
import sys


def line(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    b = sum((a - mx) * (c - my) for a, c in zip(x, y)) / sum((a - mx) ** 2 for a in x)
    return my - b * mx, b


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    data = json.load(open(sys.argv[1]))
    sms = int(sys.argv[2]) if len(sys.argv) > 2 else 132
    rows = [r for r in data["rows"] if r["kernel"] == "spmspv" and r["pattern"] in ("col2:4", "col4:8")]
    for key in sorted({(r["pattern"], r["activation_sparsity"]) for r in rows}):
        sel = [r for r in rows if (r["pattern"], r["activation_sparsity"]) == key]
        if len(sel) < 3:
            continue
        plain, busiest, us = [], [], []
        for r in sel:
            m = re.search(r" s(\d+) ", r["config"])
            if not m:
                sys.exit("row without a slice count in its config: %s" % r["config"])
            steps = math.ceil(r["cols"] / 32)
            per = math.ceil(steps / int(m.group(1)))
            blocks = math.ceil(r["rows"] / 256) * math.ceil(steps / per)
            plain.append(r["bytes"])
            busiest.append(math.ceil(blocks / sms) * r["bytes"] / blocks)
            us.append(r["us"])
        out = []
        for name, x in (("bytes", plain), ("busiest SM", busiest)):
            f, c = line(x, us)
            pred = [f + c * v for v in x]
            rms = math.sqrt(sum((p - t) ** 2 for p, t in zip(pred, us)) / len(us))
            worst = max(abs(p - t) / t for p, t in zip(pred, us))
            out.append("%s: F %.2f us, rms %.2f us, worst %.0f%%" % (name, f, rms, 100 * worst))
        print("%-6s p_x %-4g %2d rows  %s" % (key[0], key[1], len(sel), " | ".join(out)))


if __name__ == "__main__":
    main()
