#!/usr/bin/env bash
# On the GPU machine, one call: a tuning table for this card under the name the engine and the
# benchmarks look for (resources/tuning/<card name, lower case, dashes>.json), then the decode at
# batch 1 and 2 without a table and with the new one, side by side:
#  1. build sdw-cli;
#  2. `sdw-cli bench kernels --tune` per model shape (Llama-3.1-8B, Qwen3-14B, then Qwen3-32B where
#     time allows; batch 1, 2, 4, 8; 2:4 tunes, the table serves the other patterns), each run starting
#     from the table the one before wrote (and from the card's committed table, if it has one);
#  3. `sdw-cli bench decode` (cuBLAS, dense GEMV, sparse 2:4; batch 1 and 2; TUNE_DECODE_CONFIGS,
#     default llama3-8b,qwen3-14b) with the heuristics (no table), then with the new table.
# Everything in $OUT/tune.tgz (or out/gpu): the table to commit as resources/tuning/<card>.json, the
# benchmark JSON of each step and a log. Steps are skipped when they would not end by
# TUNE_DEADLINE seconds (default 560; give the call 600).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
O=$out/tune
mkdir -p "$O"
pack() { tar -C "$out" -czf "$out/tune.tgz" tune; }
deadline=${TUNE_DEADLINE:-560}  # for fits (env.sh)
. tools/gpu/env.sh
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
name=$(echo "$card" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]/-/g')
table=resources/tuning/$name.json
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$O/machine.txt"
echo "commit ${SDW_COMMIT:-unknown}; table $table" | tee -a "$O/machine.txt"
sdw_gpu_build "$O" sdw-cli || { pack; exit 1; }
echo "built at $SECONDS s" | tee -a "$O/machine.txt"
cli=build-gpu/bin/sdw-cli
summary() {  # summary FILE TAG: one line per decode row
  python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(sys.argv[2], r["config"], r["linear"], r["pattern"] or "-", "batch", r["batch"], "%.1f tok/s" % r["tokens_per_second"])' \
    "$1" "$2" 2>/dev/null || echo "$2: no result"
}

# 2. The table, model by model.
prev=()
[ -f "$table" ] && prev=(--tuning "$table") && cp "$table" "$O/committed-$name.json"
tuned=""
for m in llama3-8b qwen3-14b qwen3-32b; do
  fits 150 "tuning $m" || continue
  t0=$SECONDS
  timeout 200 $cli bench kernels --shapes $m --batch 1,2,4,8 --patterns 2:4 --no-cusparselt --tune "${prev[@]}" \
    --tuning-out "$O/$name-$m.json" --json --out "$O/tune-$m.json" > /dev/null 2>> "$O/tune.log" || {
    echo "tuning $m failed or timed out"
    continue
  }
  tuned="$O/$name-$m.json"
  prev=(--tuning "$tuned")
  echo "tuned $m in $((SECONDS - t0)) s"
  pack
done
[ -n "$tuned" ] || { echo "no table"; pack; exit 1; }
cp "$tuned" "$O/$name.json"
pack

# 3. The decode without a table, then with the new one.
d=(--config "${TUNE_DECODE_CONFIGS:-llama3-8b,qwen3-14b}" --linear cublas,dense,sparse --patterns 2:4 --batch 1,2 --json)
rm -f "$table"
fits 100 "the decode without a table" &&
  $cli bench decode "${d[@]}" --out "$O/decode-heuristics.json" > /dev/null 2>> "$O/decode.log" &&
  summary "$O/decode-heuristics.json" heuristics
pack
cp "$O/$name.json" "$table"
fits 100 "the decode with the table" &&
  $cli bench decode "${d[@]}" --out "$O/decode-tuned.json" > /dev/null 2>> "$O/decode.log" &&
  summary "$O/decode-tuned.json" tuned
python3 - "$O" <<'PY' || true
import json, os, sys
rows = {}
for m in ("heuristics", "tuned"):
    f = os.path.join(sys.argv[1], "decode-%s.json" % m)
    if os.path.exists(f):
        for r in json.load(open(f))["rows"]:
            rows[(m, r["config"], r["linear"], r["pattern"], r["batch"])] = r["tokens_per_second"]
for (m, c, l, p, b), v in sorted(rows.items()):
    h = rows.get(("heuristics", c, l, p, b))
    if m == "tuned" and h:
        print("tuned / heuristics", c, l, p or "-", "batch", b, "%.1f / %.1f tok/s = %.3f" % (v, h, v / h))
PY
echo "done at $SECONDS s"
pack
