#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/check.sh built build-gpu: compute-sanitizer
# (memcheck, racecheck, synccheck) over the kernel suites, all at once (each
# tool and suite its own process, SANITIZE_TIMEOUT seconds each, default 240).
# One log per tool and suite in $OUT (or out/gpu), a summary in sanitize.log:
# the suite's exit, the sanitizer's error count, or "timeout".
#   SANITIZE_SUITES="test_spmv_cuda test_engine_cuda@graphEqualsLaunches,sparseHoldsNoDenseCopy" tools/gpu/sanitize.sh
#   (SUITE@F1,F2: only those test functions of the suite)
#   SANITIZE_TOOLS="memcheck racecheck synccheck" (the default)
#   SANITIZE_SHARDS="test_spmv_cuda:matchesReference:8" (a function's data rows over 8 processes)
#   SANITIZE_ARGS="..." (more compute-sanitizer options, e.g. a kernel-name filter)
#   SANITIZE_ROWS_DONE=FILE (data tags, one per line, that the shards leave out: checked before)
#   SANITIZE_ROW_PARTS=K (each shard process K times, the k-th with SDW_SPMV_CONFIG_PART=k/K:
#     test_spmv_cuda then runs only every K-th configuration of a row, for rows too slow for one)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. tools/gpu/env.sh  # the suites need the prefix's Qt libraries, also to list their data rows
out=${OUT:-$root/out/gpu}
mkdir -p "$out/sanitize"
suites=${SANITIZE_SUITES-test_spmv_cuda test_spmspv_cuda test_colstats_cuda test_sparsegpt_cuda test_engine_cuda}
secs=${SANITIZE_TIMEOUT:-240}
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
[ -n "$san" ] || { echo "compute-sanitizer not found" | tee "$out/sanitize.log"; exit 1; }
"$san" --version | tail -1 | tee "$out/sanitize.log"
# Its kernel filters, for SANITIZE_ARGS (e.g. to leave cuBLAS's own kernels out of racecheck).
"$san" --help 2>/dev/null | grep -iE -A2 -- "--kernel-name|--kernel-regex|--filter" > "$out/sanitize-filters.txt"
pids=()
# run_one TOOL BIN NAME [QTEST ARGS...]: one sanitizer process, its log and summary line.
run_one() {
  local tool=$1 bin=$2 name=$3
  shift 3
  (
    # QtTest's own watchdog (300 s per test function) must not stop a slow function first.
    QTEST_FUNCTION_TIMEOUT=$((secs * 1000)) SDW_SPMV_CONFIG_PART=${part_of_row:-0/1} timeout "$secs" "$san" --tool "$tool" --error-exitcode 86 --print-limit 20 ${SANITIZE_ARGS:-} "$bin" -maxwarnings 0 "$@" \
      > "$out/sanitize/$tool-$name.log" 2>&1
    rc=$?
    errs=$(grep -oE "ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard" "$out/sanitize/$tool-$name.log" | tail -1)
    passed=$(grep -oE "Totals: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped" "$out/sanitize/$tool-$name.log" | tail -1)
    case $rc in 124) r=timeout ;; 0) r=ok ;; 86) r="sanitizer errors" ;; *) r="exit $rc" ;; esac
    echo "$tool $name: $r; ${errs:-no summary}; ${passed:-no totals}" >> "$out/sanitize.log"
  ) &
  pids+=($!)
}
for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
  part_of_row=
  for spec in $suites; do
    s=${spec%%@*}
    fns=()
    [ "$spec" != "$s" ] && IFS=, read -r -a fns <<< "${spec#*@}"
    bin=$(find build-gpu -name "$s" -type f -perm -u+x | head -1)
    [ -n "$bin" ] || { echo "$tool $s: not built" >> "$out/sanitize.log"; continue; }
    run_one "$tool" "$bin" "$spec" "${fns[@]}"
  done
  # SANITIZE_SHARDS="SUITE:FUNCTION:N ...": the data rows of one function spread over N
  # processes (row i to process i mod N), for a tool too slow to run them in one.
  for shard in ${SANITIZE_SHARDS:-}; do
    IFS=: read -r s fn n <<< "$shard"
    bin=$(find build-gpu -name "$s" -type f -perm -u+x | head -1)
    [ -n "$bin" ] || { echo "$tool $s: not built" >> "$out/sanitize.log"; continue; }
    mapfile -t tags < <("$bin" -datatags | sed -n "s/^[A-Za-z_0-9]* $fn //p")
    if [ -n "${SANITIZE_ROWS_DONE:-}" ]; then  # rows already checked at this code: left out
      mapfile -t tags < <(printf '%s\n' "${tags[@]}" | grep -vxF -f "$SANITIZE_ROWS_DONE")
    fi
    echo "$tool $s $fn: ${#tags[@]} data rows in $n processes" >> "$out/sanitize.log"
    for ((i = 0; i < n; i++)); do
      rows=()
      for ((j = i; j < ${#tags[@]}; j += n)); do rows+=("$fn:${tags[j]}"); done
      [ ${#rows[@]} -gt 0 ] || continue
      parts=${SANITIZE_ROW_PARTS:-1}
      for ((k = 0; k < parts; k++)); do
        if [ "$parts" -gt 1 ]; then part_of_row=$k/$parts name="$s@$fn-rows$i-part$k"; else part_of_row= name="$s@$fn-rows$i"; fi
        run_one "$tool" "$bin" "$name" "${rows[@]}"
      done
    done
  done
done
wait "${pids[@]}"
sort -o "$out/sanitize.log" "$out/sanitize.log"
cat "$out/sanitize.log"
! grep -qE "sanitizer errors|exit [0-9]" "$out/sanitize.log"
