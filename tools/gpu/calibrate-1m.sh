#!/usr/bin/env bash
# On the GPU machine: AR calibration of the Llama-3.1-8B shape with 1M decode tokens
# actually collected (re-forward capture, batch 128, bf16, random weights): the issue's
# "1M tokens in <= 10 minutes" run, timed whole rather than extrapolated.
#   CALIB_STEP=build tools/gpu/calibrate-1m.sh   configure + build sdw-cli only (a first call;
#                                                 the next call on the still-warm machine skips it)
#   CALIB_STEP=ncu ...                           build, then an Nsight Compute profile of the spMspV
#                                                 kernel (14336x4096, p_x 0.5) into $OUT/ncu-spmspv.txt, its
#                                                 SASS with executed counts ($OUT/ncu-spmspv-sass.csv, summed
#                                                 by tools/gpu/sass_counts.py) and its plain SASS ($OUT/spmspv.sass)
#   tools/gpu/calibrate-1m.sh                    build if needed, then the 1M-token run
# JSON and logs go to $OUT (or out/gpu).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
mkdir -p "$out"
. tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/machine.txt"
echo "commit ${SDW_COMMIT:-unknown}" | tee -a "$out/machine.txt"
if [ ! -x build-gpu/bin/sdw-cli ] || [ "${CALIB_STEP:-run}" != run ]; then
  t0=$(date +%s)
  cmake --preset gpu -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$SDW_DEPS/usr" -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
    -DOpenGL_GL_PREFERENCE=GLVND > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
  cmake --build --preset gpu -j "$(nproc)" --target sdw-cli > "$out/build.log" 2>&1 ||
    { grep -E "error" -A3 "$out/build.log" | head -40; exit 1; }
  echo "built sdw-cli in $(( $(date +%s) - t0 )) s"
fi
case "${CALIB_STEP:-run}" in
  build) exit 0 ;;
  ncu)
    ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    [ -n "$ncu" ] || { echo "no ncu"; exit 0; }
    timeout 150 "$ncu" --set detailed --import-source no -k regex:spmspvKernel -s 5 -c 1 --cache-control none \
      --clock-control none build-gpu/bin/sdw-cli bench kernels --shapes 14336x4096 --patterns 2:4 \
      --activation-sparsity 0.5 --repeats 1 --no-layer --no-cusparselt > "$out/ncu-spmspv.txt" 2>&1
    grep -E "Grid Size|Block Size|Duration|Registers Per|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Dynamic Shared|Executed Ipc|L2 Hit|Elapsed Cycles|SM Active|Waves Per SM" \
      "$out/ncu-spmspv.txt" | head -24
    # Where the instructions go: the kernel's SASS with each instruction's executed count
    # (source counters of the same launch), and the plain SASS of every spMspV instantiation.
    timeout 150 "$ncu" --section SourceCounters --section InstructionStats -k regex:spmspvKernel -s 5 -c 1 \
      --cache-control none --clock-control none -o "$out/spmspv" -f build-gpu/bin/sdw-cli bench kernels \
      --shapes 14336x4096 --patterns 2:4 --activation-sparsity 0.5 --repeats 1 --no-layer --no-cusparselt \
      > /dev/null 2>&1 &&
      "$ncu" -i "$out/spmspv.ncu-rep" --page source --print-source sass --csv > "$out/ncu-spmspv-sass.csv" 2>&1
    rm -f "$out/spmspv.ncu-rep"
    obj=$(find build-gpu -name 'spmspv.cu.o' | head -1)
    cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
    [ -n "$obj" ] && [ -n "$cuobjdump" ] && "$cuobjdump" --dump-sass "$obj" > "$out/spmspv.sass" 2>&1
    python3 tools/gpu/sass_counts.py "$out/ncu-spmspv-sass.csv" 2>&1 | tail -40
    exit 0 ;;
esac
t0=$(date +%s)
build-gpu/bin/sdw-cli bench calibrate --config llama3-8b --capture reforward --batch 128 --tokens 1000000 \
  --json > "$out/calibrate-llama3-8b-1m.json" 2> "$out/calibrate-1m.log"
echo "exit $? after $(( $(date +%s) - t0 )) s wall"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["captures"][0]; print("re-forward batch", c["batch"], c["decode_tokens"], "decode tokens in %.1f s" % c["seconds"], "(%.0f tok/s)" % c["decode_tokens_per_second"], "generate %.1f s forward %.1f s" % (c["generate_seconds"], c["forward_seconds"]), c["generate_phase_seconds"])' \
  "$out/calibrate-llama3-8b-1m.json"
