#!/usr/bin/env bash
# One-command set-up for a fresh Debian 12 machine.
#
#   tools/quickstart.sh run    install what is missing, build, open the workbench
#                              on the embedded sample workspace
#   tools/quickstart.sh test   install what is missing, build, run the test suite
#
# Runs as root, or as a user with sudo (used for apt only).
#
# On a GPU workstation (an NVIDIA driver that lists a GPU) it builds with CUDA
# into build-gpu/ (preset gpu) when it finds, in this order:
#   - a CUDA LibTorch: $SDW_LIBTORCH (an unpacked LibTorch folder, or the
#     LibTorch .zip archive from pytorch.org, unpacked into .libtorch/), else
#     the LibTorch of a pip-installed CUDA PyTorch (`python3 -c "import torch"`);
#   - nvcc: on PATH, else /usr/local/cuda/bin/nvcc (the CUDA Toolkit).
# Without either it says which is missing and builds for the CPU: `run` into
# build/ (preset dev), `test` into build-ci/ (preset ci: warnings are errors).
set -euo pipefail

mode=${1:-}
case "$mode" in
  run|test) ;;
  *) echo "usage: tools/quickstart.sh run|test" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

packages=(
  build-essential cmake ninja-build ccache pkg-config
  qt6-base-dev qt6-base-dev-tools libqcustomplot-dev
  libtorch-dev libopenblas0-pthread
  libhdf5-dev libeigen3-dev nlohmann-json3-dev libonig-dev libutf8proc-dev
  python3-h5py python3-numpy
  xvfb xauth unzip
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: need root or sudo to install packages" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---- real checkpoints' tokenizer files for tests/core/test_tokenizer_real.cpp
# (into .tokenizers/, not committed: model licences). Offline, those tests skip.
if [ "$mode" = test ]; then
  tools/reference/fetch_tokenizers.sh || echo "warning: some tokenizer files were not fetched; their tests will skip" >&2
fi

# ---- a GPU, a CUDA LibTorch and nvcc? (sets gpu_preset, torch_prefix, nvcc)
. tools/detect-gpu.sh

jobs=$(nproc)
# The LibTorch translation units need ~1.7 GB each; keep parallelism within memory.
mem_gb=$(awk '/MemAvailable/ {print int($2/1048576)}' /proc/meminfo)
if [ "$mem_gb" -lt $((2 * jobs)) ]; then jobs=$(( mem_gb / 2 > 0 ? mem_gb / 2 : 1 )); fi

if [ -n "$gpu_preset" ]; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1)
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-"8.0;9.0;$cc"}
  cmake --preset gpu -DCMAKE_PREFIX_PATH="$torch_prefix" -DCMAKE_CUDA_COMPILER="$nvcc"
  cmake --build --preset gpu -j "$jobs"
  if [ "$mode" = test ]; then
    exec ctest --test-dir build-gpu -j "$jobs" --output-on-failure
  fi
  if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}${QT_QPA_PLATFORM:-}" ]; then
    exec build-gpu/bin/sdw   # prints what to do without a display
  fi
  exec build-gpu/bin/sdw --workspace "$root/samples/workspace"
fi

if [ "$mode" = run ]; then
  cmake --preset dev
  cmake --build --preset dev -j "$jobs"
  if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}${QT_QPA_PLATFORM:-}" ]; then
    exec build/bin/sdw   # prints what to do without a display
  fi
  exec build/bin/sdw --workspace "$root/samples/workspace"
else
  cmake --preset ci
  cmake --build --preset ci -j "$jobs"
  ctest --preset ci -j "$jobs"
  # The same core suites again under AddressSanitizer + UBSan
  # (build-asan/; the engine suites are not instrumented: see tests/CMakeLists.txt).
  cmake --preset asan
  cmake --build --preset asan -j "$jobs" --target sdw_asan_suites
  ctest --preset asan -j "$jobs"
fi
