#!/usr/bin/env bash
# The noise floor of the epsilon analysis on the sample model, against the
# token budget (docs/epsilon.md, "Noise floor"): at each budget N,
#
#   R, C    two runs of the reference's process (AR on the held-out prompts,
#           sampled at T = 1, seeds 1 and 2), the same prompts file;
#   Re, Co  the same process on two disjoint prompt sets (the even and the odd
#           lines of the held-out prompts), seeds 1 and 2;
#   F1, F2  fixed text (brown-calib.txt, 256-token windows), seeds 1 and 2;
#
# then `sdw-cli analyze epsilon --json` of F1 F2 C against R and of Co against
# Re, at k = 16 and k = 64. It prints, per budget, medians over the 24
# projection inputs: the same-process eps (C against R; Co against Re), the
# noise floors estimated from the halves and what they predict for those
# pairs, how far eps(fixed) moved between F1 and F2 against its floor, and
# how many modules of fixed text vs the same-process AR run differ beyond the
# noise floor. About half an hour on a 2-core CPU for the default budgets.
#
#   tools/noise_curve.sh [build/bin/sdw-cli] [WORKDIR]
#
# BUDGETS="2500 5000" overrides the budgets; WORKDIR keeps the runs (default:
# a temporary folder, removed at the end), and a second call with the same
# WORKDIR reuses the complete runs it finds there (only the analyses run again).
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${1:-build/bin/sdw-cli}
work=${2:-}
budgets=${BUDGETS:-"2500 5000 10000 20000 40000 80000"}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
trap 'echo "stopped; the end of the calibrations log:" >&2; tail -n 20 "$work/calibrate.log" >&2 || true' ERR
m=samples/model/brown-llama
prompts=samples/prompts/brown-heldout.jsonl
awk 'NR % 2 == 1' "$prompts" > "$work/prompts-even.jsonl"  # lines 0, 2, 4, ... (0-based)
awk 'NR % 2 == 0' "$prompts" > "$work/prompts-odd.jsonl"

complete() {  # a complete run from an earlier call with this WORKDIR
  [ -f "$1" ] || return 1
  "$cli" runs "$(dirname "$1")" --json | python3 -c '
import json, os, sys
runs = json.load(sys.stdin)["runs"]
name = os.path.basename(sys.argv[1])
sys.exit(0 if any(os.path.basename(r["path"]) == name and (r.get("summary") or {}).get("status") == "complete"
                  for r in runs) else 1)' "$1"
}
ar() {  # ar OUT PROMPTS SEED TOKENS
  complete "$1" && return 0
  "$cli" calibrate --model $m --source ar --prompts "$2" --tokens "$4" --max-new-tokens 128 --batch 16 \
    --temperature 1.0 --seed "$3" --force --out "$1" >> "$work/calibrate.log" 2>&1
}
fixed() {  # fixed OUT SEED TOKENS
  complete "$1" && return 0
  "$cli" calibrate --model $m --source fixed --corpus samples/corpus/brown-calib.txt --tokens "$3" --window 256 \
    --batch 8 --seed "$2" --force --out "$1" >> "$work/calibrate.log" 2>&1
}

for n in $budgets; do
  echo "== $n tokens" >&2
  d="$work/$n"
  mkdir -p "$d"
  ar "$d/R.sdw.h5" "$prompts" 1 "$n"
  ar "$d/C.sdw.h5" "$prompts" 2 "$n"
  ar "$d/Re.sdw.h5" "$work/prompts-even.jsonl" 1 "$n"
  ar "$d/Co.sdw.h5" "$work/prompts-odd.jsonl" 2 "$n"
  fixed "$d/F1.sdw.h5" 1 "$n"
  fixed "$d/F2.sdw.h5" 2 "$n"
  for k in 16 64; do
    "$cli" analyze epsilon --reference "$d/R.sdw.h5" --runs "$d/F1.sdw.h5" "$d/F2.sdw.h5" "$d/C.sdw.h5" \
      --k $k --json > "$d/same-k$k.json"
    "$cli" analyze epsilon --reference "$d/Re.sdw.h5" --runs "$d/Co.sdw.h5" --k $k --json > "$d/disjoint-k$k.json"
  done
done

python3 - "$work" $budgets <<'EOF'
import json
import math
import statistics
import sys

work, budgets = sys.argv[1], sys.argv[2:]


def load(n, name):
    with open(f"{work}/{n}/{name}.json") as f:
        return json.load(f)


def median(xs):
    return statistics.median(x for x in xs if x is not None and math.isfinite(x))


def predicted(nc, nr):
    # eps of a same-process pair C (budget N_C) against R (N_R): sqrt((n_C^2 + n_R^2) / 2)
    return math.sqrt((nc * nc + nr * nr) / 2)


for k in (16, 64):
    print(f"\nk = {k} (medians over the 24 projection inputs)\n")
    print("| tokens | eps(C \\| R) same prompts | noise(C) | noise(R) | predicted | eps(Co \\| Re) other prompts "
          "| predicted | \\|eps(F1) - eps(F2)\\| | noise(F1) | fixed vs C: AR lower, beyond noise |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in budgets:
        same, disj = load(n, f"same-k{k}"), load(n, f"disjoint-k{k}")
        ins = same["inputs"]
        # runs: 0 = F1, 1 = F2, 2 = C
        eps_c = median(i["eps"][2] for i in ins)
        nc = median(i["noise"][2] for i in ins)
        nr = median(i["reference_noise"] for i in ins)
        pred = median(predicted(i["noise"][2], i["reference_noise"]) for i in ins)
        dis = disj["inputs"]
        eps_o = median(i["eps"][0] for i in dis)
        pred_o = median(predicted(i["noise"][0], i["reference_noise"]) for i in dis)
        moved = median(abs(i["eps"][0] - i["eps"][1]) for i in ins)
        nf = median(i["noise"][0] for i in ins)
        s = same["summary"]  # fixed text (F1) over the AR run C
        print(f"| {int(n):,} | {eps_c:.3f} | {nc:.3f} | {nr:.3f} | {pred:.3f} | {eps_o:.3f} | {pred_o:.3f} "
              f"| {moved:.3f} | {nf:.3f} | {s['n_ar_lower']}/{s['n_modules']}, "
              f"{s['n_beyond_noise']}/{s['n_noise_modules']} |")
EOF
