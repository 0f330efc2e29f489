# Sourced by the GPU-machine scripts: unpacks .debs/ (tools/gpu/fetch-deps.sh)
# into one prefix and sets what the engine build and the offscreen GUI need
# there (library paths, Qt's plugins, fonts). Sets SDW_DEPS and TORCH_PREFIX.
SDW_DEPS=${SDW_DEPS:-/opt/sdw-deps}
_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# .unpacked lists the packages already there: one added to .debs/ later is
# unpacked on the next run. CMake finds the headers and libraries through
# CMAKE_PREFIX_PATH=$SDW_DEPS/usr (the .pc files in there name /usr, so
# pkg-config only gives hints: cmake/SdwFindCLibrary.cmake).
# .gpudeps/deps.tar.xz (tools/gpu/bundle.sh), when it travels, is the same
# packages as one smaller archive; .stamp holds the size and time of the one
# unpacked, so a new archive replaces the prefix.
# .gpudeps/engine.tar.xz (SDW_BUNDLE=engine tools/gpu/bundle.sh) has no GUI packages: the
# build then leaves the GUI out (SDW_GPU_CMAKE_ARGS gets -DSDW_BUILD_GUI=OFF).
_archive=
for _a in deps engine; do [ -f "$_root/.gpudeps/$_a.tar.xz" ] && { _archive=$_root/.gpudeps/$_a.tar.xz; break; }; done
if [ -n "$_archive" ]; then
  _stamp=$(stat -c '%s %Y' "$_archive")
  if [ "$(cat "$SDW_DEPS/.stamp" 2>/dev/null)" != "$_stamp" ]; then
    rm -rf "$SDW_DEPS" && mkdir -p "$SDW_DEPS"
    xz -dc "$_archive" | tar -C "$SDW_DEPS" -xf - && echo "$_stamp" > "$SDW_DEPS/.stamp"
  fi
  case "$_archive" in *engine.tar.xz) SDW_GPU_CMAKE_ARGS="-DSDW_BUILD_GUI=OFF ${SDW_GPU_CMAKE_ARGS:-}" ;; esac
  if [ -f "$_root/.gpudeps/tokenizers.tar.xz" ]; then xz -dc "$_root/.gpudeps/tokenizers.tar.xz" | tar -C "$_root" -xf -; fi
  unset _stamp _a
elif [ -d "$_root/.debs" ]; then
  mkdir -p "$SDW_DEPS"
  touch "$SDW_DEPS/.unpacked"
  for f in "$_root"/.debs/*.deb; do
    grep -qxF "${f##*/}" "$SDW_DEPS/.unpacked" && continue
    dpkg -x "$f" "$SDW_DEPS" && echo "${f##*/}" >> "$SDW_DEPS/.unpacked"
  done
fi
# libdbus installs under /lib, the rest under /usr/lib.
export LD_LIBRARY_PATH="$SDW_DEPS/usr/lib/x86_64-linux-gnu:$SDW_DEPS/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export QT_PLUGIN_PATH="$SDW_DEPS/usr/lib/x86_64-linux-gnu/qt6/plugins"
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
# Fonts from the prefix: without them the screenshots have no text.
mkdir -p "$SDW_DEPS/etc/fonts"
cat > "$SDW_DEPS/etc/fonts/sdw-fonts.conf" <<XML
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>$SDW_DEPS/usr/share/fonts</dir>
  <cachedir>/tmp/sdw-fontconfig-cache</cachedir>
</fontconfig>
XML
export FONTCONFIG_FILE="$SDW_DEPS/etc/fonts/sdw-fonts.conf"
export FONTCONFIG_PATH="$SDW_DEPS/etc/fonts"
# Kernels for A100 and H100/H200; without this, torch's CMake picks the arch of the local GPU.
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-"8.0;9.0"}
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
unset _root _archive

# fits SECONDS_NEEDED WHAT: whether a step of that length ends before $deadline seconds from the
# script's start (the caller sets deadline); if not, says it is skipped.
fits() {
  if [ $((SECONDS + $1)) -le "${deadline:?fits needs deadline}" ]; then return 0; fi
  echo "skipped ($2): about $1 s needed, $((deadline - SECONDS)) s left before the deadline ($deadline s)"
  return 1
}

# sdw_out DIR [ARCHIVE]: the call's results folder O (made; run from the repository root), and
# pack, which writes it into ${OUT:-out/gpu}/ARCHIVE.tgz (default DIR.tgz): called after every
# step, so a call cut short still brings back the steps before. Without OUT, O is out/gpu/DIR;
# with OUT (the GPU machine, which brings back at most 8 files of it) O is a folder outside OUT
# and the archive is the one file there, so two scripts in one call (OUT=$OUT/a, OUT=$OUT/b)
# each bring back theirs whole.
sdw_out() {
  _sdw_out=${OUT:-$PWD/out/gpu}
  _sdw_dir=$1
  _sdw_archive=${2:-$1}
  if [ -n "${OUT:-}" ]; then _sdw_work=$(mktemp -d "${TMPDIR:-/tmp}/sdw-out.XXXXXX"); else _sdw_work=$_sdw_out; fi
  O=$_sdw_work/$_sdw_dir
  mkdir -p "$O" "$_sdw_out"
}
pack() { tar -C "$_sdw_work" -czf "$_sdw_out/$_sdw_archive.tgz" "$_sdw_dir"; }

# sdw_machine_txt FILE [NOTE]: the card, its driver and memory, and the commit (SDW_COMMIT) with
# NOTE after it, into FILE and on the screen.
sdw_machine_txt() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$1"
  echo "commit ${SDW_COMMIT:-unknown}${2:+; $2}" | tee -a "$1"
}

# sdw_decode_summary FILE TAG: one line per row of a `sdw-cli bench decode --json` file, and under
# a row tuned with --tune-step each projection's launch before -> after.
sdw_decode_summary() {
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for r in d.get("rows", [d]):  # one configuration and batch: the row itself
    print(sys.argv[2], r["config"], r["linear"], r["pattern"] or "-", "batch", r["batch"], "%.1f tok/s" % r["tokens_per_second"])
    for t in filter(None, r.get("step_tuning", "").split("; ")): print("   ", t)' \
    "$1" "$2" 2>/dev/null || echo "$2: no result"
}

# sdw_tune_step CONFIG LINEAR PATTERN BATCHES TABLE OUT [ARG...]: `sdw-cli bench decode --tune-step TABLE`
# of one shape (PATTERN empty for the dense engine; TABLE read first where it exists; ARGs added,
# e.g. --tuning FILE), its JSON in OUT, stderr to $O/decode.log; prints each row and each
# projection's launch before -> after, and the time taken.
sdw_tune_step() {
  local c=$1 linear=$2 pat=$3 batches=$4 table=$5 out=$6 t0=$SECONDS
  shift 6
  build-gpu/bin/sdw-cli bench decode --config "$c" --linear "$linear" ${pat:+--patterns "$pat"} --batch "$batches" \
    "$@" --tune-step "$table" --json --out "$out" > /dev/null 2>> "$O/decode.log" || { echo "$c $linear $pat: failed"; return 1; }
  sdw_decode_summary "$out" step-tuned
  echo "  ($c $linear $pat in $((SECONDS - t0)) s, at $SECONDS s)"
}

# Configures the gpu preset against that LibTorch and the unpacked packages, then builds
# the targets given (keeping going past a failed one); the logs go to DIR/configure.log
# and DIR/build.log, and on failure the first errors are printed and it returns 1.
sdw_gpu_build() {  # DIR TARGET...
  local dir=$1
  shift
  cmake --preset gpu -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$SDW_DEPS/usr" -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
    -DOpenGL_GL_PREFERENCE=GLVND ${SDW_GPU_CMAKE_ARGS:-} > "$dir/configure.log" 2>&1 || { tail -30 "$dir/configure.log"; return 1; }
  cmake --build --preset gpu -j "$(nproc)" --target "$@" -- -k 0 > "$dir/build.log" 2>&1 ||
    { grep -E "error" -A3 "$dir/build.log" | head -40; return 1; }
}
