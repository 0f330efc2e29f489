#!/usr/bin/env bash
# On the GPU machine: build everything (core, gpu, widgets, the sdw GUI,
# sdw-cli and every test suite) with nvcc and the pip LibTorch, and Qt 6 /
# QCustomPlot from .debs/ (tools/gpu/fetch-deps.sh; it must travel along).
# Runs `ctest -L gpu` first (the GUI's GPU story included, offscreen), then
# every other suite (engine, app and GUI, offscreen), then the device
# self-check. Logs go to $OUT (or out/gpu).
#
#   tools/gpu/check.sh [extra ctest args]
#   SDW_CHECK_BUILD_ONLY=1 tools/gpu/check.sh   configure and build, no tests
#   SDW_CHECK_BENCH=1 tools/gpu/check.sh   also run the engine benchmarks on a
#       Llama-3.1-8B-shaped model (decode, calibration capture, SparseGPT) and
#       read the sample run files with h5py; JSON results go to $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
mkdir -p "$out"
. tools/gpu/env.sh   # SDW_DEPS, TORCH_PREFIX, library/plugin/font paths
deps=$SDW_DEPS
torch_prefix=$TORCH_PREFIX

{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "== configure"
} 2>&1 | tee "$out/check.log"

set -o pipefail
cmake --preset gpu -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/usr" \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DOpenGL_GL_PREFERENCE=GLVND 2>&1 | tee -a "$out/check.log" | tail -15 || exit 1
echo "== build" | tee -a "$out/check.log"
cmake --build --preset gpu -j "$(nproc)" 2>&1 | tee -a "$out/check.log" | grep -E "error|warning|FAILED|Linking" | tail -40
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "build failed" | tee -a "$out/check.log"; exit 1; }
[ "${SDW_CHECK_BUILD_ONLY:-0}" = 1 ] && { echo "== built" | tee -a "$out/check.log"; exit 0; }

status=0
echo "== ctest -L gpu" | tee -a "$out/check.log"
(cd build-gpu && ctest -L gpu --output-on-failure -V "$@") 2>&1 | tee "$out/ctest-gpu.log" | \
  grep -E "FAIL|SKIP|tests passed|Totals|device:" | tee -a "$out/check.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# The GUI's GPU story (test_gpu_story): its session JSON and screenshots, in one file.
if [ -d build-gpu/story ]; then
  tar -C build-gpu/story --exclude=work -cf "$out/story.tar" . && echo "story: $out/story.tar" | tee -a "$out/check.log"
fi
if [ "${SDW_CHECK_ENGINE:-1}" = 1 ]; then  # SDW_CHECK_ENGINE=0: GPU suites only (the CPU suites run in CI)
  echo "== ctest (every other suite: engine, app, GUI offscreen)" | tee -a "$out/check.log"
  # Two suites at a time, each with half the cores for torch's threads: eight
  # suites with every core each oversubscribed the CPU past QtTest's 300 s
  # per-function limit.
  (cd build-gpu && OMP_NUM_THREADS=$(( $(nproc) / 2 )) ctest -LE gpu -j 2 --output-on-failure "$@") 2>&1 | tee "$out/ctest-engine.log" | tail -15 | tee -a "$out/check.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
echo "== sdw-cli device --self-test" | tee -a "$out/check.log"
build-gpu/bin/sdw-cli device --self-test --json 2>&1 | tee -a "$out/check.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if [ "${SDW_CHECK_BENCH:-0}" = 1 ]; then
  bench() {  # name, seconds, args...
    local name=$1 secs=$2; shift 2
    echo "== sdw-cli bench $*" | tee -a "$out/check.log"
    timeout "$secs" build-gpu/bin/sdw-cli bench "$@" --json > "$out/bench-$name.json" 2>> "$out/check.log"
    local rc=$?
    [ $rc -eq 0 ] || { echo "bench $name: exit $rc" | tee -a "$out/check.log"; status=1; }
  }
  bench decode 180 decode --config llama3-8b --context 512 --tokens 50 --warmup 50
  bench calibrate 240 calibrate --config llama3-8b --capture both
  bench prune 240 prune --config llama3-8b --pattern 2:4 --layers 4
  echo "== h5py" | tee -a "$out/check.log"
  python3 tools/read_run.py samples/workspace/*.sdw.h5 > "$out/h5py.txt" 2>&1 || status=1
  tail -5 "$out/h5py.txt" | tee -a "$out/check.log"
fi
echo "== status $status" | tee -a "$out/check.log"
exit $status
