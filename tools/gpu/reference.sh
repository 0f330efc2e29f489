#!/usr/bin/env bash
# On the GPU machine (it has torch, transformers, tokenizers), after sdw-cli is
# built in build-gpu (tools/gpu/check.sh): the checks against the reference
# libraries that cannot run in CI. Logs go to $OUT (or out/gpu).
#   1. tools/reference/arch_goldens.py for ARCH_GOLDENS_ONLY (default: all),
#      written to $OUT/reference/ (copy them to tests/data/reference/);
#   2. tools/reference/tokenizer_unseen_check.py: 2,000 fresh texts per tokenizer
#      in .tokenizers/ (tools/gpu/bundle.sh brings mistral), ours against `tokenizers`;
#   3. the compressed-tensors round trip: the sample model calibrated (fixed
#      text, 32k tokens), pruned by SparseGPT to 2:4 and to 50% unstructured with
#      --export compressed-tensors, each export decompressed by
#      tools/reference/compressed_tensors_check.py and compared bit for bit.
#   REFERENCE_STEPS=goldens,tokenizers,ct picks steps.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu}
mkdir -p "$out"
cli=$root/build-gpu/bin/sdw-cli
steps=${REFERENCE_STEPS:-goldens,tokenizers,ct}
status=0
log=$out/reference.log
python3 -c 'import torch, transformers, tokenizers; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__)' | tee -a "$log"
if [[ $steps == *goldens* ]]; then
  echo "== arch goldens ${ARCH_GOLDENS_ONLY:-all}" | tee -a "$log"
  python3 tools/reference/arch_goldens.py --out "$out/reference" >> "$log" 2>&1 || { echo "goldens failed" | tee -a "$log"; status=1; }
fi
if [[ $steps == *tokenizers* ]]; then
  for d in .tokenizers/*/; do
    [ -f "$d/tokenizer.json" ] || continue
    n=$(basename "$d")
    echo "== tokenizer $n: fresh texts" | tee -a "$log"
    python3 tools/reference/tokenizer_unseen_check.py "$cli" "$d" --n 2000 --out "$out/tokenizer-unseen-$n.json" 2>&1 | head -8 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi
if [[ $steps == *ct* ]]; then
  w=$(mktemp -d)
  echo "== compressed-tensors round trip (work: $w)" | tee -a "$log"
  "$cli" calibrate --model samples/model/brown-llama --device "${REFERENCE_DEVICE:-cuda}" --source fixed --corpus samples/corpus/brown-calib.txt \
    --tokens 32768 --out "$w/cal.sdw.h5" > "$w/cal.log" 2>&1 || { tail -5 "$w/cal.log" | tee -a "$log"; status=1; }
  for p in 2:4 unstructured50; do
    t=${p/:/-}
    "$cli" prune --model samples/model/brown-llama --calibration "$w/cal.sdw.h5" --method sparsegpt --pattern "$p" \
      --out "$w/p-$t" --export compressed-tensors > "$w/prune-$t.log" 2>&1 || { tail -5 "$w/prune-$t.log" | tee -a "$log"; status=1; continue; }
    echo "-- sparsegpt $p: $(grep -o '"format"[^,]*' "$w/p-$t/compressed-tensors/config.json" 2>/dev/null | head -2 | tr '\n' ' ')" | tee -a "$log"
    python3 tools/reference/compressed_tensors_check.py "$w/p-$t" "$w/p-$t/compressed-tensors" 2>&1 | tail -6 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi
echo "== reference status $status" | tee -a "$log"
exit $status
