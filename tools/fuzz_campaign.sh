#!/usr/bin/env bash
# A libFuzzer campaign over every parser target (tests/fuzz/README.md): builds
# the targets with clang in build-fuzz (SDW_FUZZ=ON, ASan + UBSan), then runs
# each for FUZZ_SECONDS (default 300) from its committed corpus, new inputs
# into a scratch corpus, crashes and timeouts (over 10 s) into
# build-fuzz/artifacts/<target>/. Prints one line per target (runs, coverage,
# corpus growth, findings) and writes them to build-fuzz/campaign.json.
#
#   tools/fuzz_campaign.sh                       every target, 300 s each
#   FUZZ_SECONDS=60 tools/fuzz_campaign.sh config tokenizer
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-300}
targets=${*:-config tokenizer safetensors sdwsparse runfile compressed_tensors json}
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DSDW_FUZZ=ON \
    -DSDW_CUDA=OFF -DSDW_WERROR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo > build-fuzz.log 2>&1 || { tail -20 build-fuzz.log; exit 1; }
fi
cmake --build build-fuzz -j "$(nproc)" --target $(for t in $targets; do echo "fuzz_$t"; done) >> build-fuzz.log 2>&1 ||
  { grep -E "error" -A3 build-fuzz.log | head -40; exit 1; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp
echo "[" > build-fuzz/campaign.json
sep=""
for t in $targets; do
  scratch=build-fuzz/corpus/$t art=build-fuzz/artifacts/$t
  mkdir -p "$scratch" "$art"
  before=$(ls tests/fuzz/corpus/$t | wc -l)
  build-fuzz/tests/fuzz_$t -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=1048576 \
    -print_final_stats=1 -artifact_prefix="$art/" "$scratch" "tests/fuzz/corpus/$t" > "build-fuzz/fuzz_$t.log" 2>&1
  rc=$?
  runs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "build-fuzz/fuzz_$t.log" | tail -1 | grep -oE "[0-9]+$")
  cov=$(grep -oE "cov: [0-9]+" "build-fuzz/fuzz_$t.log" | tail -1 | grep -oE "[0-9]+")
  ft=$(grep -oE "ft: [0-9]+" "build-fuzz/fuzz_$t.log" | tail -1 | grep -oE "[0-9]+")
  found=$(ls "$art" | wc -l)
  printf '%-20s rc %d  runs %s  cov %s  ft %s  new inputs %s (corpus %s)  findings %s\n' "$t" "$rc" "${runs:-?}" \
    "${cov:-?}" "${ft:-?}" "$(ls "$scratch" | wc -l)" "$before" "$found"
  printf '%s{"target": "%s", "seconds": %s, "exit": %d, "runs": %s, "coverage": %s, "features": %s, "new_inputs": %s, "seed_corpus": %s, "findings": %s}\n' \
    "$sep" "$t" "$secs" "$rc" "${runs:-null}" "${cov:-null}" "${ft:-null}" "$(ls "$scratch" | wc -l)" "$before" "$found" >> build-fuzz/campaign.json
  sep=","
done
echo "]" >> build-fuzz/campaign.json
