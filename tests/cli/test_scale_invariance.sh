#!/bin/bash
# Scale invariance of `tide reduce` (issue 15, item 2): a frame multiplied by 10^k, or with a
# constant added, must give the same detections with fluxes scaled by 10^k. No noise floor,
# epsilon, histogram range or clipping constant may assume pixels of order one. Frames carry no
# GAIN (the gain is unknown, so the noise comes from the data): with a known gain in e-/ADU a
# scaled frame is physically another frame.
#
#   - a `tide sim` frame (512x512, GAIN, RDNOISE and SATURATE removed) at k = -20, -12, -6, 3,
#     6 and with 12345 ADU added;
#   - the real hbo.fits of Debian's eso-midas-testdata (ESO NTT/EMMI, flux units ~1e-18, no
#     GAIN, one pixel at -1.7e-14 against an rms of ~4e-19), native against x1e18, x1e24 and
#     x1e-2; skipped when the package cannot be fetched (cache as tests/cli/test_real_headers.sh).
#
# Same count, XWIN/YWIN within 0.01 px, FLUXERR_APER_1 within 1e-4 relative, FLUX_APER_*,
# FLUX_ISO and FLUX_PSF within 1e-4 relative + 1e-3 of their error (float32 pixels are rounded
# after scaling: ~6e-8 of the sky per pixel, which over the 200 pixels of an 8-px aperture is
# 1.5e-4 of a S/N 3 source's flux), FLUX_AUTO within 0.01 FLUXERR_AUTO (the Kron radius counts
# whole pixels, and rounding can move one across the ellipse). With a constant added the
# histogram bins of the background (Source Extractor's, 10σ/4096 wide) fall elsewhere on the
# data, which moves each mesh's mode by about a bin (~0.003σ): the fluxes of clean (FLAGS 0)
# sources within 0.1 of their error, and truncated or saturated ones are not compared.
# Costs ~30 s on 2 cores.
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
"$PY" -c "import numpy, astropy" 2>/dev/null || { echo "SKIP: no numpy/astropy"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# scale IN OUT K C: OUT = IN * 10^K + C as float32, without the detector keywords.
scale() {
    "$PY" - "$@" <<'EOF' || exit 1
import sys, numpy as np
from astropy.io import fits
h = fits.open(sys.argv[1])[0]
d = h.data.astype(np.float64) * 10.0 ** float(sys.argv[3]) + float(sys.argv[4])
hd = h.header.copy()
for k in ("GAIN", "EGAIN", "RDNOISE", "SATURATE", "BZERO", "BSCALE"):
    hd.remove(k, ignore_missing=True, remove_all=True)
fits.PrimaryHDU(d.astype(np.float32), hd).writeto(sys.argv[2], overwrite=True)
EOF
}

# compare A.csv B.csv K C NAME: B against A scaled by 10^K (C != 0: a constant was added).
compare() {
    "$PY" - "$@" <<'EOF'
import sys, csv, numpy as np
a = list(csv.DictReader(open(sys.argv[1])))
b = list(csv.DictReader(open(sys.argv[2])))
s, added, name = 10.0 ** float(sys.argv[3]), float(sys.argv[4]) != 0, sys.argv[5]
col = lambda r, k: np.array([float(x[k]) for x in r])
if len(a) != len(b) or len(a) < 10:
    print("FAIL: %s: %d sources, %d at native scale" % (name, len(b), len(a))); sys.exit(1)
dp = np.hypot(col(a, "XWIN_IMAGE") - col(b, "XWIN_IMAGE"), col(a, "YWIN_IMAGE") - col(b, "YWIN_IMAGE"))
bad = []
if not dp.max() <= 0.01:
    bad.append("positions move by %.3g px" % dp.max())
pairs = [("FLUX_APER_1", "FLUXERR_APER_1"), ("FLUX_APER_2", "FLUXERR_APER_2"),
         ("FLUX_APER_3", "FLUXERR_APER_3"), ("FLUX_ISO", "FLUXERR_ISO"), ("FLUX_PSF", "FLUXERR_PSF"),
         ("FLUXERR_APER_1", None), ("FLUX_AUTO", "FLUXERR_AUTO")]
worst = {}
for f, e in pairs:
    fa, fb, ea = col(a, f), col(b, f) / s, col(a, e) if e else None
    ok = np.isfinite(fa) & (fa != 0)
    if added:  # clean sources only: see the header
        ok &= (col(a, "FLAGS") == 0) & (col(b, "FLAGS") == 0)
    if np.any(np.isfinite(fa) != np.isfinite(fb)):
        bad.append("%s finite in one run only" % f); continue
    if e is None:  # an error: relative
        lim, v = (1e-3 if added else 1e-4), np.abs(fb / fa - 1)[ok]
    else:  # |diff| <= rel |F| + frac err, as a fraction of that bound
        rel, frac = (0.0, 0.1) if added else ((0.0, 0.01) if f == "FLUX_AUTO" else (1e-4, 1e-3))
        lim, v = 1.0, (np.abs(fb - fa) / (rel * np.abs(fa) + frac * ea))[ok]
    worst[f] = v.max() if v.size else 0.0
    if not worst[f] <= lim:
        bad.append("%s differs by %.3g of its tolerance" % (f, worst[f]))
print("%s %s: %d sources, positions within %.2g px; worst/tolerance: %s" % (
    "FAIL:" if bad else "ok", name, len(a), dp.max(), ", ".join("%s %.2g" % kv for kv in worst.items())))
for m in bad:
    print("  " + m)
sys.exit(1 if bad else 0)
EOF
}

# run NAME FRAME: reduce to NAME.csv.
run() {
    "$TIDE" reduce "$2" --csv "$tmp/$1.csv" --no-astrometry --log-level error >"$tmp/$1.log" 2>&1 ||
        { echo "FAIL: tide reduce $1 failed"; cat "$tmp/$1.log"; fail=1; }
}

# 1. a simulation
"$TIDE" sim -o "$tmp/sim.fits" --width 512 --height 512 --nstars 300 --ngal 10 --seed 3 \
    >/dev/null 2>&1 || { echo "FAIL: tide sim"; exit 1; }
scale "$tmp/sim.fits" "$tmp/s0.fits" 0 0
run s0 "$tmp/s0.fits"
for kc in "-20 0" "-12 0" "-6 0" "3 0" "6 0" "0 12345"; do
    set -- $kc
    scale "$tmp/sim.fits" "$tmp/s_$1_$2.fits" "$1" "$2"
    run "s_$1_$2" "$tmp/s_$1_$2.fits"
    compare "$tmp/s0.csv" "$tmp/s_$1_$2.csv" "$1" "$2" "sim x1e$1 + $2" || fail=1
done

# The model noise needs a gain: refused, saying so, on a frame without one.
if "$TIDE" reduce "$tmp/s0.fits" --csv /dev/null --no-astrometry --noise model >"$tmp/m.log" 2>&1; then
    echo "FAIL: --noise model accepted without a gain"; fail=1
elif ! grep -q "needs the gain" "$tmp/m.log"; then
    echo "FAIL: --noise model without a gain: the message does not say why"; cat "$tmp/m.log"; fail=1
fi

# 2. a real frame in flux units, with a wild negative pixel
cache=${TIDE_REAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tide/real}
if [ ! -d "$cache/midas" ] && mkdir -p "$cache"; then
    t2=$(mktemp -d)
    if (cd "$t2" && apt-get download -q eso-midas-testdata >/dev/null 2>&1) &&
        dpkg -x "$t2"/eso-midas-testdata_*.deb "$t2/x"; then
        mv "$t2/x" "$cache/midas"
    fi
    rm -rf "$t2"
fi
hbo=$(find "$cache/midas" -name hbo.fits -path '*prim*' 2>/dev/null | head -1)
if [ -n "$hbo" ]; then
    scale "$hbo" "$tmp/h0.fits" 0 0
    run h0 "$tmp/h0.fits"
    for k in 18 24 -2; do
        scale "$hbo" "$tmp/h_$k.fits" "$k" 0
        run "h_$k" "$tmp/h_$k.fits"
        compare "$tmp/h0.csv" "$tmp/h_$k.csv" "$k" 0 "hbo.fits x1e$k" || fail=1
    done
else
    echo "hbo.fits part skipped: eso-midas-testdata could not be fetched"
fi
exit $fail
