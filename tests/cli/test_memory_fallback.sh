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
# Read the catalog headers without astropy (the GPU machine has none): HDU 1's BACKEND card
# and its row count, from the primary header's END block onwards.
"$PY" - "$T" <<'PYEOF' || bad "the capped catalogs differ from the GPU's"
import sys

def hdu1(path):
    with open(path, "rb") as f:
        data = f.read()
    cards, pos, hdu = {}, 0, 0
    while pos < len(data):
        block = data[pos:pos + 2880].decode("ascii")
        pos += 2880
        for i in range(0, 2880, 80):
            card = block[i:i + 80]
            key = card[:8].strip()
            if key == "END":
                if hdu == 1:
                    return cards
                hdu, cards = 1, {}
                break
            if card[8:10] == "= ":
                cards[key] = card[10:].split("/")[0].strip().strip("'").strip()
        else:
            continue
    raise SystemExit(f"{path}: no HDU 1")

t = sys.argv[1]
ok = True
for n in "ab":
    g, c = hdu1(f"{t}/gpu/{n}.cat.fits"), hdu1(f"{t}/capped/{n}.cat.fits")
    if g.get("BACKEND") != "cuda" or c.get("BACKEND") != "cpu":
        print("BACKEND", g.get("BACKEND"), c.get("BACKEND")); ok = False
    if g.get("NAXIS2") != c.get("NAXIS2"):
        print("rows", g.get("NAXIS2"), c.get("NAXIS2")); ok = False
sys.exit(0 if ok else 1)
PYEOF
[ $fail = 0 ] && echo "PASS: frames beyond the device's memory ran on the CPU backend"
exit $fail
