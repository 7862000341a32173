#!/usr/bin/env bash
# test_bench.sh — `tide bench` on the CPU at a small size finishes quickly and writes valid
# JSON with every figure present and positive; bad options are usage errors (exit 2).
set -euo pipefail
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

start=$(date +%s)
"$TIDE" bench --backend cpu --threads 2 --sizes 512x512,97x89 --repeats 3 --kernel 5 \
  --json "$T/bench.json" > "$T/bench.txt"
elapsed=$(( $(date +%s) - start ))
[ "$elapsed" -le 60 ] || { echo "tide bench took ${elapsed}s at 512x512"; exit 1; }
grep -q '^512x512' "$T/bench.txt" || { echo "no 512x512 row in text output"; cat "$T/bench.txt"; exit 1; }

"$PY" - "$T/bench.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "cpu", d["backend"]
assert d["repeats"] == 3 and d["kernel_size"] == 5
assert d["copy_bandwidth_GBps"] > 0
sizes = d["sizes"]
assert [(s["width"], s["height"]) for s in sizes] == [(512, 512), (97, 89)], sizes
for s in sizes:
    px, py = s["padded"]
    assert px >= s["width"] + 4 and py >= s["height"] + 4, s["padded"]
    assert s["fft_r2c_ms"] > 0 and s["fft_c2r_ms"] > 0
    assert abs(s["fft_pair_ms"] - s["fft_r2c_ms"] - s["fft_c2r_ms"]) < 1e-3 * s["fft_pair_ms"] + 1e-9
    assert [c["kernels"] for c in s["correlate"]] == [1, 5]
    for c in s["correlate"]:
        for k in ("ms", "setup_ms", "fft_floor_ms", "bytes_floor_ms"):
            assert c[k] > 0, (k, c)
    f1, f5 = (c["fft_floor_ms"] for c in s["correlate"])
    assert f5 > f1
    assert s["transfer"] is None
    r = s["reduce"]
    if r is not None:
        for k in ("stats_ms", "median_ms", "sigma_clip_ms", "read_floor_ms"):
            assert r[k] > 0, (k, r)
print("json ok")
PYEOF

# --json - prints the same document on stdout
"$TIDE" bench --backend cpu --sizes 64x48 --repeats 1 --warmup 0 --no-reduce --json - \
  | "$PY" -c 'import json,sys; d=json.load(sys.stdin); assert d["sizes"][0]["reduce"] is None'

set +e
"$TIDE" bench --sizes 12y5 >/dev/null 2>&1; [ $? -eq 2 ] || { echo "bad --sizes not a usage error"; exit 1; }
"$TIDE" bench --kernel 4 >/dev/null 2>&1; [ $? -eq 2 ] || { echo "even --kernel not a usage error"; exit 1; }
"$TIDE" bench --bogus >/dev/null 2>&1; [ $? -eq 2 ] || { echo "unknown option not a usage error"; exit 1; }
set -e
"$TIDE" bench --help | grep -q -- '--sizes'
echo ok
