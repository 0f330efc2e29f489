#!/usr/bin/env python3
"""`sdw-cli analyze epsilon --json` against tools/epsilon_numpy.py.

usage: test_epsilon_numpy.py SDW_CLI SOURCE_DIR

Makes small calibration runs of the sample model on the spot (sdw-cli
calibrate, a few hundred tokens each): a held-out AR reference, fixed text,
AR, AR with top-k storage, and fixed text without half statistics. Then, for
a full-storage and a top-k reference, compares every eps, noise floor and
reference noise floor of the C++ engine with the numpy implementation (1e-6
relative), the directions used, which runs have a noise floor, each module's
beyond-noise flag and the summary. Fails, saying what to install, when
python3 lacks h5py or numpy.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import h5py  # noqa: F401  (tools/epsilon_numpy.py reads the runs with it)
    import numpy  # noqa: F401
except ImportError as e:
    print(f"FAIL: {sys.executable} cannot import {e.name}: this test needs python3 with h5py and numpy "
          "(Debian: apt-get install python3-h5py python3-numpy; tools/quickstart.sh installs them)")
    sys.exit(1)

REL = 1e-6
failures = []


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL: " + " ".join(cmd) + f"\n  exit {p.returncode}\n{p.stderr}")
        sys.exit(1)
    return p.stdout


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= REL * max(abs(a), abs(b), 1e-12)


def check(ok, what):
    if not ok:
        failures.append(what)


def compare(label, cpp, ref):
    check(len(cpp["inputs"]) == len(ref["inputs"]) > 0, f"{label}: input counts differ")
    values = 0
    for a, b in zip(cpp["inputs"], ref["inputs"]):
        name = a["name"]
        check(a["name"] == b["name"], f"{label}: input order {a['name']} vs {b['name']}")
        check(a["k_used"] == b["k_used"], f"{label} {name}: k_used {a['k_used']} vs {b['k_used']}")
        check(a["modules"] == b["modules"], f"{label} {name}: modules differ")
        for key in ("eps", "noise"):
            for j, (x, y) in enumerate(zip(a[key], b[key])):
                check(close(x, y), f"{label} {name}: {key}[{j}] C++ {x} vs numpy {y}")
                values += x is not None
        check(close(a["reference_noise"], b["reference_noise"]),
              f"{label} {name}: reference_noise C++ {a['reference_noise']} vs numpy {b['reference_noise']}")
    check(values > 0, f"{label}: no values compared")
    for j, (x, y) in enumerate(zip(cpp["runs"], ref["runs"])):
        check((x["noise_unavailable"] is None) == (y["noise_unavailable"] is None),
              f"{label}: run {j} noise availability C++ {x['noise_unavailable']!r} vs numpy {y['noise_unavailable']!r}")
    check((cpp["reference"]["noise_unavailable"] is None) == (ref["reference"]["noise_unavailable"] is None),
          f"{label}: reference noise availability differs")
    check(len(cpp["modules"]) == len(ref["modules"]), f"{label}: module counts differ")
    for a, b in zip(cpp["modules"], ref["modules"]):
        check(a["module"] == b["module"] and a["input"] == b["input"], f"{label}: module {a['module']} vs {b['module']}")
        check(close(a["ratio"], b["ratio"]), f"{label} {a['module']}: ratio {a['ratio']} vs {b['ratio']}")
        check(a["beyond_noise"] == b["beyond_noise"],
              f"{label} {a['module']}: beyond_noise {a['beyond_noise']} vs {b['beyond_noise']}")
    sa, sb = cpp["summary"], ref["summary"]
    for key in ("numerator_run", "denominator_run", "n_modules", "n_ar_lower", "n_noise_modules", "n_beyond_noise",
                "n_ar_lower_beyond_noise"):
        check(sa.get(key) == sb.get(key), f"{label}: summary {key} C++ {sa.get(key)} vs numpy {sb.get(key)}")
    for key in ("share_ar_lower", "median_ratio", "ratio_q1", "ratio_q3"):
        check(close(sa.get(key), sb.get(key)), f"{label}: summary {key} C++ {sa.get(key)} vs numpy {sb.get(key)}")
    print(f"{label}: {values} eps and noise values, {len(cpp['modules'])} modules compared; "
          f"C++ summary: {sa.get('n_beyond_noise')} of {sa.get('n_noise_modules')} beyond the noise floor")


def main(cli, src):
    model = os.path.join(src, "samples/model/brown-llama")
    numpy_impl = os.path.join(src, "tools/epsilon_numpy.py")
    with tempfile.TemporaryDirectory() as tmp:
        def path(name):
            return os.path.join(tmp, name + ".sdw.h5")

        def calibrate(name, *args):
            run([cli, "calibrate", "--model", model, "--tokens", "400", "--batch", "8", "--out", path(name), *args])

        ar = ["--source", "ar", "--max-new-tokens", "32", "--temperature", "1.0"]
        heldout = ["--prompts", os.path.join(src, "samples/prompts/brown-heldout.jsonl")]
        calib = ["--prompts", os.path.join(src, "samples/prompts/brown-calib.jsonl")]
        fixed = ["--source", "fixed", "--corpus", os.path.join(src, "samples/corpus/brown-calib.txt"), "--window", "32"]
        calibrate("reference", *ar, *heldout, "--seed", "1")
        calibrate("fixed", *fixed, "--seed", "2")
        calibrate("ar", *ar, *calib, "--seed", "3")
        calibrate("ar-topk", *ar, *calib, "--seed", "4", "--store", "topk", "--topk", "24")
        calibrate("fixed-nohalves", *fixed, "--seed", "5", "--no-halves")

        # k = 1: the top direction alone, where fixed text and AR differ beyond the floor on some modules
        cases = [("full reference, k 16", "reference", ["fixed", "ar", "ar-topk", "fixed-nohalves"], "16"),
                 ("top-k reference, k 8", "ar-topk", ["fixed", "reference"], "8"),
                 ("full reference, k 1", "reference", ["fixed", "ar"], "1")]
        for label, reference, runs, k in cases:
            args = ["--reference", path(reference), "--runs", *[path(r) for r in runs], "--k", k]
            cpp = json.loads(run([cli, "analyze", "epsilon", *args, "--json"]))
            ref = json.loads(run([sys.executable, numpy_impl, *args]))
            compare(label, cpp, ref)
            if label.endswith("k 1"):
                n = cpp["summary"]["n_beyond_noise"]
                check(0 < n < cpp["summary"]["n_noise_modules"], f"{label}: {n} modules beyond noise, wanted some")
            if label.startswith("full reference, k 16"):
                # the run without halves has no noise floor in either implementation; the others have one
                check(cpp["runs"][3]["noise_unavailable"] is not None, "the --no-halves run has a noise floor")
                check(all(r["noise_unavailable"] is None for r in cpp["runs"][:3]), "a run with halves has none")
    if failures:
        print(f"FAIL: {len(failures)} disagreement(s):")
        for f in failures[:40]:
            print("  " + f)
        return 1
    print("PASS: the C++ engine and numpy agree to 1e-6 relative")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
