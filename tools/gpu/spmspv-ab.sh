#!/usr/bin/env bash
# On the GPU machine, one call: the spMspV column kernels' defaults against one A/B switch
# (SPMSPV_AB_B, an environment assignment; default SDW_SPMSPV_WAVEFIT=0, the split-K aim without
# the wave fit; SDW_SPMSPV_FINISH=8 (the workspace's partial sums loaded eight at a time; removed since, no gain) and
# SDW_SPMSPV_LANES=16 (the half-warp walk) ran on H100s on 2026-12-06), and the dual-sparse
# decode with TEAL's thresholds.
#  1. build sdw-cli, test_spmspv_cuda, test_engine_cuda;
#  2. test_spmspv_cuda: rows of columnMatchesReference with the half-warp walk (small, split-K,
#     cluster, Llama shapes) and columnRefusesBadArguments; test_engine_cuda
#     columnLayoutsWithinTolerance;
#  3. the committed spMspV benchmark (bench/results/h200-spmspv.json's command) as it is, then
#     with SPMSPV_AB_B (column 2:4 and 4:8 only), medians printed side by side;
#  4. SPMSPV_AB_DECODE=1 (default): the dual-sparse decode of DECODE_CONFIGS (default llama3-8b;
#     about 75 s a variant, Qwen3-14B about 140) at p_x 0.5, the variants SPMSPV_AB_VARIANTS
#     (default "topk thresholds thresholds-b": top-k, thresholds from a prefill, and thresholds
#     with SPMSPV_AB_B).
# SPMSPV_AB_QUICK=1: no test_engine_cuda (neither built nor run), and both benchmarks over the
# column 2:4 and 4:8 layouts alone, without cuSPARSELt (the A/B, not the committed file).
# SPMSPV_AB_FLOOR=0: no benchmark at p_x 0.99 (the column kernels' fixed cost per call), which
# otherwise runs as it is and with SPMSPV_AB_B.
# SPMSPV_AB_SANITIZE=1: column rows under compute-sanitizer (before the decode). Decode variant
# thresholds-nopdl: the thresholds with SDW_SPMSPV_PDL=0 (no programmatic dependent launch for
# the column kernels, the default before 2026-12-06).
# SPMSPV_AB_TESTS=0 / SPMSPV_AB_BENCH=0 skip step 2 / 3 (a second call on a warm machine whose
# build-gpu is already made: SPMSPV_AB_TESTS=0 SPMSPV_AB_BENCH=0 runs the decode alone).
# Logs and JSON in $OUT/spmspv-ab.tgz (or out/gpu), written again after every step.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# What has run so far goes into the archive after every step, so a call cut short by its time
# limit still brings back the steps before; a step that would not finish by SPMSPV_AB_DEADLINE
# seconds from the start (default 540) is skipped.
deadline=${SPMSPV_AB_DEADLINE:-540}  # for fits (env.sh)
. tools/gpu/env.sh
sdw_out ab spmspv-ab
sdw_machine_txt "$O/machine.txt"
quick=${SPMSPV_AB_QUICK:-0}
B=${SPMSPV_AB_B:-SDW_SPMSPV_WAVEFIT=0}
echo "B: $B" | tee -a "$O/machine.txt"
targets="sdw-cli test_spmspv_cuda"
[ "$quick" = 1 ] || targets="$targets test_engine_cuda"
sdw_gpu_build "$O" $targets || { pack; exit 1; }
pack
t=build-gpu/tests/test_spmspv_cuda
r=columnMatchesReference
[ "${SPMSPV_AB_TESTS:-1}" = 1 ] && {
timeout 200 $t "$r:col24 h16 36x96 p=0.50 bf16" "$r:col24 h16 300x33 p=0.00 fp16" "$r:col24 h16 600x4000 p=0.50 fp16 cluster" \
  "$r:col24 h16 600x4000 p=0.99 bf16" "$r:col48 h16 600x4000 p=0.50 bf16" "$r:col48 h16 300x33 p=1.00 fp16 cluster" \
  "$r:col24 as col48 h16 512x2080 split 65" "$r:col24 h16 257x1000 one per group" "$r:col48 h16 257x1000 one per group cluster" \
  "$r:col24 h16 llama 14336x4096 p=0.50 d4 cluster" "$r:col24 h16 llama 4096x14336 p=0.50 d2" \
  "$r:col48 h16 llama 14336x4096 p=0.50 d4" "$r:col48 h16 llama 4096x14336 p=0.50 d2 cluster" \
  columnRefusesBadArguments columnPdlChainMatchesPlain > "$O/test-spmspv-h16.log" 2>&1
echo "test_spmspv_cuda (half-warp rows) rc $?: $(grep -E "^Totals" "$O/test-spmspv-h16.log")"
grep -E "^FAIL|Loc:" "$O/test-spmspv-h16.log" | head -10
if [ "$quick" != 1 ]; then
  timeout 120 build-gpu/tests/test_engine_cuda columnLayoutsWithinTolerance > "$O/test-engine-coltol.log" 2>&1
  echo "test_engine_cuda columnLayoutsWithinTolerance rc $?: $(grep -E "^Totals" "$O/test-engine-coltol.log")"
  grep -E "^FAIL|Loc:" "$O/test-engine-coltol.log" | head -10
fi
pack
}
[ "${SPMSPV_AB_BENCH:-1}" = 1 ] && {
bench=(build-gpu/bin/sdw-cli bench kernels --shapes llama3-8b,qwen3-14b --batch 1 --patterns 2:4
  --activation-sparsity 0,0.25,0.5,0.75 --json)
[ "$quick" = 1 ] && bench+=(--spmspv-layouts col2:4,col4:8 --no-cusparselt)
fits 90 "the committed benchmark" && { "${bench[@]}" --out "$O/spmspv.json" > /dev/null 2>> "$O/bench.log" || echo "bench failed"; pack; }
fits 60 "the benchmark with $B" && { env "$B" "${bench[@]}" --spmspv-layouts col2:4,col4:8 --no-cusparselt \
  --out "$O/spmspv-b.json" > /dev/null 2>> "$O/bench.log" || echo "bench ($B) failed"; pack; }
# the fixed cost per call: p_x 0.99 (1% of the columns active; 1.0 is refused), column layouts
[ "${SPMSPV_AB_FLOOR:-1}" = 1 ] && fits 60 "the floor" && {
  "${bench[@]/0,0.25,0.5,0.75/0.99}" --spmspv-layouts col2:4,col4:8 --no-cusparselt \
    --out "$O/spmspv-floor.json" > /dev/null 2>> "$O/bench.log" || echo "bench (floor) failed"
  env "$B" "${bench[@]/0,0.25,0.5,0.75/0.99}" --spmspv-layouts col2:4,col4:8 --no-cusparselt \
    --out "$O/spmspv-floor-b.json" > /dev/null 2>> "$O/bench.log" || echo "bench (floor, $B) failed"
  pack
}
python3 - "$O/spmspv.json" "$O/spmspv-b.json" "$O/spmspv-floor.json" "$O/spmspv-floor-b.json" <<'PY'
import json, sys
for f in sys.argv[1:]:
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f, "unreadable:", e); continue
    for a in d.get("activation_summary", []):
        print(f.split("/")[-1], a.get("pattern"), "p_x", a.get("activation_sparsity"),
              "median %.2fx dense" % a.get("median_speedup_vs_dense", 0), "%.0f GB/s" % a.get("median_gbs", 0))
    for r in d["rows"]:
        if r["kernel"] == "spmspv" and r.get("activation_sparsity") in (0.5, 0.99) and r["pattern"] in ("col2:4", "col4:8"):
            print("  %-10s %-9s %6.2f us  %.2fx  %s" % (r["module"], r["pattern"], r["us"], r.get("speedup_vs_dense", 0), r["config"][:40]))
PY
}
# SPMSPV_AB_SANITIZE=1: the column kernels under compute-sanitizer (memcheck, racecheck,
# synccheck): a small row, split-K rows through the workspace and the cluster, column 4:8 and
# dense, the half-warp walk in a cluster, the chain with programmatic dependent launch.
if [ "${SPMSPV_AB_SANITIZE:-0}" = 1 ] && fits 60 "compute-sanitizer"; then
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/tests/test_spmspv_cuda \
      "$r:col24 300x33 p=0.50 bf16" "$r:col24 600x4000 p=0.50 fp16" "$r:col24 600x4000 p=0.50 fp16 cluster" \
      "$r:col48 600x4000 p=0.50 bf16" "$r:dense 600x4000 p=0.50 bf16" "$r:col48 h16 300x33 p=1.00 fp16 cluster" \
      "columnPdlChainMatchesPlain:col24 cluster" "columnPdlChainMatchesPlain:col48" \
      > "$O/sanitize-column-$tool.log" 2>&1
    echo "column $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Totals' "$O/sanitize-column-$tool.log" | tr '\n' ' ')"
  done
  pack
fi
if [ "${SPMSPV_AB_DECODE:-1}" = 1 ]; then
  dec=(build-gpu/bin/sdw-cli bench decode --config "${DECODE_CONFIGS:-llama3-8b}" --linear dense,sparse
    --patterns 2:4,col2:4,col4:8 --batch 1 --activation-sparsity 0.5 --json)
  configs=${DECODE_CONFIGS:-llama3-8b}
  need=$((90 * $(echo "$configs" | tr ',' '\n' | grep -c . ) + 60 * $(echo "$configs" | grep -c qwen3-14b)))
  for v in ${SPMSPV_AB_VARIANTS:-topk thresholds thresholds-b}; do
    fits "$need" "decode $v" || continue
    case $v in
      topk) "${dec[@]}" --out "$O/dual-$v.json" > /dev/null 2>> "$O/decode.log" ;;
      thresholds) "${dec[@]}" --activation-selection thresholds --out "$O/dual-$v.json" > /dev/null 2>> "$O/decode.log" ;;
      thresholds-b) env "$B" "${dec[@]}" --activation-selection thresholds --out "$O/dual-$v.json" \
        > /dev/null 2>> "$O/decode.log" ;;
      thresholds-nopdl) SDW_SPMSPV_PDL=0 "${dec[@]}" --activation-selection thresholds --out "$O/dual-$v.json" \
        > /dev/null 2>> "$O/decode.log" ;;
    esac
    python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(sys.argv[2], r["config"], r["linear"], r["pattern"] or "-", "%.1f tok/s" % r["tokens_per_second"], r.get("activation_selection", ""))' \
      "$O/dual-$v.json" "$v" || echo "decode $v failed"
    pack
  done
fi
pack && rm -rf "$O"
