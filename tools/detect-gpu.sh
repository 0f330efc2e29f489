# Sourced by tools/quickstart.sh, or run on its own to see what it finds:
# is there a GPU the NVIDIA driver lists, a CUDA LibTorch and nvcc? Sets
# gpu_preset ("gpu" when all three are there, else ""), torch_prefix and nvcc,
# and says what it found or which piece is missing.
#
#   tools/detect-gpu.sh        (SDW_LIBTORCH=DIR|FILE.zip to name a LibTorch)
_sdw_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${root:-$_sdw_root}
gpu_preset=""
torch_prefix=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  if [ -n "${SDW_LIBTORCH:-}" ]; then
    if [ -f "$SDW_LIBTORCH" ] && [[ "$SDW_LIBTORCH" == *.zip ]]; then
      if [ ! -d "$root/.libtorch/libtorch" ] || [ "$SDW_LIBTORCH" -nt "$root/.libtorch/libtorch" ]; then
        command -v unzip >/dev/null || { echo "error: need unzip to unpack $SDW_LIBTORCH" >&2; exit 1; }
        rm -rf "$root/.libtorch" && mkdir -p "$root/.libtorch" && unzip -q "$SDW_LIBTORCH" -d "$root/.libtorch"
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
  if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
  if [ -n "$torch_prefix" ] && [ -n "$nvcc" ]; then
    gpu_preset=gpu
    echo "== GPU: $gpu_name; LibTorch: $torch_prefix; nvcc: $nvcc"
  else
    echo "== GPU found ($gpu_name), but building for the CPU:"
    if [ -z "$torch_prefix" ]; then
      echo "   no CUDA LibTorch: set SDW_LIBTORCH to an unpacked LibTorch (CUDA) folder or its .zip, or pip install a CUDA torch"
    fi
    if [ -z "$nvcc" ]; then
      echo "   no nvcc: install the CUDA Toolkit (nvcc on PATH or /usr/local/cuda/bin/nvcc)"
    fi
  fi
fi

if [ -z "$gpu_preset" ] && [ -z "${gpu_name:-}" ]; then
  echo "== no GPU listed by the NVIDIA driver (nvidia-smi): building for the CPU"
fi
unset _sdw_root
