#!/usr/bin/env bash
# One-command set-up for a fresh Debian 12 machine.
#
#   tools/quickstart.sh run    install what is missing, build, open the workbench
#                              on the embedded sample workspace
#   tools/quickstart.sh test   install what is missing, build, run the test suite
#
# Runs as root, or as a user with sudo (used for apt only).
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
  xvfb xauth
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

jobs=$(nproc)
# The LibTorch translation units need ~1.7 GB each; keep parallelism within memory.
mem_gb=$(awk '/MemAvailable/ {print int($2/1048576)}' /proc/meminfo)
if [ "$mem_gb" -lt $((2 * jobs)) ]; then jobs=$(( mem_gb / 2 > 0 ? mem_gb / 2 : 1 )); fi

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
