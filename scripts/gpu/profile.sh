#!/usr/bin/env bash
# profile.sh — there, on the GPU machine (repository root, carried .gpu/): per-kernel GPU time
# of the reduction (151 MP dense, 2048² dense) and of `tide diff` on a simulated 4096² pair
# (or, with "benchdiff", of one `tide bench --diff` pass),
# from Nsight Compute's gpu__time_duration (one pass per kernel, clocks left alone), summed by
# kernel name. Writes the raw CSVs and a summary per workload to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/bench/results/local/profile}
mkdir -p "$out"
root=$PWD
export LD_LIBRARY_PATH=$root/.gpu/lib:${LD_LIBRARY_PATH:-}
tide=$root/.gpu/bin/tide
ncu_run() { # name, command...
  local name=$1; shift
  ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
      "$@" > "$out/$name.csv" 2> "$out/$name.err"
  python3 - "$out/$name.csv" > "$out/$name.summary" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; ki = hdr.index("Kernel Name"); vi = hdr.index("Metric Value")
tot = collections.defaultdict(float); n = collections.Counter()
for r in rows[1:]:
    try: v = float(r[vi].replace(",", ""))
    except ValueError: continue
    k = r[ki].split("(")[0][:70]; tot[k] += v; n[k] += 1
s = sum(tot.values())
print(f"total kernel time {s/1e6:.3f} ms over {sum(n.values())} launches")
for k, v in sorted(tot.items(), key=lambda kv: -kv[1])[:45]:
    print(f"{v/1e6:10.3f} ms {n[k]:6d}x  {k}")
PY
  head -50 "$out/$name.summary"
}
case "${1:-all}" in
  reduce|all)
    ncu_run reduce151 "$tide" bench --reduce --backend cuda --sizes 14200x10650 \
      --stars-sparse 0 --stars-dense 130000 --repeats 1 --warmup 0
    ncu_run reduce2048 "$tide" bench --reduce --backend cuda --sizes 2048x2048 \
      --stars-sparse 0 --stars-dense 130000 --repeats 1 --warmup 0 ;;
esac
case "${1:-all}" in
  benchdiff)
    ncu_run benchdiff "$tide" bench --diff --backend cuda --repeats 1 --warmup 0 --stamps 1000 \
      --no-disk ;;
esac
case "${1:-all}" in
  diff|all)
    "$tide" sim -o /tmp/tmpl.fits --epoch2 /tmp/sci.fits --width 4096 --height 4096 \
      --nstars 8000 > /dev/null
    for i in 1 2; do "$tide" diff /tmp/sci.fits /tmp/tmpl.fits -o /tmp/d$i --backend cuda \
      --timings 2>&1 | tail -40; done > "$out/diff-timings.txt"
    cat "$out/diff-timings.txt"
    ncu_run diff4096 "$tide" diff /tmp/sci.fits /tmp/tmpl.fits -o /tmp/d3 --backend cuda ;;
esac
