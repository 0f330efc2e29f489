#!/usr/bin/env python3
"""Exact against re-forward AR capture on a real checkpoint: the relative Frobenius
difference of sum x x^T per projection input between two calibration run files made
with the same model, prompts, greedy decoding and dtype (`sdw-cli calibrate --capture
exact` and `--capture reforward`). Prints JSON: every input's figure, the worst, the
median, and whether the generated token ids agree (they must, for the comparison to
mean anything).

    python3 tools/gpu/capture_agreement.py EXACT.sdw.h5 REFORWARD.sdw.h5 [OUT.json]
"""
import json
import statistics
import sys

import h5py
import numpy as np


def main():
    a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
    ia, ib = a["calibration/inputs"], b["calibration/inputs"]
    rows = {}
    for name in ia:
        if name not in ib or "xtx" not in ia[name]:
            continue
        x = ia[name]["xtx"][()].astype(np.float64)
        y = ib[name]["xtx"][()].astype(np.float64)
        rows[name] = float(np.linalg.norm(x - y) / max(np.linalg.norm(x), 1e-30))
    same = bool(np.array_equal(a["calibration/generations/token_ids"][()], b["calibration/generations/token_ids"][()]))
    worst = max(rows, key=rows.get)
    res = {"exact": sys.argv[1], "reforward": sys.argv[2], "same_generated_tokens": same, "inputs": len(rows),
           "worst_input": worst, "worst_rel_frobenius": rows[worst],
           "median_rel_frobenius": statistics.median(rows.values()), "per_input": rows}
    text = json.dumps(res, indent=1)
    if len(sys.argv) > 3:
        open(sys.argv[3], "w").write(text)
    print(json.dumps({k: v for k, v in res.items() if k != "per_input"}))


if __name__ == "__main__":
    main()
