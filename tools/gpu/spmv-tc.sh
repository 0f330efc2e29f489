#!/usr/bin/env bash
# On the GPU machine: the standalone probe's tensor-core mode (tools/gpu/spmv_probe.cu,
# `probe - tc`): the batch 2-8 tensor-core SpMV checked against a float64 host reference
# (2:4 and 4:8, bf16 and fp16, batch 2-8, split-K, programmatic dependent launch), then
# timed on the Llama-3.1-8B and Qwen3-14B projection shapes against the FMA kernel, our
# dense GEMV and cuBLAS, its configurations swept. Output in $OUT (or out/gpu).
#
#   tools/gpu/spmv-tc.sh [quick]
#   PROBE_MODES="l2 tc" ...   the probe's modes to run, in order (default tc; l2: the next projection's
#                       weights streamed into L2 during a latency-bound kernel, `probe - l2`)
#   SPMV_TC_NCU=1 ...   then an Nsight Compute profile (detailed, warp states, stall samples per
#                       SASS instruction) of one launch at 14336x4096, batch 8 (SPMV_TC_SHAPE="R C B")
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
mkdir -p "$out" /tmp/probe-tc
{
  echo "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) / $(nvcc --version | tail -1)"
  echo "commit: ${SDW_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}"
} | tee "$out/spmv-tc.txt"
for f in $(cd gpu/kernels && ls spmv*.cu | sed "s/\.cu$//") gemv hbm benchfill; do  # spmv.cu, spmv_b*.cu
  nvcc -std=c++20 -O3 -arch=sm_90 -I. -c "gpu/kernels/$f.cu" -o "/tmp/probe-tc/$f.o" &
done
nvcc -std=c++20 -O3 -arch=sm_90 -I. -DPROBE_CUBLAS -c tools/gpu/spmv_probe.cu -o /tmp/probe-tc/main.o
wait
nvcc -arch=sm_90 /tmp/probe-tc/*.o -lcublas -o /tmp/probe-tc/probe || { echo "probe build FAILED" | tee -a "$out/spmv-tc.txt"; exit 1; }
for mode in ${PROBE_MODES:-tc}; do
  if [ "$mode" = tc ]; then /tmp/probe-tc/probe - tc "${1:-}"; else /tmp/probe-tc/probe - "$mode"; fi 2>&1 | tee -a "$out/spmv-tc.txt"
done
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$ncu" ] && [ "${SPMV_TC_NCU:-0}" = 1 ]; then
  timeout 150 "$ncu" --set detailed --section WarpStateStats --section SchedulerStats --section SourceCounters \
    --import-source no -k regex:bitmaskSpmvTcKernel -s 4 -c 1 --cache-control none --clock-control none \
    -o /tmp/ncu-spmv-tc --force-overwrite /tmp/probe-tc/probe - tcprofile ${SPMV_TC_SHAPE:-14336 4096 8} \
    > "$out/ncu-spmv-tc-run.txt" 2>&1
  "$ncu" -i /tmp/ncu-spmv-tc.ncu-rep --page details > "$out/ncu-spmv-tc.txt" 2>&1
  "$ncu" -i /tmp/ncu-spmv-tc.ncu-rep --page source --print-source sass --csv > "$out/ncu-spmv-tc-sass.csv" 2>&1
  grep -E "Grid Size|Block Size|Duration|Registers Per|DRAM Throughput|Achieved Occupancy|Dynamic Shared|Warp Cycles Per|Issued Warp|No Eligible|Elapsed Cycles|SM Active Cycles|stalled|Stall|Theoretical Occupancy|Block Limit" \
    "$out/ncu-spmv-tc.txt" | cut -c1-160 | head -50 | tee -a "$out/spmv-tc.txt"
  python3 tools/gpu/ncu_stalls.py "$out/ncu-spmv-tc-sass.csv" | tee "$out/ncu-spmv-tc-stalls.txt"
fi
