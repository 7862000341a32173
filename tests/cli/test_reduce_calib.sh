#!/bin/bash
# CLI test of `tide reduce` with calibration and a store (issue 4): a simulated frame with its
# reference catalog is verified, refined, matched and zero-pointed, lands in an SQLite store
# that `tide query` finds it in, and re-reducing replaces its rows; the same frame with its WCS
# removed is plate-solved from the header's hints with index files built from the reference
# catalog, and its refined WCS is checked against the simulator's truth. Bad input: a missing
# reference catalog, one with no star near the field, an unreachable database (exit 1, nothing
# written); a field that will not solve (exit 3, catalog without sky columns, the header says
# why).
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/tide_cli_calib.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# A 1024x1024 frame (25' at 1.46"/px) with SIP distortion and ~800 stars.
"$TIDE" sim -o "$tmp/f.fits" --refcat "$tmp/ref.fits" --width 1024 --height 1024 \
    --nstars 800 --seed 7 > /dev/null || { echo "FAIL: sim"; exit 1; }

# 1. The whole job: the header WCS is verified and refined; colour term as simulated.
"$TIDE" reduce "$tmp/f.fits" -o "$tmp/c.fits" --bias 1000 --refcat "$tmp/ref.fits" \
    --store "$tmp/cat.db" --set photcal.color_term=0.05 > "$tmp/out1.txt" 2>&1
rc=$?
[ $rc -eq 0 ] && ok "reduce with --refcat and --store" || { bad "reduce exit $rc"; cat "$tmp/out1.txt"; }
"$PY" - "$tmp/c.fits" "$tmp/f.fits" <<'PYEOF' && ok "calibrated catalog" || bad "calibrated catalog"
import sys
import numpy as np
from astropy.io import fits
from astropy.wcs import WCS
c = fits.open(sys.argv[1])
t, h = c[1].data, c[1].header
f = fits.getheader(sys.argv[2])
assert h["ASTRSTAT"] == "REFINED", h["ASTRSTAT"]
assert h["ASTSOLVE"] == "VERIFIED", h.get("ASTSOLVE")
assert h["ASTRRMSP"] < 0.3 and h["ASTNSTAR"] > 100, (h["ASTRRMSP"], h["ASTNSTAR"])
# The refined WCS against the simulator's (the truth) on a grid over the frame.
w_fit, w_true = WCS(h), WCS(f)
g = np.mgrid[0:1024:64j, 0:1024:64j].reshape(2, -1).T
ra, dec = w_true.all_pix2world(g[:, 0], g[:, 1], 0)
x, y = w_fit.all_world2pix(ra, dec, 0)
rms = np.sqrt(np.mean((x - g[:, 0]) ** 2 + (y - g[:, 1]) ** 2))
assert rms < 0.05, f"WCS RMS vs truth {rms:.4f} px"
# Zero point of a total-flux measure vs the simulator's SIMZPADU.
assert abs(h["ZP"] - f["SIMZPADU"]) < 0.01, (h["ZP"], f["SIMZPADU"])
for k in ("EZP", "CATNSTAR", "MAGLIM5", "MAGLIM3", "REFCAT", "PHOTSTAT", "PROCDATE", "CENTRA",
          "PIXSCALE", "A_ORDER"):
    assert k in h, f"header key {k} missing"
assert h["PHOTSTAT"] == "OK"
# Sky columns from the refined WCS; magnitudes from the zero point.
a, d = w_fit.all_pix2world(t["XWIN_IMAGE"], t["YWIN_IMAGE"], 1)
sep = np.hypot((a - t["ALPHA_J2000"]) * np.cos(np.radians(d)), d - t["DELTA_J2000"]) * 3600
assert np.nanmax(sep) < 1e-3, f"ALPHA/DELTA differ from the header WCS by {np.nanmax(sep)}\""
good = t["FLUX_AUTO"] > 0
m = h["ZP"] - 2.5 * np.log10(t["FLUX_AUTO"][good])
assert np.allclose(t["MAG_AUTO"][good], m, atol=1e-4), "MAG_AUTO != ZP - 2.5 log10 FLUX_AUTO"
assert "MAG_APER" in t.names and "MAG_PSF" in t.names and "MAG_OPT" in t.names
# Reference matches and the no-counterpart flag.
matched = np.isfinite(t["REF_MAG"])
assert matched.sum() > 0.5 * len(t), f"{matched.sum()} of {len(t)} matched"
assert np.all(t["REF_SEP"][matched] <= 2.0)
noref = (t["FLAGS_TIDE"] & 65536) != 0
assert np.array_equal(noref, ~matched), "FLAGS_TIDE 65536 must mark exactly the unmatched"
PYEOF

# 2. The store: a cone search finds the frame's sources; the image row is there; reducing
# the same file again replaces its rows instead of adding to them.
"$TIDE" query cone 150.0 2.2 0.05 --store "$tmp/cat.db" --csv > "$tmp/cone1.csv" 2> "$tmp/q.err" \
    && ok "query cone" || { bad "query cone"; cat "$tmp/q.err"; }
n1=$(($(wc -l < "$tmp/cone1.csv") - 1))
[ "$n1" -gt 10 ] && ok "cone found $n1 sources" || bad "cone found $n1 sources"
"$TIDE" query image "$tmp/f.fits" --store "$tmp/cat.db" --json > "$tmp/img.json" \
    && grep -q '"zp"' "$tmp/img.json" && ok "query image" || bad "query image"
"$TIDE" reduce "$tmp/f.fits" -o "$tmp/c2.fits" --bias 1000 --refcat "$tmp/ref.fits" \
    --store "$tmp/cat.db" > /dev/null 2>&1 || bad "second reduce"
"$TIDE" query cone 150.0 2.2 0.05 --store "$tmp/cat.db" --csv > "$tmp/cone2.csv" 2>/dev/null
n2=$(($(wc -l < "$tmp/cone2.csv") - 1))
[ "$n2" -eq "$n1" ] && ok "re-reduce replaced the rows ($n2)" || bad "re-reduce: $n1 then $n2 rows"

# 3. A reference catalog that does not exist: exit 1 before any work, nothing written.
"$TIDE" reduce "$tmp/f.fits" -o "$tmp/c3.fits" --refcat "$tmp/missing.fits" > /dev/null 2> "$tmp/e3"
rc=$?
[ $rc -eq 1 ] && grep -q "missing.fits" "$tmp/e3" && [ ! -e "$tmp/c3.fits" ] \
    && ok "missing refcat: exit 1, named, nothing written" || { bad "missing refcat (exit $rc)"; cat "$tmp/e3"; }

# 4. A reference catalog with no star near the field: exit 1, nothing written.
printf 'RA,DEC,MAG\n10.0,-40.0,12.0\n10.1,-40.1,13.0\n' > "$tmp/far.csv"
"$TIDE" reduce "$tmp/f.fits" -o "$tmp/c4.fits" --refcat "$tmp/far.csv" > /dev/null 2> "$tmp/e4"
rc=$?
[ $rc -eq 1 ] && grep -q "far.csv" "$tmp/e4" && [ ! -e "$tmp/c4.fits" ] \
    && ok "empty cone: exit 1, named, nothing written" || { bad "empty cone (exit $rc)"; cat "$tmp/e4"; }

# 5. A field that will not solve: no WCS in the header, no index files. The catalog is still
# written, without sky columns, and its header says why; the exit status is 3.
"$PY" - "$tmp/f.fits" "$tmp/nowcs.fits" <<'PYEOF' || bad "strip WCS"
import sys
from astropy.io import fits
h = fits.open(sys.argv[1])
hd = h[0].header
for k in list(hd.keys()):
    if k.startswith(("CTYPE", "CRPIX", "CRVAL", "CD1_", "CD2_", "CUNIT", "A_", "B_", "AP_", "BP_",
                     "WCSAXES", "RADESYS", "EQUINOX", "SIPINVRS")):
        del hd[k]
h.writeto(sys.argv[2])
PYEOF
# The pointing goes too for this case: with it, the reference catalogue itself would solve
# the field (tide_solve_refcat); without it there is no cone to fetch, nothing to solve on.
"$PY" - "$tmp/nowcs.fits" "$tmp/nopos.fits" <<'PYEOF' || bad "strip pointing"
import sys
from astropy.io import fits
h = fits.open(sys.argv[1])
for k in ("RA", "DEC", "OBJCTRA", "OBJCTDEC"):
    h[0].header.remove(k, ignore_missing=True, remove_all=True)
h.writeto(sys.argv[2])
PYEOF
mkdir -p "$tmp/noindex"
"$TIDE" reduce "$tmp/nopos.fits" -o "$tmp/c5.fits" --bias 1000 --refcat "$tmp/ref.fits" \
    --index-dir "$tmp/noindex" > /dev/null 2> "$tmp/e5"
rc=$?
[ $rc -eq 3 ] && ok "unsolved field: exit 3" || { bad "unsolved field: exit $rc"; cat "$tmp/e5"; }
"$PY" - "$tmp/c5.fits" <<'PYEOF' && ok "unsolved catalog: no sky columns, header says why" || bad "unsolved catalog"
import sys
from astropy.io import fits
c = fits.open(sys.argv[1])
t, h = c[1].data, c[1].header
assert "ALPHA_J2000" not in c[1].columns.names
assert h["ASTRSTAT"] == "FAILED" and "index" in h["ASTRMSG"], (h["ASTRSTAT"], h.get("ASTRMSG"))
assert h["PHOTSTAT"] == "FAILED"
assert len(t) > 100
PYEOF
# 6. Solved from hints: WCS removed (pointing RA/DEC and XPIXSZ/FOCALLEN kept), index files
# built from the reference catalog with `tide index build`.
"$TIDE" index build "$tmp/ref.fits" -o "$tmp/idx" --fov-arcmin 25 > /dev/null 2> "$tmp/e6" \
    && ok "index build" || { bad "index build"; cat "$tmp/e6"; }
"$TIDE" reduce "$tmp/nowcs.fits" -o "$tmp/c6.fits" --bias 1000 --refcat "$tmp/ref.fits" \
    --index-dir "$tmp/idx" --set photcal.color_term=0.05 > "$tmp/out6.txt" 2>&1
rc=$?
[ $rc -eq 0 ] && ok "hinted solve: exit 0" || { bad "hinted solve: exit $rc"; cat "$tmp/out6.txt"; }
"$PY" - "$tmp/c6.fits" "$tmp/f.fits" <<'PYEOF' && ok "solved WCS vs truth" || bad "solved WCS vs truth"
import sys
import numpy as np
from astropy.io import fits
from astropy.wcs import WCS
h = fits.getheader(sys.argv[1], 1)
f = fits.getheader(sys.argv[2])
assert h["ASTRSTAT"] == "REFINED" and h["ASTSOLVE"] == "HINTED", (h["ASTRSTAT"], h.get("ASTSOLVE"))
w_fit, w_true = WCS(h), WCS(f)
g = np.mgrid[0:1024:64j, 0:1024:64j].reshape(2, -1).T
ra, dec = w_true.all_pix2world(g[:, 0], g[:, 1], 0)
x, y = w_fit.all_world2pix(ra, dec, 0)
rms = np.sqrt(np.mean((x - g[:, 0]) ** 2 + (y - g[:, 1]) ** 2))
print(f"solved + refined WCS vs truth: {rms:.4f} px RMS over the frame")
assert rms <= 0.05, f"WCS RMS vs truth {rms:.4f} px"
assert abs(h["ZP"] - f["SIMZPADU"]) < 0.01, (h["ZP"], f["SIMZPADU"])
PYEOF

# 7. A database that cannot be reached: bounded retries, then exit 1 and no catalog file.
"$TIDE" reduce "$tmp/f.fits" -o "$tmp/c7.fits" --bias 1000 --refcat "$tmp/ref.fits" \
    --store "postgresql://tide@127.0.0.1:1/none?connect_timeout=1" > /dev/null 2> "$tmp/e7"
rc=$?
[ $rc -eq 1 ] && [ ! -e "$tmp/c7.fits" ] && ! ls "$tmp"/c7.fits* > /dev/null 2>&1 \
    && grep -q "127.0.0.1" "$tmp/e7" && ok "unreachable store: exit 1, named, nothing written" \
    || { bad "unreachable store (exit $rc)"; cat "$tmp/e7"; }
exit $fail
