#!/bin/bash
# Memory never ends a frame (issue 17): on the CUDA backend with a device memory cap far below
# what a frame needs, a task runner (tide batch, as the worker's runners) runs each frame again
# on the CPU backend: every frame done, its catalog's BACKEND card 'cpu' and its rows those of
# the uncapped CUDA run. Skipped (77) without a usable GPU.
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$TIDE" sim -o "$T/a.fits" --seed 3 --width 512 --height 512 --nstars 200 >/dev/null 2>&1 ||
    { echo "FAIL: sim"; exit 1; }
"$TIDE" sim -o "$T/b.fits" --seed 4 --width 512 --height 512 --nstars 200 >/dev/null 2>&1
if ! "$TIDE" stats "$T/a.fits" --backend cuda >/dev/null 2>&1; then
    echo "SKIP: no usable GPU"
    exit 77
fi
printf '%s\n%s\n' "$T/a.fits" "$T/b.fits" >"$T/manifest.txt"
"$TIDE" batch "$T/manifest.txt" --outdir "$T/gpu" --backend cuda --no-progress >"$T/gpu.log" 2>&1 ||
    bad "uncapped batch failed: $(tail -3 "$T/gpu.log")"
"$TIDE" batch "$T/manifest.txt" --outdir "$T/capped" --backend cuda --device-memory-cap 64K \
    --no-progress --log-level warn >"$T/capped.log" 2>&1 || bad "capped batch failed: $(tail -3 "$T/capped.log")"
grep -q "ran out of memory" "$T/capped.log" || bad "no word of the fallback: $(head -3 "$T/capped.log")"
"$PY" - "$T" <<'PYEOF' || bad "the capped catalogs differ from the GPU's"
import sys
from astropy.io import fits
t = sys.argv[1]
ok = True
for n in "ab":
    g = fits.open(f"{t}/gpu/{n}.cat.fits")
    c = fits.open(f"{t}/capped/{n}.cat.fits")
    if g[1].header.get("BACKEND") != "cuda" or c[1].header.get("BACKEND") != "cpu":
        print("BACKEND", g[1].header.get("BACKEND"), c[1].header.get("BACKEND")); ok = False
    if len(g[1].data) != len(c[1].data):
        print("rows", len(g[1].data), len(c[1].data)); ok = False
sys.exit(0 if ok else 1)
PYEOF
[ $fail = 0 ] && echo "PASS: frames beyond the device's memory ran on the CPU backend"
exit $fail
