#!/usr/bin/env bash
# On the GPU machine: build sdw-cli and the engine's GPU suites (nvcc, the pip
# LibTorch, Qt from .debs/ as tools/gpu/check.sh does), run the decode engine's
# suites, then the end-to-end decode benchmark. Logs and JSON go to $OUT (or out/gpu).
#
#   tools/gpu/decode.sh                 suites + Llama-3.1-8B shape, every engine, batch 1 and 8
#   DECODE_FULL=1 tools/gpu/decode.sh   suites + the committed grid (bench/results/h200-decode-e2e.json, written as
#                                       <card>-decode-e2e.json:
#                                       3 shapes x cublas, dense, sparse x 4 patterns x batch 1, 2, 4, 8)
#                                       and transformers + torch.compile on the Llama-3.1-8B shape
#   DECODE_BREAKDOWN=1 ...              Llama-3.1-8B batch 1 with parts of the step left out
#   DECODE_DUAL=1 ...                   dual sparsity: the dense engine and the spMspV engine (col2:4, col4:8) on the
#                                       Llama-3.1-8B and Qwen3-14B shapes at batch 1, at each p_x of DUAL_PX
#                                       (default "0 0.5 0.75"), one JSON each; DUAL_CONFIGS another list of shapes;
#                                       DUAL_SELECTION "topk thresholds": also (p_x > 0) with fixed per-layer
#                                       thresholds from a prefill (TEAL; dual-px<P>-thresholds.json)
#   DECODE_TESTS=0 ...                  benchmarks only
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
mkdir -p "$out"
. tools/gpu/env.sh
status=0
targets="sdw-cli"  # the suites only where they run
[ "${DECODE_TESTS:-1}" = 1 ] && targets="$targets test_engine_cuda test_model_cuda"
sdw_gpu_build "$out" $targets || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/machine.txt"
if [ "${DECODE_TESTS:-1}" = 1 ]; then
  (cd build-gpu && ctest -R "test_engine_cuda|test_model_cuda" --output-on-failure -V) > "$out/ctest-decode.log" 2>&1 || status=1
  grep -E "QINFO|PASS|FAIL|Totals|Loc:" "$out/ctest-decode.log" | cut -c1-200 | grep -vE "^[0-9]+: (PASS|QINFO)" | tail -40
fi
bench() {  # out-file, args...
  local f=$1; shift
  echo "== sdw-cli bench decode $*" | tee -a "$out/bench.log"
  build-gpu/bin/sdw-cli bench decode "$@" --json --out "$out/$f" > /dev/null 2>> "$out/bench.log" || { echo "bench failed"; status=1; }
  python3 - "$out/$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    print(f'{r["config"]:13} {r["linear"]:6} {r["pattern"] or "-":6} b{r["batch"]}  {r["tokens_per_second"]:8.1f} tok/s  '
          f'{r["gb_per_s"]:7.0f} GB/s  {100*r["ratio_to_bandwidth_limit"]:5.1f}% of limit  {r["gpu_memory_bytes"]/1e9:6.2f} GB')
for s in d["summary"]:
    sp = s.get("sparse", {})
    print(s["config"], "b%d" % s["batch"], "best dense", s.get("best_dense_linear"),
          " ".join(f'{p}:{e.get("speedup_over_dense_engine", 0):.2f}x/{e.get("speedup_over_best_dense", 0):.2f}x(lim {e.get("speedup_limit", 0):.2f})'
                   for p, e in sp.items()))
PY
}
if [ "${DECODE_BREAKDOWN:-0}" = 1 ]; then
  # Where a batch-1 step's time goes: the Llama-3.1-8B shape, dense GEMV and sparse 2:4,
  # with parts of the captured step left out (SDW_ENGINE_SKIP, docs/decode-engine.md).
  for skip in none linears others attention norms swiglu; do
    echo "== SDW_ENGINE_SKIP=$skip" | tee -a "$out/bench.log"
    if [ "$skip" = none ]; then v=; else v=$skip; fi
    SDW_ENGINE_SKIP=$v bench "breakdown-$skip.json" --config llama3-8b --linear dense,sparse --patterns 2:4 --batch 1 \
      ${DECODE_ARGS:-}
  done
  # (Variants of the whole step side by side: ENGINE_CHECK_AB=1 tools/gpu/engine-check.sh.)
  # Each non-projection kernel on its own (Nsight Compute, warm caches, unlocked clocks):
  # durations of the kernels of a few captured steps.
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -n "$ncu" ]; then
    timeout 240 "$ncu" --graph-profiling node --cache-control none --clock-control none \
      -k "regex:attention|addRmsNorm|gatedMul|embed|argmax|Norm|denseGemv" -c 60 --metrics gpu__time_duration.sum \
      build-gpu/bin/sdw-cli bench decode --config llama3-8b --linear dense --batch 1 --tokens 2 --warmup 1 \
      > "$out/ncu-step.txt" 2>&1 || echo "ncu failed (exit $?)"
    python3 - "$out/ncu-step.txt" <<'PY' | tee -a "$out/bench.log"
import re, statistics, sys
cur, times = None, {}
for line in open(sys.argv[1], errors="replace"):
    m = None
    if ", Context " in line and "Stream" in line:
        m = re.search(r"(\w+)\s*(<[^()]*>)?\s*(\([^)]*\))?\s*\(\d+, \d+, \d+\)x", line.replace("(anonymous namespace)::", ""))
    if m:
        cur = m.group(1)
    m = re.search(r"gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)", line)
    if m and cur:
        v = float(m.group(2).replace(",", ""))
        v = v / 1000 if m.group(1) == "nsecond" else v * 1000 if m.group(1) == "msecond" else v
        times.setdefault(cur, []).append(v)
for k, v in sorted(times.items()):
    print(f"ncu {k:28} n={len(v):3}  median {statistics.median(v):7.2f} us  min {min(v):7.2f}  max {max(v):7.2f}")
PY
  else
    echo "no ncu on this machine"
  fi
  # One archive for the breakdown's files (a call brings back only a few files).
  (cd "$out" && tar -czf breakdown.tgz breakdown-*.json ncu-step.txt 2>/dev/null && rm -f breakdown-*.json ncu-step.txt)
elif [ "${DECODE_DUAL:-0}" = 1 ]; then
  for px in ${DUAL_PX:-0 0.5 0.75}; do
    for sel in ${DUAL_SELECTION:-topk}; do
      [ "$sel" = thresholds ] && [ "$px" = 0 ] && continue
      name="dual-px$px.json"
      [ "$sel" = thresholds ] && name="dual-px$px-thresholds.json"
      bench "$name" --config "${DUAL_CONFIGS:-llama3-8b,qwen3-14b}" --linear dense,sparse --patterns 2:4,col2:4,col4:8 --batch 1 \
        --activation-sparsity "$px" --activation-selection "$sel" ${DECODE_ARGS:-}
    done
  done
elif [ "${DECODE_FULL:-0}" = 1 ]; then
  # Named after the card (h200-decode-e2e.json is the committed file; an H100's run is not it).
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
    *H200*) card=h200 ;; *H100*) card=h100 ;; *) card=gpu ;;
  esac
  bench $card-decode-e2e.json --config llama3-8b,qwen3-14b,qwen3-32b --linear cublas,dense,sparse \
    --patterns 2:4,4:8,8:16,16:32 --batch 1,2,4,8
  # The compiled step captured into a CUDA graph by hand first; where that fails, the
  # step under torch.compile's own CUDA graphs (mode reduce-overhead: a device-side
  # assert with transformers 5.17), then transformers' generate() recipe.
  for method in ${HF_METHODS:-graph step generate}; do
    timeout ${HF_TIMEOUT:-200} python3 tools/gpu/hf_decode_baseline.py "$out/hf-decode-llama3-8b.json" --method "$method" \
      --config resources/configs/llama-3.1-8b.json > "$out/hf-$method.log" 2>&1 && { tail -1 "$out/hf-$method.log"; break; }
    grep -m1 -E "Error|error" "$out/hf-$method.log" | cut -c1-300
    echo "transformers baseline ($method) failed: $out/hf-$method.log"
  done
  [ -f "$out/hf-decode-llama3-8b.json" ] || status=1
else
  bench decode-quick.json --config llama3-8b --linear cublas,dense,sparse --patterns 2:4,16:32 --batch 1,8 ${DECODE_ARGS:-}
fi
echo "== status $status"
exit $status
