#!/bin/bash
# CLI test: a real frame whose header WCS is wrong by a large factor is solved blind by
# `tide reduce --index-dir` (no reference catalogue) and agrees with `solve-field` on the same
# pixels and index files. The frame is astrometry.net's demo image apod4 (the Big Dipper,
# 719x507, ~170"/px; $TIDE_SHARED_DATA/astrometry/apod4.jpg), made a FITS image the way
# solve-field does it (netpbm: jpegtopnm | ppmtopgm | an-pnmtofits), with a header WCS that
# claims 0.53"/px at (40, -20): the hinted attempts fail and the blind one must find it.
# Checks: solved blind; the two solutions within 0.3 px (median over a 9x9 grid) and 1.5 px
# (worst corner) of each other; on solve-field's own matched Tycho-2 stars (its .corr file)
# tide's median residual no worse than 1.2x solve-field's. Both times are printed, not held:
# speed is measured by benchmarks, not by timed tests on a shared CI machine. (At 170"/px, 1"
# is 0.006 px: the issue's 1" is met here in pixels.) Cosmic-ray cleaning is off: an 8-bit
# JPEG of a camera lens has no cosmic rays, and L.A.Cosmic (tide's, and astroscrappy alike)
# takes the cores of its undersampled, clipped stars for hits (tracked by the gauntlet's
# apod4 row), which this astrometry test is not about.
# Skips (77) without solve-field, netpbm, the Tycho-2 index files 15-19 or the shared data.
# Cost: ~10 s on 2 cores.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
DATA=${TIDE_SHARED_DATA:-}
IDX=${TIDE_INDEX_DIR:-/usr/share/astrometry}
JPG="$DATA/astrometry/apod4.jpg"
for c in solve-field jpegtopnm ppmtopgm an-pnmtofits; do
    command -v "$c" >/dev/null || { echo "skip: $c not installed"; exit 77; }
done
[ -n "$DATA" ] && [ -f "$JPG" ] || { echo "skip: no $JPG"; exit 77; }
ls "$IDX"/index-tycho2-17*.fits >/dev/null 2>&1 || { echo "skip: no Tycho-2 index 17 in $IDX"; exit 77; }
tmp=$(mktemp -d /tmp/tide_cli_solve_blind_real.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

jpegtopnm "$JPG" 2>/dev/null | ppmtopgm | an-pnmtofits >"$tmp/apod4.fits" 2>/dev/null \
    || { echo "FAIL: converting $JPG"; exit 1; }
"$PY" - "$tmp/apod4.fits" "$tmp/wrong.fits" <<'PYEOF' || { echo "FAIL: wrong header"; exit 1; }
import sys
from astropy.io import fits
h = fits.open(sys.argv[1])
hd = h[0].header
hd['CTYPE1'], hd['CTYPE2'] = 'RA---TAN', 'DEC--TAN'
hd['CRPIX1'], hd['CRPIX2'] = hd['NAXIS1'] / 2, hd['NAXIS2'] / 2
hd['CRVAL1'], hd['CRVAL2'] = 40.0, -20.0
s = 0.53 / 3600
hd['CD1_1'], hd['CD1_2'], hd['CD2_1'], hd['CD2_2'] = -s, 0.0, 0.0, s
h.writeto(sys.argv[2], overwrite=True)
PYEOF

# The peer, on the same pixels and index files.
printf 'cpulimit 30\nadd_path %s\nautoindex\n' "$IDX" >"$tmp/sf.cfg"
t0=$(date +%s.%N)
solve-field --config "$tmp/sf.cfg" --overwrite --no-plots --cpulimit 30 -D "$tmp/sf" \
    "$tmp/apod4.fits" >"$tmp/sf.log" 2>&1
t1=$(date +%s.%N)
[ -f "$tmp/sf/apod4.wcs" ] || { echo "FAIL: solve-field did not solve apod4"; tail -5 "$tmp/sf.log"; exit 1; }
sf_s=$(echo "$t1 - $t0" | bc)

# The solve's time bound (10 s by default) is raised: this test is about the answer, and under
# the sanitizer on a busy 2-core machine the blind attempt once took longer than 10 s.
"$TIDE" reduce "$tmp/wrong.fits" -o "$tmp/cat.fits" --index-dir "$IDX" --backend cpu --json \
    --set processing.clean_cosmics=false --set astrometry.timeout_s=120 \
    >"$tmp/tide.json" 2>"$tmp/tide.err"
rc=$?
[ $rc -eq 0 ] && ok "tide reduce exits 0" || bad "tide reduce exited $rc: $(tail -3 "$tmp/tide.err")"

"$PY" - "$tmp" "$sf_s" <<'PYEOF' || bad "tide's solution does not match solve-field's"
import json, sys, warnings
import numpy as np
from astropy.io import fits
from astropy.wcs import WCS
warnings.simplefilter('ignore')
d, sf_s = sys.argv[1], float(sys.argv[2])
j = json.load(open(d + '/tide.json'))
def find(o, key):
    if isinstance(o, dict):
        if key in o:
            return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None:
                return r
    return None
cat = fits.open(d + '/cat.fits')[1]
h = cat.header
errs = []
if h.get('ASTRSTAT') not in ('REFINED', 'SOLVED'):
    errs.append('ASTRSTAT %r (%r)' % (h.get('ASTRSTAT'), h.get('ASTRMSG')))
if h.get('ASTSOLVE') != 'BLIND':
    errs.append('ASTSOLVE %r, expected BLIND' % h.get('ASTSOLVE'))
if 'ALPHA_J2000' not in cat.columns.names:
    errs.append('no sky columns')
if not errs:
    wt = WCS(h, naxis=2, relax=True)
    ws = WCS(fits.getheader(d + '/sf/apod4.wcs'), naxis=2, relax=True)
    scale = np.sqrt(abs(np.linalg.det(ws.pixel_scale_matrix))) * 3600
    x, y = np.meshgrid(np.linspace(0, 718, 9), np.linspace(0, 506, 9))
    r1, d1 = wt.all_pix2world(x.ravel(), y.ravel(), 0)
    r2, d2 = ws.all_pix2world(x.ravel(), y.ravel(), 0)
    off = np.hypot((r1 - r2) * np.cos(np.radians(d2)), d1 - d2) * 3600 / scale
    c = fits.getdata(d + '/sf/apod4.corr', 1)
    res = {}
    for name, w in (('tide', wt), ('solve-field', ws)):
        ra, de = w.all_pix2world(c['field_x'], c['field_y'], 1)
        res[name] = np.median(np.hypot((ra - c['index_ra']) * np.cos(np.radians(de)),
                                       de - c['index_dec'])) * 3600
    ms = find(j, 'ms_solve')
    print('apod4: tide %s (%s), solve %.0f ms; solve-field %.2f s; offset median %.3f px, '
          'max %.3f px (%.1f"/px); on %d solve-field matches: tide %.1f", solve-field %.1f"'
          % (h.get('ASTRSTAT'), h.get('ASTINDEX'), ms, sf_s, np.median(off), off.max(), scale,
             len(c), res['tide'], res['solve-field']))
    if not np.median(off) <= 0.3:
        errs.append('median offset %.3f px > 0.3' % np.median(off))
    if not off.max() <= 1.5:
        errs.append('max offset %.3f px > 1.5' % off.max())
    if not res['tide'] <= 1.2 * res['solve-field']:
        errs.append('tide residual on the .corr stars %.1f" > 1.2 x %.1f"'
                    % (res['tide'], res['solve-field']))
if errs:
    print('; '.join(errs))
    sys.exit(1)
PYEOF
exit $fail
