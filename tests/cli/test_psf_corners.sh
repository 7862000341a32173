#!/bin/bash
# CLI test: a PSF model whose spatial variation runs away at the frame's corners is refitted
# constant over the frame (src/reduction/psf/psf.c, model_check "CORNERS"). On the real frame
# wcs/tnx.fits of ../shared/data (400 x 400, 22 PSF stars), the degree-2 coefficient fields
# extrapolated to the corners gave Moffat FWHMs of 0.06 and 1318 px against 4.98 at the
# centre; the second detection pass then filtered a corner with a 1318 px kernel and took
# 11 s (40 s on a loaded machine) instead of 0.06. Checks: every corner FWHM (FWHMLL ...
# FWHMUR) within a factor 2 of the centre's (FWHM), PSFDEG = 0, PSFMODEL still 'PCA', and a
# log line saying why. Skips without the shared data.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
frame=${TIDE_SHARED_DATA:-/nonexistent}/wcs/tnx.fits
[ -f "$frame" ] || { echo "SKIP: no $frame"; exit 77; }
"$PY" -c "import astropy" 2>/dev/null || { echo "SKIP: no astropy"; exit 77; }
tmp=$(mktemp -d /tmp/tide_cli_psf_corners.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
"$TIDE" reduce "$frame" -o "$tmp/cat.fits" --backend cpu >"$tmp/log" 2>&1 || {
    echo "FAIL: tide reduce exited $?"; cat "$tmp/log"; exit 1; }
grep -q "refitting it constant over the frame" "$tmp/log" && echo "ok: the refit is logged" ||
    { echo "FAIL: no log line for the corner refit"; cat "$tmp/log"; fail=1; }
"$PY" - "$tmp/cat.fits" <<'PY' || fail=1
import sys
from astropy.io import fits
h = fits.getheader(sys.argv[1], 1)
c = [h["FWHMLL"], h["FWHMLR"], h["FWHMUL"], h["FWHMUR"]]
f = h["FWHM"]
ok = all(0.5 * f <= x <= 2.0 * f for x in c) and h["PSFDEG"] == 0 and h["PSFMODEL"] == "PCA"
print("%s: corners %s, centre %.3f px, PSFDEG %d, PSFMODEL %s"
      % ("ok" if ok else "FAIL", ["%.3f" % x for x in c], f, h["PSFDEG"], h["PSFMODEL"]))
sys.exit(0 if ok else 1)
PY
exit $fail
