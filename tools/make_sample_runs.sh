#!/usr/bin/env bash
# Recreates the sample calibration runs in samples/workspace/ (about 40 MB,
# so they are not kept in the repository): fixed-text and AR runs of the
# sample model with equal budgets, and the held-out decode-time reference,
# then the epsilon analysis of the three. About 3 minutes on a 2-core CPU.
#
#   tools/make_sample_runs.sh [build/bin/sdw-cli]
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${1:-build/bin/sdw-cli}
ws=samples/workspace
m=samples/model/brown-llama
"$cli" calibrate --model $m --source fixed --corpus samples/corpus/brown-calib.txt --tokens 20000 \
  --window 256 --batch 8 --seed 0 --force --out $ws/calib-fixed.sdw.h5
"$cli" calibrate --model $m --source ar --prompts samples/prompts/brown-calib.jsonl --tokens 20000 \
  --max-new-tokens 256 --batch 16 --seed 0 --force --out $ws/calib-ar.sdw.h5
"$cli" calibrate --model $m --source ar --prompts samples/prompts/brown-heldout.jsonl --tokens 10000 \
  --max-new-tokens 256 --batch 8 --store topk --topk 128 --seed 0 --force --out $ws/reference-heldout.sdw.h5
"$cli" analyze epsilon --reference $ws/reference-heldout.sdw.h5 --runs $ws/calib-fixed.sdw.h5 \
  $ws/calib-ar.sdw.h5 --k 64 --out $ws/epsilon-sample.sdw.h5 --overwrite
