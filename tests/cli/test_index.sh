#!/bin/bash
# CLI test of `tide index build` and `tide solve` on a simulated field: index files built from
# the simulator's reference catalogue solve the simulated frame offline, blind and hinted,
# and the solution matches the frame's own (truth) WCS to < 1 arcsec over the whole frame.
# The solve uses the truth X/Y of the sources (FITS 1-based X_TRUE/Y_TRUE) and tweak order 3,
# the order of the simulator's SIP distortion. Also: CSV input, exit codes, bad input.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/tide_cli_index.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# A 2048 x 2048 frame at 1.46"/px (50'), its truth and reference catalogues.
"$TIDE" sim -o "$tmp/sim.fits" --truth "$tmp/truth.fits" --refcat "$tmp/ref.fits" >/dev/null \
    || { echo "FAIL: tide sim"; exit 1; }

# Index files for a 50' field: scales 2..9 (quads 4'..60'), nothing printed but their names.
out=$("$TIDE" index build "$tmp/ref.fits" -o "$tmp/idx" --fov-arcmin 50) && ok "index build exits 0" \
    || bad "index build failed: $out"
n=$(ls "$tmp"/idx/index-tide-*.fits 2>/dev/null | wc -l)
[ "$n" -eq 8 ] && ok "8 index files (scales 2..9)" || bad "expected 8 index files, got $n"
[ "$(wc -l <<<"$out")" -eq 8 ] && ok "prints one line per file" || bad "unexpected output: $out"
ls -a "$tmp/idx" | grep -q '\.tmp\|catalog' && bad "temporary files left behind" || ok "no temporary files"

# Blind and hinted solves of the truth positions.
"$TIDE" solve "$tmp/truth.fits" --width 2048 --height 2048 --index-dir "$tmp/idx" \
    --tweak-order 3 --json -o "$tmp/blind.wcs" >"$tmp/blind.json" && ok "blind solve exits 0" \
    || bad "blind solve failed"
"$TIDE" solve "$tmp/truth.fits" --width 2048 --height 2048 --index-dir "$tmp/idx" \
    --ra 150.2 --dec 2.1 --scale-lo 1.32 --scale-hi 1.61 --no-blind --tweak-order 3 --json \
    -o "$tmp/hint.wcs" >"$tmp/hint.json" && ok "hinted solve exits 0" || bad "hinted solve failed"
"$PY" - "$tmp" <<'PYEOF' || bad "solutions differ from the truth WCS"
import json, sys, warnings
import numpy as np
from astropy.io import fits
from astropy.wcs import WCS
from astropy.coordinates import SkyCoord
import astropy.units as u
warnings.simplefilter("ignore")
d = sys.argv[1]
truth = WCS(fits.getheader(d + "/sim.fits"))
xs, ys = np.meshgrid(np.linspace(1, 2048, 21), np.linspace(1, 2048, 21))
rt, dt = truth.all_pix2world(xs, ys, 1)
for name in ("blind", "hint"):
    j = json.load(open("%s/%s.json" % (d, name)))
    w = WCS(fits.getheader("%s/%s.wcs" % (d, name)))
    r, de = w.all_pix2world(xs, ys, 1)
    s = SkyCoord(r * u.deg, de * u.deg).separation(SkyCoord(rt * u.deg, dt * u.deg)).arcsec
    print("%s: %.1f ms (hinted %.1f, blind %.1f), max %.4f arcsec, median %.4f, index %s" %
          (name, j["ms_total"], j["ms_hinted"], j["ms_blind"], s.max(), np.median(s), j["index"]))
    assert s.max() < 1.0, (name, s.max())
    assert j["blind"] == (name == "blind"), j
    assert abs(j["scale_arcsec"] - 1.4633) < 0.01, j
PYEOF

# CSV reference catalogue gives the same index files' worth of solving.
"$PY" - "$tmp" <<'PYEOF' || bad "csv conversion"
import sys
from astropy.io import fits
d = sys.argv[1]
t = fits.getdata(d + "/ref.fits", 1)
with open(d + "/ref.csv", "w") as f:
    f.write("ID,RA,DEC,MAG\n")
    for r in t:
        f.write("%d,%.10f,%.10f,%.4f\n" % (r["ID"], r["RA"], r["DEC"], r["MAG"]))
PYEOF
"$TIDE" index build "$tmp/ref.csv" -o "$tmp/idxc" --scale-lo 6 --scale-hi 7 --prefix index-csv \
    >/dev/null && ok "csv index build exits 0" || bad "csv index build failed"
"$TIDE" solve "$tmp/truth.fits" --width 2048 --height 2048 --index-dir "$tmp/idxc" \
    >/dev/null && ok "solves with the csv-built indexes" || bad "no solve with the csv-built indexes"

# Exit codes and bad input.
"$TIDE" index build >/dev/null 2>&1; [ $? -eq 2 ] && ok "no catalogue: exit 2" || bad "no catalogue exit code"
"$TIDE" index build "$tmp/ref.fits" >/dev/null 2>&1; [ $? -eq 2 ] && ok "no -o: exit 2" || bad "no -o exit code"
"$TIDE" index build "$tmp/ref.fits" -o "$tmp/x" >/dev/null 2>&1; [ $? -eq 2 ] && ok "no scales: exit 2" || bad "no scales exit code"
"$TIDE" index frob >/dev/null 2>&1; [ $? -eq 2 ] && ok "unknown action: exit 2" || bad "unknown action exit code"
err=$("$TIDE" index build "$tmp/ref.fits" -o "$tmp/x" --fov-arcmin 50 --mag-col NOPE 2>&1)
[ $? -eq 1 ] && grep -q "NOPE" <<<"$err" && ok "missing column: exit 1 naming it" || bad "missing column: $err"
err=$("$TIDE" index build "$tmp/nonexistent.fits" -o "$tmp/x" --fov-arcmin 50 2>&1)
[ $? -eq 1 ] && grep -q "nonexistent.fits" <<<"$err" && ok "missing catalogue: exit 1" || bad "missing catalogue: $err"
err=$("$TIDE" solve "$tmp/truth.fits" --width 2048 --height 2048 --index-dir "$tmp/empty_dir" 2>&1)
[ $? -eq 1 ] && grep -q "empty_dir" <<<"$err" && ok "missing index dir: exit 1 naming it" || bad "missing index dir: $err"
"$TIDE" solve "$tmp/truth.fits" --scale-lo 3 --scale-hi 1 >/dev/null 2>&1; [ $? -eq 2 ] && ok "scale lo > hi: exit 2" || bad "scale order exit code"
"$TIDE" solve >/dev/null 2>&1; [ $? -eq 2 ] && ok "solve without a file: exit 2" || bad "solve usage exit code"
err=$("$TIDE" solve "$tmp/truth.fits" --index-dir "$tmp/idx" 2>&1)
[ $? -eq 1 ] && grep -q "width" <<<"$err" && ok "unknown frame size: exit 1 asking for --width" || bad "size: $err"

exit $fail
