#!/usr/bin/env bash
# On the GPU machine, one call: build sdw-cli and the engine's GPU suites, run
# them (test_engine_cuda, test_model_cuda, test_actsparse_cuda, and test_colstats_cuda
# for the calibration sums), profile one
# attention kernel of a Llama-3.1-8B-shaped step with Nsight Compute (detailed
# set), then compute-sanitizer: memcheck, racecheck and synccheck over the
# engine (smallStepsForSanitizers) and the activation-sparsity kernel,
# and racecheck over every data row of test_spmv_cuda's matchesReference in 16
# processes, each row every 4th configuration of its launch space (the rows of a
# space together reach all of it; SPMV_CONFIG_STRIDE=1: all on every row).
# Everything lands in $OUT/results.tgz (or out/gpu).
#   tools/gpu/engine-check.sh
#   ENGINE_CHECK_SANITIZE=0 ...   no sanitizers
#   ENGINE_CHECK_TESTS=0 ENGINE_CHECK_NCU=0 ...   neither the suites nor the profile
#   ENGINE_CHECK_AB=1 ...         first the Llama-3.1-8B batch-1 step as it is and without PDL
#                                 (dense, sparse 2:4)
#   ENGINE_SHARDS=9 ...           smallStepsForSanitizers's rows one process each (not the
#                                 activation-sparsity suite) under every tool
#   SPMV_ROWS_DONE=FILE ...       the SpMV rows already raced clean at this code are left out
#   ENGINE_CHECK_CALIBRATE=1 ...  AR calibration throughput (Llama-3.1-8B shape; re-forward alone also at
#                                 CALIBRATE_BATCHES, default "64 128") and exact vs re-forward
#                                 capture of the same generations of the sample checkpoint in bf16
#   ENGINE_CHECK_SPMSPV_NCU=1 ... an Nsight Compute profile (detailed) of an spMspV kernel, 14336x4096, p_x 0.5,
#                                 with its SASS and each instruction's executed count (tools/gpu/sass_counts.py)
#   ENGINE_CHECK_TIMELINE=1 ...   an Nsight Systems trace of the Llama-3.1-8B batch-1 step in its graph (dense, sparse
#                                 2:4): per step the span, the kernels' busy time, the gaps, each kernel's share
#                                 (tools/gpu/timeline_summary.py); TIMELINE_BATCH=8 TIMELINE_LINEARS="cublas sparse"
#                                 for another batch and other engines
#   ENGINE_CHECK_HF=1 ...         transformers + torch.compile (hf_decode_baseline.py --method graph) and the
#                                 engine's Llama-3.1-8B batch-1 step (cuBLAS, dense, sparse 2:4) in one run
#   ENGINE_CHECK_MMA=1 ...        the 2:4 / 4:8 / 8:16 SpMV at batch 2-8 on the tensor cores: test_spmv_cuda
#                                 tensorCoresMatchReference and the 8:16 batch rows of matchesReference (two
#                                 rows under compute-sanitizer), test_engine_cuda patternsAndBatches, then
#                                 bench kernels at batch 2, 4, 8 with --no-tensor-cores and --tensor-cores
#                                 (median sparse over the best dense per batch and pattern), bench decode
#                                 (Llama-3.1-8B, Qwen3-14B; 2:4, 8:16) at batch 2, 4, 5, 6, 8 those two ways
#                                 and by default
#   ENGINE_CHECK_ATTN=1 ...       the attention's variants side by side: the Llama-3.1-8B batch-1 step (dense, sparse
#                                 2:4) with SDW_ATTENTION=cluster, SDW_ATTENTION_LANES=2 and 4, SDW_ATTENTION=ticket,
#                                 empty (the launch alone) and without the attention; then the attention-only step
#                                 (linears, norms, SwiGLU left out) the same ways
#   ENGINE_CHECK_SPLIT=1 ...      the batch-1 step (dense GEMV, sparse 2:4) whole, with the projections and lm_head
#                                 alone (SDW_ENGINE_SKIP=others) and with everything else alone (=linears), on
#                                 ENGINE_CHECK_SPLIT_CONFIGS (default llama3-8b,qwen3-14b)
#   ENGINE_CHECK_FUSE=1 ...       the norms as projection tails or folded: test_spmv_cuda normTailMatchesLaunch and
#                                 normFoldMatchesLaunch, then the batch-1 step of FUSE_CONFIGS (default "llama3-8b
#                                 qwen3-14b"; dense, sparse 2:4) for FUSE_VARIANTS (default "0 1 ticket fold"):
#                                 SDW_FUSE_NORMS=0 (every norm its own launch, the default), 1 (the tails), ticket
#                                 (the tails' fences and atomics alone), fold (SDW_FOLD_NORMS=1: the norms folded
#                                 into the dense GEMVs around them)
#   ENGINE_CHECK_VARIANTS=1 ...   the Llama-3.1-8B step (cuBLAS, dense, sparse 2:4) at batch 1, 2, 4, 8 under each
#                                 environment of VARIANTS (";"-separated NAME=VAR=V,VAR=V; default: as it is, the
#                                 tensor-core SpMV with its selector table in 8 copies, with programmatic dependent
#                                 launch, the attention always prefetching the value rows), each in its own process, one
#                                 after another; VARIANT_BATCHES (default 1,2,4,8), VARIANT_ARGS more options (e.g. --tensor-cores)
#   ENGINE_CHECK_TARGETS="sdw-cli test_engine_cuda" ...   build only those
#   ENGINE_CHECK_SPMSPV=1 ...     test_spmspv_cuda, the column kernels (2:4, 4:8, dense) under compute-sanitizer
#                                 (not with SPMSPV_SANITIZE=0),
#                                 the committed spMspV benchmark (Llama-3.1-8B and Qwen3-14B shapes, p_x 0-0.75,
#                                 every weight layout), then the launch grid (bench kernels --tune: warps, split-K,
#                                 chunks in flight, bulk copies or not) on four Llama-3.1-8B shapes at p_x 0, 0.5, 0.75;
#                                 SPMSPV_PARTS="tests sanitize" or "bench grid" splits that over two calls
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. tools/gpu/env.sh
top=${OUT:-$root/out/gpu}
O=$top/r
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$O/machine.txt"
echo "commit ${SDW_COMMIT:-unknown}" | tee -a "$O/machine.txt"
# ENGINE_CHECK_TARGETS: fewer targets where the steps asked for need no more (what built still runs)
sdw_gpu_build "$O" ${ENGINE_CHECK_TARGETS:-sdw-cli test_engine_cuda test_model_cuda test_actsparse_cuda test_spmv_cuda \
  test_spmspv_cuda test_colstats_cuda}
if [ "${ENGINE_CHECK_AB:-0}" = 1 ]; then
  for v in default nopdl; do
    args=()
    [ $v = nopdl ] && args=(--no-pdl)
    build-gpu/bin/sdw-cli bench decode --config llama3-8b --linear dense,sparse --patterns 2:4 --batch 1 \
      "${args[@]}" --json --out "$O/ab-$v.json" > /dev/null 2>> "$O/ab.log"
    python3 -c 'import json,sys; [print(sys.argv[2], r["linear"], r["pattern"] or "-", "%.1f tok/s" % r["tokens_per_second"]) for r in json.load(open(sys.argv[1]))["rows"]]' \
      "$O/ab-$v.json" "$v" | tee -a "$O/ab.txt"
  done
fi
if [ "${ENGINE_CHECK_ATTN:-0}" = 1 ]; then
  for part in step attention-only; do
    for v in cluster lanes2 lanes4 ticket empty skip; do
      skip=""
      [ $part = attention-only ] && skip="linears,norms,swiglu"
      [ $v = skip ] && skip="${skip:+$skip,}attention"
      att=$v lanes=""
      case $v in skip) att="" ;; lanes*) att="" lanes=${v#lanes} ;; esac
      [ $part = attention-only ] && [ $v = skip ] && continue
      lin="dense,sparse"
      [ $part = attention-only ] && lin=dense
      SDW_ENGINE_SKIP=$skip SDW_ATTENTION=$att SDW_ATTENTION_LANES=$lanes build-gpu/bin/sdw-cli bench decode --config llama3-8b --linear $lin \
        --patterns 2:4 --batch 1 --json --out "$O/attn-$part-$v.json" > /dev/null 2>> "$O/attn.log"
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(sys.argv[2], r["linear"], r.get("pattern") or "-", "%.1f tok/s" % r["tokens_per_second"], "%.1f us/step" % (1e6 / r["tokens_per_second"])) for r in d.get("rows", [d])]' \
        "$O/attn-$part-$v.json" "$part $v" | tee -a "$O/attn.txt"
    done
  done
fi
if [ "${ENGINE_CHECK_SPLIT:-0}" = 1 ]; then  # the batch-1 step, the projections alone, the rest alone
  for part in step projections rest; do
    skip=""
    [ $part = projections ] && skip=others
    [ $part = rest ] && skip=linears
    SDW_ENGINE_SKIP=$skip build-gpu/bin/sdw-cli bench decode --config ${ENGINE_CHECK_SPLIT_CONFIGS:-llama3-8b,qwen3-14b} \
      --linear dense,sparse --patterns 2:4 --batch 1 --json --out "$O/split-$part.json" > /dev/null 2>> "$O/split.log"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(sys.argv[2], r["config"], r["linear"], r.get("pattern") or "-", "%.1f tok/s" % r["tokens_per_second"], "%.1f us/step" % (1e6 / r["tokens_per_second"]), "limit %.1f" % r["limit_tokens_per_second"]) for r in d["rows"]]' \
      "$O/split-$part.json" "$part" | tee -a "$O/split.txt"
  done
fi
if [ "${ENGINE_CHECK_FUSE:-0}" = 1 ]; then
  build-gpu/tests/test_spmv_cuda normTailMatchesLaunch normFoldMatchesLaunch > "$O/test-spmv-normtail.log" 2>&1
  grep -E "Totals|FAIL!|Loc:|QINFO" "$O/test-spmv-normtail.log" | head -30
  for cfg in ${FUSE_CONFIGS:-llama3-8b qwen3-14b}; do
    for v in ${FUSE_VARIANTS:-0 1 ticket fold}; do
      # fold: SDW_FOLD_NORMS=1 (the norms folded into the dense GEMVs around them; the
      # sparse step has nothing to fold and is timed again as it is)
      if [ "$v" = fold ]; then f=1; t=0; else f=0; t=$v; fi
      SDW_FUSE_NORMS=$t SDW_FOLD_NORMS=$f build-gpu/bin/sdw-cli bench decode --config "$cfg" --linear dense,sparse \
        --patterns 2:4 --batch 1 --json --out "$O/fuse-$cfg-$v.json" > /dev/null 2>> "$O/fuse.log"
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(sys.argv[2], r["linear"], r.get("pattern") or "-", "%.1f tok/s" % r["tokens_per_second"], "%.1f us/step" % (1e6 / r["tokens_per_second"]), "limit %.1f" % r["limit_tokens_per_second"]) for r in d.get("rows", [d])]' \
        "$O/fuse-$cfg-$v.json" "$cfg fuse=$v" | tee -a "$O/fuse.txt"
    done
  done
fi
if [ "${ENGINE_CHECK_VARIANTS:-0}" = 1 ]; then
  IFS=';' read -r -a vs <<< "${VARIANTS:-default=;tc-selcopies=SDW_TC_SEL=copies;tc-pdl=SDW_TC_PDL=1;values=SDW_ATTENTION_PV=1}"
  for v in "${vs[@]}"; do
    name=${v%%=*} envs=${v#*=}
    (IFS=','; for kv in $envs; do [ -n "$kv" ] && export "$kv"; done
     build-gpu/bin/sdw-cli bench decode --config llama3-8b --linear cublas,dense,sparse --patterns 2:4 --batch "${VARIANT_BATCHES:-1,2,4,8}" \
       ${VARIANT_ARGS:-} --json --out "$O/variant-$name.json" > /dev/null 2>> "$O/variants.log")
    python3 -c 'import json,sys; print(sys.argv[2], " ".join("%s%s b%d %.1f" % (r["linear"], (" " + r["pattern"]) if r["pattern"] else "", r["batch"], r["tokens_per_second"]) for r in json.load(open(sys.argv[1]))["rows"]))' \
      "$O/variant-$name.json" "$name" | tee -a "$O/variants.txt"
  done
fi
if [ "${ENGINE_CHECK_TESTS:-1}" = 1 ]; then
  (cd build-gpu && timeout 240 ctest -R "test_engine_cuda|test_model_cuda|test_actsparse_cuda|test_colstats_cuda" --output-on-failure -V) \
    > "$O/ctest-decode.log" 2>&1
  grep -E "Totals|FAIL!|Loc:|Test +#" "$O/ctest-decode.log" | cut -c1-200 | head -30
fi
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$ncu" ] && [ "${ENGINE_CHECK_NCU:-1}" = 1 ]; then
  # One attention launch of the step (detailed set, warp states, per-instruction stall samples).
  timeout 150 "$ncu" --graph-profiling node --set detailed --section WarpStateStats --section SchedulerStats \
    --section SourceCounters --import-source no -k regex:attentionKernel -s 40 -c 1 --cache-control none \
    --clock-control none -o /tmp/ncu-attention --force-overwrite \
    build-gpu/bin/sdw-cli bench decode --config llama3-8b --linear dense --batch 1 --tokens 2 \
    --warmup 1 > "$O/ncu-attention-run.txt" 2>&1
  "$ncu" -i /tmp/ncu-attention.ncu-rep --page details > "$O/ncu-attention.txt" 2>&1
  "$ncu" -i /tmp/ncu-attention.ncu-rep --page source --print-source sass --csv > "$O/ncu-attention-sass.csv" 2>&1
  grep -E "Grid Size|Block Size|Duration|Registers Per|DRAM Throughput|Achieved Occupancy|Dynamic Shared|Warp Cycles Per|Issued Warp|No Eligible|Elapsed Cycles|SM Active Cycles|stalled|Stall" \
    "$O/ncu-attention.txt" | cut -c1-160 | head -40
  python3 tools/gpu/ncu_stalls.py "$O/ncu-attention-sass.csv" | tee "$O/ncu-attention-stalls.txt"
fi
nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ "${ENGINE_CHECK_TIMELINE:-0}" = 1 ]; then
  if [ -z "$nsys" ]; then
    echo "timeline: nsys not found" | tee "$O/timeline.txt"
  else
    for lin in ${TIMELINE_LINEARS:-dense sparse}; do
      timeout 150 "$nsys" profile --cuda-graph-trace=node --trace=cuda -o "/tmp/step-$lin" --force-overwrite true \
        build-gpu/bin/sdw-cli bench decode --config llama3-8b --linear "$lin" --patterns 2:4 \
        --batch "${TIMELINE_BATCH:-1}" --tokens 6 --warmup 3 > "$O/nsys-$lin.log" 2>&1
      "$nsys" stats --report cuda_gpu_trace --format csv --output "/tmp/trace-$lin" "/tmp/step-$lin.nsys-rep" \
        >> "$O/nsys-$lin.log" 2>&1
      trace=$(ls /tmp/trace-"$lin"*.csv 2>/dev/null | head -1)
      [ -n "$trace" ] && cp "$trace" "$O/trace-$lin.csv" && python3 tools/gpu/timeline_summary.py "$trace" | tee "$O/timeline-$lin.txt"
    done
  fi
fi
# AR calibration (issue: 1M decode tokens in <= 10 min, bf16 re-forward within 1e-2 of exact
# capture on a real checkpoint): the Llama-3.1-8B-shape throughput, then exact against
# re-forward capture of the sample checkpoint in bf16 on the GPU, greedy.
if [ "${ENGINE_CHECK_CALIBRATE:-0}" = 1 ]; then
  build-gpu/bin/sdw-cli bench calibrate --config llama3-8b --tokens ${CALIBRATE_TOKENS:-8192} --exact-tokens 128 \
    --json > "$O/calibrate-llama3-8b.json" 2> "$O/calibrate.log"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({k: v for k, v in d.items() if not isinstance(v, (list, dict))})' \
    "$O/calibrate-llama3-8b.json"
  python3 -c 'import json,sys; [print(c["capture"], c["engine"], "per call:", ["%.1f s" % t for t in c["generate_seconds_per_call"]], c["generate_phase_seconds"]) for c in json.load(open(sys.argv[1]))["captures"]]' \
    "$O/calibrate-llama3-8b.json"
  # Re-forward capture alone at larger batches (CALIBRATE_BATCHES), with where the
  # generation's host time goes (issuing steps, device + readback, drawing tokens).
  for b in ${CALIBRATE_BATCHES:-64 128}; do
    build-gpu/bin/sdw-cli bench calibrate --config llama3-8b --capture reforward --batch "$b" \
      --tokens $((b * 127 * ${CALIBRATE_CALLS:-4})) --json > "$O/calibrate-llama3-8b-b$b.json" 2>> "$O/calibrate.log"
    python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["captures"][0]; print("re-forward batch", c["batch"], "%.0f tok/s" % c["decode_tokens_per_second"], "1M in %.0f s" % c["extrapolated_seconds"], "generate %.1f s forward %.1f s" % (c["generate_seconds"], c["forward_seconds"]), c["generate_phase_seconds"])' \
      "$O/calibrate-llama3-8b-b$b.json"
  done
  # The sample checkpoint's own weights: exact capture, then the same generations re-forwarded.
  build-gpu/bin/sdw-cli bench calibrate --model samples/model/brown-llama --dtype bfloat16 --tokens 4096 \
    --exact-tokens 4096 --exact-batch 8 --batch 16 --json > "$O/calibrate-brown-llama-bf16.json" 2>> "$O/calibrate.log"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("brown-llama bf16 exact vs re-forward:", d.get("exact_vs_reforward_rel_frobenius"))' \
    "$O/calibrate-brown-llama-bf16.json"
fi
# The spMspV kernel on the Llama-3.1-8B gate shape at p_x 0.5 (docs/kernels.md: latency-bound).
if [ -n "$ncu" ] && [ "${ENGINE_CHECK_SPMSPV_NCU:-0}" = 1 ]; then
  # One launch (detailed set and per-instruction counters): its page of figures, its SASS
  # with each instruction's executed count (summed by opcode: tools/gpu/sass_counts.py).
  # SPMSPV_NCU_KERNEL, a regex on the mangled name: spmspvColumnKernelI13__nv_bfloat16Li4E (default: the
  # column 2:4 layout's), ...Li8E (column 4:8), ...Li1E (column-major dense) or spmspvKernel (the bitmask one)
  timeout 150 "$ncu" --set detailed --section SourceCounters --import-source no --kernel-name-base mangled \
    -k "regex:${SPMSPV_NCU_KERNEL:-spmspvColumnKernelI13__nv_bfloat16Li4E}" -s 5 -c 1 \
    --cache-control none --clock-control none -o /tmp/ncu-spmspv --force-overwrite \
    build-gpu/bin/sdw-cli bench kernels --shapes 14336x4096 --patterns 2:4 --activation-sparsity 0.5 --repeats 1 \
    --no-layer --no-cusparselt > "$O/ncu-spmspv-run.txt" 2>&1
  "$ncu" -i /tmp/ncu-spmspv.ncu-rep --page details > "$O/ncu-spmspv.txt" 2>&1
  "$ncu" -i /tmp/ncu-spmspv.ncu-rep --page source --print-source sass --csv > "$O/ncu-spmspv-sass.csv" 2>&1
  grep -E "Grid Size|Block Size|Duration|Registers Per|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Dynamic Shared|Executed Ipc|L2 Hit|Elapsed Cycles|SM Active|Waves Per SM" \
    "$O/ncu-spmspv.txt" | head -24
  python3 tools/gpu/sass_counts.py "$O/ncu-spmspv-sass.csv" | tee "$O/ncu-spmspv-counts.txt" | tail -40
fi
# SPMSPV_PARTS: which of "tests sanitize bench grid" ENGINE_CHECK_SPMSPV=1 runs (default all; the tests
# and sanitizers alone fit one call, the benchmark and grid another).
spmspv_part() { case " ${SPMSPV_PARTS:-tests sanitize bench grid} " in *" $1 "*) return 0 ;; esac; return 1; }
if [ "${ENGINE_CHECK_SPMSPV:-0}" = 1 ] && spmspv_part tests; then
  # The two reference suites in processes of their own (each Llama-shaped row packs its
  # matrix on one host core), the rest in a third.
  t=build-gpu/tests/test_spmspv_cuda
  others=$($t -functions | sed 's/()//' | grep -v -x -e matchesReference -e columnMatchesReference | tr '\n' ' ')
  timeout 420 $t matchesReference > "$O/test-spmspv-bitmask.log" 2>&1 &
  timeout 420 $t columnMatchesReference > "$O/test-spmspv-column.log" 2>&1 &
  timeout 420 $t $others > "$O/test-spmspv-other.log" 2>&1 &
  wait
  cat "$O"/test-spmspv-{bitmask,column,other}.log > "$O/ctest-spmspv.log"
  grep -E "Totals|FAIL!|Loc:" "$O/ctest-spmspv.log" | cut -c1-200 | head -20
fi
if [ "${ENGINE_CHECK_SPMSPV:-0}" = 1 ]; then
  # The column kernels under compute-sanitizer (a small row, a split-K row, the same reduced in a cluster;
  # column 4:8 and dense a split-K row each).
  if [ "${SPMSPV_SANITIZE:-1}" = 1 ] && spmspv_part sanitize; then
    for tool in memcheck racecheck synccheck; do
      timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/tests/test_spmspv_cuda \
        "columnMatchesReference:col24 300x33 p=0.50 bf16" "columnMatchesReference:col24 600x4000 p=0.50 fp16" \
        "columnMatchesReference:col24 600x4000 p=0.50 fp16 cluster" \
        "columnMatchesReference:col48 600x4000 p=0.50 bf16" "columnMatchesReference:dense 600x4000 p=0.50 bf16" \
        > "$O/sanitize-column-$tool.log" 2>&1
      echo "column $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Totals' "$O/sanitize-column-$tool.log" | tr '\n' ' ')"
    done
  fi
  # The committed command with the launch defaults: every weight layout (50%, col2:4, col4:8, dense).
  if spmspv_part bench; then
    build-gpu/bin/sdw-cli bench kernels --shapes llama3-8b,qwen3-14b --batch 1 --patterns 2:4 \
      --activation-sparsity 0,0.25,0.5,0.75 --json --out "$O/spmspv.json" > /dev/null 2>> "$O/spmspv-grid.log"
    python3 -c 'import json,sys
for a in json.load(open(sys.argv[1])).get("activation_summary", []): print(a)' "$O/spmspv.json"
  fi
  spmspv_part grid && build-gpu/bin/sdw-cli bench kernels --shapes 14336x4096,4096x14336,4096x4096,1024x4096 --batch 1 --patterns 2:4 \
    --activation-sparsity 0,0.5,0.75 --tune --tuning-out "$O/spmspv-grid-tuning.json" --no-layer --no-cusparselt \
    --json --out "$O/spmspv-grid.json" > /dev/null 2> "$O/spmspv-grid.log"
  spmspv_part grid && python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["kernel"] == "spmspv": print("%dx%d %s p_x %.2f: %.1f us, %.2fx dense, %s" % (r["rows"], r["cols"], r["pattern"], r["activation_sparsity"], r["us"], r.get("speedup_vs_dense", 0), r["config"]))' \
    "$O/spmspv-grid.json"
fi
# The library baseline in the same run as the engine: transformers + torch.compile (the
# compiled step captured by hand into one CUDA graph: tools/gpu/hf_decode_baseline.py
# --method graph, HF_METHOD to change it), then the engine's Llama-3.1-8B batch-1 step.
if [ "${ENGINE_CHECK_HF:-0}" = 1 ]; then
  timeout ${HF_TIMEOUT:-240} python3 tools/gpu/hf_decode_baseline.py "$O/hf-decode-llama3-8b.json" \
    --method "${HF_METHOD:-graph}" --config resources/configs/llama-3.1-8b.json > "$O/hf.log" 2>&1 \
    && tail -1 "$O/hf.log" || { echo "transformers baseline failed:"; grep -E "Error|error|Assert" "$O/hf.log" | head -5 | cut -c1-300; }
  build-gpu/bin/sdw-cli bench decode --config llama3-8b --linear cublas,dense,sparse --patterns 2:4 --batch 1 \
    --json --out "$O/decode-b1-with-hf.json" > /dev/null 2>> "$O/hf.log"
  python3 -c 'import json,sys; [print(r["linear"], r["pattern"] or "-", "%.1f tok/s" % r["tokens_per_second"]) for r in json.load(open(sys.argv[1]))["rows"]]' \
    "$O/decode-b1-with-hf.json"
fi
# The SpMV at batch 2-8 on the tensor cores (2:4, 4:8): its tests (and compute-sanitizer's
# memcheck, racecheck and synccheck on two of its rows), then the kernel rows of the
# Llama-3.1-8B and Qwen3-14B shapes at batch 2, 4, 8 on the CUDA cores and on the tensor
# cores, then the engine end to end the same two ways, cuBLAS and our dense GEMV beside it.
if [ "${ENGINE_CHECK_MMA:-0}" = 1 ]; then
  # and the CUDA-core kernel's 8:16 rows at batch 2-8 (refused before 2026-12-06: tcM off the tensor cores)
  build-gpu/tests/test_spmv_cuda tensorCoresMatchReference $(for b in 2 3 4 5 6 7 8; do for d in bf16 fp16; do
    echo "matchesReference:batch $b 101x1024 $d"; done; done) > "$O/test-spmv-tc.log" 2>&1
  grep -E "Totals|FAIL!|Loc:" "$O/test-spmv-tc.log" | cut -c1-200 | head -20
  build-gpu/tests/test_engine_cuda patternsAndBatches > "$O/test-engine-tc.log" 2>&1
  grep -E "Totals|FAIL!|Loc:" "$O/test-engine-tc.log" | cut -c1-200 | head -20
  for tool in memcheck racecheck synccheck; do
    for row in "split-K 1000x5120 b8 bf16 2:4" "odd words 129x160 b7 fp16 4:8"; do
      timeout 240 compute-sanitizer --tool $tool build-gpu/tests/test_spmv_cuda "tensorCoresMatchReference:$row" \
        > "$O/sanitize-tc-$tool-${row%% *}.log" 2>&1
      echo "$tool [$row]: rc $? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Totals" "$O/sanitize-tc-$tool-${row%% *}.log" | tr '\n' ' ')"
    done
  done
  for tc in fma tc; do
    args=(--no-tensor-cores)
    [ $tc = tc ] && args=(--tensor-cores)
    build-gpu/bin/sdw-cli bench kernels --shapes llama3-8b,qwen3-14b --batch 2,4,8 --patterns 2:4,4:8,8:16 --no-layer \
      --no-cusparselt "${args[@]}" --json --out "$O/spmv-batch-$tc.json" > /dev/null 2>> "$O/spmv-batch.log"
  done
  for tc in fma tc default; do  # the engine end to end, cuBLAS and our dense GEMV beside it (8:16: from batch 6)
    args=(--no-tensor-cores)
    [ $tc = tc ] && args=(--tensor-cores)
    [ $tc = default ] && args=()
    build-gpu/bin/sdw-cli bench decode --config llama3-8b,qwen3-14b --linear cublas,dense,sparse --patterns 2:4,8:16 \
      --batch 2,4,5,6,8 \
      "${args[@]}" --json --out "$O/decode-batch-$tc.json" > /dev/null 2>> "$O/spmv-batch.log"
    python3 -c 'import json,sys; [print(sys.argv[2], r["linear"], r["pattern"] or "-", "batch", r["batch"], "%.1f tok/s" % r["tokens_per_second"]) for r in json.load(open(sys.argv[1]))["rows"]]' \
      "$O/decode-batch-$tc.json" "$tc"
  done
  python3 - "$O/spmv-batch-fma.json" "$O/spmv-batch-tc.json" <<'PY'
import json, statistics, sys
for f in sys.argv[1:]:
    rows = json.load(open(f))["rows"]
    for b, pattern in ((b, p) for b in (2, 4, 8) for p in ("2:4", "4:8", "8:16")):
        sp = [r for r in rows if r["kernel"] == "sparse" and r["batch"] == b and r["pattern"] == pattern]
        if not sp: continue
        best = {}
        for r in rows:
            if r["kernel"] in ("cublas", "dense") and r["batch"] == b:
                k = (r["model"], r["module"])
                best[k] = min(best.get(k, 1e9), r["us"])
        ratios = [best[(r["model"], r["module"])] / r["us"] for r in sp if (r["model"], r["module"]) in best]
        print(f.split("/")[-1], "batch", b, pattern, "median sparse over the best dense: %.2fx" % statistics.median(ratios),
              "configs", sorted(set(r["config"].split(" |")[0] for r in sp))[:3])
PY
fi
if [ "${ENGINE_CHECK_SANITIZE:-1}" = 1 ]; then
  SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-240} OUT=$O/s1 SANITIZE_TOOLS="memcheck racecheck synccheck" \
    SANITIZE_SUITES="${ENGINE_SUITES-test_engine_cuda@smallStepsForSanitizers test_actsparse_cuda@rowsMatchEagerFunctions}" \
    SANITIZE_SHARDS="${ENGINE_SHARDS:+test_engine_cuda:smallStepsForSanitizers:$ENGINE_SHARDS}" \
    tools/gpu/sanitize.sh > /dev/null 2>&1 &
  SANITIZE_ROWS_DONE=${SPMV_ROWS_DONE:-} SDW_SPMV_CONFIG_STRIDE=${SPMV_CONFIG_STRIDE:-4} SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-240} OUT=$O/s2 SANITIZE_TOOLS=racecheck SANITIZE_SUITES="" \
    SANITIZE_SHARDS="test_spmv_cuda:matchesReference:${SPMV_SHARDS:-16}" tools/gpu/sanitize.sh > /dev/null 2>&1 &
  wait
  cat "$O/s1/sanitize.log" "$O/s2/sanitize.log"
fi
tar -C "$top" -czf "$top/results.tgz" r && rm -rf "$O"
