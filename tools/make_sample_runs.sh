#!/usr/bin/env bash
# Recreates the sample calibration runs in samples/workspace/ (about 40 MB,
# so they are not kept in the repository): fixed-text and AR runs of the
# sample model with equal budgets, and the held-out decode-time reference,
# then the epsilon analysis of the three (about 3 minutes on a 2-core CPU);
# then SparseGPT 2:4 from each calibration run (checkpoints in
# samples/workspace/pruned/, not kept in the repository; the pruning records
# next to the other runs), their evaluation against the dense model and their
# activation drift (about 8 minutes more). The small records, the evaluation
# and the drift run are the ones the repository ships.
#
# Every step that decodes (the AR run, the reference, eval, drift) decodes
# greedily, one decoding for all of them (DEC below): on this sample model
# greedy is the protocol under which the study (docs/study.md) finds the
# AR-calibrated model ahead in every cell; sampled at T = 1, the workbench's
# default (core/decoding.h), it finds no difference here. The guided
# walkthrough decodes the same way. Paths are given relative to the
# repository root, so the runs name their model and inputs that way.
#
#   tools/make_sample_runs.sh [build/bin/sdw-cli]
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${1:-build/bin/sdw-cli}
ws=samples/workspace
m=samples/model/brown-llama
DEC="--temperature 0"
"$cli" calibrate --model $m --source fixed --corpus samples/corpus/brown-calib.txt --tokens 20000 \
  --window 256 --batch 8 --seed 0 --force --out $ws/calib-fixed.sdw.h5
"$cli" calibrate --model $m --source ar --prompts samples/prompts/brown-calib.jsonl --tokens 20000 $DEC \
  --max-new-tokens 256 --batch 16 --seed 0 --force --out $ws/calib-ar.sdw.h5
"$cli" calibrate --model $m --source ar --prompts samples/prompts/brown-heldout.jsonl --tokens 10000 $DEC \
  --max-new-tokens 256 --batch 8 --store topk --topk 128 --seed 0 --force --out $ws/reference-heldout.sdw.h5
"$cli" analyze epsilon --reference $ws/reference-heldout.sdw.h5 --runs $ws/calib-fixed.sdw.h5 \
  $ws/calib-ar.sdw.h5 --k 64 --out $ws/epsilon-sample.sdw.h5 --overwrite
for c in fixed ar; do
  "$cli" prune --model $m --calibration $ws/calib-$c.sdw.h5 --method sparsegpt --pattern 2:4 \
    --out $ws/pruned/sgpt24-$c --record $ws/pruning-sgpt24-$c.sdw.h5 --overwrite
done
"$cli" eval --dense $m --models $ws/pruned/sgpt24-fixed $ws/pruned/sgpt24-ar --seeds 0 \
  --max-new-tokens 64 --window 256 --text samples/corpus/brown-heldout.txt \
  --prompts samples/prompts/brown-heldout.jsonl $DEC --out $ws/eval-sample.sdw.h5 --overwrite
"$cli" analyze drift --dense $m --pruned $ws/pruned/sgpt24-fixed $ws/pruned/sgpt24-ar \
  --prompts samples/prompts/brown-heldout.jsonl --steps 128 --mode both $DEC --out $ws/drift-sample.sdw.h5 --overwrite
