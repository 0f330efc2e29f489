#!/usr/bin/env bash
# On the GPU machine, one call: the checks and measurements docs/gpu.md lists under "Written for
# the GPU, not yet run on one", most needed first, each skipped when it would not finish by
# PENDING_DEADLINE seconds from the start (default 560; give the call 600):
#  1. build sdw-cli, test_spmv_cuda, test_spmspv_cuda, test_engine_cuda;
#  2. test_spmv_cuda: matchesReference's 8:16 rows at batch 2-8 on the CUDA cores (the tcM fix)
#     and tensorCoresMatchReference; test_spmspv_cuda's column rows and the programmatic-launch
#     chain; test_engine_cuda patternsAndBatches and columnLayoutsWithinTolerance (the per-type
#     attention and per-batch SpMV units run through all of them);
#  3. the committed spMspV benchmark (bench/results/h200-spmspv.json's command) as it is:
#     on an H200 that file is the one to commit;
#  4. the 8:16 decode (Llama-3.1-8B, Qwen3-14B) at batch 4, 5, 6, 8 by default, on the CUDA
#     cores and on the tensor cores (the default from batch 6 rests on batches 4 and 8);
#  5. the dual-sparse decode at p_x 0.5 with TEAL's thresholds (Llama-3.1-8B), as it is and with
#     SDW_SPMSPV_PDL=0 (programmatic launch of the column kernels, the default since 3875b16);
#  6. compute-sanitizer memcheck, racecheck, synccheck on two 8:16 tensor-core rows.
# PENDING_STEPS="tests bench decode816 dual sanitize816" picks steps (default all, in that order).
# Logs and JSON in $OUT/pending.tgz (or out/gpu), written again after every step.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
O=$out/pending
mkdir -p "$O"
pack() { tar -C "$out" -czf "$out/pending.tgz" pending; }
deadline=${PENDING_DEADLINE:-560}  # for fits (env.sh)
steps=" ${PENDING_STEPS:-tests bench decode816 dual sanitize816} "
want() { [[ "$steps" == *" $1 "* ]]; }
. tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$O/machine.txt"
echo "commit ${SDW_COMMIT:-unknown}" | tee -a "$O/machine.txt"
sdw_gpu_build "$O" sdw-cli test_spmv_cuda test_spmspv_cuda test_engine_cuda || { pack; exit 1; }
echo "built at $SECONDS s" | tee -a "$O/machine.txt"
pack
cli=build-gpu/bin/sdw-cli
summary() {  # summary FILE TAG: one line per decode row
  python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(sys.argv[2], r["config"], r["linear"], r["pattern"] or "-", "batch", r["batch"], "%.1f tok/s" % r["tokens_per_second"])' \
    "$1" "$2" 2>/dev/null || echo "$2: no result"
}

if want tests && fits 120 "the suites"; then
  rows=()
  for b in 2 3 4 5 6 7 8; do for d in bf16 fp16; do rows+=("matchesReference:batch $b 101x1024 $d"); done; done
  timeout 120 build-gpu/tests/test_spmv_cuda "${rows[@]}" tensorCoresMatchReference > "$O/test-spmv.log" 2>&1
  echo "test_spmv_cuda (8:16 batch rows, tensor cores) rc $?: $(grep -E '^Totals' "$O/test-spmv.log")"
  r=columnMatchesReference
  timeout 120 build-gpu/tests/test_spmspv_cuda "$r:col24 600x4000 p=0.50 fp16 cluster" "$r:col48 600x4000 p=0.50 bf16" \
    "$r:col24 llama 14336x4096 p=0.50 d4 cluster" "$r:col48 llama 4096x14336 p=0.50 d4 cluster" \
    columnRefusesBadArguments columnPdlChainMatchesPlain > "$O/test-spmspv.log" 2>&1
  echo "test_spmspv_cuda (column rows) rc $?: $(grep -E '^Totals' "$O/test-spmspv.log")"
  timeout 150 build-gpu/tests/test_engine_cuda patternsAndBatches columnLayoutsWithinTolerance \
    > "$O/test-engine.log" 2>&1
  echo "test_engine_cuda rc $?: $(grep -E '^Totals' "$O/test-engine.log")"
  grep -hE "^FAIL|Loc:" "$O"/test-*.log | head -10
  pack
fi

if want bench && fits 100 "the committed spMspV benchmark"; then
  $cli bench kernels --shapes llama3-8b,qwen3-14b --batch 1 --patterns 2:4 --activation-sparsity 0,0.25,0.5,0.75 \
    --json --out "$O/spmspv.json" > /dev/null 2>> "$O/bench.log" || echo "bench failed"
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for a in d.get("activation_summary", []):
    if a.get("activation_sparsity") == 0.5:
        print("spmspv.json", a.get("pattern"), "p_x 0.5 median %.2fx over our dense GEMV" % a.get("median_speedup_vs_dense", 0))' \
    "$O/spmspv.json" 2>/dev/null
  pack
fi

if want decode816; then
  for m in default fma tc; do
    fits 60 "the 8:16 decode ($m)" || continue
    a=()
    [ $m = fma ] && a=(--no-tensor-cores)
    [ $m = tc ] && a=(--tensor-cores)
    $cli bench decode --config llama3-8b,qwen3-14b --linear sparse --patterns 2:4,8:16 --batch 4,5,6,8 "${a[@]}" \
      --json --out "$O/decode-816-$m.json" > /dev/null 2>> "$O/decode.log"
    summary "$O/decode-816-$m.json" "$m"
    pack
  done
  # Per shape and batch: the default against the faster of the two paths (1.00: it picked it).
  python3 - "$O" <<'PY' || true
import json, os, sys
rows = {}
for m in ("default", "fma", "tc"):
    f = os.path.join(sys.argv[1], "decode-816-%s.json" % m)
    if os.path.exists(f):
        for r in json.load(open(f))["rows"]:
            rows[(m, r["config"], r["pattern"], r["batch"])] = r["tokens_per_second"]
for (m, c, p, b), v in sorted(rows.items()):
    if m != "default" or p != "8:16": continue
    best = max(rows.get(("fma", c, p, b), 0), rows.get(("tc", c, p, b), 0))
    if best > 0:
        print("8:16 default", c, "batch", b, "%.1f tok/s, %.2f of the faster path" % (v, v / best))
PY
fi

if want dual; then
  for v in pdl nopdl; do
    fits 100 "the dual-sparse decode ($v)" || continue
    env SDW_SPMSPV_PDL=$([ $v = pdl ] && echo 1 || echo 0) $cli bench decode --config llama3-8b --linear dense,sparse \
      --patterns 2:4,col2:4,col4:8 --batch 1 --activation-sparsity 0.5 --activation-selection thresholds --json \
      --out "$O/dual-thresholds-$v.json" > /dev/null 2>> "$O/decode.log"
    summary "$O/dual-thresholds-$v.json" "$v"
    pack
  done
fi
if want sanitize816; then  # 8:16 on the tensor cores under compute-sanitizer: two rows, each tool
  for tool in memcheck racecheck synccheck; do
    fits 60 "compute-sanitizer $tool" || continue
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/tests/test_spmv_cuda \
      "tensorCoresMatchReference:split-K 1000x5120 b8 bf16 8:16" "tensorCoresMatchReference:odd words 129x160 b7 fp16 8:16" \
      > "$O/sanitize-tc816-$tool.log" 2>&1
    echo "8:16 tensor cores $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Totals' "$O/sanitize-tc816-$tool.log" | tr '\n' ' ')"
    pack
  done
fi
echo "done at $SECONDS s"
pack
