#!/bin/bash
# CLI test: no false blind solve on a field no index covers. The DECam cutout
# $TIDE_SHARED_DATA/diff/DEC-OBS18a.mini.fits (256x256 at 0.26"/px: 67" across, beneath the
# smallest Tycho-2 quads; 23 sources) once solved blind with index-tycho2-13 at ~68"/px,
# log-odds 28.8 with 8 stars matched, above astrometry.net's hinted threshold log(1e9) = 20.7
# (solve-field false-solves it blind too). A blind solve now needs log(1e14) (src/pipeline/
# calibrate_astrom.c, CAL_BLIND_ODDS). Run with a bound long enough for every quad to be
# tried: the header's WCS must be kept, unverified (ASTRSTAT HEADER), with the reason.
# Skips without the shared data or the Tycho-2 index files. Cost: ~15 s on 2 cores.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
frame=${TIDE_SHARED_DATA:-/nonexistent}/diff/DEC-OBS18a.mini.fits
IDX=${TIDE_INDEX_DIR:-/usr/share/astrometry}
[ -f "$frame" ] || { echo "SKIP: no $frame"; exit 77; }
ls "$IDX"/index-tycho2-13*.fits >/dev/null 2>&1 || { echo "SKIP: no Tycho-2 index 13 in $IDX"; exit 77; }
"$PY" -c "import astropy" 2>/dev/null || { echo "SKIP: no astropy"; exit 77; }
tmp=$(mktemp -d /tmp/tide_cli_solve_nofalse.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$TIDE" reduce "$frame" -o "$tmp/cat.fits" --backend cpu --solve --index-dir "$IDX" \
    --set astrometry.timeout_s=60 >"$tmp/log" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: tide reduce exited $rc"; tail -5 "$tmp/log"; exit 1; }
"$PY" - "$tmp/cat.fits" <<'PY'
import sys
from astropy.io import fits
h = fits.getheader(sys.argv[1], 1)
st, msg = h.get("ASTRSTAT"), h.get("ASTRMSG", "")
ok = st == "HEADER" and "not solved" in (msg or "")
print("%s: ASTRSTAT %s, ASTRMSG %r" % ("ok" if ok else "FAIL (a false solve?)", st, msg))
sys.exit(0 if ok else 1)
PY
