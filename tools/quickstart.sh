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
# Without either it says which is missing and builds for the CPU (build/).
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
  libhdf5-dev libeigen3-dev nlohmann-json3-dev
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

# ---- a GPU, a CUDA LibTorch and nvcc?
gpu_preset=""
torch_prefix=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  if [ -n "${SDW_LIBTORCH:-}" ]; then
    if [ -f "$SDW_LIBTORCH" ] && [[ "$SDW_LIBTORCH" == *.zip ]]; then
      if [ ! -d .libtorch/libtorch ] || [ "$SDW_LIBTORCH" -nt .libtorch/libtorch ]; then
        command -v unzip >/dev/null || { echo "error: need unzip to unpack $SDW_LIBTORCH" >&2; exit 1; }
        rm -rf .libtorch && mkdir -p .libtorch && unzip -q "$SDW_LIBTORCH" -d .libtorch
      fi
      torch_prefix="$root/.libtorch/libtorch"
    elif [ -d "$SDW_LIBTORCH" ]; then
      torch_prefix="$SDW_LIBTORCH"
    else
      echo "error: SDW_LIBTORCH=$SDW_LIBTORCH is neither a folder nor a .zip archive" >&2; exit 1
    fi
    if ! ls "$torch_prefix"/lib/libtorch_cuda.so >/dev/null 2>&1 && ! ls "$torch_prefix"/../../lib/libtorch_cuda.so >/dev/null 2>&1; then
      echo "note: $torch_prefix has no libtorch_cuda.so: a CPU-only LibTorch" >&2; torch_prefix=""
    fi
  elif python3 -c 'import sys, torch; sys.exit(0 if torch.version.cuda else 1)' >/dev/null 2>&1; then
    torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  fi
  nvcc=$(command -v nvcc || true)
  [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
  if [ -n "$torch_prefix" ] && [ -n "$nvcc" ]; then
    gpu_preset=gpu
    echo "== GPU: $gpu_name; LibTorch: $torch_prefix; nvcc: $nvcc"
  else
    echo "== GPU found ($gpu_name), but building for the CPU:"
    [ -z "$torch_prefix" ] && echo "   no CUDA LibTorch: set SDW_LIBTORCH to an unpacked LibTorch (CUDA) folder or its .zip, or pip install a CUDA torch"
    [ -z "$nvcc" ] && echo "   no nvcc: install the CUDA Toolkit (nvcc on PATH or /usr/local/cuda/bin/nvcc)"
  fi
fi

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
fi
