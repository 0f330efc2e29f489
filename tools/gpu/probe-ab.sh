#!/usr/bin/env bash
# On the GPU machine, one call: the standalone probe (tools/gpu/spmv_probe.cu, batch 1, quick) built once as
# it is and once per variant kept under a macro in the kernels, each run on the same shapes, one after the
# other, then the baseline again; a table of the best batch-1 sparse time per shape and variant
# (probe-ab-summary.txt) and each probe's log, in $OUT/probe-ab (or out/gpu/probe-ab).
#
#   PROBE_VARIANTS="name:-DMACRO[,-DMACRO2] ..." tools/gpu/probe-ab.sh
#   (the macros a commit adds to the kernels for the run: at 8ac1207 "loads:-DSDW_SPMV_LOADS_ONLY
#   halves:-DSDW_SPMV_SPLIT_HALVES ldca:-DSDW_SPMV_VALUES_LDCA", at 4f63423 "four:-DSDW_SPMV_FOUR_CHAINS";
#   docs/kernels.md, "The walk against the loads")
#   PROBE_SHAPES="4096x4096,14336x4096"  (default: six Llama-3.1-8B and Qwen3-14B shapes)
#   PROBE_CHECK="ldca"                    (variants whose correctness checks run; the others skip them)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. tools/gpu/env.sh
sdw_out probe-ab
sdw_machine_txt "$O/machine.txt"
export SDW_PROBE_SHAPES=${PROBE_SHAPES:-4096x4096,1024x4096,14336x4096,4096x14336,5120x5120,17408x5120}
variants="base: ${PROBE_VARIANTS:-}"
units=$(cd gpu/kernels && ls spmv*.cu | sed "s/\.cu$//")
common=/tmp/pab/common
mkdir -p "$common"
for f in gemv hbm benchfill; do nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. -c "gpu/kernels/$f.cu" -o "$common/$f.o" & done
for v in $variants; do
  name=${v%%:*} defs=${v#*:}
  mkdir -p "/tmp/pab/$name"
  for f in $units; do
    nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. ${defs//,/ } -c "gpu/kernels/$f.cu" -o "/tmp/pab/$name/$f.o" &
  done
  nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. ${defs//,/ } -c tools/gpu/spmv_probe.cu -o "/tmp/pab/$name/main.o" &
done
wait
for v in $variants; do
  name=${v%%:*}
  nvcc -arch=sm_90 /tmp/pab/$name/*.o $common/*.o -o "/tmp/pab/$name/probe" || echo "$name: link failed"
done
echo "built at $SECONDS s" | tee -a "$O/machine.txt"
run() {  # name, log
  local name=$1 log=$2 checks=
  [[ " ${PROBE_CHECK:-} " == *" $name "* ]] || checks=1
  [ -x "/tmp/pab/$name/probe" ] || return
  { echo "variant $name: ${3:-}"
    env ${checks:+SDW_PROBE_NO_CHECKS=1} $([ "$name" = base ] || echo SDW_PROBE_NO_DENSE=1) \
      timeout "${PROBE_RUN_S:-100}" "/tmp/pab/$name/probe" "/tmp/pab/$name/tuning.json" quick; } > "$log" 2>&1
  echo "$name rc $? at $SECONDS s"
}
for v in $variants; do run "${v%%:*}" "$O/probe-${v%%:*}.log" "${v#*:}"; done
run base "$O/probe-base-again.log"
python3 - "$O" $variants > "$O/probe-ab-summary.txt" <<'EOF'
import re, sys, os
out, names = sys.argv[1], [v.split(":")[0] for v in sys.argv[2:]]
logs = [(n, f"{out}/probe-{n}.log") for n in names] + [("base again", f"{out}/probe-base-again.log")]
res, order = {}, []
for n, path in logs:
    if not os.path.exists(path): continue
    shape = None
    for line in open(path):
        m = re.match(r"(\d+x\d+)\s+1 \|\s+([\d.]+)\s+\d+\s+([\d.]+).*?\|\s+([\d.]+)\s+\d+\s+([\d.]+)", line)
        if m:
            shape = m.group(1)
            if shape not in order: order.append(shape)
            res.setdefault(shape, {})[n] = {"dense": float(m.group(2)), "dense_hbm": float(m.group(3)),
                                            "sparse": float(m.group(4)), "sparse_hbm": float(m.group(5))}
        m = re.search(r"b1 register path \(v7 set\) ([\d.]+) us (\S+ \S+ \S+ \S+) \(([\d.]+)% hbm\)", line)
        if m and shape: res[shape][n].update(reg=float(m.group(1)), reg_cfg=m.group(2), reg_hbm=float(m.group(3)))
        m = re.search(r"HBM read: (\d+)", line)
        if m: print(f"{n}: HBM read {m.group(1)} GB/s")
cols = [n for n, _ in logs]
print("best batch-1 register-path time per shape, us (% of HBM read), config; dense: our dense GEMV in the base run")
print("| shape | dense | " + " | ".join(cols) + " |")
print("|---" * (len(cols) + 2) + "|")
for s in order:
    r = res[s]
    d = r.get("base", {})
    cells = [f"{r[c]['reg']:.2f} ({r[c]['reg_hbm']:.1f}%) {r[c]['reg_cfg']}" if c in r and "reg" in r[c] else "" for c in cols]
    print(f"| {s} | {d.get('dense', 0):.2f} ({d.get('dense_hbm', 0):.1f}%) | " + " | ".join(cells) + " |")
EOF
cat "$O/probe-ab-summary.txt"
pack
