#!/usr/bin/env bash
# On the GPU machine, in one pass: the standalone probe (correctness check with
# guard regions, HBM read bandwidth, launch-configuration sweep -> tuning JSON,
# SASS instruction mix of the batch-1 SpMV kernel) runs while the engine builds;
# then `ctest -L gpu -R spmv` and the kernel benchmark with the fresh tuning.
# Everything lands in $OUT (or out/gpu); each step has a time limit so partial
# results survive. The .debs/ folder (tools/gpu/fetch-deps.sh) must travel along.
#
#   tools/gpu/tune.sh            # TUNE_BUDGET_S=290 by default (seconds of wall time)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
mkdir -p "$out"
budget=${TUNE_BUDGET_S:-290}
t0=$SECONDS
left() { echo $((budget - (SECONDS - t0))); }
log() { echo "[$((SECONDS - t0))s] $*" | tee -a "$out/summary.log"; }

deps=/opt/sdw-deps
mkdir -p "$deps"
for f in .debs/*.deb; do dpkg -x "$f" "$deps"; done
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export TORCH_CUDA_ARCH_LIST="9.0"
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
log "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) / $(nvcc --version | tail -1)"

# 1. Engine build (background): only what the SpMV suite and the benchmark need.
jobs=$(($(nproc) > 4 ? $(nproc) - 3 : 2))
(
  cmake --preset gpu -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/usr" -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
    -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/build.log" 2>&1 &&
    cmake --build --preset gpu -j "$jobs" --target sdw-cli test_spmv_cuda >>"$out/build.log" 2>&1
  echo "build rc $?" >>"$out/build.log"
) &
build_pid=$!

# 2. Probe: compile (kernels in parallel), SASS mix, check + sweep.
mkdir -p /tmp/probe
spmv_units=$(cd gpu/kernels && ls spmv*.cu | sed "s/\.cu$//")  # spmv.cu (host side) and spmv_b*.cu (per batch)
for f in $spmv_units gemv hbm benchfill; do
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. -c "gpu/kernels/$f.cu" -o "/tmp/probe/$f.o" &
done
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. -c tools/gpu/spmv_probe.cu -o /tmp/probe/main.o
wait $(jobs -p | grep -v "^$build_pid$")
nvcc -arch=sm_90 /tmp/probe/*.o -o /tmp/probe/probe && log "probe built" || log "probe build FAILED"
if command -v cuobjdump >/dev/null; then
  for f in $spmv_units; do cuobjdump --dump-sass "/tmp/probe/$f.o"; done >/tmp/probe/spmv.sass 2>/dev/null
  # Opcode histogram of the batch-1 bf16 kernel (unroll 2 and 4, workspace epilogue; unroll 1
  # and 3, cluster epilogue), the batch-2 bf16 kernel (unroll 1) and the batch-1 bulk-copy
  # pipeline (4 stages x 1 word).
  for k in 'bitmaskSpmvB1KernelI13__nv_bfloat16Li2ELb0ELb0E' 'bitmaskSpmvB1KernelI13__nv_bfloat16Li4ELb0ELb0E' \
    'bitmaskSpmvB1KernelI13__nv_bfloat16Li1ELb1ELb0E' 'bitmaskSpmvB1KernelI13__nv_bfloat16Li3ELb1ELb0E' \
    'bitmaskSpmvKernelI13__nv_bfloat16Li2ELi2ELi1ELb0E' 'bitmaskSpmvB1BulkKernelI13__nv_bfloat16Li1ELi4ELb0ELb0E'; do
    echo "== $k"
    awk -v k="$k" '/Function :/ {on = index($0, k) > 0} on && /\/\*[0-9a-f]{4}\*\// {print}' /tmp/probe/spmv.sass |
      sed -E 's/.*\*\/ +(@!?U?P[0-9T] +)?([A-Z0-9_]+)[. ].*/\2/; s/.*\*\/ +(@!?U?P[0-9T] +)?([A-Z0-9_]+);.*/\2/' |
      sort | uniq -c | sort -rn | head -30
    echo "total: $(awk -v k="$k" '/Function :/ {on = index($0, k) > 0} on && /\/\*[0-9a-f]{4}\*\// {n++} END {print n}' /tmp/probe/spmv.sass)"
  done >"$out/sass-mix.txt" 2>&1
  # The listings of the batch-1 bf16 unroll-2 kernel (inner loop) and of the unroll-1 cluster
  # kernel (the distributed-shared-memory epilogue).
  awk '/Function :/ {on = index($0, "bitmaskSpmvB1KernelI13__nv_bfloat16Li2ELb0ELb0E") > 0} on' /tmp/probe/spmv.sass |
    grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed -E 's@ */\* 0x[0-9a-f]+ \*/@@' >>"$out/sass-mix.txt"
  awk '/Function :/ {on = index($0, "bitmaskSpmvB1KernelI13__nv_bfloat16Li1ELb1ELb0E") > 0} on' /tmp/probe/spmv.sass |
    grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed -E 's@ */\* 0x[0-9a-f]+ \*/@@' >"$out/sass-b1-cluster.txt"
fi
# PROBE_AB="-DNAME ...": a second probe (spmv.cu and the probe's main) built with those defines (a variant kept
# under a macro, e.g. -DSDW_SPMV_FLO_DECODE at a957f82) runs after the first (batch 1 only, PROBE_AB_S seconds at
# most), so the two are compared in one session on one machine (probe-ab.log).
ab_s=0
if [ -n "${PROBE_AB:-}" ] && [ -x /tmp/probe/probe ]; then
  ab_s=${PROBE_AB_S:-110}
  mkdir -p /tmp/probe-ab
  for f in $spmv_units; do nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. $PROBE_AB -c "gpu/kernels/$f.cu" -o "/tmp/probe-ab/$f.o" & done
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. $PROBE_AB -c tools/gpu/spmv_probe.cu -o /tmp/probe-ab/main.o
  wait $(jobs -p | grep -v "^$build_pid$") && nvcc -arch=sm_90 /tmp/probe-ab/*.o \
    $(ls /tmp/probe/*.o | grep -v -e "/spmv[_.]" -e /main.o) -o /tmp/probe-ab/probe &&
    log "probe with $PROBE_AB built" || ab_s=0
fi
if [ -x /tmp/probe/probe ]; then
  # PROBE_MODE=quick: batch 1 only (entries of other batches are kept from the committed table).
  t=$(($(left) - 120 - ab_s)); [ "$t" -lt 40 ] && t=40
  timeout "$t" /tmp/probe/probe "$out/tuning.json" ${PROBE_MODE:-} >"$out/probe.log" 2>&1
  log "probe rc $? ($(grep -c . "$out/probe.log") lines)"
fi
if [ "$ab_s" -gt 0 ]; then
  { echo "probe built with: $PROBE_AB"; timeout "$ab_s" /tmp/probe-ab/probe /tmp/probe-ab/tuning.json quick; } \
    >"$out/probe-ab.log" 2>&1
  log "probe ($PROBE_AB) rc $? ($(grep -c . "$out/probe-ab.log") lines)"
fi

# 3. Engine: SpMV suite and the benchmark.
wait "$build_pid"
log "$(tail -1 "$out/build.log")"
if [ -x build-gpu/bin/sdw-cli ]; then
  tuning=resources/tuning/nvidia-h200.json
  if [ -s "$out/tuning.json" ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$out/tuning.json"; then
    python3 - "$out/tuning.json" "$tuning" <<'EOF'
import json, sys
new, old = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fresh = {(e["rows"], e["cols"], e["batch"]) for e in new["entries"]}
new["entries"] += [e for e in old["entries"] if (e["rows"], e["cols"], e["batch"]) not in fresh]
new["entries"].sort(key=lambda e: (e["rows"] * e["cols"], e["rows"], e["batch"]))
json.dump(new, open(sys.argv[2], "w"), indent=1)
json.dump(new, open(sys.argv[1], "w"), indent=1)
EOF
  fi
  (cd build-gpu && timeout 90 ctest -L gpu -R spmv --output-on-failure) >"$out/ctest-spmv.log" 2>&1
  log "ctest rc $?: $(grep -E 'tests passed|Totals' "$out/ctest-spmv.log" | tr '\n' ' ')"
  timeout $(($(left) - 5)) build-gpu/bin/sdw-cli bench kernels --shapes llama3-8b,qwen3-14b,qwen3-32b \
    --batch 1,2,4,8 --tuning "$tuning" --json --out "$out/h200.json" >/dev/null 2>"$out/bench.err"
  log "bench rc $?"
  [ -s "$out/h200.json" ] && python3 - "$out/h200.json" <<'EOF' | tee -a "$out/summary.log"
import json, sys
d = json.load(open(sys.argv[1]))
print("hbm", d.get("hbm_read_gbs"), "cusparselt", d.get("cusparselt"))
for s in d.get("summary", []): print(s)
print("spread", d.get("pattern_spread_percent"))
EOF
fi
log "done"
