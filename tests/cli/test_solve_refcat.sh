#!/bin/bash
# CLI test of `tide reduce --refcat` on a rough header over a sky no installed index covers:
# a simulated 2048² field (TAN-SIP, 1.46"/px) whose header is moved 3' in RA, rotated 3°,
# scaled by 5% and stripped of its SIP terms is solved on its own reference catalogue (the
# in-memory index of tide_solve_refcat; --index-dir points at an empty directory, so no
# Tycho-2 file can help), refined, and given sky columns and a zero point; the refined WCS
# must lie within 0.1 px of the simulator's truth WCS everywhere on the frame. A second, milder
# header (20", 0.3°, no scale error: the case issue 15 reported) must give the same.
# Cost: ~10 s on 2 cores (two 2048² reductions).
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/tide_cli_solve_refcat.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

"$TIDE" sim -o "$tmp/sim.fits" --refcat "$tmp/ref.fits" --seed 3 >/dev/null \
    || { echo "FAIL: tide sim"; exit 1; }
mkdir -p "$tmp/noindex"

# rough.py IN OUT ARCSEC_RA ROT_DEG SCALE: the header moved, rotated, scaled, without SIP.
cat >"$tmp/rough.py" <<'PYEOF'
import sys
import numpy as np
from astropy.io import fits
src, out, dra, rot, scl = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:6])
h = fits.open(src)
hd = h[0].header
for k in list(hd.keys()):
    if k.split('_')[0] in ('A', 'B', 'AP', 'BP') and '_' in k:
        del hd[k]
hd['CTYPE1'], hd['CTYPE2'] = 'RA---TAN', 'DEC--TAN'
cd = np.array([[hd['CD1_1'], hd['CD1_2']], [hd['CD2_1'], hd['CD2_2']]])
t = np.radians(rot)
cd = scl * np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]) @ cd
hd['CD1_1'], hd['CD1_2'], hd['CD2_1'], hd['CD2_2'] = cd[0, 0], cd[0, 1], cd[1, 0], cd[1, 1]
hd['CRVAL1'] += dra / 3600.0 / np.cos(np.radians(hd['CRVAL2']))
h.writeto(out, overwrite=True)
PYEOF

# check.py CAT TRUTH: ASTRSTAT, sky columns, zero point, WCS within 0.1 px of the truth.
cat >"$tmp/check.py" <<'PYEOF'
import sys, warnings
import numpy as np
from astropy.io import fits
from astropy.wcs import WCS
warnings.simplefilter('ignore')
cat = fits.open(sys.argv[1])[1]
h, t = cat.header, fits.getheader(sys.argv[2])
errs = []
if h.get('ASTRSTAT') != 'REFINED':
    errs.append('ASTRSTAT %r (%r)' % (h.get('ASTRSTAT'), h.get('ASTRMSG')))
if 'ALPHA_J2000' not in cat.columns.names or not np.isfinite(cat.data['ALPHA_J2000']).all():
    errs.append('no finite ALPHA_J2000')
if not np.isfinite(h.get('ZP', np.nan)):
    errs.append('no zero point')
wa, wt = WCS(h, naxis=2, relax=True), WCS(t, naxis=2, relax=True)
x, y = np.meshgrid(np.linspace(0, 2047, 9), np.linspace(0, 2047, 9))
r1, d1 = wa.all_pix2world(x.ravel(), y.ravel(), 0)
r2, d2 = wt.all_pix2world(x.ravel(), y.ravel(), 0)
off = np.hypot((r1 - r2) * np.cos(np.radians(d2)), d1 - d2) * 3600 / 1.463
print('%s: ASTRSTAT %s, ZP %s, max offset from the truth %.4f px' % (
    sys.argv[1].split('/')[-1], h.get('ASTRSTAT'), h.get('ZP'), off.max()))
if not off.max() < 0.1:
    errs.append('WCS %.3f px from the truth' % off.max())
if errs:
    print('; '.join(errs))
    sys.exit(1)
PYEOF

for spec in "far 180 3 1.05" "mild 20 0.3 1.0"; do
    set -- $spec
    "$PY" "$tmp/rough.py" "$tmp/sim.fits" "$tmp/$1.fits" "$2" "$3" "$4" || { bad "rough.py $1"; continue; }
    t0=$(date +%s.%N)
    "$TIDE" reduce "$tmp/$1.fits" -o "$tmp/$1_cat.fits" --refcat "$tmp/ref.fits" \
        --index-dir "$tmp/noindex" --backend cpu >"$tmp/$1.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    grep -i astrometry "$tmp/$1.log"
    [ $rc -eq 0 ] && ok "$1: reduce exits 0" || bad "$1: reduce exited $rc: $(tail -3 "$tmp/$1.log")"
    grep -q "reference catalogue" "$tmp/$1.log" && ok "$1: solved on the reference catalogue" \
        || bad "$1: not solved on the reference catalogue"
    "$PY" "$tmp/check.py" "$tmp/$1_cat.fits" "$tmp/sim.fits" && ok "$1: truth WCS recovered" \
        || bad "$1: catalog check"
    echo "$1: reduce took $(echo "$t1 - $t0" | bc) s"
done
exit $fail
