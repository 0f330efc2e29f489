#!/usr/bin/env bash
# On the GPU machine, one call: a tuning table for this card under the name the engine and the
# benchmarks look for (resources/tuning/<card name, lower case, dashes>.json), then the decode at
# batch 1 and 2 with the card's committed table (or the heuristics, where it has none) and with the
# new one, side by side:
#  1. build sdw-cli;
#  2. `sdw-cli bench kernels --tune` per group of TUNE_SHAPES (groups separated by ';', each a
#     --shapes list: models or ROWSxCOLS; default the three model shapes, one group each; batch 1, 2,
#     4, 8; 2:4 tunes, the table serves the other patterns), each run starting from the table the
#     one before wrote, the first from the card's committed table, if it has one;
#  2b. with TUNE_STEP_CONFIGS (e.g. "llama3-8b qwen3-14b qwen3-32b"): `sdw-cli bench decode --tune-step`
#     per shape, the sparse engine's launches at batch 1, 2, 4, 8 (TUNE_STEP_BATCHES) chosen in its whole
#     step, into the new table, then 16:32 at TUNE_STEP_M16_BATCHES (default 8; 8:16 and 16:32 on the
#     tensor cores have entries of their own);
#  3. `sdw-cli bench decode` (cuBLAS, dense GEMV, sparse 2:4; batch 1 and 2; TUNE_DECODE_CONFIGS,
#     default llama3-8b,qwen3-14b) with the committed table (decode-before.json), then with the new
#     one (decode-after.json).
# The engine's fused shapes and its lm_head (q|k|v, gate|up; Llama-3.1-8B, Qwen3-14B, Qwen3-32B):
#   TUNE_SHAPES="6144x4096,28672x4096,7168x5120,34816x5120;10240x5120,51200x5120;128256x4096,151936x5120"
# Everything in $OUT/tune.tgz (or out/gpu): the table to commit as resources/tuning/<card>.json, the
# benchmark JSON of each step and a log. Steps are skipped when they would not end by
# TUNE_DEADLINE seconds (default 560; give the call 600).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
deadline=${TUNE_DEADLINE:-560}  # for fits (env.sh)
. tools/gpu/env.sh
sdw_out tune
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
name=$(echo "$card" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]/-/g')
table=resources/tuning/$name.json
sdw_machine_txt "$O/machine.txt" "table $table"
sdw_gpu_build "$O" sdw-cli || { pack; exit 1; }
echo "built at $SECONDS s" | tee -a "$O/machine.txt"
cli=build-gpu/bin/sdw-cli

# 2. The table, group by group.
prev=()
[ -f "$table" ] && prev=(--tuning "$table") && cp "$table" "$O/committed-$name.json"
tuned=""
IFS=';' read -r -a groups <<< "${TUNE_SHAPES:-llama3-8b;qwen3-14b;qwen3-32b}"
i=0
for g in "${groups[@]}"; do
  i=$((i + 1))
  fits 150 "tuning $g" || continue
  t0=$SECONDS
  timeout 240 $cli bench kernels --shapes "$g" --batch 1,2,4,8 --patterns 2:4 --no-cusparselt --tune "${prev[@]}" \
    --tuning-out "$O/$name-$i.json" --json --out "$O/tune-$i.json" > /dev/null 2>> "$O/tune.log" || {
    echo "tuning $g failed or timed out"
    continue
  }
  tuned="$O/$name-$i.json"
  prev=(--tuning "$tuned")
  echo "tuned $g in $((SECONDS - t0)) s (tune-$i.json)"
  pack
done
[ -n "$tuned" ] || { echo "no table"; pack; exit 1; }
cp "$tuned" "$O/$name.json"
pack

# 2b. The sparse engine's launches chosen in its step at batch 1, 2, 4, 8 (bench decode --tune-step), per shape of
# TUNE_STEP_CONFIGS (default none; e.g. "llama3-8b qwen3-14b qwen3-32b"), into the new table.
for c in ${TUNE_STEP_CONFIGS:-}; do
  fits 90 "the step tuning of $c" || continue
  sdw_tune_step "$c" sparse 2:4 "${TUNE_STEP_BATCHES:-1,2,4,8}" "$O/$name.json" "$O/step-$c.json" --tuning "$O/$name.json"
  pack
  # 8:16 and 16:32 on the tensor cores have entries of their own (TUNE_STEP_M16_BATCHES, default 8)
  [ -n "${TUNE_STEP_M16_BATCHES-8}" ] && fits 60 "the 16:32 step tuning of $c" || continue
  sdw_tune_step "$c" sparse 16:32 "${TUNE_STEP_M16_BATCHES-8}" "$O/$name.json" "$O/step-$c-m16.json" --tuning "$O/$name.json"
  pack
done

# 3. The decode with the committed table (or none), then with the new one.
d=(--config "${TUNE_DECODE_CONFIGS:-llama3-8b,qwen3-14b}" --linear cublas,dense,sparse --patterns 2:4 --batch 1,2 --json)
fits 100 "the decode before" &&
  $cli bench decode "${d[@]}" --out "$O/decode-before.json" > /dev/null 2>> "$O/decode.log" &&
  sdw_decode_summary "$O/decode-before.json" before
pack
cp "$O/$name.json" "$table"
fits 100 "the decode after" &&
  $cli bench decode "${d[@]}" --out "$O/decode-after.json" > /dev/null 2>> "$O/decode.log" &&
  sdw_decode_summary "$O/decode-after.json" after
python3 - "$O" <<'PY' || true
import json, os, sys
rows = {}
for m in ("before", "after"):
    f = os.path.join(sys.argv[1], "decode-%s.json" % m)
    if os.path.exists(f):
        for r in json.load(open(f))["rows"]:
            rows[(m, r["config"], r["linear"], r["pattern"], r["batch"])] = r["tokens_per_second"]
for (m, c, l, p, b), v in sorted(rows.items()):
    h = rows.get(("before", c, l, p, b))
    if m == "after" and h:
        print("after / before", c, l, p or "-", "batch", b, "%.1f / %.1f tok/s = %.3f" % (v, h, v / h))
PY
echo "done at $SECONDS s"
pack
