#!/usr/bin/env bash
# On the GPU machine, one call: the checks and measurements docs/gpu.md lists under "Written for
# the GPU, not yet run on one", most needed first, each skipped when it would not finish by
# PENDING_DEADLINE seconds from the start (default 560; give the call 600):
#  1. build sdw-cli, test_spmv_cuda, test_engine_cuda (and test_spmspv_cuda on an H200);
#  b2. batch 2 with x by shuffle (unroll 200 + U): test_spmv_cuda (every function: the batch-1
#     kernel it shares changed too) and test_engine_cuda patternsAndBatches; the decode at batch 1
#     and 2 (Llama-3.1-8B, Qwen3-14B; cuBLAS, dense GEMV, 2:4, 16:32) by default, then the sparse
#     rows at batch 2 with SDW_SPMV_B2=staged (the kernel that stages x) and on the tensor cores;
#     the kernel benchmark at batch 2 either way;
#  2. tests: test_spmv_cuda tensorCoresMatchReference (every pattern, 16:32 through the windows of
#     tcM 32 among them) and test_engine_cuda patternsAndBatches (every pattern on the tensor
#     cores at batch 2-8 and on the CUDA cores);
#  3. bench (an H200 only): the committed spMspV benchmark (bench/results/h200-spmspv.json's
#     command), the file to commit there;
#  4. decode: 8:16 and 16:32 in the engine (Llama-3.1-8B, Qwen3-14B) at batch 2, 4, 5, 6, 8 on
#     the CUDA cores and on the tensor cores, with the share of the faster path each one has;
#  5. sanitize: compute-sanitizer memcheck, racecheck, synccheck on 16:32 and 8:16 tensor-core
#     rows (16:32's windows read up to 16 bytes either side of a row in shared memory);
#  6. dual (an H200 only): the dual-sparse decode at p_x 0.5 with TEAL's thresholds
#     (Llama-3.1-8B), with programmatic launch of the column kernels (the default) and without.
#  b34 (asked for by name only): batch 3 and 4 with x by shuffle (SDW_SPMV_B34=shuffle): test_spmv_cuda
#     matchesReference, test_engine_cuda patternsAndBatches with it, the decode at batch 3 and 4 on the
#     CUDA cores staged / by shuffle / staged (Llama-3.1-8B, Qwen3-14B; 2:4, 16:32), the default engines
#     at batch 4, and the kernel benchmark at batch 4 either way;
#  chain (asked for by name only): the engine's batch-1 step as the card's table sets it up (CHAIN_CONFIGS,
#     default Llama-3.1-8B, Qwen3-14B, Qwen3-32B; dense GEMV and sparse 2:4), the projections alone
#     (SDW_ENGINE_SKIP=others), then the whole step (CHAIN_PARTS picks among projections, step, rest:
#     all but the projections, no-attention: all but the attention);
#  step (asked for by name only): its test, then the sparse 2:4 engine at STEP_BATCHES (default 1,2,4,8)
#     with its SpMV launches chosen in the whole step (bench decode --tune-step), per shape of
#     STEP_CONFIGS, then 16:32 at STEP_M16_BATCHES (default 8: the tensor cores' entries of 8:16 and
#     16:32); STEP_LINEARS="dense sparse" first tunes the dense GEMV engine's launches the same way
#     ("dense", "m16": those alone);
#  ctest (asked for by name only): every GPU suite, `ctest -L gpu` (their targets are built with the
#     rest; the GUI's story needs the GUI's bundle and tools/gpu/check.sh), last;
#  grid (an H200 only unless named): the committed decode grid (bench/results/h200-decode-e2e.json's
#     command; GRID_TUNING: a table, or "step" for the table the step step wrote), then transformers +
#     torch.compile on the Llama-3.1-8B shape.
# PENDING_STEPS="b2 tests bench decode sanitize dual" picks steps (default all, in that order; bench
# and dual run on an H200 only unless named in PENDING_STEPS).
# Logs and JSON in $OUT/pending.tgz (or out/gpu), written again after every step.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
deadline=${PENDING_DEADLINE:-560}  # for fits (env.sh)
. tools/gpu/env.sh
sdw_out pending
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
card=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]/-/g')  # its tuning table's name
steps=" ${PENDING_STEPS:-b2 tests bench decode sanitize dual} "
h200only=" bench dual grid "
want() {  # a step asked for (bench and dual by default on an H200 only)
  [[ "$steps" == *" $1 "* ]] || return 1
  [ -n "${PENDING_STEPS:-}" ] || [[ "$h200only" != *" $1 "* ]] || [[ "$gpu" == *H200* ]]
}
sdw_machine_txt "$O/machine.txt"
targets=${PENDING_TARGETS:-sdw-cli test_spmv_cuda test_engine_cuda}
want bench && targets="$targets test_spmspv_cuda"
# The GPU suites tests/CMakeLists.txt labels gpu at its top level (the GUI's story sits under its GUI block).
want ctest && targets="$targets $(sed -nE 's/^sdw_add_test\((test_[a-z0-9_]+) .*LABELS gpu\).*/\1/p' tests/CMakeLists.txt)"
sdw_gpu_build "$O" $targets || { pack; exit 1; }
echo "built at $SECONDS s" | tee -a "$O/machine.txt"
pack
cli=build-gpu/bin/sdw-cli

# kernel_ab BATCH VAR: the kernel benchmark at BATCH on the CUDA cores (Llama-3.1-8B, Qwen3-14B; 2:4)
# with VAR=shuffle, then VAR=staged (x by shuffle or staged in shared memory); k-b<BATCH>-<v>.json.
kernel_ab() {
  local v
  for v in shuffle staged; do
    fits 60 "the kernel benchmark at batch $1 ($v)" || continue
    env "$2=$v" $cli bench kernels --shapes llama3-8b,qwen3-14b --batch "$1" --patterns 2:4 --no-cusparselt \
      --no-tensor-cores --json --out "$O/k-b$1-$v.json" > /dev/null 2>> "$O/bench.log"
    python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["kernel"] in ("sparse", "dense", "cublas"):
        print(sys.argv[2], r["model"], r["module"], r["kernel"], "%.2f us" % r["us"], "chained %.2f" % r.get("us_chained", 0), r["config"])' \
      "$O/k-b$1-$v.json" $v 2>/dev/null
    pack
  done
}

if want b2 && fits 250 "batch 2's shuffle path"; then
  timeout 240 build-gpu/tests/test_spmv_cuda > "$O/test-spmv-all.log" 2>&1
  echo "test_spmv_cuda rc $?: $(grep -E '^Totals' "$O/test-spmv-all.log")"
  timeout 120 build-gpu/tests/test_engine_cuda patternsAndBatches > "$O/test-engine-b2.log" 2>&1
  echo "test_engine_cuda patternsAndBatches rc $?: $(grep -E '^Totals' "$O/test-engine-b2.log")"
  grep -hE "^FAIL|Loc:" "$O"/test-spmv-all.log "$O"/test-engine-b2.log | head -10
  pack
  d=(--config llama3-8b,qwen3-14b --json)
  fits 120 "the decode at batch 1 and 2" &&
    $cli bench decode "${d[@]}" --linear cublas,dense,sparse --patterns 2:4,16:32 --batch 1,2 --out "$O/b2-default.json" \
      > /dev/null 2>> "$O/decode.log" && sdw_decode_summary "$O/b2-default.json" default
  fits 60 "the staged batch-2 kernel" &&
    SDW_SPMV_B2=staged $cli bench decode "${d[@]}" --linear sparse --patterns 2:4,16:32 --batch 2 \
      --out "$O/b2-staged.json" > /dev/null 2>> "$O/decode.log" && sdw_decode_summary "$O/b2-staged.json" staged
  fits 45 "batch 2 on the tensor cores" &&
    $cli bench decode "${d[@]}" --linear sparse --patterns 2:4 --batch 2 --tensor-cores \
      --out "$O/b2-tc.json" > /dev/null 2>> "$O/decode.log" && sdw_decode_summary "$O/b2-tc.json" tensor-cores
  pack
  kernel_ab 2 SDW_SPMV_B2
fi

if [[ "$steps" == *" b34 "* ]] && [ -n "${PENDING_STEPS:-}" ] && fits 200 "batch 3 and 4's shuffle path"; then
  # Batch 3 and 4 with x by shuffle (unroll 200 + U, x as [cols][4]): the kernel's every
  # configuration against float64, the engine's patterns and batches with it, then the decode at
  # batch 3 and 4 on the CUDA cores with the staging kernel, by shuffle, and the staging kernel
  # again (Llama-3.1-8B, Qwen3-14B; 2:4, 16:32), and the default engines at batch 4 (the best
  # dense, 2:4 and 8:16 on the tensor cores); the kernel benchmark at batch 4 either way.
  timeout 240 build-gpu/tests/test_spmv_cuda matchesReference > "$O/test-spmv-b34.log" 2>&1
  echo "test_spmv_cuda matchesReference rc $?: $(grep -E '^Totals' "$O/test-spmv-b34.log")"
  SDW_SPMV_B34=shuffle timeout 120 build-gpu/tests/test_engine_cuda patternsAndBatches > "$O/test-engine-b34.log" 2>&1
  echo "test_engine_cuda patternsAndBatches (SDW_SPMV_B34=shuffle) rc $?: $(grep -E '^Totals' "$O/test-engine-b34.log")"
  grep -hE "^FAIL|Loc:" "$O"/test-spmv-b34.log "$O"/test-engine-b34.log | head -10
  pack
  d=(--config llama3-8b,qwen3-14b --json)
  for v in staged shuffle staged2; do
    fits 50 "the decode at batch 3 and 4 ($v)" || continue
    env SDW_SPMV_B34=${v%2} $cli bench decode "${d[@]}" --linear sparse --patterns 2:4,16:32 --batch 3,4 \
      --no-tensor-cores --out "$O/b34-$v.json" > /dev/null 2>> "$O/decode.log" && sdw_decode_summary "$O/b34-$v.json" $v
    pack
  done
  fits 60 "the default engines at batch 4" &&
    $cli bench decode "${d[@]}" --linear cublas,dense,sparse --patterns 2:4,8:16,16:32 --batch 4 \
      --out "$O/b34-default.json" > /dev/null 2>> "$O/decode.log" && sdw_decode_summary "$O/b34-default.json" default
  pack
  kernel_ab 4 SDW_SPMV_B34
fi

if [[ "$steps" == *" chain "* ]] && [ -n "${PENDING_STEPS:-}" ] && fits 60 "the batch-1 step as the table sets it up"; then
  d=(--config "${CHAIN_CONFIGS:-llama3-8b,qwen3-14b,qwen3-32b}" --patterns 2:4 --batch 1 --linear dense,sparse --json)
  for part in ${CHAIN_PARTS:-projections step}; do
    case $part in  # SDW_ENGINE_SKIP: what the step leaves out
      projections) skip=others ;;    # the projections and lm_head alone
      rest) skip=linears ;;          # everything but them
      no-attention) skip=attention ;;
      *) skip="" ;;                  # step: the whole step
    esac
    fits 40 "the $part" && SDW_ENGINE_SKIP=$skip $cli bench decode "${d[@]}" --out "$O/chain-$part.json" \
      > /dev/null 2>> "$O/decode.log" && sdw_decode_summary "$O/chain-$part.json" "$part"
    echo "  (at $SECONDS s)"
    pack
  done
fi

if [[ "$steps" == *" step "* ]] && [ -n "${PENDING_STEPS:-}" ]; then
  # The sparse 2:4 engine at STEP_BATCHES with each projection's SpMV launch chosen in the whole step
  # (bench decode --tune-step), per shape of STEP_CONFIGS, from the card's committed table; the
  # table it writes is step-<card>.json.
  if [ -x build-gpu/tests/test_engine_cuda ] && fits 60 "the step tuning's test"; then
    timeout 90 build-gpu/tests/test_engine_cuda stepTunedLaunchesDecode > "$O/test-step.log" 2>&1
    echo "test_engine_cuda stepTunedLaunchesDecode rc $?: $(grep -E '^Totals' "$O/test-step.log")"
    grep -E "^FAIL|Loc:|step tuning:" "$O/test-step.log" | head -5
  fi
  for c in ${STEP_CONFIGS-llama3-8b qwen3-14b qwen3-32b}; do  # STEP_CONFIGS= : the test alone
    if [[ " ${STEP_LINEARS:-sparse} " == *" dense "* ]] && fits 100 "the dense step tuning of $c"; then
      sdw_tune_step $c dense "" "${STEP_BATCHES:-1,2,4,8}" "$O/step-$card.json" "$O/step-$c-dense.json"
      pack
    fi
    if [[ " ${STEP_LINEARS:-sparse} " == *" sparse "* ]] && fits 100 "the step tuning of $c"; then
      sdw_tune_step $c sparse 2:4 "${STEP_BATCHES:-1,2,4,8}" "$O/step-$card.json" "$O/step-$c.json"
      pack
    fi
    # 8:16 and 16:32 on the tensor cores (their own entries) at STEP_M16_BATCHES (default 8; empty: none),
    # after the 2:4 tuning or, with STEP_LINEARS naming m16, alone
    [[ " ${STEP_LINEARS:-sparse} " == *" sparse "* || " ${STEP_LINEARS:-sparse} " == *" m16 "* ]] || continue
    [ -n "${STEP_M16_BATCHES-8}" ] && fits 60 "the 16:32 step tuning of $c" || continue
    sdw_tune_step $c sparse 16:32 "${STEP_M16_BATCHES-8}" "$O/step-$card.json" "$O/step-$c-m16.json"
    pack
  done
fi

if want grid && fits 200 "the committed decode grid"; then
  # bench/results/h200-decode-e2e.json's command (docs/decode-engine.md), with GRID_TUNING's table
  # (a path, or "step": the table the step step wrote) where given; then transformers +
  # torch.compile on the Llama-3.1-8B shape where time is left.
  tuning=()
  case "${GRID_TUNING:-}" in
    "") ;;
    step) [ -f "$O/step-$card.json" ] && tuning=(--tuning "$O/step-$card.json") ;;
    *) tuning=(--tuning "$GRID_TUNING") ;;
  esac
  echo "grid tuning: ${tuning[*]:-the committed table}"
  t0=$SECONDS
  timeout $((deadline - SECONDS - 5)) $cli bench decode --config llama3-8b,qwen3-14b,qwen3-32b --linear cublas,dense,sparse \
    --patterns 2:4,4:8,8:16,16:32 --batch 1,2,4,8 "${tuning[@]}" --json --out "$O/$card-decode-e2e.json" \
    > /dev/null 2>> "$O/decode.log" && echo "grid in $((SECONDS - t0)) s" && python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for s in d["summary"]:
    sp = s.get("sparse", {})
    print(s["config"], "b%d" % s["batch"], "cublas %.1f dense %.1f (%.1f%% of limit)" % (s.get("cublas_tokens_per_second", 0),
          s.get("dense_tokens_per_second", 0), 100 * s.get("dense_ratio_to_bandwidth_limit", 0)),
          " ".join("%s %.1f %.2fx" % (p, v["tokens_per_second"], v["speedup_over_best_dense"]) for p, v in sorted(sp.items())))' \
    "$O/$card-decode-e2e.json"
  pack
  fits 120 "transformers + torch.compile" &&
    timeout 110 python3 tools/gpu/hf_decode_baseline.py "$O/hf-decode-llama3-8b.json" --method graph \
      --config resources/configs/llama-3.1-8b.json > "$O/hf.log" 2>&1 && tail -2 "$O/hf.log"
  pack
fi

if want tests && fits 100 "the suites"; then
  timeout 120 build-gpu/tests/test_spmv_cuda tensorCoresMatchReference > "$O/test-spmv.log" 2>&1
  echo "test_spmv_cuda tensorCoresMatchReference rc $?: $(grep -E '^Totals' "$O/test-spmv.log")"
  timeout 150 build-gpu/tests/test_engine_cuda patternsAndBatches > "$O/test-engine.log" 2>&1
  echo "test_engine_cuda patternsAndBatches rc $?: $(grep -E '^Totals' "$O/test-engine.log")"
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

if want decode; then
  for m in fma tc; do
    fits 90 "the 8:16 and 16:32 decode ($m)" || continue
    a=(--no-tensor-cores)
    [ $m = tc ] && a=(--tensor-cores)
    $cli bench decode --config llama3-8b,qwen3-14b --linear sparse --patterns 8:16,16:32 --batch 2,4,5,6,8 "${a[@]}" \
      --json --out "$O/decode-$m.json" > /dev/null 2>> "$O/decode.log"
    sdw_decode_summary "$O/decode-$m.json" "$m"
    pack
  done
  # Per shape, pattern and batch: the tensor cores against the CUDA cores.
  python3 - "$O" <<'PY' || true
import json, os, sys
rows = {}
for m in ("fma", "tc"):
    f = os.path.join(sys.argv[1], "decode-%s.json" % m)
    if os.path.exists(f):
        for r in json.load(open(f))["rows"]:
            rows[(m, r["config"], r["pattern"], r["batch"])] = r["tokens_per_second"]
for (m, c, p, b), v in sorted(rows.items()):
    if m == "tc" and rows.get(("fma", c, p, b)):
        print("tensor cores / CUDA cores", c, p, "batch", b, "%.1f / %.1f tok/s = %.2f" % (v, rows[("fma", c, p, b)], v / rows[("fma", c, p, b)]))
PY
fi

if want sanitize; then  # 16:32 and 8:16 on the tensor cores under compute-sanitizer: four rows, each tool
  r=tensorCoresMatchReference
  for tool in memcheck racecheck synccheck; do
    fits 60 "compute-sanitizer $tool" || continue
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/tests/test_spmv_cuda \
      "$r:odd words 129x160 b7 bf16 16:32" "$r:split-K 1000x5120 b8 fp16 16:32" "$r:K=32 33x32 b5 bf16 16:32" \
      "$r:split-K 1000x5120 b8 bf16 8:16" > "$O/sanitize-tc-$tool.log" 2>&1
    echo "tensor cores 16:32 / 8:16 $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Totals' "$O/sanitize-tc-$tool.log" | tr '\n' ' ')"
    pack
  done
fi

if want dual; then
  for v in pdl nopdl; do
    fits 100 "the dual-sparse decode ($v)" || continue
    env SDW_SPMSPV_PDL=$([ $v = pdl ] && echo 1 || echo 0) $cli bench decode --config llama3-8b --linear dense,sparse \
      --patterns 2:4,col2:4,col4:8 --batch 1 --activation-sparsity 0.5 --activation-selection thresholds --json \
      --out "$O/dual-thresholds-$v.json" > /dev/null 2>> "$O/decode.log"
    sdw_decode_summary "$O/dual-thresholds-$v.json" "$v"
    pack
  done
fi
if want ctest && fits 90 "ctest -L gpu"; then
  (cd build-gpu && timeout $((deadline - SECONDS)) ctest -L gpu -E test_gpu_story --output-on-failure -V) \
    > "$O/ctest-gpu.log" 2>&1
  echo "ctest -L gpu rc $?:"
  grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|Total Test time|^FAIL" "$O/ctest-gpu.log" | head -30
  pack
fi
echo "done at $SECONDS s"
pack
