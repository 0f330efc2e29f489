#!/usr/bin/env bash
# On the GPU machine: what limits the batch-1 kernels. Registers and shared memory
# per kernel (ptxas), and, where Nsight Compute is installed, a profile of the
# batch-1 sparse kernel and of our dense GEMV on the median shapes (throughput,
# occupancy, warp stall reasons, instruction mix), with the configurations of
# the committed tuning table. Output in $OUT (or out/gpu).
#
#   tools/gpu/profile.sh
#   PROFILE_KERNELS=bitmaskSpmv PROFILE_SHAPES="14336 4096 4 1 2 4 4 2 1" tools/gpu/profile.sh
#       (one shape per line: rows cols, sparse warps unroll split_k, dense warps rows unroll split_k)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
mkdir -p "$out" /tmp/prof

# Registers, spills and shared memory of every kernel instantiation.
for f in $(cd gpu/kernels && ls spmv*.cu | sed "s/\.cu$//"); do  # spmv.cu, spmv_b*.cu (per batch)
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. -Xptxas -v -c "gpu/kernels/$f.cu" -o "/tmp/prof/$f.o" 2>"/tmp/prof/ptxas-$f.txt" &
done
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. -Xptxas -v -c gpu/kernels/gemv.cu -o /tmp/prof/gemv.o 2>"$out/ptxas-gemv.txt" &
for f in hbm benchfill; do nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. -c "gpu/kernels/$f.cu" -o "/tmp/prof/$f.o" & done
nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. -c tools/gpu/spmv_probe.cu -o /tmp/prof/main.o
wait
cat /tmp/prof/ptxas-spmv*.txt >"$out/ptxas-spmv.txt"
nvcc -arch=sm_90 /tmp/prof/*.o -o /tmp/prof/probe || { echo "probe build failed"; exit 1; }
# One line per kernel: demangled name, registers, shared memory.
python3 - "$out/ptxas-spmv.txt" "$out/ptxas-gemv.txt" >"$out/registers.txt" <<'EOF'
import re, subprocess, sys
for path in sys.argv[1:]:
    name = None
    for line in open(path):
        m = re.search(r"Compiling entry function '(\w+)'", line) or re.search(r"Function properties for (\w+)", line)
        if m:
            name = m.group(1)
        m = re.search(r"Used (\d+) registers.*?(\d+) bytes smem", line)
        if m and name:
            dem = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
            if "bfloat16" in dem:
                print(f"{m.group(1):>4} regs {m.group(2):>6} B smem  {dem}")
EOF

ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$ncu" ]; then
  echo "no Nsight Compute (ncu) on this machine" | tee "$out/ncu.txt"
  exit 0
fi
"$ncu" --version | tail -1 | tee "$out/ncu.txt"
# shape: sparse w u k, dense w r u k (resources/tuning/nvidia-h200.json, batch 1)
while read -r rows cols sw su sk dw dr du dk; do
  for k in ${PROFILE_KERNELS:-bitmaskSpmv denseGemv}; do
    echo "== ${rows}x${cols} $k" >>"$out/ncu.txt"
    timeout 120 "$ncu" --launch-skip 2 --launch-count 1 -k "regex:$k" \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
      /tmp/prof/probe - profile "$rows" "$cols" "$sw" "$su" "$sk" "$dw" "$dr" "$du" "$dk" >>"$out/ncu.txt" 2>&1
  done
done < <(printf '%s\n' "${PROFILE_SHAPES:-4096 4096 16 4 1 4 1 4 1
14336 4096 8 1 1 4 4 2 1
17408 5120 8 1 1 4 1 2 1}")
echo done
