#!/usr/bin/env bash
# test_bench_diff.sh — `tide bench --diff` on the CPU at 512x512 runs (its time is printed,
# not held: a timed test fails on a busy CI machine), prints every figure (whole run and its
# stages, FITS read and write, reprojection, both
# subtractions, the three dipole fits) beside its target, and writes valid JSON whose figures
# are positive and whose pair has candidates, all of them fitted. Bad options are usage
# errors (exit 2).
set -euo pipefail
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

start=$(date +%s)
"$TIDE" bench --diff --backend cpu --threads 2 --size 512x512 --repeats 1 --warmup 0 \
  --stamps 1000 --workdir "$T" --json "$T/d.json" > "$T/d.txt"
elapsed=$(( $(date +%s) - start ))
echo "tide bench --diff took ${elapsed}s (printed, not held: speed is measured by benchmarks)"
python3 -m json.tool "$T/d.json" > /dev/null || { echo "invalid JSON"; cat "$T/d.json"; exit 1; }
for want in "tide_diff_run" "FITS read" "tide_diff_write" "from disk" "diff.prepare" \
            "diff.subtract" "diff.download" "diff.fit" "one call (plan + execute)" \
            "execute, plan reused" "constant kernel" "degree 2" "Gaussian dipole + point source" \
            "Gaussian dipole only" "PSF dipole" "<= 60" "<= 5" "<= 10" "<= 30" "HOTPANTS" \
            "SWarp" "SFFT" "stamps/s"; do
  grep -qF -- "$want" "$T/d.txt" || { echo "no '$want' in the report"; cat "$T/d.txt"; exit 1; }
done
[ -f "$T/diff/difference.fits" ] || { echo "tide_diff_write wrote no difference.fits"; exit 1; }

"$PY" - "$T/d.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "cpu" and d["width"] == 512 and d["height"] == 512, d
assert d["copy_bandwidth_GBps"] > 0 and d["transients"] >= 10
D = d["diff"]
assert D["candidates"] >= 5 and D["fitted"] == D["candidates"], D
for k in ("run", "read_fits", "write", "from_disk"):
    assert D[k]["ms"] > 0, (k, D[k])
assert D["run"]["target_ms"] == 60 and D["run"]["floor_ms"] > 0
names = {s["name"] for s in D["stages"]}
for s in ("diff.prepare", "diff.reproject", "diff.subtract", "diff.download",
          "diff.candidates", "diff.fit"):
    assert s in names, (s, names)
R = d["reproject"]
assert R["one_call"]["ms"] > 0 and R["execute"]["ms"] > 0 and R["one_call"]["target_ms"] == 5
assert R["execute"]["floor_ms"] > 0 and R["execute"]["anchor_ms"] == 2000
S = d["subtract"]
assert [s["spatial_degree"] for s in S] == [0, 2], S
assert [s["target_ms"] for s in S] == [10, 30], S
for s in S:
    assert s["ms"] > 0 and s["fft_floor_ms"] > 0 and s["bytes_floor_ms"] > 0, s
    assert s["anchor_hotpants_ms"] == 17000 and s["anchor_sfft_a100_ms"] == 1400
assert S[1]["terms"] == 6 and S[0]["terms"] == 1, S
P = d["dipole"]
assert [p["model"] for p in P] == ["gauss_dipole_ps", "gauss_dipole_only", "psf_dipole_ps"]
for p in P:
    assert p["stamps"] == 1000 and p["stamps_per_s"] > 0 and p["target_stamps_per_s"] == 1e6, p
PYEOF

# JSON on standard output, no disk
"$TIDE" bench --diff --backend cpu --threads 2 --size 256x256 --repeats 1 --warmup 0 \
  --stamps 100 --no-disk --json - > "$T/s.json"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["width"] == 256 and "read_fits" not in d["diff"]' "$T/s.json"

for bad in "--size 100x100" "--size x" "--repeats 0" "--warmup -1" "--stamps 0" \
           "--transients -2" "--frobnicate"; do
  set +e
  "$TIDE" bench --diff $bad > /dev/null 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || { echo "'$bad' gave exit $rc, not 2"; exit 1; }
done
echo "ok"
